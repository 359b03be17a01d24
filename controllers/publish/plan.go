// Package publish decides which peers are in the client list and how many
// pods the StatefulSet keeps, from state that is persisted in the cluster's
// status. Being a pure function of that state and of what the peers are
// observed to do, the decision is the same after a manager restart, so a
// restarted operator never publishes a list that a running one would not.
package publish

import (
	"slices"
	"time"
)

// Input is what the plan depends on.
type Input struct {
	// Desired is spec.replicas.
	Desired int32
	// Published are the ordinals of the client list now
	// (status.peers[].published), in any order.
	Published []int32
	// DrainStart is status.drainStartTime, nil when no drain is running.
	DrainStart *time.Time
	// Drain is spec.publish.drainSeconds.
	Drain time.Duration
	// Current is the existing StatefulSet's spec.replicas, nil without one.
	Current *int32
	// Joinable tells whether the peer of an ordinal may join the client
	// list now: its pod is ready and it was checked to hold every broker the
	// other serving peers hold and the declared KV config (or, when the
	// operator cannot read it, ready).
	Joinable func(ordinal int32) bool
	// Ready tells whether the pod of an ordinal is ready and not
	// terminating: a listed peer that is ready answers clients, whatever
	// its routes or KV config. It guards removals, Joinable only joins.
	Ready func(ordinal int32) bool
	// MayAnswer tells whether the peer of an ordinal may answer clients
	// although its pod is not ready yet (the operator just opened its
	// gate): such a peer is not removed as if it were silent. Nil for
	// none.
	MayAnswer func(ordinal int32) bool
	// Now is the reconcile's time.
	Now time.Time
}

// Plan is what the reconciler applies and persists.
type Plan struct {
	// Published are the ordinals of the new client list, sorted.
	Published []int32
	// Replicas is the StatefulSet's spec.replicas; the broker list names
	// ordinals 0..Replicas-1.
	Replicas int32
	// DrainStart is the new status.drainStartTime.
	DrainStart *time.Time
	// RequeueAfter is the time left in the drain (zero when none runs); the
	// reconciler is called again then, without polling.
	RequeueAfter time.Duration
	// Held is set while a scale-down waits: removing the peers above
	// Desired would keep peers that answer no client (HeldFor) in place of
	// peers that answer.
	Held    bool
	HeldFor []int32
	// Waiting are the ordinals below Desired not in the client list yet.
	Waiting []int32
}

// Draining tells whether removed peers are still running.
func (p Plan) Draining() bool { return p.DrainStart != nil }

// Decide computes the plan. The invariants it keeps:
//   - the client list only names ordinals below the StatefulSet's replicas,
//     so it never names a pod that is not meant to run;
//   - an ordinal joins the client list only while it is joinable and the
//     StatefulSet (as read) keeps its pod, whatever the ordinals below it
//     do: one pending pod does not hide the ready ones above it, and the
//     list may have gaps;
//   - a listed peer below Desired that restarts or turns unready stays
//     listed: its name is stable, brokers and clients keep it, and its
//     start-up route gate turns clients away until it serves again;
//   - a scale-down never removes a peer that answers clients while a peer
//     that would remain does not (not listed, or not ready): it is held
//     until they all do. A peer that answers but lags behind in routes or
//     KV config still answers: lag never lifts a hold;
//   - on scale-down the list shrinks first and the StatefulSet follows only
//     after the drain period, counted from the last shrink; a scale-up
//     during a drain ends it only once every running peer is listed again.
func Decide(in Input) Plan {
	plan := Plan{DrainStart: in.DrainStart}
	var removed []int32
	kept := map[int32]bool{}
	for _, o := range in.Published {
		if o < in.Desired {
			kept[o] = true
		} else {
			removed = append(removed, o)
		}
	}
	for o := range in.Desired {
		// A peer joins only once the StatefulSet's spec as read keeps its
		// pod: a scale-up the API server has yet to accept must not list
		// a pod its controller is about to delete.
		if !kept[o] && in.Current != nil && o < *in.Current && in.Joinable(o) {
			kept[o] = true
		}
		if !kept[o] {
			plan.Waiting = append(plan.Waiting, o)
		}
	}

	if len(removed) > 0 {
		for o := range in.Desired {
			if !kept[o] || !in.Ready(o) {
				plan.HeldFor = append(plan.HeldFor, o)
			}
		}
		plan.Held = len(plan.HeldFor) > 0 && slices.ContainsFunc(removed, func(o int32) bool { return in.Ready(o) || in.MayAnswer != nil && in.MayAnswer(o) })
		if plan.Held {
			for _, o := range removed {
				kept[o] = true
			}
		} else {
			// Status times have whole seconds; rounding up keeps the
			// persisted start no earlier than the real one, so the drain is
			// never short.
			start := in.Now.Truncate(time.Second)
			if start.Before(in.Now) {
				start = start.Add(time.Second)
			}
			plan.DrainStart = &start
		}
	}
	if !plan.Held {
		plan.HeldFor = nil
	}
	for o := range kept {
		plan.Published = append(plan.Published, o)
	}
	slices.Sort(plan.Published)

	plan.Replicas = in.Desired
	switch {
	case in.Current == nil:
		plan.DrainStart = nil
	case *in.Current <= in.Desired:
		// Nothing beyond Desired runs. A drain still times the peers that
		// left the list during it and were not listed again: a scale-down
		// before its end must not take them for never-listed ones.
		end := time.Time{}
		if plan.DrainStart != nil {
			end = plan.DrainStart.Add(in.Drain)
		}
		relisted := true
		for o := range *in.Current {
			relisted = relisted && kept[o]
		}
		if relisted || !in.Now.Before(end) {
			plan.DrainStart = nil
		} else {
			plan.RequeueAfter = end.Sub(in.Now)
		}
	case plan.Held:
		plan.Replicas = *in.Current
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
