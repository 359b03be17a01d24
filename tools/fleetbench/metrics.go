package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// sample is one line of the Prometheus text format: a metric's labels and
// value.
type sample struct {
	labels map[string]string
	value  float64
}

// parseSamples reads the samples of one metric from a Prometheus text
// exposition; other metrics, comments and malformed lines of other
// metrics are skipped.
func parseSamples(r io.Reader, metric string) ([]sample, error) {
	var out []sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, metric)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		s := sample{labels: map[string]string{}}
		if rest[0] == '{' {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				return nil, fmt.Errorf("%s: unterminated labels in %q", metric, line)
			}
			if err := parseLabels(rest[1:end], s.labels); err != nil {
				return nil, fmt.Errorf("%s: %w in %q", metric, err, line)
			}
			rest = rest[end+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return nil, fmt.Errorf("%s: no value in %q", metric, line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: value of %q: %w", metric, line, err)
		}
		s.value = v
		out = append(out, s)
	}
	return out, sc.Err()
}

// parseLabels reads name="value" pairs separated by commas; values may hold
// escaped quotes and commas.
func parseLabels(s string, into map[string]string) error {
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 || len(s) < eq+2 || s[eq+1] != '"' {
			return fmt.Errorf("bad label %q", s)
		}
		name := strings.TrimSpace(s[:eq])
		s = s[eq+2:]
		var b strings.Builder
		closed := false
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c == '\\' && i+1 < len(s):
				i++
				switch s[i] {
				case 'n':
					b.WriteByte('\n')
				default:
					b.WriteByte(s[i])
				}
			case c == '"':
				s, closed = s[i+1:], true
			default:
				b.WriteByte(c)
			}
			if closed {
				break
			}
		}
		if !closed {
			return fmt.Errorf("unterminated value of label %s", name)
		}
		into[name] = b.String()
		s = strings.TrimPrefix(strings.TrimSpace(s), ",")
	}
	return nil
}

// counts sums a metric's samples by the values of one label, keeping only
// the samples keep accepts.
func counts(samples []sample, by string, keep func(map[string]string) bool) map[string]float64 {
	out := map[string]float64{}
	for _, s := range samples {
		if keep == nil || keep(s.labels) {
			out[s.labels[by]] += s.value
		}
	}
	return out
}

// scrape fetches a metrics endpoint and returns one metric's samples.
func scrape(ctx context.Context, c *http.Client, url, metric string) ([]sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %s", url, resp.Status)
	}
	s, err := parseSamples(resp.Body, metric)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	return s, nil
}

// delta is after minus before, key by key.
func delta(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}
