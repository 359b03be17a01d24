package render

import (
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// PodDisruptionBudgetEnabled tells whether the cluster wants a PDB; the
// schema defaults it to true.
func PodDisruptionBudgetEnabled(c *v1alpha1.NameServerCluster) bool {
	return c.Spec.PodDisruptionBudget.Enabled == nil || *c.Spec.PodDisruptionBudget.Enabled
}

// PodDisruptionBudget limits voluntary evictions (node drains) to
// maxUnavailable peers at a time.
func PodDisruptionBudget(c *v1alpha1.NameServerCluster) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	spec := policyv1ac.PodDisruptionBudgetSpec().
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(c)))
	if c.Spec.PodDisruptionBudget.MaxUnavailable != nil {
		spec.WithMaxUnavailable(*c.Spec.PodDisruptionBudget.MaxUnavailable)
	}
	return policyv1ac.PodDisruptionBudget(PodDisruptionBudgetName(c), c.Namespace).
		WithLabels(Labels(c)).
		WithOwnerReferences(ownerReference(c)).
		WithSpec(spec)
}
