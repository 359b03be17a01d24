// Command nsadmin is a fast admin tool for RocketMQ NameServers that asks
// every peer at once and shows where they disagree. Its subcommands keep
// mqadmin's names and flags: `nsadmin clusterList -n "a:9876;b:9876"`.
// `nsadmin help` lists them with the exit codes.
package main

import (
	"os"

	"github.com/kube-namesrv/kube-namesrv/internal/nsadmin"
)

func main() {
	os.Exit(nsadmin.Main(nsadmin.NewDirect(os.Getenv), os.Args[1:], nsadmin.StdIO()))
}
