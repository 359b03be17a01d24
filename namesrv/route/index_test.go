package route

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
)

// TestIndexChunksAndMerges adds topics one write at a time, deletes and
// re-adds some, and checks that every lookup path agrees with the table's
// own view of which topics exist.
func TestIndexChunksAndMerges(t *testing.T) {
	tb, _ := newTable(t)
	want := map[string]bool{}
	for i := range 40 {
		names := []string{fmt.Sprintf("T%02d-a", i), fmt.Sprintf("T%02d-b", i)}
		tb.Register(reg("c", fmt.Sprintf("b%02d", i), 0, fmt.Sprintf("a:%d", i), 1, nil, topics(names[0]+":1:1:6", names[1]+":1:1:6")...))
		want[names[0]], want[names[1]] = true, true
		if i%3 == 0 {
			tb.DeleteTopic(names[0], "")
			delete(want, names[0])
		}
		if i%5 == 0 && i > 0 {
			// Re-add a topic deleted earlier: its tombstone is reused.
			old := fmt.Sprintf("T%02d-a", i-3)
			tb.Register(reg("c", fmt.Sprintf("b%02d", i-3), 0, fmt.Sprintf("a:%d", i-3), 2, nil, topics(old+":1:1:6", fmt.Sprintf("T%02d-b:1:1:6", i-3))...))
			want[old] = true
		}
		ix := tb.index.Load()
		var got []string
		for name := range want {
			got = append(got, name)
			if route(t, tb, name, fjson.Legacy) == "" {
				t.Fatalf("step %d: %s has no route", i, name)
			}
			if ix.getBytes([]byte(name)) != ix.get(name) {
				t.Fatalf("step %d: lookups disagree on %s", i, name)
			}
		}
		slices.Sort(got)
		if all := tb.AllTopics(); !slices.Equal(all, got) {
			t.Fatalf("step %d: topics %v, want %v", i, all, got)
		}
		if int(tb.Stats().Topics) != len(want) {
			t.Fatalf("step %d: stats say %d topics, want %d", i, tb.Stats().Topics, len(want))
		}
		seen := map[string]int{}
		ix.each(func(tp *topic) { seen[tp.name]++ })
		for name, n := range seen {
			if n > 1 {
				t.Fatalf("step %d: %s is in the index %d times", i, name, n)
			}
		}
	}
	for name := range want {
		tb.DeleteTopic(name, "")
	}
	// Deleting everything leaves tombstones only, which the next write
	// that finds more tombstones than topics merges away.
	tb.Register(reg("c", "z", 0, "z:1", 1, nil, topics("Z1:1:1:6", "Z2:1:1:6")...))
	if got := tb.AllTopics(); !slices.Equal(got, []string{"Z1", "Z2"}) {
		t.Fatalf("topics %v", got)
	}
	n := 0
	tb.index.Load().each(func(*topic) { n++ })
	if n != 2 {
		t.Fatalf("index still holds %d entries for 2 topics", n)
	}
}

// TestIndexGrowthCopiesEachTopicAFewTimes registers 2,000 brokers of 10
// new topics each, as after a restart, while a reader looks every topic up:
// every topic is found from the moment its registration returns, and the
// rebuilds of the table, each twice as big as the last, copy fewer than
// three entries per topic in all.
func TestIndexGrowthCopiesEachTopicAFewTimes(t *testing.T) {
	tb, _ := newTable(t)
	const brokers, per = 2000, 10
	name := func(b, i int) string { return fmt.Sprintf("b%04d-t%02d", b, i) }
	done := make(chan struct{})
	registered := make(chan int, brokers)
	go func() {
		defer close(done)
		for b := range registered {
			for i := range per {
				if tb.index.Load().getBytes([]byte(name(b, i))) == nil {
					t.Errorf("%s not found after its registration", name(b, i))
					return
				}
			}
		}
	}()
	copied, rebuilds := 0, 0
	ix := tb.index.Load()
	for b := range brokers {
		specs := make([]string, per)
		for i := range specs {
			specs[i] = name(b, i) + ":1:1:6"
		}
		tb.Register(reg("c", fmt.Sprintf("b%04d", b), 0, fmt.Sprintf("a:%d", b), 1, nil, topics(specs...)...))
		registered <- b
		if next := tb.index.Load(); next != ix {
			ix = next
			rebuilds++
			copied += ix.n
		}
	}
	close(registered)
	<-done
	if total := brokers * per; copied >= 3*total {
		t.Errorf("rebuilds copied %d entries for %d topics", copied, total)
	}
	if rebuilds > 12 {
		t.Errorf("%d rebuilds of the table for %d topics", rebuilds, brokers*per)
	}
	if n := len(tb.AllTopics()); n != brokers*per {
		t.Errorf("%d topics, want %d", n, brokers*per)
	}
}
