package kvcheck

import (
	"slices"
	"strings"
	"testing"

	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"

	// Accepts the flags of TestSimulation: go test ./controllers/... -seed N.
	_ "github.com/kube-namesrv/kube-namesrv/controllers/internal/testflags"
)

func TestCheck(t *testing.T) {
	const want = "d1"
	drift := []peerstatus.KVDrift{{Namespace: "ORDER_TOPIC_CONFIG", Key: "TopicA", Reason: peerstatus.DriftDiffers}}
	tests := []struct {
		name   string
		policy string
		peer   Peer
		want   Verdict
		like   string
	}{
		{name: "unreadable", policy: peerstatus.PolicyOwned, peer: Peer{}, want: Verdict{}},
		{name: "in sync", policy: peerstatus.PolicyOwned, peer: Peer{Readable: true, KV: &peerstatus.KVStatus{Digest: want, InSync: true}},
			want: Verdict{Known: true, Delivered: true, InSync: true, Satisfied: true}},
		{name: "hand-made drift under Owned: apply again, no clients meanwhile", policy: peerstatus.PolicyOwned,
			peer: Peer{Readable: true, KV: &peerstatus.KVStatus{Digest: want, Drift: drift}},
			want: Verdict{Known: true, Delivered: true, Apply: true, Blocks: true}, like: "ORDER_TOPIC_CONFIG/TopicA: differs"},
		{name: "hand-made drift under Owned on a peer that calls it in sync: still applied", policy: peerstatus.PolicyOwned,
			peer: Peer{Readable: true, KV: &peerstatus.KVStatus{Digest: want, InSync: true, Drift: drift}},
			want: Verdict{Known: true, Delivered: true, Apply: true, Blocks: true}, like: "ORDER_TOPIC_CONFIG/TopicA: differs"},
		// A NameServer under Additive counts a hand-made value as in sync
		// with its policy; the operator still reports it.
		{name: "hand-made drift under Additive: reported only, tolerated", policy: peerstatus.PolicyAdditive,
			peer: Peer{Readable: true, KV: &peerstatus.KVStatus{Digest: want, InSync: true, Drift: drift}},
			want: Verdict{Known: true, Delivered: true, Satisfied: true}, like: "ORDER_TOPIC_CONFIG/TopicA: differs"},
		{name: "a missing declared key under Additive: applied again, no new clients meanwhile", policy: peerstatus.PolicyAdditive,
			peer: Peer{Readable: true, KV: &peerstatus.KVStatus{Digest: want, Drift: []peerstatus.KVDrift{{Namespace: "n", Key: "k", Reason: peerstatus.DriftMissing}}}},
			want: Verdict{Known: true, Delivered: true, Apply: true, Blocks: true}, like: "n/k: missing"},
		{name: "hand-made drift under Exclusive: apply again", policy: peerstatus.PolicyExclusive,
			peer: Peer{Readable: true, KV: &peerstatus.KVStatus{Digest: want, Drift: drift}},
			want: Verdict{Known: true, Delivered: true, Apply: true, Blocks: true}, like: "ORDER_TOPIC_CONFIG/TopicA: differs"},
		{name: "an older declaration: waits for the kubelet, never forced", policy: peerstatus.PolicyOwned,
			peer: Peer{Readable: true, KV: &peerstatus.KVStatus{Digest: "d0", InSync: true}},
			want: Verdict{Known: true, Blocks: true}, like: "has not reached this peer yet"},
		{name: "no declared-KV file configured", policy: peerstatus.PolicyOwned, peer: Peer{Readable: true},
			want: Verdict{Known: true, Blocks: true}, like: "no declared-KV file"},
		{name: "a file it cannot apply", policy: peerstatus.PolicyOwned, peer: Peer{Readable: true, KV: &peerstatus.KVStatus{Digest: want, Error: "bad JSON"}},
			want: Verdict{Known: true, Blocks: true}, like: "cannot be applied: bad JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(want, tt.policy, map[int32]Peer{3: tt.peer})[3]
			if got.Known != tt.want.Known || got.Delivered != tt.want.Delivered || got.InSync != tt.want.InSync || got.Satisfied != tt.want.Satisfied || got.Apply != tt.want.Apply || got.Blocks != tt.want.Blocks {
				t.Errorf("Check() = %+v, want %+v", got, tt.want)
			}
			if tt.like == "" && len(got.Drift) > 0 || tt.like != "" && !slices.ContainsFunc(got.Drift, func(d string) bool { return strings.Contains(d, tt.like) }) {
				t.Errorf("Drift = %q, want one like %q", got.Drift, tt.like)
			}
		})
	}
}

func TestTrack(t *testing.T) {
	tests := []struct {
		name                       string
		before, removedBefore, now []string
		inSync                     bool
		wantDeclared, wantRemoved  []string
	}{
		{name: "first declaration", now: []string{"ns/b", "ns/a"}, wantDeclared: []string{"ns/a", "ns/b"}},
		{name: "an entry removed", before: []string{"ns/a", "ns/b"}, now: []string{"ns/a"}, wantDeclared: []string{"ns/a"}, wantRemoved: []string{"ns/b"}},
		{name: "removals kept until every peer is in sync", before: []string{"ns/a"}, removedBefore: []string{"ns/b"}, now: []string{"ns/a"},
			wantDeclared: []string{"ns/a"}, wantRemoved: []string{"ns/b"}},
		{name: "removals forgotten once every peer is in sync", before: []string{"ns/a"}, removedBefore: []string{"ns/b"}, now: []string{"ns/a"}, inSync: true,
			wantDeclared: []string{"ns/a"}},
		{name: "a removed key declared again is no longer removed", before: []string{"ns/a"}, removedBefore: []string{"ns/b"}, now: []string{"ns/a", "ns/b"},
			wantDeclared: []string{"ns/a", "ns/b"}},
		{name: "everything removed", before: []string{"ns/a", "x/y"}, now: nil, wantRemoved: []string{"ns/a", "x/y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, r := Track(tt.before, tt.removedBefore, tt.now, tt.inSync)
			if !slices.Equal(d, tt.wantDeclared) || !slices.Equal(r, tt.wantRemoved) {
				t.Errorf("Track() = %v, %v; want %v, %v", d, r, tt.wantDeclared, tt.wantRemoved)
			}
		})
	}
}
