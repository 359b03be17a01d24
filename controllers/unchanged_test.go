package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

func TestHolds(t *testing.T) {
	desired := func() *corev1ac.ConfigMapApplyConfiguration {
		return corev1ac.ConfigMap("cm", "ns").WithLabels(map[string]string{"a": "1"}).WithData(map[string]string{"k": "v"})
	}
	digest, err := appliedDigest(desired())
	if err != nil {
		t.Fatal(err)
	}
	existing := func(edit func(*corev1.ConfigMap)) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", ResourceVersion: "7", UID: "u",
				Labels:      map[string]string{"a": "1", "added-by-hand": "x"},
				Annotations: map[string]string{render.AnnotationApplied: digest}},
			Data: map[string]string{"k": "v"},
		}
		edit(cm)
		return cm
	}
	for _, tc := range []struct {
		name string
		edit func(*corev1.ConfigMap)
		want bool
	}{
		{"as applied, with fields the server and others added", func(*corev1.ConfigMap) {}, true},
		{"a label edited by hand", func(cm *corev1.ConfigMap) { cm.Labels["a"] = "2" }, false},
		{"a label removed by hand", func(cm *corev1.ConfigMap) { delete(cm.Labels, "a") }, false},
		{"a data key removed by hand", func(cm *corev1.ConfigMap) { delete(cm.Data, "k") }, false},
		{"another configuration applied last", func(cm *corev1.ConfigMap) { cm.Annotations[render.AnnotationApplied] = "other" }, false},
		{"never applied by this release", func(cm *corev1.ConfigMap) { cm.Annotations = nil }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := holds(existing(tc.edit), desired(), digest)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("holds = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAppliedDigestFollowsRemovals(t *testing.T) {
	with, err := appliedDigest(corev1ac.ConfigMap("cm", "ns").WithData(map[string]string{"k": "v", "gone": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	without, err := appliedDigest(corev1ac.ConfigMap("cm", "ns").WithData(map[string]string{"k": "v"}))
	if err != nil {
		t.Fatal(err)
	}
	if with == without {
		t.Error("a configuration without a data key has the digest of one with it: the key would never be removed")
	}
}

func TestSubset(t *testing.T) {
	for _, tc := range []struct {
		name       string
		want, have any
		holds      bool
	}{
		{"equal scalars", "a", "a", true},
		{"different scalars", float64(1), float64(2), false},
		{"map with more keys", map[string]any{"a": "1"}, map[string]any{"a": "1", "b": "2"}, true},
		{"map missing a key", map[string]any{"a": "1"}, map[string]any{"b": "2"}, false},
		{"zero value omitted", map[string]any{"readOnly": false, "n": float64(0), "s": "", "l": []any{}, "m": map[string]any{}, "x": nil}, map[string]any{}, true},
		{"list element subsets", []any{map[string]any{"name": "a"}}, []any{map[string]any{"name": "a", "default": "d"}}, true},
		{"list of another length", []any{"a"}, []any{"a", "b"}, false},
		{"list in another order", []any{"a", "b"}, []any{"b", "a"}, false},
		{"empty list absent", []any{}, nil, true},
		{"list against a map", []any{"a"}, map[string]any{"a": "a"}, false},
		{"null against a value", nil, "a", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := subset(tc.want, tc.have); got != tc.holds {
				t.Errorf("subset(%v, %v) = %v, want %v", tc.want, tc.have, got, tc.holds)
			}
		})
	}
}
