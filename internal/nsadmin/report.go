package nsadmin

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// PeerStatus is how one peer answered a command.
type PeerStatus struct {
	Addr  string `json:"nameServer"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// base is what every report holds: each peer's outcome.
type base struct {
	NameServers []PeerStatus `json:"nameServers"`
	// Notes are remarks for the reader (stderr in table output).
	Notes []string `json:"notes,omitempty"`
	errs  []*PeerError
	// multi is set when several peers were asked: tables then show a
	// #NameServers column.
	multi bool
}

func newBase(ps *Peers) base {
	b := base{multi: len(ps.peers) > 1}
	for _, a := range ps.Addrs() {
		b.NameServers = append(b.NameServers, PeerStatus{Addr: a, OK: true})
	}
	return b
}

// fail records a peer's failure; it keeps the first failure of each peer.
func (b *base) fail(addr string, err error) {
	pe := asPeerError(addr, err)
	for i := range b.NameServers {
		if b.NameServers[i].Addr == addr && b.NameServers[i].OK {
			b.NameServers[i].OK = false
			b.NameServers[i].Error = pe.Msg
			b.errs = append(b.errs, pe)
		}
	}
}

// answered are the peers that have not failed, in order.
func (b *base) answered() []string {
	var out []string
	for _, s := range b.NameServers {
		if s.OK {
			out = append(out, s.Addr)
		}
	}
	return out
}

func (b *base) problems() []*PeerError { return b.errs }
func (b *base) exitCode() int          { return ExitOK }
func (b *base) notes() []string        { return b.Notes }

func asPeerError(addr string, err error) *PeerError {
	var pe *PeerError
	if errors.As(err, &pe) {
		return pe
	}
	return badAnswer(addr, err)
}

// line writes one table line without trailing blanks.
func line(w io.Writer, s string) {
	fmt.Fprintln(w, strings.TrimRight(s, " "))
}

// withColumn appends the #NameServers column when several peers are asked.
func withColumn(multi bool, s, col string) string {
	if !multi {
		return s
	}
	return s + " " + col
}

// javaMap prints a map the way Java's HashMap.toString does for small
// Long keys (in key order): {0=a, 1=b}.
func javaMap(m map[int64]string) string {
	ids := make([]int64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	b.WriteByte('{')
	for i, id := range ids {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(id, 10))
		b.WriteByte('=')
		b.WriteString(m[id])
	}
	b.WriteByte('}')
	return b.String()
}

// summary is the closing line of a table of several peers.
func summary(w io.Writer, multi bool, answered []string, agree bool, what string) {
	if !multi || len(answered) < 2 {
		return
	}
	if agree {
		fmt.Fprintf(w, "\n%d NameServers agree on %s.\n", len(answered), what)
		return
	}
	fmt.Fprintf(w, "\nThe NameServers DISAGREE on %s: see the #NameServers column.\n", what)
}
