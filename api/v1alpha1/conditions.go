package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ConditionType is the Type of a NameServerCluster condition. It is a type
// of its own, like the reasons, so that only the constants below fit where
// the operator expects one; metav1.Condition holds them as plain strings.
type ConditionType string

// ConditionReason is the Reason of a NameServerCluster condition.
type ConditionReason string

// EventReason is the reason of an event the operator records about a
// NameServerCluster, as `kubectl get events` shows it.
type EventReason string

// Condition types of a NameServerCluster. Each says one thing a person or an
// alert would ask; the reasons below are the only values their Reason takes.
const (
	// ConditionAvailable is True while at least one peer of the client list
	// is ready, so clients can get routes somewhere.
	ConditionAvailable ConditionType = "Available"

	// ConditionProgressing is True while the operator is moving the cluster
	// towards its spec: creating or removing peers, rolling them to a new
	// pod template, draining removed peers, or waiting for new peers to
	// become route-complete before publishing them. False means nothing is
	// moving: either the cluster is at its spec (Stable), or something holds
	// it (RolloutPaused, ScaleDownHeld, Blocked), and the message says what.
	ConditionProgressing ConditionType = "Progressing"

	// ConditionDegraded is True when a person should look: part of the spec
	// is refused, or more peers of the client list are unready than the
	// operator's own roll accounts for (a roll restarts one at a time, so
	// one peer restarting during a roll is not degraded; two are, and so is
	// one outside a roll).
	ConditionDegraded ConditionType = "Degraded"

	// ConditionAddressesPublished is True when the client list names every
	// desired peer and every address ConfigMap, copies included, holds the
	// current lists.
	ConditionAddressesPublished ConditionType = "AddressesPublished"

	// ConditionRoutesConsistent is True when every serving peer holds the
	// same live brokers at the same DataVersions, or any difference is
	// younger than a broker round and a quarter (brokers register with all
	// peers in the same round). False names a broker and a peer that lacks
	// it: typically a broker that can reach only some peers. Unknown when a
	// peer cannot be read.
	ConditionRoutesConsistent ConditionType = "RoutesConsistent"

	// ConditionKVConfigInSync is True when every peer holds spec.kvConfig as
	// spec.kvConfigPolicy asks. False names a peer and a key that differ.
	ConditionKVConfigInSync ConditionType = "KVConfigInSync"
)

// Reasons of the Available condition.
const (
	ReasonPeersServing  ConditionReason = "PeersServing"
	ReasonNoPeerServing ConditionReason = "NoPeerServing"
)

// Reasons of the Progressing condition.
const (
	ReasonScaling       ConditionReason = "Scaling"
	ReasonRollingOut    ConditionReason = "RollingOut"
	ReasonDraining      ConditionReason = "Draining"
	ReasonPublishing    ConditionReason = "Publishing"
	ReasonRolloutPaused ConditionReason = "RolloutPaused"
	ReasonScaleDownHeld ConditionReason = "ScaleDownHeld"
	ReasonBlocked       ConditionReason = "Blocked"
	ReasonStable        ConditionReason = "Stable"
)

// Reasons of the Degraded condition, which also names the refusal when part
// of the spec is refused (the Refusal* reasons).
const (
	ReasonAsExpected    ConditionReason = "AsExpected"
	ReasonPeersNotReady ConditionReason = "PeersNotReady"
)

// Reasons of the AddressesPublished condition.
const (
	ReasonPublished       ConditionReason = "Published"
	ReasonWaitingForPeers ConditionReason = "WaitingForPeers"
)

// Reasons of the RoutesConsistent condition.
const (
	ReasonConsistent         ConditionReason = "Consistent"
	ReasonBrokerMissing      ConditionReason = "BrokerMissing"
	ReasonDataVersionDiffers ConditionReason = "DataVersionDiffers"
	ReasonPeerUnreachable    ConditionReason = "PeerUnreachable"
	ReasonNotChecked         ConditionReason = "NotChecked"
)

// Reasons of the KVConfigInSync condition (with ReasonPeerUnreachable and
// ReasonNotChecked).
const (
	ReasonInSync          ConditionReason = "InSync"
	ReasonKVDrift         ConditionReason = "Drift"
	ReasonKVNotDelivered  ConditionReason = "NotDelivered"
	ReasonNothingDeclared ConditionReason = "NothingDeclared"
)

// Refusal reasons: parts of the spec the operator cannot honour. They are
// the Reason of Degraded (and of AddressesPublished for targets), of the
// Warning events, and the reason label of the refusals metric.
const (
	// RefusalNotOwned: an object the operator would create already exists
	// and is not this cluster's; it is left alone.
	RefusalNotOwned ConditionReason = "NotOwned"
	// RefusalTarget: a publish target cannot be written (its namespace is
	// the cluster's own, outside the operator's namespaces, has not opted
	// in, or does not exist).
	RefusalTarget ConditionReason = "TargetRefused"
	// RefusalInvalid: the API server found a rendered object invalid, for
	// example a change to an immutable field.
	RefusalInvalid ConditionReason = "ApplyInvalid"
	// RefusalConfigInvalid: the NameServer would refuse spec.config (a
	// value that does not parse, one out of range, a combination that would
	// stop it); nothing of the spec is applied until it is fixed.
	RefusalConfigInvalid ConditionReason = "ConfigInvalid"
	// RefusalAPIServer: the API server refused a write it may accept later
	// (a ResourceQuota, an admission webhook, a permission); the operator
	// retries with back-off.
	RefusalAPIServer ConditionReason = "APIServerRefused"
	// RefusalHTTPToken: the Secret <name>-http-token holds no token the
	// peers would accept; the operator cannot change Secrets, so it must
	// be deleted for the operator to create a new one.
	RefusalHTTPToken ConditionReason = "HTTPTokenInvalid"
)

// RefusalReasons are every Refusal* reason. The alert on standing refusals
// (NamesrvSpecRefused) lists them.
var RefusalReasons = []ConditionReason{RefusalNotOwned, RefusalTarget, RefusalInvalid, RefusalConfigInvalid, RefusalAPIServer, RefusalHTTPToken}

// Reasons of the events about a NameServerCluster. Warnings about refused
// parts of the spec use the Refusal* reasons (RefusalEvent), and holds of a
// roll or a scale-down the Progressing condition's.
const (
	EventCreated            EventReason = "Created"
	EventUpdated            EventReason = "Updated"
	EventDeleted            EventReason = "Deleted"
	EventPublished          EventReason = "Published"
	EventDraining           EventReason = "Draining"
	EventRollingPeer        EventReason = "RollingPeer"
	EventRouteGateOpened    EventReason = "RouteGateOpened"
	EventRoutesInconsistent EventReason = "RoutesInconsistent"
	EventRoutesConsistent   EventReason = "RoutesConsistent"
	EventKVConfigCorrected  EventReason = "KVConfigCorrected"
	EventKVConfigDrift      EventReason = "KVConfigDrift"
	EventManagerTookOver    EventReason = "ManagerTookOver"
	// EventExposedUnauthenticated: spec.externalAccess exposes the
	// remoting port outside the cluster with nothing limiting who reaches
	// it (allowUnauthenticated).
	EventExposedUnauthenticated EventReason = "ExposedUnauthenticated"
	EventScaleDownHeld          EventReason = EventReason(ReasonScaleDownHeld)
	EventRolloutPaused          EventReason = EventReason(ReasonRolloutPaused)
)

// RefusalEvent is the reason of the Warning event about a refusal: the
// refusal's own reason, so that the condition and the event name it alike.
func RefusalEvent(r ConditionReason) EventReason { return EventReason(r) }

// Condition builds the metav1.Condition of a type and reason: the one place
// where the typed values become the strings the API stores.
func Condition(t ConditionType, status metav1.ConditionStatus, reason ConditionReason, message string, generation int64, now metav1.Time) metav1.Condition {
	return metav1.Condition{
		Type: string(t), Status: status, Reason: string(reason), Message: message,
		ObservedGeneration: generation, LastTransitionTime: now,
	}
}

// FindCondition is the condition of a type, nil when absent.
func FindCondition(conditions []metav1.Condition, t ConditionType) *metav1.Condition {
	for i := range conditions {
		if conditions[i].Type == string(t) {
			return &conditions[i]
		}
	}
	return nil
}
