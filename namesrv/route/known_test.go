package route

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
)

// forgetKnown makes every next registration of tb read all its topics
// through the index, as before liveInfo.known existed.
func forgetKnown(tb *Table) {
	for _, li := range tb.live {
		li.known = nil
	}
}

// knownUsable reports whether r's next application may skip topics.
func knownUsable(tb *Table, r *Registration) bool {
	li := tb.live[liveKey{r.Cluster, r.BrokerAddr}]
	b := tb.brokers[r.BrokerName]
	return li != nil && b != nil && li.known != nil && li.brokerName == r.BrokerName && li.topicsGen == b.topicsGen
}

// sameTables compares every route of two tables.
func sameTables(t *testing.T, step string, got, want *Table, names []string) {
	t.Helper()
	for _, name := range names {
		for _, d := range []fjson.Dialect{fjson.Legacy, fjson.Standard} {
			g, gok := got.Route([]byte(name), d)
			w, wok := want.Route([]byte(name), d)
			if gok != wok || string(g) != string(w) {
				t.Fatalf("%s: topic %s:\n got %s (%v)\nwant %s (%v)", step, name, g, gok, w, wok)
			}
		}
	}
	if g, w := got.AllTopics(), want.AllTopics(); !slices.Equal(g, w) {
		t.Fatalf("%s: topics %v, want %v", step, g, w)
	}
}

// TestKnownTopicsChangeNothing applies random sequences of registrations
// (topics reordered, added, dropped, changed and named twice; same and
// new DataVersions; masters, slaves and 5.x prime slaves) and of the
// other writes to a broker's queue data (write permissions, topic
// deletion and registration, unregistration, pruning) to two tables, one
// of which forgets every registration's known topics: their routes must
// never differ. The other way round, this also checks that the known
// topics were used at all.
func TestKnownTopicsChangeNothing(t *testing.T) {
	universe := make([]string, 12)
	for i := range universe {
		universe[i] = fmt.Sprintf("T%02d", i)
	}
	type member struct {
		name, addr string
		id         int64
	}
	members := []member{{"b1", "10.0.0.1:1", 0}, {"b1", "10.0.0.2:1", 1}, {"b2", "10.0.0.3:1", 0}, {"b3", "10.0.0.4:1", 1}}
	usable := 0
	for seed := range uint64(25) {
		rng := rand.New(rand.NewPCG(seed, 27))
		fast, _ := newTable(t)
		ref, _ := newTable(t)
		counters := map[string]int64{}
		order := slices.Clone(universe)
		for step := range 200 {
			what := fmt.Sprintf("seed %d step %d", seed, step)
			switch op := rng.IntN(20); {
			case op < 14:
				m := members[rng.IntN(len(members))]
				// A broker's topics keep their order, but topics come,
				// go and move.
				if rng.IntN(4) == 0 {
					i, j := rng.IntN(len(order)), rng.IntN(len(order))
					order[i], order[j] = order[j], order[i]
				}
				var tcs []body.TopicConfig
				for _, name := range order {
					if rng.IntN(8) == 0 {
						continue
					}
					tc := body.TopicConfig{Name: []byte(name), ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6}
					if rng.IntN(6) == 0 {
						tc.WriteQueueNums = int32(rng.IntN(3) + 1)
					}
					tcs = append(tcs, tc)
					if rng.IntN(30) == 0 {
						dup := tc
						dup.Perm = int32(rng.IntN(8))
						tcs = append(tcs, dup)
					}
				}
				if rng.IntN(3) == 0 {
					counters[m.addr]++
				}
				acting := rng.IntN(2) == 0
				mk := func() *Registration {
					r := reg("c", m.name, m.id, m.addr, counters[m.addr], nil, slices.Clone(tcs)...)
					r.Modern = m.name == "b3"
					r.ActingMaster = r.Modern && acting
					return r
				}
				r := mk()
				if knownUsable(fast, r) {
					usable++
				}
				if got, want := fast.Register(r), ref.Register(mk()); got != want {
					t.Fatalf("%s: register %+v, want %+v", what, got, want)
				}
			case op == 14:
				name := []string{"b1", "b2", "b3"}[rng.IntN(3)]
				fast.WipeWritePerm(name)
				ref.WipeWritePerm(name)
			case op == 15:
				name := []string{"b1", "b2", "b3"}[rng.IntN(3)]
				fast.AddWritePerm(name)
				ref.AddWritePerm(name)
			case op == 16:
				name, cluster := universe[rng.IntN(len(universe))], []string{"", "c"}[rng.IntN(2)]
				fast.DeleteTopic(name, cluster)
				ref.DeleteTopic(name, cluster)
			case op == 17:
				name := universe[rng.IntN(len(universe))]
				q := []body.QueueData{{BrokerName: "b1", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}}
				fast.RegisterTopic(name, q)
				ref.RegisterTopic(name, slices.Clone(q))
			case op == 18:
				m := members[rng.IntN(len(members))]
				u := Unregistration{Cluster: "c", BrokerAddr: m.addr, BrokerName: m.name}
				fast.Unregister(u)
				ref.Unregister(u)
			default:
				on := rng.IntN(2) == 0
				fast.SetDeleteTopicWithBrokerRegistration(on)
				ref.SetDeleteTopicWithBrokerRegistration(on)
			}
			forgetKnown(ref)
			sameTables(t, what, fast, ref, universe)
		}
	}
	t.Logf("%d registrations could use their known topics", usable)
	if usable < 500 {
		t.Fatalf("only %d registrations could use their address's known topics", usable)
	}
}

// TestKnownTopicsAfterATopicNamedTwice: a body that names a topic twice
// leaves it with its last entry's data, and the next registration must
// not take the first entry's data for what the topic holds.
func TestKnownTopicsAfterATopicNamedTwice(t *testing.T) {
	for _, tt := range []struct {
		name   string
		bodies [][]string
		want   int32 // X's write queues at the end
	}{
		{"twice, then the first entry changes", [][]string{{"X:8:1:6", "Y:8:8:6", "X:8:2:6"}, {"X:8:4:6", "Y:8:8:6", "X:8:2:6"}}, 2},
		{"twice, then once with the first entry's data", [][]string{{"X:8:1:6", "Y:8:8:6", "X:8:2:6"}, {"X:8:1:6", "Y:8:8:6"}}, 1},
		{"once, then twice", [][]string{{"X:8:1:6", "Y:8:8:6"}, {"X:8:1:6", "Y:8:8:6", "X:8:3:6"}, {"X:8:1:6", "Y:8:8:6"}}, 1},
		{"once, then twice with the second entry unchanged", [][]string{{"Y:8:8:6", "X:8:1:6"}, {"X:8:5:6", "X:8:1:6"}}, 1},
		{"once, then twice with the first entry unchanged", [][]string{{"X:8:1:6", "Y:8:8:6"}, {"X:8:1:6", "X:8:5:6"}, {"X:8:1:6", "Y:8:8:6"}}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tb, _ := newTable(t)
			for i, specs := range tt.bodies {
				tb.Register(reg("c", "b", 0, "10.0.0.1:1", int64(i+1), nil, topics(specs...)...))
			}
			rd, ok := tb.RouteData("X")
			if !ok || rd.QueueDatas[0].WriteQueueNums != tt.want {
				t.Fatalf("X: %+v, want %d write queues", rd, tt.want)
			}
		})
	}
}
