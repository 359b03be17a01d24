package gate

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
	"github.com/kube-namesrv/kube-namesrv/test/logcapture"
)

// table is a fake live table.
type table struct {
	mu   sync.Mutex
	live map[peerstatus.BrokerKey]bool
}

func (tb *table) notLive(keys []peerstatus.BrokerKey) []peerstatus.BrokerKey {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var out []peerstatus.BrokerKey
	for _, k := range keys {
		if !tb.live[k] {
			out = append(out, k)
		}
	}
	return out
}

// register makes a broker live and tells the gate, as the route table's
// OnRegister does.
func (tb *table) register(g *Gate, k peerstatus.BrokerKey) {
	tb.set(k, true)
	g.Registered(k.Cluster, k.Addr)
}

func (tb *table) set(k peerstatus.BrokerKey, live bool) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.live[k] = live
}

func key(addr string) peerstatus.BrokerKey { return peerstatus.BrokerKey{Cluster: "c", Addr: addr} }

func newGate(t *testing.T, timeout time.Duration, logs *logcapture.Buffer) (*Gate, *table) {
	t.Helper()
	tb := &table{live: map[peerstatus.BrokerKey]bool{}}
	var log *slog.Logger
	if logs != nil {
		log = logs.Logger(slog.LevelInfo)
	}
	g := New(Options{Enabled: true, Start: time.Now(), Timeout: timeout, NotLive: tb.notLive, Logger: log})
	t.Cleanup(g.Stop)
	return g, tb
}

func TestDisabledAndNilGatesAreOpen(t *testing.T) {
	for name, g := range map[string]*Gate{"disabled": New(Options{Timeout: time.Nanosecond}), "nil": nil} {
		if g.Closed() {
			t.Fatalf("%s gate closed", name)
		}
		if st := g.Status(); !st.Open || st.Enabled || st.OpenedBy != "" || st.Deadline != nil {
			t.Fatalf("%s gate status %+v", name, st)
		}
		if _, waiting := g.Waiting(); waiting {
			t.Fatalf("%s gate keeps the server unready", name)
		}
		g.Expect(peerstatus.GateRequest{Expect: []peerstatus.BrokerKey{key("a")}})
		g.Stop()
	}
}

func TestGateOpensWhenTheLastExpectedBrokerRegisters(t *testing.T) {
	g, tb := newGate(t, time.Hour, nil)
	if !g.Closed() {
		t.Fatal("an enabled gate starts open")
	}
	if why, waiting := g.Waiting(); !waiting || !strings.Contains(why, "waiting for a gate request") {
		t.Fatalf("before any request: %q %v", why, waiting)
	}
	// Registrations before any request never open the gate.
	tb.register(g, key("a"))
	if !g.Closed() {
		t.Fatal("a registration opened the gate before any request")
	}

	g.Expect(peerstatus.GateRequest{Expect: []peerstatus.BrokerKey{key("b"), key("a"), key("c"), key("a")}})
	st := g.Status()
	if st.Open || !st.Enabled || st.Expected != 3 || !slices.Equal(st.Missing, []peerstatus.BrokerKey{key("b"), key("c")}) || st.Deadline == nil {
		t.Fatalf("status %+v", st)
	}
	if why, _ := g.Waiting(); !strings.Contains(why, "2 of 3 expected brokers") {
		t.Fatalf("readiness reason %q", why)
	}
	tb.register(g, key("b"))
	tb.register(g, key("unexpected"))
	if !g.Closed() {
		t.Fatal("opened with c still missing")
	}
	tb.register(g, key("c"))
	if g.Closed() {
		t.Fatal("still closed once every expected broker is live")
	}
	st = g.Status()
	if !st.Open || st.OpenedBy != OpenedByRequest || st.Deadline != nil || st.Expected != 3 || len(st.Missing) != 0 {
		t.Fatalf("open status %+v", st)
	}

	// An open gate stays open, whatever the next request or table says.
	tb.set(key("a"), false)
	g.Expect(peerstatus.GateRequest{Expect: []peerstatus.BrokerKey{key("a"), key("z")}})
	if g.Closed() {
		t.Fatal("a request closed an open gate")
	}
	if st := g.Status(); st.Expected != 2 || len(st.Missing) != 2 {
		t.Fatalf("missing of an open gate's latest request: %+v", st)
	}
}

func TestGateRequestWhoseBrokersAreLiveOpensAtOnce(t *testing.T) {
	for name, keys := range map[string][]peerstatus.BrokerKey{"empty": nil, "live": {key("a")}} {
		t.Run(name, func(t *testing.T) {
			g, tb := newGate(t, time.Hour, nil)
			tb.set(key("a"), true)
			g.Expect(peerstatus.GateRequest{Expect: keys})
			if g.Closed() || g.Status().OpenedBy != OpenedByRequest {
				t.Fatalf("status %+v", g.Status())
			}
		})
	}
}

func TestEachRequestReplacesTheList(t *testing.T) {
	g, tb := newGate(t, time.Hour, nil)
	g.Expect(peerstatus.GateRequest{Expect: []peerstatus.BrokerKey{key("a"), key("b")}})
	g.Expect(peerstatus.GateRequest{Expect: []peerstatus.BrokerKey{key("c")}})
	tb.register(g, key("a"))
	tb.register(g, key("b"))
	if !g.Closed() {
		t.Fatal("opened for the brokers of a replaced request")
	}
	tb.register(g, key("c"))
	if g.Closed() {
		t.Fatal("closed with the latest request's brokers live")
	}
}

func TestABrokerThatLeftAgainKeepsTheGateClosed(t *testing.T) {
	g, tb := newGate(t, time.Hour, nil)
	g.Expect(peerstatus.GateRequest{Expect: []peerstatus.BrokerKey{key("a"), key("b")}})
	tb.register(g, key("a"))
	tb.set(key("a"), false) // evicted again
	tb.register(g, key("b"))
	if !g.Closed() {
		t.Fatal("opened although a is no longer live")
	}
	if st := g.Status(); !slices.Equal(st.Missing, []peerstatus.BrokerKey{key("a")}) {
		t.Fatalf("missing %v", st.Missing)
	}
	tb.register(g, key("a"))
	if g.Closed() {
		t.Fatal("still closed after a came back")
	}
}

func TestGateOpensByTimeout(t *testing.T) {
	var logs logcapture.Buffer
	g, _ := newGate(t, 50*time.Millisecond, &logs)
	g.Expect(peerstatus.GateRequest{Expect: []peerstatus.BrokerKey{key("a")}})
	deadline := time.Now().Add(5 * time.Second)
	for g.Closed() {
		if time.Now().After(deadline) {
			t.Fatal("the timeout never opened the gate")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := g.Status(); st.OpenedBy != OpenedByTimeout || st.Deadline != nil {
		t.Fatalf("status %+v", st)
	}
	if l := logs.Lines("level=WARN", "opened by timeout", "missing=1"); len(l) != 1 {
		t.Fatalf("want one Warn line, logs:\n%s", logs.String())
	}
}

func TestMissingIsBounded(t *testing.T) {
	g, _ := newGate(t, time.Hour, nil)
	var keys []peerstatus.BrokerKey
	for i := range 3 * peerstatus.MaxListed {
		keys = append(keys, key(fmt.Sprintf("10.0.0.%d:10911", i)))
	}
	g.Expect(peerstatus.GateRequest{Expect: keys})
	if st := g.Status(); st.Expected != len(keys) || len(st.Missing) != peerstatus.MaxListed {
		t.Fatalf("expected %d, missing listed %d", st.Expected, len(st.Missing))
	}
}

func TestRefusalsAreCountedAndLogRateLimited(t *testing.T) {
	var logs logcapture.Buffer
	g, _ := newGate(t, time.Hour, &logs)
	for range 100 {
		g.Refused("127.0.0.1:4242", 105)
	}
	if g.Refusals() != 100 {
		t.Fatalf("refusals %d", g.Refusals())
	}
	if l := logs.Lines("level=INFO", "closing a client connection", "remote=127.0.0.1:4242", "code=105"); len(l) != 1 {
		t.Fatalf("want one Info line for 100 refusals within a second, logs:\n%s", logs.String())
	}
}

func TestConcurrentRequestsAndRegistrations(t *testing.T) {
	g, tb := newGate(t, time.Hour, nil)
	var keys []peerstatus.BrokerKey
	for i := range 50 {
		keys = append(keys, key(fmt.Sprintf("b%d", i)))
	}
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Go(func() { tb.register(g, k) })
	}
	wg.Go(func() { g.Expect(peerstatus.GateRequest{Expect: keys}) })
	wg.Go(func() { g.Status() })
	wg.Wait()
	// Whatever the interleaving, every broker is live and the request is
	// in: the gate must be open.
	if g.Closed() {
		t.Fatalf("closed with every expected broker live: %+v", g.Status())
	}
}

func TestDeadlineAlreadyPast(t *testing.T) {
	tb := &table{live: map[peerstatus.BrokerKey]bool{}}
	g := New(Options{Enabled: true, Start: time.Now().Add(-time.Hour), Timeout: time.Second, NotLive: tb.notLive})
	defer g.Stop()
	deadline := time.Now().Add(5 * time.Second)
	for g.Closed() {
		if time.Now().After(deadline) {
			t.Fatal("a gate whose deadline has passed stays closed")
		}
		time.Sleep(time.Millisecond)
	}
}
