package namesrv_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
	"github.com/kube-namesrv/kube-namesrv/test/logcapture"
	"github.com/kube-namesrv/kube-namesrv/test/nstest"
)

// runningServer is a NameServer a test can stop before its end, with its
// log kept for inspection.
type runningServer struct {
	*namesrv.Server
	logs *logcapture.Buffer
	stop func() // later calls do nothing
}

// startLogged is startServer with the log kept for inspection and a stop
// the test may call itself.
func startLogged(t *testing.T, tweak func(*config.Config)) *runningServer {
	t.Helper()
	cfg, hl := testConfig(t, tweak)
	logs := &logcapture.Buffer{}
	s := nstest.Run(t, namesrv.Options{Config: cfg, HTTPListener: hl, Logger: logs.Logger(slog.LevelInfo)})
	return &runningServer{Server: s.Server, logs: logs, stop: s.Stop}
}

func routeRequest(opaque int32, topic string) []byte {
	return remoting.AppendFrame(nil, remoting.JSON, &remoting.Header{Code: protocol.GetRouteInfoByTopic, Language: "JAVA",
		Version: protocol.V5_3_3, Opaque: opaque, Ext: []remoting.Pair{{Key: "topic", Value: topic}}}, nil)
}

func rawDial(t *testing.T, s *namesrv.Server) *net.TCPConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	return nc.(*net.TCPConn)
}

// refusedConn is a connection whose dial the server may reset before it
// completes; its local address is known either way.
type refusedConn struct {
	net.Conn // nil when the dial itself was reset
	local    net.Addr
}

func (r refusedConn) LocalAddr() net.Addr { return r.local }

func (r refusedConn) Read(b []byte) (int, error) {
	if r.Conn == nil {
		return 0, io.EOF
	}
	return r.Conn.Read(b)
}

// refusedDial connects from a port chosen up front, so that the peer
// address the server logs is known even if the dial fails.
func refusedDial(t *testing.T, s *namesrv.Server) net.Conn {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	local := l.Addr().(*net.TCPAddr)
	l.Close()
	d := net.Dialer{LocalAddr: local, Timeout: 5 * time.Second}
	nc, err := d.Dial("tcp", s.Addr().String())
	if err != nil {
		return refusedConn{local: local}
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	return refusedConn{Conn: nc, local: local}
}

// waitClosed reads until the server ends the connection (EOF or reset).
func waitClosed(t *testing.T, nc net.Conn) {
	t.Helper()
	var ne net.Error
	if _, err := io.Copy(io.Discard, nc); errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection not closed by the server: %v", err)
	}
}

// TestEveryLimitIsEnforcedCountedAndLogged drives each limit of the
// remoting port through the configuration keys and checks the close, the
// metrics, and the Warn line naming the peer.
func TestEveryLimitIsEnforcedCountedAndLogged(t *testing.T) {
	_, certPath, keyPath := tlsFiles(t)
	tests := []struct {
		limit  remoting.Limit
		reason string // connections_closed_total reason, "" when refused at accept
		tweak  func(*config.Config)
		// provoke misbehaves on a fresh connection (or opens them) and
		// returns the connection the server must end.
		provoke func(t *testing.T, s *runningServer) net.Conn
	}{
		{remoting.LimitMaxConnections, "", func(c *config.Config) { c.MaxConnections = 2 },
			func(t *testing.T, s *runningServer) net.Conn {
				for range 2 {
					c := dial(t, s.Server, remotingclient.Options{})
					invoke(t, c, protocol.GetBrokerClusterInfo, nil)
				}
				return refusedDial(t, s.Server)
			}},
		{remoting.LimitFrameMaxLength, "frame_too_large", func(c *config.Config) { c.FrameMaxLength = 1024 },
			func(t *testing.T, s *runningServer) net.Conn {
				nc := rawDial(t, s.Server)
				_, _ = nc.Write(binary.BigEndian.AppendUint32(nil, 5000))
				return nc
			}},
		{remoting.LimitReadTimeout, "read_timeout", func(c *config.Config) { c.FrameReadTimeoutMillis = 200 },
			func(t *testing.T, s *runningServer) net.Conn {
				nc := rawDial(t, s.Server)
				_, _ = nc.Write(routeRequest(1, "T")[:9])
				return nc
			}},
		{remoting.LimitHandshakeTimeout, "handshake_timeout", func(c *config.Config) {
			c.TLSServerCertPath, c.TLSServerKeyPath, c.TLSHandshakeTimeoutMillis = certPath, keyPath, 200
		}, func(t *testing.T, s *runningServer) net.Conn { return rawDial(t, s.Server) }},
		{remoting.LimitWriteTimeout, "write_timeout", func(c *config.Config) {
			c.WriteTimeoutMillis, c.ServerSocketSndBufSize = 300, 4096
		}, func(t *testing.T, s *runningServer) net.Conn {
			b := startBroker(t, brokersim.Config{Cluster: "c", Name: "b",
				Topics: []body.TopicConfig{brokersim.Topic("T", 8), brokersim.Topic("U", 8)}})
			mustRegister(t, b, s.Addr().String())
			nc := rawDial(t, s.Server)
			_ = nc.SetReadBuffer(4096)
			// Ask for routes and never read them; the writes stop once
			// the server has closed the connection.
			go func() {
				batch := bytes.Repeat(routeRequest(1, "T"), 100)
				for {
					if _, err := nc.Write(batch); err != nil {
						return
					}
				}
			}()
			return nc
		}},
	}
	for _, tt := range tests {
		t.Run(string(tt.limit), func(t *testing.T) {
			s := startLogged(t, tt.tweak)
			nc := tt.provoke(t, s)
			remote := nc.LocalAddr().String()
			waitClosed(t, nc)
			eventually(t, "the limit hit in the metrics", func() bool {
				return scrapeMetrics(t, s.Server).value("rocketmq_namesrv_limit_hits_total", "limit", string(tt.limit)) == 1
			})
			if tt.reason != "" {
				eventually(t, "the close in the metrics", func() bool {
					m := scrapeMetrics(t, s.Server)
					return m.value("rocketmq_namesrv_connections_closed_total", "reason", tt.reason) == 1
				})
			}
			if l := s.logs.Lines("level=WARN", "limit="+string(tt.limit), "remote="+remote); len(l) != 1 {
				t.Fatalf("want one Warn line naming %s and %s:\n%s", tt.limit, remote, s.logs.String())
			}
			if tt.limit == remoting.LimitMaxConnections {
				return // both slots are still taken
			}
			// The server is unharmed.
			c := dial(t, s.Server, remotingclient.Options{})
			if r := invoke(t, c, protocol.GetBrokerClusterInfo, nil); r.Code != protocol.Success {
				t.Fatalf("after the violation: %+v", r)
			}
		})
	}
}

func TestMaxInflightPerConnectionBatchesAnswers(t *testing.T) {
	s := startLogged(t, func(c *config.Config) { c.MaxInflightPerConnection = 2 })
	nc := rawDial(t, s.Server)
	var burst []byte
	const n = 10
	for i := range int32(n) {
		burst = append(burst, routeRequest(i, "missing")...)
	}
	if _, err := nc.Write(burst); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	var dec remoting.Decoder
	for i := range int32(n) {
		var size [4]byte
		if _, err := io.ReadFull(br, size[:]); err != nil {
			t.Fatal(err)
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(br, frame); err != nil {
			t.Fatal(err)
		}
		var cmd remoting.Command
		if err := dec.Decode(frame, &cmd); err != nil || cmd.Opaque != i || cmd.Code != protocol.TopicNotExist {
			t.Fatalf("answer %d: %+v %v", i, cmd, err)
		}
	}
	if v := scrapeMetrics(t, s.Server).value("rocketmq_namesrv_limit_hits_total", "limit", "max_inflight"); v != n/2 {
		t.Fatalf("max_inflight hits %v, want %d (one per two answers of a single burst)", v, n/2)
	}
	if l := s.logs.Lines("limit=max_inflight"); len(l) != 0 {
		t.Fatalf("flow control logged as a violation: %q", l)
	}
}
