// Package cluster starts a "cluster in a box" for end-to-end tests: etcd and
// kube-apiserver (through envtest), the real kube-controller-manager, and the
// process kubelet (package pkubelet) running Pods as local processes.
//
// Box mode (hack/e2e-box.sh: private user, mount and network namespaces)
// gives every Pod a routable 10.244.0.N address and per-pod DNS names through
// a bind-mounted hosts file; without it, Pods bind 127.0.0.N and report
// 10.244.0.N (see pkubelet.Kubelet.MapAddr).
//
// Every control-plane process is started so that it dies with the test
// process, even when that one is killed (see assets.go), and Stop leaves
// nothing running.
package cluster
