package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// result is one fleet size's figures.
type result struct {
	clusters, replicas    int
	round, window, spread time.Duration
	tuning                map[string]string // the manager's tuning flags in effect

	setup time.Duration // creating the clusters to every client list published

	elapsed    time.Duration      // the steady window as measured
	requests   map[string]float64 // the manager's API requests per minute by method
	failed     float64            // of them answered other than 2xx
	serverGets map[string]float64 // single-object GETs per minute the API server served, by resource
	summaries  float64            // peer summaries read per minute
	cpu        float64            // the manager's CPU over the window, in cores
	rss, hwm   int64              // at the window's end
	hwmEnd     int64              // the peak at the end of the run

	removal      summary
	removalCount int
	roll         summary
	rollSpan     time.Duration
}

func (r result) total() float64 {
	t := 0.0
	for _, v := range r.requests {
		t += v
	}
	return t
}

// report is every fleet size of one run.
type report struct {
	command string
	machine machine
	started time.Time
	results []result
}

// machine describes where the figures were measured.
type machine struct {
	cores   int
	model   string
	memory  string
	loadavg string
}

func readMachine() machine {
	m := machine{cores: runtime.NumCPU(), model: "unknown CPU", memory: "?", loadavg: "?"}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.model = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if kb, err := statusKB(b, "MemTotal:"); err == nil {
			m.memory = fmt.Sprintf("%.0f GiB", float64(kb)/(1<<30))
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.loadavg = strings.Join(f[:3], " ")
		}
	}
	return m
}

// methods are the HTTP methods in the order the table gives them.
var methods = []string{"GET", "PUT", "PATCH", "POST", "DELETE"}

func (rep report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %d cores (%s, %s), load average %s at the start:\n\n",
		rep.started.Format("2006-01-02 15:04 MST"), rep.machine.cores, rep.machine.model, rep.machine.memory, rep.machine.loadavg)
	fmt.Fprintf(&b, "```\n%s\n```\n\n", rep.command)
	b.WriteString("| |")
	for _, r := range rep.results {
		fmt.Fprintf(&b, " N=%d |", r.clusters)
	}
	b.WriteString("\n|---|")
	for range rep.results {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	row := func(name string, cell func(r result) string) {
		b.WriteString("| " + name + " |")
		for _, r := range rep.results {
			b.WriteString(" " + cell(r) + " |")
		}
		b.WriteString("\n")
	}
	row("clusters x peers", func(r result) string { return fmt.Sprintf("%d x %d", r.clusters, r.replicas) })
	row("broker round; steady window", func(r result) string { return fmt.Sprintf("%v; %v", r.round, r.elapsed.Round(100*time.Millisecond)) })
	row("manager: max concurrent reconciles, API QPS, burst", func(r result) string {
		return strings.Join([]string{r.tuning["max-concurrent-reconciles"], r.tuning["kube-api-qps"], r.tuning["kube-api-burst"]}, ", ")
	})
	row("create to every client list published", func(r result) string { return seconds(r.setup) })
	row("API requests/min, steady", func(r result) string { return rate(r.total()) })
	row("by method", func(r result) string {
		var parts []string
		for _, m := range methods {
			parts = append(parts, m+" "+rate(r.requests[m]))
		}
		for _, m := range slices.Sorted(maps.Keys(r.requests)) {
			if !slices.Contains(methods, m) {
				parts = append(parts, m+" "+rate(r.requests[m]))
			}
		}
		return strings.Join(parts, ", ")
	})
	row("of them failed (not 2xx)", func(r result) string { return rate(r.failed) })
	row("GETs/min around the cache (API server, by resource)", func(r result) string { return byKey(r.serverGets) })
	row("peer summaries read/min (one per peer per round)", func(r result) string {
		return fmt.Sprintf("%s (%s)", rate(r.summaries), rate(float64(r.clusters*r.replicas)*float64(time.Minute)/float64(r.round)))
	})
	row("manager CPU, steady", func(r result) string { return fmt.Sprintf("%.1f%% of a core", 100*r.cpu) })
	row("manager RSS at the window's end; peak", func(r result) string {
		return fmt.Sprintf("%.1f MiB; %.1f MiB", mib(r.rss), mib(max(r.hwm, r.hwmEnd)))
	})
	row("pod unready to out of the client list by IP: p50, p99, max", func(r result) string {
		return fmt.Sprintf("%s, %s, %s (%d pods over %v)", seconds(r.removal.p50), seconds(r.removal.p99), seconds(r.removal.worst), r.removal.n, r.spread)
	})
	row("spec change to new pod template: p50, p99, max", func(r result) string {
		return fmt.Sprintf("%s, %s, %s (%d clusters)", seconds(r.roll.p50), seconds(r.roll.p99), seconds(r.roll.worst), r.roll.n)
	})
	row("spec change of every cluster to the last new template", func(r result) string { return seconds(r.rollSpan) })
	return b.String()
}

// csvColumns are the CSV's header, one row per fleet size.
var csvColumns = []string{
	"clusters", "replicas", "round_s", "window_s", "max_concurrent_reconciles", "kube_api_qps", "kube_api_burst",
	"setup_s", "requests_per_min", "get_per_min", "put_per_min", "patch_per_min", "post_per_min", "delete_per_min",
	"failed_per_min", "around_cache_gets_per_min", "summaries_per_min", "cpu_cores", "rss_mib", "peak_rss_mib",
	"unready_n", "unready_spread_s", "unready_p50_s", "unready_p99_s", "unready_max_s",
	"roll_n", "roll_p50_s", "roll_p99_s", "roll_max_s", "roll_span_s",
}

func (rep report) csv() string {
	var b strings.Builder
	b.WriteString(strings.Join(csvColumns, ",") + "\n")
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	s := func(d time.Duration) string { return f(d.Seconds()) }
	for _, r := range rep.results {
		gets := 0.0
		for _, v := range r.serverGets {
			gets += v
		}
		row := []string{
			strconv.Itoa(r.clusters), strconv.Itoa(r.replicas), s(r.round), s(r.elapsed),
			r.tuning["max-concurrent-reconciles"], r.tuning["kube-api-qps"], r.tuning["kube-api-burst"],
			s(r.setup), f(r.total()),
		}
		for _, m := range methods {
			row = append(row, f(r.requests[m]))
		}
		row = append(row, f(r.failed), f(gets), f(r.summaries), f(r.cpu), f(mib(r.rss)), f(mib(max(r.hwm, r.hwmEnd))),
			strconv.Itoa(r.removal.n), s(r.spread), s(r.removal.p50), s(r.removal.p99), s(r.removal.worst),
			strconv.Itoa(r.roll.n), s(r.roll.p50), s(r.roll.p99), s(r.roll.worst), s(r.rollSpan))
		b.WriteString(strings.Join(row, ",") + "\n")
	}
	return b.String()
}

func rate(v float64) string {
	if v >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func seconds(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// byKey lists a map's keys with their rates, "none" when empty.
func byKey(m map[string]float64) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+" "+rate(m[k]))
	}
	return strings.Join(parts, ", ")
}

// The lines of docs/benchmarks.md between which the report goes.
const (
	docBegin = "<!-- fleet:begin (generated by fleetbench -doc; edits here are overwritten) -->"
	docEnd   = "<!-- fleet:end -->"
)

// rewriteDoc replaces what lies between the report's lines of a Markdown
// file.
func rewriteDoc(path, report string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	begin := bytes.Index(doc, []byte(docBegin))
	end := bytes.Index(doc, []byte(docEnd))
	if begin < 0 || end < begin {
		return fmt.Errorf("%s has no %q line followed by a %q line", path, docBegin, docEnd)
	}
	var out bytes.Buffer
	out.Write(doc[:begin+len(docBegin)])
	out.WriteString("\n" + report + "\n")
	out.Write(doc[end:])
	return os.WriteFile(path, out.Bytes(), 0o644)
}
