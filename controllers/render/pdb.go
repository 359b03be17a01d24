package render

import (
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// PodDisruptionBudgetEnabled tells whether the cluster wants a PDB; the
// schema defaults it to true.
func PodDisruptionBudgetEnabled(c *v1alpha1.NameServerCluster) bool {
	return c.Spec.PodDisruptionBudget.Enabled == nil || *c.Spec.PodDisruptionBudget.Enabled
}

// PodDisruptionBudget limits voluntary evictions (node drains) to
// maxUnavailable peers at a time. A pod that is not ready may always be
// evicted (AlwaysAllow): it serves nobody, and a crash-looping peer must not
// block a node drain.
func PodDisruptionBudget(c *v1alpha1.NameServerCluster) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	spec := policyv1ac.PodDisruptionBudgetSpec().
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(c))).
		WithUnhealthyPodEvictionPolicy(policyv1.AlwaysAllow)
	if c.Spec.PodDisruptionBudget.MaxUnavailable != nil {
		spec.WithMaxUnavailable(*c.Spec.PodDisruptionBudget.MaxUnavailable)
	}
	return policyv1ac.PodDisruptionBudget(PodDisruptionBudgetName(c), c.Namespace).
		WithLabels(Labels(c)).
		WithOwnerReferences(ownerReference(c)).
		WithSpec(spec)
}

// MaxUnavailable resolves spec.podDisruptionBudget.maxUnavailable to a count
// of peers (a percentage rounds up, as the PDB controller does), at least 1.
func MaxUnavailable(c *v1alpha1.NameServerCluster) int32 {
	desired := ptr.Deref(c.Spec.Replicas, 1)
	v := c.Spec.PodDisruptionBudget.MaxUnavailable
	if v == nil {
		return 1
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, int(desired), true)
	if err != nil || n < 1 {
		return 1
	}
	return int32(n)
}
