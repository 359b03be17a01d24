package main

import (
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Expr is one expression to read.
type Expr struct {
	ID   string `json:"id"`
	Expr string `json:"expr"`
}

// Reference is what one expression refers to.
type Reference struct {
	ID    string `json:"id"`
	Error string `json:"error,omitempty"`
	// Selectors are the expression's vector selectors (range selectors'
	// included), in the order they appear.
	Selectors []Selector `json:"selectors"`
	// Labels are the label names used outside selectors: by and without,
	// on and ignoring, group_left and group_right, the source labels of
	// label_replace and label_join. (Experimental functions, such as
	// sort_by_label, are refused, as Prometheus refuses them by default.)
	Labels []string `json:"labels"`
	// Created are the label names the expression makes itself: the target
	// of label_replace and label_join, the label of count_values.
	Created []string `json:"created"`
}

// Selector is one vector selector. Metric is "" when the selector names no
// metric with a plain name or an equality matcher on __name__; its
// __name__ matcher is then among Matchers.
type Selector struct {
	Metric   string    `json:"metric"`
	Matchers []Matcher `json:"matchers"`
}

// Matcher is one label matcher; Type is =, !=, =~ or !~.
type Matcher struct {
	Label string `json:"label"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

// References parses an expression and collects what it refers to.
func References(e Expr) Reference {
	ref := Reference{ID: e.ID, Selectors: []Selector{}, Labels: []string{}, Created: []string{}}
	p := parser.NewParser(parser.Options{})
	ast, err := p.ParseExpr(e.Expr)
	if err != nil {
		ref.Error = err.Error()
		return ref
	}
	labelSet, created := map[string]bool{}, map[string]bool{}
	use := func(names ...string) {
		for _, n := range names {
			labelSet[n] = true
		}
	}
	parser.Inspect(ast, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			ref.Selectors = append(ref.Selectors, selector(n))
		case *parser.AggregateExpr:
			use(n.Grouping...)
			if n.Op == parser.COUNT_VALUES {
				if s, ok := n.Param.(*parser.StringLiteral); ok {
					created[s.Val] = true
				}
			}
		case *parser.BinaryExpr:
			if m := n.VectorMatching; m != nil {
				use(m.MatchingLabels...)
				use(m.Include...)
			}
		case *parser.Call:
			dst, src := labelArgs(n)
			for _, d := range dst {
				created[d] = true
			}
			use(src...)
		}
		return nil
	})
	ref.Labels = sortedKeys(labelSet)
	ref.Created = sortedKeys(created)
	return ref
}

// labelArgs returns the label names a function call creates and reads.
func labelArgs(c *parser.Call) (dst, src []string) {
	str := func(i int) []string {
		if i < len(c.Args) {
			if s, ok := unwrap(c.Args[i]).(*parser.StringLiteral); ok {
				return []string{s.Val}
			}
		}
		return nil
	}
	switch c.Func.Name {
	case "label_replace": // (v, dst, replacement, src, regex)
		return str(1), str(3)
	case "label_join": // (v, dst, separator, src...)
		for i := 3; i < len(c.Args); i++ {
			src = append(src, str(i)...)
		}
		return str(1), src
	}
	return nil, nil
}

// unwrap removes parentheses and the parser's step-invariant wrapper
// around a literal argument.
func unwrap(e parser.Expr) parser.Expr {
	for {
		switch n := e.(type) {
		case *parser.ParenExpr:
			e = n.Expr
		case *parser.StepInvariantExpr:
			e = n.Expr
		default:
			return e
		}
	}
}

func selector(vs *parser.VectorSelector) Selector {
	s := Selector{Metric: vs.Name, Matchers: []Matcher{}}
	for _, m := range vs.LabelMatchers {
		if m.Name == labels.MetricName {
			if m.Type == labels.MatchEqual && s.Metric == "" {
				s.Metric = m.Value
			}
			if m.Type == labels.MatchEqual && m.Value == s.Metric {
				continue
			}
		}
		s.Matchers = append(s.Matchers, Matcher{Label: m.Name, Type: m.Type.String(), Value: m.Value})
	}
	return s
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
