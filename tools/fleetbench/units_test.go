package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

func TestParseSamples(t *testing.T) {
	const text = `# HELP rest_client_requests_total Number of HTTP requests.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:1",method="GET"} 12
rest_client_requests_total{code="409",host="127.0.0.1:1",method="PUT"} 2
rest_client_requests_total{code="200",host="a\"b,c",method="PUT"} 3.5e1
rest_client_requests_total_other{method="GET"} 100
rest_client_request_duration_seconds_bucket{le="1"} 4
`
	samples, err := parseSamples(strings.NewReader(text), "rest_client_requests_total")
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 3 {
		t.Fatalf("%d samples, want 3: %+v", len(samples), samples)
	}
	if got := samples[2].labels["host"]; got != `a"b,c` {
		t.Errorf("escaped label value %q", got)
	}
	byMethod := counts(samples, "method", nil)
	if byMethod["GET"] != 12 || byMethod["PUT"] != 37 {
		t.Errorf("by method %v", byMethod)
	}
	failed := counts(samples, "code", func(l map[string]string) bool { return !strings.HasPrefix(l["code"], "2") })
	if failed["409"] != 2 || len(failed) != 1 {
		t.Errorf("failed %v", failed)
	}
	if d := delta(map[string]float64{"GET": 10, "PUT": 37}, byMethod); d["GET"] != 2 || len(d) != 1 {
		t.Errorf("delta %v", d)
	}
}

func TestParseSamplesRefusesMalformedLines(t *testing.T) {
	for _, line := range []string{
		`m{method="GET" 1`,
		`m{method=GET} 1`,
		`m{method="GET} 1`,
		`m{method="GET"}`,
		`m{method="GET"} x`,
	} {
		if _, err := parseSamples(strings.NewReader(line+"\n"), "m"); err == nil {
			t.Errorf("%q parsed", line)
		}
	}
}

func TestParseHelp(t *testing.T) {
	const help = `Usage of bin/manager:
  -cluster-domain string
    	DNS suffix of Services in the published addresses. (default "cluster.local")
  -kube-api-qps float
    	Queries per second
    	to the API server. (default 50)
  -leader-elect
    	Elect a leader, so that only one of several managers reconciles.
  -max-concurrent-reconciles int
    	Clusters reconciled at once. (default 4)
`
	got := parseHelp([]byte(help))
	want := map[string]string{"cluster-domain": "cluster.local", "kube-api-qps": "50", "leader-elect": "", "max-concurrent-reconciles": "4"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("flags %v, want %v", got, want)
	}
}

func TestTuningArgs(t *testing.T) {
	withFlags := map[string]string{"max-concurrent-reconciles": "4", "kube-api-qps": "50", "kube-api-burst": "", "leader-elect": ""}
	cases := []struct {
		name      string
		set       map[string]string
		flags     map[string]string
		args      string
		effective string
		err       bool
	}{
		{name: "an older manager", set: map[string]string{}, flags: map[string]string{"leader-elect": ""},
			args: "[]", effective: "map[kube-api-burst:- kube-api-qps:- max-concurrent-reconciles:-]"},
		{name: "defaults", set: map[string]string{}, flags: withFlags,
			args: "[]", effective: "map[kube-api-burst:0 kube-api-qps:50 max-concurrent-reconciles:4]"},
		{name: "set", set: map[string]string{"kube-api-qps": "100"}, flags: withFlags,
			args: "[--kube-api-qps=100]", effective: "map[kube-api-burst:0 kube-api-qps:100 max-concurrent-reconciles:4]"},
		{name: "set on a manager without the flag", set: map[string]string{"kube-api-qps": "100"}, flags: map[string]string{"leader-elect": ""}, err: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args, effective, err := tuningArgs(c.set, c.flags)
			if c.err {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(args) != c.args || fmt.Sprint(effective) != c.effective {
				t.Errorf("args %v, effective %v; want %s, %s", args, effective, c.args, c.effective)
			}
		})
	}
}

func TestParseFlagsRefuses(t *testing.T) {
	manager := filepath.Join(t.TempDir(), "manager")
	if err := os.WriteFile(manager, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-clusters", "10,x"},
		{"-clusters", "0"},
		{"-round", "1500ms"},
		{"-round", "0s"},
		{"-round", "10s", "-window", "15s"},
		{"-replicas", "0"},
		{"-workers", "0"},
		{"-kube-api-qps", "many"},
		{"extra"},
	} {
		if _, err := parseFlags(append([]string{"-manager", manager}, args...), io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	if _, err := parseFlags([]string{"-manager", t.TempDir()}, io.Discard); err == nil {
		t.Error("a directory accepted as the manager")
	}
	o, err := parseFlags([]string{"-manager", manager, "-clusters", "3, 5", "-round", "2s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(o.clusters) != "[3 5]" || o.window != 6*time.Second || o.warmup != 4*time.Second {
		t.Errorf("clusters %v, window %v, warmup %v", o.clusters, o.window, o.warmup)
	}
}

func TestSummarize(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	s := summarize(d)
	if s.n != 100 || s.p50 != 50*time.Millisecond || s.p99 != 99*time.Millisecond || s.worst != 100*time.Millisecond {
		t.Errorf("%+v", s)
	}
	if one := summarize([]time.Duration{time.Second}); one.p50 != time.Second || one.p99 != time.Second {
		t.Errorf("%+v", one)
	}
	if none := summarize(nil); none.n != 0 {
		t.Errorf("%+v", none)
	}
}

func TestRewriteDoc(t *testing.T) {
	path := filepath.Join(t.TempDir(), "doc.md")
	doc := "# Title\n\n" + docBegin + "\nold\n" + docEnd + "\n\nafter\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rewriteDoc(path, "new table\n"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if want := "# Title\n\n" + docBegin + "\nnew table\n\n" + docEnd + "\n\nafter\n"; string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if err := os.WriteFile(path, []byte("# no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rewriteDoc(path, "x"); err == nil {
		t.Error("a file without the markers rewritten")
	}
}

func TestPodIPsAreDistinctLoopbackAddresses(t *testing.T) {
	seen := map[string]bool{}
	for c := range 1000 {
		for o := range 3 {
			ip := podIP(c, o, 3)
			if seen[ip] || !strings.HasPrefix(ip, "127.") || ip == "127.0.0.1" {
				t.Fatalf("cluster %d ordinal %d: %s", c, o, ip)
			}
			seen[ip] = true
		}
	}
}

// TestPeersAnswerByLocalAddress: one server, each loopback address its own
// peer; an address without a pod is answered as a peer that is not there.
func TestPeersAnswerByLocalAddress(t *testing.T) {
	p, err := startPeers()
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop()
	for i, cluster := range []string{"a", "b"} {
		if err := p.add(podIP(i, 0, 1), cluster, 2); err != nil {
			t.Fatal(err)
		}
	}
	get := func(ip, path string) (int, []byte) {
		t.Helper()
		resp, err := http.Get(fmt.Sprintf("http://%s:%d%s", ip, p.port, path))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	for i, cluster := range []string{"a", "b"} {
		code, body := get(podIP(i, 0, 1), peerstatus.SummaryPath)
		s := peerstatus.Summary{}
		if err := json.Unmarshal(body, &s); code != http.StatusOK || err != nil {
			t.Fatalf("%d %v: %s", code, err, body)
		}
		if s.BootID != "boot-"+podIP(i, 0, 1) || len(s.Brokers) != 2 || !strings.HasPrefix(s.Brokers[0].Addr, cluster+"-") ||
			s.Digest != peerstatus.BrokersDigest(s.Brokers) || !s.Gate.Open {
			t.Errorf("peer %s answered %+v", cluster, s)
		}
	}
	if code, _ := get(podIP(7, 0, 1), peerstatus.SummaryPath); code != http.StatusServiceUnavailable {
		t.Errorf("an address without a pod answered %d", code)
	}
	if code, _ := get(podIP(0, 0, 1), peerstatus.KVApplyPath); code != http.StatusNotFound {
		t.Errorf("the KV apply answered %d, want 404 (no declared KV)", code)
	}
	if p.summaries.Load() != 2 || p.unknown.Load() != 1 || p.others.Load() != 1 {
		t.Errorf("counted %d summaries, %d unknown, %d others", p.summaries.Load(), p.unknown.Load(), p.others.Load())
	}
}
