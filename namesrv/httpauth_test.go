package namesrv_test

import (
	"crypto/tls"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting/tlstest"
)

// httpDo sends a request to the HTTP side with c, over scheme, with the
// given bearer token ("" for none).
func httpDo(t *testing.T, c *http.Client, s *namesrv.Server, scheme, method, path, token string) (int, string) {
	t.Helper()
	body := ""
	if path == peerstatus.GatePath {
		body = `{"expect":[]}`
	}
	req, err := http.NewRequest(method, scheme+"://"+s.HTTPAddr().String()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var plainHTTP = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// TestHTTPBearerToken: with httpAuthScope=writes, the mutating endpoints
// need a token from the mounted file (re-read when the Secret changes);
// reads, health and the address server stay open; refusals are counted.
func TestHTTPBearerToken(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	tlstest.WriteFile(t, tokenFile, []byte("s3cret-1\n"))
	s := startServer(t, func(c *config.Config) {
		c.HTTPAuthScope, c.HTTPAuthTokenFile = "writes", tokenFile
		c.KVDeclaredFile = filepath.Join(filepath.Dir(tokenFile), "declared.json")
	})
	tests := []struct {
		method, path, token string
		want                int
	}{
		{"GET", "/healthz", "", 200},
		{"GET", "/readyz", "", 200},
		{"GET", "/metrics", "", 200},
		{"GET", peerstatus.SummaryPath, "", 200},
		{"GET", "/rocketmq/nsaddr", "", 404}, // open, but no address file
		{"POST", peerstatus.GatePath, "", 401},
		{"POST", peerstatus.GatePath, "s3cret-2", 401},
		{"POST", peerstatus.GatePath, "s3cret-1", 200},
		{"POST", peerstatus.KVApplyPath, "", 401},
		{"POST", peerstatus.KVApplyPath, "s3cret-1", 200},
	}
	for _, tt := range tests {
		if code, body := httpDo(t, plainHTTP, s, "http", tt.method, tt.path, tt.token); code != tt.want {
			t.Fatalf("%s %s with %q: %d %s, want %d", tt.method, tt.path, tt.token, code, body, tt.want)
		}
	}
	// The Secret is rotated: the new token works, the old one no longer.
	tlstest.WriteFile(t, tokenFile, []byte("s3cret-2\n"))
	if code, _ := httpDo(t, plainHTTP, s, "http", "POST", peerstatus.GatePath, "s3cret-2"); code != 200 {
		t.Fatalf("new token: %d", code)
	}
	if code, _ := httpDo(t, plainHTTP, s, "http", "POST", peerstatus.GatePath, "s3cret-1"); code != 401 {
		t.Fatalf("old token: %d", code)
	}
	m := scrapeMetrics(t, s)
	for _, c := range []struct {
		path, reason string
		want         float64
	}{{peerstatus.GatePath, "missing", 1}, {peerstatus.GatePath, "invalid", 2}, {peerstatus.KVApplyPath, "missing", 1}, {"/metrics", "missing", 0}} {
		if got := m.value("rocketmq_namesrv_http_auth_refusals_total", "path", c.path, "reason", c.reason); got != c.want {
			t.Errorf("refusals %s %s: %v, want %v", c.path, c.reason, got, c.want)
		}
	}
}

// TestHTTPStartsOnlyWithItsTokenFile: a token file that is missing or
// empty stops the start, as a missing Secret should.
func TestHTTPStartsOnlyWithItsTokenFile(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	tlstest.WriteFile(t, empty, []byte("\n"))
	for path, want := range map[string]string{filepath.Join(t.TempDir(), "missing"): "no such file", empty: "no token"} {
		cfg, hl := testConfig(t, func(c *config.Config) { c.HTTPAuthScope, c.HTTPAuthTokenFile = "writes", path })
		hl.Close()
		if _, err := namesrv.New(namesrv.Options{Config: cfg}); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("token file %s: %v, want %q", path, err, want)
		}
	}
}

// TestHTTPClientCertificates: with TLS on the HTTP port and every
// endpoint guarded, client certificates holding the admin role write,
// those holding the read role read, plain probes still reach health, and
// with enforcing TLS a kubelet HTTPS probe (no certificate) does too.
func TestHTTPClientCertificates(t *testing.T) {
	p := newPKI(t)
	operator := p.ca.ClientNamed(t, tlstest.Names{CN: "operator"})
	prometheus := p.ca.ClientNamed(t, tlstest.Names{URIs: []string{"spiffe://cluster.local/ns/monitoring/sa/prometheus"}})
	stranger := p.ca.ClientNamed(t, tlstest.Names{CN: "stranger"})
	https := func(cert *tlstest.Cert) *http.Client {
		cfg := &tls.Config{RootCAs: p.ca.Pool()}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{cert.TLS}
		}
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
	}
	kubeletProbe := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}} //nolint:gosec // what the kubelet does
	for _, mode := range []string{"permissive", "enforcing"} {
		t.Run(mode, func(t *testing.T) {
			s := startServer(t, func(c *config.Config) {
				p.withTLS(c)
				c.HTTPTLSMode, c.HTTPAuthScope = mode, "all"
				c.AuthzAdminIdentities = "cn:operator"
				c.AuthzReadIdentities = "uri:spiffe://cluster.local/ns/monitoring/sa/*"
			})
			type call struct {
				name         string
				client       *http.Client
				scheme       string
				method, path string
				want         int
			}
			tests := []call{
				{"kubelet probe", kubeletProbe, "https", "GET", "/healthz", 200},
				{"kubelet probe", kubeletProbe, "https", "GET", "/readyz", 200},
				{"kubelet probe", kubeletProbe, "https", "GET", "/metrics", 401},
				{"prometheus", https(prometheus), "https", "GET", "/metrics", 200},
				{"prometheus", https(prometheus), "https", "GET", peerstatus.SummaryPath, 200},
				{"prometheus", https(prometheus), "https", "POST", peerstatus.GatePath, 403},
				{"operator", https(operator), "https", "POST", peerstatus.GatePath, 200},
				{"operator", https(operator), "https", "GET", peerstatus.SummaryPath, 200},
				{"stranger", https(stranger), "https", "GET", "/metrics", 403},
				{"no certificate", https(nil), "https", "POST", peerstatus.GatePath, 401},
			}
			if mode == "permissive" {
				tests = append(tests, call{"plain probe", plainHTTP, "http", "GET", "/healthz", 200},
					call{"plain scrape", plainHTTP, "http", "GET", "/metrics", 401})
			} else {
				// A plain request to a TLS-only port: net/http's answer.
				tests = append(tests, call{"plain probe", plainHTTP, "http", "GET", "/healthz", 400})
			}
			for _, tt := range tests {
				if code, body := httpDo(t, tt.client, s, tt.scheme, tt.method, tt.path, ""); code != tt.want {
					t.Fatalf("%s %s %s: %d %s, want %d", tt.name, tt.method, tt.path, code, body, tt.want)
				}
			}
		})
	}
}

// TestGateIndependentOfAuthz: while the route gate is closed, a reader's
// route query still has its connection closed (so it asks another
// NameServer), and a peer without the read role is refused with an answer
// and keeps its connection: the two checks do not mix.
func TestGateIndependentOfAuthz(t *testing.T) {
	p := newPKI(t)
	s := startServer(t, func(c *config.Config) {
		zeroTrust(p)(c)
		c.RouteGateEnable, c.RouteGateTimeoutSeconds = true, 600
	})
	stranger := dialAs(t, s, p.clientTLS(nil), 0)
	r, err := tryInvoke(stranger, protocol.GetRouteInfoByTopic, "topic", "T")
	if err != nil || !refused(r) {
		t.Fatalf("stranger's route query: %+v %v", r, err)
	}
	reader := dialAs(t, s, p.clientTLS(p.ca.ClientNamed(t, tlstest.Names{DNS: []string{"app-0.clients.svc"}})), 0)
	gated(t, reader, protocol.GetRouteInfoByTopic, "topic", "T")
	if _, err := tryInvoke(stranger, protocol.GetNamesrvConfig); err != nil {
		t.Fatalf("stranger's connection closed: %v", err)
	}
}
