package monitoring

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// unitTestFile is a `promtool test rules` file.
type unitTestFile struct {
	RuleFiles          []string `json:"rule_files"`
	EvaluationInterval string   `json:"evaluation_interval"`
	Tests              []struct {
		Name        string `json:"name"`
		Interval    string `json:"interval"`
		InputSeries []struct {
			Series string `json:"series"`
			Values string `json:"values"`
		} `json:"input_series"`
		AlertRuleTest []struct {
			EvalTime  string `json:"eval_time"`
			Alertname string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// TestEveryAlertIsTestedAndDocumented: promtool runs the unit tests (make
// test-rules), but only those that exist. Every alert must have a case
// where it fires and one where it stays silent, a severity, a summary and a
// description, and a runbook_url that leads to its own section of
// docs/runbooks.md.
func TestEveryAlertIsTestedAndDocumented(t *testing.T) {
	rules := readRules(t)
	files, err := filepath.Glob(ruleTestsGlob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no promtool unit tests match %s (%v)", ruleTestsGlob, err)
	}
	exprOf := map[string]string{}
	for _, r := range rules {
		exprOf[r.Alert] = r.Expr
	}
	fires, silent := map[string]int{}, map[string]int{}
	for _, f := range files {
		var u unitTestFile
		readYAML(t, f, &u)
		wantRules := filepath.Join("..", filepath.Base(rulesPath))
		if !slices.Contains(u.RuleFiles, wantRules) {
			t.Errorf("%s tests %v, not %s", f, u.RuleFiles, wantRules)
		}
		for _, tc := range u.Tests {
			// A series no rule reads would make a silent case pass for
			// nothing.
			var series []string
			for _, in := range tc.InputSeries {
				name, _, _ := strings.Cut(in.Series, "{")
				series = append(series, name)
				if !slices.ContainsFunc(rules, func(r rule) bool { return strings.Contains(r.Expr, name) }) {
					t.Errorf("%s: case %q feeds %s, which no rule reads", f, tc.Name, name)
				}
			}
			for _, a := range tc.AlertRuleTest {
				if !slices.ContainsFunc(series, func(s string) bool { return strings.Contains(exprOf[a.Alertname], s) }) {
					t.Errorf("%s: case %q tests %s with none of the series it reads", f, tc.Name, a.Alertname)
				}
				if len(a.ExpAlerts) > 0 {
					fires[a.Alertname]++
				} else {
					silent[a.Alertname]++
				}
			}
		}
	}

	runbooks, err := os.ReadFile(runbooksPath)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^## (.+)$`).FindAllStringSubmatch(string(runbooks), -1) {
		sections[githubAnchor(m[1])] = m[1]
	}

	alerts := map[string]bool{}
	for _, r := range rules {
		if r.Record != "" {
			t.Errorf("recording rule %s: the checks of this package know alerts only", r.Record)
			continue
		}
		name := r.Alert
		alerts[name] = true
		if fires[name] == 0 {
			t.Errorf("%s has no unit test case where it fires", name)
		}
		if silent[name] == 0 {
			t.Errorf("%s has no unit test case where it stays silent", name)
		}
		if !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]) {
			t.Errorf("%s: severity %q", name, r.Labels["severity"])
		}
		for _, a := range []string{"summary", "description"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("%s has no %s", name, a)
			}
		}
		anchor := strings.ToLower(name)
		if want := runbookBase + "#" + anchor; r.Annotations["runbook_url"] != want {
			t.Errorf("%s: runbook_url %q, want %q", name, r.Annotations["runbook_url"], want)
		}
		if sections[anchor] != name {
			t.Errorf("%s: docs/runbooks.md has no section \"## %s\"", name, name)
		}
	}
	for _, tested := range slices.Concat(keys(fires), keys(silent)) {
		if !alerts[tested] {
			t.Errorf("the unit tests test %s, which is no alert", tested)
		}
	}
	for _, heading := range sections {
		if strings.HasPrefix(heading, "Namesrv") && !alerts[heading] {
			t.Errorf("docs/runbooks.md has a section for %s, which is no alert", heading)
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestSpecRefusedListsEveryRefusalReason: the alert on standing refusals
// matches the Degraded condition by the refusal reasons, listed in its
// expression. A refusal reason added to the API, and left out of the
// expression or of v1alpha1.RefusalReasons, would never fire after a
// manager restart.
func TestSpecRefusedListsEveryRefusalReason(t *testing.T) {
	declared := refusalConstants(t)
	listed := make([]string, 0, len(v1alpha1.RefusalReasons))
	for _, r := range v1alpha1.RefusalReasons {
		listed = append(listed, string(r))
	}
	slices.Sort(listed)
	if !slices.Equal(declared, listed) {
		t.Errorf("v1alpha1.RefusalReasons is %v, the Refusal* constants are %v", listed, declared)
	}
	for _, r := range readRules(t) {
		if r.Alert != "NamesrvSpecRefused" {
			continue
		}
		m := regexp.MustCompile(`kube_namesrv_cluster_condition\{[^}]*reason=~"\(([^"()]*)\)"`).FindStringSubmatch(r.Expr)
		if m == nil {
			// In parentheses, so that the names check of
			// TestExpressionsNameOnlyWhatIsExposed takes it for a pattern
			// that one scraped refusal must match, not for values that must
			// all be scraped.
			t.Fatalf("NamesrvSpecRefused does not match the condition's reason by reason=~\"(A|B|...)\":\n%s", r.Expr)
		}
		inRule := strings.Split(m[1], "|")
		slices.Sort(inRule)
		if !slices.Equal(inRule, declared) {
			t.Errorf("NamesrvSpecRefused matches the reasons %v, the API's refusal reasons are %v", inRule, declared)
		}
		return
	}
	t.Fatal("no rule NamesrvSpecRefused")
}

// refusalConstants are the values of the Refusal* constants of the API
// package, read from its source, sorted.
func refusalConstants(t *testing.T) []string {
	t.Helper()
	path := filepath.Join(repoRoot, "api", "v1alpha1", "conditions.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			for i, n := range v.Names {
				if !strings.HasPrefix(n.Name, "Refusal") || i >= len(v.Values) {
					continue
				}
				if lit, ok := v.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, s)
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no Refusal* string constant in %s", path)
	}
	slices.Sort(out)
	return out
}
