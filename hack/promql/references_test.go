package main

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestReferences(t *testing.T) {
	cases := []struct {
		name string
		expr string
		want Reference
	}{
		{"plain selector", `up`, Reference{Selectors: []Selector{{Metric: "up", Matchers: []Matcher{}}}}},
		{"matchers of every type", `m{a="1", b!="2", c=~"3|4", d!~"5"}`, Reference{Selectors: []Selector{{Metric: "m", Matchers: []Matcher{
			{"a", "=", "1"}, {"b", "!=", "2"}, {"c", "=~", "3|4"}, {"d", "!~", "5"}}}}}},
		{"name as a matcher", `{__name__="m", a="1"}`, Reference{Selectors: []Selector{{Metric: "m", Matchers: []Matcher{{"a", "=", "1"}}}}}},
		{"name as a regex", `{__name__=~"m.*"}`, Reference{Selectors: []Selector{{Metric: "", Matchers: []Matcher{{"__name__", "=~", "m.*"}}}}}},
		{"range, offset and grouping", `sum by (le, pod) (rate(h_bucket{x="y"}[5m] offset 1h))`, Reference{
			Selectors: []Selector{{Metric: "h_bucket", Matchers: []Matcher{{"x", "=", "y"}}}}, Labels: []string{"le", "pod"}}},
		{"without", `sum without (instance) (m)`, Reference{Selectors: []Selector{{Metric: "m", Matchers: []Matcher{}}}, Labels: []string{"instance"}}},
		{"vector matching", `a > on (ns, name) group_left (pod) b and ignoring (job) c`, Reference{
			Selectors: []Selector{{Metric: "a", Matchers: []Matcher{}}, {Metric: "b", Matchers: []Matcher{}}, {Metric: "c", Matchers: []Matcher{}}},
			Labels:    []string{"job", "name", "ns", "pod"}}},
		{"label_replace and label_join", `label_join(label_replace(m, "dst", "$1", "src", "(.*)"), "joined", ",", "a", "b")`, Reference{
			Selectors: []Selector{{Metric: "m", Matchers: []Matcher{}}}, Labels: []string{"a", "b", "src"}, Created: []string{"dst", "joined"}}},
		{"count_values", `count_values("version", m)`, Reference{
			Selectors: []Selector{{Metric: "m", Matchers: []Matcher{}}}, Created: []string{"version"}}},
		{"subquery and functions", `max_over_time(histogram_quantile(0.99, sum by (le) (rate(h_bucket[1m])))[1h:5m]) / time()`, Reference{
			Selectors: []Selector{{Metric: "h_bucket", Matchers: []Matcher{}}}, Labels: []string{"le"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.want.ID = c.name
			if c.want.Labels == nil {
				c.want.Labels = []string{}
			}
			if c.want.Created == nil {
				c.want.Created = []string{}
			}
			got := References(Expr{ID: c.name, Expr: c.expr})
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("References(%q)\n got %+v\nwant %+v", c.expr, got, c.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, expr := range []string{`sum(`, `rate(m[$__rate_interval])`, `m{a="1"`, `unknown_function(m)`, ``,
		// Experimental functions are off in Prometheus unless a flag turns them on.
		`sort_by_label(m, "a")`} {
		if r := References(Expr{Expr: expr}); r.Error == "" {
			t.Errorf("%q parsed: %+v", expr, r)
		}
	}
}

func TestRun(t *testing.T) {
	var out, errOut bytes.Buffer
	in := `[{"id":"good","expr":"up"},{"id":"bad","expr":"sum("}]`
	if status := run(strings.NewReader(in), &out, &errOut); status != 1 {
		t.Errorf("status %d with an expression that does not parse, want 1", status)
	}
	var refs []Reference
	if err := json.Unmarshal(out.Bytes(), &refs); err != nil || len(refs) != 2 || refs[0].ID != "good" || refs[0].Error != "" || refs[1].Error == "" {
		t.Errorf("output %s (%v)", out.String(), err)
	}

	out.Reset()
	if status := run(strings.NewReader(`[{"id":"good","expr":"up"}]`), &out, &errOut); status != 0 {
		t.Errorf("status %d, want 0", status)
	}
	for _, bad := range []string{`{`, `[{"expr":"up","extra":1}]`, `"up"`} {
		errOut.Reset()
		if status := run(strings.NewReader(bad), &out, &errOut); status != 2 || !strings.Contains(errOut.String(), "reading expressions") {
			t.Errorf("input %s: status %d, stderr %q", bad, status, errOut.String())
		}
	}
}
