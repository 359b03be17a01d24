// Package loadgen drives a NameServer with the real protocol at a
// controlled rate and shape: pipelined route queries over a few connections,
// broker registration storms, or both, and reads what the server spent from
// /proc. tools/nsbench is its command line; docs/benchmarks.md holds its
// figures.
package loadgen

import (
	"math/bits"
	"time"
)

// Histogram records latencies in log-linear buckets: 64 buckets per power
// of two, so any percentile is within about 1.6% of the true value, in a
// fixed 4 KiB-per-decade footprint and with no allocation per sample.
type Histogram struct {
	counts [64 * 64]uint64
	n      uint64
	max    time.Duration
}

const subBuckets = 64

func bucketOf(ns int64) int {
	if ns < subBuckets {
		return int(ns)
	}
	exp := bits.Len64(uint64(ns)) - 7 // ns >> exp lies in [64, 128)
	return (exp+1)*subBuckets + int(ns>>exp) - subBuckets
}

func lowerBound(b int) int64 {
	if b < subBuckets {
		return int64(b)
	}
	exp := b/subBuckets - 1
	return int64(b%subBuckets+subBuckets) << exp
}

// Record adds one sample.
func (h *Histogram) Record(d time.Duration) {
	ns := max(int64(d), 0)
	b := min(bucketOf(ns), len(h.counts)-1)
	h.counts[b]++
	h.n++
	if d > h.max {
		h.max = d
	}
}

// Merge adds o's samples to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// Count is the number of samples.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest sample.
func (h *Histogram) Max() time.Duration { return h.max }

// Quantile returns the q-quantile (0 < q <= 1), as the lower bound of its
// bucket.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for b, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(lowerBound(b))
		}
	}
	return h.max
}
