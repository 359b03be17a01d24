package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/metrics"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

// reconcile is one pass: observe, decide, act, report.
func (r *NameServerClusterReconciler) reconcile(ctx context.Context, c *v1alpha1.NameServerCluster) (ctrl.Result, error) {
	o, err := r.observe(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	d, err := r.decide(c, o)
	if err != nil {
		return ctrl.Result{}, err
	}
	r.actOnPeers(ctx, c, o, d)

	// Order matters for a manager stopped half-way, or a status write lost
	// to a conflict. The status must never record fewer published peers
	// than some ConfigMap holds: otherwise a scale-down right after would
	// take those peers for never-published ones and remove them without a
	// drain. So peers joining the client list are recorded before they are
	// published, and peers leaving it are published before they are
	// recorded, which also keeps a recorded drain start no earlier than the
	// shrink it times. The StatefulSet, which shrinks only once a recorded
	// drain is over, comes after the lists.
	recordErr := r.recordJoins(ctx, c, o, d)

	var problems []problem
	var stsAfter *appsv1.StatefulSet
	published := false
	steps := []func() ([]problem, error){
		func() ([]problem, error) { return r.applyChild(ctx, c, configMapChild(render.ConfigConfigMap(c))) },
		func() ([]problem, error) {
			return r.applyChild(ctx, c, configMapChild(render.KVConfigMap(c, d.kvFile)))
		},
		func() ([]problem, error) { return r.applyChild(ctx, c, serviceChild(render.HeadlessService(c))) },
		func() ([]problem, error) { return r.applyChild(ctx, c, serviceChild(render.ClientService(c))) },
		func() ([]problem, error) { return r.reconcileExternal(ctx, c, o, d.plan.Replicas) },
		func() ([]problem, error) {
			p, ok, err := r.publishAddresses(ctx, c, d.lists)
			published = ok
			return p, err
		},
		func() ([]problem, error) { return r.reconcilePDB(ctx, c) },
		func() ([]problem, error) {
			ac, err := render.StatefulSet(c, r.Render, d.plan.Replicas, d.oldPorts...)
			if err != nil {
				return nil, err
			}
			p, err := r.applyChild(ctx, c, statefulSetChild(ac))
			if err == nil && len(p) == 0 {
				stsAfter, err = r.readStatefulSet(ctx, c, o)
			}
			return p, err
		},
	}
	for _, step := range steps {
		p, err := step()
		if err != nil {
			return ctrl.Result{}, err
		}
		problems = append(problems, p...)
	}
	if recordErr != nil {
		return ctrl.Result{}, recordErr
	}
	if err := r.restartPeer(ctx, c, o, d); err != nil {
		return ctrl.Result{}, err
	}

	status := computeStatus(statusInput{
		Cluster: c, Obs: o, Dec: d, StatefulSet: stsAfter, Problems: problems, Published: published, Now: o.now,
	}, r.Render)
	old := c.Status
	if err := r.writeStatus(ctx, c, status); err != nil {
		return ctrl.Result{}, err
	}
	r.warnTransitions(c, old, status, problems)
	r.recordMetrics(c, d, published, o.now)

	return ctrl.Result{RequeueAfter: r.requeueAfter(c, o, d, problems)}, nil
}

// recordJoins writes the status with the peers that join the client list
// before any ConfigMap names them. When that write fails they are not
// published in this pass; the rest of the cluster is still brought to spec.
func (r *NameServerClusterReconciler) recordJoins(ctx context.Context, c *v1alpha1.NameServerCluster, o *observed, d *decision) error {
	before := publishedOrdinals(c)
	joins := slices.ContainsFunc(d.plan.Published, func(ordinal int32) bool { return !slices.Contains(before, ordinal) })
	if !joins {
		return nil
	}
	growing := c.Status.DeepCopy()
	growing.Peers = peerStatuses(c, r.Render, o, d)
	for i := range growing.Peers {
		// Leaving peers are recorded only after they are unpublished.
		if slices.Contains(before, growing.Peers[i].Ordinal) && !growing.Peers[i].Published {
			growing.Peers[i].Published = true
			if p := statusPeer(c, growing.Peers[i].Ordinal); p != nil {
				growing.Peers[i].Address = p.Address
			}
		}
	}
	if len(c.Status.Peers) == 0 {
		// Upgraded from a status without per-peer entries: keep what it
		// published under their stable names.
		for i := range growing.Peers {
			if slices.Contains(before, growing.Peers[i].Ordinal) {
				growing.Peers[i].Published = true
			}
		}
	}
	var addrs []string
	for _, p := range growing.Peers {
		if p.Published {
			addrs = append(addrs, p.Address)
		}
	}
	growing.PublishedReplicas = int32(len(addrs))
	growing.Addresses = addrs
	growing.NamesrvAddr = strings.Join(addrs, ";")
	if err := r.writeStatus(ctx, c, *growing); err != nil {
		d.plan.Published = slices.DeleteFunc(d.plan.Published, func(ordinal int32) bool { return !slices.Contains(before, ordinal) })
		d.addresses(c, r.Render, o)
		return err
	}
	return nil
}

// readStatefulSet reads the StatefulSet after the apply, so that status
// describes the template just applied and not the one read before: an
// apply that changed it bumps its generation, which its controller has not
// observed yet.
func (r *NameServerClusterReconciler) readStatefulSet(ctx context.Context, c *v1alpha1.NameServerCluster, o *observed) (*appsv1.StatefulSet, error) {
	sts := &appsv1.StatefulSet{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: render.StatefulSetName(c)}, sts); err != nil {
		return nil, fmt.Errorf("reading the StatefulSet of %s/%s after applying it: %w", c.Namespace, c.Name, err)
	}
	o.sts = sts
	return sts, nil
}

// requeueAfter is the earliest of the timers: the end of a drain, the next
// read of the peers, and a back-off when something was refused.
func (r *NameServerClusterReconciler) requeueAfter(c *v1alpha1.NameServerCluster, o *observed, d *decision, problems []problem) time.Duration {
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	after := o.nextRead.Sub(o.now)
	if !o.state.ConfirmAt.IsZero() {
		after = min(after, o.state.ConfirmAt.Sub(o.now))
	}
	if d.plan.RequeueAfter > 0 {
		after = min(after, d.plan.RequeueAfter)
	}
	if !d.portsUntil.IsZero() {
		after = min(after, d.portsUntil.Sub(o.now))
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
		m.Peers = append(m.Peers, metrics.Peer{
			Name:           p.Name,
			Reachable:      p.Reachable != nil && *p.Reachable,
			MissingBrokers: len(d.routes.Missing[p.Ordinal]),
			KVDriftKeys:    len(d.kv[p.Ordinal].Drift),
		})
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
