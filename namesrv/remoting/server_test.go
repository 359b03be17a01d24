package remoting

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting/tlstest"
)

// echoHandler answers every request with its code as the remark; code 999
// panics, code 998 blocks until release is closed.
type echoHandler struct {
	served  atomic.Int64
	closed  chan *Conn
	release chan struct{}
	started chan struct{}
}

func newEchoHandler() *echoHandler {
	return &echoHandler{closed: make(chan *Conn, 16), release: make(chan struct{}), started: make(chan struct{}, 16)}
}

func (h *echoHandler) Serve(c *Conn, req *Command, resp *Response) {
	h.served.Add(1)
	switch req.Code {
	case 999:
		panic("boom")
	case 998:
		h.started <- struct{}{}
		<-h.release
	}
	resp.Remark = append(resp.Remark, strconv.Itoa(int(req.Code))...)
	resp.Body = req.Body
}

func (h *echoHandler) Closed(c *Conn) { h.closed <- c }

type testServer struct {
	srv  *Server
	addr string
	done chan error
}

func startServer(t *testing.T, h Handler, cfg Config) *testServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{srv: NewServer(h, cfg), addr: l.Addr().String(), done: make(chan error, 1)}
	go func() { ts.done <- ts.srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := ts.srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-ts.done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve after Shutdown: %v", err)
		}
	})
	return ts
}

type client struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func dial(t testing.TB, addr string) *client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return &client{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func request(t SerializeType, code, opaque, flag int32, body string) []byte {
	return AppendFrame(nil, t, &Header{Code: code, Language: "JAVA", Version: 479, Opaque: opaque, Flag: flag}, []byte(body))
}

func (c *client) send(frames ...[]byte) {
	var all []byte
	for _, f := range frames {
		all = append(all, f...)
	}
	if _, err := c.nc.Write(all); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) read() (*Command, error) {
	var n [4]byte
	if _, err := io.ReadFull(c.br, n[:]); err != nil {
		return nil, err
	}
	frame := make([]byte, binary.BigEndian.Uint32(n[:]))
	if _, err := io.ReadFull(c.br, frame); err != nil {
		return nil, err
	}
	var d Decoder
	cmd := &Command{}
	if err := d.Decode(frame, cmd); err != nil {
		return nil, err
	}
	cmd.Remark = append([]byte(nil), cmd.Remark...)
	cmd.Body = append([]byte(nil), cmd.Body...)
	return cmd, nil
}

func (c *client) mustRead() *Command {
	c.t.Helper()
	cmd, err := c.read()
	if err != nil {
		c.t.Fatal(err)
	}
	return cmd
}

// expectClosed checks that the server closed the connection without
// answering.
func (c *client) expectClosed() {
	c.t.Helper()
	if cmd, err := c.read(); err == nil {
		c.t.Fatalf("got an answer %+v, want the connection closed", cmd)
	} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		c.t.Fatalf("read: %v, want EOF", err)
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

func TestPipelinedRequestsAreAnsweredInOrder(t *testing.T) {
	h := newEchoHandler()
	ts := startServer(t, h, Config{ReadBufferSize: 4096})
	c := dial(t, ts.addr)
	const n = 500
	var frames [][]byte
	for i := range n {
		st := SerializeType(i % 2)
		body := ""
		if i%50 == 0 {
			body = string(make([]byte, 10000)) // larger than the read buffer
		}
		frames = append(frames, request(st, int32(100+i), int32(i), 0, body))
	}
	c.send(frames...)
	for i := range n {
		r := c.mustRead()
		if r.Opaque != int32(i) || !r.IsResponse() || r.Type != SerializeType(i%2) || string(r.Remark) != strconv.Itoa(100+i) {
			t.Fatalf("answer %d: %+v", i, r)
		}
		if i%50 == 0 && len(r.Body) != 10000 {
			t.Fatalf("answer %d body %d bytes", i, len(r.Body))
		}
	}
}

func TestOnewayIsAppliedAndNeverAnswered(t *testing.T) {
	h := newEchoHandler()
	ts := startServer(t, h, Config{})
	c := dial(t, ts.addr)
	c.send(request(JSON, 103, 1, protocol.FlagOneway, ""), request(JSON, 999, 2, protocol.FlagOneway, ""),
		request(JSON, 105, 3, protocol.FlagResponse, ""), request(JSON, 106, 4, 0, ""))
	r := c.mustRead()
	if r.Opaque != 4 {
		t.Fatalf("first answer is for opaque %d, want only the two-way request 4", r.Opaque)
	}
	if got := h.served.Load(); got != 3 {
		t.Fatalf("handler ran %d times, want 3 (oneway requests are applied, response frames are not)", got)
	}
}

func TestHandlerPanicBecomesSystemError(t *testing.T) {
	ts := startServer(t, newEchoHandler(), Config{})
	c := dial(t, ts.addr)
	c.send(request(JSON, 999, 1, 0, ""), request(JSON, 105, 2, 0, ""))
	if r := c.mustRead(); r.Code != protocol.SystemError || r.Opaque != 1 || len(r.Remark) == 0 {
		t.Fatalf("panic answer %+v", r)
	}
	if r := c.mustRead(); r.Code != 0 || r.Opaque != 2 {
		t.Fatalf("next answer %+v: the connection must survive a panic", r)
	}
}

func TestBadFramesCloseOnlyTheirConnection(t *testing.T) {
	tests := map[string][]byte{
		"negative length":      {0xff, 0xff, 0xff, 0xff},
		"zero length":          {0, 0, 0, 0},
		"length below header":  {0, 0, 0, 3, 0, 0, 0},
		"beyond frame limit":   binary.BigEndian.AppendUint32(nil, 1025-4+1),
		"header beyond frame":  {0, 0, 0, 6, 0, 0, 0, 9, '{', '}'},
		"invalid JSON header":  {0, 0, 0, 6, 0, 0, 0, 2, '{', '['},
		"serialize type 2":     {0, 0, 0, 6, 2, 0, 0, 2, '{', '}'},
		"truncated bin header": {0, 0, 0, 7, 1, 0, 0, 3, 0, 105, 0},
	}
	for name, bad := range tests {
		t.Run(name, func(t *testing.T) {
			h := newEchoHandler()
			ts := startServer(t, h, Config{FrameMaxLength: 1025})
			good := dial(t, ts.addr)
			c := dial(t, ts.addr)
			c.send(request(JSON, 105, 1, 0, ""), bad)
			if r := c.mustRead(); r.Opaque != 1 {
				t.Fatalf("answer before the bad frame: %+v", r)
			}
			c.expectClosed()
			good.send(request(JSON, 106, 2, 0, ""))
			if r := good.mustRead(); r.Opaque != 2 {
				t.Fatalf("other connection got %+v", r)
			}
			select {
			case <-h.closed:
			case <-time.After(5 * time.Second):
				t.Fatal("handler not told about the closed connection")
			}
		})
	}
}

func TestLargestFrameIsAccepted(t *testing.T) {
	ts := startServer(t, newEchoHandler(), Config{FrameMaxLength: 1 << 20})
	c := dial(t, ts.addr)
	hdr := request(JSON, 105, 1, 0, "")
	body := make([]byte, 1<<20-len(hdr))
	c.send(request(JSON, 105, 1, 0, string(body)))
	if r := c.mustRead(); r.Opaque != 1 || len(r.Body) != len(body) {
		t.Fatalf("answer %d bytes", len(r.Body))
	}
	// The server closes as soon as it reads the length word, so the write
	// of the rest may fail; only the close matters.
	_, _ = c.nc.Write(request(JSON, 105, 2, 0, string(append(body, 0))))
	c.expectClosed()
}

func TestIdleConnectionsAreClosed(t *testing.T) {
	h := newEchoHandler()
	ts := startServer(t, h, Config{IdleTimeout: 200 * time.Millisecond})
	c := dial(t, ts.addr)
	c.send(request(JSON, 105, 1, 0, ""))
	c.mustRead()
	start := time.Now()
	c.expectClosed()
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("closed after %v, before the idle timeout", d)
	}
	select {
	case <-h.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("handler not told about the idle close")
	}
}

func TestConnCloseFromServerSide(t *testing.T) {
	h := newEchoHandler()
	ts := startServer(t, h, Config{})
	c := dial(t, ts.addr)
	c.send(request(JSON, 105, 1, 0, ""))
	c.mustRead()
	var conn *Conn
	ts.srv.mu.Lock()
	for k := range ts.srv.conns {
		conn = k
	}
	ts.srv.mu.Unlock()
	conn.Close()
	c.expectClosed()
	if got := <-h.closed; got != conn || got.ID() == 0 || got.RemoteAddr() != c.nc.LocalAddr().String() {
		t.Fatalf("closed %v", got)
	}
}

func TestShutdownFinishesInFlightRequests(t *testing.T) {
	h := newEchoHandler()
	ts := startServer(t, h, Config{})
	c := dial(t, ts.addr)
	idle := dial(t, ts.addr)
	c.send(request(JSON, 998, 1, 0, ""), request(JSON, 105, 2, 0, ""))
	<-h.started
	idle.send(request(JSON, 105, 9, 0, ""))
	idle.mustRead()

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done <- ts.srv.Shutdown(ctx)
	}()
	// New connections are refused once shutdown began.
	deadline := time.Now().Add(5 * time.Second)
	for {
		nc, err := net.DialTimeout("tcp", ts.addr, time.Second)
		if err != nil {
			break
		}
		nc.Close()
		if time.Now().After(deadline) {
			t.Fatal("still accepting after shutdown")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(h.release)
	if r := c.mustRead(); r.Opaque != 1 {
		t.Fatalf("in-flight answer %+v", r)
	}
	if r := c.mustRead(); r.Opaque != 2 {
		t.Fatalf("buffered request answer %+v", r)
	}
	c.expectClosed()
	idle.expectClosed()
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if err := <-ts.done; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("serve returned %v", err)
	}
	ts.done <- ErrServerClosed
}

func TestShutdownDeadlineForcesClose(t *testing.T) {
	h := newEchoHandler()
	ts := startServer(t, h, Config{})
	c := dial(t, ts.addr)
	c.send(request(JSON, 998, 1, 0, ""))
	<-h.started
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(300 * time.Millisecond)
		close(h.release)
	}()
	if err := ts.srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shutdown = %v, want the deadline", err)
	}
	wg.Wait()
}

type countingObserver struct {
	opened, closed, requests atomic.Int64
	mu                       sync.Mutex
	reasons                  []CloseReason
	limits                   map[Limit]int
}

func (o *countingObserver) LimitHit(l Limit) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.limits == nil {
		o.limits = map[Limit]int{}
	}
	o.limits[l]++
}

func (o *countingObserver) limit(l Limit) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.limits[l]
}

// reasonsSeen returns the close reasons so far.
func (o *countingObserver) reasonsSeen() []CloseReason {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]CloseReason(nil), o.reasons...)
}

func (o *countingObserver) ConnOpened() { o.opened.Add(1) }
func (o *countingObserver) ConnClosed(r CloseReason) {
	o.closed.Add(1)
	o.mu.Lock()
	o.reasons = append(o.reasons, r)
	o.mu.Unlock()
}
func (o *countingObserver) Request(int32, int32, bool, time.Duration) { o.requests.Add(1) }

func TestObserverSeesConnectionsAndRequests(t *testing.T) {
	obs := &countingObserver{}
	h := newEchoHandler()
	ts := startServer(t, h, Config{Observer: obs, FrameMaxLength: 300})
	c := dial(t, ts.addr)
	c.send(request(JSON, 105, 1, 0, ""), request(JSON, 105, 2, protocol.FlagOneway, ""))
	c.mustRead()
	c.send(binary.BigEndian.AppendUint32(nil, 1000))
	c.expectClosed()
	<-h.closed
	deadline := time.Now().Add(5 * time.Second)
	for obs.closed.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if obs.opened.Load() != 1 || obs.closed.Load() != 1 || obs.requests.Load() != 2 {
		t.Fatalf("opened %d closed %d requests %d", obs.opened.Load(), obs.closed.Load(), obs.requests.Load())
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.reasons[0] != ClosedTooLarge || obs.limits[LimitFrameMaxLength] != 1 {
		t.Fatalf("reason %q, limits %v", obs.reasons[0], obs.limits)
	}
}

// FuzzConnStream feeds arbitrary byte streams to a live connection in each
// TLS mode (mode%3), so the first-byte sniffing and the TLS handshake see
// them too: the server must answer or close, never panic or hang, and
// always tell the handler the connection is gone.
func FuzzConnStream(f *testing.F) {
	for mode := range uint8(3) {
		f.Add(mode, request(JSON, 105, 1, 0, ""))
		f.Add(mode, append(request(RocketMQ, 105, 1, 0, "x"), request(JSON, 103, 2, protocol.FlagOneway, "y")...))
		f.Add(mode, []byte{0, 0, 0, 4, 0, 0, 0, 0})
		f.Add(mode, []byte{0xff, 0xff, 0xff, 0xff})
		f.Add(mode, []byte{0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00})
	}
	cert := tlstest.NewCA(f, "fuzz").Server(f)
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert.TLS}}
	f.Fuzz(func(t *testing.T, mode uint8, stream []byte) {
		h := newEchoHandler()
		close(h.release) // code 998 must not block here
		h.started = make(chan struct{}, 1<<16)
		s := NewServer(h, Config{FrameMaxLength: 4096, ReadBufferSize: 64, TLSMode: TLSMode(mode % 3), TLSConfig: tlsConfig})
		client, server := net.Pipe()
		if !s.track(server) {
			t.Fatal("not tracked")
		}
		go func() { _, _ = io.Copy(io.Discard, client) }()
		client.SetWriteDeadline(time.Now().Add(2 * time.Second))
		_, _ = client.Write(stream)
		client.Close()
		select {
		case <-h.closed:
		case <-time.After(5 * time.Second):
			t.Fatal("connection never ended")
		}
	})
}

func TestSocketBuffersAreApplied(t *testing.T) {
	h := newEchoHandler()
	ts := startServer(t, h, Config{SocketSendBuffer: 64 << 10, SocketReceiveBuffer: 32 << 10})
	c := dial(t, ts.addr)
	c.send(request(JSON, 105, 1, 0, ""))
	c.mustRead()
	var conn *Conn
	ts.srv.mu.Lock()
	for k := range ts.srv.conns {
		conn = k
	}
	ts.srv.mu.Unlock()
	raw, err := conn.nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var rcv int
	_ = raw.Control(func(fd uintptr) { rcv, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF) })
	// Linux doubles the value asked for, to account for its bookkeeping.
	if rcv != 64<<10 {
		t.Fatalf("SO_RCVBUF = %d, want 65536 (twice the 32 KiB asked for)", rcv)
	}
}
