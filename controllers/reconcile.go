package controllers

import (
	"context"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/metrics"
)

// reconcile observes the cluster and runs one pass on what it saw, then
// reports what it did in events and metrics and says when to come back.
func (r *NameServerClusterReconciler) reconcile(ctx context.Context, c *v1alpha1.NameServerCluster) (ctrl.Result, error) {
	if act, _, why := r.ownership(c, r.Clock.Now()); !act {
		// Another install manages it: this one neither reads its peers,
		// nor acts, nor reports, and looks again for the other being gone.
		logf.FromContext(ctx).V(1).Info("leaving the cluster to its manager", "reason", why)
		metrics.Forget(c.Namespace, c.Name)
		r.Peers.Forget(client.ObjectKeyFromObject(c))
		return ctrl.Result{RequeueAfter: r.takeoverAfter() / 2}, nil
	}
	o, err := r.observe(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	o.state.Lock()
	defer o.state.Unlock()
	if !o.state.Current(o.fingerprint) {
		// A peer the observer has not read yet is neither joinable nor
		// answering as far as anyone knows: the pass waits for the read,
		// which wakes the cluster (a peer that does not answer is read
		// as unreachable within the peers' timeout).
		logf.FromContext(ctx).V(1).Info("waiting for the observer to read the peers")
		return ctrl.Result{}, nil
	}
	// Requests to the peers (gate requests, KV applies) are the one wait
	// on the network left in a pass: rare, and bounded together.
	peerCtx, cancel := context.WithTimeout(ctx, peerActionBudget)
	defer cancel()
	res, err := r.pass(c, o, apiActor{r: r, ctx: ctx, peerCtx: peerCtx, token: o.httpToken})
	// The route check may want a confirming read at another time.
	o.state.Wake()
	if err != nil || res.deferred != "" {
		return ctrl.Result{}, err
	}
	r.warnTransitions(c, res.old, res.status, res.problems)
	r.warnExposure(c, o.now)
	r.recordMetrics(c, res.dec, res.published, o.now)
	return ctrl.Result{RequeueAfter: r.requeueAfter(c, o, res.dec, res.problems)}, nil
}

// peerActionBudget bounds the requests to the peers of one pass together.
const peerActionBudget = peerTimeout

// requeueAfter is the earliest of the timers: a broker round (the observer
// wakes the cluster sooner when its peers change, and after a confirming
// read), the end of a drain, and a back-off when something was refused.
func (r *NameServerClusterReconciler) requeueAfter(c *v1alpha1.NameServerCluster, o *observed, d *decision, problems []problem) time.Duration {
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	after := o.round
	if d.plan.RequeueAfter > 0 {
		after = min(after, d.plan.RequeueAfter)
	}
	if !d.portsUntil.IsZero() {
		after = min(after, d.portsUntil.Sub(o.now))
	}
	if !o.stuckAt.IsZero() {
		after = min(after, o.stuckAt.Sub(o.now))
	}
	if slices.ContainsFunc(problems, func(p problem) bool { return p.Retry }) {
		after = min(after, r.retries.next(key))
	} else {
		r.retries.forget(key)
	}
	return max(after, time.Second)
}

// recordMetrics exports the cluster's state as just written to its status.
func (r *NameServerClusterReconciler) recordMetrics(c *v1alpha1.NameServerCluster, d *decision, published bool, now time.Time) {
	st := c.Status
	m := metrics.Cluster{
		Namespace: c.Namespace, Name: c.Name,
		Desired:          desired(c),
		Ready:            st.ReadyReplicas,
		Published:        st.PublishedReplicas,
		RoutesConsistent: conditionValue(st.Conditions, v1alpha1.ConditionRoutesConsistent),
		KVConfigInSync:   conditionValue(st.Conditions, v1alpha1.ConditionKVConfigInSync),
		Outdated:         int32(len(d.roll.Outdated)),
		Rolling:          d.roll.InProgress() && !d.roll.Paused,
		Paused:           d.roll.Paused,
		Draining:         d.plan.Draining(),
		ScaleDownHeld:    d.plan.Held,
	}
	for _, cond := range st.Conditions {
		m.Conditions = append(m.Conditions, metrics.Condition{Type: cond.Type, Status: string(cond.Status), Reason: cond.Reason})
	}
	if published {
		r.lastPublished(c, now)
	}
	m.LastPublish = r.lastPublished(c, time.Time{})
	for _, p := range st.Peers {
		if p.Published && p.Ready && (p.RouteComplete == nil || *p.RouteComplete) {
			m.Serving++
		}
		if p.PodIP == "" && p.Reachable == nil {
			continue
		}
		mp := metrics.Peer{
			Name:           p.Name,
			Reachable:      p.Reachable != nil && *p.Reachable,
			MissingBrokers: len(d.routes.Missing[p.Ordinal]),
			KVDriftKeys:    len(d.kv[p.Ordinal].Drift),
		}
		if p.StuckTerminatingSince != nil {
			mp.StuckSince = p.StuckTerminatingSince.Time
		}
		m.Peers = append(m.Peers, mp)
	}
	metrics.Record(m)
}

// publishTimes remembers, per cluster, when every address ConfigMap was
// last confirmed to hold the current lists, for the metric.
type publishTimes struct {
	mu sync.Mutex
	at map[types.UID]time.Time
}

// lastPublished records at (unless zero) and returns the latest time.
func (r *NameServerClusterReconciler) lastPublished(c *v1alpha1.NameServerCluster, at time.Time) time.Time {
	r.published.mu.Lock()
	defer r.published.mu.Unlock()
	if r.published.at == nil {
		r.published.at = map[types.UID]time.Time{}
	}
	if !at.IsZero() {
		r.published.at[c.UID] = at
	}
	return r.published.at[c.UID]
}

// conditionValue is 1 for True, 0 for False, -1 for Unknown or absent.
func conditionValue(cs []metav1.Condition, t v1alpha1.ConditionType) int {
	for _, c := range cs {
		if c.Type == string(t) {
			switch c.Status {
			case metav1.ConditionTrue:
				return 1
			case metav1.ConditionFalse:
				return 0
			}
		}
	}
	return -1
}
