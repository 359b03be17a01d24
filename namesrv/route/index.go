package route

// index maps topic names to topics for lock-free readers. It is immutable:
// writers publish a new one when topics are added. Copying one big map for
// every write that adds topics would cost O(topics) per write, which is
// O(topics²) while a cluster's brokers first register after a restart; so
// topics added since the last merge sit in small chunks, one per write, and
// the chunks are merged into the main map only every few writes. A lookup
// checks the main map, then the few chunks.
//
// Removed topics stay in the index with a nil view (readers of any index
// see them gone at once) until the next merge drops them; a topic added
// again reuses its entry, so a name is never in two places.
type index struct {
	main    map[string]*topic
	chunks  []map[string]*topic
	chunked int // entries in chunks
}

// Merge when there are this many chunks, or when the chunks hold as many
// entries as half the main map: each merge copies every entry, and these
// bounds keep a lookup miss at a few map probes while the copies stay a
// small multiple of the topics added.
const maxChunks = 8

func (ix *index) get(name string) *topic {
	if tp := ix.main[name]; tp != nil {
		return tp
	}
	for i := len(ix.chunks) - 1; i >= 0; i-- {
		if tp := ix.chunks[i][name]; tp != nil {
			return tp
		}
	}
	return nil
}

// getBytes is get for a name held as bytes, without allocating: Go does not
// copy the bytes of a string(b) conversion used directly as a map key.
func (ix *index) getBytes(name []byte) *topic {
	if tp := ix.main[string(name)]; tp != nil {
		return tp
	}
	for i := len(ix.chunks) - 1; i >= 0; i-- {
		if tp := ix.chunks[i][string(name)]; tp != nil {
			return tp
		}
	}
	return nil
}

// each calls f for every topic in the index, removed ones included.
func (ix *index) each(f func(*topic)) {
	for _, tp := range ix.main {
		f(tp)
	}
	for _, c := range ix.chunks {
		for _, tp := range c {
			f(tp)
		}
	}
}

// with returns an index that also holds added (which it keeps), merging
// everything into one map, without the tombstones (removed topics), when
// the chunks grow too many or too big or the tombstones too many; merged
// reports whether it did.
func (ix *index) with(added map[string]*topic, tombstones int) (next *index, merged bool) {
	next = &index{main: ix.main, chunks: ix.chunks, chunked: ix.chunked}
	if len(added) > 0 {
		next.chunks = append(next.chunks[:len(next.chunks):len(next.chunks)], added)
		next.chunked += len(added)
	}
	if len(next.chunks) < maxChunks && next.chunked <= len(next.main)/2 && tombstones <= (len(next.main)+next.chunked)/2 {
		return next, false
	}
	m := make(map[string]*topic, len(next.main)+next.chunked-tombstones)
	next.each(func(tp *topic) {
		if tp.view.Load() != nil {
			m[tp.name] = tp
		}
	})
	return &index{main: m}, true
}
