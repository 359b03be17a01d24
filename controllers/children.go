package controllers

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

// problem is a part of the spec the operator cannot honour. It is reported
// as a condition and a Warning event, not retried in a loop: a change of the
// spec or of the blocking object triggers the next attempt.
type problem struct {
	Reason  string
	Message string
	// Related is the object the problem is about, named in its event.
	Related client.Object
}

// child is one rendered object with what applyChild needs to report on it.
type child struct {
	kind string
	ac   runtime.ApplyConfiguration
	// meta is the apply configuration's own metadata, which the client fills
	// with the server's answer (resourceVersion) after the apply.
	meta *metav1ac.ObjectMetaApplyConfiguration
	// existing is an empty object of the same kind, for the cache lookup.
	existing client.Object
}

func configMapChild(ac *corev1ac.ConfigMapApplyConfiguration) child {
	return child{kind: "ConfigMap", ac: ac, meta: ac.ObjectMetaApplyConfiguration, existing: &corev1.ConfigMap{}}
}

func serviceChild(ac *corev1ac.ServiceApplyConfiguration) child {
	return child{kind: "Service", ac: ac, meta: ac.ObjectMetaApplyConfiguration, existing: &corev1.Service{}}
}

func statefulSetChild(ac *appsv1ac.StatefulSetApplyConfiguration) child {
	return child{kind: "StatefulSet", ac: ac, meta: ac.ObjectMetaApplyConfiguration, existing: &appsv1.StatefulSet{}}
}

func pdbChild(ac *policyv1ac.PodDisruptionBudgetApplyConfiguration) child {
	return child{kind: "PodDisruptionBudget", ac: ac, meta: ac.ObjectMetaApplyConfiguration, existing: &policyv1.PodDisruptionBudget{}}
}

func (ch child) key() client.ObjectKey {
	return client.ObjectKey{Namespace: ptr.Deref(ch.meta.Namespace, ""), Name: ptr.Deref(ch.meta.Name, "")}
}

// applyChild server-side applies one child with forced ownership, which also
// restores any field we own that was edited by hand, and records an event
// when the object was created or changed. A no-op apply changes nothing on
// the server, so steady state causes no writes and no events.
func (r *NameServerClusterReconciler) applyChild(ctx context.Context, c *v1alpha1.NameServerCluster, ch child) ([]problem, error) {
	key := ch.key()
	found := true
	switch err := r.Get(ctx, key, ch.existing); {
	case apierrors.IsNotFound(err):
		found = false
	case err != nil:
		return nil, fmt.Errorf("reading %s %s: %w", ch.kind, key, err)
	}
	// Events name the child as their related object; events.k8s.io merges
	// events that differ only in their note into one series, so without it
	// "created Service" would be folded into "created ConfigMap".
	ch.existing.SetNamespace(key.Namespace)
	ch.existing.SetName(key.Name)
	if err := r.Apply(ctx, ch.ac, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		if refused(err) {
			return []problem{{Reason: "ApplyRefused", Message: fmt.Sprintf("the API server refused %s %s: %v", ch.kind, key, err), Related: ch.existing}}, nil
		}
		return nil, fmt.Errorf("applying %s %s: %w", ch.kind, key, err)
	}
	switch {
	case !found:
		r.Recorder.Eventf(c, ch.existing, corev1.EventTypeNormal, "Created", "Create", "created %s %s", ch.kind, key)
	case changed(ch.existing, ch.meta):
		r.Recorder.Eventf(c, ch.existing, corev1.EventTypeNormal, "Updated", "Update", "updated %s %s", ch.kind, key)
	}
	return nil, nil
}

// changed tells whether an apply changed the object it was read as before.
// Objects with a generation (StatefulSets, PDBs) count spec changes only:
// their status moves all the time, and a resourceVersion compared with a
// cache that lags behind would report those moves as our updates.
func changed(before client.Object, after *metav1ac.ObjectMetaApplyConfiguration) bool {
	if g := before.GetGeneration(); g > 0 {
		return ptr.Deref(after.Generation, g) != g
	}
	return ptr.Deref(after.ResourceVersion, "") != before.GetResourceVersion()
}

// refused tells the errors that retrying cannot fix: the object is invalid
// (an immutable field changed), the operator may not write there, or the
// namespace does not exist.
func refused(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsNotFound(err)
}

func (r *NameServerClusterReconciler) reconcilePDB(ctx context.Context, c *v1alpha1.NameServerCluster) ([]problem, error) {
	if render.PodDisruptionBudgetEnabled(c) {
		return r.applyChild(ctx, c, pdbChild(render.PodDisruptionBudget(c)))
	}
	pdb := &policyv1.PodDisruptionBudget{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: render.PodDisruptionBudgetName(c)}, pdb); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the PodDisruptionBudget of %s/%s: %w", c.Namespace, c.Name, err)
	}
	if !metav1.IsControlledBy(pdb, c) {
		return nil, nil
	}
	if err := r.Delete(ctx, pdb, client.Preconditions{UID: &pdb.UID}); client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("deleting the PodDisruptionBudget of %s/%s: %w", c.Namespace, c.Name, err)
	}
	r.Recorder.Eventf(c, pdb, corev1.EventTypeNormal, "Deleted", "Delete", "deleted PodDisruptionBudget %s/%s: spec.podDisruptionBudget.enabled is false", pdb.Namespace, pdb.Name)
	return nil, nil
}

// publishAddresses writes the list into the address ConfigMap and each
// target, and deletes the copies that are no longer wanted.
func (r *NameServerClusterReconciler) publishAddresses(ctx context.Context, c *v1alpha1.NameServerCluster, data map[string]string) ([]problem, error) {
	type dest struct{ namespace, name string }
	dests := []dest{{c.Namespace, render.AddressConfigMapName(c)}}
	var problems []problem
	for _, t := range c.Spec.Publish.Targets {
		target := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: render.TargetName(c, t)}}
		switch {
		case t.Namespace == c.Namespace:
			problems = append(problems, problem{"TargetRefused", fmt.Sprintf(
				"spec.publish.targets: namespace %q is the cluster's own; set spec.publish.configMapName instead", t.Namespace), target})
		case !r.watches(t.Namespace):
			problems = append(problems, problem{"TargetRefused", fmt.Sprintf(
				"spec.publish.targets: namespace %q is outside the namespaces this operator manages (%v)", t.Namespace, r.Namespaces), target})
		default:
			dests = append(dests, dest{t.Namespace, render.TargetName(c, t)})
		}
	}

	keep := map[client.ObjectKey]bool{}
	for _, d := range dests {
		key := client.ObjectKey{Namespace: d.namespace, Name: d.name}
		keep[key] = true
		foreign, err := r.foreignConfigMap(ctx, c, key)
		if err != nil {
			return nil, err
		}
		if foreign {
			problems = append(problems, problem{"TargetRefused", fmt.Sprintf(
				"ConfigMap %s exists and was not created for this cluster; it is left alone: choose another name in spec.publish", key),
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}})
			continue
		}
		p, err := r.applyChild(ctx, c, configMapChild(render.AddressConfigMap(c, d.namespace, d.name, data)))
		if err != nil {
			return nil, err
		}
		for i := range p {
			p[i].Reason = "TargetRefused"
		}
		problems = append(problems, p...)
	}
	if err := r.deleteTargets(ctx, c, keep); err != nil {
		return nil, err
	}
	return problems, nil
}

// watches tells whether the manager's cache covers a namespace.
func (r *NameServerClusterReconciler) watches(namespace string) bool {
	return len(r.Namespaces) == 0 || slices.Contains(r.Namespaces, namespace)
}

// foreignConfigMap tells whether a ConfigMap exists that this cluster did
// not publish, which it must not overwrite. The cache holds only the
// operator's ConfigMaps, so a miss is confirmed with a live read.
func (r *NameServerClusterReconciler) foreignConfigMap(ctx context.Context, c *v1alpha1.NameServerCluster, key client.ObjectKey) (bool, error) {
	cm := &corev1.ConfigMap{}
	err := r.Get(ctx, key, cm)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, cm)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
	}
	if err != nil {
		return false, fmt.Errorf("reading ConfigMap %s: %w", key, err)
	}
	l := cm.Labels
	return l[render.LabelManagedBy] != render.ManagedBy || l[render.LabelInstance] != c.Name || l[render.LabelClusterNamespace] != c.Namespace, nil
}

// deleteTargets deletes this cluster's address ConfigMaps that are not in
// keep (nil keeps none in other namespaces: the cluster is going away).
func (r *NameServerClusterReconciler) deleteTargets(ctx context.Context, c *v1alpha1.NameServerCluster, keep map[client.ObjectKey]bool) error {
	list := &corev1.ConfigMapList{}
	if err := r.List(ctx, list, client.MatchingLabels{
		render.LabelManagedBy: render.ManagedBy, render.LabelInstance: c.Name, render.LabelClusterNamespace: c.Namespace,
	}); err != nil {
		return fmt.Errorf("listing the address ConfigMaps of %s/%s: %w", c.Namespace, c.Name, err)
	}
	for i := range list.Items {
		cm := &list.Items[i]
		key := client.ObjectKeyFromObject(cm)
		if keep[key] || (keep == nil && cm.Namespace == c.Namespace) {
			continue
		}
		if err := r.Delete(ctx, cm, client.Preconditions{UID: &cm.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting ConfigMap %s: %w", key, err)
		}
		r.Recorder.Eventf(c, cm, corev1.EventTypeNormal, "Deleted", "Delete", "deleted address ConfigMap %s", key)
	}
	return nil
}
