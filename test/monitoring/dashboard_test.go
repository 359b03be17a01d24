package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dashboard is the part of Grafana's dashboard model the checks read.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Datasource *datasourceRef  `json:"datasource"`
	GridPos    *map[string]int `json:"gridPos"`
	Targets    []struct {
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
		Datasource *datasourceRef `json:"datasource"`
	} `json:"targets"`
	// Panels are those of a collapsed row.
	Panels []panel `json:"panels"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type variable struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Query      any            `json:"query"`
	Definition string         `json:"definition"`
	Datasource *datasourceRef `json:"datasource"`
}

// promDatasource is how every panel and query names its data source: the
// dashboard's datasource variable, so it works with any Prometheus.
var promDatasource = datasourceRef{Type: "prometheus", UID: "${datasource}"}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s is not a JSON dashboard: %v", dashboardPath, err)
	}
	return d
}

// allPanels flattens rows.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// variableQuery is the PromQL-ish query of a query variable.
func (v variable) variableQuery() string {
	if q, ok := v.Query.(map[string]any); ok {
		if s, ok := q["query"].(string); ok {
			return s
		}
	}
	if s, ok := v.Query.(string); ok {
		return s
	}
	return ""
}

// TestDashboardIsWellFormed checks what Grafana and its sidecar need, and
// that every panel follows the dashboard's data source and its namespace
// and cluster variables.
func TestDashboardIsWellFormed(t *testing.T) {
	d := readDashboard(t)
	if d.UID == "" || len(d.UID) > 40 || d.Title == "" || d.SchemaVersion == 0 {
		t.Errorf("uid %q, title %q, schemaVersion %d", d.UID, d.Title, d.SchemaVersion)
	}
	vars := map[string]variable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if v := vars["datasource"]; v.Type != "datasource" || v.Query != "prometheus" {
		t.Errorf("no Prometheus datasource variable: %+v", v)
	}
	for _, name := range []string{"namespace", "cluster"} {
		v := vars[name]
		if v.Type != "query" || v.Datasource == nil || *v.Datasource != promDatasource || v.variableQuery() == "" || v.variableQuery() != v.Definition {
			t.Errorf("variable %s: %+v", name, v)
		}
	}

	ids := map[int]bool{}
	var queries int
	for _, p := range allPanels(d.Panels) {
		what := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if p.ID == 0 || ids[p.ID] {
			t.Errorf("%s: missing or repeated id", what)
		}
		ids[p.ID] = true
		if p.Title == "" || p.GridPos == nil {
			t.Errorf("%s: no title or gridPos", what)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || *p.Datasource != promDatasource {
			t.Errorf("%s: datasource %+v, want the variable", what, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s has no query", what)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			queries++
			if tg.Expr == "" || tg.RefID == "" || refs[tg.RefID] || tg.Datasource == nil || *tg.Datasource != promDatasource {
				t.Errorf("%s: query %+v", what, tg)
			}
			refs[tg.RefID] = true
			for _, problem := range scopeProblems(tg.Expr) {
				t.Errorf("%s: %s", what, problem)
			}
		}
	}
	if queries < 20 {
		t.Errorf("only %d queries", queries)
	}
}

var selectorRE = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?`)

// scopeProblems: a panel shows the chosen cluster only. NameServer series
// are chosen by namespace and nameservercluster, the operator's per-cluster
// series by namespace and name; controller-runtime's series are the
// operator's own, across clusters.
func scopeProblems(expr string) []string {
	var out []string
	for _, m := range selectorRE.FindAllStringSubmatch(expr, -1) {
		name, matchers := m[1], m[2]
		var want []string
		switch {
		case strings.HasPrefix(name, "rocketmq_namesrv_"), name == "process_start_time_seconds":
			want = []string{`namespace="$namespace"`, `nameservercluster="$cluster"`}
		case strings.HasPrefix(name, "kube_namesrv_"):
			want = []string{`namespace="$namespace"`, `name="$cluster"`}
		case strings.HasPrefix(name, "controller_runtime_"):
			want = []string{`controller="nameservercluster"`}
		default:
			continue
		}
		for _, w := range want {
			if !slices.Contains(splitMatchers(matchers), w) {
				out = append(out, fmt.Sprintf("%s%s does not select %s", name, matchers, w))
			}
		}
	}
	return out
}

func splitMatchers(s string) []string {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
	var out []string
	for _, m := range strings.Split(s, ",") {
		out = append(out, strings.TrimSpace(m))
	}
	return out
}
