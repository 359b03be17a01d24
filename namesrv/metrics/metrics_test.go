package metrics_test

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

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
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, req)
	return rec.Result()
}

// known builds metrics over sources with every optional exporter, in a
// fixed state, and returns them with the certificate's expiry.
func known(t testing.TB) (*metrics.Metrics, time.Time) {
	t.Helper()
	dir := t.TempDir()
	kv, err := kvconfig.Open(filepath.Join(dir, "kv.json"), kvconfig.Options{Logger: slog.New(slog.DiscardHandler)})
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
		t.Errorf("exposition differs from %s (-want +got):\n%s", path, diffLines(string(want), got.String()))
	}
}

// diffLines lists the lines where want and got first differ, in order.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out strings.Builder
	for i := 0; i < max(len(w), len(g)) && out.Len() < 4000; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&out, "line %d:\n- %s\n+ %s\n", i+1, wl, gl)
		}
	}
	return out.String()
}

// TestScrapeOfSomeFamilies: name[] parameters narrow a scrape to the
// families named.
func TestScrapeOfSomeFamilies(t *testing.T) {
	m, _ := known(t)
	observe(m)
	resp := expose(t, m, httptest.NewRequest(http.MethodGet, "/metrics?name[]=rocketmq_namesrv_connections_open&name[]=go_goroutines&name[]=nope", nil))
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for line := range strings.Lines(string(body)) {
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
			names = append(names, strings.Fields(name)[0])
		}
	}
	if want := []string{"go_goroutines", "rocketmq_namesrv_connections_open"}; !slices.Equal(names, want) {
		t.Fatalf("families %v, want %v:\n%s", names, want, body)
	}
	if !strings.Contains(string(body), "\nrocketmq_namesrv_connections_open 0\n") {
		t.Fatalf("no sample:\n%s", body)
	}
}

// TestCountingWhileScraped: requests counted from every core while scrapes
// run are all in the last scrape, each histogram's _count equals its +Inf
// bucket in every scrape, and no series ever goes down.
func TestCountingWhileScraped(t *testing.T) {
	m, _ := known(t)
	const workers, each = 4, 2000
	durations := []time.Duration{500 * time.Nanosecond, 3 * time.Microsecond, 40 * time.Microsecond, 2 * time.Millisecond, time.Second}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				m.Request(protocol.GetRouteInfoByTopic, protocol.Success, false, durations[(w+i)%len(durations)])
				m.ConnOpened()
				m.ConnClosed(remoting.ClosedByPeer)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	previous := map[string]float64{}
	check := func() map[string]float64 {
		t.Helper()
		resp := expose(t, m, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		now := map[string]float64{}
		for _, f := range fams["rocketmq_namesrv_request_duration_seconds"].Metric {
			h := f.Histogram
			buckets := h.Bucket
			if inf := buckets[len(buckets)-1]; inf.GetCumulativeCount() != h.GetSampleCount() {
				t.Fatalf("+Inf bucket %d, count %d", inf.GetCumulativeCount(), h.GetSampleCount())
			}
			for i, b := range buckets {
				key := f.String() + strconv.Itoa(i)
				now[key] = float64(b.GetCumulativeCount())
				if now[key] < previous[key] {
					t.Fatalf("bucket %v went down", b)
				}
			}
		}
		now["requests"] = fams["rocketmq_namesrv_requests_total"].Metric[0].Counter.GetValue()
		for _, r := range fams["rocketmq_namesrv_requests_total"].Metric {
			if r.Label[2].GetValue() == "SUCCESS" && r.Label[1].GetValue() == "GET_ROUTEINFO_BY_TOPIC" {
				now["requests"] = r.Counter.GetValue()
			}
		}
		if now["requests"] < previous["requests"] {
			t.Fatalf("requests went down")
		}
		previous = now
		return now
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			check()
		}
	}
	if got := check()["requests"]; got != workers*each {
		t.Fatalf("%v requests counted, want %d", got, workers*each)
	}
}

// TestCountingDoesNotAllocate: the observer methods on the request path
// allocate nothing.
func TestCountingDoesNotAllocate(t *testing.T) {
	m, _ := known(t)
	allocs := testing.AllocsPerRun(1000, func() {
		m.Request(protocol.GetRouteInfoByTopic, protocol.Success, false, 3*time.Microsecond)
		m.Request(protocol.GetRouteInfoByTopic, 12345, false, 3*time.Microsecond)
		m.Request(4242, protocol.Success, true, time.Millisecond)
		m.ConnOpened()
		m.ConnClosed(remoting.ClosedByPeer)
		m.LimitHit(remoting.LimitMaxConnections)
		m.AuthzRefused(protocol.PutKVConfig, authz.Admin)
		m.HTTPRefused("/metrics", metrics.HTTPMissing)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}

// discard is a ResponseWriter that keeps nothing, as a scraper on the
// other end of a socket costs this process nothing.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// BenchmarkScrape is one scrape as Prometheus sends it, every family
// written: its time, and what it allocates, which an idle NameServer
// keeps resident until its heap first reaches the collector's goal.
func BenchmarkScrape(b *testing.B) {
	m, _ := known(b)
	observe(m)
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,"+
		"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2")
	req.Header.Set("Accept-Encoding", "gzip")
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		m.ServeHTTP(w, req)
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
