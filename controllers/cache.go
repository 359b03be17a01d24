package controllers

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

// CacheOptions restricts the manager's informers to the given namespaces
// (all when empty) and, for the kinds the operator creates, to objects
// carrying its managed-by label: a large cluster's pods and ConfigMaps are
// never held in memory. Both the manager and the test suite use them.
func CacheOptions(namespaces []string) cache.Options {
	mine := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{render.LabelManagedBy: render.ManagedBy})}
	opts := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&appsv1.StatefulSet{}:           mine,
		&corev1.Service{}:               mine,
		&corev1.ConfigMap{}:             mine,
		&corev1.Pod{}:                   mine,
		&policyv1.PodDisruptionBudget{}: mine,
		// The StatefulSet labels its claims with the claim template's
		// labels: the selector labels, without managed-by.
		&corev1.PersistentVolumeClaim{}: {Label: labels.SelectorFromSet(labels.Set{render.LabelName: render.AppName})},
	}}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}
