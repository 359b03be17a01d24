package gate

import (
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
	"github.com/kube-namesrv/kube-namesrv/test/logcapture"
)

// These tests run in a synctest bubble: time is fake and moves only when
// every goroutine of the test waits, so "just before" and "just after" a
// deadline are exact, and nothing sleeps for real.

const (
	timeout = 90 * time.Second
	wait    = 40 // WaitSeconds of a request without a reference peer
)

// fakeWarmUp is needWaitForService as the live configuration says it.
type fakeWarmUp struct{ until atomic.Pointer[time.Time] }

func (w *fakeWarmUp) get() time.Time {
	if p := w.until.Load(); p != nil {
		return *p
	}
	return time.Time{}
}

func (w *fakeWarmUp) set(t time.Time) { w.until.Store(&t) }

type gateEnv struct {
	g      *Gate
	tb     *table
	warm   *fakeWarmUp
	start  time.Time
	logs   *logcapture.Buffer
	record *peerstatus.GateRecord
}

// newBubbleGate starts an enabled gate now; call it inside the bubble.
func newBubbleGate(t *testing.T, record *peerstatus.GateRecord) *gateEnv {
	t.Helper()
	e := &gateEnv{tb: &table{live: map[peerstatus.BrokerKey]bool{}}, warm: &fakeWarmUp{}, start: time.Now(),
		logs: &logcapture.Buffer{}, record: record}
	e.g = New(Options{Enabled: true, Start: e.start, Timeout: timeout, WarmUpUntil: e.warm.get, Record: record,
		NotLive: e.tb.notLive, Logger: e.logs.Logger(slog.LevelInfo)})
	t.Cleanup(e.g.Stop)
	return e
}

// at moves the fake clock to d after start and lets the gate's timer run.
func (e *gateEnv) at(d time.Duration) {
	time.Sleep(time.Until(e.start.Add(d)))
	synctest.Wait()
}

func (e *gateEnv) wantClosed(t *testing.T, when string) {
	t.Helper()
	if !e.g.Closed() {
		t.Fatalf("%s: open (%+v), want closed", when, e.g.Status())
	}
}

func (e *gateEnv) wantOpen(t *testing.T, when, by string) {
	t.Helper()
	if st := e.g.Status(); e.g.Closed() || st.OpenedBy != by || st.Deadline != nil {
		t.Fatalf("%s: %+v, want open by %q", when, st, by)
	}
}

// TestGateWithoutAReferencePeer pins the gate of a request with
// WaitSeconds (no serving peer vouches for its list).
func TestGateWithoutAReferencePeer(t *testing.T) {
	waitAt, regAt := time.Duration(wait)*time.Second, 10*time.Second
	tests := []struct {
		name string
		// live are the brokers registered before the request.
		live   []string
		expect []string
		// register are registered at regAt after start.
		register []string
		// want is what opens the gate and when.
		by     string
		openAt time.Duration
	}{
		{name: "nothing recorded waits the WaitSeconds", by: OpenedByWait, openAt: waitAt},
		{name: "nothing recorded, brokers registering do not open it", register: []string{"a"}, by: OpenedByWait, openAt: waitAt},
		{name: "recorded brokers all live at the request", live: []string{"a", "b"}, expect: []string{"a", "b"}, by: OpenedByRequest, openAt: 0},
		{name: "recorded brokers register", live: []string{"a"}, expect: []string{"a", "b"}, register: []string{"b"}, by: OpenedByRequest, openAt: regAt},
		{name: "a recorded broker never comes back", live: []string{"a"}, expect: []string{"a", "b"}, by: OpenedByWait, openAt: waitAt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newBubbleGate(t, nil)
				for _, a := range tt.live {
					e.tb.register(e.g, key(a))
				}
				var keys []peerstatus.BrokerKey
				for _, a := range tt.expect {
					keys = append(keys, key(a))
				}
				e.g.Expect(peerstatus.GateRequest{Expect: keys, WaitSeconds: wait})
				if tt.openAt == 0 {
					e.wantOpen(t, "at the request", tt.by)
					return
				}
				st := e.g.Status()
				if st.Deadline == nil || !st.Deadline.Equal(e.start.Add(waitAt)) {
					t.Fatalf("deadline %v, want start+%s", st.Deadline, waitAt)
				}
				if why, _ := e.g.Waiting(); len(keys) == 0 && !strings.Contains(why, "no serving peer") {
					t.Fatalf("readiness reason %q", why)
				}
				e.at(regAt - time.Millisecond)
				e.wantClosed(t, "before the registrations")
				e.at(regAt)
				for _, a := range tt.register {
					e.tb.register(e.g, key(a))
				}
				if tt.openAt > regAt {
					e.at(tt.openAt - time.Millisecond)
					e.wantClosed(t, "just before")
					e.at(tt.openAt)
				}
				e.wantOpen(t, "at the time", tt.by)
				warned := len(e.logs.Lines("level=WARN", "after the requested wait")) > 0
				if want := tt.by == OpenedByWait && len(tt.expect) > 0; warned != want {
					t.Fatalf("warned %v, want %v; logs:\n%s", warned, want, e.logs.String())
				}
			})
		})
	}
}

// TestGateWithAReferencePeer: a request without WaitSeconds keeps the
// semantics from before, an empty list included.
func TestGateWithAReferencePeer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleGate(t, nil)
		e.g.Expect(peerstatus.GateRequest{Expect: []peerstatus.BrokerKey{key("a")}})
		e.at(timeout - time.Millisecond)
		e.wantClosed(t, "just before the timeout")
		e.tb.register(e.g, key("a"))
		e.wantOpen(t, "once a registered", OpenedByRequest)
	})
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleGate(t, nil)
		e.g.Expect(peerstatus.GateRequest{})
		e.wantOpen(t, "an empty request", OpenedByRequest)
	})
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleGate(t, nil)
		e.g.Expect(peerstatus.GateRequest{Expect: []peerstatus.BrokerKey{key("a")}})
		e.at(timeout)
		e.wantOpen(t, "at the timeout", OpenedByTimeout)
	})
}

// TestGateRequestsReplaceTheWait: a later request with a reference peer
// replaces a wait; the timeout bounds a wait longer than itself; a wait
// already over opens the gate at once.
func TestGateRequestsReplaceTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleGate(t, nil)
		e.g.Expect(peerstatus.GateRequest{WaitSeconds: wait})
		e.at(time.Second)
		e.wantClosed(t, "waiting")
		e.g.Expect(peerstatus.GateRequest{})
		e.wantOpen(t, "a reference peer with no broker", OpenedByRequest)
	})
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleGate(t, nil)
		e.g.Expect(peerstatus.GateRequest{Expect: []peerstatus.BrokerKey{key("a")}, WaitSeconds: wait})
		e.g.Expect(peerstatus.GateRequest{Expect: []peerstatus.BrokerKey{key("a")}})
		e.at(time.Duration(wait) * time.Second)
		e.wantClosed(t, "the replaced request's wait")
		if st := e.g.Status(); !st.Deadline.Equal(e.start.Add(timeout)) {
			t.Fatalf("deadline %v, want the timeout", st.Deadline)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleGate(t, nil)
		e.g.Expect(peerstatus.GateRequest{WaitSeconds: int(2 * timeout / time.Second)})
		e.at(timeout - time.Millisecond)
		e.wantClosed(t, "just before the timeout")
		e.at(timeout)
		e.wantOpen(t, "a wait longer than the timeout", OpenedByTimeout)
	})
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleGate(t, nil)
		e.at(time.Duration(wait+1) * time.Second)
		e.g.Expect(peerstatus.GateRequest{Expect: []peerstatus.BrokerKey{key("a")}, WaitSeconds: wait})
		e.wantOpen(t, "a wait already over", OpenedByWait)
	})
}

func TestGateShowsThePreviousRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleGate(t, nil)
		if st := e.g.Status(); st.Record != nil {
			t.Fatalf("record without one: %+v", st.Record)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		rec := &peerstatus.GateRecord{RecordedAt: time.Now().Add(-time.Minute), Brokers: []peerstatus.BrokerKey{key("a"), key("b")}}
		e := newBubbleGate(t, rec)
		st := e.g.Status()
		if st.Record == nil || !st.Record.RecordedAt.Equal(rec.RecordedAt) || !slices.Equal(st.Record.Brokers, rec.Brokers) {
			t.Fatalf("record %+v", st.Record)
		}
		st.Record.Brokers[0] = key("changed")
		if e.g.Status().Record.Brokers[0] != key("a") {
			t.Fatal("a caller changed the gate's record")
		}
		// The record is shown, not acted on: the operator names its
		// brokers in a request.
		e.at(time.Duration(wait) * time.Second)
		e.wantClosed(t, "no request")
	})
}

// TestGateWaitsForTheWarmUp: with needWaitForService, whatever opens the
// gate, it opens no earlier than the warm-up's end.
func TestGateWaitsForTheWarmUp(t *testing.T) {
	warmUp := 2 * timeout
	tests := []struct {
		name    string
		request *peerstatus.GateRequest
		by      string
	}{
		{"request met at once", &peerstatus.GateRequest{}, OpenedByRequest},
		{"request met later", &peerstatus.GateRequest{Expect: []peerstatus.BrokerKey{key("a")}}, OpenedByRequest},
		{"wait", &peerstatus.GateRequest{WaitSeconds: wait}, OpenedByWait},
		{"timeout", nil, OpenedByTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newBubbleGate(t, nil)
				e.warm.set(e.start.Add(warmUp))
				e.g.Recheck()
				if tt.request != nil {
					e.g.Expect(*tt.request)
				}
				e.at(time.Second)
				e.tb.register(e.g, key("a"))
				st := e.g.Status()
				if st.WarmUpUntil == nil || !st.WarmUpUntil.Equal(e.start.Add(warmUp)) || st.Deadline == nil || !st.Deadline.Equal(*st.WarmUpUntil) {
					t.Fatalf("status %+v", st)
				}
				if why, _ := e.g.Waiting(); tt.by == OpenedByRequest && !strings.Contains(why, "warm-up") {
					t.Fatalf("readiness reason %q", why)
				}
				e.at(warmUp - time.Millisecond)
				e.wantClosed(t, "just before the warm-up ends")
				e.at(warmUp)
				e.wantOpen(t, "at the warm-up's end", tt.by)
				if st := e.g.Status(); st.WarmUpUntil == nil {
					t.Fatal("an open gate no longer shows the warm-up")
				}
			})
		})
	}
}

// TestGateFollowsAWarmUpChange: needWaitForService is a live setting; a
// shorter warm-up takes effect at Recheck, a longer one holds the gate.
func TestGateFollowsAWarmUpChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleGate(t, nil)
		e.warm.set(e.start.Add(time.Hour))
		e.g.Expect(peerstatus.GateRequest{})
		e.at(time.Minute)
		e.wantClosed(t, "warming up")
		e.warm.set(e.start.Add(30 * time.Second))
		e.g.Recheck()
		e.wantOpen(t, "the warm-up was shortened to an end already past", OpenedByRequest)
	})
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleGate(t, nil)
		e.g.Expect(peerstatus.GateRequest{Expect: []peerstatus.BrokerKey{key("a")}})
		e.warm.set(e.start.Add(time.Minute))
		e.g.Recheck()
		e.tb.register(e.g, key("a"))
		e.wantClosed(t, "warm-up switched on before the last broker came")
		if st := e.g.Status(); !st.Deadline.Equal(e.start.Add(time.Minute)) {
			t.Fatalf("deadline %v of a met request, want the warm-up's end", st.Deadline)
		}
		// A broker that left during the warm-up is waited for again.
		e.tb.set(key("a"), false)
		e.at(time.Minute)
		e.wantClosed(t, "the expected broker left during the warm-up")
		e.tb.register(e.g, key("a"))
		e.wantOpen(t, "it came back", OpenedByRequest)
	})
}

func TestDisabledGateShowsTheWarmUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWarmUp{}
		w.set(time.Now().Add(time.Minute))
		g := New(Options{Start: time.Now(), Timeout: timeout, WarmUpUntil: w.get, NotLive: (&table{}).notLive})
		if st := g.Status(); !st.Open || st.WarmUpUntil == nil || st.Deadline != nil {
			t.Fatalf("status %+v", st)
		}
	})
}
