package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// table is one curve's measurements: a CSV file for tools and plots, and
// the same rows as a Markdown table for docs/benchmarks.md.
type table struct {
	name    string
	columns []string
	rows    [][]string
}

func newTable(name string, columns ...string) *table {
	return &table{name: name, columns: columns}
}

func (t *table) add(cells ...string) {
	if len(cells) != len(t.columns) {
		panic(fmt.Sprintf("table %s: %d cells for %d columns", t.name, len(cells), len(t.columns)))
	}
	t.rows = append(t.rows, cells)
}

// write puts <name>.csv and <name>.md into dir.
func (t *table) write(dir string) error {
	var b strings.Builder
	w := csv.NewWriter(&b)
	if err := w.Write(t.columns); err != nil {
		return fmt.Errorf("table %s: %w", t.name, err)
	}
	if err := w.WriteAll(t.rows); err != nil {
		return fmt.Errorf("table %s: %w", t.name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, t.name+".csv"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, t.name+".md"), []byte(t.markdown()), 0o644)
}

// readTable reads dir/<name>.csv as write wrote it.
func readTable(dir, name string) (*table, error) {
	f, err := os.Open(filepath.Join(dir, name+".csv"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("read %s.csv: %w", name, err)
	}
	if len(records) == 0 {
		return nil, fmt.Errorf("%s.csv has no header", name)
	}
	return &table{name: name, columns: records[0], rows: records[1:]}, nil
}

// column is the index of a column, or an error naming the table.
func (t *table) column(name string) (int, error) {
	for i, c := range t.columns {
		if c == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%s.csv has no column %q", t.name, name)
}

// float reads a numeric cell.
func (t *table) float(row []string, column string) (float64, error) {
	i, err := t.column(column)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(row[i], 64)
	if err != nil {
		return 0, fmt.Errorf("%s.csv column %s: %w", t.name, column, err)
	}
	return v, nil
}

// numeric reports whether every cell of column i is a number, so the
// Markdown table aligns it right.
func (t *table) numeric(i int) bool {
	for _, r := range t.rows {
		if _, err := strconv.ParseFloat(r[i], 64); err != nil {
			return false
		}
	}
	return len(t.rows) > 0
}

// markdown renders the table with readable headers (underscores become
// spaces) and numeric columns aligned right.
func (t *table) markdown() string {
	var b strings.Builder
	b.WriteString("|")
	for _, c := range t.columns {
		b.WriteString(" " + strings.ReplaceAll(c, "_", " ") + " |")
	}
	b.WriteString("\n|")
	for i := range t.columns {
		if t.numeric(i) {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.rows {
		b.WriteString("|")
		for _, c := range r {
			b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}
