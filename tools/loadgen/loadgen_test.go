package loadgen

import (
	"context"
	"math"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/test/nstest"
)

func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	for i := 1; i <= 100000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	for _, q := range []float64{0.5, 0.99, 0.999} {
		want := q * 100000 * float64(time.Microsecond)
		got := float64(h.Quantile(q))
		if math.Abs(got-want)/want > 0.02 {
			t.Errorf("q%v = %v, want %v within 2%%", q, time.Duration(got), time.Duration(want))
		}
	}
	if h.Count() != 100000 || h.Max() != 100*time.Millisecond {
		t.Errorf("count %d max %v", h.Count(), h.Max())
	}
	var small Histogram
	small.Record(5)
	small.Record(-1)
	if small.Quantile(1) != 5 || small.Quantile(0.01) != 0 {
		t.Errorf("small values %v %v", small.Quantile(1), small.Quantile(0.01))
	}
	var merged Histogram
	merged.Merge(&h)
	merged.Merge(&small)
	if merged.Count() != 100002 {
		t.Errorf("merged count %d", merged.Count())
	}
	for b := range bucketOf(math.MaxInt64) + 1 {
		if got := bucketOf(lowerBound(b)); got != b {
			t.Fatalf("bucket %d: lower bound %d maps back to %d", b, lowerBound(b), got)
		}
	}
}

func TestReadProcOfSelf(t *testing.T) {
	u, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.RSS < 1<<20 || u.CPU < 0 {
		t.Fatalf("usage %+v", u)
	}
	if _, err := ReadProc(-1); err == nil {
		t.Fatal("no error for a missing process")
	}
}

// TestLoadsAgainstARealServer runs short, count-bounded loads of every kind
// and checks what they report against the server's own counters.
func TestLoadsAgainstARealServer(t *testing.T) {
	s := nstest.Start(t, nil)
	addr := s.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	storm := &RegisterStorm{Addr: addr, Brokers: 3, TopicsPerBroker: 50, SharedTopics: true, Interval: time.Millisecond, Rounds: 4, Generation: body.Broker5, Compressed: true}
	res, err := storm.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Registrations != 12 || res.Errors != 0 || res.Latency.Count() != 12 {
		t.Fatalf("storm %+v", res)
	}
	if got := s.Routes().Stats().Registrations; got != 12 {
		t.Fatalf("server counted %d registrations", got)
	}

	keep, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		_, _ = (&RegisterStorm{Addr: addr, Brokers: 1, TopicsPerBroker: 10, SharedTopics: true, Interval: time.Minute, Generation: body.Broker4}).Run(keep)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for s.Routes().Stats().Topics != 10 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	for _, typ := range []remoting.SerializeType{remoting.JSON, remoting.RocketMQ} {
		load := &RouteLoad{Addr: addr, Conns: 2, Inflight: 8, Version: protocol.V4_5_2, Type: typ, MaxRequests: 5000,
			Topics: []string{TopicName(true, 0, 3), "missing-topic"}}
		r, err := load.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r.Requests != 5000 || r.Errors != 0 || r.Latency.Count() != 5000 || r.Throughput() <= 0 {
			t.Fatalf("%v: route load %+v", typ, r)
		}
	}
	if _, err := (&RouteLoad{Addr: addr}).Run(ctx); err == nil {
		t.Fatal("an empty route load must be refused")
	}
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead.Close()
	if _, err := (&RouteLoad{Addr: dead.Addr().String(), Conns: 1, Inflight: 1, Topics: []string{"x"}}).Run(ctx); err == nil {
		t.Fatal("no error for an unreachable server")
	}
}

// TestLoadsEndedBeforeConnecting: a load whose context ends before its
// connections are established (a short window on a host too busy to run
// the dial in time) stops without an error and without a result, as it
// does when the context ends later.
func TestLoadsEndedBeforeConnecting(t *testing.T) {
	s := nstest.Start(t, nil)
	addr := s.Addr().String()
	for name, ctx := range map[string]context.Context{
		"canceled": func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}(),
		"past its deadline": func() context.Context {
			ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
			t.Cleanup(cancel)
			return ctx
		}(),
	} {
		r, err := (&RouteLoad{Addr: addr, Conns: 2, Inflight: 4, Topics: []string{"t"}, Duration: time.Second,
			OnReady: func() { t.Errorf("route load, %s: ready without an answer", name) }}).Run(ctx)
		if err != nil || r == nil || r.Requests != 0 {
			t.Errorf("route load, %s: %v; want no queries and no error", name, err)
		}
		res, err := (&RegisterStorm{Addr: addr, Brokers: 2, TopicsPerBroker: 10, Generation: body.Broker5}).Run(ctx)
		if err != nil || res.Registrations != 0 {
			t.Errorf("storm, %s: %v; want no registrations and no error", name, err)
		}
	}
}

// TestRouteLoadDurationStartsUnderWay: Duration bounds the load from when
// every connection has had an answer, so that even a host too busy to
// answer within the duration gives a window with answers on every
// connection; OnReady tells, once, when that is. The load ends by itself.
func TestRouteLoadDurationStartsUnderWay(t *testing.T) {
	s := nstest.Start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const d = 200 * time.Millisecond
	var ready atomic.Int32
	r, err := (&RouteLoad{Addr: s.Addr().String(), Conns: 3, Inflight: 4, Topics: []string{"missing-topic"}, Duration: d,
		OnReady: func() { ready.Add(1) }}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := ready.Load(); n != 1 {
		t.Errorf("OnReady called %d times, want once", n)
	}
	if r.Requests < 3 || r.NotFound != r.Requests || r.Elapsed < d {
		t.Fatalf("route load of %v: %d queries, %d not found, in %v; want an answer per connection at least, in %v at least",
			d, r.Requests, r.NotFound, r.Elapsed, d)
	}
	if ctx.Err() != nil {
		t.Fatal("the load ran until its context ended, not for its duration")
	}
}
