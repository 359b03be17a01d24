package namesrv_test

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv"
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

func (c *scriptedConn) Write(p []byte) (int, error)      { c.written += len(p); return len(p), nil }
func (c *scriptedConn) Close() error                     { c.once.Do(func() { close(c.closed) }); return nil }
func (c *scriptedConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *scriptedConn) RemoteAddr() net.Addr             { return &net.TCPAddr{Port: 1} }
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
// server and processor: the steady-state path allocates nothing, so the
// whole run may allocate only a bounded amount of per-connection setup.
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
	h := handlerOf(s)
	serveScripted(t, h, batch, 10) // warm the route cache
	const n = 1000
	allocs, written := serveScripted(t, h, batch, n)
	if written == 0 {
		t.Fatal("no answers written")
	}
	if perQuery := float64(allocs) / (64 * n); perQuery > 0.001 {
		t.Fatalf("%d allocations for %d route queries (%.4f per query)", allocs, 64*n, perQuery)
	}
}

// handlerOf builds a processor over a running server's state, as the
// server's own remoting side does.
func handlerOf(s *namesrv.Server) remoting.Handler {
	return processor.New(processor.Options{Routes: s.Routes(), KV: s.KV(), Config: s.Config()})
}

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
	h := handlerOf(s)
	serveScripted(b, h, batch, 10)
	b.ReportAllocs()
	b.ResetTimer()
	serveScripted(b, h, batch, b.N)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(64*b.N), "ns/query")
}
