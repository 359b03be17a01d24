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
// The gate opens once, for the life of the process, at the first of:
//
//   - every broker named by the latest gate request (POST /routes/gate) is
//     live in this NameServer's own table. The operator names the brokers
//     its serving peers hold; an empty list opens the gate at once;
//   - the request's WaitSeconds after start, when it has them: the operator
//     sends them when no peer serves to vouch for the list (every peer
//     restarted, or the cluster has one replica), naming instead what was
//     live before the restart (the peers' persisted records, see
//     namesrv/liverecord), and an empty list then waits;
//   - the configured timeout after start, whatever was requested.
//
// A request can only open the gate, never close it, and each replaces the
// previous one's list and wait.
//
// needWaitForService: Java answers route queries SYSTEM_ERROR "name server
// not ready" for waitSecondsForService after start, which a client staying
// on this NameServer would take as a failed send. An enabled gate therefore
// never opens before that warm-up ends, whatever opened it: clients get
// transport closes and move on, and never see that answer. Without the gate
// the warm-up behaves as in Java.
package gate

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// What opened a gate (peerstatus.Gate.OpenedBy).
const (
	// OpenedByRequest: every broker of the latest request was live.
	OpenedByRequest = "request"
	// OpenedByWait: the latest request's WaitSeconds after start passed.
	OpenedByWait = "wait"
	// OpenedByTimeout: the configured timeout after start passed.
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
	// WarmUpUntil returns when the warm-up needWaitForService asks for
	// ends, the zero time without one; nil means none. It is read whenever
	// the gate decides, as the setting can change at run time: call
	// Recheck after it changed.
	WarmUpUntil func() time.Time
	// Record is the previous process's record of its live brokers, shown
	// in Status; nil when there is none.
	Record *peerstatus.GateRecord
	// NotLive returns those of keys that are not live in the route table.
	// It is called with the gate's lock held and must not call the gate.
	NotLive func(keys []peerstatus.BrokerKey) []peerstatus.BrokerKey
	Logger  *slog.Logger
}

// Gate is the start-up route gate. A nil *Gate is an open one.
type Gate struct {
	enabled   bool
	start     time.Time
	timeoutAt time.Time
	warmUp    func() time.Time
	record    *peerstatus.GateRecord
	notLive   func([]peerstatus.BrokerKey) []peerstatus.BrokerKey
	log       *slog.Logger

	closed   atomic.Bool
	refusals atomic.Int64
	logEvery rate.Sometimes

	mu        sync.Mutex
	requested bool
	expect    []peerstatus.BrokerKey
	// waitUntil is when the latest request's WaitSeconds end, zero when
	// it had none.
	waitUntil time.Time
	// missing are the expected brokers not yet seen registering while
	// closed; when it empties the table is asked again.
	missing  map[peerstatus.BrokerKey]struct{}
	openedBy string
	// timer runs the next time-driven check while closed.
	timer   *time.Timer
	stopped bool
}

// New returns a gate, closed when enabled, with its timeout running.
func New(o Options) *Gate {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	g := &Gate{
		enabled:   o.Enabled,
		start:     o.Start,
		timeoutAt: o.Start.Add(o.Timeout),
		warmUp:    o.WarmUpUntil,
		record:    o.Record,
		notLive:   o.NotLive,
		log:       o.Logger,
		logEvery:  rate.Sometimes{Interval: time.Second},
	}
	if !o.Enabled {
		return g
	}
	g.closed.Store(true)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.log.Info("route gate closed: client route and KV reads get their connection closed until the expected brokers registered",
		"opensBy", g.deadline(), "previousRecord", g.record != nil)
	g.evaluate()
	return g
}

// Stop stops the timeout; the gate stays as it is.
func (g *Gate) Stop() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped = true
	if g.timer != nil {
		g.timer.Stop()
	}
}

// Closed reports whether clients' route and KV reads are refused. It is
// one atomic load, for the route-query path.
func (g *Gate) Closed() bool { return g != nil && g.closed.Load() }

// Expect is a gate request: open once every one of its brokers is live (at
// once when none is missing or the list is empty, unless WaitSeconds is
// set), or WaitSeconds after start when set. It replaces the previous
// request's list and wait. An open gate stays open.
func (g *Gate) Expect(req peerstatus.GateRequest) {
	if g == nil {
		return
	}
	keys := sortedKeys(req.Expect)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.requested, g.expect, g.waitUntil = true, keys, time.Time{}
	if req.WaitSeconds > 0 {
		g.waitUntil = g.start.Add(time.Duration(req.WaitSeconds) * time.Second)
	}
	if !g.closed.Load() {
		return
	}
	g.missing = nil
	g.evaluate()
	if g.closed.Load() {
		g.log.Info("route gate request: waiting for brokers to register", "expected", len(keys), "missing", len(g.missing),
			"waitSeconds", req.WaitSeconds, "opensBy", g.deadline())
	}
}

// Registered hears of a registration that left a broker live (the route
// table's OnRegister). When it was the last expected broker still missing,
// the gate opens (or will, once the warm-up ends).
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
	if len(g.missing) == 0 {
		g.evaluate()
	}
}

// Recheck decides again, for a change of what WarmUpUntil returns.
func (g *Gate) Recheck() {
	if !g.Closed() {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.evaluate()
}

// evaluate opens a closed gate when something says so and the warm-up is
// over, or else sets the timer for the next moment that may change that;
// g.mu is held.
func (g *Gate) evaluate() {
	if !g.closed.Load() {
		return
	}
	now := time.Now()
	by := ""
	switch selfAt, selfBy := g.selfOpening(); {
	case g.requestMet():
		by = OpenedByRequest
	case !now.Before(selfAt):
		by = selfBy
	}
	warm := g.warmUpEnd()
	if by != "" && !now.Before(warm) {
		g.open(by, now)
		return
	}
	next := g.deadline()
	if by != "" {
		next = warm
	}
	if g.stopped {
		return
	}
	if g.timer != nil {
		g.timer.Stop()
	}
	g.timer = time.AfterFunc(next.Sub(now), g.fire)
}

func (g *Gate) fire() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.evaluate()
}

// requestMet reports whether the latest request opens the gate now: every
// broker of it is live, and it is not a wait with nothing to wait for.
// It asks the table only once no expected broker is known to be missing,
// and remembers those it finds.
func (g *Gate) requestMet() bool {
	if !g.requested || len(g.expect) == 0 && !g.waitUntil.IsZero() || len(g.missing) > 0 {
		return false
	}
	left := g.notLive(g.expect)
	if len(left) == 0 {
		return true
	}
	g.missing = make(map[peerstatus.BrokerKey]struct{}, len(left))
	for _, k := range left {
		g.missing[k] = struct{}{}
	}
	return false
}

// selfOpening is when the gate opens without its request's brokers, and
// by what: the request's wait or the timeout, whichever comes first.
func (g *Gate) selfOpening() (time.Time, string) {
	if g.requested && !g.waitUntil.IsZero() && g.waitUntil.Before(g.timeoutAt) {
		return g.waitUntil, OpenedByWait
	}
	return g.timeoutAt, OpenedByTimeout
}

// deadline is when a closed gate opens whatever registers: its own
// opening, or the end of the warm-up if that is later.
func (g *Gate) deadline() time.Time {
	at, _ := g.selfOpening()
	if warm := g.warmUpEnd(); warm.After(at) {
		return warm
	}
	return at
}

// opensAt is when a closed gate opens if nothing changes: at the end of
// the warm-up when the latest request is met already, else its deadline.
func (g *Gate) opensAt() time.Time {
	at := g.deadline()
	if !g.requested || len(g.expect) == 0 && !g.waitUntil.IsZero() || len(g.notLive(g.expect)) > 0 {
		return at
	}
	if warm := g.warmUpEnd(); warm.Before(at) {
		return warm
	}
	return at
}

func (g *Gate) warmUpEnd() time.Time {
	if g.warmUp == nil {
		return time.Time{}
	}
	return g.warmUp()
}

// open opens the gate; g.mu is held.
func (g *Gate) open(by string, now time.Time) {
	missing := -1
	if g.requested {
		missing = len(g.notLive(g.expect))
	}
	attrs := []any{"by", by, "gateRequested", g.requested, "expected", len(g.expect), "missing", missing,
		"afterStart", now.Sub(g.start).Round(time.Millisecond)}
	switch {
	case by == OpenedByTimeout:
		g.log.Warn("route gate opened by timeout: clients are served although this NameServer may lack routes", attrs...)
	case by == OpenedByWait && missing > 0:
		g.log.Warn("route gate opened after the requested wait: clients are served although brokers live before the restart have not registered", attrs...)
	default:
		g.log.Info("route gate opened: serving clients", attrs...)
	}
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
		d := g.opensAt()
		st.Deadline = &d
	}
	if len(g.expect) > 0 {
		missing := g.notLive(g.expect)
		st.Missing = missing[:min(len(missing), peerstatus.MaxListed)]
	}
	if g.record != nil {
		rec := *g.record
		rec.Brokers = slices.Clone(rec.Brokers)
		st.Record = &rec
	}
	if w := g.warmUpEnd(); !w.IsZero() {
		st.WarmUpUntil = &w
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
	in := time.Until(g.opensAt()).Round(time.Second)
	missing := len(g.notLive(g.expect))
	switch {
	case !g.requested:
		return fmt.Sprintf("route gate closed: waiting for a gate request (POST %s); opens by itself in %s", peerstatus.GatePath, in), true
	case len(g.expect) == 0 && !g.waitUntil.IsZero():
		return fmt.Sprintf("route gate closed: no serving peer to compare with and no broker recorded; waiting for brokers to register; opens by itself in %s", in), true
	case missing == 0:
		return fmt.Sprintf("route gate closed: the gate request is met; waiting for the warm-up to end (needWaitForService) in %s", in), true
	}
	return fmt.Sprintf("route gate closed: %d of %d expected brokers not registered yet; opens by itself in %s",
		missing, len(g.expect), in), true
}

// sortedKeys sorts keys by cluster and address and drops duplicates.
func sortedKeys(keys []peerstatus.BrokerKey) []peerstatus.BrokerKey {
	keys = slices.Clone(keys)
	sort.Slice(keys, func(i, j int) bool {
		return cmp.Or(strings.Compare(keys[i].Cluster, keys[j].Cluster), strings.Compare(keys[i].Addr, keys[j].Addr)) < 0
	})
	return slices.Compact(keys)
}
