package remoting

import (
	"bufio"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

// CloseReason says why a connection ended.
type CloseReason string

// Reasons a connection ends.
const (
	ClosedByPeer     CloseReason = "peer"
	ClosedIdle       CloseReason = "idle"
	ClosedMalformed  CloseReason = "malformed"
	ClosedTooLarge   CloseReason = "frame_too_large"
	ClosedWriteError CloseReason = "write_error"
	ClosedByServer   CloseReason = "server"
	// ClosedReadTimeout: a frame began but did not complete in time.
	ClosedReadTimeout CloseReason = "read_timeout"
	// ClosedWriteTimeout: the client did not take its answers in time.
	ClosedWriteTimeout CloseReason = "write_timeout"
	// ClosedHandshakeTimeout: no first byte, or no finished TLS handshake,
	// within the handshake timeout.
	ClosedHandshakeTimeout CloseReason = "handshake_timeout"
	// ClosedTLSRequired: a plain connection to a server enforcing TLS.
	ClosedTLSRequired CloseReason = "tls_required"
	// ClosedTLSRefused: a TLS handshake to a server without TLS.
	ClosedTLSRefused CloseReason = "tls_refused"
	// ClosedTLSFailed: the TLS handshake failed (bad client certificate,
	// no common version or cipher suite, garbage).
	ClosedTLSFailed CloseReason = "tls_failed"
	// ClosedGated: the handler closed the connection instead of answering
	// (Response.Close), as the NameServer's start-up route gate does.
	ClosedGated CloseReason = "gated"
)

// CloseReasons lists every CloseReason, for exporters that resolve their
// series up front.
var CloseReasons = []CloseReason{ClosedByPeer, ClosedIdle, ClosedMalformed, ClosedTooLarge, ClosedWriteError,
	ClosedByServer, ClosedReadTimeout, ClosedWriteTimeout, ClosedHandshakeTimeout, ClosedTLSRequired,
	ClosedTLSRefused, ClosedTLSFailed, ClosedGated}

// Conn is one client connection.
type Conn struct {
	id     uint64
	nc     net.Conn // the TCP connection, also under TLS: closing it never blocks
	srv    *Server
	remote string
	// addr is the peer's TCP address; zero for in-memory connections.
	addr netip.AddrPort
	tls  atomic.Bool
	// cert is the client certificate the TLS handshake verified.
	cert atomic.Pointer[x509.Certificate]
	// internal connections are the server's own probes.
	internal bool
	marked   atomic.Bool
	tag      atomic.Uint64

	mu       sync.Mutex
	draining bool
	reason   CloseReason
}

// ID is unique among the server's connections.
func (c *Conn) ID() uint64 { return c.id }

// RemoteAddr is the peer's address.
func (c *Conn) RemoteAddr() string { return c.remote }

// TLS reports whether the connection completed a TLS handshake.
func (c *Conn) TLS() bool { return c.tls.Load() }

// PeerAddr is the peer's TCP address (IPv4 peers of a dual-stack listener
// may show as IPv4-mapped IPv6); invalid for the server's own probes.
func (c *Conn) PeerAddr() netip.AddrPort { return c.addr }

// PeerCertificate is the client certificate the TLS handshake verified
// against the trusted CAs (tls.server.trustCertPath), nil on a plain
// connection or when the client presented none. A certificate that was
// presented but not verified is never returned.
func (c *Conn) PeerCertificate() *x509.Certificate { return c.cert.Load() }

// Internal reports whether the connection is the server's own (Probe's),
// which no peer can open.
func (c *Conn) Internal() bool { return c.internal }

// Tag holds one word of the handler's own state for the connection, 0 on
// a new connection; the NameServer caches the roles a connection's peer
// holds there, so they are worked out once per connection rather than per
// request. SetTag replaces it.
func (c *Conn) Tag() uint64 { return c.tag.Load() }

// SetTag replaces the word Tag returns.
func (c *Conn) SetTag(v uint64) { c.tag.Store(v) }

// Mark remembers one fact about the connection for its handler until the
// connection ends; the NameServer marks connections that carried a
// broker's request. Marked reports it.
func (c *Conn) Mark() { c.marked.Store(true) }

// Marked reports whether Mark was called.
func (c *Conn) Marked() bool { return c.marked.Load() }

// Close ends the connection; its goroutine then exits and the handler's
// Closed runs. The NameServer closes a broker's connection when it expires.
func (c *Conn) Close() error {
	c.setReason(ClosedByServer)
	return c.nc.Close()
}

func (c *Conn) setReason(r CloseReason) {
	c.mu.Lock()
	if c.reason == "" {
		c.reason = r
	}
	c.mu.Unlock()
}

// drain makes a connection stop reading once its buffered requests are
// answered. Blocked reads are woken by a past deadline.
func (c *Conn) drain() {
	c.mu.Lock()
	c.draining = true
	c.nc.SetReadDeadline(time.Unix(1, 0))
	c.mu.Unlock()
}

func (c *Conn) isDraining() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.draining
}

// armRead sets the read deadline (none when zero) before a read that may
// block; it reports false when the connection is draining and must not read
// again.
func (c *Conn) armRead(deadline time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.draining {
		return false
	}
	c.nc.SetReadDeadline(deadline)
	return true
}

// connLoop holds the per-connection state of the read-process-write loop.
type connLoop struct {
	c      *Conn
	br     *bufio.Reader
	frames *FrameReader
	w      io.Writer // c.nc, or the TLS connection over it
	dec    Decoder
	cmd    Command
	resp   Response
	out    []byte
	// unwritten counts the answers in out.
	unwritten int
	// frameDeadline is when the frame that has begun to arrive must be
	// complete; zero between frames.
	frameDeadline time.Time
	// inFrame tells what the last blocking read waited for: the rest of a
	// frame (true) or the first byte of the next one.
	inFrame bool
	// framed is set once the first frame was read.
	framed bool
}

func (c *Conn) serve() {
	s := c.srv
	l := &connLoop{c: c, br: bufio.NewReaderSize(c.nc, s.cfg.ReadBufferSize), w: c.nc}
	l.frames = NewFrameReader(l.br, s.cfg.FrameMaxLength)
	l.frames.Buffers = &s.largeFrames
	l.frames.BeforeRead = l.beforeRead
	c.setReason(l.run())
	c.nc.Close()
	s.handler.Closed(c)
	if !c.internal {
		s.obs.ConnClosed(c.reason)
	}
	s.untrack(c)
}

// run serves the connection until it must close, and returns why. It is
// the one place the loop ends: each step returns "" to go on or the reason
// to stop, and the answers already due go out before the connection closes.
func (l *connLoop) run() CloseReason {
	reason := l.negotiate()
	for reason == "" {
		reason = l.next()
	}
	l.flush()
	return reason
}

// next reads one frame and serves it, writing the answers due when enough
// have accumulated.
func (l *connLoop) next() CloseReason {
	s := l.c.srv
	frame, err := l.frames.Next()
	if err != nil {
		return l.readFailed(err)
	}
	l.frameDeadline = time.Time{}
	l.framed = true
	if err := l.dec.Decode(frame, &l.cmd); err != nil {
		s.warn(string(ClosedMalformed), l.c.remote, "closing connection: malformed frame", "err", err)
		return ClosedMalformed
	}
	reason := l.handle()
	l.frames.Release()
	switch {
	case reason != "":
		return reason
	case l.unwritten >= s.cfg.MaxInflight:
		s.obs.LimitHit(LimitMaxInflight)
		return l.flush()
	case len(l.out) >= flushThreshold:
		return l.flush()
	}
	return ""
}

// stopRead is what beforeRead returns to stop the frame reader, with the
// reason the connection closes.
type stopRead struct{ reason CloseReason }

func (e *stopRead) Error() string { return "connection closing: " + string(e.reason) }

// beforeRead runs before the frame reader blocks. The pending answers go
// out first, since the client may be waiting for them; then the read gets
// its deadline: the idle timeout while no byte of the next frame has
// arrived, the frame's own deadline once it has begun.
func (l *connLoop) beforeRead(begun bool) error {
	l.inFrame = begun
	if reason := l.flush(); reason != "" {
		return &stopRead{reason}
	}
	if !l.c.armRead(l.readDeadline(begun)) {
		return &stopRead{ClosedByServer}
	}
	return nil
}

// readDeadline is the deadline of the next read; zero is none. A frame's
// clock starts with its first byte.
func (l *connLoop) readDeadline(begun bool) time.Time {
	cfg := &l.c.srv.cfg
	if begun && cfg.ReadTimeout > 0 {
		if l.frameDeadline.IsZero() {
			l.frameDeadline = time.Now().Add(cfg.ReadTimeout)
		}
		return l.frameDeadline
	}
	if cfg.IdleTimeout > 0 {
		return time.Now().Add(cfg.IdleTimeout)
	}
	return time.Time{}
}

// readFailed says why the frame reader stopped.
func (l *connLoop) readFailed(err error) CloseReason {
	c, s := l.c, l.c.srv
	var stop *stopRead
	var bad *FrameLengthError
	switch {
	case errors.As(err, &stop):
		return stop.reason
	case errors.As(err, &bad):
		return l.badLength(bad)
	case errors.Is(err, os.ErrDeadlineExceeded):
		if c.isDraining() {
			return ClosedByServer
		}
		if l.inFrame && s.cfg.ReadTimeout > 0 {
			s.violation(LimitReadTimeout, c.remote, "closing connection: frame not received in time",
				"timeout", s.cfg.ReadTimeout, "buffered", l.br.Buffered())
			return ClosedReadTimeout
		}
		s.log.Info("closing idle connection", "remote", c.remote, "idle", s.cfg.IdleTimeout)
		return ClosedIdle
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return ClosedByPeer
	}
	s.log.Debug("connection read failed", "remote", c.remote, "err", err)
	return ClosedByPeer
}

// badLength handles a length word outside the limits: like Java, the
// connection closes without an answer.
func (l *connLoop) badLength(e *FrameLengthError) CloseReason {
	s := l.c.srv
	if !l.framed && e.FirstByte() == tlsHandshakeRecord {
		s.warn(string(ClosedTLSRefused), l.c.remote,
			"closing connection: TLS handshake, but TLS is off (tls.server.mode=disabled or no certificate)")
		return ClosedTLSRefused
	}
	if e.TooLarge() {
		s.violation(LimitFrameMaxLength, l.c.remote, "closing connection: frame larger than frameMaxLength",
			"length", e.Length, "max", e.Max)
		return ClosedTooLarge
	}
	s.warn(string(ClosedMalformed), l.c.remote, "closing connection: bad frame length", "length", e.Length)
	return ClosedMalformed
}

// handle runs the handler for the decoded command and queues its answer.
// It returns a reason when the handler asked for the connection to close
// instead (Response.Close); the request then gets no answer and is not
// counted as one.
func (l *connLoop) handle() CloseReason {
	s := l.c.srv
	cmd := &l.cmd
	if cmd.IsResponse() {
		// The NameServer sends no requests that would be answered; Java
		// logs and drops such frames and so do we.
		s.log.Debug("dropping a response frame nobody asked for", "remote", l.c.remote, "opaque", cmd.Opaque)
		return ""
	}
	start := time.Now()
	l.resp.Reset()
	l.serveSafely()
	if l.resp.Close != "" {
		return l.resp.Close
	}
	oneway := cmd.IsOneway()
	if !l.c.internal {
		s.obs.Request(cmd.Code, l.resp.Code, oneway, time.Since(start))
	}
	if oneway {
		return ""
	}
	l.out = AppendResponse(l.out, cmd.Type, cmd.Opaque, &l.resp)
	l.unwritten++
	return ""
}

// serveSafely turns a handler panic into a SYSTEM_ERROR answer, so that no
// input can take the process down.
func (l *connLoop) serveSafely() {
	defer func() {
		if p := recover(); p != nil {
			l.c.srv.log.Error("request handler panicked", "remote", l.c.remote, "code", l.cmd.Code,
				"panic", p, "stack", string(debug.Stack()))
			l.resp.Reset()
			l.resp.Fail(protocol.SystemError, fmt.Sprintf("internal error: %v", p))
		}
	}()
	l.c.srv.handler.Serve(l.c, &l.cmd, &l.resp)
}

// flush writes the queued answers under the write deadline; it returns the
// reason to close when the write failed.
func (l *connLoop) flush() CloseReason {
	if len(l.out) == 0 {
		return ""
	}
	s := l.c.srv
	var deadline time.Time
	if s.cfg.WriteTimeout > 0 {
		deadline = time.Now().Add(s.cfg.WriteTimeout)
	}
	l.c.nc.SetWriteDeadline(deadline)
	_, err := l.w.Write(l.out)
	unwritten := l.unwritten
	l.unwritten = 0
	if cap(l.out) > keepOutputCap {
		l.out = nil
	} else {
		l.out = l.out[:0]
	}
	switch {
	case err == nil:
		return ""
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.violation(LimitWriteTimeout, l.c.remote, "closing connection: client does not read its answers",
			"timeout", s.cfg.WriteTimeout, "unwritten", unwritten)
		return ClosedWriteTimeout
	}
	s.log.Info("closing connection: write failed", "remote", l.c.remote, "err", err)
	return ClosedWriteError
}
