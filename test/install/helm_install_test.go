package install

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// TestHelmInstall installs and uninstalls the chart for real, as the README
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

// TestCRDUpgradeCommand runs the README's CRD upgrade command on a CRD that
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
		t.Fatalf("the README's upgrade command: %v", err)
	}
	if err := k8s.Get(ctx, key, crd); err != nil {
		t.Fatal(err)
	}
	upgraded, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if !reflect.DeepEqual(upgraded, current) {
		t.Error("after the upgrade command the CRD's versions are not the chart's")
	}
}
