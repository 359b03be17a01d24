package controllers

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/peerclient"
	"github.com/kube-namesrv/kube-namesrv/controllers/publish"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/controllers/routecheck"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// The simulated world of TestSimulation: what the API server holds (the
// cluster, the StatefulSet, the pods, the ConfigMaps), the StatefulSet
// controller and the kubelet, and a NameServer per pod, reduced to what the
// operator reads of it: its gate, the brokers it holds, and its declared-KV
// file. The operator's passes run against it through simActor, which
// carries out the same acts the reconciler's apiActor does.

// simTarget is the namespace of the publish target the simulation may use.
const simTarget = "apps"

// simWorld is the world; one per history.
type simWorld struct {
	rng     *rand.Rand
	now     time.Time
	tracing bool
	trace   []string

	c    *v1alpha1.NameServerCluster
	rv   int64
	sts  *simSTS
	pods map[int32]*simPod
	// configs are the config ConfigMaps: the checksum of the properties
	// each holds, by name.
	configs map[string]string
	// cms are the address ConfigMaps, in every namespace, and the digests
	// of their data.
	cms       map[types.NamespacedName]map[string]string
	cmDigests map[types.NamespacedName]string
	// namedCache is named(), until a list changes.
	namedCache map[string]bool
	kvFile     string
	ext        map[int32]bool
	// svc are the client Service's ports: remoting ones, and HTTP ones.
	svcRemoting, svcHTTP map[int32]bool
	// target says whether the target namespace exists and opted in.
	targetExists, targetAccepts bool
	brokers                     []peerstatus.Broker
	nextIP, nextBoot            int

	// refused are the writes the API server refuses now: "status",
	// "statefulset", a namespace (its address ConfigMaps) or one address
	// ConfigMap (<namespace>/<name>).
	refused map[string]bool
	// crashAt makes the next pass stop before its write of that number, as
	// a manager killed half-way does; -1 when none.
	crashAt int
	// routeLag and kvLag stretch how long the next peers take to hold the
	// brokers and the declared-KV file.
	routeLag, kvLag bool

	// templates caches what the spec renders, by generation.
	templates map[string]string
	// dropped is when each address left the last client list that named it.
	dropped map[string]time.Time
	// violations are the invariants broken so far.
	violations []string
}

// simSTS is the StatefulSet: its spec as the operator applied it, and what
// its controller observed.
type simSTS struct {
	replicas             int32
	template             string
	configMap            string
	remoting, http       int32
	extra                []int32
	generation, observed int64
	updateRevision       string
	// observedConfigMap is the config ConfigMap of the template its
	// controller observed: the one new pods mount; observedConfig the
	// checksum of that template's properties.
	observedConfigMap, observedConfig string
	config                            string
}

// simPod is a pod and the NameServer in it.
type simPod struct {
	revision  string
	configMap string
	// config is the checksum of the properties of its template.
	config         string
	ip             string
	remoting, http int32
	extra          []int32
	terminating    bool
	goneAt         time.Time
	// stuck pods run on a dead node: unreachable, and their deletion
	// hangs until the node is given up on.
	stuck    bool
	notReady bool
	restarts int32

	bootID  string
	started time.Time
	// gate: open, and the latest request.
	gateOpen bool
	gateReq  *peerstatus.GateRequest
	// brokersAt is when it holds every live broker.
	brokersAt time.Time
	// kv is the digest of the declared-KV file it read; kvNext replaces it
	// at kvAt (the kubelet's refresh of a mounted ConfigMap).
	kv, kvNext string
	kvAt       time.Time
	// kvMissing: a declared key was deleted by hand.
	kvMissing bool
}

func newSimWorld(seed uint64, tracing bool) *simWorld {
	w := &simWorld{
		tracing:     tracing,
		rng:         rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		now:         time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC),
		pods:        map[int32]*simPod{},
		configs:     map[string]string{},
		svcRemoting: map[int32]bool{}, svcHTTP: map[int32]bool{},
		cms:       map[types.NamespacedName]map[string]string{},
		cmDigests: map[types.NamespacedName]string{},
		ext:       map[int32]bool{},
		refused:   map[string]bool{},
		dropped:   map[string]time.Time{},
		crashAt:   -1,
	}
	w.c = &v1alpha1.NameServerCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "mq", Name: "ns1", UID: "uid-ns1", Generation: 1},
		Spec: v1alpha1.NameServerClusterSpec{
			Replicas: ptr.To(int32(1 + w.rng.IntN(4))),
			Ports:    v1alpha1.Ports{Remoting: 9876, HTTP: 8080},
			Publish:  v1alpha1.PublishSpec{DrainSeconds: ptr.To[int32](60)},
			// A short broker round keeps the histories short; the operator
			// paces everything by it.
			BrokerHeartbeatSeconds: ptr.To[int32](10),
		},
	}
	for i := range 2 {
		w.brokers = append(w.brokers, peerstatus.Broker{BrokerKey: peerstatus.BrokerKey{Cluster: "c", Addr: fmt.Sprintf("10.9.0.%d:10911", i)}, BrokerName: fmt.Sprint("b", i)})
	}
	return w
}

// logf adds to the trace, which only a replay of one history keeps: a
// failure in a batch is replayed to show it.
func (w *simWorld) logf(format string, args ...any) {
	if w.tracing {
		w.trace = append(w.trace, w.now.Format("15:04:05")+" "+fmt.Sprintf(format, args...))
	}
}

func (w *simWorld) violate(invariant, format string, args ...any) {
	w.violations = append(w.violations, invariant+": "+fmt.Sprintf(format, args...))
	w.logf("VIOLATION %s", w.violations[len(w.violations)-1])
}

func (w *simWorld) round() time.Duration { return render.BrokerRound(w.c) }

func (w *simWorld) drain() time.Duration {
	return time.Duration(ptr.Deref(w.c.Spec.Publish.DrainSeconds, 0)) * time.Second
}

// changeSpec applies a spec change as the API server does: a new generation.
func (w *simWorld) changeSpec(what string, edit func(*v1alpha1.NameServerClusterSpec)) {
	edit(&w.c.Spec)
	w.c.Generation++
	w.rv++
	w.logf("spec: %s", what)
}

// ready tells whether a pod answers: its gate is open and nothing keeps its
// readiness probe from passing.
func (p *simPod) ready() bool {
	return p != nil && !p.terminating && !p.notReady && !p.stuck && p.gateOpen
}

// holds are the brokers a peer holds now.
func (w *simWorld) holds(p *simPod) []peerstatus.Broker {
	if w.now.Before(p.brokersAt) {
		return nil
	}
	return w.brokers
}

// summary is what a peer reports of itself.
func (w *simWorld) summary(p *simPod) *peerstatus.Summary {
	s := &peerstatus.Summary{BootID: p.bootID, StartTime: p.started, Gate: peerstatus.Gate{Enabled: true, Open: p.gateOpen}}
	for _, b := range w.holds(p) {
		b.RegisteredAt = p.brokersAt
		s.Brokers = append(s.Brokers, b)
	}
	s.KV = &peerstatus.KVStatus{Digest: p.kv, InSync: !p.kvMissing, Policy: string(render.KVConfigPolicy(w.c))}
	if p.kvMissing {
		s.KV.Drift = []peerstatus.KVDrift{{Namespace: "ORDER_TOPIC_CONFIG", Key: "T0", Reason: peerstatus.DriftMissing}}
	}
	return s
}

// evaluateGate opens a peer's gate once the latest request is satisfied, or
// its timeout (two broker rounds and 15 s) has passed.
func (w *simWorld) evaluateGate(p *simPod) {
	if p.gateOpen {
		return
	}
	timeout := 2*w.round() + 15*time.Second
	if !w.now.Before(p.started.Add(timeout)) {
		p.gateOpen = true
		return
	}
	if r := p.gateReq; r != nil {
		held := map[peerstatus.BrokerKey]bool{}
		for _, b := range w.holds(p) {
			held[b.BrokerKey] = true
		}
		all := true
		for _, k := range r.Expect {
			all = all && held[k]
		}
		waited := r.WaitSeconds > 0 && !w.now.Before(p.started.Add(time.Duration(r.WaitSeconds)*time.Second))
		switch {
		case len(r.Expect) > 0 && all, waited:
			p.gateOpen = true
		case r.WaitSeconds == 0 && all:
			w.checkGate(p)
			p.gateOpen = true
		}
	}
}

// startPeer (re)starts the NameServer in a pod: a new process with an
// empty route table and a closed gate, which reads the declared-KV file
// the kubelet mounted.
func (w *simWorld) startPeer(p *simPod) {
	w.nextBoot++
	p.bootID = fmt.Sprint("boot-", w.nextBoot)
	p.started = w.now
	p.gateOpen, p.gateReq = false, nil
	lag := time.Duration(w.rng.Int64N(int64(w.round())))
	if w.routeLag {
		// Long enough, at times, for the gate to open by its timeout with
		// brokers missing.
		lag += time.Duration(2+w.rng.IntN(4)) * w.round()
	}
	p.brokersAt = w.now.Add(lag)
	p.kvMissing = false
}

// template identifies a pod template: what the StatefulSet renders from the
// spec that the simulation changes.
func simTemplate(c *v1alpha1.NameServerCluster, opts render.Options, extra []int32) string {
	return fmt.Sprintf("%s|%s|%d|%d|%v", render.Image(c, opts), render.ConfigChecksum(c), c.Spec.Ports.Remoting, c.Spec.Ports.HTTP, extra)
}

// configMapName and configSum are render.ConfigMapName and
// render.ConfigChecksum, remembered for the spec's generation.
func (w *simWorld) configMapName(c *v1alpha1.NameServerCluster) string {
	return w.remember("config "+strconv.FormatInt(c.Generation, 10), func() string { return render.ConfigMapName(c) })
}

func (w *simWorld) configSum(c *v1alpha1.NameServerCluster) string {
	return w.remember("sum "+strconv.FormatInt(c.Generation, 10), func() string { return render.ConfigChecksum(c) })
}

// configRefused tells whether the NameServer would refuse spec.config.
func (w *simWorld) configRefused(c *v1alpha1.NameServerCluster) bool {
	return w.remember("valid "+strconv.FormatInt(c.Generation, 10), func() string { return fmt.Sprint(render.ValidateConfig(c)) }) != "<nil>"
}

// remember caches what a spec renders, by key.
func (w *simWorld) remember(key string, render func() string) string {
	if w.templates == nil || len(w.templates) > 64 {
		w.templates = map[string]string{}
	}
	if v, ok := w.templates[key]; ok {
		return v
	}
	w.templates[key] = render()
	return w.templates[key]
}

// template is simTemplate, remembered for the spec's generation.
func (w *simWorld) template(c *v1alpha1.NameServerCluster, opts render.Options, extra []int32) string {
	key := strconv.FormatInt(c.Generation, 10) + " " + opts.DefaultImage
	for _, p := range extra {
		key += " " + strconv.Itoa(int(p))
	}
	return w.remember(key, func() string { return simTemplate(c, opts, extra) })
}

// step advances the world by dt: the StatefulSet controller, the kubelet,
// the NameServers.
func (w *simWorld) step(dt time.Duration) {
	w.now = w.now.Add(dt)
	s := w.sts
	if s != nil && s.observed < s.generation && w.rng.IntN(3) > 0 {
		s.observed, s.updateRevision, s.observedConfigMap, s.observedConfig = s.generation, s.template, s.configMap, s.config
	}
	for _, ordinal := range sortedKeys(w.pods) {
		p := w.pods[ordinal]
		if p.terminating && !p.stuck && !w.now.Before(p.goneAt) {
			delete(w.pods, ordinal)
			w.logf("pod %d gone", ordinal)
		}
	}
	if s != nil && s.observed == s.generation {
		for _, ordinal := range sortedKeys(w.pods) {
			if p := w.pods[ordinal]; ordinal >= s.replicas && !p.terminating {
				w.checkRemoval(ordinal, p)
				w.terminate(ordinal, p)
				w.logf("statefulset controller deletes pod %d", ordinal)
			}
		}
		for ordinal := range s.replicas {
			if _, ok := w.pods[ordinal]; !ok {
				w.createPod(ordinal)
			}
		}
	}
	for _, ordinal := range sortedKeys(w.pods) {
		p := w.pods[ordinal]
		if p.kvNext != "" && !w.now.Before(p.kvAt) {
			p.kv, p.kvNext = p.kvNext, ""
		}
		w.evaluateGate(p)
	}
}

// createPod is the StatefulSet controller creating a pod from its current
// template, and the kubelet starting it.
func (w *simWorld) createPod(ordinal int32) {
	s := w.sts
	w.nextIP++
	p := &simPod{revision: s.updateRevision, configMap: s.observedConfigMap, config: s.observedConfig, ip: fmt.Sprintf("10.0.%d.%d", w.nextIP/250, w.nextIP%250),
		remoting: s.remoting, http: s.http, extra: slices.Clone(s.extra), kv: digestOf(w.kvFile)}
	w.checkPorts(ordinal, p)
	w.checkConfig(ordinal, p)
	w.startPeer(p)
	w.pods[ordinal] = p
	w.logf("pod %d created at %s (ports %d %v)", ordinal, shortRev(p.revision), p.remoting, p.extra)
}

// terminate deletes a pod: it terminates for a few seconds, or hangs on a
// dead node.
func (w *simWorld) terminate(ordinal int32, p *simPod) {
	p.terminating = true
	p.goneAt = w.now.Add(time.Duration(1+w.rng.IntN(8)) * time.Second)
}

func shortRev(rev string) string {
	if i := strings.LastIndexByte(rev, '|'); i > 0 && len(rev) > 24 {
		return rev[:24] + "…"
	}
	return rev
}

func digestOf(file string) string {
	if file == "" {
		return ""
	}
	return peerstatus.Digest([]byte(file))
}

// simManager is one operator: a reconciler and its memory of the peers.
type simManager struct {
	r     *NameServerClusterReconciler
	state *peerclient.Cluster
}

// The two operator installs of the simulation, of two versions: their
// default NameServer images, hence their templates, differ.
var simInstalls = map[string]string{"ops/kube-namesrv": "namesrv:v1", "other/kube-namesrv": "namesrv:v9"}

// newSimManager is a (re)started operator install.
func newSimManager(identity string) *simManager {
	return &simManager{
		r: &NameServerClusterReconciler{Render: render.Options{ClusterDomain: "cluster.local", DefaultImage: simInstalls[identity]},
			Identity: identity},
		state: &peerclient.Cluster{Peers: map[int32]routecheck.Observation{}},
	}
}

// owner is the manager the status names, even uninstalled (a cluster at
// rest stays as its manager left it), else the first one running.
func (w *simWorld) owner(managers []*simManager) *simManager {
	if m := w.c.Status.Manager; m != nil && simInstalls[m.Identity] != "" {
		return newSimManager(m.Identity)
	}
	return managers[0]
}

// observe is what the manager's observe would read of the world.
func (w *simWorld) observe(m *simManager) *observed {
	o := &observed{now: w.now, round: w.round(), peers: map[int32]publish.Peer{}, external: map[int32]*corev1.Service{},
		state: m.state, namespaces: map[string]*corev1.Namespace{}}
	if s := w.sts; s != nil {
		args := []string{"--listen-port=" + strconv.Itoa(int(s.remoting))}
		if len(s.extra) > 0 {
			var ports []string
			for _, p := range s.extra {
				ports = append(ports, strconv.Itoa(int(p)))
			}
			args = append(args, "--extra-listen-ports="+strings.Join(ports, ","))
		}
		o.sts = &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Generation: s.generation},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(s.replicas), Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Args: args}}, Volumes: []corev1.Volume{{Name: render.ConfigVolume,
					VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: s.configMap}}}}}}}},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: s.observed, UpdateRevision: s.updateRevision},
		}
	}
	for ordinal, p := range w.pods {
		o.peers[ordinal] = publish.Peer{Terminating: p.terminating, Ready: p.ready(), IP: p.ip, Revision: p.revision,
			RemotingPort: p.remoting, HTTPPort: p.http, Restarts: p.restarts, ConfigMap: p.configMap}
	}
	// The observer reads the peers when they are due: at once for pods
	// that changed, else once per round or at the confirmation time. In
	// between, a pass goes on from its latest read, however the peers
	// moved since.
	o.fingerprint = publish.Fingerprint(o.peers)
	if due, _ := m.state.Due(w.now, o.round, o.fingerprint); !due {
		w.observeRest(o)
		return o
	}
	m.state.LastRead, m.state.Fingerprint, m.state.ConfirmAt = w.now, o.fingerprint, time.Time{}
	m.state.Peers = map[int32]routecheck.Observation{}
	for ordinal, p := range w.pods {
		if p.terminating {
			continue
		}
		obs := routecheck.Observation{ReadAt: w.now}
		if p.stuck {
			obs.Err = "dial tcp " + p.ip + ": i/o timeout"
		} else {
			obs.Summary = w.summary(p)
		}
		m.state.Peers[ordinal] = obs
	}
	w.observeRest(o)
	return o
}

// observeRest is what observe reads of the API server's objects.
func (w *simWorld) observeRest(o *observed) {
	for ordinal := range w.ext {
		o.external[ordinal] = &corev1.Service{}
	}
	o.clientService = &corev1.Service{}
	for _, p := range slices.Sorted(maps.Keys(w.svcRemoting)) {
		o.clientService.Spec.Ports = append(o.clientService.Spec.Ports, corev1.ServicePort{Name: fmt.Sprint("remoting-", p), Port: p})
	}
	for _, p := range slices.Sorted(maps.Keys(w.svcHTTP)) {
		o.clientService.Spec.Ports = append(o.clientService.Spec.Ports, corev1.ServicePort{Name: fmt.Sprint("http-", p), Port: p})
	}
	if w.targetExists {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: simTarget}}
		if w.targetAccepts {
			ns.Annotations = map[string]string{v1alpha1.AnnotationAcceptPublishFrom: "mq/*"}
		}
		o.namespaces[simTarget] = ns
	}
	o.listDigests = map[types.NamespacedName]string{}
	for key := range w.cms {
		o.addressConfigMaps = append(o.addressConfigMaps, key)
		o.listDigests[key] = w.cmDigests[key]
	}
	for name := range w.configs {
		o.configMaps = append(o.configMaps, name)
	}
	slices.Sort(o.configMaps)
	slices.SortFunc(o.addressConfigMaps, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
}

// read is the cluster as a manager reads it: a copy, with the
// resourceVersion its status write is checked against. A pass never writes
// the spec, so the copy shares it.
func (w *simWorld) read() *v1alpha1.NameServerCluster {
	c := &v1alpha1.NameServerCluster{TypeMeta: w.c.TypeMeta, ObjectMeta: w.c.ObjectMeta, Spec: w.c.Spec}
	c.Status = *w.c.Status.DeepCopy()
	c.ResourceVersion = strconv.FormatInt(w.rv, 10)
	return c
}

// errSim* are the failures the simulated API server and peers answer.
var (
	errSimConflict = errors.New("the object has been modified")
	errSimRefused  = errors.New("admission webhook denied the request")
	errSimCrash    = errors.New("the manager stopped half-way")
	errSimPeer     = errors.New("connection refused")
)

// simActor carries out a pass of one manager against the world.
type simActor struct {
	w *simWorld
	m *simManager
	// writes counts the writes so far, for a crash; restarted are the pods
	// the pass restarted.
	writes    int
	restarted []int32
}

var _ actor = (*simActor)(nil)

func (a *simActor) peer(ordinal int32) (*simPod, error) {
	p := a.w.pods[ordinal]
	if p == nil || p.terminating || p.stuck {
		return nil, errSimPeer
	}
	return p, nil
}

func (a *simActor) applyKV(_ *v1alpha1.NameServerCluster, ordinal int32, _ publish.Peer) (*peerstatus.KVStatus, error) {
	p, err := a.peer(ordinal)
	if err != nil {
		return nil, err
	}
	p.kvMissing = false
	a.w.logf("pod %d applies its declared KV file", ordinal)
	return a.w.summary(p).KV, nil
}

func (a *simActor) openGate(_ *v1alpha1.NameServerCluster, ordinal int32, _ publish.Peer, req peerstatus.GateRequest) (*peerstatus.Summary, error) {
	p, err := a.peer(ordinal)
	if err != nil {
		return nil, err
	}
	p.gateReq = &req
	a.w.evaluateGate(p)
	return a.w.summary(p), nil
}

func (a *simActor) writeStatus(c *v1alpha1.NameServerCluster, st v1alpha1.NameServerClusterStatus) error {
	w := a.w
	if err := a.crash(); err != nil {
		return err
	}
	switch {
	case c.ResourceVersion != strconv.FormatInt(w.rv, 10):
		return errSimConflict
	case w.refused["status"]:
		return errSimRefused
	}
	w.rv++
	w.c.Status = *st.DeepCopy()
	w.logf("status: published %v, drain %v", publishedOrdinals(w.c), st.DrainStartTime)
	c.Status = st
	c.ResourceVersion = strconv.FormatInt(w.rv, 10)
	return nil
}

// crash stops the pass when the crash point is reached.
func (a *simActor) crash() error {
	a.writes++
	if a.w.crashAt >= 0 && a.writes >= a.w.crashAt {
		a.w.crashAt = -1
		a.w.logf("the manager stops half-way")
		return errSimCrash
	}
	return nil
}

func (a *simActor) write(c *v1alpha1.NameServerCluster, d *decision, wr write) (outcome, error) {
	w := a.w
	if err := a.crash(); err != nil {
		return outcome{}, err
	}
	w.checkOneManager(a.m, "writes", wr)
	refuse := func(what string) (outcome, error) {
		return outcome{problem: &problem{Reason: v1alpha1.RefusalAPIServer, Message: "refused " + what, Retry: true, Addresses: wr.kind == writeAddresses}}, nil
	}
	if w.configRefused(c) {
		w.violate(invRefusal, "a pass whose spec.config is refused writes %v", wr)
	}
	switch wr.kind {
	case writeConfig:
		w.configs[w.configMapName(c)] = w.configSum(c)
	case deleteConfig:
		w.checkConfigDeletion(wr.name)
		delete(w.configs, wr.name)
		w.logf("config ConfigMap %s deleted", wr.name)
	case writeKVConfig:
		if file := string(d.kvFile); file != w.kvFile {
			w.kvFile = file
			// In ordinal order: each pod draws its lag from the history's
			// random source, which a map's order would make unreplayable.
			for _, ordinal := range sortedKeys(w.pods) {
				p := w.pods[ordinal]
				// The kubelet refreshes a mounted ConfigMap within 60-90 s.
				lag := time.Duration(5+w.rng.IntN(85)) * time.Second
				if w.kvLag {
					lag += 2 * time.Minute
				}
				p.kvNext, p.kvAt = digestOf(file), w.now.Add(lag)
			}
		}
	case writeClientService:
		w.applyClientService(c, d)
	case writeExternalService:
		w.ext[wr.ordinal] = true
	case deleteExternalService:
		delete(w.ext, wr.ordinal)
	case writeAddresses:
		if w.refused[wr.dest.namespace] || w.refused[wr.dest.namespace+"/"+wr.dest.configMapName(wr.list)] {
			return refuse("ConfigMap " + wr.dest.namespace + "/" + wr.dest.configMapName(wr.list))
		}
		w.writeConfigMap(types.NamespacedName{Namespace: wr.dest.namespace, Name: wr.dest.configMapName(wr.list)}, d.listData[wr.list])
	case deleteAddressCopy:
		w.writeConfigMap(wr.copy, nil)
	case writeStatefulSet:
		if w.refused["statefulset"] {
			return refuse("StatefulSet")
		}
		return outcome{sts: w.applyStatefulSet(c, a.opts(), d)}, nil
	}
	return outcome{}, nil
}

// opts is the render options of the manager whose pass this is.
func (a *simActor) opts() render.Options { return a.m.r.Render }

// writeConfigMap writes (nil data: deletes) an address ConfigMap, and
// remembers when an address left the last client list that named it, and
// an address server domain the last list that named it.
func (w *simWorld) writeConfigMap(key types.NamespacedName, data map[string]string) {
	if data == nil {
		delete(w.cmDigests, key)
	} else {
		w.cmDigests[key] = render.DataDigest(data)
	}
	old, had := w.cms[key]
	if had == (data != nil) && maps.Equal(old, data) || strings.HasSuffix(key.Name, v1alpha1.IPsConfigMapSuffix) {
		if data == nil {
			delete(w.cms, key)
		} else {
			w.cms[key] = data
		}
		return
	}
	before := w.named()
	if data == nil {
		delete(w.cms, key)
	} else {
		w.cms[key] = data
	}
	w.namedCache = nil
	after := w.named()
	for name := range before {
		if !after[name] {
			w.dropped[name] = w.now
		}
	}
	w.logf("list %s: %s", key, data[v1alpha1.NamesrvAddrKey])
}

// domainPrefix marks an address server domain among the names of named.
const domainPrefix = "domain "

// named are the addresses some client list names now, and the address
// server domains (prefixed by domainPrefix) some list names.
func (w *simWorld) named() map[string]bool {
	if w.namedCache != nil {
		return maps.Clone(w.namedCache)
	}
	out := map[string]bool{}
	for key, data := range w.cms {
		if strings.HasSuffix(key.Name, v1alpha1.IPsConfigMapSuffix) {
			continue
		}
		for _, k := range []string{v1alpha1.ClientAddressServerDomainKey, v1alpha1.AddressServerDomainKey} {
			if data[k] != "" {
				out[domainPrefix+data[k]] = true
			}
		}
		if strings.HasSuffix(key.Name, v1alpha1.BrokerConfigMapSuffix) {
			continue
		}
		for _, a := range strings.Split(data[v1alpha1.NamesrvAddrKey], ";") {
			if a != "" {
				out[a] = true
			}
		}
	}
	w.namedCache = out
	return maps.Clone(out)
}

// namedAddresses are the addresses some client list names now.
func (w *simWorld) namedAddresses() map[string]bool {
	out := w.named()
	for name := range out {
		if strings.HasPrefix(name, domainPrefix) {
			delete(out, name)
		}
	}
	return out
}

// applyClientService gives the client Service the ports render.ClientService
// renders for the pass.
func (w *simWorld) applyClientService(c *v1alpha1.NameServerCluster, d *decision) {
	remoting := map[int32]bool{c.Spec.Ports.Remoting: true}
	for _, p := range d.oldPorts {
		remoting[p] = true
	}
	http := map[int32]bool{c.Spec.Ports.HTTP: true}
	for _, p := range d.oldHTTPPorts {
		http[p] = true
	}
	w.checkServicePorts(remoting, http)
	w.svcRemoting, w.svcHTTP = remoting, http
}

// applyStatefulSet applies the StatefulSet as rendered for the pass.
func (w *simWorld) applyStatefulSet(c *v1alpha1.NameServerCluster, opts render.Options, d *decision) *appsv1.StatefulSet {
	tpl := w.template(c, opts, d.oldPorts)
	if w.sts == nil {
		w.sts = &simSTS{}
	}
	s := w.sts
	if s.template != tpl || s.replicas != d.plan.Replicas {
		s.generation++
		w.logf("statefulset: replicas %d -> %d, template %s", s.replicas, d.plan.Replicas, shortRev(tpl))
	}
	s.template, s.replicas, s.extra = tpl, d.plan.Replicas, slices.Clone(d.oldPorts)
	s.configMap, s.config = w.configMapName(c), w.configSum(c)
	s.remoting, s.http = c.Spec.Ports.Remoting, c.Spec.Ports.HTTP
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: s.generation}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(s.replicas)},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: s.observed, UpdateRevision: s.updateRevision}}
}

func (a *simActor) restart(c *v1alpha1.NameServerCluster, ordinal int32) error {
	w := a.w
	if err := a.crash(); err != nil {
		return err
	}
	p := w.pods[ordinal]
	if p == nil {
		return errors.New("pods not found")
	}
	if w.configRefused(c) {
		w.violate(invRefusal, "a pass whose spec.config is refused restarts pod %d", ordinal)
	}
	w.checkOneManager(a.m, "restarts pod", ordinal)
	w.checkFloor(ordinal)
	w.terminate(ordinal, p)
	a.restarted = append(a.restarted, ordinal)
	w.logf("operator restarts pod %d", ordinal)
	return nil
}

func (a *simActor) event(*v1alpha1.NameServerCluster, *corev1.Pod, string, v1alpha1.EventReason, string, string, ...any) {
}
