package monitoring

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	nsconfig "github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting/tlstest"
	"github.com/kube-namesrv/kube-namesrv/namesrv/route"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
	"github.com/kube-namesrv/kube-namesrv/test/nstest"
)

// scrape is one /metrics answer, by metric family.
type scrape map[string]*dto.MetricFamily

func scrapeURL(t *testing.T, url string) scrape {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scraping %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scraping %s: %s %v", url, resp.Status, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s is not the Prometheus text format: %v", url, err)
	}
	return fams
}

// addTo records the scrape's series names, labels and label values as a
// query sees them: a histogram is its _bucket (with le), _sum and _count
// series, a summary its own (with quantile), _sum and _count. The scrape
// configuration of kind (PodMonitor or ServiceMonitor) adds the labels
// target to every series.
func (s scrape) addTo(exposed map[string]*exposedMetric, kind string, target []string) {
	add := func(name string, labels []*dto.LabelPair, extra ...string) {
		m := exposed[name]
		if m == nil {
			m = &exposedMetric{values: map[string]map[string]bool{}, target: map[string]map[string]bool{}}
			exposed[name] = m
		}
		for _, l := range target {
			if m.target[l] == nil {
				m.target[l] = map[string]bool{}
			}
			m.target[l][kind] = true
		}
		pairs := make([]string, 0, 2*len(labels)+len(extra))
		for _, l := range labels {
			pairs = append(pairs, l.GetName(), l.GetValue())
		}
		pairs = append(pairs, extra...)
		for i := 0; i+1 < len(pairs); i += 2 {
			if m.values[pairs[i]] == nil {
				m.values[pairs[i]] = map[string]bool{}
			}
			m.values[pairs[i]][pairs[i+1]] = true
		}
	}
	for name, f := range s {
		for _, m := range f.Metric {
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				for _, b := range m.GetHistogram().GetBucket() {
					add(name+"_bucket", m.Label, "le", fmt.Sprint(b.GetUpperBound()))
				}
				add(name+"_bucket", m.Label, "le", "+Inf")
				add(name+"_sum", m.Label)
				add(name+"_count", m.Label)
			case dto.MetricType_SUMMARY:
				for _, q := range m.GetSummary().GetQuantile() {
					add(name, m.Label, "quantile", fmt.Sprint(q.GetQuantile()))
				}
				add(name+"_sum", m.Label)
				add(name+"_count", m.Label)
			default:
				add(name, m.Label)
			}
		}
	}
}

// value is the value of the first series of a family with the given label
// values, and whether there is one.
func (s scrape) value(name string, labels map[string]string) (float64, bool) {
	f := s[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range labels {
			match = match && got[k] == v
		}
		if !match {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// The NameServerCluster the manager reconciles, with one peer: the
// NameServer this test runs, as the operator runs every NameServer (route
// gate enabled, the declared-KV file rendered from spec.kvConfig).
const (
	clusterNamespace = "apps"
	clusterName      = "orders"
	// refusedName is a second cluster whose spec the operator partly
	// refuses: a publish target in its own namespace.
	refusedName = "refused"
)

func monitoredCluster() *v1alpha1.NameServerCluster {
	c := &v1alpha1.NameServerCluster{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNamespace, Name: clusterName}}
	c.Spec.Replicas = ptr.To[int32](1)
	c.Spec.KVConfig = []v1alpha1.KVConfigEntry{{Namespace: "ORDER_TOPIC_CONFIG", Key: "orders", Value: "stays:4"}}
	c.Spec.KVConfigPolicy = v1alpha1.KVConfigOwned
	return c
}

// startNameServer runs a real NameServer with TLS on loopback, its route
// gate enabled (closed until a gate request opens it: the timeout is far
// beyond the test's) and a declared-KV file.
func startNameServer(t *testing.T, declaredKV []byte) *namesrv.Server {
	t.Helper()
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "monitoring-test-ca")
	certPath, keyPath := ca.Server(t).Write(t, dir)
	kvFile := filepath.Join(dir, "declared-kv.json")
	if err := os.WriteFile(kvFile, declaredKV, 0o644); err != nil {
		t.Fatal(err)
	}
	return nstest.Start(t, func(cfg *nsconfig.Config) {
		cfg.TLSServerCertPath, cfg.TLSServerKeyPath = certPath, keyPath
		cfg.ScanNotActiveBrokerInterval = 50
		cfg.RouteGateEnable, cfg.RouteGateTimeoutSeconds = true, 3600
		cfg.KVDeclaredFile = kvFile
	}).Server
}

// brokersOf are the brokers a test registers with its NameServer.
type brokersOf struct {
	stays, leaves, silent *brokersim.Broker
}

// registerBrokers registers three brokers while the NameServer's route gate
// is closed (brokers are served at once), and has a client's route query
// refused by the gate: its connection is closed instead of answered.
func registerBrokers(t *testing.T, s *namesrv.Server) brokersOf {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := []string{s.Addr().String()}
	startBroker := func(c brokersim.Config) *brokersim.Broker {
		b, err := brokersim.Start(c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		for _, r := range b.Register(ctx, ns) {
			if r.Err != nil || r.Response.Code != protocol.Success {
				t.Fatalf("registering %s: %v %+v", c.Name, r.Err, r.Response)
			}
		}
		return b
	}
	var out brokersOf
	out.stays = startBroker(brokersim.Config{Cluster: "c", Name: "stays", Topics: []body.TopicConfig{brokersim.Topic("orders", 4)}})
	out.leaves = startBroker(brokersim.Config{Cluster: "c", Name: "leaves", Topics: []body.TopicConfig{brokersim.Topic("audit", 4)}})
	out.silent = startBroker(brokersim.Config{Cluster: "c", Name: "silent", Generation: body.Broker5, HeartbeatTimeoutMillis: 200,
		// A 5.x broker's first registration carries more than one topic.
		Topics: []body.TopicConfig{brokersim.Topic("silent", 1), brokersim.Topic("silent2", 1)}})

	if g := s.Summary().Gate; !g.Enabled || g.Open {
		t.Fatalf("the route gate is not closed: %+v", g)
	}
	c, err := remotingclient.Dial(ctx, s.Addr().String(), remotingclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r, err := c.Invoke(ctx, &remotingclient.Request{Code: protocol.GetRouteInfoByTopic, Ext: ext("topic", "orders")}); err == nil {
		t.Fatalf("a route query was answered while the gate is closed: %+v", r)
	}
	return out
}

// scrapeNameServer drives, once the operator opened the NameServer's gate,
// what gives its other series their label values (route queries that
// succeed and that find no topic, an unregistration and an expiry), and
// scrapes it.
func scrapeNameServer(t *testing.T, s *namesrv.Server, brokers brokersOf) scrape {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := remotingclient.Dial(ctx, s.Addr().String(), remotingclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for topic, want := range map[string]int32{"orders": protocol.Success, "missing": protocol.TopicNotExist} {
		r, err := c.Invoke(ctx, &remotingclient.Request{Code: protocol.GetRouteInfoByTopic, Ext: ext("topic", topic)})
		if err != nil || r.Code != want {
			t.Fatalf("route of %s: %v %+v, want code %d", topic, err, r, want)
		}
	}
	if r, err := brokers.leaves.Unregister(ctx, s.Addr().String()); err != nil || r.Code != protocol.Success {
		t.Fatalf("unregister: %v %+v", err, r)
	}
	for s.Routes().Stats().Evictions[route.EvictExpired] == 0 {
		if ctx.Err() != nil {
			t.Fatal("the silent broker never expired")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return scrapeURL(t, "http://"+s.HTTPAddr().String()+"/metrics")
}

func ext(kv ...string) []remoting.Pair {
	var out []remoting.Pair
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, remoting.Pair{Key: kv[i], Value: kv[i+1]})
	}
	return out
}

// wantSeries is a series the manager's scrape must show; value nil means
// any value.
type wantSeries struct {
	family string
	labels map[string]string
	value  *float64
}

func (w wantSeries) String() string {
	if w.value == nil {
		return fmt.Sprintf("%s%v", w.family, w.labels)
	}
	return fmt.Sprintf("%s%v = %v", w.family, w.labels, *w.value)
}

// scrapeManager runs the operator's reconciler in a manager against a real
// API server and the NameServer s: it creates the monitored cluster and
// plays the StatefulSet controller and the kubelet for its one pod (an IP
// and the container ports of s; Ready once s's /readyz says so), so that
// the operator reads s's route summary, opens its route gate, publishes it
// and checks its declared KV config. A second cluster has a spec the
// operator partly refuses. It waits for every operator series, per-peer
// ones included, and scrapes the manager's metrics endpoint.
func scrapeManager(t *testing.T, s *namesrv.Server) scrape {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: this test needs kube-apiserver and etcd; run `make test`")
	}
	logf.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(repoRoot, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  controllers.CacheOptions(nil),
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The manager's own metrics server, on a free loopback port it reports.
	srv, err := metricsserver.NewServer(metricsserver.Options{BindAddress: "127.0.0.1:0"}, cfg, mgr.GetHTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(srv); err != nil {
		t.Fatal(err)
	}
	// Peers is left nil: the reconciler reads the NameServer over HTTP, as
	// in production.
	if err := (&controllers.NameServerClusterReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("kube-namesrv"),
		Render:    render.Options{ClusterDomain: "cluster.local", DefaultImage: "kube-namesrv/kube-namesrv:v0.0.0-test"},
		Clock:     clock.RealClock{},
	}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("manager: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the manager did not stop within 30 s")
		}
	})

	k8s, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	wait, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	if err := k8s.Create(wait, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterNamespace}}); err != nil {
		t.Fatal(err)
	}
	nsc := monitoredCluster()
	if err := k8s.Create(wait, nsc); err != nil {
		t.Fatal(err)
	}
	refused := &v1alpha1.NameServerCluster{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNamespace, Name: refusedName}}
	refused.Spec.Replicas = ptr.To[int32](1)
	refused.Spec.Publish.Targets = []v1alpha1.PublishTarget{{Namespace: clusterNamespace}}
	if err := k8s.Create(wait, refused); err != nil {
		t.Fatal(err)
	}
	pod := peerPod(wait, t, k8s, nsc, s)

	one, zero := 1.0, 0.0
	cluster := map[string]string{"namespace": clusterNamespace, "name": clusterName}
	peer := map[string]string{"namespace": clusterNamespace, "name": clusterName, "peer": pod.Name}
	want := []wantSeries{
		{"kube_namesrv_cluster_desired_peers", cluster, &one},
		{"kube_namesrv_cluster_ready_peers", cluster, &one},
		{"kube_namesrv_cluster_published_peers", cluster, &one},
		{"kube_namesrv_cluster_serving_peers", cluster, &one},
		{"kube_namesrv_cluster_routes_consistent", cluster, &one},
		{"kube_namesrv_cluster_kv_config_in_sync", cluster, &one},
		{"kube_namesrv_cluster_outdated_peers", cluster, &zero},
		{"kube_namesrv_cluster_rollout_in_progress", cluster, &zero},
		{"kube_namesrv_cluster_rollout_paused", cluster, &zero},
		{"kube_namesrv_cluster_drain_in_progress", cluster, &zero},
		{"kube_namesrv_cluster_scale_down_held", cluster, &zero},
		{"kube_namesrv_cluster_last_publish_timestamp_seconds", cluster, nil},
		{"kube_namesrv_peer_reachable", peer, &one},
		{"kube_namesrv_peer_missing_brokers", peer, &zero},
		{"kube_namesrv_peer_kv_drift_keys", peer, &zero},
		{"kube_namesrv_cluster_refusals_total", map[string]string{"namespace": clusterNamespace, "name": refusedName, "reason": string(v1alpha1.RefusalTarget)}, nil},
		{"kube_namesrv_cluster_condition", map[string]string{"namespace": clusterNamespace, "name": clusterName, "type": string(v1alpha1.ConditionAvailable), "status": "True", "reason": string(v1alpha1.ReasonPeersServing)}, &one},
		{"kube_namesrv_cluster_condition", map[string]string{"namespace": clusterNamespace, "name": refusedName, "type": string(v1alpha1.ConditionDegraded), "status": "True", "reason": string(v1alpha1.RefusalTarget)}, &one},
		{"controller_runtime_reconcile_total", map[string]string{"controller": "nameservercluster", "result": "success"}, nil},
	}
	addr := func() string { return srv.(interface{ GetBindAddr() string }).GetBindAddr() }
	ready := false
	for {
		// The kubelet's readiness probe: the NameServer turns ready once
		// its gate is open, which only the operator's gate request does.
		if !ready && readyz(s) {
			setPodReady(wait, t, k8s, pod)
			ready = true
		}
		if a := addr(); a != "" && ready {
			sc := scrapeURL(t, "http://"+a+"/metrics")
			missing := ""
			for _, w := range want {
				v, ok := sc.value(w.family, w.labels)
				if !ok || w.value != nil && v != *w.value {
					missing = w.String()
					break
				}
			}
			if missing == "" {
				// A one-replica cluster has no reference peer: the operator's
				// request makes the gate wait for the brokers live before, or
				// a broker round, and it opens by "wait". Only a gate that no
				// request reached opens by "timeout".
				if g := s.Summary().Gate; g.OpenedBy != "request" && g.OpenedBy != "wait" {
					t.Fatalf("the NameServer's gate was not opened by the operator's request: %+v", g)
				}
				return sc
			}
			if wait.Err() != nil {
				t.Fatalf("the manager's metrics never showed %s", missing)
			}
		}
		select {
		case err := <-done:
			t.Fatalf("the manager stopped: %v", err)
		case <-wait.Done():
			t.Fatalf("the peer never became ready (gate %+v) or the manager's metrics server never listened", s.Summary().Gate)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// peerPod plays the StatefulSet controller and the kubelet for the
// cluster's pod 0: created from the StatefulSet's template labels with the
// NameServer's ports, running at 127.0.0.1, not ready yet.
func peerPod(ctx context.Context, t *testing.T, k8s client.Client, c *v1alpha1.NameServerCluster, s *namesrv.Server) *corev1.Pod {
	t.Helper()
	port := func(a net.Addr) int32 { return int32(a.(*net.TCPAddr).Port) }
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: render.PodName(c, 0), Labels: render.Labels(c)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: render.ContainerName, Image: "kube-namesrv/kube-namesrv:v0.0.0-test",
			Ports: []corev1.ContainerPort{
				{Name: render.RemotingPortName, ContainerPort: port(s.Addr())},
				{Name: render.HTTPPortName, ContainerPort: port(s.HTTPAddr())},
			},
		}}},
	}
	if err := k8s.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: "127.0.0.1", PodIPs: []corev1.PodIP{{IP: "127.0.0.1"}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Now()}},
	}
	if err := k8s.Status().Update(ctx, pod); err != nil {
		t.Fatalf("writing the status of pod %s: %v", pod.Name, err)
	}
	return pod
}

// setPodReady turns the pod's Ready condition True.
func setPodReady(ctx context.Context, t *testing.T, k8s client.Client, pod *corev1.Pod) {
	t.Helper()
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if err := k8s.Status().Update(ctx, pod); err != nil {
		t.Fatalf("making pod %s ready: %v", pod.Name, err)
	}
}

// readyz tells whether the NameServer's readiness endpoint answers 200.
func readyz(s *namesrv.Server) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.HTTPAddr().String()+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// monitorTargetLabels are the labels the Prometheus Operator gives every
// series it scrapes for a PodMonitor or ServiceMonitor endpoint, before the
// endpoint's own relabelings (its generated scrape configuration: the
// target's namespace, pod, container, endpoint port name, job, and for a
// ServiceMonitor the Service; Prometheus itself adds instance).
var monitorTargetLabels = map[string][]string{
	"PodMonitor":     {"namespace", "pod", "container", "endpoint", "job", "instance"},
	"ServiceMonitor": {"namespace", "service", "pod", "container", "endpoint", "job", "instance"},
}

// chartTargetLabels renders the chart's PodMonitor and ServiceMonitor and
// returns, for each kind, the target labels its series get: those of the
// Prometheus Operator plus the targets of the endpoint's relabelings.
func chartTargetLabels(t *testing.T) map[string][]string {
	t.Helper()
	helm := tool(t, "HELM", "the helm binary")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	home := t.TempDir()
	cmd := exec.CommandContext(ctx, helm, "template", "kube-namesrv", chartDir,
		"--show-only", "templates/podmonitor.yaml", "--show-only", "templates/servicemonitor.yaml",
		"--set", "metrics.podMonitor.enabled=true", "--set", "metrics.serviceMonitor.enabled=true",
		"--api-versions", "monitoring.coreos.com/v1/PodMonitor", "--api-versions", "monitoring.coreos.com/v1/ServiceMonitor")
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CACHE_HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_DATA_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr.String())
	}
	out := map[string][]string{}
	dec := utilyaml.NewYAMLOrJSONDecoder(&stdout, 4096)
	for {
		var m struct {
			Kind string `json:"kind"`
			Spec struct {
				Endpoints           []endpoint `json:"endpoints"`
				PodMetricsEndpoints []endpoint `json:"podMetricsEndpoints"`
			} `json:"spec"`
		}
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("helm template printed what is not YAML: %v", err)
		}
		base, ok := monitorTargetLabels[m.Kind]
		if !ok {
			t.Fatalf("helm rendered a %q", m.Kind)
		}
		labels := append([]string(nil), base...)
		for _, e := range append(m.Spec.Endpoints, m.Spec.PodMetricsEndpoints...) {
			for _, r := range e.Relabelings {
				if r.TargetLabel != "" && !strings.HasPrefix(r.TargetLabel, "__") {
					labels = append(labels, r.TargetLabel)
				}
			}
		}
		out[m.Kind] = labels
	}
	if len(out) != 2 {
		t.Fatalf("want a PodMonitor and a ServiceMonitor, got %v", out)
	}
	return out
}

type endpoint struct {
	Relabelings []struct {
		TargetLabel string `json:"targetLabel"`
	} `json:"relabelings"`
}
