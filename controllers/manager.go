package controllers

import (
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// Two operator installs may watch the same cluster: one cluster-wide and
// one namespaced, or two versions. Both restarting pods breaks the roll's
// pacing, and two versions would apply their own templates in turn and roll
// forever. So a cluster has one manager, named in status.manager: the first
// to claim it (a status write with an optimistic lock, which only one of two
// racing managers wins) before it acts. Another defers, and writes nothing.
// It takes over only when the manager looks gone: a spec change it has not
// observed for five minutes, or a cluster not at rest (moving, held, or
// degraded) without a heartbeat for five minutes. The manager renews its
// heartbeat every heartbeatEvery while the cluster is not at rest, and never
// while it is, so a cluster at rest costs no write.
const (
	defaultTakeoverAfter = 5 * time.Minute
	heartbeatEvery       = time.Minute
)

// takeoverAfter is TakeoverAfter, defaultTakeoverAfter when unset.
func (r *NameServerClusterReconciler) takeoverAfter() time.Duration {
	if r.TakeoverAfter > 0 {
		return r.TakeoverAfter
	}
	return defaultTakeoverAfter
}

// generations remembers, per cluster, since when this manager has seen a
// generation that the status does not describe yet.
type generations struct {
	mu   sync.Mutex
	seen map[types.UID]seenGeneration
}

type seenGeneration struct {
	generation int64
	at         time.Time
}

// unobservedSince is when this manager first saw the cluster's generation
// unobserved; zero when the status describes it.
func (g *generations) unobservedSince(c *v1alpha1.NameServerCluster, now time.Time) time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.Status.ObservedGeneration >= c.Generation {
		delete(g.seen, c.UID)
		return time.Time{}
	}
	if g.seen == nil {
		g.seen = map[types.UID]seenGeneration{}
	}
	s, ok := g.seen[c.UID]
	if !ok || s.generation != c.Generation {
		s = seenGeneration{generation: c.Generation, at: now}
		g.seen[c.UID] = s
	}
	return s.at
}

// ownership says whether this manager may act on the cluster, and whether
// it must claim it first. A deferring manager is told why.
func (r *NameServerClusterReconciler) ownership(c *v1alpha1.NameServerCluster, now time.Time) (act, claim bool, why string) {
	m := c.Status.Manager
	since := r.generations.unobservedSince(c, now)
	switch {
	case m == nil || m.Identity == "":
		return true, true, ""
	case m.Identity == r.Identity:
		return true, false, ""
	case !since.IsZero() && now.Sub(since) >= r.takeoverAfter():
		return true, true, "it left generation " + strconv.FormatInt(c.Generation, 10) + " unobserved for " + r.takeoverAfter().String()
	case !atRest(c.Status) && (m.HeartbeatTime == nil || now.Sub(m.HeartbeatTime.Time) >= r.takeoverAfter()):
		return true, true, "the cluster is not at rest and it has given no heartbeat for " + r.takeoverAfter().String()
	}
	return false, false, "managed by " + m.Identity
}

// stamp names this manager in a status about to be written, and renews its
// heartbeat while the cluster is not at rest.
func (r *NameServerClusterReconciler) stamp(old v1alpha1.NameServerClusterStatus, st *v1alpha1.NameServerClusterStatus, now time.Time) {
	m := &v1alpha1.ManagerStatus{Identity: r.Identity}
	if o := old.Manager; o != nil && o.Identity == r.Identity {
		m.HeartbeatTime = o.HeartbeatTime
	}
	if !atRest(*st) && (m.HeartbeatTime == nil || now.Sub(m.HeartbeatTime.Time) >= heartbeatEvery) {
		m.HeartbeatTime = ptr.To(metav1.NewTime(now))
	}
	st.Manager = m
}

// atRest tells whether a status says the cluster needs nothing of its
// manager: at its spec (or holding a roll on purpose, spec.paused), and not
// degraded.
func atRest(st v1alpha1.NameServerClusterStatus) bool {
	p := v1alpha1.FindCondition(st.Conditions, v1alpha1.ConditionProgressing)
	return p != nil && p.Status == metav1.ConditionFalse &&
		(p.Reason == string(v1alpha1.ReasonStable) || p.Reason == string(v1alpha1.ReasonRolloutPaused)) &&
		!meta.IsStatusConditionTrue(st.Conditions, string(v1alpha1.ConditionDegraded))
}
