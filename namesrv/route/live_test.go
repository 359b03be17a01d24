package route

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
)

func TestLiveBrokersExport(t *testing.T) {
	tb, clk := newTable(t)
	if got := tb.LiveBrokers(); len(got) != 0 {
		t.Fatalf("empty table exports %v", got)
	}
	start := clk.Now()
	ch := &fakeChannel{}
	tb.Register(reg("c2", "b", 0, "z:1", 1, ch, topics("T:1:1:6", "U:1:1:6")...))
	tb.Register(reg("c1", "b", 1, "y:1", 1, ch))
	tb.Register(reg("c2", "a", 0, "a:1", 1, ch, topics("T:1:1:6", "U:1:1:6")...))
	want := []AddrKey{{"c1", "y:1"}, {"c2", "a:1"}, {"c2", "z:1"}}
	got := tb.LiveBrokers()
	var keys []AddrKey
	for _, b := range got {
		keys = append(keys, b.AddrKey)
	}
	if !slices.Equal(keys, want) {
		t.Fatalf("order %v, want %v", keys, want)
	}
	if b := got[0]; b.BrokerName != "b" || b.BrokerID != 1 || b.DataVersion != (body.DataVersion{Counter: 1, Timestamp: 1}) ||
		!b.RegisteredAt.Equal(start) || !b.LastUpdate.Equal(start) {
		t.Fatalf("entry %+v", b)
	}

	// Re-registrations and heartbeats move LastUpdate and the version,
	// never RegisteredAt.
	clk.advance(30 * time.Second)
	tb.Register(reg("c2", "b", 0, "z:1", 7, ch, topics("T:1:1:6", "U:1:1:6")...))
	clk.advance(5 * time.Second)
	tb.Heartbeat(AddrKey{"c2", "z:1"})
	z := tb.LiveBrokers()[2]
	if !z.RegisteredAt.Equal(start) || !z.LastUpdate.Equal(start.Add(35*time.Second)) || z.DataVersion.Counter != 7 {
		t.Fatalf("after a re-registration %+v", z)
	}

	// Once absent, the next registration starts a new entry.
	tb.Unregister(Unregistration{Cluster: "c2", BrokerAddr: "z:1", BrokerName: "b"})
	clk.advance(time.Second)
	tb.Register(reg("c2", "b", 0, "z:1", 7, ch, topics("T:1:1:6", "U:1:1:6")...))
	if z := tb.LiveBrokers()[2]; !z.RegisteredAt.Equal(start.Add(36 * time.Second)) {
		t.Fatalf("after an absence RegisteredAt = %v, want the new registration", z.RegisteredAt)
	}
}

func TestNotLive(t *testing.T) {
	tb, _ := newTable(t)
	tb.Register(reg("c", "b", 0, "m:1", 1, nil, topics("T:1:1:6", "U:1:1:6")...))
	got := tb.NotLive([]AddrKey{{"c", "s:1"}, {"c", "m:1"}, {"other", "m:1"}})
	if want := []AddrKey{{"c", "s:1"}, {"other", "m:1"}}; !slices.Equal(got, want) {
		t.Fatalf("NotLive = %v, want %v", got, want)
	}
	if got := tb.NotLive(nil); got != nil {
		t.Fatalf("NotLive(nil) = %v", got)
	}
}

func TestOnRegisterHearsLiveRegistrationsOnly(t *testing.T) {
	var mu sync.Mutex
	var heard []AddrKey
	var tb *Table
	tb = New(Options{OnRegister: func(cluster, addr string) {
		// The hook runs outside the writers' lock: it may query the table.
		if len(tb.NotLive([]AddrKey{{cluster, addr}})) != 0 {
			t.Errorf("%s/%s heard of but not live", cluster, addr)
		}
		mu.Lock()
		heard = append(heard, AddrKey{cluster, addr})
		mu.Unlock()
	}})
	tb.Register(reg("c", "b", 0, "m:1", 1, nil, topics("T:1:1:6", "U:1:1:6")...))
	tb.Register(reg("c", "b", 0, "m:1", 1, nil, topics("T:1:1:6", "U:1:1:6")...))
	refused := reg("c", "n", 0, "n:1", 1, nil, topics("T:1:1:6")...)
	refused.Modern = true
	if !tb.Register(refused).Refused {
		t.Fatal("a first single-topic 5.x registration was not refused")
	}
	if want := []AddrKey{{"c", "m:1"}, {"c", "m:1"}}; !slices.Equal(heard, want) {
		t.Fatalf("heard %v, want %v", heard, want)
	}
}

func TestProbeLock(t *testing.T) {
	tb, _ := newTable(t)
	if err := tb.ProbeLock(context.Background()); err != nil {
		t.Fatal(err)
	}
	tb.mu.Lock()
	var waiting chan struct{}
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		if err := tb.ProbeLock(ctx); err == nil {
			t.Fatal("the lock is held, yet the probe succeeded")
		}
		cancel()
		tb.lockProbe.mu.Lock()
		ch := tb.lockProbe.taken
		tb.lockProbe.mu.Unlock()
		if waiting != nil && ch != waiting {
			t.Fatal("a second goroutine waits for the lock")
		}
		waiting = ch
	}
	tb.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tb.ProbeLock(ctx); err != nil {
		t.Fatalf("after release: %v", err)
	}
}
