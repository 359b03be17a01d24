package plot

import (
	"bytes"
	"encoding/xml"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
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
		t.Errorf("%s differs from the rendering (go test ./plot -update, in tools/ rewrites it):\n%s", path, got)
	}
}

func TestChartGolden(t *testing.T) {
	for _, tc := range []struct {
		file  string
		chart Chart
	}{
		{"loglog.svg", Chart{Title: "CPU per registration", XLabel: "topics", YLabel: "ms", LogX: true, LogY: true, Series: []Series{
			{Name: "same version", X: []float64{100, 1000, 10000, 100000}, Y: []float64{0.04, 0.3, 3, 35}},
			{Name: "new version <&>", X: []float64{100, 1000, 10000, 100000}, Y: []float64{0.05, 0.35, 3.2, 40}},
		}}},
		{"linear.svg", Chart{Title: "route p99", XLabel: "topics in the table", YLabel: "p99 (µs)", LogX: true, YFromZero: true, Width: 500, Height: 300,
			Series: []Series{{Name: "p99", X: []float64{1000, 10000, 100000, 1000000}, Y: []float64{950, 1010, 990, 1200}}}}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			svg, err := tc.chart.SVG()
			if err != nil {
				t.Fatal(err)
			}
			if err := xml.Unmarshal(svg, new(struct{})); err != nil {
				t.Fatalf("not well-formed XML: %v", err)
			}
			golden(t, tc.file, svg)
		})
	}
}

func TestChartRefusesBadData(t *testing.T) {
	for name, c := range map[string]Chart{
		"no series":       {},
		"no points":       {Series: []Series{{Name: "a"}}},
		"uneven":          {Series: []Series{{Name: "a", X: []float64{1, 2}, Y: []float64{1}}}},
		"zero on log x":   {LogX: true, Series: []Series{{Name: "a", X: []float64{0, 2}, Y: []float64{1, 2}}}},
		"negative log y":  {LogY: true, Series: []Series{{Name: "a", X: []float64{1, 2}, Y: []float64{-1, 2}}}},
		"NaN":             {Series: []Series{{Name: "a", X: []float64{1, 2}, Y: []float64{math.NaN(), 2}}}},
		"legend too wide": {Width: 200, Series: []Series{{Name: strings.Repeat("x", 30), X: []float64{1}, Y: []float64{1}}}},
	} {
		if _, err := c.SVG(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestTicksAndLabels(t *testing.T) {
	log := axis{lo: 2, hi: 6, log: true}
	if got := log.ticks(); len(got) != 5 || got[0] != 100 || got[4] != 1e6 {
		t.Errorf("log ticks %v", got)
	}
	lin := axis{lo: -200, hi: 800}
	if got := lin.ticks(); len(got) != 6 || got[1] != 0 || math.Signbit(got[1]) || got[5] != 800 {
		t.Errorf("linear ticks %v", got)
	}
	for v, want := range map[float64]string{1000: "1k", 10000: "10k", 1e6: "1M", 2500: "2.5k", 1234: "1234", 0.05: "0.05", 0: "0", 1.5e9: "1.5G"} {
		if got := Label(v); got != want {
			t.Errorf("Label(%v) = %q, want %q", v, got, want)
		}
	}
}
