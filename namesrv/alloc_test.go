package namesrv_test

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv"
	"github.com/kube-namesrv/kube-namesrv/namesrv/authz"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/processor"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
)

// scriptedConn is a connection whose peer sends a fixed batch of requests
// over and over, n times, and discards the answers: the whole server path
// (read, decode, process, encode, write) runs with no network in the way.
type scriptedConn struct {
	batch   []byte
	left    int
	pending []byte
	written int
	closed  chan struct{}
	once    sync.Once
}

func (c *scriptedConn) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		if c.left == 0 {
			return 0, io.EOF
		}
		c.left--
		c.pending = c.batch
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

func (c *scriptedConn) Write(p []byte) (int, error) { c.written += len(p); return len(p), nil }
func (c *scriptedConn) Close() error                { c.once.Do(func() { close(c.closed) }); return nil }
func (c *scriptedConn) LocalAddr() net.Addr         { return &net.TCPAddr{} }
func (c *scriptedConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(10, 2, 3, 4), Port: 40000}
}
func (c *scriptedConn) SetDeadline(time.Time) error      { return nil }
func (c *scriptedConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptedConn) SetWriteDeadline(time.Time) error { return nil }

// oneConnListener hands out one connection, then blocks until closed.
type oneConnListener struct {
	conn net.Conn
	done chan struct{}
	once sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	if c := l.conn; c != nil {
		l.conn = nil
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}
func (l *oneConnListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *oneConnListener) Addr() net.Addr { return &net.TCPAddr{} }

// serveScripted runs n batches of requests through the server's handler on
// one scripted connection and returns the heap allocations made meanwhile.
func serveScripted(t testing.TB, h remoting.Handler, batch []byte, n int) (allocs uint64, written int) {
	t.Helper()
	conn := &scriptedConn{batch: batch, left: n, closed: make(chan struct{})}
	srv := remoting.NewServer(h, remoting.Config{})
	l := &oneConnListener{conn: conn, done: make(chan struct{})}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	<-conn.closed
	runtime.ReadMemStats(&after)
	l.Close()
	if err := <-done; err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, remoting.ErrServerClosed) {
		t.Fatal(err)
	}
	return after.Mallocs - before.Mallocs, conn.written
}

// TestRouteQueriesDoNotAllocate pushes 64,000 pipelined route queries (JSON
// and binary, both dialects, found and missing topics) through the real
// server and processor, with authorization off and on: the steady-state
// path allocates nothing, so the whole run may allocate only a bounded
// amount of per-connection setup.
func TestRouteQueriesDoNotAllocate(t *testing.T) {
	s := startServer(t, nil)
	mustRegister(t, startBroker(t, brokersim.Config{Cluster: "c", Name: "b", Topics: []body.TopicConfig{brokersim.Topic("TopicTest", 8), brokersim.Topic("U", 8)}}), s.Addr().String())
	var batch []byte
	for i := range 64 {
		typ := remoting.SerializeType(i % 2)
		version := []int32{protocol.V4_5_2, protocol.V5_3_3}[i/2%2]
		topic := []string{"TopicTest", "%RETRY%group"}[i/4%2]
		batch = remoting.AppendFrame(batch, typ, &remoting.Header{Code: protocol.GetRouteInfoByTopic, Language: "JAVA", Version: version, Opaque: int32(i),
			Ext: []remoting.Pair{{Key: "topic", Value: topic}}}, nil)
	}
	var writtenOpen int
	for _, policy := range []*authz.Policy{nil, benchPolicy(t)} {
		h := handlerOf(s, policy)
		serveScripted(t, h, batch, 10) // warm the route cache
		const n = 1000
		allocs, written := serveScripted(t, h, batch, n)
		if written == 0 {
			t.Fatal("no answers written")
		}
		// Authorized, the answers are the same bytes as without
		// authorization (a refusal would be shorter).
		if policy == nil {
			writtenOpen = written
		} else if written != writtenOpen {
			t.Fatalf("authorized answers: %d bytes, without authorization %d", written, writtenOpen)
		}
		// The count is the whole process's: the NameServer's own timers
		// (its scan, its record of live brokers) allocate meanwhile. A
		// query that allocated at all would add 64,000; one in a hundred
		// still shows.
		if perQuery := float64(allocs) / (64 * n); perQuery > 0.01 {
			t.Fatalf("authz %v: %d allocations for %d route queries (%.4f per query)", policy != nil, allocs, 64*n, perQuery)
		}
	}
}

// benchPolicy grants roles as a zero-trust cluster would; the scripted
// peer (10.2.3.4) holds the read role by network.
func benchPolicy(tb testing.TB) *authz.Policy {
	tb.Helper()
	p, err := authz.Parse(authz.Config{
		Broker: authz.Lists{Identities: "uri:spiffe://cluster.local/ns/rocketmq/sa/broker-*", Networks: "10.1.0.0/16"},
		Admin:  authz.Lists{Identities: "cn:operator,uri:spiffe://cluster.local/ns/ops/sa/mqadmin"},
		Read:   authz.Lists{Identities: "dns:*.clients.svc.cluster.local", Networks: "10.0.0.0/8,fd00::/8"},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// handlerOf builds a processor over a running server's state, as the
// server's own remoting side does, authorizing by policy when it is set.
func handlerOf(s *namesrv.Server, policy *authz.Policy) remoting.Handler {
	return processor.New(processor.Options{Routes: s.Routes(), KV: s.KV(), Config: s.Config(), Policy: policy})
}

// BenchmarkServerRouteQueries is the whole server path of a route query,
// with authorization off and on.
func BenchmarkServerRouteQueries(b *testing.B) {
	s := startServer(b, nil)
	broker, err := brokersim.Start(brokersim.Config{Cluster: "c", Name: "b", Topics: []body.TopicConfig{brokersim.Topic("TopicTest", 8), brokersim.Topic("U", 8)}})
	if err != nil {
		b.Fatal(err)
	}
	defer broker.Close()
	for _, r := range broker.Register(context.Background(), []string{s.Addr().String()}) {
		if r.Err != nil {
			b.Fatal(r.Err)
		}
	}
	var batch []byte
	for i := range 64 {
		batch = remoting.AppendFrame(batch, remoting.JSON, &remoting.Header{Code: protocol.GetRouteInfoByTopic, Language: "JAVA", Version: protocol.V5_3_3, Opaque: int32(1000000000 + i),
			Ext: []remoting.Pair{{Key: "topic", Value: "TopicTest"}}}, nil)
	}
	for _, az := range []string{"off", "on"} {
		b.Run("authz="+az, func(b *testing.B) {
			var policy *authz.Policy
			if az == "on" {
				policy = benchPolicy(b)
			}
			h := handlerOf(s, policy)
			serveScripted(b, h, batch, 10)
			b.ReportAllocs()
			cpu := processCPU(b)
			b.ResetTimer()
			serveScripted(b, h, batch, b.N)
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(64*b.N), "ns/query")
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(64*b.N), "cpu-ns/query")
		})
	}
}

// processCPU is the CPU time (user and system) the process has used, the
// server's goroutines included: what the queries cost, which wall time on
// a machine shared with other work overstates by the time spent waiting
// for a core.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
