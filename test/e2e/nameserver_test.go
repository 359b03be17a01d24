//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
)

const (
	// topic is what the broker simulator serves and clients look up.
	topic       = "E2ETopic"
	topicQueues = 4
	// brokerPeriod is the simulator's heartbeat: a real broker's is 30s,
	// which would make every scenario wait that long.
	brokerPeriod = time.Second
	// The timeouts below bound waits for states; a passing scenario never
	// waits them out. They are set for a node whose two cores are busy with
	// other work besides four scenarios side by side (docs/e2e.md: the suite
	// is run five times with stress-ng --cpu 2 beside it), where a pod start
	// or a roll takes several times as long as on an idle node.
	//
	// podTimeout bounds waits for pods to start, become ready or go, at
	// the probe periods and preStop pause the operator renders (5 s, 5 s).
	podTimeout = 3 * time.Minute
	// refreshTimeout bounds waits for a changed ConfigMap or Secret to
	// reach the files mounted in pods: the kubelet refreshes them at its
	// sync period (10 s on the box's node), with up to half again of jitter.
	refreshTimeout = 90 * time.Second
	// rollTimeout bounds a roll of every peer of a cluster: each peer in
	// turn drains, stops, starts and becomes ready.
	rollTimeout = 6 * time.Minute
	// answerTimeout bounds waits for a NameServer to answer as wanted once
	// its pod serves: a route, a KV value, a registration.
	answerTimeout = 30 * time.Second
	// scenarioTimeout bounds a scenario.
	scenarioTimeout = 15 * time.Minute
	// remotingPort and httpPort are the CRD's defaults.
	remotingPort = 9876
	httpPort     = 8080
)

// nsc is one NameServerCluster under test, with the names its contract
// promises: pods <name>-<i>, each published as
// <name>-<i>.<name>-headless.<ns>.svc.cluster.local:9876 in the ConfigMap
// <name>-namesrv-addr.
type nsc struct {
	ns, name string
	// period is how often its brokers register, brokerPeriod unless the
	// spec says otherwise.
	period time.Duration
}

// brokerPeriod is the cluster's brokers' registration period.
func (c nsc) brokerPeriod() time.Duration {
	if c.period == 0 {
		return brokerPeriod
	}
	return c.period
}

func (c nsc) pod(i int) string { return fmt.Sprintf("%s-%d", c.name, i) }

func (c nsc) peer(i int) string {
	return fmt.Sprintf("%s.%s-headless.%s.svc.cluster.local:%d", c.pod(i), c.name, c.ns, remotingPort)
}

// peers are the addresses of ordinals 0..n-1, the list the operator must
// publish once n peers are wanted and ready.
func (c nsc) peers(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = c.peer(i)
	}
	return out
}

func (c nsc) addressConfigMap() string { return c.name + "-namesrv-addr" }

// brokerConfigMap holds the broker list: every peer that runs.
func (c nsc) brokerConfigMap() string { return c.name + "-namesrv-addr-brokers" }

// peerOn is a peer's address with another remoting port.
func (c nsc) peerOn(i, port int) string {
	return fmt.Sprintf("%s.%s-headless.%s.svc.cluster.local:%d", c.pod(i), c.name, c.ns, port)
}

func (c nsc) selector() string { return "app.kubernetes.io/instance=" + c.name }

// clusterSpec is what the scenarios vary in a NameServerCluster manifest.
type clusterSpec struct {
	replicas int
	drain    int
	// config are namesrv properties (spec.config).
	config map[string]string
	// targets are namespaces that receive a copy of the address ConfigMaps.
	targets []string
	tls     *v1alpha1.TLSSpec
	// authorization, when set, is spec.authorization.
	authorization *v1alpha1.AuthorizationSpec
	// image, when set, is spec.image.
	image    string
	paused   bool
	kvConfig []v1alpha1.KVConfigEntry
	kvPolicy v1alpha1.KVConfigPolicy
	// storage, when set, is the size of a PersistentVolumeClaim per peer
	// (the box's default StorageClass) instead of an emptyDir.
	storage string
	// brokerPeriod, when set, replaces the package's brokerPeriod for this
	// cluster and its brokers.
	brokerPeriod time.Duration
	// defaultResources leaves the resources to the operator's defaults
	// instead of testResources.
	defaultResources bool
	// production leaves the broker period, the drain and the resources to
	// the operator's defaults (30 s rounds, 240 s) and has the brokers
	// register every 30 s, as real ones do.
	production bool
}

// testResources are the scenarios' clusters' resources. The node has the
// machine's CPUs (two on CI), and at the operator's default request, 200m a
// peer, it would hold ten peers, fewer than the scenarios run side by side.
// The memory limit, from which GOMEMLIMIT is set, is the default's.
func testResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   render.DefaultResources().Limits,
	}
}

// period is how often the cluster's brokers register.
func (s clusterSpec) period() time.Duration {
	switch {
	case s.production:
		return productionBrokerPeriod
	case s.brokerPeriod > 0:
		return s.brokerPeriod
	}
	return brokerPeriod
}

// productionBrokerPeriod is a real broker's registerNameServerPeriod.
const productionBrokerPeriod = 30 * time.Second

// manifest renders the NameServerCluster as a user would write it. Every
// cluster tells the operator that its brokers heartbeat every brokerPeriod,
// which paces the operator's reads and the peers' route-gate timeout.
func (s clusterSpec) manifest(name string) (string, error) {
	c := v1alpha1.NameServerCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "NameServerCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.NameServerClusterSpec{
			Replicas:       ptr.To(int32(s.replicas)),
			TLS:            s.tls,
			Authorization:  s.authorization,
			Image:          s.image,
			Paused:         s.paused,
			KVConfig:       s.kvConfig,
			KVConfigPolicy: s.kvPolicy,
		},
	}
	if !s.production {
		c.Spec.BrokerHeartbeatSeconds = ptr.To(int32(s.period() / time.Second))
		c.Spec.Publish.DrainSeconds = ptr.To(int32(s.drain))
		if !s.defaultResources {
			c.Spec.Resources = testResources()
		}
	}
	if s.storage != "" {
		c.Spec.Storage = &v1alpha1.Storage{VolumeClaimTemplate: &v1alpha1.VolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(s.storage)}},
		}}}
	}
	if len(s.config) > 0 {
		c.Spec.Config = map[string]v1alpha1.ConfigValue{}
		for k, v := range s.config {
			c.Spec.Config[k] = v1alpha1.ConfigValue(v)
		}
	}
	for _, ns := range s.targets {
		c.Spec.Publish.Targets = append(c.Spec.Publish.Targets, v1alpha1.PublishTarget{Namespace: ns})
	}
	y, err := yaml.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("rendering the NameServerCluster %s: %w", name, err)
	}
	// A user's manifest has no status.
	text := string(y)
	if i := strings.Index(text, "\nstatus:"); i >= 0 {
		text = text[:i+1]
	}
	return text, nil
}

// applyCluster creates a NameServerCluster in a new namespace with
// `kubectl apply`, and waits until its n peers are ready and published.
func applyCluster(ctx context.Context, t *testing.T, name string, spec clusterSpec) nsc {
	t.Helper()
	return applyClusterIn(ctx, t, createNamespace(ctx, t, "nsc-"), name, spec)
}

// applyClusterIn is applyCluster in an existing namespace, for clusters that
// need objects there first.
func applyClusterIn(ctx context.Context, t *testing.T, ns, name string, spec clusterSpec) nsc {
	t.Helper()
	c := nsc{ns: ns, name: name, period: spec.period()}
	text, err := spec.manifest(name)
	if err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(manifest, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl(ctx, t, "apply", "-n", c.ns, "-f", manifest)
	waitPublished(ctx, t, c, spec.replicas)
	return c
}

// waitPublished waits until exactly n peers run, all Ready, and the address
// ConfigMap and the status list exactly those n.
func waitPublished(ctx context.Context, t *testing.T, c nsc, n int) {
	t.Helper()
	want := strings.Join(c.peers(n), ";")
	// A new peer's route gate waits up to a few broker rounds.
	eventually(t, podTimeout+3*c.brokerPeriod(), func() (bool, string) {
		pods, err := peerPods(ctx, c)
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, p := range pods {
			if podReady(&p) && p.DeletionTimestamp == nil {
				ready++
			}
		}
		got, err := published(ctx, c)
		if err != nil {
			return false, err.Error()
		}
		st, err := clusterStatus(ctx, c)
		if err != nil {
			return false, err.Error()
		}
		ok := len(pods) == n && ready == n && strings.Join(got, ";") == want &&
			st.NamesrvAddr == want && int(st.ReadyReplicas) == n && int(st.PublishedReplicas) == n
		return ok, fmt.Sprintf("%d pods (%d ready), published %q, status %+v; want %d ready and published", len(pods), ready, got, st, n)
	})
}

// peerPods returns the cluster's pods by ordinal.
func peerPods(ctx context.Context, c nsc) ([]corev1.Pod, error) {
	l, err := cl.Clientset.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: c.selector()})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of %s: %w", c.name, err)
	}
	slices.SortFunc(l.Items, func(a, b corev1.Pod) int { return ordinal(a.Name) - ordinal(b.Name) })
	return l.Items, nil
}

func ordinal(pod string) int {
	n, _ := strconv.Atoi(pod[strings.LastIndexByte(pod, '-')+1:])
	return n
}

func getPeerPod(ctx context.Context, t *testing.T, c nsc, i int) corev1.Pod {
	t.Helper()
	p, err := cl.Clientset.CoreV1().Pods(c.ns).Get(ctx, c.pod(i), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return *p
}

// clusterStatus reads the NameServerCluster's status.
func clusterStatus(ctx context.Context, c nsc) (v1alpha1.NameServerClusterStatus, error) {
	var out v1alpha1.NameServerCluster
	if err := kc.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, &out); err != nil {
		return out.Status, fmt.Errorf("reading NameServerCluster %s/%s: %w", c.ns, c.name, err)
	}
	return out.Status, nil
}

// addressData reads the address ConfigMap.
func addressData(ctx context.Context, c nsc) (map[string]string, error) {
	cm, err := cl.Clientset.CoreV1().ConfigMaps(c.ns).Get(ctx, c.addressConfigMap(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the address ConfigMap: %w", err)
	}
	return cm.Data, nil
}

// published is the namesrvAddr list of the client ConfigMap: what a client
// configured from it uses.
func published(ctx context.Context, c nsc) ([]string, error) {
	d, err := addressData(ctx, c)
	if err != nil {
		return nil, err
	}
	return splitList(d[v1alpha1.NamesrvAddrKey]), nil
}

// brokerList is the namesrvAddr list of the broker ConfigMap.
func brokerList(ctx context.Context, c nsc) ([]string, error) {
	cm, err := cl.Clientset.CoreV1().ConfigMaps(c.ns).Get(ctx, c.brokerConfigMap(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the broker ConfigMap: %w", err)
	}
	return splitList(cm.Data[v1alpha1.NamesrvAddrKey]), nil
}

func splitList(s string) []string {
	if s = strings.TrimSpace(s); s == "" {
		return nil
	}
	return strings.Split(s, ";")
}

// resolve turns a published host:port into ip:port the way every process
// on the node and in its pods resolves names: by cluster DNS (CoreDNS, from
// the EndpointSlices of the headless Service), asked afresh every time.
func resolve(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("published address %q: %w", addr, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupHost(ctx, host)
	if err != nil {
		return "", fmt.Errorf("%s does not resolve: %w", host, err)
	}
	return net.JoinHostPort(ips[0], port), nil
}

// queryRoute asks one NameServer for the topic's route with
// rocketmq-client-go, which caches routes per client: a new admin client per
// query makes each call a real GET_ROUTEINFO_BY_TOPIC. It succeeds only when
// the route holds the simulated broker's queues.
func queryRoute(ctx context.Context, ipPort string) error {
	return queryRouteFrom(ctx, []string{ipPort})
}

// queryRouteFrom is queryRoute for a client given a list of NameServers; it
// asks one of them, and the next ones only if that one cannot be reached.
func queryRouteFrom(ctx context.Context, ipPorts []string) error {
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver(ipPorts)))
	if err != nil {
		return fmt.Errorf("rocketmq-client-go admin for %v: %w", ipPorts, err)
	}
	defer adm.Close()
	mqs, err := adm.FetchPublishMessageQueues(ctx, topic)
	if err != nil {
		return err
	}
	if len(mqs) != topicQueues {
		return fmt.Errorf("route of %s from %v has %d publish queues, want %d", topic, ipPorts, len(mqs), topicQueues)
	}
	for _, q := range mqs {
		if q.BrokerName != brokerName {
			return fmt.Errorf("route of %s from %v names broker %q, want %q", topic, ipPorts, q.BrokerName, brokerName)
		}
	}
	return nil
}

// eventuallyRoutes waits until every address serves the route to
// rocketmq-client-go.
func eventuallyRoutes(ctx context.Context, t *testing.T, addrs []string) {
	t.Helper()
	for _, a := range addrs {
		eventually(t, answerTimeout, func() (bool, string) {
			ip, err := resolve(a)
			if err == nil {
				err = queryRoute(ctx, ip)
			}
			return err == nil, fmt.Sprintf("route from %s: %v", a, err)
		})
	}
}

const brokerName = "broker-e2e"

// broker is a broker simulator configured only from the broker ConfigMap,
// as docs/operator.md tells brokers to be: every round it reads namesrvAddr again
// (a broker with the ConfigMap mounted re-reads it, one using the address
// server's brokers subgroup re-fetches it; one with envFrom would need a
// restart) and registers with each listed NameServer. It records every
// successful registration, which the route assertions need: a NameServer can
// serve a route only once the broker registered with it.
type broker struct {
	sim *brokersim.Broker
	// period is its registration round.
	period time.Duration

	mu   sync.Mutex
	regs map[string][]time.Time // by published address: when registrations succeeded
	// problems are published addresses that did not resolve.
	problems []string
	// blocked are addresses the broker cannot reach, as if a network
	// policy or a partition cut it off from those NameServers only.
	blocked map[string]bool
	stop    func()
}

// block cuts the broker off from one NameServer, or lets it through again.
func (b *broker) block(addr string, blocked bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.blocked[addr] = blocked
}

func startBroker(ctx context.Context, t *testing.T, c nsc) *broker {
	t.Helper()
	return startBrokerNamed(ctx, t, c, brokerName, topic, nil)
}

// startBrokerNamed starts a broker of another name serving another topic,
// cut off from the NameServers in blocked from its first round on.
func startBrokerNamed(ctx context.Context, t *testing.T, c nsc, name, topicName string, blocked []string) *broker {
	t.Helper()
	return startBrokerWith(ctx, t, c, brokerOptions{name: name, topic: topicName, blocked: blocked})
}

// brokerOptions describe a broker of startBrokerWith.
type brokerOptions struct {
	name, topic string
	// blocked are the NameServers it is cut off from from its first round
	// on.
	blocked []string
	// tls, when set, connects to the NameServers over TLS with it,
	// presenting its client certificate as a broker's identity.
	tls *tls.Config
}

// startBrokerWith starts a broker that registers every round until the
// test ends.
func startBrokerWith(ctx context.Context, t *testing.T, c nsc, o brokerOptions) *broker {
	t.Helper()
	sim, err := brokersim.Start(brokerConfig(o.name, o.topic, o.tls))
	if err != nil {
		t.Fatal(err)
	}
	b := &broker{sim: sim, period: c.brokerPeriod(), regs: map[string][]time.Time{}, blocked: map[string]bool{}}
	for _, a := range o.blocked {
		b.blocked[a] = true
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(c.brokerPeriod())
		defer tick.Stop()
		for {
			b.round(runCtx, c)
			select {
			case <-runCtx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	b.stop = func() {
		once.Do(func() {
			cancel()
			<-done
			sim.Close()
		})
	}
	t.Cleanup(b.stop)
	return b
}

// brokerConfig is the simulator configuration of a 5.x broker serving one
// topic, connecting over TLS when cfg is set.
func brokerConfig(name, topicName string, cfg *tls.Config) brokersim.Config {
	return brokersim.Config{
		Cluster: "DefaultCluster", Name: name, Generation: body.Broker5, TLS: cfg,
		// A real broker also registers its default topic; a NameServer (Java
		// 5.x and ours) refuses a first registration with a single topic.
		Topics: []body.TopicConfig{brokersim.Topic(topicName, topicQueues), brokersim.Topic("TBW102", 8)},
	}
}

func (b *broker) round(ctx context.Context, c nsc) {
	list, err := brokerList(ctx, c)
	if err != nil {
		return
	}
	var targets, names []string
	for _, a := range list {
		b.mu.Lock()
		blocked := b.blocked[a]
		b.mu.Unlock()
		if blocked {
			continue
		}
		ip, err := resolve(a)
		if err != nil {
			b.mu.Lock()
			b.problems = append(b.problems, fmt.Sprintf("%s: %v", time.Now().Format(time.StampMilli), err))
			b.mu.Unlock()
			continue
		}
		targets, names = append(targets, ip), append(names, a)
	}
	rctx, cancel := context.WithTimeout(ctx, min(c.brokerPeriod(), 5*time.Second))
	defer cancel()
	results := b.sim.Register(rctx, targets)
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, r := range results {
		if r.Err == nil && r.Response != nil && r.Response.Code == 0 {
			b.regs[names[i]] = append(b.regs[names[i]], now)
		}
	}
}

// registeredAfter tells whether a registration with addr succeeded after t.
func (b *broker) registeredAfter(addr string, t time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	rs := b.regs[addr]
	return len(rs) > 0 && rs[len(rs)-1].After(t)
}

func (b *broker) firstRegistration(addr string) (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if rs := b.regs[addr]; len(rs) > 0 {
		return rs[0], true
	}
	return time.Time{}, false
}

// waitRegistered waits until the broker has registered with every address
// since t.
func (b *broker) waitRegistered(t *testing.T, addrs []string, since time.Time) {
	t.Helper()
	eventually(t, max(answerTimeout, 3*b.period+answerTimeout), func() (bool, string) {
		for _, a := range addrs {
			if !b.registeredAfter(a, since) {
				return false, fmt.Sprintf("the broker has not registered with %s since %s", a, since.Format(time.StampMilli))
			}
		}
		return true, ""
	})
}

func (b *broker) unresolved() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.problems)
}

// configMapVersion is one observed version of the address ConfigMap.
type configMapVersion struct {
	rv   string
	data map[string]string
	at   time.Time
}

// configMapRecorder keeps every version of one ConfigMap, in watch order.
type configMapRecorder struct {
	mu       sync.Mutex
	versions []configMapVersion
}

func recordConfigMap(ctx context.Context, t *testing.T, ns, name string) *configMapRecorder {
	t.Helper()
	w, err := cl.Clientset.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	r := &configMapRecorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok {
				r.mu.Lock()
				r.versions = append(r.versions, configMapVersion{rv: cm.ResourceVersion, data: cm.Data, at: time.Now()})
				r.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		<-done
	})
	return r
}

func (r *configMapRecorder) all() []configMapVersion {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.versions)
}

// revision is the etcd revision of a resourceVersion. With an etcd-backed
// API server, revisions are one counter across every resource, so they
// order writes to a ConfigMap and to a Pod, which the "published only after
// Ready" and "list shrinks before pods go" assertions rely on.
func revision(t *testing.T, resourceVersion string) int64 {
	t.Helper()
	rv, err := strconv.ParseInt(resourceVersion, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q is not an etcd revision", resourceVersion)
	}
	return rv
}

// peerProcess is what the kubelet reports of a peer's running container.
type peerProcess struct {
	uid       string
	ip        string
	container string
	restarts  int32
}

func processOf(t *testing.T, p corev1.Pod) peerProcess {
	t.Helper()
	if len(p.Status.ContainerStatuses) != 1 {
		t.Fatalf("%s has %d container statuses, want 1", p.Name, len(p.Status.ContainerStatuses))
	}
	cs := p.Status.ContainerStatuses[0]
	return peerProcess{uid: string(p.UID), ip: p.Status.PodIP, container: containerID(t, cs), restarts: cs.RestartCount}
}

// assertNamesrvProcess checks that a pod's container runs the image's
// /namesrv: a real NameServer, not a stand-in.
func assertNamesrvProcess(ctx context.Context, t *testing.T, p peerProcess) {
	t.Helper()
	c := runningContainer(ctx, t, p.container)
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c.PID))
	if err != nil {
		t.Fatalf("container %s: %v", p.container, err)
	}
	if argv0, _, _ := strings.Cut(string(cmdline), "\x00"); argv0 != "/namesrv" {
		t.Fatalf("container %s of %s runs %q, want /namesrv", p.container, c.PodName, argv0)
	}
}
