// Package kvcheck decides, from each peer's report on its declared-KV file,
// which peers hold spec.kvConfig as the policy asks, which must be told to
// apply it again, and which keys an earlier spec declared and the current
// one removed. It is pure: reports in, verdicts out.
//
// The declaration reaches the peers as a mounted ConfigMap; a peer whose
// file digest differs from the operator's has not been given the current
// declaration yet (the kubelet refreshes mounted ConfigMaps within about a
// minute), which is reported as such and never corrected by force.
package kvcheck

import (
	"fmt"
	"slices"

	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// Peer is what one peer reported; KV is nil when its summary could not be
// read or it has no declared-KV file configured.
type Peer struct {
	Readable bool
	KV       *peerstatus.KVStatus
}

// Verdict is the state of one peer.
type Verdict struct {
	// Known is false when the peer could not be read.
	Known bool
	// Delivered tells whether the peer read the current declaration.
	Delivered bool
	// InSync tells whether it holds exactly the declaration. A value
	// changed by hand under Additive makes it false, so it is reported,
	// although the NameServer counts it as in sync with its policy.
	InSync bool
	// Satisfied tells whether it holds the declaration as the policy asks:
	// what the NameServer itself reports as in sync.
	Satisfied bool
	// Apply is set when the operator should ask the peer to apply the
	// declaration again: it has the current file and does not hold it as
	// the policy asks. Applying sets a declared value back (Owned,
	// Exclusive), writes a declared key that is missing (every policy), and
	// deletes removed keys.
	Apply bool
	// Blocks is set when the peer must not join the client list: it lacks
	// the current declaration, a declared key, or, under Owned and
	// Exclusive, a declared value. A value changed by hand under Additive
	// is reported, and tolerated.
	Blocks bool
	// Drift lists what differs, as <namespace>/<key>: <reason>.
	Drift []string
}

// Check judges every peer against the declaration whose file has digest
// want.
func Check(want string, policy string, peers map[int32]Peer) map[int32]Verdict {
	out := map[int32]Verdict{}
	for o, p := range peers {
		v := Verdict{Known: p.Readable, Blocks: p.Readable}
		switch {
		case !p.Readable:
			v.Blocks = false
		case p.KV == nil:
			v.Drift = []string{"the NameServer reads no declared-KV file (started without --kv-declared-file)"}
		case p.KV.Error != "":
			v.Drift = []string{"the declared-KV file cannot be applied: " + p.KV.Error}
		case p.KV.Digest != want:
			v.Drift = []string{"the current declaration has not reached this peer yet (the kubelet refreshes mounted ConfigMaps within about a minute)"}
		default:
			v.Delivered = true
			// The peer's flag covers drift beyond the listed part; the list
			// check keeps a peer that judged too leniently from serving.
			v.Satisfied = p.KV.InSync && !slices.ContainsFunc(p.KV.Drift, func(d peerstatus.KVDrift) bool {
				return policy != peerstatus.PolicyAdditive || d.Reason != peerstatus.DriftDiffers
			})
			v.InSync = len(p.KV.Drift) == 0
			for _, d := range p.KV.Drift {
				v.Drift = append(v.Drift, fmt.Sprintf("%s/%s: %s", d.Namespace, d.Key, d.Reason))
			}
			v.Apply = !v.Satisfied
			v.Blocks = !v.Satisfied
		}
		out[o] = v
	}
	return out
}

// Track updates the record of declared and removed keys (each as
// <namespace>/<key>). A key the previous spec declared and this one does not
// is removed: the peers are asked to delete it. Removed keys are forgotten
// once every peer holds the current declaration, removals included.
func Track(declaredBefore, removedBefore, declaredNow []string, everyPeerInSync bool) (declared, removed []string) {
	declared = slices.Clone(declaredNow)
	slices.Sort(declared)
	declared = slices.Compact(declared)
	if !everyPeerInSync {
		removed = slices.Clone(removedBefore)
	}
	for _, k := range declaredBefore {
		if !slices.Contains(declared, k) {
			removed = append(removed, k)
		}
	}
	removed = slices.DeleteFunc(removed, func(k string) bool { return slices.Contains(declared, k) })
	slices.Sort(removed)
	return declared, slices.Compact(removed)
}
