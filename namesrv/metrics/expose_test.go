package metrics

import (
	"errors"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kube-namesrv/kube-namesrv/namesrv/kvconfig"
	"github.com/kube-namesrv/kube-namesrv/namesrv/route"
)

// TestEscapingRoundTrips: HELP texts and label values with backslashes,
// quotes and newlines are escaped so that Prometheus' own parser reads
// back exactly what was exported, and special values keep their spelling.
func TestEscapingRoundTrips(t *testing.T) {
	f := &family{name: "odd_total", help: "a \\ backslash\nand a newline", typ: counterType}
	values := []string{`with "quotes"`, `back\slash`, "new\nline", "plain", ""}
	var c counter
	for _, v := range values {
		f.add(&c, nil, "zeta", "z", "alpha", v)
	}
	f.sort()
	special := &family{name: "special", help: "special values", typ: gaugeType}
	specials := []struct {
		v    float64
		text string
	}{{math.NaN(), "NaN"}, {math.Inf(1), "+Inf"}, {math.Inf(-1), "-Inf"}, {-1, "-1"}, {5e-301, "5e-301"}, {1e21, "1e+21"}, {0.1, "0.1"}}
	for _, sp := range specials {
		special.add(valueFunc(func() float64 { return sp.v }), nil, "v", sp.text)
	}
	special.sort()
	var out strings.Builder
	var e encoder
	e.reset(&out, nil)
	f.write(&e)
	special.write(&e)
	if err := e.flush(); err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(out.String()))
	if err != nil {
		t.Fatalf("%v in\n%s", err, out.String())
	}
	if got := fams["odd_total"].GetHelp(); got != f.help {
		t.Errorf("HELP read back as %q", got)
	}
	var read []string
	for _, m := range fams["odd_total"].Metric {
		if m.Label[0].GetName() != "alpha" || m.Label[1].GetName() != "zeta" {
			t.Errorf("labels not in name order: %v", m.Label)
		}
		read = append(read, m.Label[0].GetValue())
	}
	if want := []string{"", "back\\slash", "new\nline", "plain", `with "quotes"`}; strings.Join(read, "|") != strings.Join(want, "|") {
		t.Errorf("label values read back, in order, as %q, want %q", read, want)
	}
	for _, sp := range specials {
		if line := `special{v="` + sp.text + `"} ` + sp.text + "\n"; !strings.Contains(out.String(), line) {
			t.Errorf("no line %q in\n%s", line, out.String())
		}
	}
	for _, m := range fams["special"].Metric {
		for _, sp := range specials {
			if sp.text == m.Label[0].GetValue() && m.Gauge.GetValue() != sp.v && !math.IsNaN(sp.v) {
				t.Errorf("%s read back as %v", sp.text, m.Gauge.GetValue())
			}
		}
	}
}

// TestSeriesSortByValuesInLabelNameOrder: series are listed by their
// label values taken in label-name order, a shorter value first, as the
// Go client's registry lists them.
func TestSeriesSortByValuesInLabelNameOrder(t *testing.T) {
	f := &family{name: "x", help: "x", typ: gaugeType}
	var g gauge
	for _, p := range [][2]string{{"b", "10"}, {"a", "100"}, {"a", "10"}, {"a", "9"}, {"A", "2"}, {"b", "1"}} {
		f.add(&g, nil, "second", p[1], "first", p[0])
	}
	f.sort()
	var got []string
	for _, s := range f.samples {
		got = append(got, s.labels)
	}
	want := []string{`first="A",second="2"`, `first="a",second="10"`, `first="a",second="100"`, `first="a",second="9"`,
		`first="b",second="1"`, `first="b",second="10"`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("order\n%q\nwant\n%q", got, want)
	}
}

// TestContentTypeNegotiation: the answer is always the text format 0.0.4,
// with the escaping scheme the scraper asked for among its clauses down to
// the first that the text format satisfies; unknown schemes are ignored.
func TestContentTypeNegotiation(t *testing.T) {
	const text = "text/plain; version=0.0.4; charset=utf-8; escaping="
	for _, tt := range []struct{ accept, want string }{
		{"", text + "underscores"},
		{"*/*", text + "underscores"},
		{"text/plain", text + "underscores"},
		{"text/plain;version=0.0.4;escaping=allow-utf-8", text + "allow-utf-8"},
		{"text/plain;version=0.0.4;escaping=no-such-scheme", text + "underscores"},
		// Prometheus 3's default: OpenMetrics first, then text 1.0.0 (both
		// naming allow-utf-8), then text 0.0.4.
		{"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5," +
			"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2", text + "allow-utf-8"},
		// A scheme named after the clause the text format satisfies is not
		// the answer's.
		{"text/plain;version=0.0.4;q=0.9,text/plain;version=1.0.0;escaping=dots;q=0.1", text + "underscores"},
		{"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;escaping=values;q=0.7," +
			"text/plain;version=0.0.4;q=0.3", text + "values"},
		{"application/json", text + "underscores"},
	} {
		if got := contentType(tt.accept); got != tt.want {
			t.Errorf("Accept %q: %q, want %q", tt.accept, got, tt.want)
		}
	}
}

// TestIPOctets reads the receive and transmit counters from netstat, and
// refuses a file whose lines do not pair up.
func TestIPOctets(t *testing.T) {
	const netstat = "TcpExt: SyncookiesSent SyncookiesRecv\nTcpExt: 0 1\n" +
		"IpExt: InNoRoutes InOctets OutOctets\nIpExt: 3 165000000000 7\n"
	for _, tt := range []struct {
		name, in string
		ok       bool
		rx, tx   float64
	}{
		{"netstat", netstat, true, 165e9, 7},
		{"no IpExt", "TcpExt: A\nTcpExt: 1\n", true, 0, 0},
		{"empty", "", true, 0, 0},
		{"fields differ", "IpExt: InOctets OutOctets\nIpExt: 1\n", false, 0, 0},
		{"not a number", "IpExt: InOctets OutOctets\nIpExt: 1 x\n", false, 0, 0},
		{"negative", "IpExt: InOctets OutOctets\nIpExt: 1 -2\n", false, 0, 0},
	} {
		rx, tx, ok := ipOctets([]byte(tt.in))
		if ok != tt.ok || rx != tt.rx || tx != tt.tx {
			t.Errorf("%s: %v %v %v, want %v %v %v", tt.name, rx, tx, ok, tt.rx, tt.tx, tt.ok)
		}
	}
}

// TestProcessSeriesOfThisProcess reads this test's own process, twice
// with the same reader.
func TestProcessSeriesOfThisProcess(t *testing.T) {
	p := newProcessStats()
	var out strings.Builder
	var e encoder
	for range 2 {
		out.Reset()
		e.reset(&out, nil)
		p.write(&e)
		if err := e.flush(); err != nil {
			t.Fatal(err)
		}
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(out.String()))
	if err != nil {
		t.Fatal(err)
	}
	value := func(name string) float64 {
		f := fams[name]
		if f == nil {
			t.Errorf("no %s", name)
			return math.NaN()
		}
		if c := f.Metric[0].Counter; c != nil {
			return c.GetValue()
		}
		return f.Metric[0].Gauge.GetValue()
	}
	if v := value("process_resident_memory_bytes"); !(v > 1<<20) {
		t.Errorf("resident memory %v", v)
	}
	if v := value("process_open_fds"); !(v >= 3) || v > value("process_max_fds") {
		t.Errorf("open fds %v of %v", v, value("process_max_fds"))
	}
	if v := value("process_cpu_seconds_total"); !(v >= 0) {
		t.Errorf("cpu %v", v)
	}
	if v := value("process_virtual_memory_bytes"); !(v >= value("process_resident_memory_bytes")) {
		t.Errorf("virtual memory %v", v)
	}
	if start := value("process_start_time_seconds"); !(start > 1.6e9) {
		t.Errorf("start time %v", start)
	}
	for _, name := range []string{"process_network_receive_bytes_total", "process_network_transmit_bytes_total", "process_virtual_memory_max_bytes"} {
		value(name)
	}
}

// failingWriter fails every write after the first n bytes.
type failingWriter struct{ writes, n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes > 1 {
		return 0, errors.New("scraper gone")
	}
	w.n += len(p)
	return len(p), nil
}

// TestScrapeStopsWritingAfterAnError: a scraper that goes away midway
// costs one failed write, not one per buffer of the rest.
func TestScrapeStopsWritingAfterAnError(t *testing.T) {
	kv, err := kvconfig.Open(filepath.Join(t.TempDir(), "kv.json"), kvconfig.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	m := New(Sources{Routes: route.New(route.Options{}), KV: kv})
	w := &failingWriter{}
	m.write(w, nil)
	if w.writes != 2 || w.n == 0 {
		t.Fatalf("%d writes, %d bytes before the failure", w.writes, w.n)
	}
}
