package install

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/internal/version"
)

// release is the Helm release name of every render.
const release = "kube-namesrv"

// monitoringAPI is what --api-versions tells helm template when the
// cluster serves the Prometheus Operator's kinds; `helm install` finds the
// same strings through discovery.
var monitoringAPI = []string{"monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PodMonitor", "monitoring.coreos.com/v1/PrometheusRule"}

// renderArgs describe one helm run.
type renderArgs struct {
	namespace string
	// values is a file in the chart's ci/ directory; empty means defaults.
	values      string
	apiVersions []string
	// set are --set-json arguments (key=json).
	set []string
}

func (r renderArgs) helmArgs(cmd string) []string {
	args := []string{cmd}
	if cmd == "template" {
		args = append(args, release)
	}
	args = append(args, chartDir, "--kube-version", kubeVersion)
	if cmd == "template" {
		args = append(args, "--namespace", r.namespace, "--include-crds")
		for _, a := range r.apiVersions {
			args = append(args, "--api-versions", a)
		}
	}
	if cmd == "lint" {
		args = append(args, "--strict")
	}
	if r.values != "" {
		args = append(args, "--values", filepath.Join(chartDir, "ci", r.values))
	}
	for _, s := range r.set {
		args = append(args, "--set-json", s)
	}
	return args
}

// helmTemplate renders the chart and decodes what it prints.
func helmTemplate(ctx context.Context, t *testing.T, r renderArgs) []*unstructured.Unstructured {
	t.Helper()
	out, err := run(ctx, helmBin, r.helmArgs("template")...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeAll(out)
	if err != nil {
		t.Fatalf("helm template printed what is not YAML: %v", err)
	}
	return objs
}

// chartCase is one entry of the values matrix.
type chartCase struct {
	name string
	renderArgs
	check func(t *testing.T, objs []*unstructured.Unstructured)
}

// TestChart renders the chart with its defaults and with each values file
// of the matrix, lints it, applies every object as a server-side dry run
// and checks what each case is about.
func TestChart(t *testing.T) {
	cases := []chartCase{
		{"defaults", renderArgs{namespace: "kube-namesrv-system"}, checkDefaults},
		{"namespaced", renderArgs{namespace: "ns-operator", values: "namespaced-values.yaml", apiVersions: monitoringAPI}, checkNamespaced},
		{"every value set", renderArgs{namespace: "rocketmq", values: "nameserver-values.yaml"}, checkEveryValue},
		{"monitoring API served", renderArgs{namespace: "monitoring-on", values: "monitoring-values.yaml", apiVersions: monitoringAPI}, checkMonitors},
		{"monitoring API absent", renderArgs{namespace: "monitoring-off", values: "monitoring-values.yaml"}, checkNoMonitors},
		{"own service account and RBAC", renderArgs{namespace: "byo-rbac", values: "minimal-values.yaml"}, checkMinimal},
	}

	t.Run("every ci values file is a case", func(t *testing.T) {
		files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no values files in %s/ci: %v", chartDir, err)
		}
		for _, f := range files {
			if !slices.ContainsFunc(cases, func(c chartCase) bool { return c.values == filepath.Base(f) }) {
				t.Errorf("%s is not rendered by any case of TestChart", f)
			}
		}
	})

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := testContext(t)
			if _, err := run(ctx, helmBin, c.helmArgs("lint")...); err != nil {
				t.Errorf("helm lint: %v", err)
			}
			objs := helmTemplate(ctx, t, c.renderArgs)
			checkCommon(ctx, t, objs)
			dryRunApply(ctx, t, objs)
			c.check(t, objs)
		})
	}
}

// checkCommon holds for every values case.
func checkCommon(ctx context.Context, t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		namespaced, err := k8s.IsObjectNamespaced(o)
		if err != nil {
			t.Errorf("%s: %v", describe(o), err)
			continue
		}
		// `helm template | kubectl apply` must not depend on the current context.
		if namespaced && o.GetNamespace() == "" {
			t.Errorf("%s has no namespace", describe(o))
		}
	}

	crd := only(t, objs, "CustomResourceDefinition")
	want, err := os.ReadFile(filepath.Join(chartDir, "crds", "rocketmq.kube-namesrv.io_nameserverclusters.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	wantObjs, err := decodeAll(want)
	if err != nil || len(wantObjs) != 1 || !reflect.DeepEqual(wantObjs[0].Object, crd.Object) {
		t.Errorf("the rendered CRD is not the chart's crds/ file (err %v)", err)
	}

	d := typed[appsv1.Deployment](t, only(t, objs, "Deployment"))
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	ctr := pod.Containers[0]
	if !reflect.DeepEqual(ctr.Command, []string{"/manager"}) {
		t.Errorf("command %v, want the image's /manager", ctr.Command)
	}
	flags := managerFlags(ctx, t)
	for _, a := range ctr.Args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "--") || !flags[name] {
			t.Errorf("argument %q is not a flag of the image's manager", a)
		}
	}
	if ctr.LivenessProbe == nil || ctr.LivenessProbe.HTTPGet == nil || ctr.LivenessProbe.HTTPGet.Path != "/healthz" ||
		ctr.ReadinessProbe == nil || ctr.ReadinessProbe.HTTPGet == nil || ctr.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probes: liveness %+v, readiness %+v", ctr.LivenessProbe, ctr.ReadinessProbe)
	}
	if probe := arg(ctr.Args, "health-probe-bind-address"); probe != ":"+port(t, ctr, "health") {
		t.Errorf("--health-probe-bind-address=%s, but the health port is %s", probe, port(t, ctr, "health"))
	}
	if _, ok := ctr.Resources.Requests[corev1.ResourceMemory]; !ok {
		t.Errorf("no memory request: %+v", ctr.Resources)
	}
	if pod.SecurityContext == nil || !ptr.Deref(pod.SecurityContext.RunAsNonRoot, false) {
		t.Errorf("the pod may run as root: %+v", pod.SecurityContext)
	}
	if sc := ctr.SecurityContext; sc == nil || ptr.Deref(sc.AllowPrivilegeEscalation, true) ||
		!ptr.Deref(sc.ReadOnlyRootFilesystem, false) || sc.Capabilities == nil ||
		!reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container security context is not hardened: %+v", sc)
	}
}

func checkDefaults(t *testing.T, objs []*unstructured.Unstructured) {
	wantKinds(t, objs, map[string]int{
		"CustomResourceDefinition": 1, "ServiceAccount": 1, "ClusterRole": 3, "ClusterRoleBinding": 1,
		"Role": 1, "RoleBinding": 1, "Service": 1, "Deployment": 1,
	})
	d := typed[appsv1.Deployment](t, only(t, objs, "Deployment"))
	ctr := d.Spec.Template.Spec.Containers[0]
	// One release, one image: the manager's image is this build's, and it
	// deploys the same image as the NameServer.
	if ctr.Image != version.DefaultImage() {
		t.Errorf("image %s, want %s", ctr.Image, version.DefaultImage())
	}
	if got := arg(ctr.Args, "namesrv-image"); got != version.DefaultImage() {
		t.Errorf("--namesrv-image=%s, want the manager's own image %s", got, version.DefaultImage())
	}
	if ptr.Deref(d.Spec.Replicas, 0) != 2 || arg(ctr.Args, "leader-elect") != "true" {
		t.Errorf("want 2 replicas with leader election, got %d and %q", ptr.Deref(d.Spec.Replicas, 0), arg(ctr.Args, "leader-elect"))
	}
	if has(ctr.Args, "namespaces") {
		t.Errorf("the default manages all namespaces, got %v", ctr.Args)
	}
	if got := arg(ctr.Args, "metrics-bind-address"); got != ":"+port(t, ctr, "metrics") {
		t.Errorf("--metrics-bind-address=%s", got)
	}
	svc := typed[corev1.Service](t, only(t, objs, "Service"))
	if !selects(svc.Spec.Selector, d.Spec.Template.Labels) || svc.Spec.Ports[0].TargetPort.StrVal != "metrics" {
		t.Errorf("the metrics Service does not reach the manager's metrics port: %+v", svc.Spec)
	}
	sa := only(t, objs, "ServiceAccount")
	if d.Spec.Template.Spec.ServiceAccountName != sa.GetName() {
		t.Errorf("the pods run as %q, the chart creates %q", d.Spec.Template.Spec.ServiceAccountName, sa.GetName())
	}
	for _, b := range objectsOf(objs, "ClusterRoleBinding") {
		binding := typed[rbacv1.ClusterRoleBinding](t, b)
		if len(binding.Subjects) != 1 || binding.Subjects[0].Name != sa.GetName() || binding.Subjects[0].Namespace != "kube-namesrv-system" {
			t.Errorf("%s binds %+v", b.GetName(), binding.Subjects)
		}
	}
}

func checkNamespaced(t *testing.T, objs []*unstructured.Unstructured) {
	for _, o := range objs {
		if namespaced, _ := k8s.IsObjectNamespaced(o); !namespaced && o.GetKind() != "CustomResourceDefinition" {
			t.Errorf("namespaced mode renders the cluster-scoped %s", describe(o))
		}
	}
	ctr := typed[appsv1.Deployment](t, only(t, objs, "Deployment")).Spec.Template.Spec.Containers[0]
	if got := arg(ctr.Args, "namespaces"); got != "team-a,team-b" {
		t.Errorf("--namespaces=%q, want team-a,team-b", got)
	}
	roles := map[string][]string{}
	for _, r := range objectsOf(objs, "Role") {
		roles[r.GetNamespace()] = append(roles[r.GetNamespace()], r.GetName())
	}
	for _, b := range objectsOf(objs, "RoleBinding") {
		binding := typed[rbacv1.RoleBinding](t, b)
		if !slices.Contains(roles[b.GetNamespace()], binding.RoleRef.Name) || binding.Subjects[0].Namespace != "ns-operator" {
			t.Errorf("RoleBinding %s/%s: role %s, subjects %+v", b.GetNamespace(), b.GetName(), binding.RoleRef.Name, binding.Subjects)
		}
	}
	want := map[string][]string{
		"team-a":      {"kube-namesrv-manager"},
		"team-b":      {"kube-namesrv-manager"},
		"ns-operator": {"kube-namesrv-leader-election"},
	}
	if !reflect.DeepEqual(roles, want) {
		t.Errorf("Roles by namespace %v, want %v", roles, want)
	}
	nsc := typed[v1alpha1.NameServerCluster](t, only(t, objs, "NameServerCluster"))
	if nsc.Namespace != "team-a" || nsc.Name != "orders" || len(nsc.Spec.Publish.Targets) != 1 || nsc.Spec.Publish.Targets[0].Namespace != "team-b" {
		t.Errorf("NameServerCluster %s/%s publishing to %+v", nsc.Namespace, nsc.Name, nsc.Spec.Publish.Targets)
	}
	if len(objectsOf(objs, "PrometheusRule"))+len(objectsOf(objs, "ConfigMap")) != 0 {
		t.Error("alert rules or a dashboard are rendered although they are off")
	}
	pm := only(t, objs, "PodMonitor")
	names, _, _ := unstructured.NestedStringSlice(pm.Object, "spec", "namespaceSelector", "matchNames")
	if !reflect.DeepEqual(names, []string{"team-a", "team-b"}) {
		t.Errorf("the PodMonitor looks in %v, want the watched namespaces", names)
	}
}

// checkEveryValue follows each non-default value to where it must land.
func checkEveryValue(t *testing.T, objs []*unstructured.Unstructured) {
	values := readValues(t, "nameserver-values.yaml")
	d := typed[appsv1.Deployment](t, only(t, objs, "Deployment"))
	pod := d.Spec.Template.Spec
	ctr := pod.Containers[0]
	if d.Name != "rocketmq-operator" || ptr.Deref(d.Spec.Replicas, 0) != 3 {
		t.Errorf("Deployment %s with %d replicas", d.Name, ptr.Deref(d.Spec.Replicas, 0))
	}
	if ctr.Image != "myorg/kube-namesrv:v0.1.0-patch1" || ctr.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("image %s (%s)", ctr.Image, ctr.ImagePullPolicy)
	}
	for flag, want := range map[string]string{
		"cluster-domain": "corp.internal", "namesrv-image": "myorg/namesrv:v0.1.0-patch1", "zap-log-level": "debug",
		"zap-encoder": "console", "health-probe-bind-address": ":9440", "metrics-bind-address": ":9090",
		"max-concurrent-reconciles": "16", "kube-api-qps": "50.5", "kube-api-burst": "75",
	} {
		if got := arg(ctr.Args, flag); got != want {
			t.Errorf("--%s=%q, want %q", flag, got, want)
		}
	}
	if port(t, ctr, "health") != "9440" || port(t, ctr, "metrics") != "9090" {
		t.Errorf("container ports %+v", ctr.Ports)
	}
	if pod.ServiceAccountName != "namesrv-operator" || only(t, objs, "ServiceAccount").GetName() != "namesrv-operator" {
		t.Errorf("service account %s", pod.ServiceAccountName)
	}
	if d.Spec.Template.Labels["team"] != "messaging" || d.Spec.Template.Annotations["example.com/scrape"] != "false" {
		t.Errorf("pod labels %v, annotations %v", d.Spec.Template.Labels, d.Spec.Template.Annotations)
	}
	sameAs(t, "resources", ctr.Resources, valueAs[corev1.ResourceRequirements](t, values, "resources"))
	sameAs(t, "nodeSelector", pod.NodeSelector, valueAs[map[string]string](t, values, "nodeSelector"))
	sameAs(t, "tolerations", pod.Tolerations, valueAs[[]corev1.Toleration](t, values, "tolerations"))
	sameAs(t, "affinity", pod.Affinity, valueAs[*corev1.Affinity](t, values, "affinity"))
	sameAs(t, "topologySpreadConstraints", pod.TopologySpreadConstraints, valueAs[[]corev1.TopologySpreadConstraint](t, values, "topologySpreadConstraints"))
	sameAs(t, "imagePullSecrets", pod.ImagePullSecrets, valueAs[[]corev1.LocalObjectReference](t, values, "imagePullSecrets"))

	nsc := typed[v1alpha1.NameServerCluster](t, only(t, objs, "NameServerCluster"))
	s := nsc.Spec
	if nsc.Name != "rocketmq-ns" || nsc.Namespace != "rocketmq" || ptr.Deref(s.Replicas, 0) != 5 ||
		s.Image != "myorg/namesrv:v0.1.0-patch2" || s.ImagePullPolicy != corev1.PullIfNotPresent || s.PriorityClassName != "rocketmq-critical" {
		t.Errorf("NameServerCluster %s/%s: %+v", nsc.Namespace, nsc.Name, s)
	}
	// Java properties are text; Helm reads YAML numbers as floats, which
	// must not turn into 1.048576e+06.
	sameAs(t, "config", s.Config, map[string]v1alpha1.ConfigValue{
		"scanNotActiveBrokerInterval": "5000", "orderMessageEnable": "true", "clusterTest": "false", "serverSocketRcvBufSize": "1048576",
	})
	sameAs(t, "nameserver.resources", s.Resources, valueAs[corev1.ResourceRequirements](t, values, "nameserver", "resources"))
	sameAs(t, "nameserver.nodeSelector", s.NodeSelector, valueAs[map[string]string](t, values, "nameserver", "nodeSelector"))
	sameAs(t, "nameserver.tolerations", s.Tolerations, valueAs[[]corev1.Toleration](t, values, "nameserver", "tolerations"))
	sameAs(t, "nameserver.affinity", s.Affinity, valueAs[*corev1.Affinity](t, values, "nameserver", "affinity"))
	sameAs(t, "nameserver.topologySpreadConstraints", s.TopologySpreadConstraints,
		valueAs[[]corev1.TopologySpreadConstraint](t, values, "nameserver", "topologySpreadConstraints"))
	sameAs(t, "nameserver.imagePullSecrets", s.ImagePullSecrets, valueAs[[]corev1.LocalObjectReference](t, values, "nameserver", "imagePullSecrets"))
	sameAs(t, "nameserver.podLabels", s.PodLabels, valueAs[map[string]string](t, values, "nameserver", "podLabels"))
	sameAs(t, "nameserver.podAnnotations", s.PodAnnotations, valueAs[map[string]string](t, values, "nameserver", "podAnnotations"))
	sameAs(t, "nameserver.podSecurityContext", s.PodSecurityContext, valueAs[*corev1.PodSecurityContext](t, values, "nameserver", "podSecurityContext"))
	sameAs(t, "nameserver.securityContext", s.ContainerSecurityContext, valueAs[*corev1.SecurityContext](t, values, "nameserver", "securityContext"))
	sameAs(t, "nameserver.tls", s.TLS, valueAs[*v1alpha1.TLSSpec](t, values, "nameserver", "tls"))
	checkNetworkPolicies(t, objs, d)
	sameAs(t, "nameserver.authorization", s.Authorization, valueAs[*v1alpha1.AuthorizationSpec](t, values, "nameserver", "authorization"))
	sameAs(t, "nameserver.externalAccess", s.ExternalAccess, valueAs[*v1alpha1.ExternalAccessSpec](t, values, "nameserver", "externalAccess"))
	sameAs(t, "nameserver.publish.targets", s.Publish.Targets, valueAs[[]v1alpha1.PublishTarget](t, values, "nameserver", "publish", "targets"))
	if s.Storage == nil || s.Storage.VolumeClaimTemplate == nil ||
		ptr.Deref(s.Storage.VolumeClaimTemplate.Spec.StorageClassName, "") != "fast-ssd" ||
		!s.Storage.VolumeClaimTemplate.Spec.Resources.Requests.Storage().Equal(resource.MustParse("2Gi")) {
		t.Errorf("storage %+v", s.Storage)
	}
	if s.PodDisruptionBudget.MaxUnavailable == nil || s.PodDisruptionBudget.MaxUnavailable.String() != "40%" ||
		s.Service.Type != corev1.ServiceTypeLoadBalancer || s.Service.Annotations["example.com/load-balancer-type"] != "internal" ||
		s.Publish.ConfigMapName != "rocketmq-namesrv" || ptr.Deref(s.Publish.DrainSeconds, 0) != 60 {
		t.Errorf("pdb %+v, service %+v, publish %+v", s.PodDisruptionBudget, s.Service, s.Publish)
	}
}

func checkMonitors(t *testing.T, objs []*unstructured.Unstructured) {
	svc := typed[corev1.Service](t, only(t, objs, "Service"))
	sm := only(t, objs, "ServiceMonitor")
	selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	if !selects(selector, svc.Labels) {
		t.Errorf("the ServiceMonitor selects %v, the metrics Service has %v", selector, svc.Labels)
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 || endpoints[0].(map[string]any)["port"] != svc.Spec.Ports[0].Name ||
		endpoints[0].(map[string]any)["interval"] != "15s" {
		t.Errorf("ServiceMonitor endpoints %v, Service ports %+v", endpoints, svc.Spec.Ports)
	}

	// The PodMonitor must select the pods the operator creates, on the port
	// serving /metrics.
	pm := only(t, objs, "PodMonitor")
	selector, _, _ = unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	c := &v1alpha1.NameServerCluster{ObjectMeta: metav1.ObjectMeta{Name: "any"}}
	if !selects(selector, render.Labels(c)) {
		t.Errorf("the PodMonitor selects %v, NameServer pods have %v", selector, render.Labels(c))
	}
	endpoints, _, _ = unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	if len(endpoints) != 1 || endpoints[0].(map[string]any)["port"] != render.HTTPPortName {
		t.Errorf("PodMonitor endpoints %v, want port %s", endpoints, render.HTTPPortName)
	}
	if any, _, _ := unstructured.NestedBool(pm.Object, "spec", "namespaceSelector", "any"); !any {
		t.Error("in cluster mode the PodMonitor must look in every namespace")
	}
	// The labels the alert rules and the dashboard select by: the operator's
	// own namespace and name labels, and the NameServerCluster of each pod.
	if ep, ok := endpointsOf(sm, "endpoints"); !ok || ep["honorLabels"] != true {
		t.Errorf("the ServiceMonitor endpoint %v does not keep the operator's namespace and name labels", ep)
	}
	if ep, ok := endpointsOf(pm, "podMetricsEndpoints"); !ok || !reflect.DeepEqual(ep["relabelings"], []any{map[string]any{
		"action": "replace", "sourceLabels": []any{"__meta_kubernetes_pod_label_app_kubernetes_io_instance"}, "targetLabel": "nameservercluster",
	}}) {
		t.Errorf("the PodMonitor endpoint %v does not label series with their NameServerCluster", ep)
	}
	if selector := render.SelectorLabels(c); selector["app.kubernetes.io/instance"] != c.Name {
		t.Errorf("NameServer pods' instance label is not their cluster's name: %v", selector)
	}
	for _, m := range []*unstructured.Unstructured{sm, pm, only(t, objs, "PrometheusRule")} {
		if m.GetLabels()["release"] != "prometheus" {
			t.Errorf("%s labels %v", describe(m), m.GetLabels())
		}
	}
	checkAlertRules(t, only(t, objs, "PrometheusRule"), readValues(t, "monitoring-values.yaml"))
	checkDashboard(t, only(t, objs, "ConfigMap"), readValues(t, "monitoring-values.yaml"))
}

// endpointsOf returns the only endpoint of a monitor.
func endpointsOf(m *unstructured.Unstructured, field string) (map[string]any, bool) {
	eps, _, _ := unstructured.NestedSlice(m.Object, "spec", field)
	if len(eps) != 1 {
		return nil, false
	}
	ep, ok := eps[0].(map[string]any)
	return ep, ok
}

func checkNoMonitors(t *testing.T, objs []*unstructured.Unstructured) {
	for _, o := range objs {
		if strings.HasPrefix(o.GetAPIVersion(), "monitoring.coreos.com/") {
			t.Errorf("%s is rendered although the cluster does not serve its API", describe(o))
		}
	}
	if len(objectsOf(objs, "Service")) != 1 || len(objectsOf(objs, "ConfigMap")) != 1 {
		t.Error("the metrics Service and the dashboard ConfigMap must not depend on the monitoring API")
	}
}

func checkMinimal(t *testing.T, objs []*unstructured.Unstructured) {
	wantKinds(t, objs, map[string]int{"CustomResourceDefinition": 1, "Deployment": 1})
	d := typed[appsv1.Deployment](t, only(t, objs, "Deployment"))
	ctr := d.Spec.Template.Spec.Containers[0]
	if d.Spec.Template.Spec.ServiceAccountName != "preexisting-operator" || ptr.Deref(d.Spec.Replicas, 0) != 1 {
		t.Errorf("service account %q, replicas %d", d.Spec.Template.Spec.ServiceAccountName, ptr.Deref(d.Spec.Replicas, 0))
	}
	if arg(ctr.Args, "leader-elect") != "false" || arg(ctr.Args, "metrics-bind-address") != "0" {
		t.Errorf("args %v: want leader election and metrics off", ctr.Args)
	}
	for _, p := range ctr.Ports {
		if p.Name == "metrics" {
			t.Error("metrics are off, yet the container declares a metrics port")
		}
	}
}

// TestRestrictedPodSecurity: the chart's default security contexts are what
// keeps its manager pods within the restricted Pod Security Standard; with
// them removed, the same dry run draws the API server's warning that
// TestChart fails on.
func TestRestrictedPodSecurity(t *testing.T) {
	ctx := testContext(t)
	objs := helmTemplate(ctx, t, renderArgs{namespace: "pod-security", set: []string{"podSecurityContext=null", "securityContext=null"}})
	ensureNamespaces(ctx, t, objs)
	warnings, err := dryRunOne(ctx, only(t, objs, "Deployment"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, `violate PodSecurity "restricted`) }) {
		t.Errorf("no restricted Pod Security warning for a manager without security contexts; warnings: %q", warnings)
	}
}

// TestValuesRejected checks that bad values stop helm before anything is
// sent to a cluster, with a message that names the value.
func TestValuesRejected(t *testing.T) {
	const schemaFailure = "values don't meet the specifications of the schema(s)"
	cases := []struct {
		name string
		set  []string
		want []string
	}{
		{"negative replicas", []string{"replicaCount=-1"}, []string{schemaFailure, "at '/replicaCount': minimum: got -1, want 0"}},
		{"misspelt key", []string{"replicas=2"}, []string{schemaFailure, "at '': additional properties 'replicas' not allowed"}},
		{"unknown pull policy", []string{`image={"repository":"a/b","pullPolicy":"Sometimes"}`},
			[]string{schemaFailure, "at '/image/pullPolicy': value must be one of 'Always', 'IfNotPresent', 'Never'"}},
		{"bad namespace name", []string{`watchNamespaces=["Team_A"]`}, []string{schemaFailure, "at '/watchNamespaces/0': 'Team_A' does not match pattern"}},
		{"bad quantity", []string{`resources={"limits":{"memory":"lots"}}`}, []string{schemaFailure, "at '/resources/limits/memory'", "'lots' does not match pattern"}},
		{"port out of range", []string{`metrics={"enabled":true,"port":70000}`}, []string{schemaFailure, "at '/metrics/port': maximum: got 70,000, want 65,535"}},
		{"unknown log level", []string{`logLevel="verbose"`}, []string{schemaFailure, "at '/logLevel'", "value must be one of 'debug', 'info', 'error', 'panic'"}},
		{"extra argument not a flag", []string{`extraArgs=["zap-devel"]`}, []string{schemaFailure, "at '/extraArgs/0': 'zap-devel' does not match pattern '^--'"}},
		{"too many NameServers", []string{"nameserver.replicaCount=65"}, []string{schemaFailure, "at '/nameserver/replicaCount': maximum: got 65, want 64"}},
		{"NameServerCluster name with capitals", []string{`nameserver.name="Orders"`}, []string{schemaFailure, "at '/nameserver/name': 'Orders' does not match pattern"}},
		{"property the operator sets", []string{`nameserver.config={"listenPort":"9877"}`}, []string{schemaFailure, "at '/nameserver/config/listenPort'"}},
		{"property that is not a Java name", []string{`nameserver.config={"1st":"x"}`}, []string{schemaFailure, "at '/nameserver/config': additional properties '1st' not allowed"}},
		{"pod label the operator selects with", []string{`nameserver.podLabels={"app.kubernetes.io/instance":"x"}`},
			[]string{schemaFailure, "at '/nameserver/podLabels/app.kubernetes.io~1instance'"}},
		{"TLS without a Secret", []string{`nameserver.tls={"mode":"Enforcing"}`}, []string{schemaFailure, "at '/nameserver/tls'", "missing property 'secretName'"}},
		{"unknown TLS mode", []string{`nameserver.tls={"secretName":"tls","mode":"Strict"}`},
			[]string{schemaFailure, "at '/nameserver/tls/mode': value must be one of 'Permissive', 'Enforcing'"}},
		{"PDB percentage above 100", []string{`nameserver.podDisruptionBudget={"maxUnavailable":"150%"}`}, []string{schemaFailure, "at '/nameserver/podDisruptionBudget/maxUnavailable'"}},
		{"bad Service type", []string{`nameserver.service={"type":"External"}`}, []string{schemaFailure, "at '/nameserver/service/type': value must be one of 'ClusterIP', 'NodePort', 'LoadBalancer'"}},
		{"alert that does not exist", []string{`metrics.prometheusRule={"enabled":true,"alerts":{"NamesrvDown":{"for":"5m"}}}`},
			[]string{schemaFailure, "at '/metrics/prometheusRule/alerts': additional properties 'NamesrvDown' not allowed"}},
		{"threshold of an alert that has none", []string{`metrics.prometheusRule={"enabled":true,"alerts":{"NamesrvNoServingPeer":{"threshold":1}}}`},
			[]string{schemaFailure, "at '/metrics/prometheusRule/alerts/NamesrvNoServingPeer': additional properties 'threshold' not allowed"}},
		{"alert duration that is not one", []string{`metrics.prometheusRule={"enabled":true,"alerts":{"NamesrvDrainStuck":{"for":"1 hour"}}}`},
			[]string{schemaFailure, "at '/metrics/prometheusRule/alerts/NamesrvDrainStuck/for': '1 hour' does not match pattern"}},
		{"threshold that is not a number", []string{`metrics.prometheusRule={"enabled":true,"alerts":{"NamesrvRouteLatencyHigh":{"threshold":"25ms"}}}`},
			[]string{schemaFailure, "at '/metrics/prometheusRule/alerts/NamesrvRouteLatencyHigh/threshold': got string, want number"}},
		{"runbook URL with an anchor", []string{`metrics.prometheusRule={"enabled":true,"runbookBaseURL":"https://wiki/runbooks#top"}`},
			[]string{schemaFailure, "at '/metrics/prometheusRule/runbookBaseURL'", "does not match pattern"}},
		{"dashboard sidecar label that is no label", []string{`metrics.grafanaDashboard={"enabled":true,"sidecarLabel":"grafana dashboard"}`},
			[]string{schemaFailure, "at '/metrics/grafanaDashboard/sidecarLabel': 'grafana dashboard' does not match pattern"}},
		// Rules across values, from templates/_validate.tpl.
		{"several managers without a leader", []string{"replicaCount=2", `leaderElection={"enabled":false}`},
			[]string{"replicaCount > 1 needs leaderElection.enabled=true"}},
		{"NameServerCluster outside the watched namespaces", []string{`watchNamespaces=["team-a"]`, `nameserver={"enabled":true,"namespace":"team-b"}`},
			[]string{`nameserver.namespace "team-b" is not in watchNamespaces [team-a]`}},
		{"publish target outside the watched namespaces", []string{`watchNamespaces=["team-a"]`,
			`nameserver={"enabled":true,"namespace":"team-a","publish":{"targets":[{"namespace":"brokers"}]}}`},
			[]string{`nameserver.publish.targets namespace "brokers" is not in watchNamespaces [team-a]`}},
		{"no service account", []string{`serviceAccount={"create":false}`}, []string{"serviceAccount.name is required when serviceAccount.create is false"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := testContext(t)
			out, err := run(ctx, helmBin, renderArgs{namespace: "default", set: c.set}.helmArgs("template")...)
			if err == nil {
				t.Fatalf("helm template accepted %v and printed %d bytes", c.set, len(out))
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestChartCRDsAreGenerated: the chart's crds/ is a verbatim copy of
// config/crd/bases (make chart-crds); `make verify-chart-crds` catches a
// stale commit, this catches a stale working tree.
func TestChartCRDsAreGenerated(t *testing.T) {
	generated, err := filepath.Glob(filepath.Join(repoRoot, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(generated) == 0 {
		t.Fatalf("no generated CRDs: %v", err)
	}
	copies, err := filepath.Glob(filepath.Join(chartDir, "crds", "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(copies) != len(generated) {
		t.Errorf("the chart has %d CRD files, config/crd/bases %d: run make chart-crds", len(copies), len(generated))
	}
	for _, g := range generated {
		want, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(chartDir, "crds", filepath.Base(g)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s (%v): run make chart-crds", filepath.Join(chartDir, "crds", filepath.Base(g)), g, err)
		}
	}
}

// readValues reads a values file of the matrix.
func readValues(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "ci", name))
	if err != nil {
		t.Fatal(err)
	}
	v := map[string]any{}
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// valueAs converts the value at path into a Kubernetes Go type, so that it
// compares with what was rendered however each side spells it.
func valueAs[T any](t *testing.T, values map[string]any, path ...string) T {
	t.Helper()
	v, found, err := unstructured.NestedFieldNoCopy(values, path...)
	if err != nil || !found {
		t.Fatalf("values have no %v (%v)", path, err)
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := yaml.UnmarshalStrict(b, &out); err != nil {
		t.Fatalf("values %v: %v", path, err)
	}
	return out
}

func sameAs(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: rendered %+v, values say %+v", what, got, want)
	}
}

func wantKinds(t *testing.T, objs []*unstructured.Unstructured, want map[string]int) {
	t.Helper()
	got := map[string]int{}
	for _, o := range objs {
		got[o.GetKind()]++
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rendered kinds %v, want %v", got, want)
	}
}

// arg returns the value of --name=value, or "" when absent.
func arg(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

func has(args []string, name string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return a == "--"+name || strings.HasPrefix(a, "--"+name+"=") })
}

// port returns the number of a named container port.
func port(t *testing.T, c corev1.Container, name string) string {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return strconv.Itoa(int(p.ContainerPort))
		}
	}
	t.Errorf("container %s has no port %q", c.Name, name)
	return ""
}

// selects tells whether a label selector matches a set of labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// checkNetworkPolicies checks the NameServer NetworkPolicy of
// nameserver-values.yaml: one per listed namespace, selecting the
// NameServer pods only; the remoting port open to the listed namespaces
// and networks and the NameServers' own namespace; the HTTP port to the
// operator's pods, the monitoring namespace and, for the address server,
// the remoting sources.
func checkNetworkPolicies(t *testing.T, objs []*unstructured.Unstructured, operator *appsv1.Deployment) {
	t.Helper()
	nsIs := func(name string) networkingv1.NetworkPolicyPeer {
		return networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": name}}}
	}
	samePods := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{}}
	tcp := corev1.ProtocolTCP
	port := func(name string) []networkingv1.NetworkPolicyPort {
		return []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromString(name)), Protocol: &tcp}}
	}
	operatorPods := networkingv1.NetworkPolicyPeer{
		NamespaceSelector: nsIs(operator.Namespace).NamespaceSelector,
		PodSelector:       &metav1.LabelSelector{MatchLabels: operator.Spec.Selector.MatchLabels},
	}
	want := networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{render.LabelName: render.AppName, render.LabelManagedBy: render.ManagedBy}},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{
			{Ports: port("remoting"), From: []networkingv1.NetworkPolicyPeer{samePods, nsIs("brokers"), nsIs("apps"),
				{IPBlock: &networkingv1.IPBlock{CIDR: "203.0.113.0/24"}}}},
			{Ports: port("http"), From: []networkingv1.NetworkPolicyPeer{operatorPods, samePods, nsIs("brokers"), nsIs("apps"), nsIs("observability")}},
		},
	}
	policies := objectsOf(objs, "NetworkPolicy")
	var namespaces []string
	for _, o := range policies {
		np := typed[networkingv1.NetworkPolicy](t, o)
		namespaces = append(namespaces, np.Namespace)
		sameAs(t, "NetworkPolicy "+np.Namespace+"/"+np.Name, np.Spec, want)
	}
	sameAs(t, "NetworkPolicy namespaces", namespaces, []string{"rocketmq", "rocketmq-edge"})
	// The operator's pods are the ones the policy lets reach the HTTP port.
	for k, v := range operator.Spec.Selector.MatchLabels {
		if operator.Spec.Template.Labels[k] != v {
			t.Errorf("operator pods lack the label %s=%s the NetworkPolicy selects them by", k, v)
		}
	}
}
