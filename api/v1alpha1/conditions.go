package v1alpha1

// Condition types of a NameServerCluster. Each says one thing a person or an
// alert would ask; the reasons below are the only values their Reason takes.
const (
	// ConditionAvailable is True while at least one peer of the client list
	// is ready, so clients can get routes somewhere.
	ConditionAvailable = "Available"

	// ConditionProgressing is True while the operator is moving the cluster
	// towards its spec: creating or removing peers, rolling them to a new
	// pod template, draining removed peers, or waiting for new peers to
	// become route-complete before publishing them. False means nothing is
	// moving: either the cluster is at its spec (Stable), or something holds
	// it (RolloutPaused, ScaleDownHeld, Blocked), and the message says what.
	ConditionProgressing = "Progressing"

	// ConditionDegraded is True when a person should look: part of the spec
	// is refused, or more peers of the client list are unready than the
	// operator's own roll accounts for (a roll restarts one at a time, so
	// one peer restarting during a roll is not degraded; two are, and so is
	// one outside a roll).
	ConditionDegraded = "Degraded"

	// ConditionAddressesPublished is True when the client list names every
	// desired peer and every address ConfigMap, copies included, holds the
	// current lists.
	ConditionAddressesPublished = "AddressesPublished"

	// ConditionRoutesConsistent is True when every serving peer holds the
	// same live brokers at the same DataVersions, or any difference is
	// younger than a broker round and a quarter (brokers register with all
	// peers in the same round). False names a broker and a peer that lacks
	// it: typically a broker that can reach only some peers. Unknown when a
	// peer cannot be read.
	ConditionRoutesConsistent = "RoutesConsistent"

	// ConditionKVConfigInSync is True when every peer holds spec.kvConfig as
	// spec.kvConfigPolicy asks. False names a peer and a key that differ.
	ConditionKVConfigInSync = "KVConfigInSync"
)

// Reasons of the Available condition.
const (
	ReasonPeersServing  = "PeersServing"
	ReasonNoPeerServing = "NoPeerServing"
)

// Reasons of the Progressing condition.
const (
	ReasonScaling       = "Scaling"
	ReasonRollingOut    = "RollingOut"
	ReasonDraining      = "Draining"
	ReasonPublishing    = "Publishing"
	ReasonRolloutPaused = "RolloutPaused"
	ReasonScaleDownHeld = "ScaleDownHeld"
	ReasonBlocked       = "Blocked"
	ReasonStable        = "Stable"
)

// Reasons of the Degraded condition, which also names the refusal when part
// of the spec is refused (the Refusal* reasons).
const (
	ReasonAsExpected    = "AsExpected"
	ReasonPeersNotReady = "PeersNotReady"
)

// Reasons of the AddressesPublished condition.
const (
	ReasonPublished       = "Published"
	ReasonWaitingForPeers = "WaitingForPeers"
)

// Reasons of the RoutesConsistent condition.
const (
	ReasonConsistent         = "Consistent"
	ReasonBrokerMissing      = "BrokerMissing"
	ReasonDataVersionDiffers = "DataVersionDiffers"
	ReasonPeerUnreachable    = "PeerUnreachable"
	ReasonNotChecked         = "NotChecked"
)

// Reasons of the KVConfigInSync condition (with ReasonPeerUnreachable and
// ReasonNotChecked).
const (
	ReasonInSync          = "InSync"
	ReasonKVDrift         = "Drift"
	ReasonKVNotDelivered  = "NotDelivered"
	ReasonNothingDeclared = "NothingDeclared"
)

// Refusal reasons: parts of the spec the operator cannot honour. They are
// the Reason of Degraded (and of AddressesPublished for targets), of the
// Warning events, and the reason label of the refusals metric.
const (
	// RefusalNotOwned: an object the operator would create already exists
	// and is not this cluster's; it is left alone.
	RefusalNotOwned = "NotOwned"
	// RefusalTarget: a publish target cannot be written (its namespace is
	// the cluster's own, outside the operator's namespaces, has not opted
	// in, or does not exist).
	RefusalTarget = "TargetRefused"
	// RefusalInvalid: the API server found a rendered object invalid, for
	// example a change to an immutable field.
	RefusalInvalid = "ApplyInvalid"
	// RefusalAPIServer: the API server refused a write it may accept later
	// (a ResourceQuota, an admission webhook, a permission); the operator
	// retries with back-off.
	RefusalAPIServer = "APIServerRefused"
)
