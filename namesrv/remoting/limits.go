package remoting

import (
	"net"
	"sync"
	"time"
)

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

// refuse closes a connection accepted beyond MaxConnections. It resets
// rather than closes gracefully, so that a flood of refused connections
// leaves no TIME_WAIT state behind on the server.
func (s *Server) refuse(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // without it the close is graceful, which is correct too
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
