package remoting

import (
	"bufio"
	"encoding/binary"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/test/logcapture"
)

// waitFor polls cond until it holds or 5 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// expectViolation checks that exactly one connection closed for reason, that
// limit was counted once, and that a Warn line names the limit and remote.
func expectViolation(t *testing.T, obs *countingObserver, logs *logcapture.Buffer, reason CloseReason, limit Limit, remote string) {
	t.Helper()
	waitFor(t, "the close to be observed", func() bool { return len(obs.reasonsSeen()) == 1 })
	if got := obs.reasonsSeen(); len(got) != 1 || got[0] != reason {
		t.Fatalf("close reasons %v, want [%s]", got, reason)
	}
	if got := obs.limit(limit); got != 1 {
		t.Fatalf("limit %s counted %d times, want 1", limit, got)
	}
	if l := logs.Lines("level=WARN", "limit="+string(limit), "remote="+remote); len(l) != 1 {
		t.Fatalf("want one Warn line for %s naming remote %s, logs:\n%s", limit, remote, logs.String())
	}
}

func TestMaxConnectionsRefusesTheExcess(t *testing.T) {
	obs := &countingObserver{}
	var logs logcapture.Buffer
	ts := startServer(t, newEchoHandler(), Config{MaxConnections: 2, Observer: obs, Logger: logs.Logger(slog.LevelDebug)})
	a, b := dial(t, ts.addr), dial(t, ts.addr)
	for _, c := range []*client{a, b} {
		c.send(request(JSON, 105, 1, 0, ""))
		c.mustRead()
	}
	remote := "127.0.0.1:" // the port is known only if the dial completes before the reset
	if nc, err := net.DialTimeout("tcp", ts.addr, 5*time.Second); err == nil {
		over := &client{t: t, nc: nc, br: bufio.NewReader(nc)}
		_, _ = nc.Write(request(JSON, 105, 1, 0, ""))
		over.expectClosed()
		nc.Close()
		remote = nc.LocalAddr().String()
	}
	waitFor(t, "the refusal to be counted", func() bool { return obs.limit(LimitMaxConnections) == 1 })
	if obs.opened.Load() != 2 {
		t.Fatalf("%d connections opened, want the refused one not counted", obs.opened.Load())
	}
	if l := logs.Lines("level=WARN", "too many connections", "remote="+remote, "max=2"); len(l) != 1 {
		t.Fatalf("no Warn line for the refused connection:\n%s", logs.String())
	}

	a.nc.Close()
	waitFor(t, "the server to see the close", func() bool { return obs.closed.Load() == 1 })
	d := dial(t, ts.addr)
	d.send(request(JSON, 105, 7, 0, ""))
	if r := d.mustRead(); r.Opaque != 7 {
		t.Fatalf("answer %+v after a slot freed", r)
	}
}

func TestFrameReadTimeoutClosesSlowSenders(t *testing.T) {
	frame := request(JSON, 105, 1, 0, "some body")
	large := binary.BigEndian.AppendUint32(nil, 100_000) // beyond the 4 KiB read buffer
	large = append(large, request(JSON, 105, 1, 0, "")[4:]...)
	tests := map[string]func(nc net.Conn){
		"part of the length word": func(nc net.Conn) { _, _ = nc.Write(frame[:2]) },
		"part of the frame":       func(nc net.Conn) { _, _ = nc.Write(frame[:10]) },
		"part of a large frame":   func(nc net.Conn) { _, _ = nc.Write(large) },
		// One byte every 20 ms: never idle, never done.
		"trickle": func(nc net.Conn) {
			for _, b := range frame {
				if _, err := nc.Write([]byte{b}); err != nil {
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		},
	}
	for name, send := range tests {
		t.Run(name, func(t *testing.T) {
			obs := &countingObserver{}
			var logs logcapture.Buffer
			const readTimeout = 150 * time.Millisecond
			ts := startServer(t, newEchoHandler(), Config{ReadTimeout: readTimeout, IdleTimeout: time.Minute,
				ReadBufferSize: 4096, Observer: obs, Logger: logs.Logger(slog.LevelDebug)})
			c := dial(t, ts.addr)
			start := time.Now()
			go send(c.nc)
			c.expectClosed()
			if d := time.Since(start); d < readTimeout {
				t.Fatalf("closed after %v, before the read timeout", d)
			}
			expectViolation(t, obs, &logs, ClosedReadTimeout, LimitReadTimeout, c.nc.LocalAddr().String())
		})
	}
}

func TestPausesBetweenFramesAreIdleNotSlow(t *testing.T) {
	obs := &countingObserver{}
	// The read timeout is generous for a frame sent in two back-to-back
	// writes, so that a loaded machine cannot stretch the frame past it;
	// the pauses between frames are three times as long.
	const readTimeout = 500 * time.Millisecond
	ts := startServer(t, newEchoHandler(), Config{ReadTimeout: readTimeout, IdleTimeout: time.Minute, Observer: obs})
	c := dial(t, ts.addr)
	for i := range int32(2) {
		f := request(JSON, 105, i, 0, "")
		c.send(f[:7])
		c.send(f[7:])
		if r := c.mustRead(); r.Opaque != i {
			t.Fatalf("answer %+v", r)
		}
		time.Sleep(3 * readTimeout)
	}
	if obs.closed.Load() != 0 || obs.limit(LimitReadTimeout) != 0 {
		t.Fatalf("closed %d, read timeouts %d", obs.closed.Load(), obs.limit(LimitReadTimeout))
	}
}

// pipeConn serves one end of a synchronous in-memory pipe: nothing is
// buffered between the ends, so a write blocks exactly until the client
// reads, which makes "the client does not read" deterministic.
func pipeConn(t *testing.T, h Handler, cfg Config) (net.Conn, *Server) {
	t.Helper()
	s := NewServer(h, cfg)
	client, server := net.Pipe()
	if !s.track(server) {
		t.Fatal("not tracked")
	}
	t.Cleanup(func() { client.Close() })
	return client, s
}

func TestWriteTimeoutClosesAClientThatDoesNotRead(t *testing.T) {
	obs := &countingObserver{}
	var logs logcapture.Buffer
	h := newEchoHandler()
	client, _ := pipeConn(t, h, Config{WriteTimeout: 100 * time.Millisecond, Observer: obs, Logger: logs.Logger(slog.LevelDebug)})
	_, _ = client.Write(request(JSON, 105, 1, 0, ""))
	select {
	case <-h.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("a client that does not read was never closed")
	}
	expectViolation(t, obs, &logs, ClosedWriteTimeout, LimitWriteTimeout, "pipe")
}

func TestMaxInflightStopsReadingUntilAnswersAreWritten(t *testing.T) {
	const n, max = 20, 4
	var burst []byte
	for i := range int32(n) {
		burst = append(burst, request(JSON, 105, i, 0, "")...)
	}
	t.Run("bounded", func(t *testing.T) {
		obs := &countingObserver{}
		h := newEchoHandler()
		pc, _ := pipeConn(t, h, Config{MaxInflight: max, Observer: obs})
		go func() { _, _ = pc.Write(burst) }()
		waitFor(t, "the first requests", func() bool { return h.served.Load() == max })
		time.Sleep(100 * time.Millisecond)
		if got := h.served.Load(); got != max {
			t.Fatalf("%d requests served while %d answers wait unread, want %d", got, max, max)
		}
		c := &client{t: t, nc: pc, br: bufio.NewReader(pc)}
		for i := range int32(n) {
			if r := c.mustRead(); r.Opaque != i {
				t.Fatalf("answer %d: %+v", i, r)
			}
		}
		if got := obs.limit(LimitMaxInflight); got != n/max {
			t.Fatalf("max_inflight counted %d times, want %d", got, n/max)
		}
	})
	t.Run("default bound is larger than the burst", func(t *testing.T) {
		h := newEchoHandler()
		pc, _ := pipeConn(t, h, Config{})
		go func() { _, _ = pc.Write(burst) }()
		waitFor(t, "the whole burst to be served before any answer is read", func() bool { return h.served.Load() == n })
	})
}

func TestWarnGateLetsABurstPerSecondThrough(t *testing.T) {
	var g warnGate
	t0 := time.Unix(1000, 0)
	for i := range warnBurst {
		if ok, sup := g.allow(t0.Add(time.Duration(i) * time.Millisecond)); !ok || sup != 0 {
			t.Fatalf("line %d: allowed %v suppressed %d", i, ok, sup)
		}
	}
	for range 5 {
		if ok, _ := g.allow(t0.Add(500 * time.Millisecond)); ok {
			t.Fatal("a line beyond the burst passed")
		}
	}
	if ok, sup := g.allow(t0.Add(time.Second)); !ok || sup != 5 {
		t.Fatalf("next second: allowed %v, suppressed %d, want 5", ok, sup)
	}
	if ok, sup := g.allow(t0.Add(time.Second)); !ok || sup != 0 {
		t.Fatalf("suppressed count not reset: %v %d", ok, sup)
	}
}

func TestViolationsAreCountedEvenWhenNotLogged(t *testing.T) {
	obs := &countingObserver{}
	var logs logcapture.Buffer
	ts := startServer(t, newEchoHandler(), Config{MaxConnections: 1, Observer: obs, Logger: logs.Logger(slog.LevelDebug)})
	first := dial(t, ts.addr)
	first.send(request(JSON, 105, 1, 0, ""))
	first.mustRead()
	const refused = 3 * warnBurst
	for range refused {
		// The reset may arrive before the dial completes.
		nc, err := net.DialTimeout("tcp", ts.addr, 5*time.Second)
		if err != nil {
			continue
		}
		c := &client{t: t, nc: nc, br: bufio.NewReader(nc)}
		c.expectClosed()
		nc.Close()
	}
	if got := obs.limit(LimitMaxConnections); got != refused {
		t.Fatalf("counted %d refusals, want %d", got, refused)
	}
	// The refusals may straddle a second boundary, so up to two bursts.
	if l := logs.Lines("too many connections"); len(l) < warnBurst || len(l) > 2*warnBurst+1 {
		t.Fatalf("%d Warn lines for %d refusals", len(l), refused)
	}
}
