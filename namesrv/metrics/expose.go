package metrics

import (
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
)

// The metric types of the text format's TYPE lines.
const (
	counterType   = "counter"
	gaugeType     = "gauge"
	histogramType = "histogram"
	summaryType   = "summary"
)

// counter counts events with one atomic add.
type counter struct{ n atomic.Uint64 }

func (c *counter) Inc()           { c.n.Add(1) }
func (c *counter) value() float64 { return float64(c.n.Load()) }

// gauge is a level that goes up and down.
type gauge struct{ n atomic.Int64 }

func (g *gauge) Inc()           { g.n.Add(1) }
func (g *gauge) Dec()           { g.n.Add(-1) }
func (g *gauge) value() float64 { return float64(g.n.Load()) }

// valueFunc is a sample read from elsewhere at scrape time.
type valueFunc func() float64

func (f valueFunc) value() float64 { return f() }

type valuer interface{ value() float64 }

// durationBounds are the upper bounds (inclusive) of the request duration
// histogram's buckets, in seconds; the +Inf bucket follows them.
var durationBounds = [...]float64{1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 1e-3, 5e-3, 0.025, 0.1, 0.5}

// durationLe are the le label pairs of durationBounds, rendered once.
var durationLe = func() (le [len(durationBounds) + 1]string) {
	for i, b := range durationBounds {
		le[i] = `le="` + string(appendFloat(nil, b)) + `"`
	}
	le[len(durationBounds)] = `le="+Inf"`
	return le
}()

// histogram counts observations per bucket (not cumulated: one atomic add
// each) and sums them. A scrape cumulates the buckets and takes their total
// as the count, so that _count always equals the +Inf bucket even while
// requests are being counted.
type histogram struct {
	counts [len(durationBounds) + 1]atomic.Uint64
	sum    atomic.Uint64 // float64 bits
}

func (h *histogram) observe(v float64) {
	i := 0
	for i < len(durationBounds) && v > durationBounds[i] {
		i++
	}
	h.counts[i].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// sample is one series of a family: its label pairs, rendered, and where
// its value comes from (a histogram, or a counter, gauge or function).
type sample struct {
	key    []string // label values in the order of their names, until sorted
	labels string   // `a="x",b="y"`, names sorted; "" without labels
	v      valuer
	h      *histogram
}

// family is a metric family of the NameServer: every series of one name.
type family struct {
	name, help, typ string
	samples         []sample
}

// add appends a series with the given label name/value pairs, in any
// order: the text format lists a series' labels by name, as the Go client
// did.
func (f *family) add(v valuer, h *histogram, pairs ...string) {
	n := len(pairs) / 2
	var buf [4]int
	order := append(buf[:0], make([]int, n)...) // pair indexes, by label name
	for i := range order {
		j := i
		for j > 0 && pairs[2*order[j-1]] > pairs[2*i] {
			order[j] = order[j-1]
			j--
		}
		order[j] = i
	}
	s := sample{v: v, h: h, key: make([]string, n)}
	size := 0
	for i := 0; i < len(pairs); i += 2 {
		size += len(pairs[i]) + len(labelEscaper.Replace(pairs[i+1])) + 4
	}
	var b strings.Builder
	b.Grow(size)
	for i, p := range order {
		s.key[i] = pairs[2*p+1]
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(pairs[2*p])
		b.WriteString(`="`)
		b.WriteString(labelEscaper.Replace(pairs[2*p+1]))
		b.WriteByte('"')
	}
	s.labels = b.String()
	f.samples = append(f.samples, s)
}

// sort orders the series by label values, compared in the order of the
// label names, as the Go client's registry did, and then forgets the
// values.
func (f *family) sort() {
	sort.SliceStable(f.samples, func(i, j int) bool {
		a, b := f.samples[i].key, f.samples[j].key
		if len(a) != len(b) {
			return len(a) < len(b)
		}
		for k := range a {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		return false
	})
	for i := range f.samples {
		f.samples[i].key = nil
	}
}

func (f *family) write(e *encoder) {
	if !e.family(f.name, f.help, f.typ) {
		return
	}
	for _, s := range f.samples {
		if s.h == nil {
			e.sample(f.name, "", s.labels, "", s.v.value())
			continue
		}
		var total uint64
		for i, le := range durationLe {
			total += s.h.counts[i].Load()
			e.sample(f.name, "_bucket", s.labels, le, float64(total))
		}
		e.sample(f.name, "_sum", s.labels, "", math.Float64frombits(s.h.sum.Load()))
		e.sample(f.name, "_count", s.labels, "", float64(total))
	}
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// flushAt is the buffered size at which the encoder writes out: a scrape
// writes through a page rather than holding its whole answer.
const flushAt = 4 << 10

// encoder writes the text exposition format, version 0.0.4, through a
// small buffer kept from scrape to scrape. Families whose names the scrape
// did not ask for (only, when not nil) are skipped whole.
type encoder struct {
	w    io.Writer
	buf  []byte
	err  error
	only map[string]bool
	skip bool
}

// reset starts a scrape to w.
func (e *encoder) reset(w io.Writer, only map[string]bool) {
	if e.buf == nil {
		e.buf = make([]byte, 0, flushAt+1<<10)
	}
	e.w, e.buf, e.err, e.only, e.skip = w, e.buf[:0], nil, only, false
}

// family starts a family with its HELP and TYPE lines; false means the
// scrape left it out, or the scraper is gone, and its samples are not
// written.
func (e *encoder) family(name, help, typ string) bool {
	e.skip = e.err != nil || e.only != nil && !e.only[name]
	if e.skip {
		return false
	}
	e.buf = append(e.buf, "# HELP "...)
	e.buf = append(e.buf, name...)
	e.buf = append(e.buf, ' ')
	e.buf = append(e.buf, helpEscaper.Replace(help)...)
	e.buf = append(e.buf, "\n# TYPE "...)
	e.buf = append(e.buf, name...)
	e.buf = append(e.buf, ' ')
	e.buf = append(e.buf, typ...)
	e.buf = append(e.buf, '\n')
	return true
}

// sample writes one line: name and suffix, the label pairs (labels, then
// extra, such as le or quantile), and the value.
func (e *encoder) sample(name, suffix, labels, extra string, v float64) {
	if e.skip {
		return
	}
	e.buf = append(e.buf, name...)
	e.buf = append(e.buf, suffix...)
	if labels != "" || extra != "" {
		e.buf = append(e.buf, '{')
		e.buf = append(e.buf, labels...)
		if labels != "" && extra != "" {
			e.buf = append(e.buf, ',')
		}
		e.buf = append(e.buf, extra...)
		e.buf = append(e.buf, '}')
	}
	e.buf = append(e.buf, ' ')
	e.buf = appendFloat(e.buf, v)
	e.buf = append(e.buf, '\n')
	if len(e.buf) >= flushAt {
		e.flush()
	}
}

// flush writes out what is buffered; after a failed write the rest is
// dropped, and flush reports the first error.
func (e *encoder) flush() error {
	if e.err == nil && len(e.buf) > 0 {
		_, e.err = e.w.Write(e.buf)
	}
	e.buf = e.buf[:0]
	return e.err
}

// appendFloat formats a value as the text format does: the shortest
// representation that reads back the same, and NaN, +Inf and -Inf.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, +1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	case f == 0:
		return append(b, '0')
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}
