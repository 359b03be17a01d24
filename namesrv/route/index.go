package route

import (
	"hash/maphash"
	"sync/atomic"
	"time"
)

// index maps topic names to topics for lock-free readers. It has two
// parts. main is an immutable map. Topics added since main was built go
// into recent, an insert-only hash table the single writer (under
// Table.mu) fills in place and readers probe with atomic loads, so adding
// a topic costs one slot, not a copy of the index. When recent holds half
// as many topics as main, or tombstones are many, the writer builds a new
// main from both and publishes a new index with an empty recent table.
// Each topic is thereby copied a constant number of times while n topics
// arrive, however many writes bring them: 1,000 brokers of 1,000 topics
// registering after a restart copy about 3 million entries. (Immutable
// chunks merged every few writes copied half a billion and took 40 s;
// chunks merged like a binary counter still copied 10 million.)
//
// A topic found in recent costs a probe more than one in main, so once no
// topic has come for settleAfter, the next write moves recent into main
// (Table.commit): a table that has stopped growing is one map.
//
// Removed topics stay in the index with a nil view (readers of any index
// see them gone at once) until the next rebuild of main drops them; a
// topic added again reuses its entry, so a name is never in two places.
type index struct {
	main   map[string]*topic
	recent *recentTable
}

// settleAfter is how long the index waits, after the last topic came, to
// move its recent table into main.
const settleAfter = 10 * time.Second

// minRecent is the smallest recent table: a rebuild of main for fewer new
// topics than this would be a waste.
const minRecent = 1024

func newIndex(main map[string]*topic) *index {
	return &index{main: main, recent: newRecentTable(max(minRecent, len(main)))}
}

func (ix *index) get(name string) *topic {
	if tp := ix.main[name]; tp != nil {
		return tp
	}
	return ix.recent.get(name)
}

// getBytes is get for a name held as bytes, without allocating: Go does not
// copy the bytes of a string(b) conversion used directly as a map key.
func (ix *index) getBytes(name []byte) *topic {
	if tp := ix.main[string(name)]; tp != nil {
		return tp
	}
	return ix.recent.getBytes(name)
}

// each calls f for every topic in the index, removed ones included.
func (ix *index) each(f func(*topic)) {
	for _, tp := range ix.main {
		f(tp)
	}
	ix.recent.each(f)
}

// add makes added (new topics whose views are set) visible, in ix's recent
// table, or by returning a rebuilt index when recent is full enough or the
// tombstones too many; rebuilt reports the latter.
func (ix *index) add(added map[string]*topic, tombstones int) (next *index, rebuilt bool) {
	live := len(ix.main) + ix.recent.n + len(added)
	if ix.recent.n+len(added) <= max(minRecent, len(ix.main))/2 && tombstones <= live/2 {
		for _, tp := range added {
			ix.recent.insert(tp)
		}
		return ix, false
	}
	return ix.rebuilt(added, tombstones), true
}

// rebuilt returns an index whose main map holds every live topic of ix and
// added, and whose recent table is empty.
func (ix *index) rebuilt(added map[string]*topic, tombstones int) *index {
	m := make(map[string]*topic, len(ix.main)+ix.recent.n+len(added)-tombstones)
	keep := func(tp *topic) {
		if tp.view.Load() != nil {
			m[tp.name] = tp
		}
	}
	ix.each(keep)
	for _, tp := range added {
		keep(tp)
	}
	return newIndex(m)
}

// recentTable is an open-addressing hash table of topics with one writer
// and lock-free readers. Slots are only ever filled, never moved or
// emptied, so a reader probing while the writer inserts finds either the
// topic or an empty slot; the topic is complete before its slot is
// published. Its capacity is a power of two at least the size of main, and
// index.add rebuilds before it is half full.
type recentTable struct {
	seed  maphash.Seed
	mask  uint64
	slots []atomic.Pointer[topic]
	// n is the writer's count of filled slots; empty tells readers that
	// there is nothing to probe, which spares a settled index's misses
	// (most of them queries for %RETRY% and other absent topics) a hash.
	n     int
	empty atomic.Bool
}

func newRecentTable(capacity int) *recentTable {
	size := 1
	for size < capacity {
		size <<= 1
	}
	r := &recentTable{seed: maphash.MakeSeed(), mask: uint64(size - 1), slots: make([]atomic.Pointer[topic], size)}
	r.empty.Store(true)
	return r
}

func (r *recentTable) get(name string) *topic {
	if r.empty.Load() {
		return nil
	}
	for i := maphash.String(r.seed, name) & r.mask; ; i = (i + 1) & r.mask {
		tp := r.slots[i].Load()
		if tp == nil || tp.name == name {
			return tp
		}
	}
}

func (r *recentTable) getBytes(name []byte) *topic {
	if r.empty.Load() {
		return nil
	}
	for i := maphash.Bytes(r.seed, name) & r.mask; ; i = (i + 1) & r.mask {
		tp := r.slots[i].Load()
		if tp == nil || tp.name == string(name) {
			return tp
		}
	}
}

// insert adds a topic that is not in the table; writer only.
func (r *recentTable) insert(tp *topic) {
	for i := maphash.String(r.seed, tp.name) & r.mask; ; i = (i + 1) & r.mask {
		if r.slots[i].Load() == nil {
			r.slots[i].Store(tp)
			r.n++
			r.empty.Store(false)
			return
		}
	}
}

func (r *recentTable) each(f func(*topic)) {
	for i := range r.slots {
		if tp := r.slots[i].Load(); tp != nil {
			f(tp)
		}
	}
}
