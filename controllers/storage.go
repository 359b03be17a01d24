package controllers

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/publish"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

// A StatefulSet's volume claim templates are immutable, so a larger
// spec.storage size reaches the peers another way: the StatefulSet keeps
// the size it was created with, and the operator expands each peer's claim
// in place, which Kubernetes allows when the claim's StorageClass has
// allowVolumeExpansion. A claim the StatefulSet creates later, with the old
// size, is expanded the same way.

// wantedClaimSize is spec.storage's claim size, nil without a claim
// template.
func wantedClaimSize(c *v1alpha1.NameServerCluster) *resource.Quantity {
	st := c.Spec.Storage
	if st == nil || st.VolumeClaimTemplate == nil {
		return nil
	}
	q, ok := st.VolumeClaimTemplate.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return nil
	}
	return &q
}

// templateClaimSize is the size of the StatefulSet's data claim template,
// nil when it has none.
func templateClaimSize(sts *appsv1.StatefulSet) *resource.Quantity {
	for _, t := range sts.Spec.VolumeClaimTemplates {
		if t.Name != render.DataVolume {
			continue
		}
		if q, ok := t.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
			return &q
		}
	}
	return nil
}

// keepClaimTemplateSize renders the data claim template with the size the
// existing StatefulSet holds, which the API server would refuse to change.
func (r *NameServerClusterReconciler) keepClaimTemplateSize(ctx context.Context, c *v1alpha1.NameServerCluster, ac *appsv1ac.StatefulSetApplyConfiguration) error {
	sts := &appsv1.StatefulSet{}
	found, err := r.getLive(ctx, client.ObjectKey{Namespace: c.Namespace, Name: render.StatefulSetName(c)}, sts)
	if err != nil || !found {
		if err != nil {
			return fmt.Errorf("reading the StatefulSet of %s/%s: %w", c.Namespace, c.Name, err)
		}
		return nil
	}
	size := templateClaimSize(sts)
	if size == nil || ac.Spec == nil {
		return nil
	}
	for _, t := range ac.Spec.VolumeClaimTemplates {
		if ptr.Deref(t.Name, "") != render.DataVolume || t.Spec == nil || t.Spec.Resources == nil || t.Spec.Resources.Requests == nil {
			continue
		}
		(*t.Spec.Resources.Requests)[corev1.ResourceStorage] = *size
	}
	return nil
}

// expandClaims grows the peers' claims to spec.storage's size when it is
// larger than the StatefulSet's template. A claim that cannot grow (its
// StorageClass does not allow expansion, or the API server refuses) is a
// problem; nothing is ever shrunk.
func (r *NameServerClusterReconciler) expandClaims(ctx context.Context, c *v1alpha1.NameServerCluster, sts *appsv1.StatefulSet) (*problem, error) {
	want, have := wantedClaimSize(c), templateClaimSize(sts)
	if want == nil || have == nil || want.Cmp(*have) <= 0 {
		return nil, nil
	}
	claims := &corev1.PersistentVolumeClaimList{}
	if err := r.List(ctx, claims, client.InNamespace(c.Namespace), client.MatchingLabels(render.SelectorLabels(c))); err != nil {
		return nil, fmt.Errorf("listing the claims of %s/%s: %w", c.Namespace, c.Name, err)
	}
	var refused []string
	var related client.Object
	for i := range claims.Items {
		pvc := &claims.Items[i]
		if !claimOf(c, pvc.Name) || pvc.DeletionTimestamp != nil {
			continue
		}
		if q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; q.Cmp(*want) >= 0 {
			continue
		}
		if why, err := r.expansionRefused(ctx, pvc); err != nil || why != "" {
			if err != nil {
				return nil, err
			}
			refused, related = append(refused, fmt.Sprintf("claim %s: %s", pvc.Name, why)), pvc
			continue
		}
		patch := client.MergeFrom(pvc.DeepCopy())
		old := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = *want
		switch err := r.Patch(ctx, pvc, patch); {
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
			refused, related = append(refused, fmt.Sprintf("claim %s: the API server refused the expansion: %v", pvc.Name, err)), pvc
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("expanding claim %s/%s: %w", pvc.Namespace, pvc.Name, err)
		default:
			r.event(c, pvc, corev1.EventTypeNormal, v1alpha1.EventVolumeExpanded, "Expand",
				"expanding claim %s from %s to %s (spec.storage); the volume's driver resizes it", pvc.Name, old.String(), want.String())
		}
	}
	if len(refused) == 0 {
		return nil, nil
	}
	return &problem{Reason: v1alpha1.RefusalVolumeExpansion, Retry: true, Related: related, Message: fmt.Sprintf(
		"spec.storage asks for %s, and %d claims cannot grow: %s; grow the volumes by hand, or set the size back to %s",
		want.String(), len(refused), strings.Join(refused[:min(len(refused), maxListedInStatus)], "; "), have.String())}, nil
}

// expansionRefused says why a claim's StorageClass does not let it grow, ""
// when it does or when the operator may not read StorageClasses (a
// namespaced install): the API server's own refusal then says why.
func (r *NameServerClusterReconciler) expansionRefused(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (string, error) {
	name := ptr.Deref(pvc.Spec.StorageClassName, "")
	if name == "" {
		return "it has no StorageClass, so nothing can expand it", nil
	}
	sc := &storagev1.StorageClass{}
	switch err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, sc); {
	case apierrors.IsForbidden(err):
		return "", nil
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("its StorageClass %s does not exist", name), nil
	case err != nil:
		return "", fmt.Errorf("reading StorageClass %s: %w", name, err)
	}
	if !ptr.Deref(sc.AllowVolumeExpansion, false) {
		return fmt.Sprintf("its StorageClass %s does not set allowVolumeExpansion", name), nil
	}
	return "", nil
}

// claimOf tells whether a claim is a peer's data claim: data-<name>-<ordinal>.
func claimOf(c *v1alpha1.NameServerCluster, claim string) bool {
	_, ok := publish.Ordinal(render.DataVolume+"-"+render.StatefulSetName(c), claim)
	return ok
}
