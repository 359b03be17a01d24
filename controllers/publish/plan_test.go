package publish

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func readyOrdinals(ordinals ...int32) func(int32) bool {
	return func(o int32) bool {
		for _, r := range ordinals {
			if r == o {
				return true
			}
		}
		return false
	}
}

func TestDecide(t *testing.T) {
	drain := 60 * time.Second
	earlier := t0.Add(-20 * time.Second)
	longAgo := t0.Add(-drain)
	tests := []struct {
		name string
		in   Input
		want Plan
	}{
		{
			name: "new cluster: StatefulSet created at full size, nothing ready, nothing published",
			in:   Input{Desired: 3, Ready: readyOrdinals()},
			want: Plan{Published: 0, Replicas: 3},
		},
		{
			name: "first ready pods are published in order",
			in:   Input{Desired: 3, Current: ptr.To[int32](3), Ready: readyOrdinals(0, 1)},
			want: Plan{Published: 2, Replicas: 3},
		},
		{
			name: "a ready pod behind an unready one waits: no gap in the list",
			in:   Input{Desired: 3, Current: ptr.To[int32](3), Ready: readyOrdinals(0, 2)},
			want: Plan{Published: 1, Replicas: 3},
		},
		{
			name: "scale-up: StatefulSet grows at once, new ordinals wait for readiness",
			in:   Input{Desired: 5, Published: 3, Current: ptr.To[int32](3), Ready: readyOrdinals(0, 1, 2)},
			want: Plan{Published: 3, Replicas: 5},
		},
		{
			name: "scale-up: new ordinals published once ready",
			in:   Input{Desired: 5, Published: 3, Current: ptr.To[int32](5), Ready: readyOrdinals(0, 1, 2, 3, 4)},
			want: Plan{Published: 5, Replicas: 5},
		},
		{
			name: "a published pod that restarts stays in the list",
			in:   Input{Desired: 3, Published: 3, Current: ptr.To[int32](3), Ready: readyOrdinals(0, 2)},
			want: Plan{Published: 3, Replicas: 3},
		},
		{
			name: "all published pods unready: the list is kept",
			in:   Input{Desired: 3, Published: 3, Current: ptr.To[int32](3), Ready: readyOrdinals()},
			want: Plan{Published: 3, Replicas: 3},
		},
		{
			name: "scale-down: the list shrinks first, the StatefulSet waits for the drain",
			in:   Input{Desired: 3, Published: 5, Current: ptr.To[int32](5), Drain: drain, Ready: readyOrdinals(0, 1, 2, 3, 4), Now: t0},
			want: Plan{Published: 3, Replicas: 5, DrainStart: &t0, RequeueAfter: drain},
		},
		{
			name: "scale-down: the drain start is rounded up to a whole second",
			in:   Input{Desired: 3, Published: 5, Current: ptr.To[int32](5), Drain: drain, Ready: readyOrdinals(), Now: t0.Add(-300 * time.Millisecond)},
			want: Plan{Published: 3, Replicas: 5, DrainStart: &t0, RequeueAfter: drain + 300*time.Millisecond},
		},
		{
			name: "draining: the StatefulSet keeps the removed peers until the end",
			in:   Input{Desired: 3, Published: 3, Current: ptr.To[int32](5), Drain: drain, DrainStart: &earlier, Ready: readyOrdinals(0, 1, 2, 3, 4), Now: t0},
			want: Plan{Published: 3, Replicas: 5, DrainStart: &earlier, RequeueAfter: 40 * time.Second},
		},
		{
			name: "drain over: the StatefulSet shrinks and the drain is forgotten",
			in:   Input{Desired: 3, Published: 3, Current: ptr.To[int32](5), Drain: drain, DrainStart: &longAgo, Ready: readyOrdinals(0, 1, 2, 3, 4), Now: t0},
			want: Plan{Published: 3, Replicas: 3},
		},
		{
			name: "drain done, StatefulSet already shrunk: the drain is forgotten",
			in:   Input{Desired: 3, Published: 3, Current: ptr.To[int32](3), Drain: drain, DrainStart: &longAgo, Ready: readyOrdinals(0, 1, 2), Now: t0},
			want: Plan{Published: 3, Replicas: 3},
		},
		{
			name: "a second scale-down during a drain restarts it for the newly removed peer",
			in:   Input{Desired: 2, Published: 3, Current: ptr.To[int32](5), Drain: drain, DrainStart: &earlier, Ready: readyOrdinals(0, 1, 2, 3, 4), Now: t0},
			want: Plan{Published: 2, Replicas: 5, DrainStart: &t0, RequeueAfter: drain},
		},
		{
			name: "scale back up during a drain: the still-ready peers are listed again, the drain ends",
			in:   Input{Desired: 5, Published: 3, Current: ptr.To[int32](5), Drain: drain, DrainStart: &earlier, Ready: readyOrdinals(0, 1, 2, 3, 4), Now: t0},
			want: Plan{Published: 5, Replicas: 5},
		},
		{
			name: "partial scale back up during a drain: the rest keeps draining",
			in:   Input{Desired: 4, Published: 3, Current: ptr.To[int32](5), Drain: drain, DrainStart: &earlier, Ready: readyOrdinals(0, 1, 2, 3, 4), Now: t0},
			want: Plan{Published: 4, Replicas: 5, DrainStart: &earlier, RequeueAfter: 40 * time.Second},
		},
		{
			name: "scale-down of never-published peers needs no drain",
			in:   Input{Desired: 3, Published: 3, Current: ptr.To[int32](5), Drain: drain, Ready: readyOrdinals(0, 1, 2), Now: t0},
			want: Plan{Published: 3, Replicas: 3},
		},
		{
			name: "zero drain: list and StatefulSet shrink in one pass (the list is written first)",
			in:   Input{Desired: 1, Published: 3, Current: ptr.To[int32](3), Drain: 0, Ready: readyOrdinals(0, 1, 2), Now: t0},
			want: Plan{Published: 1, Replicas: 1},
		},
		{
			name: "StatefulSet deleted by hand: recreated at the desired size, list kept",
			in:   Input{Desired: 3, Published: 3, Ready: readyOrdinals(), Now: t0},
			want: Plan{Published: 3, Replicas: 3},
		},
		{
			name: "StatefulSet scaled down by hand: restored, list kept",
			in:   Input{Desired: 3, Published: 3, Current: ptr.To[int32](1), Ready: readyOrdinals(0), Now: t0},
			want: Plan{Published: 3, Replicas: 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.in)
			if got.Published != tt.want.Published || got.Replicas != tt.want.Replicas || got.RequeueAfter != tt.want.RequeueAfter ||
				!sameTime(got.DrainStart, tt.want.DrainStart) {
				t.Errorf("Decide() = %s, want %s", describe(got), describe(tt.want))
			}
			if got.Published > got.Replicas {
				t.Errorf("published %d > replicas %d: the list would name a pod that does not run", got.Published, got.Replicas)
			}
			if got.Draining() != (got.DrainStart != nil) {
				t.Errorf("Draining() = %v with drain start %v", got.Draining(), got.DrainStart)
			}
		})
	}
}

// TestDecideConverges replays a scale-down as a manager that restarts after
// every step would: each step starts from the persisted result of the last.
// The list must never grow while shrinking, the StatefulSet must never drop a
// peer before the drain is over, and it must end at the desired size.
func TestDecideConverges(t *testing.T) {
	drain := 30 * time.Second
	in := Input{Desired: 2, Published: 5, Current: ptr.To[int32](5), Drain: drain, Ready: readyOrdinals(0, 1, 2, 3, 4), Now: t0}
	var shrunkAt time.Time
	for step := 0; step < 100; step++ {
		p := Decide(in)
		if p.Published > 2 {
			t.Fatalf("step %d: published %d after the scale-down to 2", step, p.Published)
		}
		if p.Replicas < 5 {
			if shrunkAt.IsZero() {
				shrunkAt = in.Now
			}
			if in.Now.Before(t0.Add(drain)) {
				t.Fatalf("step %d at %v: StatefulSet shrank before the drain ended", step, in.Now)
			}
		}
		if p.Replicas == 2 && !p.Draining() && *in.Current == 2 {
			return
		}
		in = Input{Desired: 2, Published: p.Published, DrainStart: p.DrainStart, Current: ptr.To(p.Replicas), Drain: drain, Ready: in.Ready, Now: in.Now.Add(7 * time.Second)}
	}
	t.Fatalf("no convergence; StatefulSet shrank at %v", shrunkAt)
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func describe(p Plan) string {
	start := "nil"
	if p.DrainStart != nil {
		start = p.DrainStart.Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("{published %d, replicas %d, drain start %s, requeue %s}", p.Published, p.Replicas, start, p.RequeueAfter)
}
