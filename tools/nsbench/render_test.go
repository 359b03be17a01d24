package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/plot: bench.md and ours/*.svg")

// copyDir copies the files of src into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// goldenFile compares got with testdata/plot/<name>. The golden report
// links the golden figures and the CSV files they were drawn from, as
// docs/benchmarks.md does, so the repository's reference check follows them.
func goldenFile(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "plot", filepath.FromSlash(name))
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the rendering (go test ./nsbench -run TestPlotBesideJava -update, in tools/, rewrites it):\n%s", path, got)
	}
}

// TestPlotBesideJava renders a report of our curves with another server's
// beside them: dashed series in the figures, and a side-by-side table per
// curve that server measured.
func TestPlotBesideJava(t *testing.T) {
	root := t.TempDir()
	ours, java := filepath.Join(root, "ours"), filepath.Join(root, "java")
	copyDir(t, filepath.Join("testdata", "plot", "ours"), ours)
	copyDir(t, filepath.Join("testdata", "plot", "java"), java)
	for _, f := range []string{"memory-rss.svg", "memory-bytes.svg", "register.svg", "route-cpu.svg", "route-p99.svg", "storm-routable.svg", "storm-p99.svg"} {
		os.Remove(filepath.Join(ours, f)) // the golden figures, not input
	}
	doc := filepath.Join(root, "bench.md")
	if err := os.WriteFile(doc, []byte("# Benchmarks\n\n"+reportBegin+"\nstale\n"+reportEnd+"\n\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run([]string{"-mode", "plot", "-out", ours, "-doc", doc, "-compare", java, "-compare-label", "Java 4.9.8"}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	goldenFile(t, "bench.md", got)
	svgs, err := filepath.Glob(filepath.Join(ours, "*.svg"))
	if err != nil || len(svgs) != 7 {
		t.Fatalf("figures drawn: %v (%v), want 7", svgs, err)
	}
	for _, svg := range svgs {
		b, err := os.ReadFile(svg)
		if err != nil {
			t.Fatal(err)
		}
		goldenFile(t, "ours/"+filepath.Base(svg), b)
	}
	// Route was not measured for the comparison: no dashed series there.
	b, err := os.ReadFile(filepath.Join(ours, "route-cpu.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("stroke-dasharray")) {
		t.Error("route-cpu.svg has a dashed series, but the comparison has no route curve")
	}
}

// TestPlotLabelsTheComparisonByItsDirectory checks the default label.
func TestPlotLabelsTheComparisonByItsDirectory(t *testing.T) {
	root := t.TempDir()
	ours, other := filepath.Join(root, "curves"), filepath.Join(root, "other-4.0")
	copyDir(t, filepath.Join("testdata", "plot", "ours"), ours)
	copyDir(t, filepath.Join("testdata", "plot", "java"), other)
	var out bytes.Buffer
	if err := run([]string{"-mode", "plot", "-out", ours, "-compare", other}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "| kind | topics | measure | namesrv | other-4.0 | other-4.0 / namesrv |") {
		t.Errorf("no table labelled by the directory:\n%s", out.String())
	}
}

// TestPlotRefusesBadComparisons checks the comparison's failure paths.
func TestPlotRefusesBadComparisons(t *testing.T) {
	ours := t.TempDir()
	copyDir(t, filepath.Join("testdata", "plot", "ours"), ours)
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no curve", map[string]string{"README.md": "nothing measured\n"}, "no curve CSV"},
		{"a figure's column missing", map[string]string{"storm.csv": "broker_count,topics_per_broker,spread_ms,route_p99_us,rss_mib\n100,1000,1000,5,6\n"},
			`no column "routable_after_ms"`},
		{"a key column missing", map[string]string{"register.csv": "kind,cpu_ms_per_registration,latency_p50_ms,rss_mib\nsame version,1,1,1\n"},
			`no column "topics"`},
		{"not a number", map[string]string{"register.csv": "kind,topics,cpu_ms_per_registration,latency_p50_ms,rss_mib\nsame version,1000,fast,1,1\n"},
			"cpu_ms_per_registration"},
		{"run.csv of three columns", map[string]string{"run.csv": "key,value,more\na,b,c\n", "storm.csv": "broker_count\n"}, "run.csv has 3 columns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := t.TempDir()
			for name, text := range tc.files {
				if err := os.WriteFile(filepath.Join(other, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := run([]string{"-mode", "plot", "-out", ours, "-compare", other}, new(bytes.Buffer))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestRatio(t *testing.T) {
	for _, tc := range []struct{ ours, theirs, want string }{
		{"0.768", "41.000", "53x"},
		{"1007", "3006", "3.0x"},
		{"86.0", "71.2", "0.83x"},
		{"0", "5", "—"},
		{"—", "5", "—"},
		{"5", "x", "—"},
	} {
		if got := ratio(tc.ours, tc.theirs); got != tc.want {
			t.Errorf("ratio(%s, %s) = %s, want %s", tc.ours, tc.theirs, got, tc.want)
		}
	}
}
