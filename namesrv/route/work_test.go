package route

import (
	"testing"
	"time"
)

// TestRegistrationsWaitForAWorkSlot: the writer applying registrations
// takes a work slot after the writers' lock, so with every slot taken (by
// decoding registrations, say) the registration waits, and goes through
// once one is given back.
func TestRegistrationsWaitForAWorkSlot(t *testing.T) {
	tb, _ := newTable(t)
	if n := cap(tb.work); n < 1 {
		t.Fatalf("%d work slots", n)
	}
	for range cap(tb.work) {
		tb.EnterWork()
	}
	done := make(chan RegisterResult)
	go func() { done <- tb.Register(reg("c", "b", 0, "10.0.0.1:1", 1, nil, topics("T:8:8:6")...)) }()
	// The writer holds the lock and waits for a slot.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if !tb.mu.TryLock() {
			break
		}
		tb.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the registration never took the writers' lock")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("the registration was applied without a work slot")
	default:
	}
	tb.LeaveWork()
	if res := <-done; res.Refused {
		t.Fatalf("result %+v", res)
	}
	if route(t, tb, "T", 0) == "" {
		t.Fatal("T has no route")
	}
	for range cap(tb.work) - 1 {
		tb.LeaveWork()
	}
}
