package controllers

import (
	"cmp"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/kvcheck"
	"github.com/kube-namesrv/kube-namesrv/controllers/peerclient"
	"github.com/kube-namesrv/kube-namesrv/controllers/publish"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/controllers/rollout"
	"github.com/kube-namesrv/kube-namesrv/controllers/routecheck"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// decision is everything one reconcile decided, before it acts.
type decision struct {
	routes routecheck.Result
	// compared are the ordinals the route check treated as serving.
	compared []int32
	kvFile   []byte
	kvDigest string
	kv       map[int32]kvcheck.Verdict
	// kvDeclared tells whether spec.kvConfig declares anything (now or
	// removals still pending).
	kvDeclared bool
	plan       publish.Plan
	roll       rollout.Decision
	lists      render.Lists
	// listData are the data of the address ConfigMaps, by listKind, and
	// listDigest their digests.
	listData   [3]map[string]string
	listDigest [3]string
	// published are the client list's addresses by ordinal.
	published map[int32]string
	// external are the known external addresses by ordinal.
	external map[int32]string
	// oldPorts are the remoting ports, other than spec.ports.remoting, the
	// pods keep serving while brokers and clients may still use them;
	// portsUntil is when the last of them may go, zero when none waits.
	oldPorts   []int32
	portsUntil time.Time
	// oldHTTPPorts are the HTTP ports, other than spec.ports.http, the
	// client Service keeps.
	oldHTTPPorts []int32
	// unusedConfigs are the config ConfigMaps of older revisions of
	// spec.config that nothing can mount any more.
	unusedConfigs []string
	// pendingLists tells, by listKind, whether some ConfigMap of the list
	// does not hold the planned data yet: writing it changes the list.
	pendingLists [3]bool
	// holdLists keeps the address ConfigMaps as they are in this pass: the
	// changes to them could not be recorded first.
	holdLists bool
	// destinations are where the address ConfigMaps go; targetProblems
	// the targets that may not be written.
	destinations   []destination
	targetProblems []problem
}

// Two predicates, kept apart on purpose. A peer answers clients when its
// pod is ready (its start-up gate is open) and not terminating, and it is in
// the client list: that is what a restart, a removal or the roll's floor
// would take away. A peer is joinable when, moreover, it holds what the
// serving peers hold: only joining the client list waits for that. A peer
// that lags in routes or KV config still answers; taking it for silent
// would let a roll restart it first, or lift a scale-down's hold.

// ready tells whether a peer's pod is ready and not terminating: with a
// place in the client list, the peer answers clients.
func ready(o *observed, ordinal int32) bool {
	p, ok := o.peers[ordinal]
	return ok && p.Ready && !p.Terminating
}

// mayAnswer tells whether a peer may answer clients: its pod is ready, or
// this reconcile just opened its gate and its readiness has yet to follow.
// It guards what would take the peer away; only ready peers are counted on.
func mayAnswer(o *observed, ordinal int32) bool {
	p, ok := o.peers[ordinal]
	return ok && !p.Terminating && (p.Ready || o.opened[ordinal])
}

// joinable tells whether a peer may join the client list: its pod is ready
// and, as far as the operator can tell, it holds every broker the other
// serving peers hold and the declared KV config. A peer the operator cannot
// read is joinable when it is ready: its own start-up gate, which only a
// gate request or its timeout opens, then stands in for the check, and
// status reports that the check could not be made.
func (d *decision) joinable(o *observed, ordinal int32) bool {
	if !ready(o, ordinal) {
		return false
	}
	if complete, known := d.routes.Complete[ordinal]; known && !complete {
		return false
	}
	if v, ok := d.kv[ordinal]; ok && d.kvDeclared && v.Blocks {
		return false
	}
	return true
}

// decide runs the checks and planners on what was observed.
func (r *NameServerClusterReconciler) decide(c *v1alpha1.NameServerCluster, o *observed) (*decision, error) {
	d, err := r.check(c, o)
	if err != nil {
		return nil, err
	}
	r.plan(c, o, d)
	return d, nil
}

// check compares the peers: their routes and their KV config. What the
// peers are asked to do follows from it, and the plan from their answers.
func (r *NameServerClusterReconciler) check(c *v1alpha1.NameServerCluster, o *observed) (*decision, error) {
	d := &decision{}
	before := publishedOrdinals(c)
	for _, ordinal := range before {
		if p, ok := o.peers[ordinal]; ok && p.Ready && !p.Terminating {
			d.compared = append(d.compared, ordinal)
		}
	}
	running := map[int32]routecheck.Observation{}
	for ordinal, obs := range o.state.Peers {
		if p, ok := o.peers[ordinal]; ok && !p.Terminating {
			running[ordinal] = obs
		}
	}
	d.routes = routecheck.Check(routecheck.Input{Now: o.now, Round: o.round, Peers: running, Serving: d.compared}, &o.state.Memory)
	o.state.ConfirmAt = d.routes.ConfirmAt

	file, err := render.KVFile(c)
	if err != nil {
		return nil, err
	}
	d.kvFile, d.kvDigest = file, peerstatus.Digest(file)
	d.kvDeclared = len(c.Spec.KVConfig) > 0 || (c.Status.KVConfig != nil && len(c.Status.KVConfig.Removed) > 0)
	kvPeers := map[int32]kvcheck.Peer{}
	for ordinal, obs := range running {
		kp := kvcheck.Peer{Readable: obs.Summary != nil}
		if obs.Summary != nil {
			kp.KV = obs.Summary.KV
		}
		kvPeers[ordinal] = kp
	}
	d.kv = kvcheck.Check(d.kvDigest, string(render.KVConfigPolicy(c)), kvPeers)
	return d, nil
}

// plan decides the lists, the StatefulSet's size and template, and the
// roll's next restart.
func (r *NameServerClusterReconciler) plan(c *v1alpha1.NameServerCluster, o *observed, d *decision) {
	before := publishedOrdinals(c)
	var drainStart *time.Time
	if c.Status.DrainStartTime != nil {
		drainStart = ptr.To(c.Status.DrainStartTime.Time)
	}
	var current *int32
	if o.sts != nil {
		current = ptr.To(ptr.Deref(o.sts.Spec.Replicas, 1))
	}
	d.plan = publish.Decide(publish.Input{
		Desired:    desired(c),
		Published:  before,
		DrainStart: drainStart,
		Drain:      time.Duration(ptr.Deref(c.Spec.Publish.DrainSeconds, 0)) * time.Second,
		Current:    current,
		Joinable:   func(ordinal int32) bool { return d.joinable(o, ordinal) },
		Ready:      func(ordinal int32) bool { return ready(o, ordinal) },
		MayAnswer:  func(ordinal int32) bool { return mayAnswer(o, ordinal) },
		Now:        o.now,
	})
	d.addresses(c, r.Render, o)
	d.destinations, d.targetProblems = r.destinations(c, o)
	for _, dest := range d.destinations {
		for l := range d.pendingLists {
			key := types.NamespacedName{Namespace: dest.namespace, Name: dest.configMapName(listKind(l))}
			if digest, ok := o.listDigests[key]; !ok || digest != d.listDigest[l] {
				d.pendingLists[l] = true
			}
		}
	}
	d.oldPorts, d.portsUntil = oldPorts(c, o, d)
	var httpUntil time.Time
	d.oldHTTPPorts, httpUntil = oldHTTPPorts(c, o, d)
	if httpUntil.After(d.portsUntil) {
		d.portsUntil = httpUntil
	}
	d.roll = rollout.Decide(r.rollInput(c, o, d))
	d.unusedConfigs = unusedConfigMaps(c, o)
}

// unusedConfigMaps are the config ConfigMaps no pod mounts and no pod can be
// created with any more: not the current one, not the one of the template
// the StatefulSet holds now, and none while its controller has not observed
// that template (it may still create pods from the one before).
func unusedConfigMaps(c *v1alpha1.NameServerCluster, o *observed) []string {
	if o.sts == nil || o.sts.Status.ObservedGeneration != o.sts.Generation {
		return nil
	}
	keep := map[string]bool{render.ConfigMapName(c): true}
	for _, v := range o.sts.Spec.Template.Spec.Volumes {
		if v.Name == render.ConfigVolume && v.ConfigMap != nil {
			keep[v.ConfigMap.Name] = true
		}
	}
	for _, p := range o.peers {
		keep[p.ConfigMap] = true
	}
	var out []string
	for _, name := range o.configMaps {
		if !keep[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// oldPorts are the remoting ports a move to a new spec.ports.remoting keeps
// open, so that the move takes two rolls and drops no port anyone uses:
// the first restarts each peer on the new port while it still serves the
// old ones, and the lists move each peer to the new port once it serves
// there; the second, a drain period after the lists last changed (the time
// their readers take to follow), restarts the peers without the old ports.
// A port stays while a published entry (planned, or in the lists last
// written everywhere) or a pod's main port uses it, and every port the
// current template serves stays until the drain is over.
//
// The drain is timed from status.lists: when every address ConfigMap last
// came to hold a changed list. Lists about to change, or whose change some
// ConfigMap refused, change now as far as the drain is concerned.
func oldPorts(c *v1alpha1.NameServerCluster, o *observed, d *decision) ([]int32, time.Time) {
	want := c.Spec.Ports.Remoting
	set := map[int32]bool{}
	for _, addr := range d.lists.Clients {
		if p := portOf(addr); p > 0 && p != want {
			set[p] = true
		}
	}
	for _, addr := range c.Status.Addresses {
		if p := portOf(addr); p > 0 && p != want {
			set[p] = true
		}
	}
	for _, p := range o.peers {
		if p.RemotingPort > 0 && p.RemotingPort != want && !p.Terminating {
			set[p.RemotingPort] = true
		}
	}
	var until time.Time
	if o.sts != nil && len(o.sts.Spec.Template.Spec.Containers) > 0 {
		drain := time.Duration(ptr.Deref(c.Spec.Publish.DrainSeconds, 0)) * time.Second
		if until = listsChanged(c, d, o.now).Add(drain); o.now.Before(until) {
			for _, p := range render.ListenPortsOf(o.sts.Spec.Template.Spec.Containers[0].Args) {
				if p != want {
					set[p] = true
				}
			}
		}
	}
	var out []int32
	for p := range set {
		out = append(out, p)
	}
	slices.Sort(out)
	if len(out) == 0 || !o.now.Before(until) {
		until = time.Time{}
	}
	return out, until
}

// oldHTTPPorts are the HTTP ports the client Service keeps besides
// spec.ports.http while a move to a new one drains: the ports pods not
// restarted yet serve, and those the Service has until drainSeconds after
// the lists (which name the address server by the client Service and its
// HTTP port) last changed, so that brokers and clients polling the address
// server at the old port have followed.
func oldHTTPPorts(c *v1alpha1.NameServerCluster, o *observed, d *decision) ([]int32, time.Time) {
	want := c.Spec.Ports.HTTP
	set := map[int32]bool{}
	for _, p := range o.peers {
		if p.HTTPPort > 0 && p.HTTPPort != want && !p.Terminating {
			set[p.HTTPPort] = true
		}
	}
	drain := time.Duration(ptr.Deref(c.Spec.Publish.DrainSeconds, 0)) * time.Second
	until := listsChanged(c, d, o.now).Add(drain)
	if o.clientService != nil && o.now.Before(until) {
		for _, p := range o.clientService.Spec.Ports {
			if (p.Name == render.HTTPPortName || strings.HasPrefix(p.Name, render.HTTPPortName+"-")) && p.Port != want {
				set[p.Port] = true
			}
		}
	}
	out := slices.Sorted(maps.Keys(set))
	if len(out) == 0 || !o.now.Before(until) {
		until = time.Time{}
	}
	return out, until
}

// listsChanged is when the lists last changed in every ConfigMap that holds
// them: now when some list is about to change, was refused, or has no
// record.
func listsChanged(c *v1alpha1.NameServerCluster, d *decision, now time.Time) time.Time {
	var last time.Time
	rec := c.Status.Lists
	if rec == nil {
		return now
	}
	for l, r := range []v1alpha1.PublishedListStatus{rec.Clients, rec.Brokers, rec.IPs} {
		if r.ChangedTime == nil || r.Digest != d.listDigest[l] || d.pendingLists[l] {
			return now
		}
		last = latest(last, r.ChangedTime.Time)
	}
	return last
}

// listsSettled tells whether every client and IP list is recorded to hold
// what the plan lists: no write of one is pending or refused.
func listsSettled(c *v1alpha1.NameServerCluster, d *decision) bool {
	rec := c.Status.Lists
	return rec != nil && rec.Clients.Digest == d.listDigest[clientList] && rec.IPs.Digest == d.listDigest[ipList]
}

// latest is the later of two times.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// portOf is the port of a host:port address, 0 when it has none.
func portOf(addr string) int32 {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		return 0
	}
	return int32(n)
}

// addresses computes the published lists. A broker-list entry carries the
// port its pod listens on (the spec's for a pod not created yet), so a
// port change reaches brokers as each peer restarts on the new port. A
// client-list entry changes port only once the peer serves on it: until
// then clients keep the address they were given.
func (d *decision) addresses(c *v1alpha1.NameServerCluster, opts render.Options, o *observed) {
	port := func(ordinal int32) int32 {
		if p, ok := o.peers[ordinal]; ok && p.RemotingPort > 0 {
			return p.RemotingPort
		}
		return c.Spec.Ports.Remoting
	}
	d.lists = render.Lists{}
	d.external = map[int32]string{}
	for ordinal, svc := range o.external {
		if a := render.ExternalAddress(c, svc, o.peers[ordinal].HostIP); a != "" {
			d.external[ordinal] = a
		}
	}
	d.published = map[int32]string{}
	for _, ordinal := range d.plan.Published {
		addr := render.PeerAddress(c, opts, ordinal, port(ordinal))
		if prev := statusPeer(c, ordinal); prev != nil && prev.Published && !d.joinable(o, ordinal) {
			addr = prev.Address
		}
		d.published[ordinal] = addr
		d.lists.Clients = append(d.lists.Clients, addr)
		if a, ok := d.external[ordinal]; ok {
			d.lists.ClientsExternal = append(d.lists.ClientsExternal, a)
		}
	}
	for ordinal := range d.plan.Replicas {
		d.lists.Brokers = append(d.lists.Brokers, render.PeerAddress(c, opts, ordinal, port(ordinal)))
		if a, ok := d.external[ordinal]; ok {
			d.lists.BrokersExternal = append(d.lists.BrokersExternal, a)
		}
	}
	d.lists.IPs = publish.ReadyIPs(o.peers, d.plan.Published)
	d.listData = listData(c, opts, d.lists)
	for l, data := range d.listData {
		d.listDigest[l] = render.DataDigest(data)
	}
}

// rollInput is what the roll planner sees. The pods' revisions are only
// compared with the StatefulSet's update revision once its controller has
// observed the current template: before that, every pod counts as up to
// date and nothing is restarted on stale information.
func (r *NameServerClusterReconciler) rollInput(c *v1alpha1.NameServerCluster, o *observed, d *decision) rollout.Input {
	in := rollout.Input{
		Desired:        desired(c),
		Peers:          map[int32]rollout.Peer{},
		Paused:         c.Spec.Paused,
		MaxUnavailable: render.MaxUnavailable(c),
		ListsSettled:   listsSettled(c, d),
	}
	fresh := o.sts != nil && o.sts.Status.ObservedGeneration == o.sts.Generation && o.sts.Status.UpdateRevision != ""
	for ordinal, p := range o.peers {
		in.Peers[ordinal] = rollout.Peer{
			Exists:      true,
			Terminating: p.Terminating,
			Updated:     !fresh || p.Revision == o.sts.Status.UpdateRevision,
			Listed:      slices.Contains(d.plan.Published, ordinal),
			Ready:       ready(o, ordinal),
			MayAnswer:   mayAnswer(o, ordinal),
		}
	}
	return in
}

// gateRequests are the gate requests to send: one to each running peer
// whose start-up gate is closed and that holds the declared KV config.
//
// With a reference, another serving peer that could be read with its gate
// open, the gate waits for the brokers of the serving peers (the route
// check's expectation). Without one (every peer restarted at once, or the
// cluster has one replica), nobody can vouch for what a complete table
// holds, and an empty expectation would open the gate at once: clients
// would hear that their topics do not exist until the brokers register
// again. So the gate waits for the brokers that were live before: those the
// peer itself recorded and those the operator last saw (status.liveBrokers),
// or for one broker round and a quarter from the peer's start, whichever
// comes first.
func (d *decision) gateRequests(c *v1alpha1.NameServerCluster, o *observed) map[int32]peerstatus.GateRequest {
	out := map[int32]peerstatus.GateRequest{}
	for ordinal, obs := range o.state.Peers {
		s := obs.Summary
		if s == nil || !s.Gate.Enabled || s.Gate.Open {
			continue
		}
		if v := d.kv[ordinal]; d.kvDeclared && v.Blocks {
			continue
		}
		if !d.hasReference(o, ordinal) {
			out[ordinal] = peerstatus.GateRequest{Expect: liveBefore(c, s.Gate.Record), WaitSeconds: gateWaitSeconds(o.round)}
			continue
		}
		if expect, ok := d.routes.Expect[ordinal]; ok {
			out[ordinal] = peerstatus.GateRequest{Expect: expect}
		}
	}
	return out
}

// hasReference tells whether a serving peer other than ordinal could be
// read with its gate open: its brokers are what a complete table holds.
func (d *decision) hasReference(o *observed, ordinal int32) bool {
	for _, q := range d.compared {
		if s := o.state.Peers[q].Summary; q != ordinal && s != nil && (!s.Gate.Enabled || s.Gate.Open) {
			return true
		}
	}
	return false
}

// liveBefore are the brokers that were live before a peer restarted: those
// its own record holds and those the operator last saw, sorted.
func liveBefore(c *v1alpha1.NameServerCluster, record *peerstatus.GateRecord) []peerstatus.BrokerKey {
	set := map[peerstatus.BrokerKey]bool{}
	if record != nil {
		for _, k := range record.Brokers {
			set[k] = true
		}
	}
	for _, b := range c.Status.LiveBrokers {
		set[peerstatus.BrokerKey{Cluster: b.Cluster, Addr: b.Addr}] = true
	}
	// Never nil: the request says "expect": [], not null.
	out := slices.AppendSeq(make([]peerstatus.BrokerKey, 0, len(set)), maps.Keys(set))
	slices.SortFunc(out, func(a, b peerstatus.BrokerKey) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Addr, b.Addr))
	})
	return out
}

// gateWaitSeconds bounds the wait of a gate without a reference: one broker
// round and a quarter, the time after which a broker that has not
// registered is cut off rather than slow.
func gateWaitSeconds(round time.Duration) int {
	return int(math.Ceil(routecheck.Threshold(round).Seconds()))
}

// maxLiveBrokers bounds status.liveBrokers.
const maxLiveBrokers = 256

// liveBrokers are the brokers live on the serving peers that could be read,
// sorted and at most maxLiveBrokers; the previous record when none could.
func liveBrokers(c *v1alpha1.NameServerCluster, o *observed, d *decision) []v1alpha1.BrokerRef {
	set := map[v1alpha1.BrokerRef]bool{}
	read := false
	for _, q := range d.compared {
		if s := o.state.Peers[q].Summary; s != nil {
			read = true
			for _, b := range s.Brokers {
				set[v1alpha1.BrokerRef{Cluster: b.Cluster, Addr: b.Addr}] = true
			}
		}
	}
	if !read {
		return c.Status.LiveBrokers
	}
	out := slices.Collect(maps.Keys(set))
	slices.SortFunc(out, func(a, b v1alpha1.BrokerRef) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Addr, b.Addr))
	})
	return out[:min(len(out), maxLiveBrokers)]
}

// target is where the operator reaches a peer's HTTP side.
func target(p publish.Peer) peerclient.Target {
	return peerclient.Target{IP: p.IP, Port: p.HTTPPort}
}
