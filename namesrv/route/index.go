package route

import (
	"hash/maphash"
	"sync/atomic"
)

// index maps topic names to topics for lock-free readers: an
// open-addressing hash table the single writer (under Table.mu) fills in
// place and readers probe with atomic loads. Slots are only ever filled,
// never moved or emptied, so a reader probing while the writer inserts
// finds either the topic or an empty slot; a topic is complete before its
// slot is published.
//
// A topic enters the index as soon as a write creates it, without a view:
// readers take a topic without a view for an absent one, so it appears
// when commit publishes its view. Removed topics stay, without a view
// (readers of any index see them gone at once), until a rebuild drops
// them; a topic added again reuses its entry, so a name is never in two
// places.
//
// When the table is half full the writer builds one twice the size and
// publishes it; readers still probing the old one finish there. Slots keep
// their topic's hash, so a rebuild places entries without hashing a name
// or comparing one: each topic is copied about twice while n topics
// arrive, at a few nanoseconds a copy. (A Go map rebuilt from an
// immutable main map and a table of recent topics copied the same number
// of entries at ten times the cost each, hashing every name again; it was
// most of the CPU of a restart storm of 1,000 brokers x 1,000 topics.)
type index struct {
	seed  maphash.Seed
	mask  uint64
	slots []slot
	// n is the writer's count of filled slots.
	n int
}

type slot struct {
	hash atomic.Uint64
	tp   atomic.Pointer[topic]
}

// minSlots is the smallest table.
const minSlots = 1024

func newIndex(seed maphash.Seed, capacity int) *index {
	size := minSlots
	for size < 2*capacity {
		size <<= 1
	}
	return &index{seed: seed, mask: uint64(size - 1), slots: make([]slot, size)}
}

// get returns the topic called name, with or without a view, or nil.
func (ix *index) get(name string) *topic {
	h := maphash.String(ix.seed, name)
	for i := h & ix.mask; ; i = (i + 1) & ix.mask {
		s := &ix.slots[i]
		tp := s.tp.Load()
		if tp == nil || s.hash.Load() == h && tp.name == name {
			return tp
		}
	}
}

// getBytes is get for a name held as bytes, without allocating.
func (ix *index) getBytes(name []byte) *topic {
	return ix.find(maphash.Bytes(ix.seed, name), name)
}

// find is getBytes with the name's hash at hand.
func (ix *index) find(h uint64, name []byte) *topic {
	for i := h & ix.mask; ; i = (i + 1) & ix.mask {
		s := &ix.slots[i]
		tp := s.tp.Load()
		if tp == nil || s.hash.Load() == h && tp.name == string(name) {
			return tp
		}
	}
}

// each calls f for every topic in the index, removed ones included.
func (ix *index) each(f func(*topic)) {
	for i := range ix.slots {
		if tp := ix.slots[i].tp.Load(); tp != nil {
			f(tp)
		}
	}
}

// insert adds a topic that is not in the index, h being the hash of its
// name; writer only. It returns the index to use from now on: ix, or when
// ix was half full a larger copy, which the caller publishes.
func (ix *index) insert(h uint64, tp *topic) *index {
	if 2*(ix.n+1) > len(ix.slots) {
		ix = ix.rebuilt(2*(ix.n+1), false)
	}
	ix.place(h, tp)
	return ix
}

func (ix *index) place(h uint64, tp *topic) {
	for i := h & ix.mask; ; i = (i + 1) & ix.mask {
		s := &ix.slots[i]
		if s.tp.Load() == nil {
			s.hash.Store(h)
			s.tp.Store(tp)
			ix.n++
			return
		}
	}
}

// rebuilt returns a copy of ix with room for capacity topics, without
// the topics that have no view if dropRemoved (only between writes: in
// one, a topic without a view may be new or coming back).
func (ix *index) rebuilt(capacity int, dropRemoved bool) *index {
	next := newIndex(ix.seed, capacity)
	for i := range ix.slots {
		s := &ix.slots[i]
		if tp := s.tp.Load(); tp != nil && (!dropRemoved || tp.view.Load() != nil) {
			next.place(s.hash.Load(), tp)
		}
	}
	return next
}
