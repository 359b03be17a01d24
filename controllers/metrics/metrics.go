// Package metrics exports the operator's view of each NameServerCluster on
// the manager's /metrics endpoint (controller-runtime's registry): peers
// desired, ready, published and route-complete; whether routes and the
// declared KV config agree across peers; rolls, drains and holds in
// progress; refusals by reason; every status condition with its status and
// reason; and when the address list was last published. Alert rules and the dashboard in the Helm chart are written
// against these names, and a test checks that each name they use is
// exported.
//
// Every series carries the cluster's namespace and name; per-peer series add
// the peer's pod name, which is bounded by spec.replicas. No pod IP, broker
// address or free text is ever a label value.
package metrics

import (
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

const prefix = "kube_namesrv_"

var (
	clusterLabels = []string{"namespace", "name"}
	peerLabels    = []string{"namespace", "name", "peer"}
)

func gaugeVec(name, help string, labels []string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: prefix + name, Help: help}, labels)
}

// The exported metrics.
var (
	DesiredPeers = gaugeVec("cluster_desired_peers",
		"Peers the NameServerCluster asks for (spec.replicas).", clusterLabels)
	ReadyPeers = gaugeVec("cluster_ready_peers",
		"Peer pods that are Ready.", clusterLabels)
	PublishedPeers = gaugeVec("cluster_published_peers",
		"Peers in the list published to clients.", clusterLabels)
	ServingPeers = gaugeVec("cluster_serving_peers",
		"Published peers that are Ready and route-complete: where clients get answers.", clusterLabels)
	RoutesConsistent = gaugeVec("cluster_routes_consistent",
		"1 when every serving peer holds the same live brokers (RoutesConsistent=True), 0 when they differ for longer than a broker round, -1 when the operator cannot tell (a peer it cannot reach).", clusterLabels)
	PeerMissingBrokers = gaugeVec("peer_missing_brokers",
		"Brokers live on other serving peers that this peer does not hold.", peerLabels)
	PeerReachable = gaugeVec("peer_reachable",
		"1 when the operator could read the peer's route summary at its last check, 0 when it could not.", peerLabels)
	KVConfigInSync = gaugeVec("cluster_kv_config_in_sync",
		"1 when every peer holds the declared KV config (KVConfigInSync=True), 0 when one differs, -1 when the operator cannot tell.", clusterLabels)
	PeerKVDriftKeys = gaugeVec("peer_kv_drift_keys",
		"Declared KV keys whose value on this peer differs from spec.kvConfig.", peerLabels)
	RolloutInProgress = gaugeVec("cluster_rollout_in_progress",
		"1 while peers run an outdated pod template and the operator is rolling them.", clusterLabels)
	RolloutPaused = gaugeVec("cluster_rollout_paused",
		"1 while spec.paused holds a roll of outdated peers.", clusterLabels)
	OutdatedPeers = gaugeVec("cluster_outdated_peers",
		"Peer pods that run an outdated pod template.", clusterLabels)
	DrainInProgress = gaugeVec("cluster_drain_in_progress",
		"1 while peers removed from the list keep running for the drain period.", clusterLabels)
	ScaleDownHeld = gaugeVec("cluster_scale_down_held",
		"1 while a scale-down waits because the peers that would remain are not serving.", clusterLabels)
	LastPublishTime = gaugeVec("cluster_last_publish_timestamp_seconds",
		"Unix time of the last reconcile that found every address ConfigMap, copies included, holding the current lists; time() minus it grows only while publication fails.", clusterLabels)
	Conditions = gaugeVec("cluster_condition",
		"1 for each status condition of the cluster, labelled with its current status and reason. Unlike the refusal counter, it survives a manager restart: the first pass of a new manager reports a standing refusal again.",
		[]string{"namespace", "name", "type", "status", "reason"})
	Refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: prefix + "cluster_refusals_total",
		Help: "Parts of a spec the operator refused or the API server refused to it, by condition reason.",
	}, []string{"namespace", "name", "reason"})
)

var all = []prometheus.Collector{
	DesiredPeers, ReadyPeers, PublishedPeers, ServingPeers, RoutesConsistent, PeerMissingBrokers,
	PeerReachable, KVConfigInSync, PeerKVDriftKeys, RolloutInProgress, RolloutPaused, OutdatedPeers,
	DrainInProgress, ScaleDownHeld, LastPublishTime, Conditions, Refusals,
}

func init() {
	ctrlmetrics.Registry.MustRegister(all...)
}

// Forget drops every series of a cluster, when it is deleted.
func Forget(namespace, name string) {
	shownConditions.Lock()
	delete(shownConditions.byCluster, [2]string{namespace, name})
	shownConditions.Unlock()
	labels := prometheus.Labels{"namespace": namespace, "name": name}
	for _, c := range all {
		switch v := c.(type) {
		case *prometheus.GaugeVec:
			v.DeletePartialMatch(labels)
		case *prometheus.CounterVec:
			v.DeletePartialMatch(labels)
		}
	}
}

// ForgetPeer drops the per-peer series of one peer, once it no longer runs.
func ForgetPeer(namespace, name, peer string) {
	labels := prometheus.Labels{"namespace": namespace, "name": name, "peer": peer}
	for _, v := range []*prometheus.GaugeVec{PeerMissingBrokers, PeerReachable, PeerKVDriftKeys} {
		v.DeletePartialMatch(labels)
	}
}

// Cluster is what the gauges of one cluster show, derived from its status
// after each reconcile.
type Cluster struct {
	Namespace, Name string
	Desired, Ready  int32
	Published       int32
	Serving         int32
	// RoutesConsistent and KVConfigInSync are 1, 0, or -1 for unknown.
	RoutesConsistent int
	KVConfigInSync   int
	Outdated         int32
	Rolling, Paused  bool
	Draining         bool
	ScaleDownHeld    bool
	// LastPublish is when every address ConfigMap was last confirmed to
	// hold the current lists; zero when that never happened.
	LastPublish time.Time
	Peers       []Peer
	// Conditions are the cluster's status conditions.
	Conditions []Condition
}

// Condition is one status condition: its type, status and reason.
type Condition struct {
	Type, Status, Reason string
}

// Peer is one peer's series; Name is its pod name.
type Peer struct {
	Name           string
	Reachable      bool
	MissingBrokers int
	KVDriftKeys    int
}

// Record sets every gauge of a cluster. Peers absent from c.Peers lose
// their series, so a scale-down leaves no stale peer behind.
func Record(c Cluster) {
	l := prometheus.Labels{"namespace": c.Namespace, "name": c.Name}
	DesiredPeers.With(l).Set(float64(c.Desired))
	ReadyPeers.With(l).Set(float64(c.Ready))
	PublishedPeers.With(l).Set(float64(c.Published))
	ServingPeers.With(l).Set(float64(c.Serving))
	RoutesConsistent.With(l).Set(float64(c.RoutesConsistent))
	KVConfigInSync.With(l).Set(float64(c.KVConfigInSync))
	OutdatedPeers.With(l).Set(float64(c.Outdated))
	RolloutInProgress.With(l).Set(boolValue(c.Rolling))
	RolloutPaused.With(l).Set(boolValue(c.Paused))
	DrainInProgress.With(l).Set(boolValue(c.Draining))
	ScaleDownHeld.With(l).Set(boolValue(c.ScaleDownHeld))
	if !c.LastPublish.IsZero() {
		LastPublishTime.With(l).Set(float64(c.LastPublish.UnixNano()) / 1e9)
	}
	recordConditions(c.Namespace, c.Name, c.Conditions)
	keep := map[string]bool{}
	for _, p := range c.Peers {
		keep[p.Name] = true
		pl := prometheus.Labels{"namespace": c.Namespace, "name": c.Name, "peer": p.Name}
		PeerReachable.With(pl).Set(boolValue(p.Reachable))
		PeerMissingBrokers.With(pl).Set(float64(p.MissingBrokers))
		PeerKVDriftKeys.With(pl).Set(float64(p.KVDriftKeys))
	}
	forgetPeersExcept(c.Namespace, c.Name, keep)
}

// shownConditions are the condition series set for each cluster at its last
// Record, so that the next one drops those that no longer hold.
var shownConditions = struct {
	sync.Mutex
	byCluster map[[2]string][]Condition
}{byCluster: map[[2]string][]Condition{}}

// recordConditions sets one series per condition, then drops the series of
// a former status or reason, in that order, so that a scrape never sees a
// condition without a series and an alert on it never resets its pending
// time.
func recordConditions(namespace, name string, conditions []Condition) {
	shownConditions.Lock()
	defer shownConditions.Unlock()
	for _, c := range conditions {
		Conditions.WithLabelValues(namespace, name, c.Type, c.Status, c.Reason).Set(1)
	}
	key := [2]string{namespace, name}
	for _, old := range shownConditions.byCluster[key] {
		if !slices.Contains(conditions, old) {
			Conditions.DeleteLabelValues(namespace, name, old.Type, old.Status, old.Reason)
		}
	}
	shownConditions.byCluster[key] = slices.Clone(conditions)
}

// Refused counts one refusal of a part of a cluster's spec.
func Refused(namespace, name, reason string) {
	Refusals.WithLabelValues(namespace, name, reason).Inc()
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// forgetPeersExcept drops the per-peer series of a cluster's peers that are
// not in keep.
func forgetPeersExcept(namespace, name string, keep map[string]bool) {
	ch := make(chan prometheus.Metric, 64)
	go func() {
		PeerReachable.Collect(ch)
		close(ch)
	}()
	var gone []string
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			continue
		}
		labels := map[string]string{}
		for _, lp := range pb.GetLabel() {
			labels[lp.GetName()] = lp.GetValue()
		}
		if labels["namespace"] == namespace && labels["name"] == name && !keep[labels["peer"]] {
			gone = append(gone, labels["peer"])
		}
	}
	for _, p := range gone {
		ForgetPeer(namespace, name, p)
	}
}
