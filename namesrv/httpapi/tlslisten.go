package httpapi

import (
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"
)

// tlsHandshakeRecord is the first byte of every TLS connection; an HTTP
// request starts with a method name, a letter.
const tlsHandshakeRecord = 0x16

// plainToTLS is the answer to a plain request on a port that serves TLS
// only, as net/http gives one.
const plainToTLS = "HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n" +
	"Client sent an HTTP request to an HTTPS server (httpTLSMode=enforcing).\n"

// SniffTLS serves TLS and plain HTTP on one listener, as the remoting port
// does in permissive mode: each connection's first byte tells a TLS
// handshake from a plain request. TLS connections are handed on as
// *tls.Conn, so net/http fills in Request.TLS (the verified client
// certificate included); with enforce, a plain request gets a 400 and is
// closed. Kubelet probes, which cannot present client certificates, keep
// working: over plain HTTP unless enforce, else with scheme HTTPS, since
// client certificates are verified when given and never required.
//
// The first byte is awaited on the connection's own goroutine, within
// timeout, never on the accept loop.
func SniffTLS(l net.Listener, cfg *tls.Config, enforce bool, timeout time.Duration, log *slog.Logger) net.Listener {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &sniffListener{
		inner: l, cfg: cfg, enforce: enforce, timeout: timeout, log: log,
		conns: make(chan net.Conn), errs: make(chan error), done: make(chan struct{}),
		sniffing: map[net.Conn]struct{}{},
	}
	go s.acceptLoop()
	return s
}

type sniffListener struct {
	inner   net.Listener
	cfg     *tls.Config
	enforce bool
	timeout time.Duration
	log     *slog.Logger

	conns chan net.Conn
	errs  chan error
	done  chan struct{}
	once  sync.Once

	mu       sync.Mutex
	sniffing map[net.Conn]struct{} // closed by Close
}

func (s *sniffListener) acceptLoop() {
	for {
		c, err := s.inner.Accept()
		if err != nil {
			select {
			case s.errs <- err:
			case <-s.done:
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		s.mu.Lock()
		select {
		case <-s.done:
			s.mu.Unlock()
			c.Close()
			return
		default:
		}
		s.sniffing[c] = struct{}{}
		s.mu.Unlock()
		go s.sniff(c)
	}
}

func (s *sniffListener) sniff(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(s.timeout))
	var first [1]byte
	n, err := c.Read(first[:])
	c.SetReadDeadline(time.Time{})
	s.mu.Lock()
	delete(s.sniffing, c)
	s.mu.Unlock()
	if err != nil || n == 0 {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			s.log.Debug("closing HTTP connection: nothing sent in time", "remote", c.RemoteAddr().String(), "timeout", s.timeout)
		}
		c.Close()
		return
	}
	var out net.Conn = &replayConn{Conn: c, pending: first[:]}
	switch {
	case first[0] == tlsHandshakeRecord:
		out = tls.Server(out, s.cfg)
	case s.enforce:
		refusePlain(c, s.timeout)
		return
	}
	select {
	case s.conns <- out:
	case <-s.done:
		c.Close()
	}
}

// refusePlain answers a plain request on a TLS-only port and closes the
// connection. Closing with the rest of the request unread would make the
// kernel reset the connection and the client lose the answer, so the
// request is drained first, as net/http does, for at most timeout.
func refusePlain(c net.Conn, timeout time.Duration) {
	defer c.Close()
	deadline := time.Now().Add(timeout)
	c.SetDeadline(deadline)
	if _, err := c.Write([]byte(plainToTLS)); err != nil {
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite() // best effort: the close below ends the connection anyway
	}
	_, _ = io.CopyN(io.Discard, c, 256<<10) // until the client closes, errs or the deadline passes
}

// Accept returns the next connection whose first byte has arrived.
func (s *sniffListener) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case err := <-s.errs:
		return nil, err
	case <-s.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting and closes the connections still being sniffed.
func (s *sniffListener) Close() error {
	var err error
	s.once.Do(func() {
		s.mu.Lock()
		close(s.done)
		for c := range s.sniffing {
			c.Close()
		}
		s.mu.Unlock()
		err = s.inner.Close()
	})
	return err
}

func (s *sniffListener) Addr() net.Addr { return s.inner.Addr() }

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
