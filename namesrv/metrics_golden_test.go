package namesrv_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting/tlstest"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/metrics.golden")

// volatile are the samples whose values depend on the machine, the clock
// or the toolchain rather than on what the test did: the Go runtime and
// process series, request latencies, the generated certificate's expiry
// and the timer-driven record of live brokers. Their names, labels, HELP
// and TYPE lines stay in the golden file; their values become "V".
var volatile = regexp.MustCompile(`^(go_|process_|rocketmq_namesrv_request_duration_seconds_(bucket|sum)\b|` +
	`rocketmq_namesrv_tls_certificate_expiry_timestamp_seconds\b|rocketmq_namesrv_live_brokers_record_writes_total\b)`)

var goVersionLabel = regexp.MustCompile(`(goversion|version)="go[^"]*"`)

// normalize masks what volatile selects, and the Go version in labels.
func normalize(exposition string) string {
	var out strings.Builder
	for line := range strings.Lines(exposition) {
		line = goVersionLabel.ReplaceAllString(line, `$1="GOVERSION"`)
		if !strings.HasPrefix(line, "#") && volatile.MatchString(line) {
			line = line[:strings.LastIndexByte(line, ' ')] + " V\n"
		}
		out.WriteString(line)
	}
	return out.String()
}

// TestMetricsExpositionGolden: the whole /metrics answer of a NameServer
// with every optional exporter on (TLS, authorization with broker-name
// ownership, the declared KV file, the route gate, HTTP credentials) in a
// known state is, line for line, testdata/metrics.golden: every family's
// HELP and TYPE, every series' labels in order, every histogram bucket,
// and every value that does not depend on the machine or the clock. The
// golden file was written by the client_golang exporter this package used
// before it wrote the format itself, so consumers (dashboards, alerts,
// recording rules) see no difference.
func TestMetricsExpositionGolden(t *testing.T) {
	p := newPKI(t)
	dir := t.TempDir()
	tokenFile, declared := filepath.Join(dir, "token"), filepath.Join(dir, "declared.json")
	tlstest.WriteFile(t, tokenFile, []byte("s3cret\n"))
	kv, err := json.Marshal(peerstatus.KVFile{Policy: peerstatus.PolicyOwned, ConfigTable: map[string]map[string]string{"APP": {"a": "1"}}})
	if err != nil {
		t.Fatal(err)
	}
	tlstest.WriteFile(t, declared, kv)
	s := startServer(t, func(c *config.Config) {
		p.withTLS(c)
		c.AuthzEnable = true
		c.AuthzBrokerNetworks, c.AuthzReadNetworks = "127.0.0.1/32", "127.0.0.1/32"
		c.AuthzAdminIdentities = "cn:operator"
		c.AuthzBrokerNameOwnership = true
		c.KVDeclaredFile = declared
		c.RouteGateEnable, c.RouteGateTimeoutSeconds = true, 3600
		c.HTTPAuthScope, c.HTTPAuthTokenFile = "writes", tokenFile
	})

	b := startBroker(t, brokersim.Config{Cluster: "c", Name: "b", Topics: []body.TopicConfig{brokersim.Topic("T", 4)}})
	mustRegister(t, b, s.Addr().String())
	// A client's read while the gate is closed gets its connection closed.
	gated(t, dial(t, s, remotingclient.Options{}), protocol.GetRouteInfoByTopic, "topic", "T")
	gate := `{"expect":[{"cluster":"c","addr":"` + b.Addr() + `"}]}`
	if code, _ := postGate(t, s, gate, ""); code != http.StatusUnauthorized {
		t.Fatalf("gate without a token: %d", code)
	}
	if code, answer := postGate(t, s, gate, "s3cret"); code != http.StatusOK {
		t.Fatalf("gate: %d %s", code, answer)
	}
	eventually(t, "the gate to open and the gated connection to be counted", func() bool {
		m := scrapeMetrics(t, s)
		return m.value("rocketmq_namesrv_route_gate_open") == 1 && m.value("rocketmq_namesrv_connections_closed_total", "reason", "gated") == 1
	})

	c := dial(t, s, remotingclient.Options{})
	for _, req := range []struct {
		code int32
		ext  []string
		want int32
	}{
		{protocol.GetRouteInfoByTopic, []string{"topic", "T"}, protocol.Success},
		{protocol.GetRouteInfoByTopic, []string{"topic", "missing"}, protocol.TopicNotExist},
		{protocol.PutKVConfig, []string{"namespace", "APP", "key", "b", "value", "2"}, protocol.NoPermission},
		{4242, nil, protocol.RequestCodeNotSupported},
	} {
		if r := invoke(t, c, req.code, nil, req.ext...); r.Code != req.want {
			t.Fatalf("request %d: answer %d, want %d", req.code, r.Code, req.want)
		}
	}

	resp := metricsResponse(t, s)
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8; escaping=underscores" {
		t.Errorf("Content-Type %q", ct)
	}
	got := normalize(readAll(t, resp))
	path := filepath.Join("testdata", "metrics.golden")
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("/metrics differs from %s:\n%s", path, lineDiff(string(want), got))
	}
}

// TestMetricsScrapeParses: each format Prometheus may ask for gets the
// text format (version 0.0.4) that expfmt reads, uncompressed even when
// the scraper would accept gzip (see metrics.Metrics.ServeHTTP).
func TestMetricsScrapeParses(t *testing.T) {
	s := startServer(t, nil)
	for _, tt := range []struct {
		accept, encoding string
		wantType         string
	}{
		{"", "", "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"},
		{"text/plain;version=0.0.4;q=0.2,*/*;q=0.1", "gzip", "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"},
		// Prometheus 3 by default.
		{"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5," +
			"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2", "gzip",
			"text/plain; version=0.0.4; charset=utf-8; escaping=allow-utf-8"},
	} {
		req, err := http.NewRequest(http.MethodGet, "http://"+s.HTTPAddr().String()+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if tt.accept != "" {
			req.Header.Set("Accept", tt.accept)
		}
		if tt.encoding != "" {
			req.Header.Set("Accept-Encoding", tt.encoding)
		}
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if ct := resp.Header.Get("Content-Type"); ct != tt.wantType {
			t.Errorf("Accept %q: Content-Type %q, want %q", tt.accept, ct, tt.wantType)
		}
		if ce := resp.Header.Get("Content-Encoding"); ce != "" {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q", tt.encoding, ce)
		}
		text := readAll(t, resp)
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
		if err != nil {
			t.Fatalf("Accept %q: %v", tt.accept, err)
		}
		for _, name := range []string{"rocketmq_namesrv_requests_total", "rocketmq_namesrv_request_duration_seconds", "go_goroutines", "process_start_time_seconds"} {
			if fams[name] == nil {
				t.Errorf("Accept %q: no %s", tt.accept, name)
			}
		}
	}
}

func postGate(t *testing.T, s *namesrv.Server, body, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+s.HTTPAddr().String()+peerstatus.GatePath, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := plainHTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, readAll(t, resp)
}

// metricsResponse is GET /metrics.
func metricsResponse(t *testing.T, s *namesrv.Server) *http.Response {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + s.HTTPAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	return resp
}

// readAll reads and closes a response body.
func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lineDiff lists the lines only in want (-) or only in got (+), in order.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	inW, inG := map[string]int{}, map[string]int{}
	for _, l := range w {
		inW[l]++
	}
	for _, l := range g {
		inG[l]++
	}
	var out bytes.Buffer
	for _, l := range w {
		if inG[l] == 0 {
			out.WriteString("- " + l + "\n")
		}
	}
	for _, l := range g {
		if inW[l] == 0 {
			out.WriteString("+ " + l + "\n")
		}
	}
	if out.Len() == 0 {
		return "same lines, different order"
	}
	return out.String()
}
