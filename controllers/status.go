package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/kvcheck"
	"github.com/kube-namesrv/kube-namesrv/controllers/metrics"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/controllers/routecheck"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// maxListedInStatus bounds the per-peer lists of missing brokers and
// drifted keys.
const maxListedInStatus = 10

// statusInput is everything the status is derived from.
type statusInput struct {
	Cluster *v1alpha1.NameServerCluster
	Obs     *observed
	Dec     *decision
	// StatefulSet after this reconcile's apply, nil when it does not exist.
	StatefulSet *appsv1.StatefulSet
	Problems    []problem
	// Refused tells, by listKind, whether the API server refused to write
	// the list into some address ConfigMap: it may hold the old list.
	Refused [3]bool
	Now     time.Time
}

// peerStatuses describes every peer that runs, is published or is wanted.
func peerStatuses(c *v1alpha1.NameServerCluster, opts render.Options, o *observed, d *decision) []v1alpha1.PeerStatus {
	var out []v1alpha1.PeerStatus
	updateRevision := ""
	if o.sts != nil && o.sts.Status.ObservedGeneration == o.sts.Generation {
		updateRevision = o.sts.Status.UpdateRevision
	}
	for ordinal := range int32(maxOrdinal(c, o)) {
		p, running := o.peers[ordinal]
		addr, published := d.published[ordinal]
		if !running && !published && ordinal >= d.plan.Replicas {
			continue
		}
		ps := v1alpha1.PeerStatus{
			Ordinal:         ordinal,
			Name:            render.PodName(c, ordinal),
			Address:         addr,
			PodIP:           p.IP,
			ExternalAddress: d.external[ordinal],
			Ready:           p.Ready,
			Published:       published,
			Updated:         running && (updateRevision == "" || p.Revision == updateRevision),
			Node:            p.Node,
			Zone:            o.zones[p.Node],
		}
		if !published {
			port := c.Spec.Ports.Remoting
			if p.RemotingPort > 0 {
				port = p.RemotingPort
			}
			ps.Address = render.PublishedAddress(c, opts, ordinal, port, p.HostIP)
			if ps.Address == "" {
				// Not scheduled yet on the host network: its name
				// until it has a node.
				ps.Address = render.PeerAddress(c, opts, ordinal, port)
			}
		}
		var waits []string
		if obs, ok := o.state.Peers[ordinal]; ok && running {
			ps.Reachable = ptr.To(obs.Summary != nil)
			if obs.Summary == nil {
				waits = append(waits, "cannot read its route summary: "+obs.Err)
			} else {
				ps.Brokers = ptr.To(int32(len(obs.Summary.Brokers)))
				switch g := obs.Summary.Gate; {
				case warmingUp(obs.Summary, o.now):
					waits = append(waits, "warming up until "+g.WarmUpUntil.UTC().Format(time.RFC3339)+" (needWaitForService)")
				case g.Enabled && !g.Open:
					waits = append(waits, fmt.Sprintf("route gate closed: %d of %d expected brokers missing", len(g.Missing), g.Expected))
				}
			}
			if complete, known := d.routes.Complete[ordinal]; known {
				ps.RouteComplete = ptr.To(complete)
			}
			for i, m := range d.routes.Missing[ordinal] {
				if i == maxListedInStatus {
					break
				}
				ps.MissingBrokers = append(ps.MissingBrokers, routecheck.Describe(m.Broker))
			}
			if len(ps.MissingBrokers) > 0 {
				waits = append(waits, fmt.Sprintf("lacks %d brokers of the serving peers", len(d.routes.Missing[ordinal])))
			}
			if v, ok := d.kv[ordinal]; ok && v.Known && d.kvDeclared {
				ps.KVConfigInSync = ptr.To(v.InSync)
				ps.KVConfigDrift = v.Drift[:min(len(v.Drift), maxListedInStatus)]
			}
		}
		switch {
		case o.stuck(ordinal):
			ps.StuckTerminatingSince = ptr.To(metav1.NewTime(p.GraceEnds))
			why := fmt.Sprintf("its pod is stuck terminating on node %s since %s", p.Node, p.GraceEnds.UTC().Format(time.RFC3339))
			if t := o.nodeTrouble[p.Node]; t != "" {
				why += ": " + t
			}
			waits = append(waits, why+"; the StatefulSet recreates it only once it is gone (see the NamesrvPodStuckTerminating runbook)")
		case !running && ordinal < d.plan.Replicas:
			waits = append(waits, "its pod does not exist yet")
		case running && !p.Ready:
			waits = append(waits, "its pod is not ready")
		}
		ps.Message = strings.Join(waits, "; ")
		out = append(out, ps)
	}
	return out
}

// computeStatus derives the new status, conditions included, from what the
// reconcile observed, decided and did. Conditions keep their transition
// times unless their status changes (meta.SetStatusCondition).
func computeStatus(in statusInput, opts render.Options) v1alpha1.NameServerClusterStatus {
	c, o, d := in.Cluster, in.Obs, in.Dec
	st := v1alpha1.NameServerClusterStatus{
		ObservedGeneration: c.Generation,
		Addresses:          c.Status.Addresses,
		NamesrvAddr:        c.Status.NamesrvAddr,
		BrokerNamesrvAddr:  c.Status.BrokerNamesrvAddr,
		Peers:              peerStatuses(c, opts, o, d),
		Selector:           labels.SelectorFromSet(render.SelectorLabels(c)).String(),
		LastPublishTime:    c.Status.LastPublishTime,
		DrainStartTime:     c.Status.DrainStartTime,
		Conditions:         slices.Clone(c.Status.Conditions),
	}
	// A list is recorded once every ConfigMap that holds it was written. A
	// peer leaves the client list, and its drain starts, only once every
	// list that named it (client and IP lists, in every destination) was
	// written without it; until then it stays recorded as published, so
	// nothing shrinks under a list that still names it.
	if !in.Refused[clientList] {
		st.Addresses = d.lists.Clients
		st.NamesrvAddr = strings.Join(d.lists.Clients, ";")
	}
	if !in.Refused[brokerList] {
		st.BrokerNamesrvAddr = strings.Join(d.lists.Brokers, ";")
	}
	if in.Refused[clientList] || in.Refused[ipList] {
		st.Peers = keepPublished(c, st.Peers)
	} else {
		st.DrainStartTime = nil
		if d.plan.DrainStart != nil {
			st.DrainStartTime = ptr.To(metav1.NewTime(*d.plan.DrainStart))
		}
	}
	for _, p := range st.Peers {
		if p.Published {
			st.PublishedReplicas++
		}
	}
	st.Lists = recordLists(c.Status.Lists, d.listDigest, in.Refused, in.Now)
	st.LiveBrokers = liveBrokers(c, o, d)
	published := !slices.ContainsFunc(in.Problems, func(p problem) bool { return p.Addresses })
	if published && st.NamesrvAddr+"|"+st.BrokerNamesrvAddr != c.Status.NamesrvAddr+"|"+c.Status.BrokerNamesrvAddr {
		st.LastPublishTime = ptr.To(metav1.NewTime(in.Now))
	}
	for _, p := range o.peers {
		if !p.Terminating {
			st.Replicas++
		}
	}
	for _, p := range st.Peers {
		if p.Ready {
			st.ReadyReplicas++
		}
		if p.Updated {
			st.UpdatedReplicas++
		}
	}
	// A removed key is forgotten once every peer deleted it: every desired
	// peer must run, for one whose pod is gone may come back with its
	// storage and the key.
	everySatisfied := len(o.peers) > 0
	for ordinal := range desired(c) {
		if _, ok := o.peers[ordinal]; !ok {
			everySatisfied = false
		}
	}
	for ordinal := range o.peers {
		if v := d.kv[ordinal]; !v.Known || !v.Satisfied {
			everySatisfied = false
		}
	}
	var declaredBefore, removedBefore []string
	if k := c.Status.KVConfig; k != nil {
		declaredBefore, removedBefore = k.Declared, k.Removed
	}
	declared, removed := kvcheck.Track(declaredBefore, removedBefore, render.DeclaredKVKeys(c), everySatisfied)
	if len(declared) > 0 || len(removed) > 0 {
		st.KVConfig = &v1alpha1.KVConfigStatus{Declared: declared, Removed: removed}
	}

	set := func(t v1alpha1.ConditionType, s metav1.ConditionStatus, reason v1alpha1.ConditionReason, msg string) {
		meta.SetStatusCondition(&st.Conditions, v1alpha1.Condition(t, s, reason, msg, c.Generation, metav1.NewTime(in.Now)))
	}
	problems := problemMessage(in.Problems)

	var readyListed, unreadyListed []int32
	for _, ordinal := range d.plan.Published {
		switch p, ok := o.peers[ordinal]; {
		case ok && p.Ready:
			readyListed = append(readyListed, ordinal)
		case ok && warmingUp(o.state.Peers[ordinal].Summary, o.now):
			// Not broken: its gate stays closed through the warm-up
			// needWaitForService asks for.
		default:
			unreadyListed = append(unreadyListed, ordinal)
		}
	}
	if len(readyListed) > 0 {
		set(v1alpha1.ConditionAvailable, metav1.ConditionTrue, v1alpha1.ReasonPeersServing,
			fmt.Sprintf("%d of %d peers of the client list are ready", len(readyListed), len(d.plan.Published)))
	} else {
		set(v1alpha1.ConditionAvailable, metav1.ConditionFalse, v1alpha1.ReasonNoPeerServing,
			fmt.Sprintf("none of the %d peers of the client list is ready", len(d.plan.Published)))
	}

	// A roll restarts one peer at a time, on purpose: that one is not a
	// reason to call the cluster degraded.
	allowed := 0
	if d.roll.InProgress() && !d.roll.Paused {
		allowed = 1
	}
	switch {
	case problems != "":
		set(v1alpha1.ConditionDegraded, metav1.ConditionTrue, in.Problems[0].Reason, problems)
	case len(unreadyListed) > allowed:
		set(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonPeersNotReady,
			fmt.Sprintf("%s of the client list not ready", describeOrdinals(c, unreadyListed)))
	default:
		set(v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonAsExpected, "every peer of the client list is ready, or the one being rolled")
	}

	addressProblems := slices.DeleteFunc(slices.Clone(in.Problems), func(p problem) bool { return !p.Addresses })
	switch {
	case len(addressProblems) > 0:
		set(v1alpha1.ConditionAddressesPublished, metav1.ConditionFalse, addressProblems[0].Reason, problemMessage(addressProblems))
	case len(d.plan.Waiting) > 0:
		set(v1alpha1.ConditionAddressesPublished, metav1.ConditionFalse, v1alpha1.ReasonWaitingForPeers,
			fmt.Sprintf("%d of %d peers in the client list; %s", len(d.plan.Published), desired(c), waitingFor(c, st.Peers, d.plan.Waiting)))
	default:
		set(v1alpha1.ConditionAddressesPublished, metav1.ConditionTrue, v1alpha1.ReasonPublished,
			fmt.Sprintf("the client list has all %d peers; the broker list has %d", desired(c), len(d.lists.Brokers)))
	}

	reason, status, msg := progress(in, desired(c))
	set(v1alpha1.ConditionProgressing, status, reason, msg)

	routesCondition(c, o, d, set)
	kvCondition(c, st.Peers, d, set)
	return st
}

// warmingUp tells whether a peer's gate is closed for the warm-up
// needWaitForService asks for.
func warmingUp(s *peerstatus.Summary, now time.Time) bool {
	return s != nil && s.Gate.Enabled && !s.Gate.Open && s.Gate.WarmUpUntil != nil && now.Before(*s.Gate.WarmUpUntil)
}

// keepPublished marks every peer the status recorded as published as
// published still, at the address it was published under: a list that
// named them may not have been written.
func keepPublished(c *v1alpha1.NameServerCluster, peers []v1alpha1.PeerStatus) []v1alpha1.PeerStatus {
	for _, ordinal := range publishedOrdinals(c) {
		i := slices.IndexFunc(peers, func(p v1alpha1.PeerStatus) bool { return p.Ordinal == ordinal })
		if i < 0 {
			peers = append(peers, v1alpha1.PeerStatus{Ordinal: ordinal, Name: render.PodName(c, ordinal)})
			i = len(peers) - 1
		}
		if peers[i].Published {
			continue
		}
		peers[i].Published = true
		if prev := statusPeer(c, ordinal); prev != nil {
			peers[i].Address = prev.Address
		}
	}
	slices.SortFunc(peers, func(a, b v1alpha1.PeerStatus) int { return int(a.Ordinal - b.Ordinal) })
	return peers
}

// markChanging records that the pending lists start to change now.
func markChanging(rec *v1alpha1.PublishedListsStatus, pending [3]bool, now time.Time) *v1alpha1.PublishedListsStatus {
	out := &v1alpha1.PublishedListsStatus{}
	if rec != nil {
		out = rec.DeepCopy()
	}
	for l, r := range []*v1alpha1.PublishedListStatus{&out.Clients, &out.Brokers, &out.IPs} {
		if pending[l] {
			r.ChangedTime = ptr.To(metav1.NewTime(now))
		}
	}
	return out
}

// recordLists updates the record of the lists: a list every ConfigMap of
// which was written with new data changes now.
func recordLists(rec *v1alpha1.PublishedListsStatus, digests [3]string, refused [3]bool, now time.Time) *v1alpha1.PublishedListsStatus {
	out := &v1alpha1.PublishedListsStatus{}
	if rec != nil {
		out = rec.DeepCopy()
	}
	for l, r := range []*v1alpha1.PublishedListStatus{&out.Clients, &out.Brokers, &out.IPs} {
		if refused[l] || (r.Digest == digests[l] && r.ChangedTime != nil) {
			continue
		}
		r.Digest, r.ChangedTime = digests[l], ptr.To(metav1.NewTime(now))
	}
	return out
}

// progress says what is moving, or what holds the cluster still.
func progress(in statusInput, desired int32) (reason v1alpha1.ConditionReason, status metav1.ConditionStatus, msg string) {
	c, o, d, s := in.Cluster, in.Obs, in.Dec, in.StatefulSet
	problems := problemMessage(in.Problems)
	switch {
	case d.plan.Held:
		return v1alpha1.ReasonScaleDownHeld, metav1.ConditionFalse, fmt.Sprintf(
			"the scale-down to %d waits: %s, which would remain, does not serve, and the peers above it do; it goes on once they serve",
			desired, describeOrdinals(c, d.plan.HeldFor))
	case d.plan.Draining():
		return v1alpha1.ReasonDraining, metav1.ConditionTrue, fmt.Sprintf("the client list has %d peers; the StatefulSet keeps %d until %s so readers stop using the removed ones",
			len(d.plan.Published), d.plan.Replicas, in.Now.Add(d.plan.RequeueAfter).UTC().Format(time.RFC3339))
	case s == nil || ptr.Deref(s.Spec.Replicas, 0) != d.plan.Replicas || int32(len(o.peers)) != d.plan.Replicas:
		return v1alpha1.ReasonScaling, metav1.ConditionTrue, fmt.Sprintf("scaling to %d peers; %d pods exist", d.plan.Replicas, len(o.peers))
	case s.Status.ObservedGeneration < s.Generation:
		return v1alpha1.ReasonRollingOut, metav1.ConditionTrue, "the StatefulSet controller has not observed the current pod template yet"
	case d.roll.Paused:
		return v1alpha1.ReasonRolloutPaused, metav1.ConditionFalse, fmt.Sprintf(
			"%s run an outdated pod template; spec.paused holds the roll", describeOrdinals(c, d.roll.Outdated))
	case d.roll.InProgress():
		m := fmt.Sprintf("%s run an outdated pod template; restarting one peer at a time", describeOrdinals(c, d.roll.Outdated))
		if d.roll.Waiting != "" {
			m += ": " + d.roll.Waiting
		}
		return v1alpha1.ReasonRollingOut, metav1.ConditionTrue, m
	case len(d.plan.Waiting) > 0:
		return v1alpha1.ReasonPublishing, metav1.ConditionTrue, fmt.Sprintf("%s join the client list once they serve", describeOrdinals(c, d.plan.Waiting))
	case !d.portsUntil.IsZero():
		// Not at rest: once the drain is over the template drops the old
		// ports, and a second install defers to a manager at rest forever.
		return v1alpha1.ReasonDraining, metav1.ConditionTrue, fmt.Sprintf("the pods keep serving the old ports %v until %s so readers follow the lists",
			d.oldPorts, d.portsUntil.UTC().Format(time.RFC3339))
	case problems != "":
		return v1alpha1.ReasonBlocked, metav1.ConditionFalse, "cannot reach the spec: " + problems
	}
	return v1alpha1.ReasonStable, metav1.ConditionFalse, fmt.Sprintf("%d peers run the current spec and serve clients", desired)
}

// routesCondition sets RoutesConsistent from the route check.
func routesCondition(c *v1alpha1.NameServerCluster, o *observed, d *decision, set func(v1alpha1.ConditionType, metav1.ConditionStatus, v1alpha1.ConditionReason, string)) {
	r := d.routes
	var unchecked []int32
	for _, ordinal := range d.compared {
		if _, read := o.state.Peers[ordinal]; !read {
			unchecked = append(unchecked, ordinal)
		}
	}
	switch {
	case len(r.Differences) > 0:
		first := r.Differences[0]
		reason, what := v1alpha1.ReasonBrokerMissing, "is missing from"
		if first.VersionDiffers {
			reason, what = v1alpha1.ReasonDataVersionDiffers, "holds an older DataVersion on"
		}
		msg := fmt.Sprintf("broker %s %s peer %s since %s", routecheck.Describe(first.Broker), what,
			render.PodName(c, first.Ordinal), first.Since.UTC().Format(time.RFC3339))
		if n := len(r.Differences) - 1; n > 0 {
			msg += fmt.Sprintf(" (and %d more differences; see status.peers)", n)
		}
		set(v1alpha1.ConditionRoutesConsistent, metav1.ConditionFalse, reason, msg)
	case len(r.Unreadable) > 0:
		set(v1alpha1.ConditionRoutesConsistent, metav1.ConditionUnknown, v1alpha1.ReasonPeerUnreachable, fmt.Sprintf(
			"the operator cannot read the route summary of %s (see status.peers); a NetworkPolicy may keep it from the peers' HTTP port",
			describeOrdinals(c, r.Unreadable)))
	case len(d.compared) == 0:
		set(v1alpha1.ConditionRoutesConsistent, metav1.ConditionUnknown, v1alpha1.ReasonNotChecked, "no peer serves clients yet")
	case len(unchecked) > 0:
		set(v1alpha1.ConditionRoutesConsistent, metav1.ConditionUnknown, v1alpha1.ReasonNotChecked,
			fmt.Sprintf("%s not read yet", describeOrdinals(c, unchecked)))
	default:
		set(v1alpha1.ConditionRoutesConsistent, metav1.ConditionTrue, v1alpha1.ReasonConsistent,
			fmt.Sprintf("the %d serving peers hold the same live brokers", len(d.compared)))
	}
}

// kvCondition sets KVConfigInSync from the per-peer verdicts.
func kvCondition(c *v1alpha1.NameServerCluster, peers []v1alpha1.PeerStatus, d *decision, set func(v1alpha1.ConditionType, metav1.ConditionStatus, v1alpha1.ConditionReason, string)) {
	if !d.kvDeclared {
		set(v1alpha1.ConditionKVConfigInSync, metav1.ConditionTrue, v1alpha1.ReasonNothingDeclared, "spec.kvConfig declares nothing")
		return
	}
	var unknown []int32
	for _, ordinal := range sortedKeys(d.kv) {
		v := d.kv[ordinal]
		switch {
		case !v.Known:
			unknown = append(unknown, ordinal)
		case !v.InSync:
			reason := v1alpha1.ReasonKVDrift
			if !v.Delivered {
				reason = v1alpha1.ReasonKVNotDelivered
			}
			what := "differs from spec.kvConfig"
			if len(v.Drift) > 0 {
				what = v.Drift[0]
			}
			set(v1alpha1.ConditionKVConfigInSync, metav1.ConditionFalse, reason, fmt.Sprintf("peer %s: %s", render.PodName(c, ordinal), what))
			return
		}
	}
	if len(unknown) > 0 {
		set(v1alpha1.ConditionKVConfigInSync, metav1.ConditionUnknown, v1alpha1.ReasonPeerUnreachable,
			fmt.Sprintf("the operator cannot read %s", describeOrdinals(c, unknown)))
		return
	}
	set(v1alpha1.ConditionKVConfigInSync, metav1.ConditionTrue, v1alpha1.ReasonInSync,
		fmt.Sprintf("every peer holds the %d declared KV entries", len(c.Spec.KVConfig)))
}

// waitingFor says why the peers not yet in the client list are not.
func waitingFor(c *v1alpha1.NameServerCluster, peers []v1alpha1.PeerStatus, waiting []int32) string {
	var parts []string
	for _, o := range waiting {
		why := "waiting"
		for _, p := range peers {
			if p.Ordinal == o && p.Message != "" {
				why = p.Message
			}
		}
		parts = append(parts, fmt.Sprintf("%s: %s", render.PodName(c, o), why))
	}
	return strings.Join(parts, "; ")
}

func describeOrdinals(c *v1alpha1.NameServerCluster, ordinals []int32) string {
	names := make([]string, 0, len(ordinals))
	for _, o := range ordinals {
		names = append(names, render.PodName(c, o))
	}
	return strings.Join(names, ", ")
}

func problemMessage(ps []problem) string {
	msgs := make([]string, 0, len(ps))
	for _, p := range ps {
		msgs = append(msgs, p.Message)
	}
	return strings.Join(msgs, "; ")
}

// writeStatus persists the new status (with an optimistic lock: a status
// computed from a stale read must not overwrite the publication state) and
// records events for what changed: the client list, a drain.
func (r *NameServerClusterReconciler) writeStatus(ctx context.Context, c *v1alpha1.NameServerCluster, st v1alpha1.NameServerClusterStatus) error {
	old := c.Status
	if equality.Semantic.DeepEqual(old, st) {
		return nil
	}
	patch := client.MergeFromWithOptions(c.DeepCopy(), client.MergeFromWithOptimisticLock{})
	next := c.DeepCopy()
	next.Status = st
	if err := r.Status().Patch(ctx, next, patch); err != nil {
		return fmt.Errorf("writing the status of %s/%s: %w", c.Namespace, c.Name, err)
	}
	// What the API server returned lacks what an outdated CRD's schema
	// pruned: reported from the next pass on (schemaGaps).
	if dropped, err := droppedFields(st, next.Status); err == nil {
		r.gaps.record(c.UID, dropped)
	}
	// Only a written status becomes the cluster's: callers go on from it.
	*c = *next

	// Each event names a pod whose membership changed as its related
	// object: events.k8s.io folds events with the same reason, action and
	// related object into a series that keeps the first note, so only
	// identical publications may share one.
	before, after := map[int32]bool{}, map[int32]bool{}
	for _, p := range old.Peers {
		before[p.Ordinal] = p.Published
	}
	if len(old.Peers) == 0 {
		for o := range old.PublishedReplicas {
			before[o] = true
		}
	}
	for _, p := range st.Peers {
		after[p.Ordinal] = p.Published
	}
	for _, p := range st.Peers {
		if p.Published && !before[p.Ordinal] {
			r.event(c, peerPod(c, p.Ordinal), corev1.EventTypeNormal, v1alpha1.EventPublished, "Publish",
				"%s", listNote(p.Name+" serves and joined the client list", "", st.NamesrvAddr))
		}
	}
	for o, was := range before {
		if was && !after[o] {
			r.event(c, peerPod(c, o), corev1.EventTypeNormal, v1alpha1.EventPublished, "Unpublish",
				"%s", listNote(render.PodName(c, o)+" left the client list", ", which is now empty", st.NamesrvAddr))
		}
	}
	for _, p := range st.Peers {
		if p.StuckTerminatingSince == nil {
			continue
		}
		if prev := peerIn(old.Peers, p.Ordinal); prev == nil || prev.StuckTerminatingSince == nil {
			r.event(c, peerPod(c, p.Ordinal), corev1.EventTypeWarning, v1alpha1.EventPodStuck, "Observe", "%s", p.Message)
		}
	}
	if st.DrainStartTime != nil && (old.DrainStartTime == nil || !old.DrainStartTime.Equal(st.DrainStartTime)) {
		r.event(c, nil, corev1.EventTypeNormal, v1alpha1.EventDraining, "Drain",
			"removed peers from the client list; the StatefulSet keeps them for %ds", ptr.Deref(c.Spec.Publish.DrainSeconds, 0))
	}
	return nil
}

// peerIn is the entry of an ordinal in peers, nil when there is none.
func peerIn(peers []v1alpha1.PeerStatus, ordinal int32) *v1alpha1.PeerStatus {
	for i := range peers {
		if peers[i].Ordinal == ordinal {
			return &peers[i]
		}
	}
	return nil
}

// warnTransitions records one event when a condition that needs a person's
// attention turns, so a standing state is not repeated on every reconcile.
func (r *NameServerClusterReconciler) warnTransitions(c *v1alpha1.NameServerCluster, old, st v1alpha1.NameServerClusterStatus, problems []problem) {
	turned := func(t v1alpha1.ConditionType) (*metav1.Condition, bool) {
		was := v1alpha1.FindCondition(old.Conditions, t)
		now := v1alpha1.FindCondition(st.Conditions, t)
		if now == nil {
			return nil, false
		}
		return now, was == nil || was.Status != now.Status || was.Reason != now.Reason || was.Message != now.Message
	}
	if now, ok := turned(v1alpha1.ConditionDegraded); ok && len(problems) > 0 && now.Status == metav1.ConditionTrue {
		for _, p := range problems {
			r.event(c, p.Related, corev1.EventTypeWarning, v1alpha1.RefusalEvent(p.Reason), "Refuse", "%s", p.Message)
			metrics.Refused(c.Namespace, c.Name, string(p.Reason))
		}
	}
	if now, ok := turned(v1alpha1.ConditionRoutesConsistent); ok {
		switch now.Status {
		case metav1.ConditionFalse:
			r.event(c, nil, corev1.EventTypeWarning, v1alpha1.EventRoutesInconsistent, "CompareRoutes", "%s", now.Message)
		case metav1.ConditionTrue:
			if was := v1alpha1.FindCondition(old.Conditions, v1alpha1.ConditionRoutesConsistent); was != nil && was.Status == metav1.ConditionFalse {
				r.event(c, nil, corev1.EventTypeNormal, v1alpha1.EventRoutesConsistent, "CompareRoutes", "%s", now.Message)
			}
		}
	}
	if now, ok := turned(v1alpha1.ConditionKVConfigInSync); ok && now.Status == metav1.ConditionFalse && now.Reason == string(v1alpha1.ReasonKVDrift) {
		r.event(c, nil, corev1.EventTypeWarning, v1alpha1.EventKVConfigDrift, "CompareKV", "%s", now.Message)
	}
	if now, ok := turned(v1alpha1.ConditionProgressing); ok {
		switch v1alpha1.ConditionReason(now.Reason) {
		case v1alpha1.ReasonScaleDownHeld:
			r.event(c, nil, corev1.EventTypeWarning, v1alpha1.EventScaleDownHeld, "HoldScaleDown", "%s", now.Message)
		case v1alpha1.ReasonRolloutPaused:
			r.event(c, nil, corev1.EventTypeNormal, v1alpha1.EventRolloutPaused, "PauseRollout", "%s", now.Message)
		}
	}
}

// listNote ends an event's note with the client list, or with ifEmpty when
// there is none (the last peer left, or the list was not written yet)
// rather than with a dangling colon.
func listNote(note, ifEmpty, list string) string {
	if list == "" {
		return note + ifEmpty
	}
	return note + ": " + list
}
