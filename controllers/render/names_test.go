package render

import (
	"testing"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

func TestNames(t *testing.T) {
	c := cluster()
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"StatefulSetName", StatefulSetName(c), "ns1"},
		{"HeadlessServiceName", HeadlessServiceName(c), "ns1-headless"},
		{"ClientServiceName", ClientServiceName(c), "ns1"},
		{"KVConfigMapName", KVConfigMapName(c), "ns1-kv"},
		{"ConfigMapName", ConfigMapName(c), "ns1-config-" + ConfigChecksum(c)[:10]},
		{"LegacyConfigMapName", LegacyConfigMapName(c), "ns1-config"},
		{"PodDisruptionBudgetName", PodDisruptionBudgetName(c), "ns1"},
		{"PodName 0", PodName(c, 0), "ns1-0"},
		{"PodName 12", PodName(c, 12), "ns1-12"},
		{"ExternalServiceName 0", ExternalServiceName(c, 0), "ns1-0-external"},
		{"ExternalServiceName 7", ExternalServiceName(c, 7), "ns1-7-external"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestImage(t *testing.T) {
	if got := Image(cluster(), testOptions); got != testOptions.DefaultImage {
		t.Errorf("Image() without spec.image = %q, want the operator's default %q", got, testOptions.DefaultImage)
	}
	c := cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.Image = "mirror.example/namesrv:dev" })
	if got := Image(c, testOptions); got != "mirror.example/namesrv:dev" {
		t.Errorf("Image() = %q, want spec.image", got)
	}
}
