package route

import "slices"

// knownTopic is one topic of a broker address's last registration that
// wrote topics (liveInfo.known): its name's hash and the queue data the
// registration left it with, in the body's order.
//
// A broker lists its topics in the same order every time. While nothing
// else has changed its broker name's queue data (liveInfo.topicsGen), a
// topic of the next registration found at the same place with the same
// hash and queue data is left as it is, without looking it up in the
// index: a 10,000-topic re-registration with a new DataVersion then walks
// two lists in step instead of probing a large map and every topic's view
// ten thousand times. The list is kept only when the body named no topic
// twice (every registration from real brokers): with a duplicate, the
// data a topic was left with is its last entry's, not each entry's.
type knownTopic struct {
	hash                    uint64
	read, write, perm, flag int32
}

// maxSlow bounds the topics of one registration checked against the
// whole known list: past that many changed topics, the rest of the
// registration reads every topic through the index, and the next one of
// the address too.
const maxSlow = 64

// knownWriter builds the list of a registration from the previous one.
type knownWriter struct {
	known []knownTopic
	// out is known itself until the first entry that differs, then a
	// copy (known is still read after that).
	out []knownTopic
	// kept marks the entries of known that a topic of this body matched
	// and left as it was.
	kept []uint64
	// slow are the hashes of the topics written through the index, in
	// order: a later entry with one of them is written too.
	slow []uint64
	// dup is set when out cannot be kept: the body names a topic twice
	// (or might: too many topics were written to tell).
	dup bool
}

func newKnownWriter(known []knownTopic, n int) knownWriter {
	w := knownWriter{known: known, out: known}
	if len(known) != n {
		w.out = make([]knownTopic, n)
	}
	if len(known) > 0 {
		w.kept = make([]uint64, (len(known)+63)/64)
	}
	return w
}

// find returns the place in known of the topic with hash, expected at j
// or next to it (past a topic added or removed before it), or -1; also -1
// once too many topics went through the index.
func (w *knownWriter) find(j int, hash uint64) int {
	if len(w.slow) > maxSlow {
		return -1
	}
	for _, at := range [...]int{j, j + 1, j - 1} {
		if at >= 0 && at < len(w.known) && w.known[at].hash == hash {
			return at
		}
	}
	return -1
}

// keep records that the body's topic i is known[at], left as it was.
func (w *knownWriter) keep(i, at int) {
	w.kept[at/64] |= 1 << (at % 64)
	w.set(i, w.known[at])
}

func (w *knownWriter) set(i int, k knownTopic) {
	if w.out[i] == k {
		return
	}
	if len(w.known) > 0 && &w.out[0] == &w.known[0] {
		w.out = slices.Clone(w.known)
	}
	w.out[i] = k
}

// slowTopic records that the body's topic i, found in known at at (-1:
// not near its place), was written through the index.
func (w *knownWriter) slowTopic(i, at int, k knownTopic) {
	w.set(i, k)
	if w.known == nil {
		return
	}
	if len(w.slow) == maxSlow {
		w.dup = true
	}
	w.slow = append(w.slow, k.hash)
	if at < 0 {
		at = slices.IndexFunc(w.known, func(e knownTopic) bool { return e.hash == k.hash })
	}
	// Another topic of this body, with the same name, was left as it was.
	if at >= 0 && w.kept[at/64]&(1<<(at%64)) != 0 {
		w.dup = true
	}
}
