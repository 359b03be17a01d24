package namesrv_test

import (
	"context"
	"crypto/tls"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting/tlstest"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
)

// tlsFiles writes a server certificate of a new CA into a temporary
// directory and returns the CA and the paths.
func tlsFiles(t *testing.T) (ca *tlstest.CA, certPath, keyPath string) {
	t.Helper()
	ca = tlstest.NewCA(t, "namesrv-test-ca")
	certPath, keyPath = ca.Server(t).Write(t, t.TempDir())
	return ca, certPath, keyPath
}

// dialTLS opens a remoting client over TLS, or returns the handshake error.
func dialTLS(t *testing.T, s *namesrv.Server, ca *tlstest.CA, certs ...tls.Certificate) (*remotingclient.Client, *tls.Conn, error) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(nc, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", Certificates: certs})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, nil, err
	}
	c := remotingclient.New(tc, remotingclient.Options{})
	t.Cleanup(func() { c.Close() })
	return c, tc, nil
}

// tryInvoke is invoke for requests that may fail.
func tryInvoke(c *remotingclient.Client, code int32, ext ...string) (*remotingclient.Response, error) {
	req := &remotingclient.Request{Code: code}
	for i := 0; i+1 < len(ext); i += 2 {
		req.Ext = append(req.Ext, remoting.Pair{Key: ext[i], Value: ext[i+1]})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Invoke(ctx, req)
}

// TestTLSModes runs each tls.server.mode with a plain broker and a TLS
// client on one port: what each may do, and what the metrics say.
func TestTLSModes(t *testing.T) {
	ca, certPath, keyPath := tlsFiles(t)
	for _, tt := range []struct {
		mode              string
		plainOK, tlsOK    bool
		refusedWithReason string
	}{
		{"disabled", true, false, "tls_refused"},
		{"permissive", true, true, ""},
		{"enforcing", false, true, "tls_required"},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			s := startServer(t, func(c *config.Config) {
				c.TLSServerMode, c.TLSServerCertPath, c.TLSServerKeyPath = tt.mode, certPath, keyPath
			})
			b := startBroker(t, brokersim.Config{Cluster: "c", Name: "b", Topics: []body.TopicConfig{brokersim.Topic("T", 2), brokersim.Topic("U", 2)}})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			res := b.Register(ctx, []string{s.Addr().String()})[0]
			if plainOK := res.Err == nil && res.Response.Code == protocol.Success; plainOK != tt.plainOK {
				t.Fatalf("plain broker registered: %v (%v), want %v", plainOK, res.Err, tt.plainOK)
			}

			c, tc, err := dialTLS(t, s, ca)
			if err == nil {
				var r *remotingclient.Response
				if r, err = tryInvoke(c, protocol.GetRouteInfoByTopic, "topic", "T"); err == nil {
					want := protocol.TopicNotExist
					if tt.plainOK {
						want = protocol.Success
					}
					if r.Code != want {
						t.Fatalf("route over TLS: code %d, want %d", r.Code, want)
					}
					if _, err := tryInvoke(c, protocol.PutKVConfig, "namespace", "ns", "key", "k", "value", "over-tls"); err != nil {
						t.Fatal(err)
					}
					if v, _ := s.KV().Get("ns", "k"); v != "over-tls" {
						t.Fatalf("KV written over TLS: %q", v)
					}
					if tc.ConnectionState().Version < tls.VersionTLS12 {
						t.Fatalf("TLS version %x", tc.ConnectionState().Version)
					}
				}
			}
			if tlsOK := err == nil; tlsOK != tt.tlsOK {
				t.Fatalf("TLS client served: %v (%v), want %v", tlsOK, err, tt.tlsOK)
			}

			if tt.refusedWithReason != "" {
				eventually(t, "the refusal in the metrics", func() bool {
					return scrapeMetrics(t, s).value("rocketmq_namesrv_connections_closed_total", "reason", tt.refusedWithReason) == 1
				})
			}
			m := scrapeMetrics(t, s)
			expiry := m.value("rocketmq_namesrv_tls_certificate_expiry_timestamp_seconds")
			if tt.mode == "disabled" && expiry != -1 {
				t.Fatalf("certificate metrics exported with TLS disabled: %v", expiry)
			}
			if tt.mode != "disabled" && expiry < float64(time.Now().Unix()) {
				t.Fatalf("certificate expiry %v", expiry)
			}
		})
	}
}

func TestTLSConfigurationErrors(t *testing.T) {
	ca, certPath, keyPath := tlsFiles(t)
	caPath := filepath.Join(t.TempDir(), "ca.crt")
	tlstest.WriteFile(t, caPath, ca.PEM)
	tests := []struct {
		name  string
		tweak func(*config.Config)
		want  string
	}{
		{"enforcing without certificate", func(c *config.Config) { c.TLSServerMode = "enforcing" }, "tls.server.certPath"},
		{"certificate without key", func(c *config.Config) { c.TLSServerCertPath = certPath }, "key"},
		{"unreadable certificate", func(c *config.Config) {
			c.TLSServerCertPath, c.TLSServerKeyPath = filepath.Join(t.TempDir(), "none.crt"), keyPath
		}, "none.crt"},
		{"client auth without trusted CAs", func(c *config.Config) {
			c.TLSServerCertPath, c.TLSServerKeyPath, c.TLSServerNeedClientAuth = certPath, keyPath, "require"
		}, "trusted CA"},
		{"unknown mode", func(c *config.Config) { c.TLSServerMode = "sometimes" }, "sometimes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.KVConfigPath = filepath.Join(t.TempDir(), "kv.json")
			tt.tweak(cfg)
			_, err := namesrv.New(namesrv.Options{Config: cfg})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
	cfg := config.Default()
	cfg.KVConfigPath = filepath.Join(t.TempDir(), "kv.json")
	cfg.TLSServerMode, cfg.TLSServerCertPath, cfg.TLSServerKeyPath = "enforcing", certPath, keyPath
	cfg.TLSServerTrustCertPath, cfg.TLSServerNeedClientAuth = caPath, "require"
	if _, err := namesrv.New(namesrv.Options{Config: cfg}); err != nil {
		t.Fatalf("good configuration refused: %v", err)
	}
}

func TestMutualTLS(t *testing.T) {
	ca, certPath, keyPath := tlsFiles(t)
	caPath := filepath.Join(t.TempDir(), "ca.crt")
	tlstest.WriteFile(t, caPath, ca.PEM)
	s := startServer(t, func(c *config.Config) {
		c.TLSServerMode, c.TLSServerCertPath, c.TLSServerKeyPath = "enforcing", certPath, keyPath
		c.TLSServerTrustCertPath, c.TLSServerNeedClientAuth = caPath, "require"
	})
	c, _, err := dialTLS(t, s, ca, ca.Client(t, "broker-a").TLS)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := tryInvoke(c, protocol.GetBrokerClusterInfo); err != nil || r.Code != protocol.Success {
		t.Fatalf("with a client certificate: %+v, %v", r, err)
	}
	anon, _, err := dialTLS(t, s, ca)
	if err == nil {
		// TLS 1.3: the refusal of a missing client certificate arrives
		// after the client's handshake completed.
		_, err = tryInvoke(anon, protocol.GetBrokerClusterInfo)
	}
	if err == nil {
		t.Fatal("a client without a certificate was served")
	}
	eventually(t, "the failed handshake in the metrics", func() bool {
		return scrapeMetrics(t, s).value("rocketmq_namesrv_connections_closed_total", "reason", "tls_failed") == 1
	})
}

func TestTLSCertificateReloadIsVisibleInMetrics(t *testing.T) {
	ca, certPath, keyPath := tlsFiles(t)
	s := startServer(t, func(c *config.Config) {
		c.TLSServerCertPath, c.TLSServerKeyPath = certPath, keyPath
	})
	next := ca.Server(t)
	next.Write(t, filepath.Dir(certPath))
	_, tc, err := dialTLS(t, s, ca)
	if err != nil {
		t.Fatal(err)
	}
	if got := tc.ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(next.Leaf.SerialNumber) != 0 {
		t.Fatalf("presented serial %s, want the new %s", got, next.Leaf.SerialNumber)
	}
	m := scrapeMetrics(t, s)
	if v := m.value("rocketmq_namesrv_tls_certificate_reloads_total", "result", "success"); v != 1 {
		t.Fatalf("reloads %v", v)
	}
	if v := m.value("rocketmq_namesrv_tls_certificate_expiry_timestamp_seconds"); v != float64(next.Leaf.NotAfter.Unix()) {
		t.Fatalf("expiry %v, want %d", v, next.Leaf.NotAfter.Unix())
	}
}
