package routecheck

import (
	"slices"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"

	// Accepts the flags of TestSimulation: go test ./controllers/... -seed N.
	_ "github.com/kube-namesrv/kube-namesrv/controllers/internal/testflags"
)

var (
	t0    = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	round = 30 * time.Second
	// long ago: every peer and broker started well before t0.
	longAgo = t0.Add(-time.Hour)
)

func broker(addr string, registered time.Time, counter int64) peerstatus.Broker {
	return peerstatus.Broker{
		BrokerKey:    peerstatus.BrokerKey{Cluster: "DefaultCluster", Addr: addr},
		BrokerName:   "broker-" + addr,
		DataVersion:  peerstatus.DataVersion{Timestamp: 1000, Counter: counter},
		RegisteredAt: registered,
		LastUpdate:   t0,
	}
}

func read(boot string, started time.Time, brokers ...peerstatus.Broker) Observation {
	return Observation{Summary: &peerstatus.Summary{BootID: boot, StartTime: started, Brokers: brokers}, ReadAt: t0}
}

func keys(bs ...peerstatus.Broker) []peerstatus.BrokerKey {
	out := []peerstatus.BrokerKey{}
	for _, b := range bs {
		out = append(out, b.BrokerKey)
	}
	return out
}

func TestCheck(t *testing.T) {
	a := broker("10.0.0.1:10911", longAgo, 1)
	b := broker("10.0.0.2:10911", longAgo, 1)
	fresh := broker("10.0.0.3:10911", t0.Add(-time.Second), 1)
	tests := []struct {
		name       string
		in         Input
		complete   map[int32]bool
		missing    map[int32][]peerstatus.BrokerKey
		expect     map[int32][]peerstatus.BrokerKey
		diffs      []Difference
		unreadable []int32
		confirmAt  time.Time
	}{
		{
			name: "all serving peers agree",
			in: Input{Now: t0, Round: round, Serving: []int32{0, 1, 2}, Peers: map[int32]Observation{
				0: read("a", longAgo, a, b), 1: read("b", longAgo, a, b), 2: read("c", longAgo, b, a),
			}},
			complete: map[int32]bool{0: true, 1: true, 2: true},
			missing:  map[int32][]peerstatus.BrokerKey{0: nil, 1: nil, 2: nil},
			expect:   map[int32][]peerstatus.BrokerKey{0: keys(a, b), 1: keys(a, b), 2: keys(a, b)},
		},
		{
			name: "a new, empty peer is incomplete and waits for every broker; not a disagreement",
			in: Input{Now: t0, Round: round, Serving: []int32{0, 1}, Peers: map[int32]Observation{
				0: read("a", longAgo, a, b), 1: read("b", longAgo, a, b), 2: read("c", t0.Add(-time.Second)),
			}},
			complete: map[int32]bool{0: true, 1: true, 2: false},
			missing:  map[int32][]peerstatus.BrokerKey{0: nil, 1: nil, 2: keys(a, b)},
			expect:   map[int32][]peerstatus.BrokerKey{0: keys(a, b), 1: keys(a, b), 2: keys(a, b)},
		},
		{
			name: "no serving peer yet: every peer is complete and gates open at once",
			in: Input{Now: t0, Round: round, Peers: map[int32]Observation{
				0: read("a", t0), 1: read("b", t0),
			}},
			complete: map[int32]bool{0: true, 1: true},
			missing:  map[int32][]peerstatus.BrokerKey{0: nil, 1: nil},
			expect:   map[int32][]peerstatus.BrokerKey{0: {}, 1: {}},
		},
		{
			name: "a broker cut off from one serving peer for long: reported, naming both",
			in: Input{Now: t0, Round: round, Serving: []int32{0, 1, 2}, Peers: map[int32]Observation{
				0: read("a", longAgo, a, b), 1: read("b", longAgo, a), 2: read("c", longAgo, a, b),
			}},
			complete: map[int32]bool{0: true, 1: false, 2: true},
			missing:  map[int32][]peerstatus.BrokerKey{0: nil, 1: keys(b), 2: nil},
			expect:   map[int32][]peerstatus.BrokerKey{0: keys(a, b), 1: keys(a, b), 2: keys(a, b)},
			diffs:    []Difference{{Ordinal: 1, Broker: b, Since: longAgo}},
		},
		{
			name: "a broker that just registered with some peers: not reported yet, confirmed a round and a quarter later",
			in: Input{Now: t0, Round: round, Serving: []int32{0, 1}, Peers: map[int32]Observation{
				0: read("a", longAgo, a, fresh), 1: read("b", longAgo, a),
			}},
			complete:  map[int32]bool{0: true, 1: false},
			missing:   map[int32][]peerstatus.BrokerKey{0: nil, 1: keys(fresh)},
			expect:    map[int32][]peerstatus.BrokerKey{0: keys(a), 1: keys(a, fresh)},
			confirmAt: fresh.RegisteredAt.Add(Threshold(round)),
		},
		{
			name: "a serving peer that just restarted: its difference counts from its start",
			in: Input{Now: t0, Round: round, Serving: []int32{0, 1}, Peers: map[int32]Observation{
				0: read("a", longAgo, a), 1: read("b2", t0.Add(-10*time.Second)),
			}},
			complete:  map[int32]bool{0: true, 1: false},
			missing:   map[int32][]peerstatus.BrokerKey{0: nil, 1: keys(a)},
			expect:    map[int32][]peerstatus.BrokerKey{0: {}, 1: keys(a)},
			confirmAt: t0.Add(-10 * time.Second).Add(Threshold(round)),
		},
		{
			name: "a serving peer that cannot be read: others' completeness is unknown, never assumed",
			in: Input{Now: t0, Round: round, Serving: []int32{0, 1}, Peers: map[int32]Observation{
				0: {Err: "connection refused", ReadAt: t0}, 1: read("b", longAgo, a), 2: read("c", t0),
			}},
			complete:   map[int32]bool{},
			missing:    map[int32][]peerstatus.BrokerKey{1: nil, 2: keys(a)},
			expect:     map[int32][]peerstatus.BrokerKey{},
			unreadable: []int32{0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mem Memory
			res := Check(tt.in, &mem)
			if len(res.Complete) != len(tt.complete) {
				t.Errorf("Complete = %v, want %v", res.Complete, tt.complete)
			}
			for o, want := range tt.complete {
				if got, ok := res.Complete[o]; !ok || got != want {
					t.Errorf("Complete[%d] = %v (%v), want %v", o, got, ok, want)
				}
			}
			for o, want := range tt.missing {
				var got []peerstatus.BrokerKey
				for _, m := range res.Missing[o] {
					got = append(got, m.Broker.BrokerKey)
				}
				if !slices.Equal(got, want) {
					t.Errorf("Missing[%d] = %v, want %v", o, got, want)
				}
			}
			if len(res.Expect) != len(tt.expect) {
				t.Errorf("Expect = %v, want %v", res.Expect, tt.expect)
			}
			for o, want := range tt.expect {
				if got := res.Expect[o]; !slices.Equal(got, want) {
					t.Errorf("Expect[%d] = %v, want %v", o, got, want)
				}
			}
			if !slices.Equal(res.Differences, tt.diffs) {
				t.Errorf("Differences = %+v, want %+v", res.Differences, tt.diffs)
			}
			if !slices.Equal(res.Unreadable, tt.unreadable) {
				t.Errorf("Unreadable = %v, want %v", res.Unreadable, tt.unreadable)
			}
			if !res.ConfirmAt.Equal(tt.confirmAt) {
				t.Errorf("ConfirmAt = %v, want %v", res.ConfirmAt, tt.confirmAt)
			}
		})
	}
}

// TestCheckRemembers: a peer that held a broker and then lost it, without
// restarting, is given a round and a quarter from the moment it was last
// seen holding it, not from the broker's first registration.
func TestCheckRemembers(t *testing.T) {
	a := broker("10.0.0.1:10911", longAgo, 1)
	var mem Memory
	in := Input{Now: t0, Round: round, Serving: []int32{0, 1}, Peers: map[int32]Observation{
		0: read("a", longAgo, a), 1: read("b", longAgo, a),
	}}
	if res := Check(in, &mem); len(res.Differences) != 0 {
		t.Fatalf("differences while agreeing: %+v", res.Differences)
	}
	later := t0.Add(round)
	lost := read("b", longAgo)
	lost.ReadAt = later
	held := read("a", longAgo, a)
	held.ReadAt = later
	in = Input{Now: later, Round: round, Serving: []int32{0, 1}, Peers: map[int32]Observation{0: held, 1: lost}}
	res := Check(in, &mem)
	if len(res.Differences) != 0 || !res.ConfirmAt.Equal(t0.Add(Threshold(round))) {
		t.Fatalf("after losing the broker: differences %+v, confirm at %v; want none yet, confirmation at %v", res.Differences, res.ConfirmAt, t0.Add(Threshold(round)))
	}
	in.Now = t0.Add(Threshold(round))
	res = Check(in, &mem)
	if len(res.Differences) != 1 || res.Differences[0].Ordinal != 1 || !res.Differences[0].Since.Equal(t0) {
		t.Fatalf("at the threshold: %+v, want peer 1 lacking the broker since %v", res.Differences, t0)
	}
}

// TestCheckVersions: serving peers that hold one broker at different
// DataVersions are reported once that lasts past the threshold, naming the
// peer with the older version; the split is forgotten once they agree.
func TestCheckVersions(t *testing.T) {
	old := broker("10.0.0.1:10911", longAgo, 1)
	cur := broker("10.0.0.1:10911", longAgo, 2)
	var mem Memory
	in := Input{Now: t0, Round: round, Serving: []int32{0, 1}, Peers: map[int32]Observation{
		0: read("a", longAgo, cur), 1: read("b", longAgo, old),
	}}
	res := Check(in, &mem)
	if len(res.Differences) != 0 || !res.ConfirmAt.Equal(t0.Add(Threshold(round))) {
		t.Fatalf("first sight of a split: %+v, confirm at %v", res.Differences, res.ConfirmAt)
	}
	in.Now = t0.Add(Threshold(round))
	res = Check(in, &mem)
	if len(res.Differences) != 1 || res.Differences[0].Ordinal != 1 || !res.Differences[0].VersionDiffers {
		t.Fatalf("split past the threshold: %+v, want peer 1 at an older version", res.Differences)
	}
	in.Peers[1] = read("b", longAgo, cur)
	if res = Check(in, &mem); len(res.Differences) != 0 || !res.ConfirmAt.IsZero() {
		t.Fatalf("after agreeing again: %+v", res.Differences)
	}
	in.Peers[1] = read("b", longAgo, old)
	if res = Check(in, &mem); len(res.Differences) != 0 {
		t.Fatalf("a new split is timed afresh: %+v", res.Differences)
	}
}
