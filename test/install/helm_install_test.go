package install

import (
	"context"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// TestHelmInstall installs and uninstalls the chart for real, as docs/operator.md
// says, against a cluster that serves the monitoring API: helm finds it by
// discovery, and NOTES.txt tells how to wire brokers.
func TestHelmInstall(t *testing.T) {
	ctx := testContext(t)
	const rel, ns = "helm-real", "helm-install"
	out, err := run(ctx, helmBin, "install", rel, chartDir, "--kubeconfig", adminKubeconfig,
		"--namespace", ns, "--create-namespace",
		"--set", "nameserver.enabled=true", "--set", "metrics.serviceMonitor.enabled=true",
		"--set", "metrics.prometheusRule.enabled=true", "--set", "metrics.grafanaDashboard.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	notes := string(out)
	for _, want := range []string{
		"NameServerCluster " + ns + "/" + rel + " is created",
		rel + "-namesrv-addr            for clients",
		rel + "-namesrv-addr-brokers    for brokers",
		"name: " + rel + "-namesrv-addr-brokers",
		"fetchNamesrvAddrByAddressServer=true",
		"rmqAddressServerSubGroup=" + v1alpha1.BrokerAddressServerSubGroup,
		v1alpha1.AddressServerDomainKey,
		v1alpha1.ClientAddressServerDomainKey,
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("the install notes do not say %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "WARNING") {
		t.Errorf("the cluster serves the monitoring API, yet the notes warn:\n%s", notes)
	}

	d := &appsv1.Deployment{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: rel + "-kube-namesrv"}, d); err != nil {
		t.Errorf("the manager Deployment: %v", err)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: rel}, &v1alpha1.NameServerCluster{}); err != nil {
		t.Errorf("the NameServerCluster: %v", err)
	}
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
		m := &unstructured.Unstructured{}
		m.SetGroupVersionKind(schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: kind})
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: rel + "-kube-namesrv"}, m); err != nil {
			t.Errorf("the %s, which discovery should have enabled: %v", kind, err)
		}
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: rel + "-kube-namesrv-dashboard"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the dashboard ConfigMap: %v", err)
	}

	if _, err := run(ctx, helmBin, "uninstall", rel, "--kubeconfig", adminKubeconfig, "--namespace", ns, "--wait"); err != nil {
		t.Fatal(err)
	}
	for _, o := range []client.Object{d, &v1alpha1.NameServerCluster{}} {
		key := client.ObjectKey{Namespace: ns, Name: rel + "-kube-namesrv"}
		if _, ok := o.(*v1alpha1.NameServerCluster); ok {
			key.Name = rel
		}
		if err := k8s.Get(ctx, key, o); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s after helm uninstall: %v", o, key, err)
		}
	}
	// Helm never deletes what it installed from crds/: the clusters of
	// other releases would go with it.
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	if err := k8s.Get(ctx, client.ObjectKey{Name: "nameserverclusters." + v1alpha1.GroupVersion.Group}, crd); err != nil {
		t.Errorf("the CRD after helm uninstall: %v", err)
	}
}

// TestCRDUpgradeCommand runs docs/operator.md's CRD upgrade command on a CRD that
// an older chart installed: helm created it (field manager "helm") and
// `helm upgrade` never touches it.
func TestCRDUpgradeCommand(t *testing.T) {
	ctx := testContext(t)
	key := client.ObjectKey{Name: "nameserverclusters." + v1alpha1.GroupVersion.Group}
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	if err := k8s.Get(ctx, key, crd); err != nil {
		t.Fatal(err)
	}
	current, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")

	// The older CRD: one printer column fewer, as helm would have written it.
	old := crd.DeepCopy()
	versions, _, _ := unstructured.NestedSlice(old.Object, "spec", "versions")
	v := versions[0].(map[string]any)
	columns := v["additionalPrinterColumns"].([]any)
	v["additionalPrinterColumns"] = columns[:len(columns)-1]
	if err := unstructured.SetNestedSlice(old.Object, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Update(ctx, old, client.FieldOwner("helm")); err != nil {
		t.Fatal(err)
	}

	crds := chartDir + "/crds/"
	if _, err := run(ctx, kubectlBin, "--kubeconfig", adminKubeconfig, "apply", "--server-side", "-f", crds); err == nil ||
		!strings.Contains(err.Error(), "conflict") {
		t.Errorf("without --force-conflicts, kubectl should report a conflict with helm's fields, got %v", err)
	}
	if _, err := run(ctx, kubectlBin, "--kubeconfig", adminKubeconfig, "apply", "--server-side", "--force-conflicts", "-f", crds); err != nil {
		t.Fatalf("docs/operator.md's upgrade command: %v", err)
	}
	if err := k8s.Get(ctx, key, crd); err != nil {
		t.Fatal(err)
	}
	upgraded, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if !reflect.DeepEqual(upgraded, current) {
		t.Error("after the upgrade command the CRD's versions are not the chart's")
	}
}

// TestHelmUpgradeKeepsPause is "pause before upgrading": a cluster paused
// and scaled with kubectl stays paused, scaled and under its KV policy
// through helm upgrade, also one that rewrites the whole object, when the
// values leave those fields unset: the chart then renders the live values
// back. Setting a value in the values still wins.
func TestHelmUpgradeKeepsPause(t *testing.T) {
	ctx := testContext(t)
	const rel, ns = "helm-pause", "helm-pause"
	helm := func(args ...string) {
		t.Helper()
		base := []string{"--kubeconfig", adminKubeconfig, "--namespace", ns, "--set", "nameserver.enabled=true"}
		if _, err := run(ctx, helmBin, append(args, base...)...); err != nil {
			t.Fatal(err)
		}
	}
	spec := func() v1alpha1.NameServerClusterSpec {
		t.Helper()
		c := &v1alpha1.NameServerCluster{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: rel}, c); err != nil {
			t.Fatal(err)
		}
		return c.Spec
	}
	patch := func(body string) {
		t.Helper()
		if _, err := run(ctx, kubectlBin, "--kubeconfig", adminKubeconfig, "-n", ns, "patch", "nameservercluster", rel,
			"--type", "merge", "-p", body); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_, _ = run(context.Background(), helmBin, "uninstall", rel, "--kubeconfig", adminKubeconfig, "--namespace", ns, "--wait")
	})

	// An earlier release that rendered all three, as older charts did.
	helm("install", rel, chartDir, "--create-namespace",
		"--set", "nameserver.replicaCount=3", "--set", "nameserver.paused=false", "--set", "nameserver.kvConfigPolicy=Owned")
	patch(`{"spec":{"paused":true,"replicas":5,"kvConfigPolicy":"Additive"}}`)

	// An upgrade that changes something else and leaves them unset.
	helm("upgrade", rel, chartDir, "--set", "nameserver.publish.drainSeconds=300")
	s := spec()
	if !s.Paused || ptr.Deref(s.Replicas, 0) != 5 || s.KVConfigPolicy != v1alpha1.KVConfigAdditive || ptr.Deref(s.Publish.DrainSeconds, 0) != 300 {
		t.Errorf("after helm upgrade: paused %v, replicas %v, kvConfigPolicy %q, drainSeconds %v; want true, 5, Additive, 300",
			s.Paused, ptr.Deref(s.Replicas, 0), s.KVConfigPolicy, ptr.Deref(s.Publish.DrainSeconds, 0))
	}

	// An upgrade that writes the whole object, as --force does (and as
	// tools that apply the rendered chart do): what the chart renders is
	// all that is left.
	helm("upgrade", rel, chartDir, "--force", "--set", "nameserver.publish.drainSeconds=310")
	if s := spec(); !s.Paused || ptr.Deref(s.Replicas, 0) != 5 || s.KVConfigPolicy != v1alpha1.KVConfigAdditive {
		t.Errorf("after helm upgrade --force: paused %v, replicas %v, kvConfigPolicy %q; want true, 5, Additive",
			s.Paused, ptr.Deref(s.Replicas, 0), s.KVConfigPolicy)
	}

	// A value set explicitly is applied.
	helm("upgrade", rel, chartDir, "--set", "nameserver.paused=false")
	if s := spec(); s.Paused || ptr.Deref(s.Replicas, 0) != 5 {
		t.Errorf("after helm upgrade --set nameserver.paused=false: paused %v, replicas %v; want false, 5", s.Paused, ptr.Deref(s.Replicas, 0))
	}
}
