package loadgen

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/test/nstest"
)

func TestStormBodies(t *testing.T) {
	for _, tc := range []struct {
		name       string
		storm      RegisterStorm
		counters   []int64
		changedWQN int // topics of the second body with changedWriteQueueNums
	}{
		{"heartbeat", RegisterStorm{Brokers: 2, TopicsPerBroker: 20}, []int64{1}, 0},
		{"new version", RegisterStorm{Brokers: 2, TopicsPerBroker: 20, NewVersion: true}, []int64{1, 2}, 0},
		{"changed topics", RegisterStorm{Brokers: 2, TopicsPerBroker: 20, ChangedTopics: 3}, []int64{1, 2}, 3},
		{"changed topics, zlib", RegisterStorm{Brokers: 2, TopicsPerBroker: 20, ChangedTopics: 20, Compressed: true}, []int64{1, 2}, 20},
		{"compressed above a size", RegisterStorm{Brokers: 1, TopicsPerBroker: 30, NewVersion: true, CompressAbove: 1000}, []int64{1, 2}, 0},
		{"shared names", RegisterStorm{Brokers: 3, TopicsPerBroker: 10, SharedTopics: true, NewVersion: true, FirstBroker: 7}, []int64{1, 2}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.storm
			s.Generation = body.Broker5
			if err := s.Prepare(); err != nil {
				t.Fatal(err)
			}
			wantZlib := s.Compressed || s.CompressAbove > 0
			if got := s.bodies[0][0][0] == zlibFirstByte; got != wantZlib {
				t.Errorf("zlib body %v, want %v", got, wantZlib)
			}
			if len(s.bodies) != s.Brokers {
				t.Fatalf("%d brokers' bodies, want %d", len(s.bodies), s.Brokers)
			}
			for i, bodies := range s.bodies {
				if len(bodies) != len(tc.counters) {
					t.Fatalf("broker %d alternates %d bodies, want %d", i, len(bodies), len(tc.counters))
				}
				var first *body.RegisterBody
				for v, data := range bodies {
					rb, err := body.DecodeRegisterBody(data, body.RegisterOptions{Compressed: s.Compressed, Version: protocol.V5_3_3, MaxInflated: body.DefaultMaxInflated})
					if err != nil {
						t.Fatalf("broker %d body %d: %v", i, v, err)
					}
					if rb.DataVersion.Counter != tc.counters[v] {
						t.Errorf("broker %d body %d: counter %d, want %d", i, v, rb.DataVersion.Counter, tc.counters[v])
					}
					if len(rb.Topics) != s.TopicsPerBroker {
						t.Fatalf("broker %d body %d: %d topics", i, v, len(rb.Topics))
					}
					if v == 0 {
						first = rb
						if want := TopicName(s.SharedTopics, s.FirstBroker+i, 0); string(rb.Topics[0].Name) != want {
							t.Errorf("broker %d: first topic %s, want %s", i, rb.Topics[0].Name, want)
						}
						continue
					}
					if rb.DataVersion.Timestamp != first.DataVersion.Timestamp {
						t.Errorf("broker %d: bodies differ in timestamp too", i)
					}
					changed := 0
					for k := range rb.Topics {
						if string(rb.Topics[k].Name) != string(first.Topics[k].Name) {
							t.Fatalf("broker %d: topic %d named %s and %s", i, k, first.Topics[k].Name, rb.Topics[k].Name)
						}
						if rb.Topics[k].WriteQueueNums != first.Topics[k].WriteQueueNums {
							changed++
						}
					}
					if changed != tc.changedWQN {
						t.Errorf("broker %d: %d topics changed, want %d", i, changed, tc.changedWQN)
					}
				}
			}
		})
	}
}

func TestStormRefusesBadOptions(t *testing.T) {
	for _, s := range []RegisterStorm{
		{Brokers: 0, TopicsPerBroker: 10},
		{Brokers: 1, TopicsPerBroker: 0},
		{Brokers: 1, TopicsPerBroker: 10, ChangedTopics: 11},
		{Brokers: 1, TopicsPerBroker: 10, ChangedTopics: -1},
		{Brokers: 1, TopicsPerBroker: 10, FirstBroker: -1},
		{Brokers: 1, TopicsPerBroker: 10, Spread: -time.Second},
	} {
		if err := s.Prepare(); err == nil {
			t.Errorf("%+v: no error", s)
		}
		if _, err := s.Run(context.Background()); err == nil {
			t.Errorf("%+v: Run did not refuse", s)
		}
	}
}

// TestStormAgainstARealServer checks that the alternating bodies reach the
// route table, that held brokers stay registered after their rounds, and
// that a spread storm takes about its spread.
func TestStormAgainstARealServer(t *testing.T) {
	s := nstest.Start(t, nil)
	addr := s.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	changed := &RegisterStorm{Addr: addr, Brokers: 1, TopicsPerBroker: 20, ChangedTopics: 2, Interval: time.Millisecond,
		Rounds: 2, Hold: true, Generation: body.Broker5, FirstBroker: 40, CompressAbove: 100}
	hold, release := context.WithCancel(ctx)
	done := make(chan struct{})
	changed.OnRoundsDone = func() { close(done) }
	result := make(chan *RegisterResult, 1)
	go func() {
		res, err := changed.Run(hold)
		if err != nil {
			t.Error(err)
		}
		result <- res
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("rounds not done")
	}
	// The second registration (the alternate body) changed two topics.
	for i, want := range map[int]int32{0: changedWriteQueueNums, 1: changedWriteQueueNums, 2: 8} {
		rd, ok := s.Routes().RouteData(TopicName(false, 40, i))
		if !ok || len(rd.QueueDatas) != 1 || rd.QueueDatas[0].WriteQueueNums != want {
			t.Fatalf("topic %d after two rounds: %+v", i, rd)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if st := s.Routes().Stats(); st.Topics != 20 || st.LiveBrokers != 1 {
		t.Fatalf("a held broker is not registered: %+v", st)
	}
	release()
	if res := <-result; res.Registrations != 2 || res.Errors != 0 || !res.Compressed {
		t.Fatalf("held storm %+v", res)
	}

	var registered atomic.Bool
	spread := &RegisterStorm{Addr: addr, Brokers: 4, TopicsPerBroker: 10, Rounds: 1, Spread: 200 * time.Millisecond,
		NewVersion: true, Generation: body.Broker5, OnRoundsDone: func() { registered.Store(true) }}
	res, err := spread.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Compressed {
		t.Error("JSON bodies reported as compressed")
	}
	// The last broker starts at 3/4 of the spread.
	if res.Registrations != 4 || res.Errors != 0 || res.Elapsed < 150*time.Millisecond {
		t.Fatalf("spread storm %+v", res)
	}
	if registered.Load() {
		t.Fatal("OnRoundsDone called without Hold")
	}
}
