package controllers

import (
	"context"
	"fmt"

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

// problem is a part of the spec the operator cannot honour now. It is
// reported in the conditions and as a Warning event; Retry ones are tried
// again with back-off, because whatever refused (a quota, a webhook, an
// object in the way) may change without the operator hearing of it.
type problem struct {
	// Reason is one of the v1alpha1.Refusal* reasons.
	Reason  v1alpha1.ConditionReason
	Message string
	// Related is the object the problem is about, named in its event.
	Related client.Object
	Retry   bool
	// Addresses is set for a problem with the address lists: a target
	// that may not be written, or an address ConfigMap a write of which
	// was refused.
	Addresses bool
}

// child is one rendered object with what applyChild needs to report on it.
type child struct {
	kind string
	ac   runtime.ApplyConfiguration
	// meta is the apply configuration's own metadata, which the client fills
	// with the server's answer (resourceVersion) after the apply.
	meta *metav1ac.ObjectMetaApplyConfiguration
	// existing is an empty object of the same kind, for the lookup.
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
// when the object was created or changed. It applies nothing when the
// cached object already holds the configuration (unchanged.go): steady
// state sends no request at all. It tells whether it applied.
//
// An object of the same name that is not this cluster's is never taken
// over: an apply would rewrite its fields and, through the owner reference,
// let the garbage collector delete it with the cluster. The cache only holds
// the operator's labelled objects, so a miss is confirmed with a live read:
// the apply that follows creates the object, so a miss costs a write
// anyway, and a child that exists is found in the cache.
func (r *NameServerClusterReconciler) applyChild(ctx context.Context, c *v1alpha1.NameServerCluster, ch child) (*problem, bool, error) {
	key := ch.key()
	found, err := r.getLive(ctx, key, ch.existing)
	if err != nil {
		return nil, false, fmt.Errorf("reading %s %s: %w", ch.kind, key, err)
	}
	if found && !r.belongs(c, ch.existing) {
		return &problem{Reason: v1alpha1.RefusalNotOwned, Retry: true, Related: ch.existing, Message: fmt.Sprintf(
			"%s %s exists and is not this cluster's (%s); it is left alone: delete or rename it", ch.kind, key, ownerOf(ch.existing))}, false, nil
	}
	digest, err := appliedDigest(ch.ac)
	if err != nil {
		return nil, false, fmt.Errorf("%s %s: %w", ch.kind, key, err)
	}
	ch.meta.WithAnnotations(map[string]string{render.AnnotationApplied: digest})
	if found {
		same, err := holds(ch.existing, ch.ac, digest)
		if err != nil {
			return nil, false, fmt.Errorf("comparing %s %s with its configuration: %w", ch.kind, key, err)
		}
		if same {
			return nil, false, nil
		}
	}
	// Events name the child as their related object; events.k8s.io merges
	// events that differ only in their note into one series, so without it
	// "created Service" would be folded into "created ConfigMap".
	ch.existing.SetNamespace(key.Namespace)
	ch.existing.SetName(key.Name)
	if err := r.Apply(ctx, ch.ac, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		if p, ok := refusal(err, ch.kind, key, ch.existing); ok {
			return &p, false, nil
		}
		return nil, false, fmt.Errorf("applying %s %s: %w", ch.kind, key, err)
	}
	switch {
	case !found:
		r.event(c, ch.existing, corev1.EventTypeNormal, v1alpha1.EventCreated, "Create", "created %s %s", ch.kind, key)
	case changed(ch.existing, ch.meta):
		r.event(c, ch.existing, corev1.EventTypeNormal, v1alpha1.EventUpdated, "Update", "updated %s %s", ch.kind, key)
	}
	return nil, true, nil
}

// getLive reads an object through the cache, and around it when the cache
// does not hold it.
func (r *NameServerClusterReconciler) getLive(ctx context.Context, key client.ObjectKey, into client.Object) (bool, error) {
	err := r.Get(ctx, key, into)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, into)
	}
	return foundOrErr(err)
}

// getCached reads an object through the cache only. Every child the
// operator writes carries its managed-by label, so the cache holds all it
// may delete: an object the cache does not hold is not one to delete.
func (r *NameServerClusterReconciler) getCached(ctx context.Context, key client.ObjectKey, into client.Object) (bool, error) {
	return foundOrErr(r.Get(ctx, key, into))
}

// foundOrErr turns a read's error into found, not found, or the error.
func foundOrErr(err error) (bool, error) {
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// belongs tells whether an existing object is this cluster's: controlled by
// it in its namespace, or labelled as its copy elsewhere.
func (r *NameServerClusterReconciler) belongs(c *v1alpha1.NameServerCluster, o client.Object) bool {
	if o.GetNamespace() == c.Namespace {
		ref := metav1.GetControllerOf(o)
		return ref != nil && ref.UID == c.UID
	}
	l := o.GetLabels()
	return l[render.LabelManagedBy] == render.ManagedBy && l[render.LabelInstance] == c.Name && l[render.LabelClusterNamespace] == c.Namespace
}

// ownerOf describes who an object belongs to, for the refusal message.
func ownerOf(o client.Object) string {
	if ref := metav1.GetControllerOf(o); ref != nil {
		return fmt.Sprintf("controlled by %s %s", ref.Kind, ref.Name)
	}
	if m := o.GetLabels()[render.LabelManagedBy]; m != "" {
		return "managed by " + m
	}
	return "created by someone else"
}

// refusal turns an API error the operator cannot fix by retrying at once
// into a problem. Invalid objects (an immutable field changed) wait for a
// spec change; anything else the server refused (a quota, a webhook, a
// permission, a missing namespace) is retried with back-off.
func refusal(err error, kind string, key client.ObjectKey, related client.Object) (problem, bool) {
	msg := fmt.Sprintf("the API server refused %s %s: %v", kind, key, err)
	switch {
	case apierrors.IsInvalid(err):
		return problem{Reason: v1alpha1.RefusalInvalid, Message: msg, Related: related}, true
	case apierrors.IsForbidden(err), apierrors.IsNotFound(err), apierrors.IsBadRequest(err), apierrors.IsMethodNotSupported(err):
		return problem{Reason: v1alpha1.RefusalAPIServer, Message: msg + " (retrying with back-off)", Related: related, Retry: true}, true
	}
	return problem{}, false
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

// deleteChild deletes an object of this cluster that is no longer wanted.
func (r *NameServerClusterReconciler) deleteChild(ctx context.Context, c *v1alpha1.NameServerCluster, kind string, o client.Object, why string) error {
	found, err := r.getCached(ctx, client.ObjectKeyFromObject(o), o)
	if err != nil || !found || !metav1.IsControlledBy(o, c) {
		if err != nil {
			return fmt.Errorf("reading %s %s/%s: %w", kind, o.GetNamespace(), o.GetName(), err)
		}
		return nil
	}
	if err := r.Delete(ctx, o, client.Preconditions{UID: ptr.To(o.GetUID())}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %s %s/%s: %w", kind, o.GetNamespace(), o.GetName(), err)
	}
	r.event(c, o, corev1.EventTypeNormal, v1alpha1.EventDeleted, "Delete", "deleted %s %s/%s: %s", kind, o.GetNamespace(), o.GetName(), why)
	return nil
}

func clientKey(namespace, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: namespace, Name: name}
}

// preconditionUID deletes exactly the object that was read, never a
// successor of the same name.
func preconditionUID(o client.Object) client.Preconditions {
	return client.Preconditions{UID: ptr.To(o.GetUID())}
}
