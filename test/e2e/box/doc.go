// Package box runs a one-node Kubernetes cluster for the end-to-end suite:
// etcd, kube-apiserver, kube-controller-manager and kube-scheduler, and a
// real node (containerd and runc from the distribution, a CNI bridge, the
// kubelet, kube-proxy and CoreDNS), all children of the test process.
//
// It runs inside the private mount, network and PID namespaces that
// hack/e2e-box.sh creates for the test binary (as root: the kubelet and runc
// need it), and changes nothing outside them:
//
//   - the node's address is 10.250.0.1 on a veth pair inside the namespace,
//     pods get 10.244.0.0/24 on the cni0 bridge, Services 10.96.0.0/16 through
//     kube-proxy's rules in the namespace's own netfilter tables, and CoreDNS
//     answers on the node address, for pods and for the test process alike;
//   - the paths the kubelet, containerd and the CNI plugins insist on (/run,
//     /var/lib, /var/log) are directories of the run's work directory, bound
//     over the host's in the private mount namespace;
//   - the kernel tunables the kubelet would set machine-wide are shown to it
//     already set (files bound over /proc/sys), so it writes none;
//   - every pod's cgroups live under one root named after the run, which Stop
//     empties and removes, and which the next Start removes if a run died
//     before it could (see sweep.go). When the test process dies, the PID
//     namespace takes every process of the box with it.
//
// Start brings everything up and returns when the Node is Ready and cluster
// DNS answers; Stop takes it down and leaves nothing behind. Box's methods
// are what scenarios need beyond the API: kubectl and helm against the
// cluster, images imported into containerd, the containers the runtime runs
// (with their host PIDs), a pod volume's directory on the node, and stopping
// and starting the kubelet.
package box
