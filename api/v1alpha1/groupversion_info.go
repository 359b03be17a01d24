// Package v1alpha1 holds the NameServerCluster API: a group of independent
// RocketMQ NameServer peers and the address list the operator publishes for
// the brokers and clients that use them.
//
// +kubebuilder:object:generate=true
// +groupName=rocketmq.kube-namesrv.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "rocketmq.kube-namesrv.io", Version: "v1alpha1"}

	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion} //nolint:staticcheck // SA1019: kubebuilder's layout; replacing it changes how every kind registers

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
