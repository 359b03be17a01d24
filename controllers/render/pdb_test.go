package render

import (
	"maps"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

func TestPodDisruptionBudget(t *testing.T) {
	tests := []struct {
		name        string
		pdb         v1alpha1.PodDisruptionBudgetSpec
		wantEnabled bool
		wantMax     *intstr.IntOrString
	}{
		{name: "default", pdb: v1alpha1.PodDisruptionBudgetSpec{Enabled: ptr.To(true), MaxUnavailable: ptr.To(intstr.FromInt32(1))}, wantEnabled: true, wantMax: ptr.To(intstr.FromInt32(1))},
		{name: "percentage passes through", pdb: v1alpha1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromString("50%"))}, wantEnabled: true, wantMax: ptr.To(intstr.FromString("50%"))},
		{name: "disabled", pdb: v1alpha1.PodDisruptionBudgetSpec{Enabled: ptr.To(false), MaxUnavailable: ptr.To(intstr.FromInt32(2))}, wantMax: ptr.To(intstr.FromInt32(2))},
		{name: "unset maxUnavailable is not invented", pdb: v1alpha1.PodDisruptionBudgetSpec{}, wantEnabled: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.PodDisruptionBudget = tt.pdb })
			if got := PodDisruptionBudgetEnabled(c); got != tt.wantEnabled {
				t.Errorf("enabled = %v, want %v", got, tt.wantEnabled)
			}
			pdb := typed[policyv1.PodDisruptionBudget](t, PodDisruptionBudget(c))
			if pdb.Name != "ns1" || pdb.Namespace != "mq" || pdb.Spec.MinAvailable != nil {
				t.Errorf("pdb %s/%s minAvailable=%v, want mq/ns1 without minAvailable", pdb.Namespace, pdb.Name, pdb.Spec.MinAvailable)
			}
			if got := pdb.Spec.MaxUnavailable; (got == nil) != (tt.wantMax == nil) || (got != nil && *got != *tt.wantMax) {
				t.Errorf("maxUnavailable = %v, want %v", got, tt.wantMax)
			}
			// A pod that is not ready serves nobody: a crash-looping peer
			// must not block a node drain.
			if p := pdb.Spec.UnhealthyPodEvictionPolicy; p == nil || *p != policyv1.AlwaysAllow {
				t.Errorf("unhealthyPodEvictionPolicy = %v, want AlwaysAllow", p)
			}
			if want := map[string]string{"app.kubernetes.io/name": "namesrv", "app.kubernetes.io/instance": "ns1"}; pdb.Spec.Selector == nil || !maps.Equal(pdb.Spec.Selector.MatchLabels, want) {
				t.Errorf("selector = %v, want %v", pdb.Spec.Selector, want)
			}
			checkLabels(t, pdb.Labels)
			checkOwner(t, pdb.OwnerReferences)
		})
	}
}

func TestMaxUnavailable(t *testing.T) {
	tests := []struct {
		name     string
		replicas *int32
		max      *intstr.IntOrString
		want     int32
	}{
		{name: "unset is one", replicas: ptr.To[int32](3), want: 1},
		{name: "a count", replicas: ptr.To[int32](5), max: ptr.To(intstr.FromInt32(2)), want: 2},
		{name: "half of 3 rounds up", replicas: ptr.To[int32](3), max: ptr.To(intstr.FromString("50%")), want: 2},
		{name: "34% of 3 rounds up", replicas: ptr.To[int32](3), max: ptr.To(intstr.FromString("34%")), want: 2},
		{name: "10% of 64 rounds up", replicas: ptr.To[int32](64), max: ptr.To(intstr.FromString("10%")), want: 7},
		{name: "1% is at least one", replicas: ptr.To[int32](3), max: ptr.To(intstr.FromString("1%")), want: 1},
		{name: "100% is every peer", replicas: ptr.To[int32](4), max: ptr.To(intstr.FromString("100%")), want: 4},
		{name: "unset replicas count as one", max: ptr.To(intstr.FromString("50%")), want: 1},
		{name: "zero is raised to one", replicas: ptr.To[int32](3), max: ptr.To(intstr.FromInt32(0)), want: 1},
		{name: "a malformed percentage is one", replicas: ptr.To[int32](3), max: ptr.To(intstr.FromString("half")), want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(func(c *v1alpha1.NameServerCluster) {
				c.Spec.Replicas = tt.replicas
				c.Spec.PodDisruptionBudget.MaxUnavailable = tt.max
			})
			if got := MaxUnavailable(c); got != tt.want {
				t.Errorf("MaxUnavailable() = %d, want %d", got, tt.want)
			}
		})
	}
}
