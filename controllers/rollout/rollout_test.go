package rollout

import (
	"slices"
	"strings"
	"testing"

	// Accepts the flags of TestSimulation: go test ./controllers/... -seed N.
	_ "github.com/kube-namesrv/kube-namesrv/controllers/internal/testflags"
)

// peers builds ordinals 0..len(spec)-1 from a compact spec, one letter per
// ordinal: S = updated and ready, s = outdated and ready, N = updated, not
// ready, n = outdated, not ready, T = terminating, M = missing.
// Every existing peer is listed unless in unlisted.
func peers(spec string, unlisted ...int32) map[int32]Peer {
	out := map[int32]Peer{}
	for i, c := range spec {
		o := int32(i)
		listed := !slices.Contains(unlisted, o)
		switch c {
		case 'S':
			out[o] = Peer{Exists: true, Updated: true, Ready: true, Listed: listed}
		case 's':
			out[o] = Peer{Exists: true, Ready: true, Listed: listed}
		case 'N':
			out[o] = Peer{Exists: true, Updated: true, Listed: listed}
		case 'n':
			out[o] = Peer{Exists: true, Listed: listed}
		case 'T':
			out[o] = Peer{Exists: true, Terminating: true, Listed: listed}
		case 'M':
		}
	}
	return out
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name        string
		in          Input
		restart     int32
		outdated    []int32
		paused      bool
		waitingLike string
	}{
		{name: "nothing outdated", in: Input{Desired: 3, Peers: peers("SSS"), MaxUnavailable: 1, ListsSettled: true}, restart: -1},
		{name: "highest outdated serving peer first", in: Input{Desired: 3, Peers: peers("sss"), MaxUnavailable: 1, ListsSettled: true}, restart: 2, outdated: []int32{0, 1, 2}},
		{name: "next one once the restarted one serves again", in: Input{Desired: 3, Peers: peers("ssS"), MaxUnavailable: 1, ListsSettled: true}, restart: 1, outdated: []int32{0, 1}},
		{name: "one at a time: the restarted pod is still terminating", in: Input{Desired: 3, Peers: peers("ssT"), MaxUnavailable: 1, ListsSettled: true}, restart: -1, outdated: []int32{0, 1}, waitingLike: "ordinal 2 to be replaced"},
		{name: "one at a time: the restarted pod is being recreated", in: Input{Desired: 3, Peers: peers("ssM"), MaxUnavailable: 1, ListsSettled: true}, restart: -1, outdated: []int32{0, 1}, waitingLike: "ordinal 2 to be replaced"},
		{name: "the restarted peer is back but not complete yet: wait", in: Input{Desired: 3, Peers: peers("ssN"), MaxUnavailable: 1, ListsSettled: true}, restart: -1, outdated: []int32{0, 1}, waitingLike: "listed ordinal 2"},
		{name: "an outdated peer that does not serve goes first (replicas 2)", in: Input{Desired: 2, Peers: peers("ns"), MaxUnavailable: 1, ListsSettled: true}, restart: 0, outdated: []int32{0, 1}},
		{name: "an outdated peer that does not serve goes first (replicas 3)", in: Input{Desired: 3, Peers: peers("sns"), MaxUnavailable: 1, ListsSettled: true}, restart: 1, outdated: []int32{0, 1, 2}},
		{name: "a serving peer is never restarted while another listed one does not serve (replicas 2)", in: Input{Desired: 2, Peers: peers("Ns"), MaxUnavailable: 1, ListsSettled: true}, restart: -1, outdated: []int32{1}, waitingLike: "listed ordinal 0"},
		{name: "a serving peer is never restarted while another listed one does not serve (replicas 3)", in: Input{Desired: 3, Peers: peers("sNs"), MaxUnavailable: 2, ListsSettled: true}, restart: -1, outdated: []int32{0, 2}, waitingLike: "listed ordinal 1"},
		{name: "an unlisted new peer that does not serve yet does not hold the roll", in: Input{Desired: 3, Peers: peers("ssN", 2), MaxUnavailable: 2, ListsSettled: true}, restart: 1, outdated: []int32{0, 1}},
		{name: "replicas - maxUnavailable peers must keep serving", in: Input{Desired: 3, Peers: peers("ssS", 2), MaxUnavailable: 0, ListsSettled: true}, restart: -1, outdated: []int32{0, 1}, waitingLike: "fewer than replicas - maxUnavailable"},
		{name: "a single peer rolls: nothing else could serve", in: Input{Desired: 1, Peers: peers("s"), MaxUnavailable: 1, ListsSettled: true}, restart: 0, outdated: []int32{0}},
		{name: "paused: nothing restarts", in: Input{Desired: 3, Peers: peers("sss"), MaxUnavailable: 1, Paused: true, ListsSettled: true}, restart: -1, outdated: []int32{0, 1, 2}, paused: true},
		{name: "paused with nothing outdated is not reported as holding", in: Input{Desired: 3, Peers: peers("SSS"), MaxUnavailable: 1, Paused: true, ListsSettled: true}, restart: -1},
		{name: "a ready peer waits while a client list may not hold the listed peers", in: Input{Desired: 3, Peers: peers("sss"), MaxUnavailable: 1}, restart: -1, outdated: []int32{0, 1, 2}, waitingLike: "every address ConfigMap"},
		{name: "a peer that answers no client goes first even then", in: Input{Desired: 3, Peers: peers("ssn"), MaxUnavailable: 1}, restart: 2, outdated: []int32{0, 1, 2}},
		{name: "a listed peer whose gate was just opened is not restarted as a silent one", in: Input{Desired: 2, Peers: map[int32]Peer{
			0: {Exists: true, Listed: true, MayAnswer: true}, 1: {Exists: true, Listed: true, Ready: true}}, MaxUnavailable: 1, ListsSettled: true},
			restart: -1, outdated: []int32{0, 1}, waitingLike: "listed ordinal 0 to be ready"},
		{name: "draining peers above Desired are never rolled", in: Input{Desired: 2, Peers: peers("SSss"), MaxUnavailable: 1, ListsSettled: true}, restart: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.in)
			if d.Restart != tt.restart || !slices.Equal(d.Outdated, tt.outdated) || d.Paused != tt.paused {
				t.Errorf("Decide() = %+v, want restart %d, outdated %v, paused %v", d, tt.restart, tt.outdated, tt.paused)
			}
			if (tt.waitingLike == "") != (d.Waiting == "") || !strings.Contains(d.Waiting, tt.waitingLike) {
				t.Errorf("Waiting = %q, want one containing %q", d.Waiting, tt.waitingLike)
			}
			if d.InProgress() != (len(tt.outdated) > 0) {
				t.Errorf("InProgress() = %v with outdated %v", d.InProgress(), d.Outdated)
			}
		})
	}
}

// TestRollNeverEmptiesTheList replays rolls of 2 and 3 peers, with every
// possible peer already not serving at the start: after each restart the
// restarted peer takes a few steps to be ready again. No step may leave fewer
// peers serving than before the roll, minus one, and every roll ends.
func TestRollNeverEmptiesTheList(t *testing.T) {
	for _, n := range []int32{2, 3} {
		for down := int32(-1); down < n; down++ {
			ps := map[int32]Peer{}
			for o := range n {
				ps[o] = Peer{Exists: true, Listed: true, Ready: o != down}
			}
			servingAtStart := n
			if down >= 0 {
				servingAtStart--
			}
			warming := map[int32]int{}
			for step := 0; ; step++ {
				if step > 100 {
					t.Fatalf("n=%d down=%d: no end", n, down)
				}
				for o, left := range warming {
					if left == 0 {
						p := ps[o]
						p.Exists, p.Terminating, p.Ready = true, false, true
						ps[o] = p
						delete(warming, o)
					} else {
						warming[o] = left - 1
					}
				}
				d := Decide(Input{Desired: n, Peers: ps, MaxUnavailable: 1, ListsSettled: true})
				if !d.InProgress() && len(warming) == 0 {
					break
				}
				if d.Restart >= 0 {
					wasServing := ps[d.Restart].Ready
					ps[d.Restart] = Peer{Exists: true, Updated: true, Listed: true}
					warming[d.Restart] = 2
					serving := int32(0)
					for _, p := range ps {
						if p.Ready {
							serving++
						}
					}
					if wasServing && serving < servingAtStart-1 {
						t.Fatalf("n=%d down=%d step %d: restarting %d left %d serving", n, down, step, d.Restart, serving)
					}
					if serving == 0 && servingAtStart > 0 && wasServing {
						t.Fatalf("n=%d down=%d step %d: no peer serves", n, down, step)
					}
				}
			}
		}
	}
}
