// Package peerstatus is the JSON a NameServer gives of itself on its HTTP
// port for whoever compares peers: a small summary of its route table (live
// brokers with their DataVersions, counts, a digest), the state of its
// start-up route gate, and whether its KV store holds the declared KV
// config. The operator reads it to tell whether a peer is route-complete and
// in sync, and nsadmin shows it.
//
// Peers never talk to each other. Nothing here carries routes from one peer
// to another: the gate request names brokers a peer must have heard from
// itself before it answers clients, never what they registered.
//
// The endpoints:
//
//	GET  /routes/summary         Summary
//	POST /routes/gate            GateRequest in, Summary out
//	POST /kv/declared/apply      no body, KVStatus out
package peerstatus

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// Paths of the endpoints on the NameServer's HTTP port.
const (
	SummaryPath = "/routes/summary"
	GatePath    = "/routes/gate"
	KVApplyPath = "/kv/declared/apply"
	ContentType = "application/json"
)

// MaxListed bounds the lists of missing brokers and drifted keys, so a
// summary stays small however far a peer is behind.
const MaxListed = 20

// Summary is GET /routes/summary.
type Summary struct {
	// BootID is random per process start: a different BootID is a restart,
	// whatever the pod's status says.
	BootID    string    `json:"bootID"`
	StartTime time.Time `json:"startTime"`
	Gate      Gate      `json:"gate"`
	Counts    Counts    `json:"counts"`
	// Digest identifies the set of live brokers and their DataVersions:
	// two peers with the same digest hold the registrations of the same
	// brokers at the same versions. It is "" when no broker is live
	// (BrokersDigest).
	Digest  string   `json:"digest"`
	Brokers []Broker `json:"brokers"`
	// KV is the state of the declared KV config; nil when the NameServer
	// has no declared-KV file configured.
	KV *KVStatus `json:"kv,omitempty"`
}

// Counts are the sizes of the route table.
type Counts struct {
	Brokers  int `json:"brokers"`
	Clusters int `json:"clusters"`
	Topics   int `json:"topics"`
}

// BrokerKey names one live broker address, as the route table keys it.
type BrokerKey struct {
	Cluster string `json:"cluster"`
	Addr    string `json:"addr"`
}

// Broker is one live broker address.
type Broker struct {
	BrokerKey
	BrokerName  string      `json:"brokerName"`
	BrokerID    int64       `json:"brokerId"`
	DataVersion DataVersion `json:"dataVersion"`
	// RegisteredAt is when this live entry began: its first registration
	// since it was last absent from this peer's table.
	RegisteredAt time.Time `json:"registeredAt"`
	// LastUpdate is its latest registration or heartbeat.
	LastUpdate time.Time `json:"lastUpdate"`
}

// DataVersion is a broker's topic-config version, as it registered it.
type DataVersion struct {
	StateVersion int64 `json:"stateVersion"`
	Timestamp    int64 `json:"timestamp"`
	Counter      int64 `json:"counter"`
}

// Gate is the start-up route gate. A NameServer started with the gate
// enabled does not answer clients' route and KV reads until it is open: it
// closes their connection instead, which makes RocketMQ clients move to
// another NameServer, where an answer "topic does not exist" would not. Broker
// connections are always served, so brokers can register with it.
type Gate struct {
	Enabled bool `json:"enabled"`
	Open    bool `json:"open"`
	// OpenedBy says what opened it: "request" (a gate request's brokers
	// were all live), "wait" (a request's WaitSeconds after start passed
	// first), "timeout" (routeGateTimeoutSeconds passed first), or "" while
	// closed or disabled.
	OpenedBy string `json:"openedBy,omitempty"`
	// Deadline is when a closed gate opens if no broker registers or
	// leaves: the latest request's WaitSeconds or the timeout after start,
	// whichever comes first, but not before WarmUpUntil; or WarmUpUntil
	// when the request is met already.
	Deadline *time.Time `json:"deadline,omitempty"`
	// Expected counts the brokers of the latest gate request; Missing are
	// those of them not live here yet (at most MaxListed).
	Expected int         `json:"expected"`
	Missing  []BrokerKey `json:"missing,omitempty"`
	// Record is what this NameServer's previous process recorded of its
	// live brokers (its persisted record), nil when it found none: after a
	// full outage or in a one-replica cluster, no serving peer can say which
	// brokers to wait for, and this is what was live before the restart.
	Record *GateRecord `json:"record,omitempty"`
	// WarmUpUntil is when the warm-up needWaitForService asks for ends; a
	// closed gate does not open before it. Nil without a warm-up.
	WarmUpUntil *time.Time `json:"warmUpUntil,omitempty"`
}

// GateRecord is a NameServer's persisted record of its live brokers.
type GateRecord struct {
	// RecordedAt is when the brokers were last seen live together.
	RecordedAt time.Time   `json:"recordedAt"`
	Brokers    []BrokerKey `json:"brokers"`
}

// GateRequest is POST /routes/gate: open the gate once every one of these
// brokers is live in this NameServer's own table (at once when the list is
// empty). Each request replaces the previous list; an open gate stays open.
type GateRequest struct {
	Expect []BrokerKey `json:"expect"`
	// WaitSeconds, when above 0, says that no serving peer vouches for
	// Expect (every peer restarted, or the cluster has one replica): Expect
	// is what was live before the restart as far as anyone recorded it.
	// The gate then opens once every broker of a non-empty Expect is live,
	// or WaitSeconds after the NameServer started (one broker round and
	// some slack), whichever comes first; an empty Expect does not open it
	// at once.
	WaitSeconds int `json:"waitSeconds,omitempty"`
}

// MaxGateWaitSeconds bounds GateRequest.WaitSeconds; a request above it,
// or below 0, is refused. The timeout bounds the wait anyway; this catches
// a unit mix-up.
const MaxGateWaitSeconds = 3600

// KV policies of a declared-KV file.
const (
	// PolicyOwned: declared values are enforced; keys the declaration does
	// not name are left alone (the removed ones excepted).
	PolicyOwned = "Owned"
	// PolicyExclusive: the namespaces of the declaration belong to it;
	// declared values are enforced and undeclared keys in them are deleted.
	PolicyExclusive = "Exclusive"
	// PolicyAdditive: declared keys are written where absent; a key that
	// holds another value is reported, not overwritten; nothing undeclared
	// is deleted.
	PolicyAdditive = "Additive"
)

// KVFile is the declared-KV file the NameServer reads (--kv-declared-file),
// rendered by the operator from spec.kvConfig into a ConfigMap.
type KVFile struct {
	Policy string `json:"policy"`
	// ConfigTable is namespace -> key -> value, as in kvConfig.json.
	ConfigTable map[string]map[string]string `json:"configTable"`
	// Removed are keys an earlier declaration held and this one does not:
	// they are deleted wherever present.
	Removed map[string][]string `json:"removed,omitempty"`
}

// Drift reasons.
const (
	DriftMissing    = "missing"
	DriftDiffers    = "differs"
	DriftUndeclared = "undeclared"
	DriftRemoved    = "removed"
)

// KVDrift is one key whose value differs from the declaration.
type KVDrift struct {
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
	Reason    string `json:"reason"`
}

// KVStatus compares the KV store with the declared-KV file.
type KVStatus struct {
	File string `json:"file"`
	// Digest is the hex SHA-256 of the file's bytes as last read; "" when
	// the file does not exist (yet).
	Digest string `json:"digest"`
	Policy string `json:"policy,omitempty"`
	// InSync is true when the store holds the declaration exactly as the
	// policy asks: Owned and Exclusive, no drift at all; Additive, no key missing and no
	// removed key present (a key holding another value is listed as
	// "differs" but, not being the declaration's to change, does not
	// count). It is false while Error is set.
	InSync bool      `json:"inSync"`
	Drift  []KVDrift `json:"drift,omitempty"`
	// Error is why the file could not be read or applied, if it could not.
	Error string `json:"error,omitempty"`
}

// Encode renders a declared-KV file. encoding/json writes map keys sorted,
// so the same declaration always gives the same bytes, and the operator's
// digest of what it rendered equals the NameServer's digest of what it read.
func (f KVFile) Encode() ([]byte, error) {
	return json.Marshal(f)
}

// Digest is the hex SHA-256 of a declared-KV file's bytes (KVStatus.Digest).
func Digest(file []byte) string {
	sum := sha256.Sum256(file)
	return hex.EncodeToString(sum[:])
}

// BrokersDigest is Summary.Digest: the hex SHA-256 of one line per broker,
// "cluster|addr|brokerName|brokerId|stateVersion|timestamp|counter\n",
// the lines sorted; "" for no broker. The order of brokers does not matter.
func BrokersDigest(brokers []Broker) string {
	if len(brokers) == 0 {
		return ""
	}
	lines := make([]string, len(brokers))
	size := 0
	var b []byte
	for i, br := range brokers {
		b = append(b[:0], br.Cluster...)
		b = append(b, '|')
		b = append(b, br.Addr...)
		b = append(b, '|')
		b = append(b, br.BrokerName...)
		for _, n := range [...]int64{br.BrokerID, br.DataVersion.StateVersion, br.DataVersion.Timestamp, br.DataVersion.Counter} {
			b = append(b, '|')
			b = strconv.AppendInt(b, n, 10)
		}
		b = append(b, '\n')
		lines[i] = string(b)
		size += len(lines[i])
	}
	slices.Sort(lines)
	all := make([]byte, 0, size)
	for _, l := range lines {
		all = append(all, l...)
	}
	sum := sha256.Sum256(all)
	return hex.EncodeToString(sum[:])
}
