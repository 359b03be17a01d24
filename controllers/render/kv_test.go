package render

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// orderEntries are declared KV entries in two namespaces, in no particular
// order.
var orderEntries = []v1alpha1.KVConfigEntry{
	{Namespace: "ORDER_TOPIC_CONFIG", Key: "orders", Value: "broker-a:4;broker-b:4"},
	{Namespace: "app", Key: "feature", Value: `{"on": true, "note": "a \"quoted\" value; with ; and \\"}`},
	{Namespace: "ORDER_TOPIC_CONFIG", Key: "payments", Value: "broker-a:8"},
	{Namespace: "app", Key: "empty", Value: ""},
}

func renderKVFile(t *testing.T, c *v1alpha1.NameServerCluster) []byte {
	t.Helper()
	b, err := KVFile(c)
	if err != nil {
		t.Fatalf("KVFile(): %v", err)
	}
	return b
}

func TestKVFile(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(*v1alpha1.NameServerCluster)
		want   peerstatus.KVFile
		golden string
	}{
		{
			name:   "nothing declared is an empty owned table",
			want:   peerstatus.KVFile{Policy: "Owned", ConfigTable: map[string]map[string]string{}},
			golden: `{"policy":"Owned","configTable":{}}`,
		},
		{
			name: "an unset policy is Owned",
			edit: func(c *v1alpha1.NameServerCluster) { c.Spec.KVConfigPolicy = "" },
			want: peerstatus.KVFile{Policy: "Owned", ConfigTable: map[string]map[string]string{}},
		},
		{
			name: "entries of two namespaces, additive",
			edit: func(c *v1alpha1.NameServerCluster) {
				c.Spec.KVConfig = orderEntries
				c.Spec.KVConfigPolicy = v1alpha1.KVConfigAdditive
			},
			want: peerstatus.KVFile{Policy: "Additive", ConfigTable: map[string]map[string]string{
				"ORDER_TOPIC_CONFIG": {"orders": "broker-a:4;broker-b:4", "payments": "broker-a:8"},
				"app":                {"feature": `{"on": true, "note": "a \"quoted\" value; with ; and \\"}`, "empty": ""},
			}},
		},
		{
			name: "removed keys, by namespace, next to declared ones",
			edit: func(c *v1alpha1.NameServerCluster) {
				c.Spec.KVConfig = orderEntries[:1]
				c.Status.KVConfig = &v1alpha1.KVConfigStatus{
					Declared: []string{"ORDER_TOPIC_CONFIG/orders"},
					Removed:  []string{"ORDER_TOPIC_CONFIG/old", "ORDER_TOPIC_CONFIG/older", "app/flag"},
				}
			},
			want: peerstatus.KVFile{
				Policy:      "Owned",
				ConfigTable: map[string]map[string]string{"ORDER_TOPIC_CONFIG": {"orders": "broker-a:4;broker-b:4"}},
				Removed:     map[string][]string{"ORDER_TOPIC_CONFIG": {"old", "older"}, "app": {"flag"}},
			},
			golden: `{"policy":"Owned","configTable":{"ORDER_TOPIC_CONFIG":{"orders":"broker-a:4;broker-b:4"}},` +
				`"removed":{"ORDER_TOPIC_CONFIG":["old","older"],"app":["flag"]}}`,
		},
		{
			name: "everything removed leaves an empty table and the removals",
			edit: func(c *v1alpha1.NameServerCluster) {
				c.Status.KVConfig = &v1alpha1.KVConfigStatus{Removed: []string{"app/flag"}}
			},
			want: peerstatus.KVFile{
				Policy: "Owned", ConfigTable: map[string]map[string]string{},
				Removed: map[string][]string{"app": {"flag"}},
			},
		},
		{
			name: "a key is cut at the first slash; an entry without one is skipped",
			edit: func(c *v1alpha1.NameServerCluster) {
				c.Status.KVConfig = &v1alpha1.KVConfigStatus{Removed: []string{"app/a/b", "garbage"}}
			},
			want: peerstatus.KVFile{
				Policy: "Owned", ConfigTable: map[string]map[string]string{},
				Removed: map[string][]string{"app": {"a/b"}},
			},
		},
		{
			name: "a status without removals renders none",
			edit: func(c *v1alpha1.NameServerCluster) {
				c.Spec.KVConfig = orderEntries[2:3]
				c.Status.KVConfig = &v1alpha1.KVConfigStatus{Declared: []string{"ORDER_TOPIC_CONFIG/payments"}}
			},
			want: peerstatus.KVFile{
				Policy: "Owned", ConfigTable: map[string]map[string]string{"ORDER_TOPIC_CONFIG": {"payments": "broker-a:8"}},
			},
			golden: `{"policy":"Owned","configTable":{"ORDER_TOPIC_CONFIG":{"payments":"broker-a:8"}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster()
			if tt.edit != nil {
				tt.edit(c)
			}
			b := renderKVFile(t, c)
			var got peerstatus.KVFile
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("decoding %s: %v", b, err)
			}
			// DeepEqual, not Semantic: an empty table must be {} and no
			// removals must be absent, not null.
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("KVFile() decodes to\n%+v\nwant\n%+v\n(file %s)", got, tt.want, b)
			}
			if tt.golden != "" && string(b) != tt.golden {
				t.Errorf("KVFile() =\n%s\nwant\n%s", b, tt.golden)
			}
		})
	}
}

// Every peer compares the digest of the file it read with the operator's:
// the same declaration must give the same bytes, whatever the order of
// spec.kvConfig, and a different declaration different bytes.
func TestKVFileStable(t *testing.T) {
	withEntries := func(entries []v1alpha1.KVConfigEntry) func(*v1alpha1.NameServerCluster) {
		return func(c *v1alpha1.NameServerCluster) {
			c.Spec.KVConfig = entries
			c.Status.KVConfig = &v1alpha1.KVConfigStatus{Removed: []string{"app/flag", "old/key"}}
		}
	}
	reversed := slices.Clone(orderEntries)
	slices.Reverse(reversed)
	changed := slices.Clone(orderEntries)
	changed[0].Value = "broker-a:4;broker-b:2"
	tests := []struct {
		name string
		a, b func(*v1alpha1.NameServerCluster)
		same bool
	}{
		{name: "same spec", a: withEntries(orderEntries), b: withEntries(orderEntries), same: true},
		{name: "entries in another order", a: withEntries(orderEntries), b: withEntries(reversed), same: true},
		{name: "a changed value", a: withEntries(orderEntries), b: withEntries(changed)},
		{name: "another policy", a: withEntries(orderEntries), b: func(c *v1alpha1.NameServerCluster) {
			withEntries(orderEntries)(c)
			c.Spec.KVConfigPolicy = v1alpha1.KVConfigAdditive
		}},
		{name: "a removal forgotten", a: withEntries(orderEntries), b: func(c *v1alpha1.NameServerCluster) {
			withEntries(orderEntries)(c)
			c.Status.KVConfig.Removed = c.Status.KVConfig.Removed[:1]
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := renderKVFile(t, cluster(tt.a)), renderKVFile(t, cluster(tt.b))
			if (string(a) == string(b)) != tt.same {
				t.Errorf("files\n%s\n%s\nsame=%v, want %v", a, b, string(a) == string(b), tt.same)
			}
			if da, db := peerstatus.Digest(a), peerstatus.Digest(b); (da == db) != tt.same {
				t.Errorf("digests %s and %s: same=%v, want %v", da, db, da == db, tt.same)
			}
		})
	}
}

// A kvConfig change reaches running peers through the mounted file: it must
// leave the pod template, hence the pods, alone.
func TestKVConfigDoesNotChangePodTemplate(t *testing.T) {
	base := renderStatefulSet(t, cluster(), 3).Spec.Template
	edits := map[string]func(*v1alpha1.NameServerCluster){
		"entries declared": func(c *v1alpha1.NameServerCluster) { c.Spec.KVConfig = orderEntries },
		"policy changed":   func(c *v1alpha1.NameServerCluster) { c.Spec.KVConfigPolicy = v1alpha1.KVConfigAdditive },
		"keys removed": func(c *v1alpha1.NameServerCluster) {
			c.Status.KVConfig = &v1alpha1.KVConfigStatus{Declared: []string{"app/a"}, Removed: []string{"app/b"}}
		},
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			c := cluster(edit)
			if got, want := ConfigChecksum(c), ConfigChecksum(cluster()); got != want {
				t.Errorf("ConfigChecksum() = %s, want %s", got, want)
			}
			if got := renderStatefulSet(t, c, 3).Spec.Template; !equality.Semantic.DeepEqual(got, base) {
				t.Errorf("pod template changed:\n%+v\nwas\n%+v", got, base)
			}
		})
	}
}

func TestKVConfigPolicy(t *testing.T) {
	tests := []struct {
		in, want v1alpha1.KVConfigPolicy
	}{
		{"", v1alpha1.KVConfigOwned},
		{v1alpha1.KVConfigOwned, v1alpha1.KVConfigOwned},
		{v1alpha1.KVConfigAdditive, v1alpha1.KVConfigAdditive},
	}
	for _, tt := range tests {
		c := cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.KVConfigPolicy = tt.in })
		if got := KVConfigPolicy(c); got != tt.want {
			t.Errorf("KVConfigPolicy(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// The rendered file must speak the NameServer's policy names.
	if string(v1alpha1.KVConfigOwned) != peerstatus.PolicyOwned || string(v1alpha1.KVConfigAdditive) != peerstatus.PolicyAdditive {
		t.Errorf("API policies %q/%q differ from the NameServer's %q/%q",
			v1alpha1.KVConfigOwned, v1alpha1.KVConfigAdditive, peerstatus.PolicyOwned, peerstatus.PolicyAdditive)
	}
}

func TestDeclaredKVKeys(t *testing.T) {
	tests := []struct {
		name    string
		entries []v1alpha1.KVConfigEntry
		want    []string
	}{
		{name: "none", want: []string{}},
		{
			name: "in spec order", entries: orderEntries,
			want: []string{"ORDER_TOPIC_CONFIG/orders", "app/feature", "ORDER_TOPIC_CONFIG/payments", "app/empty"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.KVConfig = tt.entries })
			if got := DeclaredKVKeys(c); !slices.Equal(got, tt.want) {
				t.Errorf("DeclaredKVKeys() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestKVConfigMap(t *testing.T) {
	c := cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.KVConfig = orderEntries })
	file := renderKVFile(t, c)
	cm := typed[corev1.ConfigMap](t, KVConfigMap(c, file))
	if cm.Name != "ns1-kv" || cm.Namespace != "mq" {
		t.Errorf("name = %s/%s, want mq/ns1-kv", cm.Namespace, cm.Name)
	}
	if want := map[string]string{"kvConfig.json": string(file)}; !maps.Equal(cm.Data, want) {
		t.Errorf("data = %q, want %q", cm.Data, want)
	}
	checkLabels(t, cm.Labels)
	checkOwner(t, cm.OwnerReferences)
}

// TestKVFileRedeclaredIsNotRemoved: a key declared again before every peer
// confirmed its removal is only declared, so no NameServer deletes it.
func TestKVFileRedeclaredIsNotRemoved(t *testing.T) {
	c := cluster(func(c *v1alpha1.NameServerCluster) {
		c.Spec.KVConfig = []v1alpha1.KVConfigEntry{{Namespace: "ORDER_TOPIC_CONFIG", Key: "TopicA", Value: "broker-a:4"}}
		c.Status.KVConfig = &v1alpha1.KVConfigStatus{Removed: []string{"ORDER_TOPIC_CONFIG/TopicA", "ORDER_TOPIC_CONFIG/TopicB"}}
	})
	b, err := KVFile(c)
	if err != nil {
		t.Fatal(err)
	}
	var f peerstatus.KVFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if want := map[string][]string{"ORDER_TOPIC_CONFIG": {"TopicB"}}; !reflect.DeepEqual(f.Removed, want) {
		t.Errorf("removed = %v, want %v", f.Removed, want)
	}
}
