package install

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The alert rules, their copy in the chart, and the chart's dashboard.
var (
	rulesFile      = filepath.Join(repoRoot, "config", "prometheus", "namesrv-rules.yaml")
	chartRulesFile = filepath.Join(chartDir, "files", "prometheus", "namesrv-rules.yaml")
	dashboardFile  = filepath.Join(chartDir, "files", "dashboards", "kube-namesrv.json")
)

// defaultRunbookBase is metrics.prometheusRule.runbookBaseURL's default,
// where the plain rules file's links point.
const defaultRunbookBase = "https://github.com/kube-namesrv/kube-namesrv/blob/main/docs/runbooks.md"

// trailingNumber is the threshold metrics.prometheusRule.alerts.*.threshold
// replaces: the number an expression ends with.
var trailingNumber = regexp.MustCompile(`([<>]=?|[=!]=)\s*([0-9.eE+-]+)\s*$`)

type alertRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type ruleGroup struct {
	Name  string      `json:"name"`
	Rules []alertRule `json:"rules"`
}

// readRuleGroups reads the groups of the plain rules file.
func readRuleGroups(t *testing.T) []ruleGroup {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []ruleGroup `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(b, &f); err != nil || len(f.Groups) == 0 {
		t.Fatalf("%s: %v (%d groups)", rulesFile, err, len(f.Groups))
	}
	return f.Groups
}

// ruleGroupsOf decodes a rendered PrometheusRule's groups.
func ruleGroupsOf(t *testing.T, pr *unstructured.Unstructured) []ruleGroup {
	t.Helper()
	spec, _, _ := unstructured.NestedFieldNoCopy(pr.Object, "spec")
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Groups []ruleGroup `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(b, &s); err != nil {
		t.Fatalf("%s: %v", describe(pr), err)
	}
	return s.Groups
}

// rulesByAlert indexes groups by alert name.
func rulesByAlert(groups []ruleGroup) map[string]alertRule {
	out := map[string]alertRule{}
	for _, g := range groups {
		for _, r := range g.Rules {
			out[r.Alert] = r
		}
	}
	return out
}

// withThreshold is the expression with its trailing number replaced.
func withThreshold(expr string, threshold any) string {
	return trailingNumber.ReplaceAllString(expr, fmt.Sprintf("${1} %v", threshold))
}

// thresholdOf returns an expression's trailing number, or "".
func thresholdOf(expr string) string {
	m := trailingNumber.FindStringSubmatch(expr)
	if m == nil {
		return ""
	}
	return m[2]
}

// sameExpr compares expressions up to the spaces around their threshold.
func sameExpr(a, b string) bool {
	norm := func(s string) string { return withThreshold(strings.TrimSpace(s), thresholdOf(s)) }
	return norm(a) == norm(b) && thresholdOf(a) == thresholdOf(b)
}

// checkAlertRules follows monitoring-values.yaml's metrics.prometheusRule
// into the rendered rules: every alert of the file but the disabled one,
// with the changed for, threshold and severity, the extra labels, and
// runbook links under the changed base URL; nothing else differs.
func checkAlertRules(t *testing.T, pr *unstructured.Unstructured, values map[string]any) {
	t.Helper()
	cfg := valueAs[struct {
		Enabled               bool              `json:"enabled"`
		Labels                map[string]string `json:"labels"`
		AdditionalAlertLabels map[string]string `json:"additionalAlertLabels"`
		RunbookBaseURL        string            `json:"runbookBaseURL"`
		Alerts                map[string]struct {
			Enabled   *bool    `json:"enabled"`
			For       string   `json:"for"`
			Severity  string   `json:"severity"`
			Threshold *float64 `json:"threshold"`
		} `json:"alerts"`
	}](t, values, "metrics", "prometheusRule")
	file, rendered := readRuleGroups(t), ruleGroupsOf(t, pr)
	if len(file) != len(rendered) {
		t.Fatalf("%d groups rendered, the file has %d", len(rendered), len(file))
	}
	got := rulesByAlert(rendered)
	for _, want := range rulesByAlert(file) {
		o := cfg.Alerts[want.Alert]
		r, ok := got[want.Alert]
		if o.Enabled != nil && !*o.Enabled {
			if ok {
				t.Errorf("%s is disabled but rendered", want.Alert)
			}
			continue
		}
		if !ok {
			t.Errorf("%s is not rendered", want.Alert)
			continue
		}
		delete(got, want.Alert)
		if o.For != "" {
			want.For = o.For
		}
		if o.Threshold != nil {
			want.Expr = withThreshold(want.Expr, *o.Threshold)
		}
		for k, v := range cfg.AdditionalAlertLabels {
			want.Labels[k] = v
		}
		if o.Severity != "" {
			want.Labels["severity"] = o.Severity
		}
		want.Annotations["runbook_url"] = cfg.RunbookBaseURL + "#" + strings.ToLower(want.Alert)
		if !sameExpr(r.Expr, want.Expr) {
			t.Errorf("%s: expression\n%s\nwant\n%s", want.Alert, r.Expr, want.Expr)
		}
		r.Expr, want.Expr = "", ""
		if !reflect.DeepEqual(r, want) {
			t.Errorf("%s rendered\n%+v\nwant\n%+v", want.Alert, r, want)
		}
	}
	if len(got) != 0 {
		t.Errorf("rendered alerts that the file does not have: %v", got)
	}
}

// checkDashboard follows metrics.grafanaDashboard into the ConfigMap the
// sidecar loads, and checks that it carries the chart's dashboard.
func checkDashboard(t *testing.T, cm *unstructured.Unstructured, values map[string]any) {
	t.Helper()
	cfg := valueAs[struct {
		Enabled           bool              `json:"enabled"`
		Namespace         string            `json:"namespace"`
		SidecarLabel      string            `json:"sidecarLabel"`
		SidecarLabelValue string            `json:"sidecarLabelValue"`
		Folder            string            `json:"folder"`
		FolderAnnotation  string            `json:"folderAnnotation"`
		Labels            map[string]string `json:"labels"`
		Annotations       map[string]string `json:"annotations"`
	}](t, values, "metrics", "grafanaDashboard")
	if cm.GetNamespace() != cfg.Namespace || cm.GetLabels()[cfg.SidecarLabel] != cfg.SidecarLabelValue {
		t.Errorf("%s labels %v, want %s=%s in namespace %s", describe(cm), cm.GetLabels(), cfg.SidecarLabel, cfg.SidecarLabelValue, cfg.Namespace)
	}
	for k, v := range cfg.Labels {
		if cm.GetLabels()[k] != v {
			t.Errorf("%s labels %v, want %s=%s", describe(cm), cm.GetLabels(), k, v)
		}
	}
	folderAnnotation := cmp.Or(cfg.FolderAnnotation, "grafana_folder")
	wantAnnotations := map[string]string{folderAnnotation: cfg.Folder}
	for k, v := range cfg.Annotations {
		wantAnnotations[k] = v
	}
	if !reflect.DeepEqual(cm.GetAnnotations(), wantAnnotations) {
		t.Errorf("%s annotations %v, want %v", describe(cm), cm.GetAnnotations(), wantAnnotations)
	}
	want, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	if len(data) != 1 || data["kube-namesrv.json"] != strings.TrimRight(string(want), "\n") || !json.Valid([]byte(data["kube-namesrv.json"])) {
		t.Errorf("%s does not carry %s as valid JSON (keys %v)", describe(cm), dashboardFile, slices.Sorted(maps.Keys(data)))
	}
}

// TestChartAlertRulesAreTheRulesFile: the plain rules file is the only
// source of the alert rules. The chart's copy must be the same bytes (make
// chart-rules; make verify-chart-rules catches a stale commit, this a stale
// working tree), its PrometheusRule with default values must carry exactly
// the file's groups, and the alerts values.schema.json lets a threshold be
// set for must have one to replace.
func TestChartAlertRulesAreTheRulesFile(t *testing.T) {
	want, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(chartRulesFile); err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s (%v): run make chart-rules", chartRulesFile, rulesFile, err)
	}

	ctx := testContext(t)
	file := readRuleGroups(t)
	objs := helmTemplate(ctx, t, renderArgs{namespace: "rules", apiVersions: monitoringAPI,
		set: []string{`metrics.prometheusRule={"enabled":true}`}})
	if got := ruleGroupsOf(t, only(t, objs, "PrometheusRule")); !reflect.DeepEqual(got, file) {
		t.Errorf("with default values the PrometheusRule's groups differ from %s:\n%+v", rulesFile, got)
	}
	for name, r := range rulesByAlert(file) {
		if r.Annotations["runbook_url"] != defaultRunbookBase+"#"+strings.ToLower(name) {
			t.Errorf("%s: runbook_url %s is not under the chart's default runbookBaseURL", name, r.Annotations["runbook_url"])
		}
	}

	schema := readSchema(t)
	alertsSchema, _, _ := unstructured.NestedMap(schema, "properties", "metrics", "properties", "prometheusRule", "properties", "alerts", "properties")
	inSchema, inFile := slices.Sorted(maps.Keys(alertsSchema)), slices.Sorted(maps.Keys(rulesByAlert(file)))
	if !slices.Equal(inSchema, inFile) {
		t.Errorf("values.schema.json lists alerts %v, the rules file has %v", inSchema, inFile)
	}

	// Every threshold the schema allows, set at once, lands in its alert.
	thresholds := map[string]any{}
	for name, s := range alertsSchema {
		if ref, _ := s.(map[string]any)["$ref"].(string); ref == "#/definitions/alertWithThreshold" {
			thresholds[name] = map[string]any{"threshold": 1234.5}
		}
	}
	if len(thresholds) == 0 {
		t.Fatal("no alert has a threshold to set")
	}
	set, err := json.Marshal(map[string]any{"enabled": true, "alerts": thresholds})
	if err != nil {
		t.Fatal(err)
	}
	got := rulesByAlert(ruleGroupsOf(t, only(t, helmTemplate(ctx, t, renderArgs{namespace: "rules", apiVersions: monitoringAPI,
		set: []string{"metrics.prometheusRule=" + string(set)}}), "PrometheusRule")))
	for name, r := range rulesByAlert(file) {
		_, tunable := thresholds[name]
		switch {
		case tunable && thresholdOf(r.Expr) == "":
			t.Errorf("%s accepts a threshold but its expression does not end with one", name)
		case tunable && (thresholdOf(got[name].Expr) != "1234.5" || !sameExpr(got[name].Expr, withThreshold(r.Expr, 1234.5))):
			t.Errorf("%s with threshold 1234.5:\n%s", name, got[name].Expr)
		case !tunable && got[name].Expr != r.Expr:
			t.Errorf("%s has no threshold to set, yet its expression changed:\n%s", name, got[name].Expr)
		}
	}
}

// TestChartAlertRulesFailures: a chart whose rules copy is missing, or
// whose alert has no threshold where one is set, stops helm with a message
// that says why.
func TestChartAlertRulesFailures(t *testing.T) {
	cases := []struct {
		name  string
		rules func(string) string
		set   string
		want  string
	}{
		{"no rules file", func(string) string { return "" }, `{"enabled":true}`,
			"files/prometheus/namesrv-rules.yaml is missing or has no groups: run make chart-rules"},
		{"a threshold with nothing to replace", func(s string) string {
			return strings.Replace(s, "/ 86400 < 14", "/ 86400 < bool 14 == 1 unless on () vector(0)", 1)
		}, `{"enabled":true,"alerts":{"NamesrvCertificateExpiringSoon":{"threshold":30}}}`,
			"metrics.prometheusRule.alerts.NamesrvCertificateExpiringSoon.threshold: the alert's expression does not end with a number to replace"},
	}
	rules, err := os.ReadFile(chartRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chart := copyChart(t)
			path := filepath.Join(chart, "files", "prometheus", "namesrv-rules.yaml")
			if changed := c.rules(string(rules)); changed == "" {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(path, []byte(changed), 0o644); err != nil || changed == string(rules) {
				t.Fatalf("rewriting the rules: %v (changed: %v)", err, changed != string(rules))
			}
			args := []string{"template", release, chart, "--namespace", "rules", "--kube-version", kubeVersion,
				"--set-json", "metrics.prometheusRule=" + c.set}
			for _, a := range monitoringAPI {
				args = append(args, "--api-versions", a)
			}
			_, err := run(testContext(t), helmBin, args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("helm template: %v\nwant an error saying %q", err, c.want)
			}
		})
	}
}

// copyChart copies the chart into a temporary directory.
func copyChart(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "kube-namesrv")
	if out, err := exec.Command("cp", "-R", chartDir, dst).CombinedOutput(); err != nil {
		t.Fatalf("copying the chart: %v\n%s", err, out)
	}
	return dst
}

func readSchema(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}
