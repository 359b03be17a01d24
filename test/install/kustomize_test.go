package install

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/internal/version"
)

// kustomize renders a config/ directory with the same kubectl users run.
func kustomize(ctx context.Context, t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	out, err := run(ctx, kubectlBin, "kustomize", filepath.Join(repoRoot, "config", dir))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeAll(out)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestConfigDefault: `kubectl apply -k config/default` installs objects the
// API server accepts, and the same operator as the chart's defaults.
func TestConfigDefault(t *testing.T) {
	ctx := testContext(t)
	objs := kustomize(ctx, t, "default")
	dryRunApply(ctx, t, objs)
	// docs/operator.md's command itself, whose client-side apply also stores each
	// object in an annotation that must stay under the API server's limit.
	if _, err := run(ctx, kubectlBin, "--kubeconfig", adminKubeconfig, "apply", "-k", filepath.Join(repoRoot, "config", "default"), "--dry-run=server"); err != nil {
		t.Error(err)
	}
	wantKinds(t, objs, map[string]int{
		"Namespace": 1, "CustomResourceDefinition": 1, "ServiceAccount": 1, "Role": 1, "RoleBinding": 1,
		"ClusterRole": 3, "ClusterRoleBinding": 1, "Deployment": 1,
	})

	chart := helmTemplate(ctx, t, renderArgs{namespace: "kube-namesrv-system"})
	kd := typed[appsv1.Deployment](t, only(t, objs, "Deployment"))
	cd := typed[appsv1.Deployment](t, only(t, chart, "Deployment"))
	k, c := kd.Spec.Template.Spec.Containers[0], cd.Spec.Template.Spec.Containers[0]
	if k.Image != version.DefaultImage() || c.Image != k.Image {
		t.Errorf("images: config/default %s, chart %s, want %s", k.Image, c.Image, version.DefaultImage())
	}
	// The flags that decide what the operator does, with the manager's own
	// defaults filled in; logging flags may differ.
	defaults := managerDefaults(ctx, t)
	for _, flag := range []string{"leader-elect", "namespaces", "cluster-domain", "namesrv-image", "health-probe-bind-address", "metrics-bind-address",
		"max-concurrent-reconciles", "kube-api-qps", "kube-api-burst"} {
		if kv, cv := effective(k.Args, flag, defaults), effective(c.Args, flag, defaults); kv != cv {
			t.Errorf("--%s: config/default runs the manager with %q, the chart with %q", flag, kv, cv)
		}
	}
	for what, pair := range map[string][2]any{
		"replicas":                   {kd.Spec.Replicas, cd.Spec.Replicas},
		"command":                    {k.Command, c.Command},
		"ports":                      {k.Ports, c.Ports},
		"probes":                     {[]*corev1.Probe{k.LivenessProbe, k.ReadinessProbe}, []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe}},
		"resources":                  {k.Resources, c.Resources},
		"container security context": {k.SecurityContext, c.SecurityContext},
		"pod security context":       {kd.Spec.Template.Spec.SecurityContext, cd.Spec.Template.Spec.SecurityContext},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("%s: config/default %+v, chart %+v", what, pair[0], pair[1])
		}
	}
}

// effective is the value a flag takes: its last occurrence in args, or the
// manager's default. A bare boolean flag means true.
func effective(args []string, flag string, defaults map[string]string) string {
	v := defaults[flag]
	for _, a := range args {
		if a == "--"+flag {
			v = "true"
		} else if val, ok := strings.CutPrefix(a, "--"+flag+"="); ok {
			v = val
		}
	}
	return v
}

// TestSamples: config/samples holds NameServerClusters and two brokers that
// read the broker list the first one publishes, one by envFrom and one
// through the address server; all are valid, and they name the right
// ConfigMap and keys.
func TestSamples(t *testing.T) {
	ctx := testContext(t)
	objs := kustomize(ctx, t, "samples")
	// Brokers of the apache/rocketmq image are not this project's to harden,
	// so the namespace does not warn about Pod Security.
	const ns = "samples"
	createNamespace(ctx, t, ns, nil)
	for _, o := range objs {
		o.SetNamespace(ns)
	}
	dryRunApply(ctx, t, objs)

	clusters := objectsOf(objs, "NameServerCluster")
	if len(clusters) != 2 {
		t.Fatalf("want two NameServerClusters (the example and the order topics), got %d", len(clusters))
	}
	nsc := typed[v1alpha1.NameServerCluster](t, clusters[0])
	if nsc.Name != "example" {
		t.Fatalf("the brokers' cluster is %s, want example", nsc.Name)
	}
	if orders := typed[v1alpha1.NameServerCluster](t, clusters[1]); len(orders.Spec.KVConfig) == 0 || orders.Spec.Config["orderMessageEnable"] != "true" {
		t.Errorf("the order-topic sample declares no kvConfig or leaves orderMessageEnable off: %+v", orders.Spec)
	}
	addr := render.BrokerAddressConfigMapName(nsc)
	var envFrom, addressServer bool
	for _, s := range objectsOf(objs, "StatefulSet") {
		for _, c := range typed[appsv1.StatefulSet](t, s).Spec.Template.Spec.Containers {
			for _, ef := range c.EnvFrom {
				if ef.ConfigMapRef != nil && ef.ConfigMapRef.Name == addr {
					envFrom = true
				}
			}
			for _, e := range c.Env {
				if r := e.ValueFrom; r != nil && r.ConfigMapKeyRef != nil && r.ConfigMapKeyRef.Name == addr &&
					r.ConfigMapKeyRef.Key == v1alpha1.AddressServerDomainKey {
					addressServer = true
				}
			}
		}
	}
	if !envFrom {
		t.Errorf("no sample broker imports ConfigMap %s with envFrom", addr)
	}
	if !addressServer {
		t.Errorf("no sample broker reads key %s of ConfigMap %s", v1alpha1.AddressServerDomainKey, addr)
	}
	var conf string
	for _, cm := range objectsOf(objs, "ConfigMap") {
		c, _, _ := unstructured.NestedString(cm.Object, "data", "broker.conf")
		conf += c
	}
	for _, line := range []string{"fetchNamesrvAddrByAddressServer=true", "rmqAddressServerSubGroup=" + v1alpha1.BrokerAddressServerSubGroup} {
		if !strings.Contains(conf, line) {
			t.Errorf("the address-server broker's broker.conf lacks %q", line)
		}
	}
}
