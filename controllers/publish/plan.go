// Package publish decides which peers are in the published address list and
// how many pods the StatefulSet keeps, from state that is persisted in the
// cluster's status. Being a pure function of that state, the decision is the
// same after a manager restart, so a restarted operator never publishes a
// list that a running one would not.
package publish

import (
	"time"
)

// Input is what the plan depends on; all of it survives a manager restart.
type Input struct {
	// Desired is spec.replicas.
	Desired int32
	// Published is status.publishedReplicas: ordinals 0..Published-1 are
	// in the list.
	Published int32
	// DrainStart is status.drainStartTime, nil when no drain is running.
	DrainStart *time.Time
	// Drain is spec.publish.drainSeconds.
	Drain time.Duration
	// Current is the existing StatefulSet's spec.replicas, nil without one.
	Current *int32
	// Ready tells whether the pod of an ordinal exists and is ready now.
	Ready func(ordinal int32) bool
	// Now is the reconcile's time.
	Now time.Time
}

// Plan is what the reconciler applies and persists.
type Plan struct {
	// Published is the new list length.
	Published int32
	// Replicas is the StatefulSet's spec.replicas.
	Replicas int32
	// DrainStart is the new status.drainStartTime.
	DrainStart *time.Time
	// RequeueAfter is the time left in the drain (zero when none runs); the
	// reconciler is called again then, without polling.
	RequeueAfter time.Duration
}

// Draining tells whether removed peers are still running.
func (p Plan) Draining() bool { return p.DrainStart != nil }

// Decide computes the plan. The invariants it keeps:
//   - the list is always ordinals 0..Published-1, and Published <= Replicas,
//     so it never names a pod that is not meant to run;
//   - an ordinal joins the list only while its pod is ready, and ordinals join
//     in order, so a gap never appears;
//   - a listed peer that restarts or turns unready stays listed (its name is
//     stable), so brokers are not disturbed;
//   - on scale-down the list shrinks first and the StatefulSet follows only
//     after the drain period, counted from the last shrink.
func Decide(in Input) Plan {
	plan := Plan{Published: in.Published, DrainStart: in.DrainStart}
	if in.Desired < plan.Published {
		plan.Published = in.Desired
		// Status times have whole seconds; rounding up keeps the persisted
		// start no earlier than the real one, so the drain is never short.
		start := in.Now.Truncate(time.Second)
		if start.Before(in.Now) {
			start = start.Add(time.Second)
		}
		plan.DrainStart = &start
	} else {
		for plan.Published < in.Desired && in.Ready(plan.Published) {
			plan.Published++
		}
	}

	plan.Replicas = in.Desired
	switch {
	case in.Current == nil || *in.Current <= in.Desired:
		// Nothing beyond Desired runs: no drain is needed any more.
		plan.DrainStart = nil
	case plan.DrainStart != nil:
		end := plan.DrainStart.Add(in.Drain)
		if in.Now.Before(end) {
			plan.Replicas = *in.Current
			plan.RequeueAfter = end.Sub(in.Now)
		} else {
			plan.DrainStart = nil
		}
	}
	// Without a drain start, the pods above Desired were never listed since
	// the last completed drain (any shrink of the list records one), so they
	// go at once.
	return plan
}
