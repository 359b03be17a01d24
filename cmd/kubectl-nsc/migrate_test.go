package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/internal/migrate"
	"github.com/kube-namesrv/kube-namesrv/internal/nsadmin/nsc"
)

// fixtures are the converter's test manifests, restating the examples of
// apache/rocketmq-operator.
var fixtures = filepath.Join("..", "..", "internal", "migrate", "testdata")

// nameServiceCRD serves NameServices the way apache/rocketmq-operator's CRD
// does for what migrate reads: a namespaced v1alpha1 kind with a status
// subresource. The schema keeps every field, so any NameService fixture can
// be stored.
func nameServiceCRD() *apiextensionsv1.CustomResourceDefinition {
	open := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	r := migrate.NameServiceResource
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: r.Resource + "." + r.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: r.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: r.Resource, Singular: "nameservice",
				Kind: migrate.NameServiceKind.Kind, ListKind: migrate.NameServiceKind.Kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: r.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:       "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": open, "status": open},
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
}

// TestMigrateAgainstAnAPIServer converts a stored NameService, checks that
// nothing is written without --apply, applies it, and has the API server
// validate the conversion of every fixture.
func TestMigrateAgainstAnAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(restConfig)
	// The fixtures' namespaces (another test may have made mq).
	for _, ns := range []string{"rocketmq", "edge", "mq"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	dyn := dynamic.NewForConfigOrDie(restConfig)
	in, err := os.ReadFile(filepath.Join(fixtures, "production.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	nss, _, err := migrate.Decode(bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	src := nss[0]
	status := src.Object["status"]
	delete(src.Object, "status")
	nsRes := dyn.Resource(migrate.NameServiceResource).Namespace("rocketmq")
	stored, err := nsRes.Create(ctx, src, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := nsRes.Delete(context.Background(), src.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	})
	stored.Object["status"] = status
	if stored, err = nsRes.UpdateStatus(ctx, stored, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	kc, err := client.New(restConfig, client.Options{Scheme: scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	clusters := func() []string {
		t.Helper()
		var l v1alpha1.NameServerClusterList
		if err := kc.List(ctx, &l); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range l.Items {
			names = append(names, c.Namespace+"/"+c.Name)
		}
		return names
	}
	env := []string{"KUBECONFIG=" + admin}
	// Other tests' clusters.
	before := clusters()

	// Read from the cluster, the output is the file's.
	golden, err := os.ReadFile(filepath.Join(fixtures, "production.golden.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r := plugin(t, 0, env, "migrate", "namesrv", "-n", "rocketmq")
	if r.stdout != string(golden) {
		t.Errorf("stdout:\n%s\nwant production.golden.yaml:\n%s", r.stdout, golden)
	}
	// Without --apply nothing is written: no cluster, the NameService
	// untouched.
	plugin(t, 0, env, "migrate", "-n", "rocketmq")
	if got := clusters(); !slices.Equal(got, before) {
		t.Fatalf("NameServerClusters after migrate without --apply: %q, before %q", got, before)
	}
	after, err := nsRes.Get(ctx, "namesrv", metav1.GetOptions{})
	if err != nil || after.GetResourceVersion() != stored.GetResourceVersion() {
		t.Errorf("NameService changed: resourceVersion %s, was %s (%v)", after.GetResourceVersion(), stored.GetResourceVersion(), err)
	}
	r = plugin(t, 0, env, "migrate", "namesrv", "-n", "rocketmq", "--apply", "--dry-run")
	if !strings.Contains(r.stderr, "NameServerCluster rocketmq/namesrv-nsc created (dry run: the API server validated it and stored nothing)") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	if got := clusters(); !slices.Equal(got, before) {
		t.Fatalf("NameServerClusters after --apply --dry-run: %q, before %q", got, before)
	}

	// --apply creates it, with the plugin's field manager.
	t.Cleanup(func() {
		c := &v1alpha1.NameServerCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "rocketmq", Name: "namesrv-nsc"}}
		if err := kc.Delete(context.Background(), c); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	})
	r = plugin(t, 0, env, "migrate", "namesrv", "-n", "rocketmq", "--apply")
	if r.stdout != string(golden) || !strings.Contains(r.stderr, "NameServerCluster rocketmq/namesrv-nsc created (server-side apply, field manager "+nsc.MigrateFieldManager+")") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	var c v1alpha1.NameServerCluster
	if err := kc.Get(ctx, client.ObjectKey{Namespace: "rocketmq", Name: "namesrv-nsc"}, &c); err != nil {
		t.Fatal(err)
	}
	if *c.Spec.Replicas != 3 || c.Spec.Image != "" || c.Spec.Config["frameMaxLength"] != "33554432" ||
		*c.Spec.Storage.VolumeClaimTemplate.Spec.StorageClassName != "fast-ssd" ||
		c.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels["app.kubernetes.io/instance"] != "namesrv-nsc" {
		t.Errorf("stored spec %+v", c.Spec)
	}
	if !slices.ContainsFunc(c.ManagedFields, func(m metav1.ManagedFieldsEntry) bool {
		return m.Manager == nsc.MigrateFieldManager && m.Operation == metav1.ManagedFieldsOperationApply
	}) {
		t.Errorf("managed fields %+v", c.ManagedFields)
	}
	r = plugin(t, 0, env, "migrate", "namesrv", "-n", "rocketmq", "--apply")
	if !strings.Contains(r.stderr, "NameServerCluster rocketmq/namesrv-nsc unchanged") {
		t.Errorf("second apply: %s", r.stderr)
	}
	// Someone scaled it since: migrate does not take the field back.
	c.Spec.Replicas = ptr.To[int32](5)
	c.ManagedFields = nil
	if err := kc.Update(ctx, &c, client.FieldOwner("someone")); err != nil {
		t.Fatal(err)
	}
	r = plugin(t, 3, env, "migrate", "namesrv", "-n", "rocketmq", "--apply")
	if !strings.Contains(r.stderr, "another field manager owns fields this would change") {
		t.Errorf("conflict: %s", r.stderr)
	}
	if err := kc.Get(ctx, client.ObjectKeyFromObject(&c), &c); err != nil || *c.Spec.Replicas != 5 {
		t.Errorf("replicas %d after a refused apply (%v)", *c.Spec.Replicas, err)
	}

	// The API server accepts the conversion of every fixture.
	files, err := filepath.Glob(filepath.Join(fixtures, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.yaml") {
			continue
		}
		n++
		// As new clusters: namesrv-nsc exists now.
		r := plugin(t, 0, env, "migrate", "-f", f, "--apply", "--dry-run", "--name", "dry-"+strconv.Itoa(n))
		if !strings.Contains(r.stderr, "dry run") {
			t.Errorf("%s: %s", f, r.stderr)
		}
	}
	if n < 6 {
		t.Errorf("only %d fixtures", n)
	}
	if got := clusters(); len(got) != len(before)+1 {
		t.Errorf("NameServerClusters after the dry runs: %q, before the apply %q", got, before)
	}

	// A user who may not read NameServices.
	r = plugin(t, 3, []string{"KUBECONFIG=" + nobody}, "migrate", "namesrv", "-n", "rocketmq")
	if !strings.Contains(r.stderr, "forbidden: kubectl nsc migrate needs get on nameservices.rocketmq.apache.org") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	// A file needs no cluster at all without --apply.
	r = plugin(t, 0, []string{"KUBECONFIG=" + filepath.Join(t.TempDir(), "missing")}, "migrate", "-f", filepath.Join(fixtures, "example-nameservice.yaml"))
	if !strings.Contains(r.stdout, "kind: NameServerCluster") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
}

// TestHostNetworkAndDNSPolicyValidation checks the API rules of the two
// fields migrate carries over from a NameService.
func TestHostNetworkAndDNSPolicyValidation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kc, err := client.New(restConfig, client.Options{Scheme: scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		hostNetwork bool
		dnsPolicy   corev1.DNSPolicy
		err         string
	}{
		{hostNetwork: true},
		{hostNetwork: true, dnsPolicy: corev1.DNSClusterFirstWithHostNet},
		{hostNetwork: true, dnsPolicy: corev1.DNSDefault},
		{dnsPolicy: corev1.DNSClusterFirst},
		{hostNetwork: true, dnsPolicy: corev1.DNSClusterFirst,
			err: "dnsPolicy ClusterFirst with hostNetwork resolves names with the node's DNS, not the cluster's: use ClusterFirstWithHostNet"},
		{dnsPolicy: corev1.DNSNone, err: `spec.dnsPolicy: Unsupported value: "None"`},
	} {
		c := &v1alpha1.NameServerCluster{ObjectMeta: metav1.ObjectMeta{Name: "net", Namespace: "default"},
			Spec: v1alpha1.NameServerClusterSpec{HostNetwork: tt.hostNetwork, DNSPolicy: tt.dnsPolicy}}
		err := kc.Create(ctx, c, client.DryRunAll)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("hostNetwork %v dnsPolicy %q: %v, want %q", tt.hostNetwork, tt.dnsPolicy, err, tt.err)
		}
	}
	// The conversion never produces a refused pair: the unstructured
	// output of a host-network NameService with ClusterFirst leaves
	// dnsPolicy out.
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rocketmq.apache.org/v1alpha1", "kind": "NameService",
		"metadata": map[string]any{"name": "hn", "namespace": "default"},
		"spec":     map[string]any{"size": int64(2), "hostNetwork": true, "dnsPolicy": "ClusterFirst"}}}
	res, err := migrate.Convert(u, migrate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := kc.Create(ctx, res.Cluster, client.DryRunAll); err != nil {
		t.Errorf("converted host-network cluster refused: %v", err)
	}
}
