package remoting

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"time"
)

// TLSMode is the Java server's tls.server.mode.
type TLSMode uint8

// The TLS modes (docs/protocol.md#tls).
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

// negotiate runs before the first frame when TLS is possible: the first
// byte tells a TLS handshake from a plain frame, and the handshake runs
// here, on the connection's own goroutine, never on the accept loop. Both
// must finish within the handshake timeout, so a client that connects and
// sends nothing holds its slot no longer than that. It returns the reason
// when the connection must close.
func (l *connLoop) negotiate() CloseReason {
	c, s := l.c, l.c.srv
	if !s.sniff || c.internal {
		return ""
	}
	if !c.armRead(time.Now().Add(s.cfg.HandshakeTimeout)) {
		return ClosedByServer
	}
	first, err := l.br.Peek(1)
	if err != nil {
		return l.handshakeFailed(err)
	}
	if first[0] != tlsHandshakeRecord {
		if s.cfg.TLSMode == TLSEnforcing {
			s.warn(string(ClosedTLSRequired), c.remote, "closing plain connection: TLS is required (tls.server.mode=enforcing)")
			return ClosedTLSRequired
		}
		return ""
	}
	if s.cfg.TLSConfig == nil {
		s.warn(string(ClosedTLSRefused), c.remote, "closing TLS connection: no certificate configured")
		return ClosedTLSRefused
	}
	// The bytes read while sniffing belong to the handshake: replay them
	// to the TLS layer, then reuse the read buffer for the plaintext.
	sniffed, _ := l.br.Peek(l.br.Buffered())
	tc := tls.Server(&replayConn{Conn: c.nc, pending: bytes.Clone(sniffed)}, s.cfg.TLSConfig)
	c.nc.SetWriteDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	if err := tc.Handshake(); err != nil {
		return l.handshakeFailed(err)
	}
	c.nc.SetWriteDeadline(time.Time{})
	l.br.Reset(tc)
	l.w = tc
	if st := tc.ConnectionState(); len(st.VerifiedChains) > 0 {
		c.cert.Store(st.PeerCertificates[0])
	}
	c.tls.Store(true)
	return ""
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
