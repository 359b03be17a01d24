package remoting

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
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
	tls    atomic.Bool
	// internal connections are the server's own probes.
	internal bool
	marked   atomic.Bool

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
	c    *Conn
	br   *bufio.Reader
	w    io.Writer // c.nc, or the TLS connection over it
	dec  Decoder
	cmd  Command
	resp Response
	out  []byte
	big  []byte
	// unwritten counts the answers in out.
	unwritten int
	// frameDeadline is when the frame that has begun to arrive must be
	// complete; zero between frames.
	frameDeadline time.Time
	// framed is set once the first frame was read.
	framed bool
}

func (c *Conn) serve() {
	s := c.srv
	l := &connLoop{c: c, br: bufio.NewReaderSize(c.nc, s.cfg.ReadBufferSize), w: c.nc}
	reason, ok := l.negotiate()
	if ok {
		reason = l.run()
	}
	c.setReason(reason)
	c.nc.Close()
	s.handler.Closed(c)
	if !c.internal {
		s.obs.ConnClosed(c.reason)
	}
	s.untrack(c)
}

// run reads frames until the connection ends and returns why it ended.
func (l *connLoop) run() CloseReason {
	s := l.c.srv
	maxTotal := s.cfg.FrameMaxLength - 4
	for {
		if l.br.Buffered() < 4 {
			if reason, ok := l.fill(4); !ok {
				return reason
			}
		}
		head, _ := l.br.Peek(4)
		total := int(int32(binary.BigEndian.Uint32(head)))
		if total < 4 || total > maxTotal {
			return l.badLength(head[0], total, maxTotal)
		}
		frame, buffered, reason, ok := l.readFrame(total)
		if !ok {
			return reason
		}
		l.frameDeadline = time.Time{}
		l.framed = true
		if err := l.dec.Decode(frame, &l.cmd); err != nil {
			l.flush()
			s.warn(string(ClosedMalformed), l.c.remote, "closing connection: malformed frame", "err", err)
			return ClosedMalformed
		}
		closeReason := l.handle()
		if buffered {
			l.br.Discard(4 + total)
		} else {
			big := l.big
			l.big = nil
			s.largeFrames.Put(&big)
		}
		if closeReason != "" {
			// The answers already due on the connection go out first.
			l.flush()
			return closeReason
		}
		if l.unwritten >= s.cfg.MaxInflight {
			s.obs.LimitHit(LimitMaxInflight)
			if reason, ok := l.flush(); !ok {
				return reason
			}
		} else if len(l.out) >= flushThreshold {
			if reason, ok := l.flush(); !ok {
				return reason
			}
		}
	}
}

// badLength handles a length word outside [4, maxTotal]: like Java, the
// connection closes without an answer.
func (l *connLoop) badLength(first byte, total, maxTotal int) CloseReason {
	s := l.c.srv
	l.flush()
	if !l.framed && first == tlsHandshakeRecord {
		s.warn(string(ClosedTLSRefused), l.c.remote,
			"closing connection: TLS handshake, but TLS is off (tls.server.mode=disabled or no certificate)")
		return ClosedTLSRefused
	}
	if total > maxTotal {
		s.violation(LimitFrameMaxLength, l.c.remote, "closing connection: frame larger than frameMaxLength",
			"length", total, "max", maxTotal)
		return ClosedTooLarge
	}
	s.warn(string(ClosedMalformed), l.c.remote, "closing connection: bad frame length", "length", total)
	return ClosedMalformed
}

// fill blocks until n bytes (at most the buffer size) are buffered, after
// writing the pending answers, which the client may be waiting for. Waiting
// for the first byte of a frame is idleness and ends at the idle timeout;
// once a frame has begun, the rest must arrive by the frame's deadline,
// however slowly it trickles in.
func (l *connLoop) fill(n int) (CloseReason, bool) {
	if reason, ok := l.flush(); !ok {
		return reason, false
	}
	if l.br.Buffered() == 0 {
		var idle time.Time
		if t := l.c.srv.cfg.IdleTimeout; t > 0 {
			idle = time.Now().Add(t)
		}
		if !l.c.armRead(idle) {
			return ClosedByServer, false
		}
		if _, err := l.br.Peek(1); err != nil {
			return l.readFailed(err, false), false
		}
		if l.br.Buffered() >= n {
			return "", true
		}
	}
	if !l.armFrame() {
		return ClosedByServer, false
	}
	if _, err := l.br.Peek(n); err != nil {
		return l.readFailed(err, true), false
	}
	return "", true
}

// armFrame sets the deadline of the frame that has begun, starting its
// clock on the first call for the frame.
func (l *connLoop) armFrame() bool {
	s := l.c.srv
	if s.cfg.ReadTimeout < 0 {
		var idle time.Time
		if s.cfg.IdleTimeout > 0 {
			idle = time.Now().Add(s.cfg.IdleTimeout)
		}
		return l.c.armRead(idle)
	}
	if l.frameDeadline.IsZero() {
		l.frameDeadline = time.Now().Add(s.cfg.ReadTimeout)
	}
	return l.c.armRead(l.frameDeadline)
}

// readFrame returns the frame after the length word. Frames that fit the
// read buffer are used in place (buffered is true: the caller discards them
// once handled); larger ones are read into a buffer of their own.
func (l *connLoop) readFrame(total int) (frame []byte, buffered bool, reason CloseReason, ok bool) {
	n := 4 + total
	if n <= l.br.Size() {
		if l.br.Buffered() < n {
			if reason, ok := l.fill(n); !ok {
				return nil, false, reason, false
			}
		}
		b, _ := l.br.Peek(n)
		return b[4:], true, "", true
	}
	l.br.Discard(4)
	if p, ok := l.c.srv.largeFrames.Get().(*[]byte); ok && cap(*p) >= total {
		l.big = *p
	} else {
		l.big = make([]byte, total)
	}
	buf := l.big[:total]
	if reason, ok := l.flush(); !ok {
		return nil, false, reason, false
	}
	if !l.armFrame() {
		return nil, false, ClosedByServer, false
	}
	if _, err := io.ReadFull(l.br, buf); err != nil {
		return nil, false, l.readFailed(err, true), false
	}
	return buf, false, "", true
}

// readFailed classifies a failed read; inFrame tells a stalled frame from
// an idle connection.
func (l *connLoop) readFailed(err error, inFrame bool) CloseReason {
	c, s := l.c, l.c.srv
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		if c.isDraining() {
			return ClosedByServer
		}
		if inFrame && s.cfg.ReadTimeout > 0 {
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

// flush writes the queued answers under the write deadline; it reports
// false, with the reason, if the write failed.
func (l *connLoop) flush() (CloseReason, bool) {
	if len(l.out) == 0 {
		return "", true
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
		return "", true
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.violation(LimitWriteTimeout, l.c.remote, "closing connection: client does not read its answers",
			"timeout", s.cfg.WriteTimeout, "unwritten", unwritten)
		return ClosedWriteTimeout, false
	}
	s.log.Info("closing connection: write failed", "remote", l.c.remote, "err", err)
	return ClosedWriteError, false
}
