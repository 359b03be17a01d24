// Package routecheck compares the route summaries of a cluster's peers: which
// peers are route-complete, which brokers each one lacks, what a start-up
// gate should wait for, and whether the serving peers disagree for longer
// than brokers take to reach them all. It is pure: summaries and a small
// memory of earlier checks in, verdicts out.
//
// A peer is route-complete when every broker live on the other serving peers
// is live in its own table. Brokers register with every NameServer of their
// list in the same round, so a healthy broker appears on all peers within a
// moment of each other; a broker missing from one peer for longer than a
// round (plus a quarter of one as slack) is cut off from it.
package routecheck

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// Observation is the outcome of reading one peer.
type Observation struct {
	// Summary is nil when the peer could not be read; Err says why.
	Summary *peerstatus.Summary
	Err     string
	ReadAt  time.Time
}

// Memory is what the checks remember between reconciles. It only sharpens
// the timing of verdicts: a manager that restarts with an empty memory
// reaches the same verdicts from the summaries' own times.
type Memory struct {
	// lastHeld is when a peer (by ordinal and boot) was last seen holding
	// a broker.
	lastHeld map[peerBroker]time.Time
	// versionSplit is when the peers were first seen to disagree on a
	// broker's DataVersion.
	versionSplit map[peerstatus.BrokerKey]time.Time
}

type peerBroker struct {
	ordinal int32
	bootID  string
	broker  peerstatus.BrokerKey
}

// Input is what a check depends on.
type Input struct {
	Now time.Time
	// Round is the brokers' heartbeat period.
	Round time.Duration
	// Peers are the observations of the peers whose pods run, by ordinal.
	Peers map[int32]Observation
	// Serving are the ordinals that count as serving for the comparison:
	// in the client list, with a ready pod.
	Serving []int32
}

// Missing is a broker a peer lacks.
type Missing struct {
	Broker peerstatus.Broker
	// Since is when the difference began, as far as can be told.
	Since time.Time
}

// Difference is a disagreement between serving peers older than the
// threshold.
type Difference struct {
	Ordinal int32
	Broker  peerstatus.Broker
	// VersionDiffers is set when the peer holds the broker at an older
	// DataVersion; otherwise it lacks the broker.
	VersionDiffers bool
	Since          time.Time
}

// Result is the verdict of a check.
type Result struct {
	// Complete tells, for each peer that could be read, whether it holds
	// every broker the other serving peers hold. A peer is absent when some
	// other serving peer could not be read: then nobody can tell.
	Complete map[int32]bool
	// Missing lists, per peer that could be read, the brokers it lacks,
	// oldest first.
	Missing map[int32][]Missing
	// Expect is, per peer, what its start-up gate should wait for: every
	// broker live on the other serving peers. Like Complete, it is absent
	// when another serving peer could not be read.
	Expect map[int32][]peerstatus.BrokerKey
	// Differences are the disagreements between serving peers that lasted
	// longer than the threshold, oldest first.
	Differences []Difference
	// Unreadable are serving peers that could not be read: the check
	// cannot tell whether they agree.
	Unreadable []int32
	// ConfirmAt is when a younger disagreement becomes old enough to
	// report, zero when none is pending: the reconciler reads the peers
	// again then to confirm it.
	ConfirmAt time.Time
}

// Threshold is how long serving peers may disagree before it is reported.
func Threshold(round time.Duration) time.Duration { return round + round/4 }

// Check compares the peers and updates the memory.
func Check(in Input, mem *Memory) Result {
	if mem.lastHeld == nil {
		mem.lastHeld = map[peerBroker]time.Time{}
		mem.versionSplit = map[peerstatus.BrokerKey]time.Time{}
	}
	res := Result{
		Complete: map[int32]bool{},
		Missing:  map[int32][]Missing{},
		Expect:   map[int32][]peerstatus.BrokerKey{},
	}
	threshold := Threshold(in.Round)

	live := map[int32]map[peerstatus.BrokerKey]peerstatus.Broker{}
	for o, obs := range in.Peers {
		if obs.Summary == nil {
			continue
		}
		m := map[peerstatus.BrokerKey]peerstatus.Broker{}
		for _, b := range obs.Summary.Brokers {
			m[b.BrokerKey] = b
			mem.lastHeld[peerBroker{o, obs.Summary.BootID, b.BrokerKey}] = obs.ReadAt
		}
		live[o] = m
	}
	serving := map[int32]bool{}
	for _, o := range in.Serving {
		if _, ok := in.Peers[o]; !ok {
			continue
		}
		if live[o] == nil {
			res.Unreadable = append(res.Unreadable, o)
			continue
		}
		serving[o] = true
	}
	slices.Sort(res.Unreadable)

	for o, mine := range live {
		// held: every broker of the other serving peers, with the
		// earliest time any of them registered it.
		held := map[peerstatus.BrokerKey]peerstatus.Broker{}
		for q := range serving {
			if q == o {
				continue
			}
			for k, b := range live[q] {
				if cur, ok := held[k]; !ok || b.RegisteredAt.Before(cur.RegisteredAt) {
					held[k] = b
				}
			}
		}
		var missing []Missing
		for k, b := range held {
			if _, ok := mine[k]; ok {
				continue
			}
			since := latest(b.RegisteredAt, in.Peers[o].Summary.StartTime,
				mem.lastHeld[peerBroker{o, in.Peers[o].Summary.BootID, k}])
			missing = append(missing, Missing{Broker: b, Since: since})
		}
		slices.SortFunc(missing, func(a, b Missing) int {
			return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.Broker.Addr, b.Broker.Addr))
		})
		res.Missing[o] = missing
		if !slices.ContainsFunc(res.Unreadable, func(q int32) bool { return q != o }) {
			res.Complete[o] = len(missing) == 0
			expect := slices.Collect(maps.Keys(held))
			slices.SortFunc(expect, compareKeys)
			res.Expect[o] = expect
		}

		if !serving[o] {
			continue
		}
		for _, m := range missing {
			res.consider(Difference{Ordinal: o, Broker: m.Broker, Since: m.Since}, in.Now, threshold)
		}
	}

	// DataVersions: a broker sends its new version to every peer in the
	// same round, so serving peers that hold it at different versions for
	// longer than the threshold missed its registrations.
	seen := map[peerstatus.BrokerKey]bool{}
	for o := range serving {
		for k := range live[o] {
			if seen[k] {
				continue
			}
			seen[k] = true
			newest, split := newestVersion(k, serving, live)
			if !split {
				delete(mem.versionSplit, k)
				continue
			}
			since, ok := mem.versionSplit[k]
			if !ok {
				since = in.Now
				mem.versionSplit[k] = since
			}
			for q := range serving {
				if b, ok := live[q][k]; ok && b.DataVersion != newest {
					res.consider(Difference{Ordinal: q, Broker: b, VersionDiffers: true, Since: since}, in.Now, threshold)
				}
			}
		}
	}
	for k := range mem.versionSplit {
		if !seen[k] {
			delete(mem.versionSplit, k)
		}
	}
	slices.SortFunc(res.Differences, func(a, b Difference) int {
		return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.Ordinal, b.Ordinal), cmp.Compare(a.Broker.Addr, b.Broker.Addr))
	})
	forget(mem, live, in.Now, threshold)
	return res
}

// consider reports a difference older than the threshold, and schedules a
// confirmation for a younger one.
func (r *Result) consider(d Difference, now time.Time, threshold time.Duration) {
	due := d.Since.Add(threshold)
	if !now.Before(due) {
		r.Differences = append(r.Differences, d)
		return
	}
	if r.ConfirmAt.IsZero() || due.Before(r.ConfirmAt) {
		r.ConfirmAt = due
	}
}

// newestVersion is the newest DataVersion among the serving peers that hold
// a broker, and whether any of them holds another.
func newestVersion(k peerstatus.BrokerKey, serving map[int32]bool, live map[int32]map[peerstatus.BrokerKey]peerstatus.Broker) (peerstatus.DataVersion, bool) {
	var newest peerstatus.DataVersion
	first, split := true, false
	for q := range serving {
		b, ok := live[q][k]
		if !ok {
			continue
		}
		switch {
		case first:
			newest, first = b.DataVersion, false
		case b.DataVersion != newest:
			split = true
			if newer(b.DataVersion, newest) {
				newest = b.DataVersion
			}
		}
	}
	return newest, split
}

// newer orders DataVersions as brokers advance them: by state version, then
// timestamp, then counter.
func newer(a, b peerstatus.DataVersion) bool {
	return cmp.Or(cmp.Compare(a.StateVersion, b.StateVersion), cmp.Compare(a.Timestamp, b.Timestamp), cmp.Compare(a.Counter, b.Counter)) > 0
}

// forget drops memories too old to change a verdict, so the memory stays
// as small as the brokers of the live peers.
func forget(mem *Memory, live map[int32]map[peerstatus.BrokerKey]peerstatus.Broker, now time.Time, threshold time.Duration) {
	for pb, at := range mem.lastHeld {
		if _, held := live[pb.ordinal][pb.broker]; !held && now.Sub(at) > 4*threshold {
			delete(mem.lastHeld, pb)
		}
	}
}

func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

func compareKeys(a, b peerstatus.BrokerKey) int {
	return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Addr, b.Addr))
}

// Describe names a broker for status and events: cluster/name@address.
func Describe(b peerstatus.Broker) string {
	return fmt.Sprintf("%s/%s@%s", b.Cluster, b.BrokerName, b.Addr)
}
