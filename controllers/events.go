package controllers

// Reasons of the events the operator records about a NameServerCluster, as
// `kubectl get events` shows them. Warnings about refused parts of the spec
// use the v1alpha1.Refusal* reasons, and the rolls' holds use the
// Progressing condition's reasons.
const (
	EventCreated            = "Created"
	EventUpdated            = "Updated"
	EventDeleted            = "Deleted"
	EventPublished          = "Published"
	EventDraining           = "Draining"
	EventRollingPeer        = "RollingPeer"
	EventRouteGateOpened    = "RouteGateOpened"
	EventRoutesInconsistent = "RoutesInconsistent"
	EventRoutesConsistent   = "RoutesConsistent"
	EventKVConfigCorrected  = "KVConfigCorrected"
	EventKVConfigDrift      = "KVConfigDrift"
)
