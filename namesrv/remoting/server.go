package remoting

import (
	"bufio"
	"context"
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
)

// Config tunes the server. Zero values take the Java defaults.
type Config struct {
	// FrameMaxLength is the largest frame, length word included.
	FrameMaxLength int
	// IdleTimeout closes a connection that has sent nothing for that long
	// (Java: serverChannelMaxIdleTimeSeconds, 120 s). Negative disables it.
	IdleTimeout time.Duration
	// WriteTimeout bounds how long one flush of answers may block on a
	// client that does not read.
	WriteTimeout time.Duration
	// ReadBufferSize is the per-connection read buffer; frames larger than
	// it are read into a buffer of their own.
	ReadBufferSize int
	// SocketSendBuffer and SocketReceiveBuffer set the kernel buffers of
	// each connection (Java's serverSocketSndBufSize/RcvBufSize); 0 keeps
	// the OS default.
	SocketSendBuffer    int
	SocketReceiveBuffer int
	Logger              *slog.Logger
	Observer            Observer
}

const (
	defaultIdleTimeout    = 120 * time.Second
	defaultWriteTimeout   = 60 * time.Second
	defaultReadBufferSize = 64 << 10
	// flushThreshold caps how many answer bytes accumulate before a write,
	// so a client pipelining thousands of requests gets answers streamed.
	flushThreshold = 64 << 10
	// keepOutputCap is the largest output buffer kept between batches; a
	// larger one (after a big body) is dropped rather than pinned per
	// connection.
	keepOutputCap = 1 << 20
)

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("remoting: server closed")

// Server serves the remoting protocol on any number of listeners.
type Server struct {
	cfg     Config
	handler Handler
	log     *slog.Logger
	obs     Observer

	shutdown atomic.Bool
	nextID   atomic.Uint64

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
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = defaultWriteTimeout
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
	return &Server{
		cfg:       cfg,
		handler:   h,
		log:       cfg.Logger,
		obs:       cfg.Observer,
		listeners: map[net.Listener]struct{}{},
		conns:     map[*Conn]struct{}{},
	}
}

type nopObserver struct{}

func (nopObserver) ConnOpened()                               {}
func (nopObserver) ConnClosed(CloseReason)                    {}
func (nopObserver) Request(int32, int32, bool, time.Duration) {}

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

func (s *Server) track(nc net.Conn) bool {
	if tc, ok := nc.(*net.TCPConn); ok {
		if s.cfg.SocketSendBuffer > 0 {
			tc.SetWriteBuffer(s.cfg.SocketSendBuffer)
		}
		if s.cfg.SocketReceiveBuffer > 0 {
			tc.SetReadBuffer(s.cfg.SocketReceiveBuffer)
		}
	}
	c := &Conn{
		id:     s.nextID.Add(1),
		nc:     nc,
		srv:    s,
		remote: nc.RemoteAddr().String(),
	}
	s.mu.Lock()
	if s.shutdown.Load() {
		s.mu.Unlock()
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	s.obs.ConnOpened()
	go c.serve()
	return true
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
	nc     net.Conn
	srv    *Server
	remote string

	mu       sync.Mutex
	draining bool
	reason   CloseReason
}

// ID is unique among the server's connections.
func (c *Conn) ID() uint64 { return c.id }

// RemoteAddr is the peer's address.
func (c *Conn) RemoteAddr() string { return c.remote }

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

// armRead sets the idle deadline before a read that may block; it reports
// false when the connection is draining and must not read again.
func (c *Conn) armRead(idle time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.draining {
		return false
	}
	if idle > 0 {
		c.nc.SetReadDeadline(time.Now().Add(idle))
	}
	return true
}

// connLoop holds the per-connection state of the read-process-write loop.
type connLoop struct {
	c    *Conn
	br   *bufio.Reader
	dec  Decoder
	cmd  Command
	resp Response
	out  []byte
	big  []byte
}

func (c *Conn) serve() {
	s := c.srv
	l := &connLoop{c: c, br: bufio.NewReaderSize(c.nc, s.cfg.ReadBufferSize)}
	reason := l.run()
	c.setReason(reason)
	c.nc.Close()
	s.handler.Closed(c)
	s.obs.ConnClosed(c.reason)
	s.untrack(c)
}

// run reads frames until the connection ends and returns why it ended.
func (l *connLoop) run() CloseReason {
	s := l.c.srv
	maxTotal := s.cfg.FrameMaxLength - 4
	for {
		if l.br.Buffered() < 4 {
			if reason, ok := l.beforeBlocking(); !ok {
				return reason
			}
		}
		head, err := l.br.Peek(4)
		if err != nil {
			return l.readFailed(err)
		}
		total := int(int32(binary.BigEndian.Uint32(head)))
		if total < 4 || total > maxTotal {
			l.flush()
			reason := ClosedMalformed
			if total > maxTotal {
				reason = ClosedTooLarge
			}
			s.log.Warn("closing connection: bad frame length", "remote", l.c.remote, "length", total, "max", maxTotal)
			return reason
		}
		frame, buffered, err := l.readFrame(total)
		if err != nil {
			return l.readFailed(err)
		}
		if err := l.dec.Decode(frame, &l.cmd); err != nil {
			l.flush()
			s.log.Warn("closing connection: malformed frame", "remote", l.c.remote, "err", err)
			return ClosedMalformed
		}
		l.handle()
		if buffered {
			l.br.Discard(4 + total)
		} else {
			// Large bodies (full broker registrations) arrive every 30 s
			// per broker; keep no frame buffer pinned between them.
			l.big = nil
		}
		if len(l.out) >= flushThreshold && !l.flush() {
			return ClosedWriteError
		}
	}
}

// beforeBlocking flushes pending answers and arms the idle deadline before a
// read that may block. It returns false when the loop must stop.
func (l *connLoop) beforeBlocking() (CloseReason, bool) {
	if !l.flush() {
		return ClosedWriteError, false
	}
	if !l.c.armRead(l.c.srv.cfg.IdleTimeout) {
		return ClosedByServer, false
	}
	return "", true
}

// readFrame returns the frame after the length word. Frames that fit the
// read buffer are used in place (buffered is true: the caller discards them
// once handled); larger ones are read into a buffer of their own.
func (l *connLoop) readFrame(total int) (frame []byte, buffered bool, err error) {
	n := 4 + total
	if n <= l.br.Size() {
		if l.br.Buffered() < n {
			if reason, ok := l.beforeBlocking(); !ok {
				return nil, false, errStop(reason)
			}
		}
		b, err := l.br.Peek(n)
		if err != nil {
			return nil, false, err
		}
		return b[4:], true, nil
	}
	if _, err := l.br.Discard(4); err != nil {
		return nil, false, err
	}
	if cap(l.big) < total {
		l.big = make([]byte, total)
	}
	buf := l.big[:total]
	if reason, ok := l.beforeBlocking(); !ok {
		return nil, false, errStop(reason)
	}
	if _, err := io.ReadFull(l.br, buf); err != nil {
		return nil, false, err
	}
	return buf, false, nil
}

type stopError CloseReason

func (e stopError) Error() string { return string(e) }

func errStop(r CloseReason) error { return stopError(r) }

func (l *connLoop) readFailed(err error) CloseReason {
	var stop stopError
	switch {
	case errors.As(err, &stop):
		return CloseReason(stop)
	case errors.Is(err, os.ErrDeadlineExceeded):
		l.c.mu.Lock()
		draining := l.c.draining
		l.c.mu.Unlock()
		if draining {
			return ClosedByServer
		}
		l.c.srv.log.Info("closing idle connection", "remote", l.c.remote, "idle", l.c.srv.cfg.IdleTimeout)
		return ClosedIdle
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return ClosedByPeer
	}
	l.c.srv.log.Debug("connection read failed", "remote", l.c.remote, "err", err)
	return ClosedByPeer
}

// handle runs the handler for the decoded command and queues its answer.
func (l *connLoop) handle() {
	s := l.c.srv
	cmd := &l.cmd
	if cmd.IsResponse() {
		// The NameServer sends no requests that would be answered; Java
		// logs and drops such frames and so do we.
		s.log.Debug("dropping a response frame nobody asked for", "remote", l.c.remote, "opaque", cmd.Opaque)
		return
	}
	start := time.Now()
	l.resp.Reset()
	l.serveSafely()
	oneway := cmd.IsOneway()
	s.obs.Request(cmd.Code, l.resp.Code, oneway, time.Since(start))
	if oneway {
		return
	}
	l.out = AppendResponse(l.out, cmd.Type, cmd.Opaque, &l.resp)
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

// flush writes the queued answers; it reports false if the write failed.
func (l *connLoop) flush() bool {
	if len(l.out) == 0 {
		return true
	}
	l.c.nc.SetWriteDeadline(time.Now().Add(l.c.srv.cfg.WriteTimeout))
	_, err := l.c.nc.Write(l.out)
	if cap(l.out) > keepOutputCap {
		l.out = nil
	} else {
		l.out = l.out[:0]
	}
	if err != nil {
		l.c.srv.log.Info("closing connection: write failed", "remote", l.c.remote, "err", err)
		return false
	}
	return true
}
