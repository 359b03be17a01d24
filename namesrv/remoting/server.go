package remoting

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
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

func (nopObserver) ConnOpened() {}

func (nopObserver) ConnClosed(CloseReason) {}

func (nopObserver) Request(int32, int32, bool, time.Duration) {}

func (nopObserver) LimitHit(Limit) {}

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
	if ta, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		c.addr = ta.AddrPort()
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
			_ = tc.SetWriteBuffer(s.cfg.SocketSendBuffer) // a size the kernel refuses leaves its default
		}
		if s.cfg.SocketReceiveBuffer > 0 {
			_ = tc.SetReadBuffer(s.cfg.SocketReceiveBuffer) // likewise
		}
	}
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
