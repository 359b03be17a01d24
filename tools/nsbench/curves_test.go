package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var namesrvBin string

// TestMain builds cmd/namesrv once; the sweep tests spawn it as nsbench does.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nsbench-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	namesrvBin = filepath.Join(dir, "namesrv")
	build := exec.Command("go", "build", "-o", namesrvBin, "github.com/kube-namesrv/kube-namesrv/cmd/namesrv")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building namesrv (the go command must be on PATH): %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// positive checks that every named column of every row is a number > 0
// (>= 0 for the columns in zeroOK) and returns the rows.
func positive(t *testing.T, dir, name string, rows int, columns []string, zeroOK ...string) *table {
	t.Helper()
	tb, err := readTable(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.rows) != rows {
		t.Fatalf("%s.csv: %d rows, want %d:\n%s", name, len(tb.rows), rows, tb.markdown())
	}
	for _, r := range tb.rows {
		for _, c := range columns {
			v, err := tb.float(r, c)
			if err != nil {
				t.Fatal(err)
			}
			if v < 0 || v == 0 && !contains(zeroOK, c) {
				t.Errorf("%s.csv %v: %s = %v", name, r, c, v)
			}
		}
	}
	return tb
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestQuickSweep runs the whole sweep on its tiny grid against real
// namesrv processes, then renders it into a document.
func TestQuickSweep(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	start := time.Now()
	if err := run([]string{"-spawn", namesrvBin, "-mode", "curves", "-quick", "-out", dir}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Logf("quick sweep in %v:\n%s", time.Since(start), out.String())

	mem := positive(t, dir, "memory", 4, []string{"broker_count", "topics_per_broker", "topic_entries", "idle_rss_mib", "rss_mib"})
	for _, r := range mem.rows {
		brokers, _ := mem.float(r, "broker_count")
		per, _ := mem.float(r, "topics_per_broker")
		entries, _ := mem.float(r, "topic_entries")
		if brokers*per != entries {
			t.Errorf("memory.csv %v: entries are not brokers x topics", r)
		}
	}
	reg := positive(t, dir, "register", 6, []string{"topics", "body_bytes", "registrations", "latency_p50_ms", "rss_mib"}, "latency_p50_ms")
	if kinds := column(t, reg, "kind"); strings.Join(kinds, ";") !=
		"same version;same version;new version;new version;new version, 5 topics changed;new version, 5 topics changed" {
		t.Errorf("registration kinds %q", kinds)
	}
	positive(t, dir, "route", 2, []string{"table_topics", "sampled_topics", "queries", "queries_per_s", "p50_us", "p99_us", "rss_mib"})
	storm := positive(t, dir, "storm", 1, []string{"broker_count", "routable_after_ms", "route_queries", "route_p99_us", "rss_mib"}, "not_found")
	// The last of 5 brokers starts 4/5 into the 100 ms spread.
	if after, _ := storm.float(storm.rows[0], "routable_after_ms"); after < 80 {
		t.Errorf("all topics routable after %v ms, before the last broker registered", after)
	}
	runInfo, err := readTable(dir, "run")
	if err != nil || len(runInfo.rows) < 5 || !strings.Contains(runInfo.rows[0][1], "-quick") {
		t.Fatalf("run.csv %v %v", runInfo, err)
	}

	doc := filepath.Join(t.TempDir(), "bench.md")
	if err := os.WriteFile(doc, []byte("# before\n"+reportBegin+"\nstale\n"+reportEnd+"\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-mode", "plot", "-out", dir, "-doc", doc}, &out); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(doc)
	rel, _ := filepath.Rel(filepath.Dir(doc), dir)
	for _, want := range []string{"# before\n", "\nafter\n", "](" + filepath.ToSlash(filepath.Join(rel, "register.svg")) + ")",
		"| same version | 20 | json |", "#### Restart storm", "- command: nsbench -spawn"} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if bytes.Contains(got, []byte("stale")) {
		t.Error("the old report was kept")
	}
	svgs := []string{"memory-rss.svg", "memory-bytes.svg", "route-cpu.svg", "route-p99.svg"}
	// Registration CPU is drawn on a log axis: zeros (below /proc's
	// resolution in so short a point) are left out, and so is an empty chart.
	for _, r := range reg.rows {
		if v, _ := reg.float(r, "cpu_ms_per_registration"); v > 0 {
			svgs = append(svgs, "register.svg")
			break
		}
	}
	for _, svg := range svgs {
		if b, err := os.ReadFile(filepath.Join(dir, svg)); err != nil || !bytes.HasPrefix(b, []byte("<svg")) {
			t.Errorf("%s: %v", svg, err)
		}
	}
}

func column(t *testing.T, tb *table, name string) []string {
	t.Helper()
	i, err := tb.column(name)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range tb.rows {
		out = append(out, r[i])
	}
	return out
}

// TestSweepAgainstAnAddress runs the curves that need no fresh server
// against one given by -addr and -pid.
func TestSweepAgainstAnAddress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := spawn(ctx, binaryLauncher(namesrvBin), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	dir := t.TempDir()
	var out bytes.Buffer
	args := []string{"-addr", srv.addr, "-pid", strconv.Itoa(srv.pid), "-mode", "curves", "-quick", "-curves", "register,route", "-out", dir}
	if err := run(args, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	positive(t, dir, "register", 6, []string{"registrations", "rss_mib"})
	positive(t, dir, "route", 2, []string{"queries", "p99_us", "rss_mib"})
	if _, err := os.Stat(filepath.Join(dir, "memory.csv")); err == nil {
		t.Error("memory curve measured though not asked for")
	}
}

func TestCurvesRefuseBadRequests(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"-mode", "curves", "-curves", "memory", "-out", dir},
		{"-mode", "curves", "-curves", "storm", "-out", dir},
		{"-mode", "curves", "-curves", "bogus", "-out", dir},
		{"-mode", "curves", "-mem-brokers", "10,x"},
		{"-mode", "curves", "-reg-topics", "0"},
		{"-mode", "plot", "-out", dir},
		{"-mode", "nonsense"},
		{"-mode", "start"},
		{"-mode", "plot", "-out", dir, "-compare", t.TempDir()},
	} {
		if err := run(args, new(bytes.Buffer)); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
	// Too short a timeout for a storm of 5 brokers spread over 100 ms.
	err := run([]string{"-spawn", namesrvBin, "-mode", "curves", "-quick", "-curves", "storm", "-storm-timeout", "30ms", "-out", dir}, new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), "storm curve") {
		t.Errorf("a storm past its timeout: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "route.csv"), []byte("table_topics,p99_us\n1000,x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-mode", "plot", "-out", dir}, new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "column") {
		t.Errorf("a CSV lacking columns: %v", err)
	}
	if _, err := replaceReport([]byte("no markers"), "x"); err == nil {
		t.Error("a document without markers was accepted")
	}
}

func TestTableFormats(t *testing.T) {
	tb := newTable("kinds", "kind", "topics", "cpu_ms")
	tb.add("new version, 10 topics changed", "10000", "3.125")
	tb.add("a|b", "100", "0.050")
	want := "| kind | topics | cpu ms |\n|---|---:|---:|\n| new version, 10 topics changed | 10000 | 3.125 |\n| a\\|b | 100 | 0.050 |\n"
	if got := tb.markdown(); got != want {
		t.Errorf("markdown:\n%s\nwant:\n%s", got, want)
	}
	dir := t.TempDir()
	if err := tb.write(dir); err != nil {
		t.Fatal(err)
	}
	back, err := readTable(dir, "kinds")
	if err != nil {
		t.Fatal(err)
	}
	if back.markdown() != want {
		t.Errorf("CSV round trip changed the table:\n%s", back.markdown())
	}
	if md, _ := os.ReadFile(filepath.Join(dir, "kinds.md")); string(md) != want {
		t.Errorf("kinds.md:\n%s", md)
	}
	if v, err := back.float(back.rows[0], "cpu_ms"); err != nil || v != 3.125 {
		t.Errorf("float %v %v", v, err)
	}
	if _, err := back.float(back.rows[0], "kind"); err == nil {
		t.Error("a word read as a number")
	}
	var l intList
	if err := l.Set("10, 100,1000"); err != nil || l.String() != "10,100,1000" {
		t.Errorf("intList %v %v", l, err)
	}
}

func TestRelativeArgs(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	got := relativeArgs([]string{"-spawn", filepath.Join(wd, "bin", "namesrv"), "/elsewhere/x", "rel"})
	if strings.Join(got, " ") != "-spawn bin/namesrv /elsewhere/x rel" {
		t.Errorf("relativeArgs %q", got)
	}
	for arg, want := range map[string]string{
		"-reg-topics":                "-reg-topics",
		"1000,10000":                 "1000,10000",
		"exec bin/namesrv {port}":    "'exec bin/namesrv {port}'",
		`sh -c "it's $NSBENCH_PORT"`: `'sh -c "it'\''s $NSBENCH_PORT"'`,
		"":                           "''",
	} {
		if got := shellQuote(arg); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", arg, got, want)
		}
	}
}

func TestSample(t *testing.T) {
	got := sample(5, 3, 100, 7)
	// Two names per broker (7/3), brokers interleaved, spread over the 100.
	want := "broker-005-topic-00000 broker-006-topic-00000 broker-007-topic-00000 broker-005-topic-00050 broker-006-topic-00050 broker-007-topic-00050"
	if strings.Join(got, " ") != want {
		t.Errorf("sample %v", got)
	}
	if got := sample(0, 1000, 10, 100); len(got) != 100 {
		t.Errorf("more brokers than the sample: %d topics", len(got))
	}
}
