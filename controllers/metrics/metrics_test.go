package metrics

import (
	"slices"
	"testing"

	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// conditionSeries is every cluster_condition series as it would be scraped.
func conditionSeries(t *testing.T) []Condition {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []Condition
	for _, f := range families {
		if f.GetName() != prefix+"cluster_condition" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetGauge().GetValue() != 1 {
				t.Errorf("a condition series has value %v", m.GetGauge().GetValue())
			}
			out = append(out, conditionOf(m))
		}
	}
	return out
}

func conditionOf(m *dto.Metric) Condition {
	var c Condition
	for _, l := range m.GetLabel() {
		switch l.GetName() {
		case "type":
			c.Type = l.GetValue()
		case "status":
			c.Status = l.GetValue()
		case "reason":
			c.Reason = l.GetValue()
		}
	}
	return c
}

func TestConditionSeriesFollowTheStatus(t *testing.T) {
	const ns, name = "apps", "orders"
	t.Cleanup(func() { Forget(ns, name) })
	steps := []struct {
		conditions []Condition
		want       []Condition
	}{
		{
			conditions: []Condition{{"Degraded", "True", "TargetRefused"}, {"Available", "True", "PeersServing"}},
			want:       []Condition{{"Degraded", "True", "TargetRefused"}, {"Available", "True", "PeersServing"}},
		},
		{
			// The refusal is fixed: its series goes, the new reason's comes.
			conditions: []Condition{{"Degraded", "False", "AsExpected"}, {"Available", "True", "PeersServing"}},
			want:       []Condition{{"Degraded", "False", "AsExpected"}, {"Available", "True", "PeersServing"}},
		},
		{conditions: nil, want: nil},
	}
	for i, s := range steps {
		Record(Cluster{Namespace: ns, Name: name, Conditions: s.conditions})
		got := conditionSeries(t)
		if len(got) != len(s.want) {
			t.Fatalf("step %d: condition series %+v, want %+v", i, got, s.want)
		}
		for _, w := range s.want {
			if !slices.Contains(got, w) {
				t.Errorf("step %d: no series for %+v in %+v", i, w, got)
			}
		}
	}
}

func TestForgetDropsTheConditionSeries(t *testing.T) {
	Record(Cluster{Namespace: "apps", Name: "gone", Conditions: []Condition{{"Degraded", "True", "NotOwned"}}})
	Forget("apps", "gone")
	if got := conditionSeries(t); len(got) != 0 {
		t.Fatalf("condition series left after Forget: %+v", got)
	}
}
