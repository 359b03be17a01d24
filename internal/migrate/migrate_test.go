package migrate

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestConvertFixtures converts every NameService fixture in testdata (the
// examples of apache/rocketmq-operator, restated, and cases of our own)
// and compares the YAML with its golden file.
func TestConvertFixtures(t *testing.T) {
	tests := []struct {
		fixture string
		opts    Options
		golden  string
		// skipped and notes are fields the result must report; the
		// golden file holds the wording.
		skipped []string
		notes   []string
		check   func(t *testing.T, c *v1alpha1.NameServerCluster)
	}{
		{fixture: "example-nameservice.yaml",
			skipped: []string{"nameServiceImage apacherocketmq/rocketmq-nameserver:4.5.0-alpine-operator-0.3.0",
				"storageMode HostPath, hostPath /data/rocketmq/nameserver, volumeClaimTemplates namesrv-storage"},
			notes: []string{"metadata.name", "spec.replicas", "spec.hostNetwork", "spec.resources"},
			check: func(t *testing.T, c *v1alpha1.NameServerCluster) {
				if c.Name != "name-service-nsc" || c.Namespace != "" || *c.Spec.Replicas != 1 || !c.Spec.HostNetwork ||
					c.Spec.DNSPolicy != "ClusterFirstWithHostNet" || c.Spec.ImagePullPolicy != "Always" || c.Spec.Storage != nil ||
					c.Spec.Resources.Limits.Memory().String() != "1Gi" {
					t.Errorf("%+v", c)
				}
			}},
		{fixture: "example-nameservice.yaml", golden: "example-nameservice-named.golden.yaml",
			opts: Options{Name: "namesrv", Namespace: "rocketmq"},
			check: func(t *testing.T, c *v1alpha1.NameServerCluster) {
				if c.Name != "namesrv" || c.Namespace != "rocketmq" {
					t.Errorf("%s/%s", c.Namespace, c.Name)
				}
			}},
		{fixture: "example-cluster.yaml",
			skipped: []string{"volumeClaimTemplates namesrv-storage"},
			check: func(t *testing.T, c *v1alpha1.NameServerCluster) {
				if c.Namespace != "default" || c.Spec.Storage != nil {
					t.Errorf("%+v", c)
				}
			}},
		{fixture: "production.yaml",
			skipped: []string{"env JAVA_OPT_EXT -Dtls.server.mode=enforcing", "env JAVA_OPT_EXT -DorderMessageEnable=true",
				"env JAVA_OPT_EXT -Duser.home=/home/rocketmq", "env MAX_HEAP_SIZE", "env TZ", "env JAVA_OPT_EXT -Xms2g -Xmx2g -Xmn1g",
				"metadata.labels"},
			notes: []string{"spec.storage", "spec.config", "spec.affinity", "spec.podSecurityContext", "spec.containerSecurityContext", "spec.imagePullSecrets"},
			check: func(t *testing.T, c *v1alpha1.NameServerCluster) {
				s := c.Spec
				if *s.Replicas != 3 || s.HostNetwork || s.DNSPolicy != "ClusterFirst" || s.Config["frameMaxLength"] != "33554432" || len(s.Config) != 1 ||
					*s.Storage.VolumeClaimTemplate.Spec.StorageClassName != "fast-ssd" || s.PriorityClassName != "rocketmq-critical" ||
					s.ServiceAccountName != "rocketmq" || s.NodeSelector["kubernetes.io/os"] != "linux" || len(s.Tolerations) != 1 ||
					s.PodAnnotations["prometheus.io/scrape"] != "true" || s.ImagePullSecrets[0].Name != "mirror-pull" ||
					*s.PodSecurityContext.RunAsUser != 3000 || *s.ContainerSecurityContext.AllowPrivilegeEscalation || len(c.Labels) != 0 {
					t.Errorf("%+v", s)
				}
				anti := s.Affinity.PodAntiAffinity
				want := map[string]string{"app.kubernetes.io/name": "namesrv", "app.kubernetes.io/instance": "namesrv-nsc"}
				if got := anti.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector; !equality.Semantic.DeepEqual(got.MatchLabels, want) || len(got.MatchExpressions) != 0 {
					t.Errorf("required anti-affinity selector %+v", got)
				}
				if got := anti.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector; !equality.Semantic.DeepEqual(got.MatchLabels, want) || len(got.MatchExpressions) != 0 {
					t.Errorf("preferred anti-affinity selector %+v", got)
				}
				if s.Affinity.NodeAffinity == nil {
					t.Error("node affinity lost")
				}
			}},
		{fixture: "from-cluster.yaml",
			skipped: []string{"dnsPolicy ClusterFirst", "env JAVA_OPT (valueFrom)", "storageMode unset, hostPath /var/lib/rocketmq, volumeClaimTemplates ns-data"},
			notes:   []string{"spec.hostNetwork"},
			check: func(t *testing.T, c *v1alpha1.NameServerCluster) {
				if c.Namespace != "edge" || c.Spec.DNSPolicy != "" || c.Spec.PodSecurityContext != nil || c.UID != "" || c.ResourceVersion != "" {
					t.Errorf("%+v", c)
				}
			}},
		{fixture: "storageclass-annotation.yaml",
			skipped: []string{"dnsPolicy unset"},
			notes:   []string{"spec.storage"},
			check: func(t *testing.T, c *v1alpha1.NameServerCluster) {
				pvc := c.Spec.Storage.VolumeClaimTemplate.Spec
				if *pvc.StorageClassName != "rocketmq-storage" || pvc.VolumeName != "" || c.Spec.ImagePullPolicy != "" {
					t.Errorf("%+v", pvc)
				}
			}},
		{fixture: "odd-values.yaml",
			skipped: []string{"size 0", "imagePullPolicy Sometimes", "dnsPolicy None", "storageMode Ceph, volumeClaimTemplates first",
				"env JAVA_OPT_EXT -Dcom.rocketmq.remoting.socket.sndbuf.size=lots", "volumes", "topologySpreadConstraints"},
			notes: []string{"spec.config"},
			check: func(t *testing.T, c *v1alpha1.NameServerCluster) {
				s := c.Spec
				if s.Replicas != nil || s.ImagePullPolicy != "" || s.DNSPolicy != "" || s.Storage != nil ||
					!equality.Semantic.DeepEqual(s.Config, map[string]v1alpha1.ConfigValue{"serverSocketRcvBufSize": "131072"}) {
					t.Errorf("%+v", s)
				}
			}},
	}
	for _, tt := range tests {
		golden := tt.golden
		if golden == "" {
			golden = strings.TrimSuffix(tt.fixture, ".yaml") + ".golden.yaml"
		}
		t.Run(golden, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", tt.fixture))
			if err != nil {
				t.Fatal(err)
			}
			nss, _, err := Decode(bytes.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			ns, err := Select(nss, "")
			if err != nil {
				t.Fatal(err)
			}
			r, err := Convert(ns, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			out, err := r.YAML()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", golden)
			if *update {
				if err := os.WriteFile(path, out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if !bytes.Equal(out, want) {
				t.Errorf("output differs from %s (go test -update rewrites it):\n%s", path, out)
			}

			// The YAML is the cluster, field for field, and nothing else.
			var back v1alpha1.NameServerCluster
			if err := yaml.UnmarshalStrict(out, &back); err != nil {
				t.Fatalf("output does not decode strictly: %v", err)
			}
			if !equality.Semantic.DeepEqual(&back, r.Cluster) {
				t.Errorf("output decodes to\n%+v\nnot\n%+v", back.Spec, r.Cluster.Spec)
			}
			if back.Spec.Image != "" {
				t.Errorf("spec.image %q", back.Spec.Image)
			}
			for _, f := range tt.skipped {
				if !slices.ContainsFunc(r.Skipped, func(s Skipped) bool { return s.Field == f }) {
					t.Errorf("%q is not reported as skipped: %+v", f, r.Skipped)
				}
			}
			for _, n := range tt.notes {
				if _, ok := r.Notes()[n]; !ok {
					t.Errorf("no note on %s: %v", n, r.Notes())
				}
			}
			// Every skipped field is in a comment, and every comment
			// line is a comment, however the values read.
			for _, s := range r.Skipped {
				if !strings.Contains(strings.Join(strings.Fields(strings.ReplaceAll(string(out), "#", "")), " "), s.Field) {
					t.Errorf("skipped %q is not in the output", s.Field)
				}
			}
			if tt.check != nil {
				tt.check(t, r.Cluster)
			}
		})
	}
}

func TestConvertErrors(t *testing.T) {
	ns := func(name string, spec any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rocketmq.apache.org/v1alpha1", "kind": "NameService",
			"metadata": map[string]any{"name": name, "namespace": "mq"}}}
		if spec != nil {
			u.Object["spec"] = spec
		}
		return u
	}
	for _, tt := range []struct {
		name string
		in   *unstructured.Unstructured
		opts Options
		err  string
	}{
		{"spec of the wrong type", ns("a", "big"), Options{}, "NameService mq/a: spec is not an object"},
		{"field of the wrong type", ns("a", map[string]any{"size": "three"}), Options{}, "NameService mq/a has a spec this converter cannot read"},
		{"name too long", ns(strings.Repeat("a", 50), map[string]any{}), Options{}, "longer than 52 characters (pod names and their StatefulSet revision labels must fit in 63) (pick another with --name)"},
		{"name with a dot", ns("name.service", map[string]any{}), Options{}, `NameServerCluster name "name.service-nsc": must start with a lowercase letter`},
		{"a bad --name", ns("a", map[string]any{}), Options{Name: "A"}, `NameServerCluster name "A": must start with a lowercase letter`},
		{"a --name ending in -", ns("a", map[string]any{}), Options{Name: "a-"}, "not at the end"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Convert(tt.in, tt.opts)
			var ie *InputError
			if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err %v, want an InputError with %q", err, tt.err)
			}
		})
	}
	// Field names are case-sensitive, as in the API server.
	r, err := Convert(ns("cased", map[string]any{"Size": int64(3)}), Options{})
	if err != nil || r.Cluster.Spec.Replicas != nil || !slices.ContainsFunc(r.Skipped, func(s Skipped) bool { return s.Field == "Size" }) {
		t.Errorf("Size: %+v %v", r, err)
	}
	// No spec at all converts, with what a NameService would have done reported.
	r, err = Convert(ns("bare", nil), Options{})
	if err != nil || len(r.Skipped) != 2 || r.Skipped[0].Field != "size 0" || r.Skipped[1].Field != "storageMode unset" {
		t.Errorf("%+v %v", r, err)
	}
}

func TestDecode(t *testing.T) {
	for _, tt := range []struct {
		name   string
		in     string
		names  []string
		others []string
		err    string
	}{
		{name: "json", in: `{"apiVersion":"rocketmq.apache.org/v1alpha1","kind":"NameService","metadata":{"name":"a"}}`, names: []string{"a"}},
		{name: "documents, comments and empty ones",
			in:    "# only a comment\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n---\napiVersion: rocketmq.apache.org/v1alpha1\nkind: NameService\nmetadata:\n  name: b\n",
			names: []string{"b"}, others: []string{"ConfigMap c"}},
		{name: "a NameServiceList", in: "apiVersion: rocketmq.apache.org/v1alpha1\nkind: NameServiceList\nitems:\n- apiVersion: rocketmq.apache.org/v1alpha1\n  kind: NameService\n  metadata:\n    name: x1\n- apiVersion: rocketmq.apache.org/v1alpha1\n  kind: NameService\n  metadata:\n    name: y1\n",
			names: []string{"x1", "y1"}},
		{name: "a name that YAML reads as a boolean", in: "apiVersion: rocketmq.apache.org/v1alpha1\nkind: NameService\nmetadata:\n  name: y\n", err: "(or not a string)"},
		{name: "nothing to convert", in: "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: s\n---\nfoo: bar\n", others: []string{"StatefulSet s", "an object without kind"}},
		{name: "another version", in: "apiVersion: rocketmq.apache.org/v1beta1\nkind: NameService\nmetadata:\n  name: a\n", err: "document 1: NameService a is rocketmq.apache.org/v1beta1: only rocketmq.apache.org/v1alpha1 is known"},
		{name: "no name", in: "apiVersion: rocketmq.apache.org/v1alpha1\nkind: NameService\n", err: "document 1: a NameService without metadata.name"},
		{name: "not YAML", in: "a: b\n---\n: : [\n", err: "document 2:"},
		{name: "a list of strings", in: "- a\n- b\n", err: "document 1:"},
		{name: "a List with a bad item", in: "apiVersion: v1\nkind: List\nitems:\n- 3\n", err: "document 1: items[0] is not an object"},
		{name: "a bad apiVersion", in: "apiVersion: a/b/c\nkind: NameService\nmetadata:\n  name: a\n", err: `apiVersion "a/b/c"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			nss, others, err := Decode(strings.NewReader(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, u := range nss {
				names = append(names, u.GetName())
			}
			if !slices.Equal(names, tt.names) || !slices.Equal(others, tt.others) {
				t.Errorf("names %q others %q, want %q %q", names, others, tt.names, tt.others)
			}
		})
	}
	if _, _, err := Decode(bytes.NewReader(make([]byte, maxInput+1))); err == nil || !strings.Contains(err.Error(), "larger than 16 MiB") {
		t.Errorf("large input: %v", err)
	}
}

func TestSelect(t *testing.T) {
	mk := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetName(name)
		return u
	}
	two := []*unstructured.Unstructured{mk("b"), mk("a")}
	if u, err := Select(two, "a"); err != nil || u.GetName() != "a" {
		t.Errorf("by name: %v %v", u, err)
	}
	var nf *NotFoundError
	if _, err := Select(two, "c"); !errors.As(err, &nf) || err.Error() != "no NameService c" {
		t.Errorf("missing: %v", err)
	}
	var amb *AmbiguousError
	if _, err := Select(two, ""); !errors.As(err, &amb) || err.Error() != "2 NameServices (a, b): name one" {
		t.Errorf("two: %v", err)
	}
	if _, err := Select(nil, ""); !errors.As(err, &nf) {
		t.Errorf("none: %v", err)
	}
	if u, err := Select(two[:1], ""); err != nil || u.GetName() != "b" {
		t.Errorf("only one: %v %v", u, err)
	}
}
