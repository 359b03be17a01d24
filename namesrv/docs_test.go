package namesrv_test

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
)

// docsFile holds the tables TestDocTables writes: the NameServer's user
// guide.
var docsFile = filepath.Join("..", "docs", "nameserver.md")

var updateDocs = flag.Bool("update-docs", false, "rewrite the generated tables of docs/nameserver.md instead of comparing them")

// TestDocTables keeps the flags, properties and metrics of
// docs/nameserver.md equal to the code's, so that a new property or series
// cannot ship undocumented and a removed one cannot stay documented. Each
// table sits between <!-- NAME:begin --> and <!-- NAME:end --> lines.
func TestDocTables(t *testing.T) {
	doc, err := os.ReadFile(docsFile)
	if err != nil {
		t.Fatal(err)
	}
	tables := map[string]string{
		"flags":      flagsTable(),
		"properties": propertiesTable(),
		"metrics":    metricsTable(t),
	}
	got := string(doc)
	for _, name := range slices.Sorted(maps.Keys(tables)) {
		got, err = replaceBlock(got, name, tables[name])
		if err != nil {
			t.Fatal(err)
		}
	}
	if got == string(doc) {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(docsFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is stale: its generated tables differ from the code; run\n"+
		"  go test ./namesrv -run '^TestDocTables$' -update-docs\nand commit the result. Lines only in the doc (-) or only in the code (+):\n%s",
		docsFile, lineDiff(string(doc), got))
}

// replaceBlock puts body between the begin and end markers of name.
func replaceBlock(doc, name, body string) (string, error) {
	begin, end := "<!-- "+name+":begin -->\n", "<!-- "+name+":end -->"
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("%s has no %q ... %q block", docsFile, strings.TrimSpace(begin), end)
	}
	return doc[:i+len(begin)] + body + doc[j:], nil
}

// flagsTable is the usage text of namesrv --help.
func flagsTable() string {
	var buf bytes.Buffer
	fs, _ := config.NewCommandLine("namesrv", &buf)
	fs.Usage()
	return "```text\n" + buf.String() + "```\n"
}

// propertiesTable is one row per property of the registry.
func propertiesTable() string {
	var b strings.Builder
	b.WriteString("| property | type | default | values | effect | what |\n|---|---|---|---|---|---|\n")
	for _, k := range config.Keys() {
		var values string
		switch {
		case k.Enum != nil:
			values = "`" + strings.Join(k.Enum, "`, `") + "`"
		case k.Min != nil && k.Max != nil:
			values = fmt.Sprintf("%d to %d", *k.Min, *k.Max)
		case k.Min != nil:
			values = fmt.Sprintf("at least %d", *k.Min)
		case k.Max != nil:
			values = fmt.Sprintf("at most %d", *k.Max)
		}
		def := "`" + k.Default + "`"
		if k.Default == "" {
			def = "(empty)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", k.Name, k.Kind, def, values, k.Effect, cell(k.Doc))
	}
	return b.String()
}

// metricsTable is one row per rocketmq_namesrv_* family that a server with
// every optional source configured (TLS, authorization with broker-name
// ownership, a declared-KV file, the live-broker record) exports.
func metricsTable(t *testing.T) string {
	_, cert, key := tlsFiles(t)
	s := startServer(t, func(c *config.Config) {
		c.TLSServerCertPath, c.TLSServerKeyPath = cert, key
		c.AuthzEnable, c.AuthzBrokerNameOwnership = true, true
		c.AuthzReadNetworks = "127.0.0.1/32"
		c.KVDeclaredFile = filepath.Join(t.TempDir(), "declared.json")
	})
	fams := scrapeMetrics(t, s)
	var b strings.Builder
	b.WriteString("| series | type | labels | what |\n|---|---|---|---|\n")
	for _, name := range slices.Sorted(maps.Keys(fams)) {
		if !strings.HasPrefix(name, "rocketmq_namesrv_") {
			continue
		}
		f := fams[name]
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", name, strings.ToLower(f.GetType().String()), labels(f), cell(f.GetHelp()))
	}
	return b.String()
}

// labels lists a family's label names; a label with at most a handful of
// values (a result, a reason) lists them too, since queries filter on them.
func labels(f *dto.MetricFamily) string {
	values := map[string]map[string]bool{}
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if values[l.GetName()] == nil {
				values[l.GetName()] = map[string]bool{}
			}
			values[l.GetName()][l.GetValue()] = true
		}
	}
	if len(values) == 0 {
		return ""
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(values)) {
		switch vs := values[name]; {
		case name == "version" || name == "goversion" || len(vs) > 8:
			parts = append(parts, "`"+name+"`")
		default:
			list := slices.Sorted(maps.Keys(vs))
			parts = append(parts, fmt.Sprintf("`%s` (%s)", name, strings.Join(list, ", ")))
		}
	}
	return strings.Join(parts, ", ")
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}
