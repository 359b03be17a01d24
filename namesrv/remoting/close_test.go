package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting/tlstest"
)

// gatingHandler marks the connection on code 103, closes it instead of
// answering code 105 unless marked, and echoes the mark otherwise; code
// 998 blocks until release is closed.
type gatingHandler struct {
	closed  chan *Conn
	release chan struct{}
}

func (h *gatingHandler) Serve(c *Conn, req *Command, resp *Response) {
	switch req.Code {
	case 103:
		c.Mark()
	case 105:
		if !c.Marked() {
			resp.Close = ClosedGated
			return
		}
	case 998:
		<-h.release
	}
	resp.Remark = strconv.AppendBool(resp.Remark, c.Marked())
}

func (h *gatingHandler) Closed(c *Conn) { h.closed <- c }

func newGatingHandler() *gatingHandler {
	return &gatingHandler{closed: make(chan *Conn, 16), release: make(chan struct{})}
}

func TestHandlerClosesInsteadOfAnswering(t *testing.T) {
	obs := &countingObserver{}
	h := newGatingHandler()
	ts := startServer(t, h, Config{Observer: obs})
	c := dial(t, ts.addr)
	// The answers due before the refused request are written; the ones
	// after it never come.
	c.send(request(JSON, 106, 1, 0, ""), request(JSON, 106, 2, 0, ""), request(JSON, 105, 3, 0, ""), request(JSON, 106, 4, 0, ""))
	for _, want := range []int32{1, 2} {
		if r := c.mustRead(); r.Opaque != want || string(r.Remark) != "false" {
			t.Fatalf("answer %+v, want opaque %d", r, want)
		}
	}
	c.expectClosed()
	select {
	case <-h.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("handler not told about the closed connection")
	}
	waitFor(t, "the close to be observed", func() bool { return len(obs.reasonsSeen()) == 1 })
	if got := obs.reasonsSeen(); got[0] != ClosedGated {
		t.Fatalf("close reason %v, want gated", got)
	}
	if n := obs.requests.Load(); n != 2 {
		t.Fatalf("%d requests observed, want the 2 answered ones", n)
	}
	if !slices.Contains(CloseReasons, ClosedGated) {
		t.Fatal("ClosedGated missing from CloseReasons: its metric series would not exist")
	}
}

func TestMarkLastsForTheConnection(t *testing.T) {
	h := newGatingHandler()
	ts := startServer(t, h, Config{})
	marked, other := dial(t, ts.addr), dial(t, ts.addr)
	marked.send(request(JSON, 103, 1, protocol.FlagOneway, ""), request(JSON, 105, 2, 0, ""), request(JSON, 105, 3, 0, ""))
	for _, want := range []int32{2, 3} {
		if r := marked.mustRead(); r.Opaque != want || string(r.Remark) != "true" {
			t.Fatalf("marked connection answer %+v", r)
		}
	}
	other.send(request(JSON, 106, 1, 0, ""))
	if r := other.mustRead(); string(r.Remark) != "false" {
		t.Fatalf("a mark leaked to another connection: %+v", r)
	}
	// A oneway request can close the connection too.
	oneway := dial(t, ts.addr)
	oneway.send(request(JSON, 105, 1, protocol.FlagOneway, ""))
	oneway.expectClosed()
}

func TestProbe(t *testing.T) {
	obs := &countingObserver{}
	h := newGatingHandler()
	ca := tlstest.NewCA(t, "probe")
	cert := ca.Server(t)
	// Enforcing TLS and a full server: the probe needs neither a handshake
	// nor a free connection slot.
	ts := startServer(t, h, Config{Observer: obs, MaxConnections: 1, TLSMode: TLSEnforcing,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert.TLS}}})
	holder, _, err := dialTLS(t, ts.addr, ca.Pool())
	if err != nil {
		t.Fatal(err)
	}
	holder.send(request(JSON, 106, 1, 0, ""))
	holder.mustRead()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := ts.srv.Probe(ctx, 106); err != nil {
		t.Fatalf("probe of a healthy server: %v", err)
	}
	<-h.closed
	if obs.opened.Load() != 1 || obs.requests.Load() != 1 || obs.limit(LimitMaxConnections) != 0 {
		t.Fatalf("the probe was observed: opened %d requests %d refused %d", obs.opened.Load(), obs.requests.Load(), obs.limit(LimitMaxConnections))
	}

	// A handler that hangs fails the probe at its deadline.
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := ts.srv.Probe(ctx, 998); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("probe of a hung handler: %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the probe took %v, far beyond its deadline", d)
	}
	close(h.release)
	<-h.closed

	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = ts.srv.Shutdown(sctx)
	if err := ts.srv.Probe(sctx, 106); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("probe after shutdown: %v", err)
	}
}
