package authz

import (
	"slices"
	"sync"
)

// Owners records which certificate identity owns each broker name
// (docs/security.md#broker-name-ownership): the first identity to register
// a name owns it while the name's broker group is in the route table, and
// registrations, unregistrations and topic registrations of that name by
// any other identity are refused. Peers without a verified certificate
// share the empty identity: they cannot take a name from a certificate
// holder, nor a certificate holder from them, but among themselves they
// are indistinguishable. Source addresses are deliberately not
// identities: a broker restarted in a new pod comes back from a new
// address.
//
// A broker name is global in the route table (two clusters using one name
// share a group), so ownership is by name alone.
type Owners struct {
	// live reports whether a broker name's group still has an address in
	// the route table; an owner whose group is gone no longer holds it.
	live func(brokerName string) bool

	mu    sync.Mutex
	names map[string]*owner
}

// owner is one broker name's record. Its mutex is held from the check of a
// request through the table change it allows, so that two identities
// racing for a free name cannot both get in.
type owner struct {
	mu sync.Mutex
	// id is the owner's identity, once claimed.
	id      string
	claimed bool
	// gone is set when Prune removed the record; a caller that locked it
	// after that starts again with a fresh one.
	gone bool
}

// NewOwners returns an empty record; live tells a name's group is still in
// the route table.
func NewOwners(live func(brokerName string) bool) *Owners {
	return &Owners{live: live, names: map[string]*owner{}}
}

// Held is a set of broker names locked by Lock: Admit checks them, and
// Unlock releases them once the request's change is applied.
type Held struct {
	o      *Owners
	owners []*owner
	names  []string
}

// Lock locks the records of names (duplicates are fine) in a fixed order,
// so that callers locking several names cannot deadlock.
func (o *Owners) Lock(names ...string) *Held {
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	h := &Held{o: o, names: sorted, owners: make([]*owner, len(sorted))}
	for i, name := range sorted {
		h.owners[i] = o.lockOne(name)
	}
	return h
}

func (o *Owners) lockOne(name string) *owner {
	for {
		o.mu.Lock()
		r := o.names[name]
		if r == nil {
			r = &owner{}
			o.names[name] = r
		}
		o.mu.Unlock()
		r.mu.Lock()
		if !r.gone {
			return r
		}
		r.mu.Unlock()
	}
}

// Unlock releases the names.
func (h *Held) Unlock() {
	for _, r := range h.owners {
		r.mu.Unlock()
	}
}

// Admission is Admit's verdict.
type Admission struct {
	OK bool
	// Claimed is set when the identity became the owner of a name it did
	// not own before.
	Claimed bool
	// Name and Owner, when refused, are the name and the identity that
	// owns it.
	Name, Owner string
}

// Admit reports whether identity may act on every held name, and claims
// the free ones for it when claim is set (registrations claim, an
// unregistration or a topic registration does not). A name is free when
// nobody registered it yet or its owner's group has left the route table.
func (h *Held) Admit(identity string, claim bool) Admission {
	for i, r := range h.owners {
		if !r.claimed || r.id == identity {
			continue
		}
		if h.o.live(h.names[i]) {
			return Admission{Name: h.names[i], Owner: r.id}
		}
	}
	a := Admission{OK: true}
	if claim {
		for _, r := range h.owners {
			if !r.claimed || r.id != identity {
				r.id, r.claimed, a.Claimed = identity, true, true
			}
		}
	}
	return a
}

// Prune forgets the names whose group has left the route table, so the
// record does not grow with every name ever registered. A record in use
// is skipped.
func (o *Owners) Prune() int {
	o.mu.Lock()
	names := make([]string, 0, len(o.names))
	for name := range o.names {
		names = append(names, name)
	}
	o.mu.Unlock()
	n := 0
	for _, name := range names {
		o.mu.Lock()
		r := o.names[name]
		if r == nil || !r.mu.TryLock() {
			o.mu.Unlock()
			continue
		}
		if o.live(name) {
			r.mu.Unlock()
			o.mu.Unlock()
			continue
		}
		r.gone = true
		delete(o.names, name)
		r.mu.Unlock()
		o.mu.Unlock()
		n++
	}
	return n
}

// Len is how many names are recorded.
func (o *Owners) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.names)
}
