//go:build tools

// Package tools pins the Kubernetes commands that the envtest and end-to-end
// suites build from the Go module proxy: the control plane, and the node the
// end-to-end suite runs its pods on (kubelet, kube-scheduler, kube-proxy).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
