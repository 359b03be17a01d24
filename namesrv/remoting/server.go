package remoting

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

// Handler answers requests. Serve is called on the connection's goroutine,
// one request at a time, so answers on a connection keep request order.
type Handler interface {
	// Serve fills resp for req. For oneway requests the answer is dropped.
	Serve(c *Conn, req *Command, resp *Response)
	// Closed is called once after the connection is gone.
	Closed(c *Conn)
}

// Observer receives transport events, for metrics. Implementations must be
// cheap and safe for concurrent use.
type Observer interface {
	ConnOpened()
	ConnClosed(reason CloseReason)
	Request(code int32, respCode int32, oneway bool, elapsed time.Duration)
	// LimitHit reports that a connection ran into one of the limits.
	LimitHit(limit Limit)
}

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

// Limit names a bound the server puts on what one client can hold.
type Limit string

// The limits. All but LimitMaxInflight close or refuse the connection and
// are logged at Warn with the peer's address; LimitMaxInflight is flow
// control: the connection stops reading until its answers are written.
const (
	LimitMaxConnections   Limit = "max_connections"
	LimitFrameMaxLength   Limit = "frame_max_length"
	LimitReadTimeout      Limit = "read_timeout"
	LimitWriteTimeout     Limit = "write_timeout"
	LimitHandshakeTimeout Limit = "handshake_timeout"
	LimitMaxInflight      Limit = "max_inflight"
)

// Limits lists every Limit.
var Limits = []Limit{LimitMaxConnections, LimitFrameMaxLength, LimitReadTimeout, LimitWriteTimeout,
	LimitHandshakeTimeout, LimitMaxInflight}

// TLSMode is the Java server's tls.server.mode.
type TLSMode uint8

// The TLS modes (namesrv-protocol.md §1.1).
const (
	// TLSDisabled serves plain connections only and closes TLS handshakes.
	TLSDisabled TLSMode = iota
	// TLSPermissive serves TLS and plain on the same port, told apart by
	// the first byte of the connection. Without a TLS configuration it
	// serves plain only.
	TLSPermissive
	// TLSEnforcing serves TLS only and closes plain connections.
	TLSEnforcing
)

func (m TLSMode) String() string {
	switch m {
	case TLSDisabled:
		return "disabled"
	case TLSPermissive:
		return "permissive"
	case TLSEnforcing:
		return "enforcing"
	}
	return "unknown"
}

// Config tunes the server. Zero values take the defaults (the Java ones
// where Java has the setting).
type Config struct {
	// FrameMaxLength is the largest frame, length word included.
	FrameMaxLength int
	// IdleTimeout closes a connection that has sent nothing for that long
	// (Java: serverChannelMaxIdleTimeSeconds, 120 s). Negative disables it.
	IdleTimeout time.Duration
	// ReadTimeout bounds how long a frame may take to arrive once its first
	// byte is in, so a client trickling bytes cannot hold a connection
	// open by staying just short of idle. Negative disables it (the idle
	// timeout then applies).
	ReadTimeout time.Duration
	// WriteTimeout bounds how long one flush of answers may block on a
	// client that does not read. Negative disables it.
	WriteTimeout time.Duration
	// MaxConnections closes connections accepted beyond that many open
	// ones; 0 means no limit.
	MaxConnections int
	// MaxInflight is the most answers a connection keeps unwritten: at the
	// bound the server writes them before it decodes the next request, so
	// a client that pipelines without reading is held back by TCP instead
	// of being buffered for.
	MaxInflight int
	// ReadBufferSize is the per-connection read buffer; frames larger than
	// it are read into a buffer of their own.
	ReadBufferSize int
	// SocketSendBuffer and SocketReceiveBuffer set the kernel buffers of
	// each connection (Java's serverSocketSndBufSize/RcvBufSize); 0 keeps
	// the OS default.
	SocketSendBuffer    int
	SocketReceiveBuffer int
	// TLSMode and TLSConfig select TLS. TLSEnforcing without a TLSConfig
	// refuses every connection rather than falling back to plain.
	TLSMode   TLSMode
	TLSConfig *tls.Config
	// HandshakeTimeout bounds, when TLS is possible, the wait for a new
	// connection's first byte and the TLS handshake.
	HandshakeTimeout time.Duration
	Logger           *slog.Logger
	Observer         Observer
}

const (
	defaultIdleTimeout      = 120 * time.Second
	defaultReadTimeout      = 30 * time.Second
	defaultWriteTimeout     = 30 * time.Second
	defaultHandshakeTimeout = 10 * time.Second
	defaultMaxInflight      = 256
	defaultReadBufferSize   = 16 << 10
	// flushThreshold caps how many answer bytes accumulate before a write,
	// so a client pipelining thousands of requests gets answers streamed.
	flushThreshold = 64 << 10
	// keepOutputCap is the largest output buffer kept between batches; a
	// larger one (after a big body) is dropped rather than pinned per
	// connection.
	keepOutputCap = 1 << 20
	// tlsHandshakeRecord is the first byte of every TLS connection (a
	// handshake record). A plain frame starting with it would announce at
	// least 0x16000000 bytes, far beyond any frame limit.
	tlsHandshakeRecord = 0x16
)

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("remoting: server closed")

// Server serves the remoting protocol on any number of listeners.
type Server struct {
	cfg     Config
	handler Handler
	log     *slog.Logger
	obs     Observer
	// sniff is set when a connection may be TLS: its first byte decides.
	sniff    bool
	warnings map[string]*warnGate // by Limit and CloseReason

	shutdown atomic.Bool
	nextID   atomic.Uint64

	// largeFrames recycles the buffers of frames too big for a
	// connection's read buffer (full broker registrations, up to 16 MiB,
	// every 30 s per broker): connections share them instead of each
	// allocating, zeroing and dropping one per registration.
	largeFrames sync.Pool

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*Conn]struct{}
	connsDone chan struct{} // closed when conns empties during shutdown

	wg sync.WaitGroup
}

// NewServer returns a server that hands requests to h.
func NewServer(h Handler, cfg Config) *Server {
	if cfg.FrameMaxLength <= 0 {
		cfg.FrameMaxLength = DefaultFrameMaxLength
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = defaultIdleTimeout
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = defaultReadTimeout
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = defaultWriteTimeout
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = defaultHandshakeTimeout
	}
	if cfg.MaxInflight <= 0 {
		cfg.MaxInflight = defaultMaxInflight
	}
	if cfg.ReadBufferSize <= 0 {
		cfg.ReadBufferSize = defaultReadBufferSize
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	s := &Server{
		cfg:       cfg,
		handler:   h,
		log:       cfg.Logger,
		obs:       cfg.Observer,
		sniff:     cfg.TLSMode == TLSEnforcing || cfg.TLSMode == TLSPermissive && cfg.TLSConfig != nil,
		warnings:  map[string]*warnGate{},
		listeners: map[net.Listener]struct{}{},
		conns:     map[*Conn]struct{}{},
	}
	for _, l := range Limits {
		s.warnings[string(l)] = &warnGate{}
	}
	for _, r := range CloseReasons {
		s.warnings[string(r)] = &warnGate{}
	}
	return s
}

type nopObserver struct{}

func (nopObserver) ConnOpened()                               {}
func (nopObserver) ConnClosed(CloseReason)                    {}
func (nopObserver) Request(int32, int32, bool, time.Duration) {}
func (nopObserver) LimitHit(Limit)                            {}

// Serve accepts connections on l until Shutdown. It always returns an error:
// ErrServerClosed after Shutdown, or the accept error.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.shutdown.Load() {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
	}()

	var backoff time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.shutdown.Load() {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) || isTemporary(err) {
				// Out of file descriptors and the like: wait and retry
				// instead of spinning or giving up, as net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "err", err, "backoff", backoff)
				time.Sleep(backoff)
				continue
			}
			return fmt.Errorf("accept: %w", err)
		}
		backoff = 0
		if !s.track(nc) {
			nc.Close()
			return ErrServerClosed
		}
	}
}

func isTemporary(err error) bool {
	t, ok := err.(interface{ Temporary() bool })
	return ok && t.Temporary()
}

func (s *Server) track(nc net.Conn) bool { return s.trackConn(nc, false) }

// trackConn serves nc. An internal connection (Probe's) is exempt from
// MaxConnections and TLS, and invisible to the Observer.
func (s *Server) trackConn(nc net.Conn, internal bool) bool {
	s.mu.Lock()
	if s.shutdown.Load() {
		s.mu.Unlock()
		return false
	}
	if limit := s.cfg.MaxConnections; !internal && limit > 0 && len(s.conns) >= limit {
		s.mu.Unlock()
		s.refuse(nc)
		return true
	}
	c := &Conn{
		id:       s.nextID.Add(1),
		nc:       nc,
		srv:      s,
		remote:   nc.RemoteAddr().String(),
		internal: internal,
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	if internal {
		go c.serve()
		return true
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		if s.cfg.SocketSendBuffer > 0 {
			tc.SetWriteBuffer(s.cfg.SocketSendBuffer)
		}
		if s.cfg.SocketReceiveBuffer > 0 {
			tc.SetReadBuffer(s.cfg.SocketReceiveBuffer)
		}
	}
	s.obs.ConnOpened()
	go c.serve()
	return true
}

// refuse closes a connection accepted beyond MaxConnections. It resets
// rather than closes gracefully, so that a flood of refused connections
// leaves no TIME_WAIT state behind on the server.
func (s *Server) refuse(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	s.violation(LimitMaxConnections, nc.RemoteAddr().String(), "refusing connection: too many connections",
		"max", s.cfg.MaxConnections)
	nc.Close()
}

// violation counts a limit hit and logs it with the peer.
func (s *Server) violation(limit Limit, remote, msg string, args ...any) {
	s.obs.LimitHit(limit)
	s.warn(string(limit), remote, msg, append([]any{"limit", string(limit)}, args...)...)
}

// warn logs a connection closed for misbehaviour with the peer's address,
// at most warnBurst lines per kind (a Limit or a CloseReason) and second.
func (s *Server) warn(kind, remote, msg string, args ...any) {
	ok, suppressed := s.warnings[kind].allow(time.Now())
	if !ok {
		return
	}
	attrs := append([]any{"remote", remote}, args...)
	if suppressed > 0 {
		attrs = append(attrs, "suppressed", suppressed)
	}
	s.log.Warn(msg, attrs...)
}

// warnBurst is how many Warn lines per second one kind of misbehaviour may
// write; the metrics count every occurrence.
const warnBurst = 10

// warnGate rate-limits the log lines of one kind: a client opening
// thousands of bad connections a second must not turn into thousands of log
// lines a second. The next line that passes says how many were dropped.
type warnGate struct {
	mu         sync.Mutex
	second     int64
	n          int
	suppressed int
}

func (g *warnGate) allow(now time.Time) (ok bool, suppressed int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if sec := now.Unix(); sec != g.second {
		g.second, g.n = sec, 0
	}
	if g.n >= warnBurst {
		g.suppressed++
		return false, 0
	}
	g.n++
	suppressed, g.suppressed = g.suppressed, 0
	return true, suppressed
}

func (s *Server) untrack(c *Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	if len(s.conns) == 0 && s.connsDone != nil {
		close(s.connsDone)
		s.connsDone = nil
	}
	s.mu.Unlock()
	s.wg.Done()
}

// Shutdown stops accepting, lets every connection finish the requests it has
// already received, then closes them. If ctx ends first the remaining
// connections are closed at once and ctx's error is returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shutdown.Store(true)
	for l := range s.listeners {
		l.Close()
	}
	conns := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	var done <-chan struct{}
	if len(s.conns) > 0 {
		ch := make(chan struct{})
		s.connsDone = ch
		done = ch
	}
	s.mu.Unlock()

	for _, c := range conns {
		c.drain()
	}
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
		return ctx.Err()
	}
}

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

// negotiate runs before the first frame when TLS is possible: the first
// byte tells a TLS handshake from a plain frame, and the handshake runs
// here, on the connection's own goroutine, never on the accept loop. Both
// must finish within the handshake timeout, so a client that connects and
// sends nothing holds its slot no longer than that. It reports false, with
// the reason, when the connection must close.
func (l *connLoop) negotiate() (CloseReason, bool) {
	c, s := l.c, l.c.srv
	if !s.sniff || c.internal {
		return "", true
	}
	if !c.armRead(time.Now().Add(s.cfg.HandshakeTimeout)) {
		return ClosedByServer, false
	}
	first, err := l.br.Peek(1)
	if err != nil {
		return l.handshakeFailed(err), false
	}
	if first[0] != tlsHandshakeRecord {
		if s.cfg.TLSMode == TLSEnforcing {
			s.warn(string(ClosedTLSRequired), c.remote, "closing plain connection: TLS is required (tls.server.mode=enforcing)")
			return ClosedTLSRequired, false
		}
		return "", true
	}
	if s.cfg.TLSConfig == nil {
		s.warn(string(ClosedTLSRefused), c.remote, "closing TLS connection: no certificate configured")
		return ClosedTLSRefused, false
	}
	// The bytes read while sniffing belong to the handshake: replay them
	// to the TLS layer, then reuse the read buffer for the plaintext.
	sniffed, _ := l.br.Peek(l.br.Buffered())
	tc := tls.Server(&replayConn{Conn: c.nc, pending: bytes.Clone(sniffed)}, s.cfg.TLSConfig)
	c.nc.SetWriteDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	if err := tc.Handshake(); err != nil {
		return l.handshakeFailed(err), false
	}
	c.nc.SetWriteDeadline(time.Time{})
	l.br.Reset(tc)
	l.w = tc
	c.tls.Store(true)
	return "", true
}

func (l *connLoop) handshakeFailed(err error) CloseReason {
	c, s := l.c, l.c.srv
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		if c.isDraining() {
			return ClosedByServer
		}
		s.violation(LimitHandshakeTimeout, c.remote, "closing connection: no first request or TLS handshake in time",
			"timeout", s.cfg.HandshakeTimeout)
		return ClosedHandshakeTimeout
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return ClosedByPeer
	}
	s.warn(string(ClosedTLSFailed), c.remote, "closing connection: TLS handshake failed", "err", err)
	return ClosedTLSFailed
}

// replayConn reads pending before reading on from the connection.
type replayConn struct {
	net.Conn
	pending []byte
}

func (r *replayConn) Read(b []byte) (int, error) {
	if len(r.pending) > 0 {
		n := copy(b, r.pending)
		r.pending = r.pending[n:]
		return n, nil
	}
	return r.Conn.Read(b)
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
