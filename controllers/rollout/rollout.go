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
	// Ready tells whether its pod is ready and not terminating: its
	// start-up gate is open. A listed peer that is ready answers clients,
	// whatever its routes or KV config: those decide when a peer may join
	// the list, never whether restarting it takes answers away.
	Ready bool
	// MayAnswer is set for a peer whose pod is not ready yet that may
	// answer already (the operator just opened its gate): it is not
	// restarted as a silent peer, nor counted on.
	MayAnswer bool
}

// answers tells whether clients get answers from the peer now.
func (p Peer) answers() bool { return p.Listed && p.Ready }

// silent tells whether restarting the peer takes nothing from clients.
func (p Peer) silent() bool { return !p.Listed || !p.Ready && !p.MayAnswer }

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
	// ListsSettled tells whether every client list is known to hold the
	// listed peers (no write of one is pending or refused): only then do
	// the listed peers that are ready answer clients for sure.
	ListsSettled bool
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
//   - an outdated peer that answers no client (not listed, or not ready)
//     goes first, highest ordinal first: restarting it takes nothing from
//     clients;
//   - an outdated peer that answers goes only when every other listed peer
//     answers, every client list is known to hold the listed peers, and at
//     least replicas - maxUnavailable peers would still answer without it.
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
		if in.Peers[o].silent() {
			d.Restart = o
			return d
		}
	}

	answering := int32(0)
	var silent []int32
	for o, p := range in.Peers {
		if o >= in.Desired {
			continue
		}
		if p.answers() {
			answering++
		} else if p.Listed {
			silent = append(silent, o)
		}
	}
	if len(silent) > 0 {
		slices.Sort(silent)
		d.Waiting = fmt.Sprintf("waiting for listed %s to be ready", ordinalList(silent))
		return d
	}
	if !in.ListsSettled {
		d.Waiting = "waiting for every address ConfigMap to hold the client list"
		return d
	}
	if floor := in.Desired - in.MaxUnavailable; answering-1 < floor {
		d.Waiting = fmt.Sprintf("waiting for %d peers to answer clients: restarting one now would leave %d, fewer than replicas - maxUnavailable (%d)", floor+1, answering-1, floor)
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
