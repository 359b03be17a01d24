package publish

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	// Accepts the flags of TestSimulation: go test ./controllers/... -seed N.
	_ "github.com/kube-namesrv/kube-namesrv/controllers/internal/testflags"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func serving(ordinals ...int32) func(int32) bool {
	return func(o int32) bool { return slices.Contains(ordinals, o) }
}

func ords(o ...int32) []int32 { return o }

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
			name: "new cluster: StatefulSet created at full size, nothing serves, nothing published",
			in:   Input{Desired: 3, Joinable: serving(), Ready: serving()},
			want: Plan{Replicas: 3, Waiting: ords(0, 1, 2)},
		},
		{
			name: "serving peers are published",
			in:   Input{Desired: 3, Current: ptr.To[int32](3), Joinable: serving(0, 1), Ready: serving(0, 1)},
			want: Plan{Published: ords(0, 1), Replicas: 3, Waiting: ords(2)},
		},
		{
			name: "a serving peer behind one that does not is published too: the list has a gap",
			in:   Input{Desired: 3, Current: ptr.To[int32](3), Joinable: serving(0, 2), Ready: serving(0, 2)},
			want: Plan{Published: ords(0, 2), Replicas: 3, Waiting: ords(1)},
		},
		{
			name: "scale-up: StatefulSet grows at once, new ordinals wait until they serve",
			in:   Input{Desired: 5, Published: ords(0, 1, 2), Current: ptr.To[int32](3), Joinable: serving(0, 1, 2), Ready: serving(0, 1, 2)},
			want: Plan{Published: ords(0, 1, 2), Replicas: 5, Waiting: ords(3, 4)},
		},
		{
			name: "scale-up the API server has not accepted yet: a pod the StatefulSet does not keep does not join",
			in:   Input{Desired: 3, Published: ords(0), Current: ptr.To[int32](1), Joinable: serving(0, 1, 2), Ready: serving(0, 1, 2)},
			want: Plan{Published: ords(0), Replicas: 3, Waiting: ords(1, 2)},
		},
		{
			name: "scale-up: one pending pod does not hide a serving one above it",
			in:   Input{Desired: 5, Published: ords(0, 1, 2), Current: ptr.To[int32](5), Joinable: serving(0, 1, 2, 4), Ready: serving(0, 1, 2, 4)},
			want: Plan{Published: ords(0, 1, 2, 4), Replicas: 5, Waiting: ords(3)},
		},
		{
			name: "a listed peer that restarts stays listed",
			in:   Input{Desired: 3, Published: ords(0, 1, 2), Current: ptr.To[int32](3), Joinable: serving(0, 2), Ready: serving(0, 2)},
			want: Plan{Published: ords(0, 1, 2), Replicas: 3},
		},
		{
			name: "every listed peer down: the list is kept",
			in:   Input{Desired: 3, Published: ords(0, 1, 2), Current: ptr.To[int32](3), Joinable: serving(), Ready: serving()},
			want: Plan{Published: ords(0, 1, 2), Replicas: 3},
		},
		{
			name: "scale-down: the list shrinks first, the StatefulSet waits for the drain",
			in:   Input{Desired: 3, Published: ords(0, 1, 2, 3, 4), Current: ptr.To[int32](5), Drain: drain, Joinable: serving(0, 1, 2, 3, 4), Ready: serving(0, 1, 2, 3, 4), Now: t0},
			want: Plan{Published: ords(0, 1, 2), Replicas: 5, DrainStart: &t0, RequeueAfter: drain},
		},
		{
			name: "scale-down: the drain start is rounded up to a whole second",
			in:   Input{Desired: 3, Published: ords(0, 1, 2, 3, 4), Current: ptr.To[int32](5), Drain: drain, Joinable: serving(), Ready: serving(), Now: t0.Add(-300 * time.Millisecond)},
			want: Plan{Published: ords(0, 1, 2), Replicas: 5, DrainStart: &t0, RequeueAfter: drain + 300*time.Millisecond},
		},
		{
			name: "scale-down while the peer that would remain does not serve: held, nothing removed",
			in:   Input{Desired: 1, Published: ords(0, 1, 2), Current: ptr.To[int32](3), Drain: drain, Joinable: serving(1, 2), Ready: serving(1, 2), Now: t0},
			want: Plan{Published: ords(0, 1, 2), Replicas: 3, Held: true, HeldFor: ords(0)},
		},
		{
			name: "held scale-down proceeds once the remaining peers serve",
			in:   Input{Desired: 1, Published: ords(0, 1, 2), Current: ptr.To[int32](3), Drain: drain, Joinable: serving(0, 1, 2), Ready: serving(0, 1, 2), Now: t0},
			want: Plan{Published: ords(0), Replicas: 3, DrainStart: &t0, RequeueAfter: drain},
		},
		{
			name: "scale-down while the peer that would remain is down and the others answer but lag in routes or KV: held",
			in:   Input{Desired: 1, Published: ords(0, 1, 2), Current: ptr.To[int32](3), Drain: drain, Joinable: serving(), Ready: serving(1, 2), Now: t0},
			want: Plan{Published: ords(0, 1, 2), Replicas: 3, Held: true, HeldFor: ords(0)},
		},
		{
			name: "scale-down while the listed peer that would remain answers but lags: lag is no reason to hold",
			in:   Input{Desired: 1, Published: ords(0, 1, 2), Current: ptr.To[int32](3), Drain: drain, Joinable: serving(1, 2), Ready: serving(0, 1, 2), Now: t0},
			want: Plan{Published: ords(0), Replicas: 3, DrainStart: &t0, RequeueAfter: drain},
		},
		{
			name: "a ready peer that lags does not join, and holds a scale-down that would remove answering peers",
			in:   Input{Desired: 2, Published: ords(0, 2), Current: ptr.To[int32](3), Drain: drain, Joinable: serving(0, 2), Ready: serving(0, 1, 2), Now: t0},
			want: Plan{Published: ords(0, 2), Replicas: 3, Held: true, HeldFor: ords(1), Waiting: ords(1)},
		},
		{
			name: "scale-down while the peer that would remain is down and the removed one's gate was just opened: held",
			in: Input{Desired: 1, Published: ords(0, 1), Current: ptr.To[int32](2), Drain: drain, Joinable: serving(), Ready: serving(),
				MayAnswer: serving(1), Now: t0},
			want: Plan{Published: ords(0, 1), Replicas: 2, Held: true, HeldFor: ords(0)},
		},
		{
			name: "scale-down of peers that do not serve either: nothing to keep them for",
			in:   Input{Desired: 1, Published: ords(0, 1, 2), Current: ptr.To[int32](3), Drain: drain, Joinable: serving(), Ready: serving(), Now: t0},
			want: Plan{Published: ords(0), Replicas: 3, DrainStart: &t0, RequeueAfter: drain},
		},
		{
			name: "scale-down held by an unpublished ordinal that would remain",
			in:   Input{Desired: 2, Published: ords(0, 2), Current: ptr.To[int32](3), Drain: drain, Joinable: serving(0, 2), Ready: serving(0, 2), Now: t0},
			want: Plan{Published: ords(0, 2), Replicas: 3, Held: true, HeldFor: ords(1), Waiting: ords(1)},
		},
		{
			name: "draining: the StatefulSet keeps the removed peers until the end",
			in:   Input{Desired: 3, Published: ords(0, 1, 2), Current: ptr.To[int32](5), Drain: drain, DrainStart: &earlier, Joinable: serving(0, 1, 2, 3, 4), Ready: serving(0, 1, 2, 3, 4), Now: t0},
			want: Plan{Published: ords(0, 1, 2), Replicas: 5, DrainStart: &earlier, RequeueAfter: 40 * time.Second},
		},
		{
			name: "drain over: the StatefulSet shrinks and the drain is forgotten",
			in:   Input{Desired: 3, Published: ords(0, 1, 2), Current: ptr.To[int32](5), Drain: drain, DrainStart: &longAgo, Joinable: serving(0, 1, 2, 3, 4), Ready: serving(0, 1, 2, 3, 4), Now: t0},
			want: Plan{Published: ords(0, 1, 2), Replicas: 3},
		},
		{
			name: "drain done, StatefulSet already shrunk: the drain is forgotten",
			in:   Input{Desired: 3, Published: ords(0, 1, 2), Current: ptr.To[int32](3), Drain: drain, DrainStart: &longAgo, Joinable: serving(0, 1, 2), Ready: serving(0, 1, 2), Now: t0},
			want: Plan{Published: ords(0, 1, 2), Replicas: 3},
		},
		{
			name: "a second scale-down during a drain restarts it for the newly removed peer",
			in:   Input{Desired: 2, Published: ords(0, 1, 2), Current: ptr.To[int32](5), Drain: drain, DrainStart: &earlier, Joinable: serving(0, 1, 2, 3, 4), Ready: serving(0, 1, 2, 3, 4), Now: t0},
			want: Plan{Published: ords(0, 1), Replicas: 5, DrainStart: &t0, RequeueAfter: drain},
		},
		{
			name: "scale back up during a drain: the still-serving peers are listed again, the drain ends",
			in:   Input{Desired: 5, Published: ords(0, 1, 2), Current: ptr.To[int32](5), Drain: drain, DrainStart: &earlier, Joinable: serving(0, 1, 2, 3, 4), Ready: serving(0, 1, 2, 3, 4), Now: t0},
			want: Plan{Published: ords(0, 1, 2, 3, 4), Replicas: 5},
		},
		{
			name: "scale back up during a drain with a removed peer not listed again: the drain goes on, for a scale-down before its end",
			in: Input{Desired: 5, Published: ords(0, 1, 2), Current: ptr.To[int32](5), Drain: drain, DrainStart: &earlier,
				Joinable: serving(0, 1, 2, 3), Ready: serving(0, 1, 2, 3), Now: t0},
			want: Plan{Published: ords(0, 1, 2, 3), Replicas: 5, DrainStart: &earlier, RequeueAfter: 40 * time.Second, Waiting: ords(4)},
		},
		{
			name: "scale-down again before that drain ended: the StatefulSet keeps the peer until its end",
			in: Input{Desired: 4, Published: ords(0, 1, 2, 3), Current: ptr.To[int32](5), Drain: drain, DrainStart: &earlier,
				Joinable: serving(0, 1, 2, 3), Ready: serving(0, 1, 2, 3), Now: t0},
			want: Plan{Published: ords(0, 1, 2, 3), Replicas: 5, DrainStart: &earlier, RequeueAfter: 40 * time.Second},
		},
		{
			name: "partial scale back up during a drain: the rest keeps draining",
			in:   Input{Desired: 4, Published: ords(0, 1, 2), Current: ptr.To[int32](5), Drain: drain, DrainStart: &earlier, Joinable: serving(0, 1, 2, 3, 4), Ready: serving(0, 1, 2, 3, 4), Now: t0},
			want: Plan{Published: ords(0, 1, 2, 3), Replicas: 5, DrainStart: &earlier, RequeueAfter: 40 * time.Second},
		},
		{
			name: "scale-down of never-published peers needs no drain",
			in:   Input{Desired: 3, Published: ords(0, 1, 2), Current: ptr.To[int32](5), Drain: drain, Joinable: serving(0, 1, 2), Ready: serving(0, 1, 2), Now: t0},
			want: Plan{Published: ords(0, 1, 2), Replicas: 3},
		},
		{
			name: "zero drain: list and StatefulSet shrink in one pass (the list is written first)",
			in:   Input{Desired: 1, Published: ords(0, 1, 2), Current: ptr.To[int32](3), Drain: 0, Joinable: serving(0, 1, 2), Ready: serving(0, 1, 2), Now: t0},
			want: Plan{Published: ords(0), Replicas: 1},
		},
		{
			name: "StatefulSet deleted by hand: recreated at the desired size, list kept",
			in:   Input{Desired: 3, Published: ords(0, 1, 2), Joinable: serving(), Ready: serving(), Now: t0},
			want: Plan{Published: ords(0, 1, 2), Replicas: 3},
		},
		{
			name: "StatefulSet scaled down by hand: restored, list kept",
			in:   Input{Desired: 3, Published: ords(0, 1, 2), Current: ptr.To[int32](1), Joinable: serving(0), Ready: serving(0), Now: t0},
			want: Plan{Published: ords(0, 1, 2), Replicas: 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.in)
			if !slices.Equal(got.Published, tt.want.Published) || got.Replicas != tt.want.Replicas || got.RequeueAfter != tt.want.RequeueAfter ||
				!sameTime(got.DrainStart, tt.want.DrainStart) || got.Held != tt.want.Held || !slices.Equal(got.HeldFor, tt.want.HeldFor) ||
				!slices.Equal(got.Waiting, tt.want.Waiting) {
				t.Errorf("Decide() = %s, want %s", describe(got), describe(tt.want))
			}
			for _, o := range got.Published {
				if o >= got.Replicas {
					t.Errorf("ordinal %d published with %d replicas: the list would name a pod that does not run", o, got.Replicas)
				}
			}
			if got.Draining() != (got.DrainStart != nil) {
				t.Errorf("Draining() = %v with drain start %v", got.Draining(), got.DrainStart)
			}
		})
	}
}

// TestDecideConverges replays a scale-down as a manager that restarts after
// every step would: each step starts from the persisted result of the last.
// The surviving peer serves only from the fourth step on. The list must never
// lose a serving peer while the survivor does not serve, never grow while
// shrinking, the StatefulSet must never drop a peer before the drain is over,
// and it must end at the desired size.
func TestDecideConverges(t *testing.T) {
	drain := 30 * time.Second
	in := Input{Desired: 1, Published: ords(0, 1, 2, 3, 4), Current: ptr.To[int32](5), Drain: drain, Joinable: serving(1, 2, 3, 4), Ready: serving(1, 2, 3, 4), Now: t0}
	var shrunkAt, listShrunkAt time.Time
	for step := 0; step < 100; step++ {
		if step == 3 {
			in.Joinable, in.Ready = serving(0, 1, 2, 3, 4), serving(0, 1, 2, 3, 4)
		}
		p := Decide(in)
		if len(p.Published) < len(in.Published) {
			if !in.Ready(0) {
				t.Fatalf("step %d: the list shrank to %v while the survivor does not serve", step, p.Published)
			}
			listShrunkAt = in.Now
		}
		if len(p.Published) > len(in.Published) {
			t.Fatalf("step %d: the list grew from %v to %v during a scale-down", step, in.Published, p.Published)
		}
		if p.Replicas < 5 {
			if shrunkAt.IsZero() {
				shrunkAt = in.Now
			}
			if listShrunkAt.IsZero() || in.Now.Before(listShrunkAt.Add(drain)) {
				t.Fatalf("step %d at %v: StatefulSet shrank before the drain ended (list shrank at %v)", step, in.Now, listShrunkAt)
			}
		}
		if p.Replicas == 1 && !p.Draining() && *in.Current == 1 {
			return
		}
		in = Input{Desired: 1, Published: p.Published, DrainStart: p.DrainStart, Current: ptr.To(p.Replicas), Drain: drain, Joinable: in.Joinable, Ready: in.Ready, Now: in.Now.Add(7 * time.Second)}
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
	return fmt.Sprintf("{published %v, replicas %d, drain start %s, requeue %s, held %v for %v, waiting %v}",
		p.Published, p.Replicas, start, p.RequeueAfter, p.Held, p.HeldFor, p.Waiting)
}
