package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

// destination is one place the three address ConfigMaps go: the cluster's
// own namespace, or a target.
type destination struct {
	namespace, name string
}

// addressConfigMaps are the three ConfigMaps of a destination, with their
// data.
func addressConfigMaps(c *v1alpha1.NameServerCluster, o render.Options, d destination, l render.Lists) []child {
	return []child{
		configMapChild(render.AddressConfigMap(c, d.namespace, d.name, render.ClientAddressData(c, o, l))),
		configMapChild(render.AddressConfigMap(c, d.namespace, d.name+v1alpha1.BrokerConfigMapSuffix, render.BrokerAddressData(c, o, l))),
		configMapChild(render.AddressConfigMap(c, d.namespace, d.name+v1alpha1.IPsConfigMapSuffix, render.IPsData(l))),
	}
}

// publishAddresses writes the lists into the cluster's address ConfigMaps
// and each accepted target, and deletes the copies no longer wanted. It
// reports whether every ConfigMap holds the lists now.
func (r *NameServerClusterReconciler) publishAddresses(ctx context.Context, c *v1alpha1.NameServerCluster, l render.Lists) ([]problem, bool, error) {
	dests := []destination{{c.Namespace, render.AddressConfigMapName(c)}}
	var problems []problem
	for _, t := range c.Spec.Publish.Targets {
		d := destination{t.Namespace, render.TargetName(c, t)}
		related := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: d.namespace, Name: d.name}}
		why, retry, err := r.refuseTarget(ctx, c, t)
		if err != nil {
			return nil, false, err
		}
		if why != "" {
			problems = append(problems, problem{Reason: v1alpha1.RefusalTarget, Message: "spec.publish.targets: " + why, Related: related, Retry: retry})
			continue
		}
		dests = append(dests, d)
	}

	keep := map[client.ObjectKey]bool{}
	for _, d := range dests {
		for _, ch := range addressConfigMaps(c, r.Render, d, l) {
			keep[ch.key()] = true
			p, err := r.applyChild(ctx, c, ch)
			if err != nil {
				return nil, false, err
			}
			if d.namespace != c.Namespace {
				for i := range p {
					if p[i].Reason != v1alpha1.RefusalNotOwned {
						p[i].Reason = v1alpha1.RefusalTarget
					}
				}
			}
			problems = append(problems, p...)
		}
	}
	if err := r.deleteTargets(ctx, c.Namespace, c.Name, keep, c); err != nil {
		return nil, false, err
	}
	return problems, len(problems) == 0, nil
}

// refuseTarget says why a target may not be written ("" when it may), and
// whether that may change without a spec change.
func (r *NameServerClusterReconciler) refuseTarget(ctx context.Context, c *v1alpha1.NameServerCluster, t v1alpha1.PublishTarget) (string, bool, error) {
	switch {
	case t.Namespace == c.Namespace:
		return fmt.Sprintf("namespace %q is the cluster's own; set spec.publish.configMapName instead", t.Namespace), false, nil
	case len(r.Namespaces) > 0 && !slices.Contains(r.Namespaces, t.Namespace):
		return fmt.Sprintf("namespace %q is outside the namespaces this operator manages (%v)", t.Namespace, r.Namespaces), false, nil
	case len(r.Namespaces) > 0:
		// A namespaced operator cannot read Namespaces; the namespaces it
		// manages are one trust domain, chosen by its installer.
		return "", false, nil
	}
	ns := &corev1.Namespace{}
	found, err := r.getLive(ctx, client.ObjectKey{Name: t.Namespace}, ns)
	switch {
	case err != nil:
		return "", false, fmt.Errorf("reading namespace %s: %w", t.Namespace, err)
	case !found:
		return fmt.Sprintf("namespace %q does not exist (the copy is written once it is created and accepts it)", t.Namespace), false, nil
	case !AcceptsPublishFrom(ns, c.Namespace, c.Name):
		return fmt.Sprintf("namespace %q does not accept address lists from %s/%s: its annotation %s must list %s/%s or %s/*",
			t.Namespace, c.Namespace, c.Name, v1alpha1.AnnotationAcceptPublishFrom, c.Namespace, c.Name, c.Namespace), false, nil
	}
	return "", false, nil
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

// deleteTargets deletes the address ConfigMaps of a cluster that are not in
// keep; with keep nil (the cluster is gone) it deletes every copy in other
// namespaces and leaves the owned ones to the garbage collector. Events are
// about the cluster while it exists (c), else about the deleted copy.
func (r *NameServerClusterReconciler) deleteTargets(ctx context.Context, namespace, name string, keep map[client.ObjectKey]bool, c *v1alpha1.NameServerCluster) error {
	list := &corev1.ConfigMapList{}
	if err := r.List(ctx, list, client.MatchingLabels{
		render.LabelManagedBy: render.ManagedBy, render.LabelInstance: name, render.LabelClusterNamespace: namespace,
	}); err != nil {
		return fmt.Errorf("listing the address ConfigMaps of %s/%s: %w", namespace, name, err)
	}
	for i := range list.Items {
		cm := &list.Items[i]
		key := client.ObjectKeyFromObject(cm)
		if keep[key] || (keep == nil && cm.Namespace == namespace) {
			continue
		}
		if err := r.Delete(ctx, cm, client.Preconditions{UID: ptr.To(cm.UID)}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting ConfigMap %s: %w", key, err)
		}
		if c != nil {
			r.event(c, cm, corev1.EventTypeNormal, v1alpha1.EventDeleted, "Delete", "deleted address ConfigMap %s", key)
		} else {
			r.event(cm, nil, corev1.EventTypeNormal, v1alpha1.EventDeleted, "Delete", "deleted address ConfigMap %s of the deleted NameServerCluster %s/%s", key, namespace, name)
		}
	}
	return nil
}
