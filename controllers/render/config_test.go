package render

import (
	"encoding/hex"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

func TestProperties(t *testing.T) {
	header := "# NameServer properties of NameServerCluster mq/ns1, rendered by kube-namesrv from spec.config.\n" +
		"# Edits here are overwritten: change spec.config instead. Ports and paths are command-line flags.\n"
	gate := "routeGateEnable=true\nrouteGateTimeoutSeconds=75\n"
	tests := []struct {
		name      string
		heartbeat *int32
		config    map[string]v1alpha1.ConfigValue
		want      string
	}{
		{name: "empty config is the header and the route gate defaults", want: header + gate},
		{
			name:   "keys are sorted, defaults among them",
			config: map[string]v1alpha1.ConfigValue{"scanNotActiveBrokerInterval": "5000", "orderMessageEnable": "true", "clusterTest": "false"},
			want:   header + "clusterTest=false\norderMessageEnable=true\n" + gate + "scanNotActiveBrokerInterval=5000\n",
		},
		{
			name:   "spec.config overrides the gate timeout and keeps the gate",
			config: map[string]v1alpha1.ConfigValue{"routeGateTimeoutSeconds": "600"},
			want:   header + "routeGateEnable=true\nrouteGateTimeoutSeconds=600\n",
		},
		{
			name:   "spec.config turns the gate off and keeps the timeout",
			config: map[string]v1alpha1.ConfigValue{"routeGateEnable": "false"},
			want:   header + "routeGateEnable=false\nrouteGateTimeoutSeconds=75\n",
		},
		{
			name:      "the timeout is two broker rounds and 15 s",
			heartbeat: ptr.To[int32](10),
			want:      header + "routeGateEnable=true\nrouteGateTimeoutSeconds=35\n",
		},
		{
			name:      "an overridden timeout ignores the broker round",
			heartbeat: ptr.To[int32](10),
			config:    map[string]v1alpha1.ConfigValue{"routeGateTimeoutSeconds": "600"},
			want:      header + "routeGateEnable=true\nrouteGateTimeoutSeconds=600\n",
		},
		{
			name:   "control characters and backslashes are escaped",
			config: map[string]v1alpha1.ConfigValue{"a": "x\ny\\z\tq\rw"},
			want:   header + "a=x\\ny\\\\z\\tq\\rw\n" + gate,
		},
		{
			name:   "a leading space is kept, inner spaces and separators are plain",
			config: map[string]v1alpha1.ConfigValue{"a": " b c=d:e"},
			want:   header + "a=\\ b c=d:e\n" + gate,
		},
		{
			name:   "non-ASCII becomes UTF-16 escapes",
			config: map[string]v1alpha1.ConfigValue{"a": "é😀"},
			want:   header + "a=\\u00E9\\uD83D\\uDE00\n" + gate,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(func(c *v1alpha1.NameServerCluster) {
				c.Spec.Config = tt.config
				if tt.heartbeat != nil {
					c.Spec.BrokerHeartbeatSeconds = tt.heartbeat
				}
			})
			if got := Properties(c); got != tt.want {
				t.Errorf("Properties() =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// An override renders into a map built from DefaultProperties; a shared
// map would carry one cluster's config into the next one's file.
func TestPropertiesOverrideDoesNotLeak(t *testing.T) {
	want := Properties(cluster())
	Properties(cluster(func(c *v1alpha1.NameServerCluster) {
		c.Spec.Config = map[string]v1alpha1.ConfigValue{"routeGateTimeoutSeconds": "600", "orderMessageEnable": "true"}
	}))
	if got := Properties(cluster()); got != want {
		t.Errorf("Properties() after another cluster's override =\n%q\nwant\n%q", got, want)
	}
}

func TestDefaultProperties(t *testing.T) {
	tests := []struct {
		name      string
		heartbeat *int32
		want      map[string]string
	}{
		{name: "unset heartbeat is 30 s", want: map[string]string{"routeGateEnable": "true", "routeGateTimeoutSeconds": "75"}},
		{name: "30 s", heartbeat: ptr.To[int32](30), want: map[string]string{"routeGateEnable": "true", "routeGateTimeoutSeconds": "75"}},
		{name: "1 s", heartbeat: ptr.To[int32](1), want: map[string]string{"routeGateEnable": "true", "routeGateTimeoutSeconds": "17"}},
		{name: "600 s", heartbeat: ptr.To[int32](600), want: map[string]string{"routeGateEnable": "true", "routeGateTimeoutSeconds": "1215"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.BrokerHeartbeatSeconds = tt.heartbeat })
			if got := DefaultProperties(c); !maps.Equal(got, tt.want) {
				t.Errorf("DefaultProperties() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBrokerRound(t *testing.T) {
	tests := []struct {
		heartbeat *int32
		want      time.Duration
	}{
		{nil, 30 * time.Second},
		{ptr.To[int32](10), 10 * time.Second},
		{ptr.To[int32](600), 10 * time.Minute},
	}
	for _, tt := range tests {
		c := cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.BrokerHeartbeatSeconds = tt.heartbeat })
		if got := BrokerRound(c); got != tt.want {
			t.Errorf("BrokerRound(heartbeat %v) = %v, want %v", ptr.Deref(tt.heartbeat, 0), got, tt.want)
		}
	}
}

func TestConfigChecksum(t *testing.T) {
	none := func(*v1alpha1.NameServerCluster) {}
	overrideTimeout := func(c *v1alpha1.NameServerCluster) {
		c.Spec.Config = map[string]v1alpha1.ConfigValue{"routeGateTimeoutSeconds": "600"}
	}
	tests := []struct {
		name string
		a, b func(*v1alpha1.NameServerCluster)
		same bool
	}{
		{name: "same spec", a: none, b: none, same: true},
		{name: "replicas do not change the file", a: none, b: func(c *v1alpha1.NameServerCluster) { *c.Spec.Replicas = 5 }, same: true},
		{name: "a config entry changes it", a: none, b: func(c *v1alpha1.NameServerCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"orderMessageEnable": "true"}
		}},
		{name: "overriding a default changes it", a: none, b: overrideTimeout},
		{name: "the broker heartbeat changes the default gate timeout", a: none, b: func(c *v1alpha1.NameServerCluster) {
			c.Spec.BrokerHeartbeatSeconds = ptr.To[int32](10)
		}},
		{name: "the broker heartbeat does not matter once the timeout is set", a: overrideTimeout, b: func(c *v1alpha1.NameServerCluster) {
			overrideTimeout(c)
			c.Spec.BrokerHeartbeatSeconds = ptr.To[int32](10)
		}, same: true},
		{name: "an unset heartbeat is the default one", a: none, b: func(c *v1alpha1.NameServerCluster) {
			c.Spec.BrokerHeartbeatSeconds = nil
		}, same: true},
		// The KV file reaches running peers through the kubelet: a
		// kvConfig change must not roll them.
		{name: "kvConfig does not change it", a: none, b: func(c *v1alpha1.NameServerCluster) {
			c.Spec.KVConfig = []v1alpha1.KVConfigEntry{{Namespace: "ORDER_TOPIC_CONFIG", Key: "t1", Value: "broker-a:4"}}
		}, same: true},
		{name: "the KV policy and removed keys do not change it", a: none, b: func(c *v1alpha1.NameServerCluster) {
			c.Spec.KVConfigPolicy = v1alpha1.KVConfigAdditive
			c.Status.KVConfig = &v1alpha1.KVConfigStatus{Declared: []string{"ns/a"}, Removed: []string{"ns/b"}}
		}, same: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := ConfigChecksum(cluster(tt.a)), ConfigChecksum(cluster(tt.b))
			if (a == b) != tt.same {
				t.Errorf("checksums %s and %s: same=%v, want %v", a, b, a == b, tt.same)
			}
			for _, sum := range []string{a, b} {
				if _, err := hex.DecodeString(sum); err != nil || len(sum) != 64 {
					t.Errorf("checksum %q is not a hex sha256", sum)
				}
			}
		})
	}
}

func TestConfigConfigMap(t *testing.T) {
	c := cluster(func(c *v1alpha1.NameServerCluster) {
		c.Spec.Config = map[string]v1alpha1.ConfigValue{"orderMessageEnable": "true"}
	})
	cm := typed[corev1.ConfigMap](t, ConfigConfigMap(c))
	if want := "ns1-config-" + ConfigChecksum(c)[:10]; cm.Name != want || cm.Namespace != "mq" || cm.Labels[LabelConfig] != ConfigChecksum(c)[:10] {
		t.Errorf("name = %s/%s, labels %v; want mq/%s labelled with its checksum", cm.Namespace, cm.Name, cm.Labels, want)
	}
	other := cluster(func(c *v1alpha1.NameServerCluster) {
		c.Spec.Config = map[string]v1alpha1.ConfigValue{"orderMessageEnable": "false"}
	})
	if ConfigMapName(other) == cm.Name {
		t.Errorf("two configs share the ConfigMap %s: an old pod would read the new one", cm.Name)
	}
	if name := typed[corev1.ConfigMap](t, ConfigConfigMap(c)).Name; name != cm.Name {
		t.Errorf("the same config renders ConfigMaps %s and %s", cm.Name, name)
	}
	if len(cm.Data) != 1 || !strings.Contains(cm.Data["namesrv.properties"], "\norderMessageEnable=true\n") {
		t.Errorf("data = %q, want only namesrv.properties with the entry", cm.Data)
	}
	delete(cm.Labels, LabelConfig)
	checkLabels(t, cm.Labels)
	checkOwner(t, cm.OwnerReferences)
}

func TestValidateConfig(t *testing.T) {
	tests := []struct {
		name   string
		config map[string]v1alpha1.ConfigValue
		want   string
	}{
		{name: "nothing set"},
		{name: "known keys with good values", config: map[string]v1alpha1.ConfigValue{"orderMessageEnable": "true", "scanNotActiveBrokerInterval": "6000"}},
		{name: "an unknown key, as the NameServer accepts it", config: map[string]v1alpha1.ConfigValue{"somethingNew": "x"}},
		{name: "a number that is not one", config: map[string]v1alpha1.ConfigValue{"scanNotActiveBrokerInterval": "5s"},
			want: `invalid value "5s" for property scanNotActiveBrokerInterval: want a decimal long`},
		{name: "a boolean that is not one", config: map[string]v1alpha1.ConfigValue{"orderMessageEnable": "yes"},
			want: `invalid value "yes" for property orderMessageEnable: want true or false`},
		{name: "out of range", config: map[string]v1alpha1.ConfigValue{"scanNotActiveBrokerInterval": "0"},
			want: "scanNotActiveBrokerInterval"},
		{name: "a gate that could never open", config: map[string]v1alpha1.ConfigValue{"routeGateTimeoutSeconds": "0"},
			want: "routeGateTimeoutSeconds"},
		{name: "an extra port that is the remoting port", config: map[string]v1alpha1.ConfigValue{"extraListenPorts": "9876"},
			want: "port 9876 is listed twice or is listenPort"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateConfig(cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.Config = tt.config }))
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("ValidateConfig() = %v, want %q", err, tt.want)
			}
		})
	}
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
