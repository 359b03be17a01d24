package metrics_test

import (
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kube-namesrv/kube-namesrv/namesrv/authz"
	"github.com/kube-namesrv/kube-namesrv/namesrv/gate"
	"github.com/kube-namesrv/kube-namesrv/namesrv/kvconfig"
	"github.com/kube-namesrv/kube-namesrv/namesrv/kvdeclared"
	"github.com/kube-namesrv/kube-namesrv/namesrv/liverecord"
	"github.com/kube-namesrv/kube-namesrv/namesrv/metrics"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting/tlstest"
	"github.com/kube-namesrv/kube-namesrv/namesrv/route"
)

var update = flag.Bool("update", false, "rewrite testdata/exposition.golden")

// expose answers one scrape of m.
func expose(t *testing.T, m *metrics.Metrics, req *http.Request) *http.Response {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, req)
	return rec.Result()
}

// known builds metrics over sources with every optional exporter, in a
// fixed state, and returns them with the certificate's expiry.
func known(t *testing.T) (*metrics.Metrics, time.Time) {
	t.Helper()
	dir := t.TempDir()
	kv, err := kvconfig.Open(filepath.Join(dir, "kv.json"), kvconfig.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Put("ns", "k", new("v")); err != nil {
		t.Fatal(err)
	}
	cert := tlstest.NewCA(t, "ca").Server(t)
	certPath, keyPath := cert.Write(t, dir)
	certs, err := remoting.NewCertFiles(remoting.CertFilesOptions{CertPath: certPath, KeyPath: keyPath})
	if err != nil {
		t.Fatal(err)
	}
	g := gate.New(gate.Options{Enabled: true, Start: time.Now(), Timeout: time.Hour,
		NotLive: func(keys []peerstatus.BrokerKey) []peerstatus.BrokerKey { return keys }})
	t.Cleanup(g.Stop)
	m := metrics.New(metrics.Sources{
		Routes:       route.New(route.Options{}),
		KV:           kv,
		TLS:          certs,
		Gate:         g,
		Declared:     kvdeclared.New(kvdeclared.Options{Path: filepath.Join(dir, "declared.json"), Store: kv}),
		Record:       liverecord.New(liverecord.Options{Path: filepath.Join(dir, "live.json")}),
		AuthzEnabled: true,
		Owners:       authz.NewOwners(func(string) bool { return false }),
		HTTPPaths:    []string{"/metrics", "/routes/gate"},
	})
	return m, cert.Leaf.NotAfter
}

// observe feeds m a fixed set of events, with latencies on and around the
// bucket bounds (a bound is inclusive).
func observe(m *metrics.Metrics) {
	for _, d := range []time.Duration{time.Microsecond, 1500 * time.Nanosecond, 2500 * time.Nanosecond, 30 * time.Microsecond,
		250 * time.Microsecond, 2 * time.Millisecond, 100 * time.Millisecond, time.Second} {
		m.Request(protocol.GetRouteInfoByTopic, protocol.Success, false, d)
	}
	m.Request(protocol.GetRouteInfoByTopic, protocol.TopicNotExist, false, 7*time.Microsecond)
	m.Request(protocol.RegisterBroker, 9999, false, 3*time.Millisecond) // an unknown response code
	m.Request(protocol.RegisterBroker, protocol.Success, true, 40*time.Millisecond)
	m.Request(4242, protocol.RequestCodeNotSupported, false, 5*time.Microsecond)
	m.Request(4242, 12345, true, 600*time.Millisecond)
	for range 3 {
		m.ConnOpened()
	}
	m.ConnClosed(remoting.ClosedByPeer)
	m.ConnClosed(remoting.ClosedGated)
	m.ConnClosed("no such reason")
	m.LimitHit(remoting.LimitMaxConnections)
	m.LimitHit(remoting.LimitMaxConnections)
	m.LimitHit("no such limit")
	m.AuthzRefused(protocol.PutKVConfig, authz.Admin)
	m.AuthzRefused(4242, authz.Read)
	m.OwnershipRefused(protocol.RegisterBroker)
	m.OwnershipRefused(protocol.GetRouteInfoByTopic) // not a broker's code: not counted
	m.HTTPRefused("/routes/gate", metrics.HTTPInvalid)
	m.HTTPRefused("/routes/gate", metrics.HTTPInvalid)
	m.HTTPRefused("/elsewhere", metrics.HTTPMissing)
}

var (
	runtimeSample  = regexp.MustCompile(`^(go|process)_`)
	goVersionLabel = regexp.MustCompile(`(goversion|version)="go[^"]*"`)
)

// TestExpositionGolden: a scrape of metrics in a known state is
// testdata/exposition.golden byte for byte, values included, except the
// Go runtime's and the process's values and the Go version. The golden
// file was written by the client_golang exporter used before.
func TestExpositionGolden(t *testing.T) {
	m, expiry := known(t)
	observe(m)
	resp := expose(t, m, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8; escaping=underscores" {
		t.Errorf("Content-Type %q", ct)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	expiryText := " " + strconv.FormatFloat(float64(expiry.Unix()), 'g', -1, 64) + "\n"
	for line := range strings.Lines(string(body)) {
		line = goVersionLabel.ReplaceAllString(line, `$1="GOVERSION"`)
		switch {
		case strings.HasPrefix(line, "#"):
		case runtimeSample.MatchString(line):
			line = line[:strings.LastIndexByte(line, ' ')] + " V\n"
		case strings.HasPrefix(line, "rocketmq_namesrv_tls_certificate_expiry_timestamp_seconds "):
			line = strings.Replace(line, expiryText, " EXPIRY\n", 1)
		}
		got.WriteString(line)
	}
	path := filepath.Join("testdata", "exposition.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("exposition differs from %s; got:\n%s", path, got.String())
	}
}

// BenchmarkRequest is the per-request cost of counting on the route path.
func BenchmarkRequest(b *testing.B) {
	m := metrics.New(metrics.Sources{})
	b.ReportAllocs()
	for b.Loop() {
		m.Request(protocol.GetRouteInfoByTopic, protocol.Success, false, 3*time.Microsecond)
	}
}

// BenchmarkRequestParallel is the same with every core counting.
func BenchmarkRequestParallel(b *testing.B) {
	m := metrics.New(metrics.Sources{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Request(protocol.GetRouteInfoByTopic, protocol.Success, false, 3*time.Microsecond)
		}
	})
}
