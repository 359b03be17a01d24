// Package rollout decides which NameServer pod, if any, the operator restarts
// next to bring the peers to the StatefulSet's current pod template. The
// StatefulSet uses the OnDelete strategy: its own controller never restarts a
// pod for a template change, because it waits only on the ordinals above the
// one it deletes and knows nothing of route completeness. The operator paces
// the roll instead, one peer at a time, from what it observes of every peer.
package rollout

import (
	"fmt"
	"slices"
)

// Peer is one pod as the roll sees it.
type Peer struct {
	// Exists is false when the pod is missing (being recreated).
	Exists      bool
	Terminating bool
	// Updated tells whether the pod runs the current template.
	Updated bool
	// Listed tells whether the peer is in the client list.
	Listed bool
	// Serving: ready and route-complete (see publish.Input.Serving).
	Serving bool
}

// Input is what the decision depends on.
type Input struct {
	// Desired is spec.replicas; pods at and above it are draining and
	// never rolled.
	Desired int32
	// Peers by ordinal, for ordinals 0..Desired-1 at least.
	Peers map[int32]Peer
	// Paused is spec.paused.
	Paused bool
	// MaxUnavailable is the PodDisruptionBudget's, resolved to a count.
	MaxUnavailable int32
}

// Decision is at most one pod to restart now, or why none is.
type Decision struct {
	// Restart is the ordinal whose pod to delete, or -1.
	Restart int32
	// Outdated are the ordinals below Desired that run an old template.
	Outdated []int32
	// Paused is set when spec.paused holds a roll that would go on.
	Paused bool
	// Waiting says what the roll waits for, "" when it restarts a pod or
	// has nothing to do.
	Waiting string
}

// InProgress tells whether peers still run an outdated template.
func (d Decision) InProgress() bool { return len(d.Outdated) > 0 }

// Decide picks the next pod to restart. The rules:
//   - nothing happens while paused;
//   - one peer at a time: nothing happens while a pod is terminating or
//     missing (its replacement is starting);
//   - an outdated peer that does not serve goes first, highest ordinal
//     first: restarting it takes nothing from clients;
//   - an outdated peer that serves goes only when every other listed peer
//     serves, and when at least replicas - maxUnavailable peers would still
//     serve without it.
func Decide(in Input) Decision {
	d := Decision{Restart: -1}
	var busy []int32
	for o := range in.Desired {
		p, ok := in.Peers[o]
		switch {
		case !ok || !p.Exists || p.Terminating:
			busy = append(busy, o)
		case !p.Updated:
			d.Outdated = append(d.Outdated, o)
		}
	}
	if len(d.Outdated) == 0 {
		return d
	}
	if in.Paused {
		d.Paused = true
		return d
	}
	if len(busy) > 0 {
		d.Waiting = fmt.Sprintf("waiting for %s to be replaced", ordinalList(busy))
		return d
	}

	for _, o := range slices.Backward(d.Outdated) {
		if !in.Peers[o].Serving {
			d.Restart = o
			return d
		}
	}

	serving := int32(0)
	var notServing []int32
	for o, p := range in.Peers {
		if o >= in.Desired {
			continue
		}
		if p.Serving {
			serving++
		} else if p.Listed {
			notServing = append(notServing, o)
		}
	}
	if len(notServing) > 0 {
		slices.Sort(notServing)
		d.Waiting = fmt.Sprintf("waiting for listed %s to be ready and route-complete", ordinalList(notServing))
		return d
	}
	if floor := in.Desired - in.MaxUnavailable; serving-1 < floor {
		d.Waiting = fmt.Sprintf("waiting for %d peers to serve: restarting one now would leave %d, fewer than replicas - maxUnavailable (%d)", floor+1, serving-1, floor)
		return d
	}
	d.Restart = d.Outdated[len(d.Outdated)-1]
	return d
}

func ordinalList(ordinals []int32) string {
	if len(ordinals) == 1 {
		return fmt.Sprintf("ordinal %d", ordinals[0])
	}
	return fmt.Sprintf("ordinals %v", ordinals)
}
