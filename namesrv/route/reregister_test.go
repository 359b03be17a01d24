package route

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
)

// repeat is r as its broker sends it again: the same fingerprint and
// header, no body (Reregister must not need one).
func repeat(r *Registration) *Registration {
	cp := *r
	cp.Body = nil
	return &cp
}

func manyTopics(prefix string, n int) []string {
	specs := make([]string, n)
	for i := range specs {
		specs[i] = fmt.Sprintf("%s-%05d:8:8:6", prefix, i)
	}
	return specs
}

// TestSameVersionRegistrationBuildsNoViews is the scale property of a
// broker's periodic re-registration: neither the repeat recognised by its
// fingerprint nor a same-version registration with other bytes rebuilds a
// single view of a 10,000-topic broker.
func TestSameVersionRegistrationBuildsNoViews(t *testing.T) {
	tb, c := newTable(t)
	first := reg("c", "b", 0, "10.0.0.1:10911", 1, nil, topics(manyTopics("T", 10000)...)...)
	first.Fingerprint = 7
	tb.Register(first)
	built := tb.Stats().ViewsBuilt
	if built != 10000 {
		t.Fatalf("first registration built %d views, want 10000", built)
	}

	c.advance(100 * time.Second)
	if _, ok := tb.Reregister(repeat(first)); !ok {
		t.Fatal("an unchanged repeat was not recognised")
	}
	s := tb.Stats()
	if s.ViewsBuilt != built || s.UnchangedRegistrations != 1 || s.Registrations != 2 {
		t.Errorf("after the repeat: %d views built (want %d), %d unchanged, %d registrations", s.ViewsBuilt, built, s.UnchangedRegistrations, s.Registrations)
	}
	// The repeat refreshed liveness: 100 s + 100 s is past the 120 s expiry
	// of the first registration, not of the repeat.
	c.advance(100 * time.Second)
	if n := tb.ScanExpired(); n != 0 {
		t.Fatalf("the repeat did not refresh liveness: %d evicted", n)
	}

	// Same DataVersion, other bytes (a new fingerprint): decoded and
	// applied, and still no view is rebuilt.
	again := reg("c", "b", 0, "10.0.0.1:10911", 1, nil, topics(manyTopics("T", 10000)...)...)
	again.Fingerprint = 8
	if _, ok := tb.Reregister(repeat(again)); ok {
		t.Fatal("a new fingerprint was taken for a repeat")
	}
	tb.Register(again)
	if s := tb.Stats(); s.ViewsBuilt != built {
		t.Errorf("a same-version registration built %d views", s.ViewsBuilt-built)
	}
}

// TestReregisterRefusesWhatItCannotVouchFor lists every change between two
// identical registrations that makes the repeat a full registration again,
// and checks what that full registration then restores.
func TestReregisterRefusesWhatItCannotVouchFor(t *testing.T) {
	const master, slave = "10.0.0.1:10911", "10.0.0.2:10911"
	for _, tt := range []struct {
		name string
		// between changes the table after the first registrations; it
		// returns the registration to repeat.
		between func(tb *Table, m, s *Registration) *Registration
		// repeats is whether the repeat is still recognised.
		repeats bool
		// check runs after the repeat was applied, in full if refused.
		check func(t *testing.T, tb *Table)
	}{
		{name: "nothing changed", repeats: true,
			between: func(_ *Table, m, _ *Registration) *Registration { return m }},
		{name: "the slave repeats after its master's topics changed", repeats: true,
			between: func(tb *Table, m, s *Registration) *Registration {
				tb.DeleteTopic("T2", "c")
				return s
			}},
		{name: "a topic deleted by an admin is restored",
			between: func(tb *Table, m, _ *Registration) *Registration {
				tb.DeleteTopic("T2", "c")
				return m
			},
			check: func(t *testing.T, tb *Table) {
				if route(t, tb, "T2", fjson.Standard) == "" {
					t.Error("T2 was not restored by the broker's registration")
				}
			}},
		{name: "a topic registered by an admin on the broker name",
			between: func(tb *Table, m, _ *Registration) *Registration {
				tb.RegisterTopic("X", []body.QueueData{{BrokerName: "b", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}})
				return m
			}},
		{name: "write permission wiped stays wiped",
			between: func(tb *Table, m, _ *Registration) *Registration {
				tb.WipeWritePerm("b")
				return m
			},
			check: func(t *testing.T, tb *Table) {
				rd, _ := tb.RouteData("T1")
				if rd.QueueDatas[0].Perm != 4 {
					t.Errorf("perm %d after the heartbeat, want 4 (read only)", rd.QueueDatas[0].Perm)
				}
			}},
		{name: "topic pruning switched on",
			between: func(tb *Table, m, _ *Registration) *Registration {
				tb.SetDeleteTopicWithBrokerRegistration(true)
				return m
			}},
		{name: "the broker was unregistered",
			between: func(tb *Table, m, _ *Registration) *Registration {
				tb.Unregister(Unregistration{Cluster: "c", BrokerAddr: master, BrokerName: "b"})
				return m
			}},
		{name: "the address registers under another id",
			between: func(_ *Table, m, _ *Registration) *Registration {
				cp := *m
				cp.BrokerID = 3
				return &cp
			}},
		{name: "the zone changed",
			between: func(_ *Table, m, _ *Registration) *Registration {
				cp := *m
				cp.ZoneName = "z2"
				return &cp
			}},
		{name: "another body",
			between: func(_ *Table, m, _ *Registration) *Registration {
				cp := *m
				cp.Fingerprint++
				return &cp
			}},
		{name: "no fingerprint",
			between: func(_ *Table, m, _ *Registration) *Registration {
				cp := *m
				cp.Fingerprint = 0
				return &cp
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tb, _ := newTable(t)
			m := reg("c", "b", 0, master, 1, nil, topics("T1:8:8:6", "T2:8:8:6")...)
			m.Fingerprint = 11
			s := reg("c", "b", 1, slave, 1, nil, topics("T1:8:8:6", "T2:8:8:6")...)
			s.Fingerprint = 12
			tb.Register(m)
			tb.Register(s)
			r := tt.between(tb, m, s)
			built := tb.Stats().ViewsBuilt
			res, ok := tb.Reregister(repeat(r))
			if ok != tt.repeats {
				t.Fatalf("Reregister recognised the repeat: %v, want %v", ok, tt.repeats)
			}
			if ok {
				if got := tb.Stats().ViewsBuilt; got != built {
					t.Errorf("a recognised repeat built %d views", got-built)
				}
				if r.BrokerID != 0 && res.MasterAddr != master {
					t.Errorf("the slave's repeat was not told its master: %+v", res)
				}
			} else {
				if tb.Stats().ViewsBuilt != built {
					t.Error("a refused repeat changed the table")
				}
				tb.Register(r)
				if _, ok := tb.Reregister(repeat(r)); !ok && r.Fingerprint != 0 {
					t.Error("after the full registration, its repeat is still refused")
				}
			}
			if tt.check != nil {
				tt.check(t, tb)
			}
		})
	}
}

// TestNewVersionRebuildsOnlyChangedTopics: a registration with a new
// DataVersion in which 10 of a broker's 10,000 topics changed rebuilds
// those 10 views, and one in which none changed rebuilds none.
func TestNewVersionRebuildsOnlyChangedTopics(t *testing.T) {
	tb, _ := newTable(t)
	specs := manyTopics("T", 10000)
	tb.Register(reg("c", "b", 0, "10.0.0.1:10911", 1, nil, topics(specs...)...))
	built := tb.Stats().ViewsBuilt
	tb.Register(reg("c", "b", 0, "10.0.0.1:10911", 2, nil, topics(specs...)...))
	if got := tb.Stats().ViewsBuilt - built; got != 0 {
		t.Fatalf("a new version with nothing changed built %d views", got)
	}
	changed := slices.Clone(specs)
	for i := range 10 {
		changed[i*1000] = fmt.Sprintf("T-%05d:8:16:6", i*1000)
	}
	tb.Register(reg("c", "b", 0, "10.0.0.1:10911", 3, nil, topics(changed...)...))
	if got := tb.Stats().ViewsBuilt - built; got != 10 {
		t.Fatalf("10 changed topics built %d views", got)
	}
	rd, _ := tb.RouteData("T-01000")
	if rd.QueueDatas[0].WriteQueueNums != 16 {
		t.Errorf("changed topic has %d write queues, want 16", rd.QueueDatas[0].WriteQueueNums)
	}
}

// TestRegistrationsWaitingForTheLockAreAppliedInOneWrite queues 50
// registrations of broker groups that share their topics behind a held
// writers' lock: they are applied maxBatch at a time, each shared topic gets
// one new view per batch rather than 50, and every registrant gets its own
// answer.
func TestRegistrationsWaitingForTheLockAreAppliedInOneWrite(t *testing.T) {
	tb, _ := newTable(t)
	const groups = 50
	tb.Register(reg("c", "g00", 0, "m:0", 1, nil, topics("S1:8:8:6", "S2:8:8:6")...))
	built := tb.Stats().ViewsBuilt

	tb.mu.Lock()
	results := make([]RegisterResult, groups)
	done := make(chan struct{})
	for i := range groups {
		go func() {
			defer func() { done <- struct{}{} }()
			if i == 0 {
				results[i] = tb.Register(reg("c", "g00", 1, "s:0", 1, nil))
				return
			}
			name := fmt.Sprintf("g%02d", i)
			results[i] = tb.Register(reg("c", name, 0, "m:"+name, 1, nil, topics("S1:8:8:6", "S2:8:8:6", name+":1:1:6")...))
		}()
	}
	for {
		tb.queueMu.Lock()
		n := len(tb.queue)
		tb.queueMu.Unlock()
		if n == groups {
			break
		}
		time.Sleep(time.Millisecond)
	}
	tb.mu.Unlock()
	for range groups {
		<-done
	}

	// S1 and S2 once per batch of maxBatch, and the 49 topics of their own.
	batches := (groups + maxBatch - 1) / maxBatch
	if got, want := tb.Stats().ViewsBuilt-built, int64(2*batches+groups-1); got != want {
		t.Errorf("the batches built %d views, want %d", got, want)
	}
	if results[0].MasterAddr != "m:0" {
		t.Errorf("the slave was not told its master: %+v", results[0])
	}
	rd, ok := tb.RouteData("S1")
	if !ok || len(rd.QueueDatas) != groups || len(rd.BrokerDatas) != groups {
		t.Fatalf("S1 has %d queue datas and %d groups, want %d", len(rd.QueueDatas), len(rd.BrokerDatas), groups)
	}
	for i := 1; i < len(rd.QueueDatas); i++ {
		if rd.QueueDatas[i-1].BrokerName >= rd.QueueDatas[i].BrokerName {
			t.Fatalf("queue datas out of order: %v", rd.QueueDatas)
		}
	}
	if s := tb.Stats(); s.Registrations != groups+1 || s.LiveBrokers != groups+1 {
		t.Errorf("stats %+v", s)
	}
}

// TestAFailingRegistrationFailsItsBatchWithoutHangingIt: a registration
// that panics while its batch is applied (here, one without a body) fails
// every registration of the batch, which were not committed, and none of
// their registrants is left waiting.
func TestAFailingRegistrationFailsItsBatchWithoutHangingIt(t *testing.T) {
	tb, _ := newTable(t)
	tb.mu.Lock()
	bad := reg("c", "bad", 0, "b:1", 1, nil)
	bad.Body = nil
	regs := []*Registration{reg("c", "good", 0, "g:1", 1, nil, topics("T1:1:1:6", "T2:1:1:6")...), bad}
	panics := make(chan any, len(regs))
	for _, r := range regs {
		go func() {
			defer func() { panics <- recover() }()
			tb.Register(r)
		}()
	}
	for {
		tb.queueMu.Lock()
		n := len(tb.queue)
		tb.queueMu.Unlock()
		if n == len(regs) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	tb.mu.Unlock()
	for range regs {
		select {
		case p := <-panics:
			if p == nil {
				t.Error("a registration of the failed batch returned normally")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a registrant of the failed batch is still waiting")
		}
	}
	// The table takes registrations again.
	if res := tb.Register(reg("c", "after", 0, "a:1", 1, nil, topics("A1:1:1:6", "A2:1:1:6")...)); res.Refused {
		t.Fatal("refused after the failed batch")
	}
	if route(t, tb, "A1", fjson.Standard) == "" {
		t.Error("no route after the failed batch")
	}
}
