package render

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

func TestProperties(t *testing.T) {
	header := "# NameServer properties of NameServerCluster mq/ns1, rendered by kube-namesrv from spec.config.\n" +
		"# Edits here are overwritten: change spec.config instead. Ports and paths are command-line flags.\n"
	warmUp := "needWaitForService=true\nwaitSecondsForService=45\n"
	tests := []struct {
		name   string
		config map[string]v1alpha1.ConfigValue
		want   string
	}{
		{name: "empty config is the header and the warm-up defaults", want: header + warmUp},
		{
			name:   "keys are sorted",
			config: map[string]v1alpha1.ConfigValue{"scanNotActiveBrokerInterval": "5000", "orderMessageEnable": "true", "clusterTest": "false"},
			want:   header + "clusterTest=false\nneedWaitForService=true\norderMessageEnable=true\nscanNotActiveBrokerInterval=5000\nwaitSecondsForService=45\n",
		},
		{
			name:   "spec.config overrides a default",
			config: map[string]v1alpha1.ConfigValue{"needWaitForService": "false", "waitSecondsForService": "5"},
			want:   header + "needWaitForService=false\nwaitSecondsForService=5\n",
		},
		{
			name:   "control characters and backslashes are escaped",
			config: map[string]v1alpha1.ConfigValue{"a": "x\ny\\z\tq\rw"},
			want:   header + "a=x\\ny\\\\z\\tq\\rw\n" + warmUp,
		},
		{
			name:   "a leading space is kept, inner spaces and separators are plain",
			config: map[string]v1alpha1.ConfigValue{"a": " b c=d:e"},
			want:   header + "a=\\ b c=d:e\n" + warmUp,
		},
		{
			name:   "non-ASCII becomes UTF-16 escapes",
			config: map[string]v1alpha1.ConfigValue{"a": "é😀"},
			want:   header + "a=\\u00E9\\uD83D\\uDE00\n" + warmUp,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.Config = tt.config })
			if got := Properties(c); got != tt.want {
				t.Errorf("Properties() =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestConfigChecksum(t *testing.T) {
	base := ConfigChecksum(cluster())
	tests := []struct {
		name string
		edit func(*v1alpha1.NameServerCluster)
		same bool
	}{
		{name: "same spec", edit: func(*v1alpha1.NameServerCluster) {}, same: true},
		{name: "replicas do not change the file", edit: func(c *v1alpha1.NameServerCluster) { *c.Spec.Replicas = 5 }, same: true},
		{name: "a config entry changes it", edit: func(c *v1alpha1.NameServerCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"orderMessageEnable": "true"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ConfigChecksum(cluster(tt.edit))
			if (got == base) != tt.same {
				t.Errorf("checksum %s vs base %s: same=%v, want %v", got, base, got == base, tt.same)
			}
			if len(got) != 64 {
				t.Errorf("checksum %q is not a hex sha256", got)
			}
		})
	}
}

func TestConfigConfigMap(t *testing.T) {
	c := cluster(func(c *v1alpha1.NameServerCluster) {
		c.Spec.Config = map[string]v1alpha1.ConfigValue{"orderMessageEnable": "true"}
	})
	cm := typed[corev1.ConfigMap](t, ConfigConfigMap(c))
	if cm.Name != "ns1-config" || cm.Namespace != "mq" {
		t.Errorf("name = %s/%s, want mq/ns1-config", cm.Namespace, cm.Name)
	}
	if len(cm.Data) != 1 || !strings.Contains(cm.Data["namesrv.properties"], "\norderMessageEnable=true\n") {
		t.Errorf("data = %q, want only namesrv.properties with the entry", cm.Data)
	}
	checkLabels(t, cm.Labels)
	checkOwner(t, cm.OwnerReferences)
}

func checkLabels(t *testing.T, got map[string]string) {
	t.Helper()
	want := map[string]string{
		"app.kubernetes.io/name": "namesrv", "app.kubernetes.io/instance": "ns1",
		"app.kubernetes.io/managed-by": "kube-namesrv", "app.kubernetes.io/component": "nameserver",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("label %s = %q, want %q (labels %v)", k, got[k], v, got)
		}
	}
}
