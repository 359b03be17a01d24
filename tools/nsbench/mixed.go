package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kube-namesrv/kube-namesrv/tools/loadgen"
)

// mixedMode measures route queries without registrations (quiet) and while
// a registration storm runs, and compares their p99s. With -windows N the
// two phases alternate N times in short windows: on a shared host whose
// speed drifts over a minute, one long quiet phase followed by one long
// storm phase compares two different hosts, and alternating windows give
// the drift to both.
//
// The storm's brokers keep their connections (and so their registrations)
// for the whole run: between storm windows they wait, parked after a
// registration, and a quiet window starts only once all of them are
// parked, so no registration runs in a quiet window.
func mixedMode(ctx context.Context, o *options, out io.Writer) error {
	if o.windows < 1 || o.duration/time.Duration(o.windows) < 100*time.Millisecond {
		return fmt.Errorf("-windows %d: need at least one window of at least 100ms within -duration %v", o.windows, o.duration)
	}
	topics, stop, err := prepared(ctx, o)
	if err != nil {
		return err
	}
	defer stop()

	window := o.duration / time.Duration(o.windows)
	gate := newStormGate(o.brokers)
	stormCtx, stopStorm := context.WithCancel(ctx)
	defer stopStorm()
	storm := o.storm()
	storm.OnRegistered = func(int, int) bool { return gate.wait(stormCtx) }
	if err := storm.Prepare(); err != nil {
		return err
	}

	var quiet, busy phase
	var ratios []float64
	var stormRes *loadgen.RegisterResult
	stormDone := make(chan error, 1)
	for w := range o.windows {
		q, err := quiet.run(ctx, o, topics, window)
		if err != nil {
			return err
		}
		gate.open()
		if w == 0 {
			go func() {
				var err error
				stormRes, err = storm.Run(stormCtx)
				stormDone <- err
			}()
		}
		b, err := busy.run(ctx, o, topics, window)
		if err != nil {
			return err
		}
		if !gate.close(ctx, o.interval+5*time.Second) {
			fmt.Fprintf(out, "window %d: not every storm broker parked; the next quiet window may include registrations\n", w+1)
		}
		if qp := q.Latency.Quantile(0.99); qp > 0 {
			ratios = append(ratios, float64(b.Latency.Quantile(0.99))/float64(qp))
		}
	}
	stopStorm()
	if err := <-stormDone; err != nil && ctx.Err() == nil {
		fmt.Fprintln(out, "storm:", err)
	}

	reportRoute(out, "quiet", o, &quiet.res, quiet.cpu, quiet.rss)
	reportRoute(out, "storm", o, &busy.res, busy.cpu, busy.rss)
	if stormRes != nil {
		fmt.Fprintf(out, "storm: %d registrations meanwhile (%d errors, %d in quiet windows), latency p50 %v p99 %v\n",
			stormRes.Registrations, stormRes.Errors, gate.strays.Load(), stormRes.Latency.Quantile(0.5), stormRes.Latency.Quantile(0.99))
	}
	if q := quiet.res.Latency.Quantile(0.99); q > 0 {
		fmt.Fprintf(out, "route p99 during the storm is %.2fx the quiet p99\n", float64(busy.res.Latency.Quantile(0.99))/float64(q))
	}
	if len(ratios) > 1 {
		slices.Sort(ratios)
		fmt.Fprintf(out, "per-window p99 ratios over %d windows of %v: min %.2fx median %.2fx max %.2fx\n",
			len(ratios), window, ratios[0], ratios[len(ratios)/2], ratios[len(ratios)-1])
	}
	return nil
}

// phase accumulates the route results of one phase's windows.
type phase struct {
	res loadgen.RouteResult
	cpu time.Duration
	rss int64
}

func (p *phase) run(ctx context.Context, o *options, topics []string, d time.Duration) (*loadgen.RouteResult, error) {
	r, cpu, rss, err := runRoute(ctx, o, topics, d)
	if err != nil {
		return nil, err
	}
	p.res.Requests += r.Requests
	p.res.Errors += r.Errors
	p.res.NotFound += r.NotFound
	p.res.Elapsed += r.Elapsed
	p.res.Latency.Merge(&r.Latency)
	p.cpu += cpu
	p.rss = rss
	return r, nil
}

// stormGate lets the storm's brokers register only in storm windows. A
// broker calls wait after each registration; while the gate is closed it
// parks there until the gate opens again.
type stormGate struct {
	brokers int
	mu      sync.Mutex
	opened  chan struct{} // closed while the gate is open
	isOpen  bool
	parked  atomic.Int64
	// strays counts registrations that ended after every broker had
	// parked: there should be none.
	strays  atomic.Int64
	settled atomic.Bool
}

func newStormGate(brokers int) *stormGate {
	return &stormGate{brokers: brokers, opened: make(chan struct{})}
}

func (g *stormGate) wait(ctx context.Context) bool {
	if g.settled.Load() {
		g.strays.Add(1)
	}
	g.mu.Lock()
	ch, isOpen := g.opened, g.isOpen
	g.mu.Unlock()
	if isOpen {
		return true
	}
	g.parked.Add(1)
	defer g.parked.Add(-1)
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}

func (g *stormGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.settled.Store(false)
	if !g.isOpen {
		g.isOpen = true
		close(g.opened)
	}
}

// close stops further registrations and waits up to limit for every
// broker to park; it reports whether they all did.
func (g *stormGate) close(ctx context.Context, limit time.Duration) bool {
	g.mu.Lock()
	if g.isOpen {
		g.isOpen = false
		g.opened = make(chan struct{})
	}
	g.mu.Unlock()
	deadline := time.Now().Add(limit)
	for g.parked.Load() < int64(g.brokers) {
		if ctx.Err() != nil || time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	g.settled.Store(true)
	return true
}
