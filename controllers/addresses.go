package controllers

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

// destination is one place the three address ConfigMaps go: the cluster's
// own namespace, or a target.
type destination struct {
	namespace, name string
}

// configMapName is the name of one of the destination's ConfigMaps.
func (d destination) configMapName(l listKind) string {
	switch l {
	case brokerList:
		return d.name + v1alpha1.BrokerConfigMapSuffix
	case ipList:
		return d.name + v1alpha1.IPsConfigMapSuffix
	}
	return d.name
}

// listData renders the data of the three address ConfigMaps, by listKind.
func listData(c *v1alpha1.NameServerCluster, o render.Options, lists render.Lists) [3]map[string]string {
	return [3]map[string]string{
		clientList: render.ClientAddressData(c, o, lists),
		brokerList: render.BrokerAddressData(c, o, lists),
		ipList:     render.IPsData(lists),
	}
}

// destinations are where the lists go: the cluster's own namespace and each
// accepted target; the targets that may not be written are problems.
func (r *NameServerClusterReconciler) destinations(c *v1alpha1.NameServerCluster, o *observed) ([]destination, []problem) {
	dests := []destination{{c.Namespace, render.AddressConfigMapName(c)}}
	var problems []problem
	for _, t := range c.Spec.Publish.Targets {
		d := destination{t.Namespace, render.TargetName(c, t)}
		if why := r.refuseTarget(c, o, t); why != "" {
			related := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: d.namespace, Name: d.name}}
			problems = append(problems, problem{Reason: v1alpha1.RefusalTarget, Message: "spec.publish.targets: " + why, Related: related, Addresses: true})
			continue
		}
		dests = append(dests, d)
	}
	return dests, problems
}

// refuseTarget says why a target may not be written, "" when it may.
func (r *NameServerClusterReconciler) refuseTarget(c *v1alpha1.NameServerCluster, o *observed, t v1alpha1.PublishTarget) string {
	switch {
	case t.Namespace == c.Namespace:
		return fmt.Sprintf("namespace %q is the cluster's own; set spec.publish.configMapName instead", t.Namespace)
	case len(r.Namespaces) > 0 && !slices.Contains(r.Namespaces, t.Namespace):
		return fmt.Sprintf("namespace %q is outside the namespaces this operator manages (%v)", t.Namespace, r.Namespaces)
	case len(r.Namespaces) > 0:
		// A namespaced operator cannot read Namespaces; the namespaces it
		// manages are one trust domain, chosen by its installer.
		return ""
	}
	ns := o.namespaces[t.Namespace]
	switch {
	case ns == nil:
		return fmt.Sprintf("namespace %q does not exist (the copy is written once it is created and accepts it)", t.Namespace)
	case !AcceptsPublishFrom(ns, c.Namespace, c.Name):
		return fmt.Sprintf("namespace %q does not accept address lists from %s/%s: its annotation %s must list %s/%s or %s/*",
			t.Namespace, c.Namespace, c.Name, v1alpha1.AnnotationAcceptPublishFrom, c.Namespace, c.Name, c.Namespace)
	}
	return ""
}

// AcceptsPublishFrom tells whether a namespace's opt-in annotation lists a
// cluster: comma-separated <namespace>/<name> entries, <namespace>/* for
// every cluster of a namespace.
func AcceptsPublishFrom(ns *corev1.Namespace, clusterNamespace, clusterName string) bool {
	for _, e := range strings.Split(ns.Annotations[v1alpha1.AnnotationAcceptPublishFrom], ",") {
		n, name, ok := strings.Cut(strings.TrimSpace(e), "/")
		if ok && n == clusterNamespace && (name == clusterName || name == "*") {
			return true
		}
	}
	return false
}
