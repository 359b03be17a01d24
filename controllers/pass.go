package controllers

import (
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/kvcheck"
	"github.com/kube-namesrv/kube-namesrv/controllers/publish"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// A pass is one reconcile after the observation: decide, act, report. Its
// acts are data (requests to peers, writes of children, a pod to restart,
// status writes) carried out by an actor: the reconciler's talks to the API
// server and the peers, the simulation's to a model of them. Everything
// else, every decision and the order of the acts included, is this code.
type actor interface {
	// applyKV asks a peer to apply its declared-KV file again.
	applyKV(c *v1alpha1.NameServerCluster, ordinal int32, p publish.Peer) (*peerstatus.KVStatus, error)
	// openGate sends a gate request to a starting peer.
	openGate(c *v1alpha1.NameServerCluster, ordinal int32, p publish.Peer, req peerstatus.GateRequest) (*peerstatus.Summary, error)
	// writeStatus persists st with an optimistic lock on c as read; on
	// success c holds it.
	writeStatus(c *v1alpha1.NameServerCluster, st v1alpha1.NameServerClusterStatus) error
	// write carries out one write. A write the API server refuses is an
	// outcome; any other error ends the pass.
	write(c *v1alpha1.NameServerCluster, d *decision, w write) (outcome, error)
	// restart deletes the pod of an ordinal, for the StatefulSet controller
	// to recreate it from the current template.
	restart(c *v1alpha1.NameServerCluster, ordinal int32) error
	// event records an event about the cluster.
	event(c *v1alpha1.NameServerCluster, related *corev1.Pod, eventType string, reason v1alpha1.EventReason, action, note string, args ...any)
}

// writeKind is what a write touches.
type writeKind int

const (
	writeConfig writeKind = iota
	writeKVConfig
	writeHeadlessService
	writeClientService
	writeExternalService
	deleteExternalService
	writeAddresses
	deleteAddressCopy
	writePDB
	deletePDB
	writeStatefulSet
	deleteConfig
)

// listKind is one of the three address ConfigMaps of a destination.
type listKind int

const (
	clientList listKind = iota
	brokerList
	ipList
)

// write is one child to apply or delete.
type write struct {
	kind writeKind
	// ordinal of an external Service.
	ordinal int32
	// dest and list of an address ConfigMap.
	dest destination
	list listKind
	// copy is the address ConfigMap to delete, in another namespace.
	copy types.NamespacedName
	// name is the config ConfigMap to delete.
	name string
}

// outcome is what a write did.
type outcome struct {
	// problem is set when the write was refused.
	problem *problem
	// sts is the StatefulSet as it is after its write.
	sts *appsv1.StatefulSet
}

// passResult is what a pass did.
type passResult struct {
	dec *decision
	// old and status are the status before the pass and the one written.
	old, status v1alpha1.NameServerClusterStatus
	problems    []problem
	// published tells whether every address ConfigMap holds the lists.
	published bool
	// deferred says why another manager's cluster was left alone; the pass
	// did nothing else.
	deferred string
}

// pass decides and acts on one observation of a cluster, in this order:
// leave it alone when another install manages it, or claim it; compare the
// peers and ask them for what they need (KV applies, gate requests); refuse
// a spec.config the NameServer would refuse; plan with the peers' answers;
// record the intent; write the children; restart the roll's pod; write the
// status.
//
// Order matters for a manager stopped half-way, or a status write lost to a
// conflict. The status must never record fewer published peers than some
// ConfigMap holds: otherwise a scale-down right after would take those peers
// for never-published ones and remove them without a drain. So peers joining
// the client list are recorded before they are published, and peers leaving
// it are published before they are recorded, which also keeps a recorded
// drain start no earlier than the shrink it times; a list change is recorded
// as starting before it is written, so the drain of a port it drops is
// never timed from an older change. The StatefulSet, which shrinks only once
// a recorded drain is over, comes after the lists.
func (r *NameServerClusterReconciler) pass(c *v1alpha1.NameServerCluster, o *observed, x actor) (*passResult, error) {
	act, claim, why := r.ownership(c, o.now)
	if !act {
		return &passResult{dec: &decision{}, deferred: why}, nil
	}
	if claim {
		prev := c.Status.Manager
		st := c.Status.DeepCopy()
		r.stamp(c.Status, st, o.now)
		if err := x.writeStatus(c, *st); err != nil {
			return nil, err
		}
		if prev != nil && prev.Identity != "" {
			x.event(c, nil, corev1.EventTypeWarning, v1alpha1.EventManagerTookOver, "TakeOver",
				"%s took over the cluster from %s: %s", r.Identity, prev.Identity, why)
		}
	}
	d, err := r.check(c, o)
	if err != nil {
		return nil, err
	}
	actOnPeers(c, o, d, x)
	if err := render.ValidateConfig(c); err != nil {
		return r.refuseConfig(c, d, x, err, o.now)
	}
	r.plan(c, o, d)
	recordErr := r.recordIntent(c, o, d, x)

	res := &passResult{dec: d}
	var stsAfter *appsv1.StatefulSet
	var refused [3]bool
	res.problems = append(res.problems, d.targetProblems...)
	if o.httpTokenProblem != nil {
		res.problems = append(res.problems, *o.httpTokenProblem)
	}
	for _, w := range r.writes(c, o, d) {
		if d.holdLists && (w.kind == writeAddresses || w.kind == deleteAddressCopy) {
			continue
		}
		out, err := x.write(c, d, w)
		if err != nil {
			return nil, err
		}
		if out.problem != nil {
			res.problems = append(res.problems, *out.problem)
			if w.kind == writeAddresses {
				refused[w.list] = true
			}
		}
		if out.sts != nil {
			o.sts, stsAfter = out.sts, out.sts
		}
	}
	res.published = !slices.ContainsFunc(res.problems, func(p problem) bool { return p.Addresses })
	if recordErr != nil {
		return nil, recordErr
	}
	if ordinal := d.roll.Restart; ordinal >= 0 {
		why := "it answers no client"
		if ready(o, ordinal) && slices.Contains(d.plan.Published, ordinal) {
			why = "every other listed peer answers clients"
		}
		if err := x.restart(c, ordinal); err != nil {
			return nil, err
		}
		x.event(c, peerPod(c, ordinal), corev1.EventTypeNormal, v1alpha1.EventRollingPeer, "Restart",
			"restarting %s to bring it to the current pod template (%s); %d peers outdated", render.PodName(c, ordinal), why, len(d.roll.Outdated))
	}

	res.status = computeStatus(statusInput{
		Cluster: c, Obs: o, Dec: d, StatefulSet: stsAfter, Problems: res.problems, Refused: refused, Now: o.now,
	}, r.Render)
	r.stamp(c.Status, &res.status, o.now)
	res.old = c.Status
	if err := x.writeStatus(c, res.status); err != nil {
		return nil, err
	}
	return res, nil
}

// refuseConfig ends a pass whose spec.config the NameServer would refuse:
// the peers were still asked for what they need (their gates, their KV
// config), but nothing of the spec is applied and no pod restarts, so the
// cluster runs on as it was until spec.config is fixed; the status says
// why.
func (r *NameServerClusterReconciler) refuseConfig(c *v1alpha1.NameServerCluster, d *decision, x actor, invalid error, now time.Time) (*passResult, error) {
	p := problem{Reason: v1alpha1.RefusalConfigInvalid, Message: fmt.Sprintf(
		"spec.config is refused, nothing of generation %d is applied until it is fixed: %v", c.Generation, invalid)}
	st := *c.Status.DeepCopy()
	st.ObservedGeneration = c.Generation
	set := func(t v1alpha1.ConditionType, s metav1.ConditionStatus, reason v1alpha1.ConditionReason, msg string) {
		meta.SetStatusCondition(&st.Conditions, v1alpha1.Condition(t, s, reason, msg, c.Generation, metav1.NewTime(now)))
	}
	set(v1alpha1.ConditionDegraded, metav1.ConditionTrue, p.Reason, p.Message)
	set(v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonBlocked, "cannot reach the spec: "+p.Message)
	r.stamp(c.Status, &st, now)
	res := &passResult{dec: d, old: c.Status, status: st, problems: []problem{p}}
	if err := x.writeStatus(c, st); err != nil {
		return nil, err
	}
	return res, nil
}

// writes are the children to apply and delete, in order: the config and KV
// ConfigMaps, the Services, the address ConfigMaps of every destination and
// the copies no longer wanted, the PDB, the StatefulSet, and last the config
// ConfigMaps nothing mounts any more.
func (r *NameServerClusterReconciler) writes(c *v1alpha1.NameServerCluster, o *observed, d *decision) []write {
	ws := []write{{kind: writeConfig}, {kind: writeKVConfig}, {kind: writeHeadlessService}, {kind: writeClientService}}
	for ordinal := range int32(maxOrdinal(c, o)) {
		switch {
		case c.Spec.ExternalAccess != nil && ordinal < d.plan.Replicas:
			ws = append(ws, write{kind: writeExternalService, ordinal: ordinal})
		case o.external[ordinal] != nil:
			ws = append(ws, write{kind: deleteExternalService, ordinal: ordinal})
		}
	}
	keep := map[types.NamespacedName]bool{}
	for _, dest := range d.destinations {
		for _, l := range []listKind{clientList, brokerList, ipList} {
			ws = append(ws, write{kind: writeAddresses, dest: dest, list: l})
			keep[types.NamespacedName{Namespace: dest.namespace, Name: dest.configMapName(l)}] = true
		}
	}
	for _, cp := range o.addressConfigMaps {
		if !keep[cp] {
			ws = append(ws, write{kind: deleteAddressCopy, copy: cp})
		}
	}
	if render.PodDisruptionBudgetEnabled(c) {
		ws = append(ws, write{kind: writePDB})
	} else {
		ws = append(ws, write{kind: deletePDB})
	}
	ws = append(ws, write{kind: writeStatefulSet})
	for _, name := range d.unusedConfigs {
		ws = append(ws, write{kind: deleteConfig, name: name})
	}
	return ws
}

// actOnPeers asks peers that do not hold spec.kvConfig as the policy asks
// (a value or a key changed by hand) to apply their declared-KV file again,
// then asks each starting peer to open its route gate once it holds the
// brokers the serving peers hold. Both answers are recorded as the peers' latest observations, before
// the plan is made. A peer that does not answer is reported in its status
// and tried again at the next reconcile; it never stops the reconcile.
func actOnPeers(c *v1alpha1.NameServerCluster, o *observed, d *decision, x actor) {
	o.opened = map[int32]bool{}
	for _, ordinal := range sortedKeys(d.kv) {
		v := d.kv[ordinal]
		if !v.Apply {
			continue
		}
		kv, err := x.applyKV(c, ordinal, o.peers[ordinal])
		if err != nil {
			continue
		}
		x.event(c, peerPod(c, ordinal), corev1.EventTypeWarning, v1alpha1.EventKVConfigCorrected, "ApplyKV",
			"%s did not hold spec.kvConfig as kvConfigPolicy %s asks (%s); it applied the declaration again", render.PodName(c, ordinal), render.KVConfigPolicy(c), strings.Join(v.Drift, ", "))
		obs := o.state.Peers[ordinal]
		if obs.Summary != nil {
			s := *obs.Summary
			s.KV = kv
			obs.Summary = &s
			o.state.Peers[ordinal] = obs
		}
		d.kv[ordinal] = kvcheck.Check(d.kvDigest, string(render.KVConfigPolicy(c)), map[int32]kvcheck.Peer{ordinal: {Readable: true, KV: kv}})[ordinal]
	}

	gates := d.gateRequests(c, o)
	for _, ordinal := range sortedKeys(gates) {
		p, ok := o.peers[ordinal]
		if !ok || p.Terminating {
			continue
		}
		s, err := x.openGate(c, ordinal, p, gates[ordinal])
		if err != nil {
			continue
		}
		obs := o.state.Peers[ordinal]
		if s.Gate.Open && (obs.Summary == nil || !obs.Summary.Gate.Open) {
			what := "of the serving peers"
			if gates[ordinal].WaitSeconds > 0 {
				what = "live before it restarted (or waited a broker round)"
			}
			x.event(c, peerPod(c, ordinal), corev1.EventTypeNormal, v1alpha1.EventRouteGateOpened, "OpenGate",
				"%s holds the %d brokers %s; it answers clients now", render.PodName(c, ordinal), len(gates[ordinal].Expect), what)
			// It may answer clients from now on, before its pod's
			// readiness follows: the plan must not take it for a silent
			// peer, to restart first or to drop, nor count on it yet.
			o.opened[ordinal] = true
		}
		obs.Summary = s
		o.state.Peers[ordinal] = obs
	}
}

// recordIntent writes, before any ConfigMap changes, the status with the
// peers that join the client list, and the time at which the lists about to
// change start to change. A peer is never named before status records it,
// and a port a list stops naming is drained from no earlier than the write
// that dropped it, even when the status write after the lists fails. When
// this write fails nobody joins and no list is written in this pass; the
// rest of the cluster is still brought to spec.
func (r *NameServerClusterReconciler) recordIntent(c *v1alpha1.NameServerCluster, o *observed, d *decision, x actor) error {
	before := publishedOrdinals(c)
	joins := slices.ContainsFunc(d.plan.Published, func(ordinal int32) bool { return !slices.Contains(before, ordinal) })
	if !joins && !slices.Contains(d.pendingLists[:], true) {
		return nil
	}
	growing := c.Status.DeepCopy()
	// Leaving peers are recorded only after they are unpublished.
	growing.Peers = keepPublished(c, peerStatuses(c, r.Render, o, d))
	growing.PublishedReplicas = 0
	for _, p := range growing.Peers {
		if p.Published {
			growing.PublishedReplicas++
		}
	}
	growing.Lists = markChanging(growing.Lists, d.pendingLists, o.now)
	r.stamp(c.Status, growing, o.now)
	if err := x.writeStatus(c, *growing); err != nil {
		// The lists stay as they are, and so does the StatefulSet's size:
		// it must not shrink under a list it would have been written after.
		d.holdLists = true
		if o.sts != nil {
			d.plan.Replicas = max(d.plan.Replicas, ptr.Deref(o.sts.Spec.Replicas, 1))
		}
		return err
	}
	return nil
}

func sortedKeys[V any](m map[int32]V) []int32 {
	out := make([]int32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
