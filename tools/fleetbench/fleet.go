package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

// namespace holds the whole fleet.
const namespace = "fleet"

// serviceRange is the API server's ClusterIP range: 65,000 Services.
const serviceRange = "10.0.0.0/16"

// revision is the StatefulSet revision every pod is created at.
const revision = "r1"

// rollKey is the spec.config property the roll phase sets: a real
// NameServer property, so that the operator's check of the file passes.
const rollKey = "orderMessageEnable"

// fleet is one run: a control plane, the manager, the simulated peers, and
// the bench playing the StatefulSet controller and the kubelet.
type fleet struct {
	o     *options
	n     int
	names []string
	k8s   client.Client
	cfg   *rest.Config
	cache cache.Cache
	peers *peers
	mgr   *manager

	mu       sync.Mutex
	unready  map[string]*pending // IP list ConfigMap name -> the pod awaited gone
	rolls    map[string]*pending // StatefulSet name -> the config it had
	removals []time.Duration
	rolled   []time.Duration
	lastRoll time.Time
}

// pending is a change the bench made and waits to see the operator follow.
type pending struct {
	since time.Time
	what  string // the peer's ip:port or the old config ConfigMap
	done  bool
}

var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
}

// runFleet measures one fleet of n clusters from a fresh control plane.
func runFleet(ctx context.Context, o *options, n int, logf func(string, ...any)) (res result, err error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	res = result{clusters: n, replicas: o.replicas, round: o.round, window: o.window, spread: o.unreadySpread}

	env := &envtest.Environment{CRDDirectoryPaths: []string{o.crds}, ErrorIfCRDPathMissing: true}
	// Each cluster's client Service takes a ClusterIP: envtest's /24 holds
	// about 250 of them.
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", serviceRange)
	cfg, err := env.Start()
	if err != nil {
		return res, fmt.Errorf("starting the control plane (KUBEBUILDER_ASSETS=%q): %w", os.Getenv("KUBEBUILDER_ASSETS"), err)
	}
	defer func() {
		if serr := env.Stop(); serr != nil && err == nil {
			err = fmt.Errorf("stopping the control plane: %w", serr)
		}
	}()
	cfg.QPS, cfg.Burst = 2000, 4000

	f := &fleet{o: o, n: n, cfg: cfg, unready: map[string]*pending{}, rolls: map[string]*pending{}}
	if f.k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return res, fmt.Errorf("creating the client: %w", err)
	}
	if f.peers, err = startPeers(); err != nil {
		return res, err
	}
	defer f.peers.stop()
	stopCache, err := f.startCache(ctx)
	if err != nil {
		return res, err
	}
	defer stopCache()

	flags, err := managerFlags(ctx, o.manager)
	if err != nil {
		return res, err
	}
	args, effective, err := tuningArgs(o.tuning, flags)
	if err != nil {
		return res, err
	}
	res.tuning = effective
	user, err := env.AddUser(envtest.User{Name: "fleet-manager", Groups: []string{"system:masters"}}, cfg)
	if err != nil {
		return res, fmt.Errorf("creating the manager's user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return res, err
	}
	dir, err := os.MkdirTemp("", "fleetbench")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	kubeconfig, err := writeKubeconfig(dir, kc)
	if err != nil {
		return res, err
	}
	if f.mgr, err = startManager(ctx, o.manager, kubeconfig, args); err != nil {
		return res, err
	}
	defer f.mgr.stop()
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\nthe manager's last output:\n%s", err, f.mgr.tail())
		}
	}()

	logf("N=%d: creating %d clusters of %d replicas (broker round %v)", n, n, o.replicas, o.round)
	start := time.Now()
	if err := f.create(ctx); err != nil {
		return res, err
	}
	if err := f.settle(ctx); err != nil {
		return res, err
	}
	res.setup = time.Since(start)
	logf("N=%d: every client list published after %v; warming up %v", n, res.setup.Round(time.Millisecond), o.warmup)
	if err := sleep(ctx, o.warmup); err != nil {
		return res, err
	}

	logf("N=%d: steady window of %v", n, o.window)
	if err := f.steady(ctx, &res); err != nil {
		return res, err
	}
	logf("N=%d: pods turning unready", n)
	if err := f.measureUnready(ctx, &res); err != nil {
		return res, err
	}
	logf("N=%d: spec change of every cluster", n)
	if err := f.measureRoll(ctx, &res); err != nil {
		return res, err
	}
	if u, err := readProc(f.mgr.pid()); err == nil {
		res.hwmEnd = u.hwm
	}
	return res, nil
}

// startCache watches the fleet's StatefulSets and ConfigMaps: the bench
// creates pods for a StatefulSet that appears, and times the operator's
// changes by the watch events, as any other client would see them.
// The cache stops when the returned function is called, before the control
// plane does.
func (f *fleet) startCache(ctx context.Context) (func(), error) {
	c, err := cache.New(f.cfg, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{namespace: {}}})
	if err != nil {
		return nil, fmt.Errorf("creating the cache: %w", err)
	}
	f.cache = c
	ctx, cancel := context.WithCancel(ctx)
	if err := f.watch(ctx, c); err != nil {
		cancel()
		return nil, err
	}
	return cancel, nil
}

func (f *fleet) watch(ctx context.Context, c cache.Cache) error {
	cms, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		return err
	}
	if _, err := cms.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { f.configMapSeen(obj) },
		UpdateFunc: func(_, obj any) { f.configMapSeen(obj) },
	}); err != nil {
		return err
	}
	sts, err := c.GetInformer(ctx, &appsv1.StatefulSet{})
	if err != nil {
		return err
	}
	if _, err := sts.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { f.statefulSetSeen(obj) },
	}); err != nil {
		return err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return errors.New("the bench's cache did not sync")
	}
	return nil
}

// configMapSeen completes an unready pod's wait when its cluster's IP list
// no longer names it.
func (f *fleet) configMapSeen(obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.unready[cm.Name]
	if p == nil || p.done || slices.Contains(strings.Split(cm.Data[v1alpha1.NamesrvAddrIPsKey], ";"), p.what) {
		return
	}
	p.done = true
	f.removals = append(f.removals, time.Since(p.since))
}

// statefulSetSeen completes a roll's wait when the pod template mounts
// another config ConfigMap: the operator has rendered the new spec.config.
func (f *fleet) statefulSetSeen(obj any) {
	s, ok := obj.(*appsv1.StatefulSet)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.rolls[s.Name]
	if p == nil || p.done || templateConfig(s) == p.what {
		return
	}
	p.done = true
	f.rolled = append(f.rolled, time.Since(p.since))
	f.lastRoll = time.Now()
}

// templateConfig is the config ConfigMap a StatefulSet's pods mount.
func templateConfig(s *appsv1.StatefulSet) string {
	for _, v := range s.Spec.Template.Spec.Volumes {
		if v.Name == render.ConfigVolume && v.ConfigMap != nil {
			return v.ConfigMap.Name
		}
	}
	return ""
}

func clusterName(i int) string { return fmt.Sprintf("nsc-%04d", i) }

// create creates the namespace and the clusters, and plays the StatefulSet
// controller and the kubelet for each StatefulSet the operator creates.
func (f *fleet) create(ctx context.Context) error {
	if err := f.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	for i := range f.n {
		f.names = append(f.names, clusterName(i))
	}
	return parallel(ctx, f.n, f.o.workers, func(ctx context.Context, i int) error {
		c := &v1alpha1.NameServerCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: f.names[i]},
			Spec: v1alpha1.NameServerClusterSpec{
				Replicas:               ptr.To(int32(f.o.replicas)),
				Ports:                  v1alpha1.Ports{Remoting: 9876, HTTP: f.peers.port},
				BrokerHeartbeatSeconds: ptr.To(int32(f.o.round / time.Second)),
			},
		}
		if err := f.k8s.Create(ctx, c); err != nil {
			return fmt.Errorf("creating cluster %s: %w", c.Name, err)
		}
		for ordinal := range f.o.replicas {
			if err := f.peers.add(podIP(i, ordinal, f.o.replicas), c.Name, f.o.brokers); err != nil {
				return err
			}
		}
		return f.playStatefulSet(ctx, i)
	})
}

// playStatefulSet waits for cluster i's StatefulSet, creates its pods from
// its template, ready at their loopback IPs, and writes the status the
// StatefulSet controller would.
func (f *fleet) playStatefulSet(ctx context.Context, i int) error {
	name := f.names[i]
	sts := &appsv1.StatefulSet{}
	if err := poll(ctx, f.o.phaseTimeout, func() error {
		return f.cache.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, sts)
	}); err != nil {
		return fmt.Errorf("waiting for StatefulSet %s: %w", name, err)
	}
	for ordinal := range f.o.replicas {
		podName := fmt.Sprintf("%s-%d", name, ordinal)
		labels := maps.Clone(sts.Spec.Template.Labels)
		labels[appsv1.ControllerRevisionHashLabelKey] = revision
		labels[appsv1.StatefulSetPodNameLabel] = podName
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: namespace, Name: podName, Labels: labels,
				Annotations: maps.Clone(sts.Spec.Template.Annotations),
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name, UID: sts.UID,
					Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
				}},
			},
			Spec: *sts.Spec.Template.Spec.DeepCopy(),
		}
		pod.Spec.Hostname, pod.Spec.Subdomain = podName, sts.Spec.ServiceName
		if err := f.k8s.Create(ctx, pod); err != nil {
			return fmt.Errorf("creating pod %s: %w", podName, err)
		}
		ip := podIP(i, ordinal, f.o.replicas)
		pod.Status = corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, HostIP: "127.0.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}},
		}
		if err := f.k8s.Status().Update(ctx, pod); err != nil {
			return fmt.Errorf("making pod %s ready: %w", podName, err)
		}
	}
	return retryConflict(ctx, func() error {
		if err := f.k8s.Get(ctx, client.ObjectKeyFromObject(sts), sts); err != nil {
			return err
		}
		r := int32(f.o.replicas)
		sts.Status = appsv1.StatefulSetStatus{
			ObservedGeneration: sts.Generation, Replicas: r, ReadyReplicas: r, AvailableReplicas: r,
			CurrentReplicas: r, UpdatedReplicas: r, CurrentRevision: revision, UpdateRevision: revision,
		}
		return f.k8s.Status().Update(ctx, sts)
	})
}

// settle waits until every cluster's client lists, by name and by IP, name
// all its peers.
func (f *fleet) settle(ctx context.Context) error {
	return poll(ctx, f.o.phaseTimeout, func() error {
		missing := 0
		for _, name := range f.names {
			names, ips := &corev1.ConfigMap{}, &corev1.ConfigMap{}
			if f.cache.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name + "-namesrv-addr"}, names) != nil ||
				f.cache.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ipsList(name)}, ips) != nil ||
				listed(names.Data[v1alpha1.NamesrvAddrKey]) != f.o.replicas || listed(ips.Data[v1alpha1.NamesrvAddrIPsKey]) != f.o.replicas {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d clusters do not publish all %d peers yet", missing, f.n, f.o.replicas)
		}
		return nil
	})
}

// ipsList is the ConfigMap of a cluster's client list by pod IP.
func ipsList(cluster string) string { return cluster + "-namesrv-addr" + v1alpha1.IPsConfigMapSuffix }

// listed counts the addresses of a namesrvAddr list.
func listed(list string) int {
	if list == "" {
		return 0
	}
	return strings.Count(list, ";") + 1
}

// steady measures the manager's API requests, its CPU and memory, and the
// peer reads over a window in which nothing changes.
func (f *fleet) steady(ctx context.Context, res *result) error {
	before, err := f.snapshot(ctx)
	if err != nil {
		return err
	}
	if err := sleep(ctx, f.o.window); err != nil {
		return err
	}
	after, err := f.snapshot(ctx)
	if err != nil {
		return err
	}
	elapsed := after.proc.at.Sub(before.proc.at)
	perMin := func(d float64) float64 { return d * float64(time.Minute) / float64(elapsed) }
	res.elapsed = elapsed
	res.requests = map[string]float64{}
	for method, d := range delta(before.requests, after.requests) {
		res.requests[method] = perMin(d)
	}
	res.failed = perMin(after.failed - before.failed)
	res.serverGets = map[string]float64{}
	for resource, d := range delta(before.serverGets, after.serverGets) {
		res.serverGets[resource] = perMin(d)
	}
	res.summaries = perMin(after.summaries - before.summaries)
	res.cpu = float64(after.proc.cpu-before.proc.cpu) / float64(elapsed)
	res.rss, res.hwm = after.proc.rss, after.proc.hwm
	return nil
}

// snapshot is what the steady window compares.
type snapshot struct {
	requests   map[string]float64 // the manager's by HTTP method
	failed     float64            // the manager's answered with a code other than 2xx
	serverGets map[string]float64 // the API server's single-object GETs by resource
	summaries  float64
	proc       procUsage
}

func (f *fleet) snapshot(ctx context.Context) (snapshot, error) {
	var s snapshot
	samples, err := scrape(ctx, httpClient, f.mgr.metrics, "rest_client_requests_total")
	if err != nil {
		return s, err
	}
	if len(samples) == 0 {
		return s, errors.New("the manager's /metrics has no rest_client_requests_total")
	}
	s.requests = counts(samples, "method", nil)
	for _, v := range counts(samples, "code", func(l map[string]string) bool { return !strings.HasPrefix(l["code"], "2") }) {
		s.failed += v
	}
	dc, err := discovery.NewDiscoveryClientForConfig(f.cfg)
	if err != nil {
		return s, err
	}
	raw, err := dc.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return s, fmt.Errorf("scraping the API server's /metrics: %w", err)
	}
	server, err := parseSamples(strings.NewReader(string(raw)), "apiserver_request_total")
	if err != nil {
		return s, err
	}
	s.serverGets = counts(server, "resource", func(l map[string]string) bool {
		return l["verb"] == "GET" && operatorResources[l["resource"]]
	})
	s.summaries = float64(f.peers.summaries.Load())
	s.proc, err = readProc(f.mgr.pid())
	return s, err
}

// operatorResources are the resources the operator reads; the API server's
// own loops read others (leases, endpoints) and count there too.
var operatorResources = map[string]bool{
	"nameserverclusters": true, "statefulsets": true, "pods": true, "configmaps": true, "secrets": true,
	"services": true, "poddisruptionbudgets": true, "namespaces": true, "events": true,
}

// measureUnready turns the last pod of up to o.unready clusters unready,
// spread over o.unreadySpread, and times each until its cluster's client
// list by IP no longer names it. (The list by name keeps it: its name is
// stable, and its route gate turns clients away while it restarts.)
func (f *fleet) measureUnready(ctx context.Context, res *result) error {
	count := min(f.o.unready, f.n)
	ordinal := f.o.replicas - 1
	start := time.Now()
	err := parallel(ctx, count, f.o.workers, func(ctx context.Context, i int) error {
		if count > 1 {
			if err := sleep(ctx, time.Until(start.Add(f.o.unreadySpread*time.Duration(i)/time.Duration(count-1)))); err != nil {
				return err
			}
		}
		name := f.names[i]
		pod := &corev1.Pod{}
		key := client.ObjectKey{Namespace: namespace, Name: fmt.Sprintf("%s-%d", name, ordinal)}
		return retryConflict(ctx, func() error {
			if err := f.k8s.Get(ctx, key, pod); err != nil {
				return err
			}
			for j := range pod.Status.Conditions {
				if pod.Status.Conditions[j].Type == corev1.PodReady {
					pod.Status.Conditions[j].Status = corev1.ConditionFalse
					pod.Status.Conditions[j].LastTransitionTime = metav1.Now()
				}
			}
			f.mu.Lock()
			f.unready[ipsList(name)] = &pending{since: time.Now(), what: net.JoinHostPort(pod.Status.PodIP, "9876")}
			f.mu.Unlock()
			return f.k8s.Status().Update(ctx, pod)
		})
	})
	if err != nil {
		return fmt.Errorf("turning pods unready: %w", err)
	}
	err = poll(ctx, f.o.phaseTimeout, func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.removals) < count {
			return fmt.Errorf("%d of %d unready pods still listed", count-len(f.removals), count)
		}
		return nil
	})
	f.mu.Lock()
	res.removal = summarize(f.removals)
	f.mu.Unlock()
	res.removalCount = count
	return err
}

// measureRoll changes spec.config of every cluster, as fast as the bench
// can send the patches, and times each until its StatefulSet's pod
// template mounts the new config; the span is from the first patch to the
// last template.
func (f *fleet) measureRoll(ctx context.Context, res *result) error {
	for _, name := range f.names {
		sts := &appsv1.StatefulSet{}
		if err := f.cache.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, sts); err != nil {
			return err
		}
		f.rolls[name] = &pending{what: templateConfig(sts)}
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"config":{"`+rollKey+`":"true"}}}`))
	start := time.Now()
	err := parallel(ctx, f.n, f.o.workers, func(ctx context.Context, i int) error {
		f.mu.Lock()
		f.rolls[f.names[i]].since = time.Now()
		f.mu.Unlock()
		c := &v1alpha1.NameServerCluster{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: f.names[i]}}
		if err := f.k8s.Patch(ctx, c, patch); err != nil {
			return fmt.Errorf("changing spec.config of %s: %w", c.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = poll(ctx, f.o.phaseTimeout, func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.rolled) < f.n {
			return fmt.Errorf("%d of %d StatefulSets still have the old template", f.n-len(f.rolled), f.n)
		}
		return nil
	})
	f.mu.Lock()
	res.roll = summarize(f.rolled)
	if len(f.rolled) > 0 {
		res.rollSpan = f.lastRoll.Sub(start)
	}
	f.mu.Unlock()
	return err
}

// parallel runs do for 0..n-1 on workers goroutines and returns the first
// error, which also cancels the rest.
func parallel(ctx context.Context, n, workers int, do func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(1, min(workers, n)) {
		wg.Go(func() {
			for i := range next {
				if err := do(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// retryConflict retries a read-modify-write that lost a race.
func retryConflict(ctx context.Context, do func() error) error {
	for {
		err := do()
		if !apierrors.IsConflict(err) {
			return err
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// summary is a latency distribution.
type summary struct {
	n               int
	p50, p99, worst time.Duration
}

func summarize(d []time.Duration) summary {
	if len(d) == 0 {
		return summary{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(q float64) time.Duration {
		i := int(q*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return summary{n: len(s), p50: at(0.5), p99: at(0.99), worst: s[len(s)-1]}
}
