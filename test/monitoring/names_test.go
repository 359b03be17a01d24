package monitoring

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

// expression is one PromQL expression of the rules or the dashboard.
type expression struct {
	ID   string `json:"id"`
	Expr string `json:"expr"`
	// labels are label names the expression's context uses besides the
	// expression itself: the label of a label_values() variable query.
	labels []string
}

// reference is what bin/promql reports of one expression.
type reference struct {
	ID        string `json:"id"`
	Error     string `json:"error"`
	Selectors []struct {
		Metric   string `json:"metric"`
		Matchers []struct {
			Label string `json:"label"`
			Type  string `json:"type"`
			Value string `json:"value"`
		} `json:"matchers"`
	} `json:"selectors"`
	Labels  []string `json:"labels"`
	Created []string `json:"created"`
}

// grafanaDurations stand in for Grafana's interval variables, which are not
// PromQL; any other $variable may appear only inside a label value.
var grafanaDurations = strings.NewReplacer(
	"${__rate_interval}", "5m", "$__rate_interval", "5m",
	"${__interval}", "1m", "$__interval", "1m",
	"${__range}", "1h", "$__range", "1h",
)

var labelValuesRE = regexp.MustCompile(`^\s*label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$`)

// collectExpressions returns every expression of the rules and the
// dashboard, queries of template variables included.
func collectExpressions(t *testing.T) []expression {
	t.Helper()
	var out []expression
	for _, r := range readRules(t) {
		out = append(out, expression{ID: "rule " + r.Alert, Expr: r.Expr})
	}
	d := readDashboard(t)
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			out = append(out, expression{ID: fmt.Sprintf("panel %q query %s", p.Title, tg.RefID), Expr: grafanaDurations.Replace(tg.Expr)})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q := v.variableQuery()
		m := labelValuesRE.FindStringSubmatch(q)
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(<selector>, <label>), the only variable query this check reads", v.Name, q)
			continue
		}
		out = append(out, expression{ID: "variable " + v.Name, Expr: m[1], labels: []string{m[2]}})
	}
	return out
}

// references runs bin/promql over the expressions. An expression the
// Prometheus parser refuses is a test failure.
func references(t *testing.T, promql string, exprs []expression) []reference {
	t.Helper()
	in, err := json.Marshal(exprs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, promql)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		t.Fatalf("%s: %v\n%s", promql, err, stderr.String())
	}
	var refs []reference
	if err := json.Unmarshal(stdout.Bytes(), &refs); err != nil || len(refs) != len(exprs) {
		t.Fatalf("%s printed %d results for %d expressions (%v):\n%s", promql, len(refs), len(exprs), err, stdout.String())
	}
	for i, r := range refs {
		if r.Error != "" {
			t.Errorf("%s does not parse: %s\n%s", exprs[i].ID, r.Error, exprs[i].Expr)
		}
	}
	return refs
}

// exposedMetric is one metric name as the scrapes show it.
type exposedMetric struct {
	// values are the label values seen, by label name.
	values map[string]map[string]bool
	// target are the labels Prometheus adds to the series at scrape time,
	// with the kinds of scrape configuration (PodMonitor, ServiceMonitor)
	// that add each.
	target map[string]map[string]bool
}

func (m *exposedMetric) has(label string) bool {
	_, scraped := m.values[label]
	return scraped || len(m.target[label]) > 0
}

func (m *exposedMetric) labelNames() []string {
	var out []string
	for l := range m.values {
		out = append(out, l)
	}
	for l := range m.target {
		out = append(out, l)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// problems lists what an expression names that nothing exposes: a metric no
// scrape has; a label its metric has neither in the scrape nor from the
// target; a value a matcher names that no scraped series has (values of
// target labels and Grafana variables are not checked); a label used by
// grouping or matching that none of the expression's metrics has and that
// it does not make itself.
func problems(e expression, r reference, exposed map[string]*exposedMetric) []string {
	var out []string
	usable := map[string]bool{}
	for _, c := range r.Created {
		usable[c] = true
	}
	for _, s := range r.Selectors {
		if s.Metric == "" {
			out = append(out, fmt.Sprintf("a selector names no metric (%+v)", s.Matchers))
			continue
		}
		m := exposed[s.Metric]
		if m == nil {
			out = append(out, fmt.Sprintf("metric %s is not exposed", s.Metric))
			continue
		}
		for _, l := range m.labelNames() {
			usable[l] = true
		}
		for _, mt := range s.Matchers {
			if !m.has(mt.Label) {
				out = append(out, fmt.Sprintf("%s has no label %s (it has %v)", s.Metric, mt.Label, m.labelNames()))
				continue
			}
			values, scraped := m.values[mt.Label]
			if !scraped || strings.Contains(mt.Value, "$") {
				continue
			}
			// Negative matchers name values too: a renamed value would
			// silently turn them into matching everything.
			switch mt.Type {
			case "=", "!=":
				if !values[mt.Value] {
					out = append(out, fmt.Sprintf("no series of %s has %s=%q (values: %v)", s.Metric, mt.Label, mt.Value, keys(values)))
				}
			case "=~", "!~":
				// A plain alternation names values: each must exist. Any
				// other regex must match at least one.
				if alts := strings.Split(mt.Value, "|"); !slices.ContainsFunc(alts, isRegex) {
					for _, v := range alts {
						if !values[v] {
							out = append(out, fmt.Sprintf("no series of %s has %s=%q (values: %v)", s.Metric, mt.Label, v, keys(values)))
						}
					}
					continue
				}
				re, err := regexp.Compile("^(?:" + mt.Value + ")$")
				if err != nil || !slices.ContainsFunc(keys(values), re.MatchString) {
					out = append(out, fmt.Sprintf("no series of %s has %s matching %q (values: %v, %v)", s.Metric, mt.Label, mt.Value, keys(values), err))
				}
			}
		}
	}
	for _, l := range slices.Concat(r.Labels, e.labels) {
		if !usable[l] {
			out = append(out, fmt.Sprintf("label %s is on none of the expression's metrics", l))
		}
	}
	return out
}

// isRegex tells a regex alternative that is more than a plain value.
func isRegex(s string) bool { return regexp.QuoteMeta(s) != s }

// TestExpressionsNameOnlyWhatIsExposed parses every expression of the alert
// rules and the dashboard and checks each name in it against real scrapes
// of a NameServer and of the operator's manager, so that a renamed metric,
// label or label value fails here rather than leaving an alert that never
// fires or a panel that shows nothing.
func TestExpressionsNameOnlyWhatIsExposed(t *testing.T) {
	promql := tool(t, "PROMQL", "bin/promql (make promql)")
	exprs := collectExpressions(t)
	refs := references(t, promql, exprs)

	targets := chartTargetLabels(t)
	exposed := map[string]*exposedMetric{}
	// One NameServer, run as the operator runs its peers, is both the
	// NameServer scraped and the one peer of the cluster the manager
	// reconciles: the manager opens its route gate, and only then do
	// clients get routes from it.
	declaredKV, err := render.KVFile(monitoredCluster())
	if err != nil {
		t.Fatal(err)
	}
	ns := startNameServer(t, declaredKV)
	brokers := registerBrokers(t, ns)
	scrapeManager(t, ns).addTo(exposed, "ServiceMonitor", targets["ServiceMonitor"])
	scrapeNameServer(t, ns, brokers).addTo(exposed, "PodMonitor", targets["PodMonitor"])

	used := map[string]bool{}
	for i, e := range exprs {
		for _, p := range problems(e, refs[i], exposed) {
			t.Errorf("%s: %s\n%s", e.ID, p, e.Expr)
		}
		for _, s := range refs[i].Selectors {
			used[s.Metric] = true
		}
	}
	t.Logf("%d expressions name %d metrics; the scrapes expose %d", len(exprs), len(used), len(exposed))

	t.Run("the example Prometheus configuration gives the target labels used", func(t *testing.T) {
		checkExampleConfig(t, targetLabelsUsed(exprs, refs, exposed))
	})

	// The same check on names nothing exposes must fail, so that it cannot
	// pass by accepting everything.
	t.Run("unexposed names are caught", func(t *testing.T) {
		bad := []struct{ expr, want string }{
			{`rocketmq_namesrv_route_queries_total`, "metric rocketmq_namesrv_route_queries_total is not exposed"},
			{`rocketmq_namesrv_requests_total{request="GET_ROUTE"}`, `has request="GET_ROUTE"`},
			{`rocketmq_namesrv_requests_total{result!~"SUCCESS|NOT_FOUND"}`, `has result="NOT_FOUND"`},
			{`rocketmq_namesrv_brokers_live{broker="b"}`, "rocketmq_namesrv_brokers_live has no label broker"},
			{`sum by (peer) (rocketmq_namesrv_brokers_live)`, "label peer is on none"},
			{`kube_namesrv_cluster_serving_peers{nameservercluster="x"}`, "has no label nameservercluster"},
			{`rocketmq_namesrv_request_duration_seconds{le="0.1"}`, "not exposed"},
			{`rocketmq_namesrv_requests_total{service="x"}`, "has no label service"},
			{`{__name__=~"rocketmq_namesrv_.*"}`, "names no metric"},
		}
		var exprs []expression
		for i, b := range bad {
			exprs = append(exprs, expression{ID: fmt.Sprint("bad ", i), Expr: b.expr})
		}
		refs := references(t, promql, exprs)
		for i, b := range bad {
			got := problems(exprs[i], refs[i], exposed)
			if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, b.want) }) {
				t.Errorf("%s: problems %q, want one saying %q", b.expr, got, b.want)
			}
		}
	})
}

// targetLabelsUsed returns, by monitor kind, the target labels (labels no
// scraped series has) that the expressions select or group by.
func targetLabelsUsed(exprs []expression, refs []reference, exposed map[string]*exposedMetric) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	note := func(m *exposedMetric, label string) {
		if _, scraped := m.values[label]; scraped {
			return
		}
		for kind := range m.target[label] {
			if out[kind] == nil {
				out[kind] = map[string]bool{}
			}
			out[kind][label] = true
		}
	}
	for i, r := range refs {
		for _, s := range r.Selectors {
			m := exposed[s.Metric]
			if m == nil {
				continue
			}
			for _, mt := range s.Matchers {
				note(m, mt.Label)
			}
			for _, l := range slices.Concat(r.Labels, exprs[i].labels) {
				note(m, l)
			}
		}
	}
	return out
}

// exampleJobs are the jobs of config/prometheus/prometheus.yaml that stand
// for the chart's monitors.
var exampleJobs = map[string]string{"PodMonitor": "kube-namesrv-nameservers", "ServiceMonitor": "kube-namesrv-operator"}

type scrapeConfig struct {
	JobName        string `json:"job_name"`
	HonorLabels    bool   `json:"honor_labels"`
	RelabelConfigs []struct {
		TargetLabel string `json:"target_label"`
	} `json:"relabel_configs"`
}

// checkExampleConfig: for Prometheus without the operator, the example
// configuration must give each job the target labels the expressions use
// (Prometheus adds job and instance itself), load the rules, and keep the
// operator's own namespace and name labels.
func checkExampleConfig(t *testing.T, used map[string]map[string]bool) {
	var cfg struct {
		RuleFiles     []string       `json:"rule_files"`
		ScrapeConfigs []scrapeConfig `json:"scrape_configs"`
	}
	b, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("%s: %v", examplePath, err)
	}
	if !slices.Contains(cfg.RuleFiles, filepath.Base(rulesPath)) {
		t.Errorf("%s loads %v, not the rules", examplePath, cfg.RuleFiles)
	}
	if len(used["PodMonitor"]) == 0 || len(used["ServiceMonitor"]) == 0 {
		t.Errorf("target labels used %v: the rules and dashboard select NameServer and operator series by namespace at least", used)
	}
	for kind, job := range exampleJobs {
		i := slices.IndexFunc(cfg.ScrapeConfigs, func(c scrapeConfig) bool { return c.JobName == job })
		if i < 0 {
			t.Errorf("%s has no job %s", examplePath, job)
			continue
		}
		job := cfg.ScrapeConfigs[i]
		set := map[string]bool{"job": true, "instance": true}
		for _, r := range job.RelabelConfigs {
			set[r.TargetLabel] = true
		}
		for l := range used[kind] {
			if !set[l] {
				t.Errorf("job %s does not set label %s, which the rules or the dashboard use", job.JobName, l)
			}
		}
		if kind == "ServiceMonitor" && !job.HonorLabels {
			t.Errorf("job %s must keep the kube_namesrv_* series' namespace label (honor_labels: true)", job.JobName)
		}
	}
}
