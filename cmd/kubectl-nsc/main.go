// Command kubectl-nsc is the kubectl plugin of nsadmin: `kubectl nsc
// clusterList example -n rocketmq` finds the peers of the NameServerCluster
// example in its status and asks every one of them, as nsadmin does with -n.
// `kubectl nsc migrate` converts a NameService of apache/rocketmq-operator
// into a NameServerCluster. `kubectl nsc help` lists the commands and exit
// codes.
package main

import (
	"os"

	"github.com/kube-namesrv/kube-namesrv/internal/nsadmin"
	"github.com/kube-namesrv/kube-namesrv/internal/nsadmin/nsc"
)

func main() {
	os.Exit(nsc.Main(nsc.New(), os.Args[1:], nsadmin.StdIO()))
}
