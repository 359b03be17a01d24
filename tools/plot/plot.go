// Package plot draws small line charts as self-contained SVG: a few series
// of points over linear or base-10 logarithmic axes, with tick labels, axis
// titles and a legend. It is what docs/curves' figures are made of, kept
// dependency-free so that the output is byte-for-byte reproducible.
package plot

import (
	"errors"
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// Series is one line: points (X[i], Y[i]) joined in order.
type Series struct {
	Name string
	X, Y []float64
	// Colour is the line's colour; empty takes the palette's colour for
	// the series' position (Colour gives the same ones).
	Colour string
	// Dashed draws the line dashed with hollow points: a second source
	// beside the solid series, such as another server measured alike.
	Dashed bool
}

// Chart is a line chart. Height defaults to 400, Width to 640 or, when
// the legend's names are long, as much wider as keeps the plot area
// minPlotWidth wide.
type Chart struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	// YFromZero makes a linear y axis start at zero.
	YFromZero     bool
	Width, Height int
	Series        []Series
}

// palette is colour-blind friendly (Okabe-Ito), in legend order.
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"}

// Colour is the palette's i-th colour (it repeats after eight), so that
// series of two sources can share a colour for the same quantity.
func Colour(i int) string { return palette[i%len(palette)] }

const (
	marginLeft   = 70
	marginRight  = 20
	marginTop    = 40
	marginBottom = 55
	legendLine   = 16
	// minPlotWidth is the plot area's width a default-width chart keeps
	// beside its legend.
	minPlotWidth = 400
	// dash is the stroke pattern of a dashed series.
	dash = "6 4"
)

// axis maps data values to pixels along one dimension.
type axis struct {
	lo, hi float64 // in data units (log10 of them on a log axis)
	log    bool
	from   float64 // pixel of lo
	to     float64 // pixel of hi
}

func (a *axis) pos(v float64) float64 {
	if a.log {
		v = math.Log10(v)
	}
	if a.hi == a.lo {
		return (a.from + a.to) / 2
	}
	return a.from + (v-a.lo)/(a.hi-a.lo)*(a.to-a.from)
}

// ticks are the values labelled on the axis: powers of ten on a log axis,
// steps of 1, 2 or 5 times a power of ten on a linear one.
func (a *axis) ticks() []float64 {
	var out []float64
	if a.log {
		for e := math.Floor(a.lo); e <= math.Ceil(a.hi); e++ {
			if e >= a.lo-1e-9 && e <= a.hi+1e-9 {
				out = append(out, math.Pow(10, e))
			}
		}
		return out
	}
	step := niceStep((a.hi - a.lo) / 5)
	for v := math.Ceil(a.lo/step-1e-9) * step; v <= a.hi+step*1e-9; v += step {
		out = append(out, math.Round(v/step)*step+0) // +0 turns -0 into 0
	}
	return out
}

func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// Label formats a tick value: 1k, 10k, 1M for large round numbers, the
// shortest decimal otherwise.
func Label(v float64) string {
	for _, u := range []struct {
		div    float64
		suffix string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if math.Abs(v) >= u.div && math.Mod(v, u.div/10) == 0 {
			return strconv.FormatFloat(v/u.div, 'f', -1, 64) + u.suffix
		}
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// bounds is the data range of one dimension, with room on a linear axis.
func bounds(c *Chart, pick func(*Series) []float64, log, fromZero bool) (lo, hi float64, err error) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for i := range c.Series {
		for _, v := range pick(&c.Series[i]) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, 0, fmt.Errorf("series %q: value %v", c.Series[i].Name, v)
			}
			if log {
				if v <= 0 {
					return 0, 0, fmt.Errorf("series %q: %v on a logarithmic axis", c.Series[i].Name, v)
				}
				v = math.Log10(v)
			}
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if log {
		return math.Floor(lo), math.Max(math.Ceil(hi), math.Floor(lo)+1), nil
	}
	if fromZero {
		lo = min(lo, 0)
	}
	if hi == lo {
		hi = lo + 1
	}
	step := niceStep((hi - lo) / 5)
	return math.Floor(lo/step) * step, math.Ceil(hi/step) * step, nil
}

// SVG renders the chart.
func (c *Chart) SVG() ([]byte, error) {
	if len(c.Series) == 0 {
		return nil, errors.New("a chart needs at least one series")
	}
	for _, s := range c.Series {
		if len(s.X) != len(s.Y) || len(s.X) == 0 {
			return nil, fmt.Errorf("series %q: %d x and %d y values", s.Name, len(s.X), len(s.Y))
		}
	}
	legendWidth := 0
	for _, s := range c.Series {
		legendWidth = max(legendWidth, 30+7*len(s.Name))
	}
	w, h := c.Width, c.Height
	if w == 0 {
		w = max(640, marginLeft+marginRight+legendWidth+minPlotWidth)
	}
	if h == 0 {
		h = 400
	}
	x := axis{log: c.LogX, from: marginLeft, to: float64(w - marginRight - legendWidth)}
	y := axis{log: c.LogY, from: float64(h - marginBottom), to: marginTop}
	var err error
	if x.lo, x.hi, err = bounds(c, func(s *Series) []float64 { return s.X }, c.LogX, false); err != nil {
		return nil, err
	}
	if y.lo, y.hi, err = bounds(c, func(s *Series) []float64 { return s.Y }, c.LogY, c.YFromZero); err != nil {
		return nil, err
	}
	if x.to-x.from < 100 {
		return nil, errors.New("chart too narrow for its legend")
	}

	var b strings.Builder
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" text-anchor="middle">%s</text>`+"\n", w/2, html.EscapeString(c.Title))
	for _, v := range x.ticks() {
		p := f(x.pos(v))
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#dddddd"/>`+"\n", p, f(y.from), p, f(y.to))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", p, f(y.from+16), Label(v))
	}
	for _, v := range y.ticks() {
		p := f(y.pos(v))
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#dddddd"/>`+"\n", f(x.from), p, f(x.to), p)
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", f(x.from-6), p, Label(v))
	}
	fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="#333333"/>`+"\n", f(x.from), f(y.to), f(x.to-x.from), f(y.from-y.to))
	fmt.Fprintf(&b, `<text x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", f((x.from+x.to)/2), h-12, html.EscapeString(c.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(16 %s) rotate(-90)" text-anchor="middle">%s</text>`+"\n", f((y.from+y.to)/2), html.EscapeString(c.YLabel))
	for i, s := range c.Series {
		colour := s.Colour
		if colour == "" {
			colour = Colour(i)
		}
		colour = html.EscapeString(colour)
		line, point := "", fmt.Sprintf(`fill="%s"`, colour)
		if s.Dashed {
			line = fmt.Sprintf(` stroke-dasharray="%s"`, dash)
			point = fmt.Sprintf(`fill="#ffffff" stroke="%s" stroke-width="1.5"`, colour)
		}
		var pts []string
		for j := range s.X {
			pts = append(pts, f(x.pos(s.X[j]))+","+f(y.pos(s.Y[j])))
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), colour, line)
		for _, p := range pts {
			px, py, _ := strings.Cut(p, ",")
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" %s/>`+"\n", px, py, point)
		}
		ly := marginTop + 8 + i*legendLine
		lx := x.to + 12
		fmt.Fprintf(&b, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", f(lx), ly, f(lx+18), ly, colour, line)
		fmt.Fprintf(&b, `<circle cx="%s" cy="%d" r="3" %s/>`+"\n", f(lx+9), ly, point)
		fmt.Fprintf(&b, `<text x="%s" y="%d" dominant-baseline="middle">%s</text>`+"\n", f(lx+24), ly, html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String()), nil
}
