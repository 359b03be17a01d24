package nsadmin

import (
	"fmt"
	"slices"
	"strings"
)

// Presence says which peers hold a row. Peers never talk to each other, so
// nothing makes them agree: a row can be on some peers and not others, or
// hold different values on different peers.
type Presence struct {
	// On are the peers holding the row as shown.
	On []string `json:"presentOn"`
	// MissingOn are peers that answered without the row.
	MissingOn []string `json:"missingOn,omitempty"`
	// DiffersOn are peers holding the same key with another value (shown
	// in another row).
	DiffersOn []string `json:"differsOn,omitempty"`
}

// Agreed tells whether every answering peer holds the row as shown.
func (p Presence) Agreed() bool { return len(p.MissingOn) == 0 && len(p.DiffersOn) == 0 }

// Column is the row's presence for a table: "3/3" when every peer holds
// it, "2/3 missing on c:9876" when some lack it, "1/3 on a:9876" when others
// hold another value (shown in another row).
func (p Presence) Column() string {
	total := len(p.On) + len(p.MissingOn) + len(p.DiffersOn)
	s := fmt.Sprintf("%d/%d", len(p.On), total)
	if len(p.DiffersOn) > 0 {
		s += " on " + strings.Join(p.On, ",")
		if len(p.MissingOn) > 0 {
			s += ";"
		}
	}
	if len(p.MissingOn) > 0 {
		s += " missing on " + strings.Join(p.MissingOn, ",")
	}
	return s
}

// merged is one variant of a keyed row across peers.
type merged[T any] struct {
	Key   string
	Value T
	Presence
}

// mergeRows combines rows from several peers. answered are the peers whose
// rows count (in display order); rows maps each of them to its rows; key
// identifies a row and same compares two rows of one key. The result is
// sorted by key; a key held with different values gives one entry per
// value, the most widely held first.
func mergeRows[T any](answered []string, rows map[string][]T, key func(T) string, same func(a, b T) bool) []merged[T] {
	type variant struct {
		value T
		on    []string
	}
	byKey := map[string][]*variant{}
	for _, addr := range answered {
		for _, r := range rows[addr] {
			k := key(r)
			vs := byKey[k]
			i := slices.IndexFunc(vs, func(v *variant) bool { return same(v.value, r) })
			if i < 0 {
				byKey[k] = append(vs, &variant{value: r, on: []string{addr}})
				continue
			}
			if !slices.Contains(vs[i].on, addr) {
				vs[i].on = append(vs[i].on, addr)
			}
		}
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []merged[T]
	for _, k := range keys {
		vs := byKey[k]
		slices.SortStableFunc(vs, func(a, b *variant) int { return len(b.on) - len(a.on) })
		for i, v := range vs {
			m := merged[T]{Key: k, Value: v.value, Presence: Presence{On: inOrder(answered, v.on)}}
			var others []string
			for j, w := range vs {
				if j != i {
					others = append(others, w.on...)
				}
			}
			m.DiffersOn = inOrder(answered, others)
			for _, a := range answered {
				if !slices.Contains(v.on, a) && !slices.Contains(others, a) {
					m.MissingOn = append(m.MissingOn, a)
				}
			}
			out = append(out, m)
		}
	}
	return out
}

// inOrder returns the members of set in the order of all.
func inOrder(all, set []string) []string {
	var out []string
	for _, a := range all {
		if slices.Contains(set, a) {
			out = append(out, a)
		}
	}
	return out
}

// agreed tells whether every row is held alike by every peer.
func agreed[T interface{ Agreed() bool }](rows []T) bool {
	for _, r := range rows {
		if !r.Agreed() {
			return false
		}
	}
	return true
}
