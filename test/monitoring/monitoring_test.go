// Package monitoring checks the operations kit as code: the alert rules
// (config/prometheus), their promtool unit tests, the runbooks they link to
// (docs/runbooks.md) and the Grafana dashboard of the Helm chart. The main
// check parses every PromQL expression of the rules and the dashboard with
// the Prometheus parser (bin/promql, built from hack/promql) and compares
// each metric and label name with what a real NameServer and a real
// operator manager expose on /metrics, plus the target labels the chart's
// PodMonitor and ServiceMonitor add. `make test` builds bin/promql and helm
// and points this package at them; without them it fails.
package monitoring

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// Paths relative to this package's directory, where `go test` runs it.
var (
	repoRoot      = filepath.Join("..", "..")
	rulesPath     = filepath.Join(repoRoot, "config", "prometheus", "namesrv-rules.yaml")
	ruleTestsGlob = filepath.Join(repoRoot, "config", "prometheus", "tests", "*.yaml")
	examplePath   = filepath.Join(repoRoot, "config", "prometheus", "prometheus.yaml")
	runbooksPath  = filepath.Join(repoRoot, "docs", "runbooks.md")
	chartDir      = filepath.Join(repoRoot, "charts", "kube-namesrv")
	dashboardPath = filepath.Join(chartDir, "files", "dashboards", "kube-namesrv.json")
)

// runbookBase is where the plain rules file's runbook links point; the
// chart's metrics.prometheusRule.runbookBaseURL defaults to it.
const runbookBase = "https://github.com/kube-namesrv/kube-namesrv/blob/main/docs/runbooks.md"

// ruleFile is a Prometheus rule_files document.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

type rule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func readRules(t *testing.T) []rule {
	t.Helper()
	var f ruleFile
	readYAML(t, rulesPath, &f)
	var out []rule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) == 0 {
		t.Fatalf("%s has no rules", rulesPath)
	}
	return out
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// tool returns the path of a binary `make test` provides through an
// environment variable, failing the test when it is missing.
func tool(t *testing.T, env, what string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		t.Fatalf("%s is not set: it names %s; run `make test`, which builds and sets it", env, what)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(abs); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s=%s is not an executable file (%v)", env, p, err)
	}
	return abs
}

// githubAnchor is the anchor GitHub gives a Markdown heading.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}
