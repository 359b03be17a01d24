// Package gate is the NameServer's start-up route gate.
//
// A NameServer learns routes only from broker registrations, which arrive
// every 30 s. Restarted, it would answer "topic does not exist" until every
// broker has registered again, and a Java client keeps asking the same
// NameServer until a request fails at the transport level; an error answer
// does not make it switch. While the gate is closed the processor therefore
// closes the connection of a client's route or KV read instead of answering,
// and the client moves to another NameServer. Broker connections are always
// served, so brokers can register.
//
// The gate opens once, for the life of the process: when every broker named
// by the latest gate request (POST /routes/gate, sent by the operator with
// the brokers its other peers hold) is live in this NameServer's own table,
// or when the timeout after start passes. A request can only open the gate,
// never close it.
package gate

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// What opened a gate (peerstatus.Gate.OpenedBy).
const (
	OpenedByRequest = "request"
	OpenedByTimeout = "timeout"
)

// Options configure a Gate.
type Options struct {
	// Enabled starts the gate closed; a disabled gate is always open.
	Enabled bool
	// Start is when the process started; the gate opens by itself Timeout
	// after it.
	Start   time.Time
	Timeout time.Duration
	// NotLive returns those of keys that are not live in the route table.
	// It is called with the gate's lock held and must not call the gate.
	NotLive func(keys []peerstatus.BrokerKey) []peerstatus.BrokerKey
	Logger  *slog.Logger
}

// Gate is the start-up route gate. A nil *Gate is an open one.
type Gate struct {
	enabled  bool
	deadline time.Time
	notLive  func([]peerstatus.BrokerKey) []peerstatus.BrokerKey
	log      *slog.Logger
	start    time.Time

	closed   atomic.Bool
	refusals atomic.Int64
	logEvery rate.Sometimes

	mu        sync.Mutex
	requested bool
	expect    []peerstatus.BrokerKey
	// missing are the expected brokers not yet seen registering while
	// closed; when it empties the table is asked again.
	missing  map[peerstatus.BrokerKey]struct{}
	openedBy string
	timer    *time.Timer
}

// New returns a gate, closed when enabled, with its timeout running.
func New(o Options) *Gate {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	g := &Gate{
		enabled:  o.Enabled,
		deadline: o.Start.Add(o.Timeout),
		notLive:  o.NotLive,
		log:      o.Logger,
		start:    o.Start,
		logEvery: rate.Sometimes{Interval: time.Second},
	}
	if !o.Enabled {
		return g
	}
	g.closed.Store(true)
	// Under the lock the timer's callback takes, which may run before
	// AfterFunc returns when the deadline has passed already.
	g.mu.Lock()
	g.timer = time.AfterFunc(time.Until(g.deadline), g.timeout)
	g.mu.Unlock()
	g.log.Info("route gate closed: client route and KV reads get their connection closed until the expected brokers registered",
		"opensBy", g.deadline)
	return g
}

// Stop stops the timeout; the gate stays as it is.
func (g *Gate) Stop() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.timer != nil {
		g.timer.Stop()
	}
}

// Closed reports whether clients' route and KV reads are refused. It is
// one atomic load, for the route-query path.
func (g *Gate) Closed() bool { return g != nil && g.closed.Load() }

// Expect is a gate request: open once every one of keys is live (at once
// when none is missing, or keys is empty). It replaces the previous
// request's list. An open gate stays open.
func (g *Gate) Expect(keys []peerstatus.BrokerKey) {
	if g == nil {
		return
	}
	keys = sortedKeys(keys)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.requested, g.expect = true, keys
	if !g.closed.Load() {
		return
	}
	missing := g.notLive(keys)
	if len(missing) == 0 {
		g.open(OpenedByRequest)
		return
	}
	g.missing = make(map[peerstatus.BrokerKey]struct{}, len(missing))
	for _, k := range missing {
		g.missing[k] = struct{}{}
	}
	g.log.Info("route gate request: waiting for brokers to register", "expected", len(keys), "missing", len(missing))
}

// Registered hears of a registration that left a broker live (the route
// table's OnRegister). When it was the last expected broker still missing,
// the gate opens.
func (g *Gate) Registered(cluster, addr string) {
	if !g.Closed() {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	k := peerstatus.BrokerKey{Cluster: cluster, Addr: addr}
	if _, ok := g.missing[k]; !ok || !g.closed.Load() {
		return
	}
	delete(g.missing, k)
	if len(g.missing) > 0 {
		return
	}
	// Brokers seen earlier may have left since: ask the table.
	if left := g.notLive(g.expect); len(left) > 0 {
		for _, k := range left {
			g.missing[k] = struct{}{}
		}
		return
	}
	g.open(OpenedByRequest)
}

func (g *Gate) timeout() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed.Load() {
		return
	}
	missing := len(g.missing)
	if !g.requested {
		missing = -1
	}
	g.log.Warn("route gate opened by timeout: clients are served although this NameServer may lack routes",
		"timeout", g.deadline.Sub(g.start), "gateRequested", g.requested, "expected", len(g.expect), "missing", missing)
	g.openLocked(OpenedByTimeout)
}

// open opens the gate; g.mu is held.
func (g *Gate) open(by string) {
	g.log.Info("route gate opened: serving clients", "by", by, "expected", len(g.expect),
		"afterStart", time.Since(g.start).Round(time.Millisecond))
	g.openLocked(by)
}

func (g *Gate) openLocked(by string) {
	g.openedBy = by
	g.missing = nil
	g.closed.Store(false)
	if g.timer != nil {
		g.timer.Stop()
	}
}

// Refused records a client request whose connection was closed because
// the gate is closed, logging at most one line a second.
func (g *Gate) Refused(remote string, code int32) {
	n := g.refusals.Add(1)
	g.logEvery.Do(func() {
		g.log.Info("route gate closed: closing a client connection instead of answering",
			"remote", remote, "code", code, "refusals", n)
	})
}

// Refusals counts the requests refused so far.
func (g *Gate) Refusals() int64 {
	if g == nil {
		return 0
	}
	return g.refusals.Load()
}

// Status is the gate's state for the route summary. Missing is computed
// from the route table now, for the latest request's list.
func (g *Gate) Status() peerstatus.Gate {
	if g == nil {
		return peerstatus.Gate{Open: true}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	st := peerstatus.Gate{Enabled: g.enabled, Open: !g.closed.Load(), OpenedBy: g.openedBy, Expected: len(g.expect)}
	if !st.Open {
		d := g.deadline
		st.Deadline = &d
	}
	if len(g.expect) > 0 {
		missing := g.notLive(g.expect)
		st.Missing = missing[:min(len(missing), peerstatus.MaxListed)]
	}
	return st
}

// Waiting says why a closed gate keeps the NameServer unready; false when
// it is open.
func (g *Gate) Waiting() (string, bool) {
	if !g.Closed() {
		return "", false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed.Load() {
		return "", false
	}
	in := time.Until(g.deadline).Round(time.Second)
	if !g.requested {
		return fmt.Sprintf("route gate closed: waiting for a gate request (POST %s); opens by itself in %s", peerstatus.GatePath, in), true
	}
	return fmt.Sprintf("route gate closed: %d of %d expected brokers not registered yet; opens by itself in %s",
		len(g.notLive(g.expect)), len(g.expect), in), true
}

// sortedKeys sorts keys by cluster and address and drops duplicates.
func sortedKeys(keys []peerstatus.BrokerKey) []peerstatus.BrokerKey {
	keys = slices.Clone(keys)
	slices.SortFunc(keys, func(a, b peerstatus.BrokerKey) int {
		return cmp.Or(strings.Compare(a.Cluster, b.Cluster), strings.Compare(a.Addr, b.Addr))
	})
	return slices.Compact(keys)
}
