// Command pause is the sandbox ("pause") container of the end-to-end suite's
// node: it holds a pod's namespaces and does nothing until it is told to stop.
// The suite packs it into an image with mkimage, so that its containerd never
// pulls one.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
