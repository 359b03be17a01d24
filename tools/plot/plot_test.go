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
		// Two sources: a dashed series shares the colour of the solid one
		// it is compared with, and long names widen the default chart.
		{"compare.svg", Chart{Title: "Server CPU per registration", XLabel: "topics of the broker", YLabel: "ms", LogX: true, LogY: true, Series: []Series{
			{Name: "same version", X: []float64{100, 1000, 10000}, Y: []float64{0.12, 0.15, 0.77}, Colour: Colour(0)},
			{Name: "new version, 10 topics changed", X: []float64{100, 1000, 10000}, Y: []float64{0.14, 0.39, 3.2}, Colour: Colour(1)},
			{Name: "same version, Java 4.9.8", X: []float64{1000, 10000}, Y: []float64{5.1, 41}, Colour: Colour(0), Dashed: true},
			{Name: "new version, 10 topics changed, Java 4.9.8", X: []float64{1000, 10000}, Y: []float64{10.6, 91}, Colour: Colour(1), Dashed: true},
		}}},
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

// TestChartSize checks the default width: 640 unless the legend would
// leave the plot area narrower than minPlotWidth; an explicit width stays.
func TestChartSize(t *testing.T) {
	point := func(name string) Series { return Series{Name: name, X: []float64{1, 2}, Y: []float64{1, 2}} }
	for _, tc := range []struct {
		name  string
		chart Chart
		width string
	}{
		{"short names", Chart{Series: []Series{point("p99")}}, `width="640"`},
		{"long name", Chart{Series: []Series{point(strings.Repeat("x", 40))}}, `width="800"`}, // 70+20+(30+280)+400
		{"explicit", Chart{Width: 700, Series: []Series{point(strings.Repeat("x", 40))}}, `width="700"`},
	} {
		svg, err := tc.chart.SVG()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !bytes.Contains(svg, []byte(tc.width)) {
			t.Errorf("%s: want %s in\n%.120s", tc.name, tc.width, svg)
		}
	}
}

func TestDashedSeries(t *testing.T) {
	c := Chart{Series: []Series{
		{Name: "ours", X: []float64{1, 2}, Y: []float64{1, 2}},
		{Name: "theirs", X: []float64{1, 2}, Y: []float64{2, 3}, Dashed: true, Colour: Colour(0)},
	}}
	svg, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	// Line and legend line of the dashed series only; its points (two and
	// the legend's) hollow in the first series' colour.
	if n := bytes.Count(svg, []byte(`stroke-dasharray="6 4"`)); n != 2 {
		t.Errorf("%d dashed strokes, want 2", n)
	}
	if n := bytes.Count(svg, []byte(`r="3" fill="#ffffff" stroke="`+Colour(0)+`"`)); n != 3 {
		t.Errorf("%d hollow points, want 3", n)
	}
	if n := bytes.Count(svg, []byte(`r="3" fill="`+Colour(0)+`"`)); n != 3 {
		t.Errorf("%d filled points of the solid series, want 3", n)
	}
	if Colour(8) != Colour(0) {
		t.Error("the palette does not repeat after eight colours")
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
