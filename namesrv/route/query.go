package route

import (
	"maps"
	"slices"

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

// ClusterInfo returns the encoded GET_BROKER_CLUSTER_INFO body. Every 5.x
// broker asks for it every 5 s, so it is cached until a broker group or
// cluster membership changes.
func (t *Table) ClusterInfo() []byte {
	if p := t.clusterInfo.Load(); p != nil {
		return *p
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.clusterInfo.Load(); p != nil {
		return *p
	}
	var ci body.ClusterInfo
	for _, name := range slices.Sorted(maps.Keys(t.brokers)) {
		ci.Brokers = append(ci.Brokers, t.brokers[name].data())
	}
	for _, cluster := range slices.Sorted(maps.Keys(t.clusters)) {
		ci.Clusters = append(ci.Clusters, body.ClusterMembers{
			Cluster:     cluster,
			BrokerNames: slices.Sorted(maps.Keys(t.clusters[cluster])),
		})
	}
	b := body.AppendClusterInfo(nil, &ci)
	t.clusterInfo.Store(&b)
	return b
}

// AllTopics lists every topic with queue data (GET_ALL_TOPIC_LIST), sorted.
func (t *Table) AllTopics() []string {
	var out []string
	t.index.Load().each(func(tp *topic) {
		if tp.view.Load() != nil {
			out = append(out, tp.name)
		}
	})
	slices.Sort(out)
	return out
}

// TopicsByCluster lists the topics served by any broker name of a cluster.
func (t *Table) TopicsByCluster(cluster string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	set := map[string]struct{}{}
	for name := range t.clusters[cluster] {
		for topic := range t.brokerTopics[name] {
			set[topic] = struct{}{}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// SystemTopics lists every cluster name and broker name (brokers create
// topics named after both), plus one broker address for the admin tool to
// ask for the rest (GET_SYSTEM_TOPIC_LIST_FROM_NS;
// docs/protocol.md#topic-lists).
func (t *Table) SystemTopics() (topics []string, brokerAddr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	set := map[string]struct{}{}
	for cluster, names := range t.clusters {
		set[cluster] = struct{}{}
		for name := range names {
			set[name] = struct{}{}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(t.brokers)) {
		if bd := t.brokers[name].data(); len(bd.Addrs) > 0 {
			brokerAddr = bd.Addrs[0].Addr
			break
		}
	}
	return slices.Sorted(maps.Keys(set)), brokerAddr
}

// UnitFilter selects topics by their topicSysFlag (codes 311-313).
type UnitFilter int

// The three unit-topic queries.
const (
	Unit           UnitFilter = iota // flag has UNIT
	HasUnitSub                       // flag has UNIT_SUB
	HasUnitSubOnly                   // flag has UNIT_SUB and not UNIT
)

// UnitTopics lists topics whose flag matches. Java looks at an arbitrary
// QueueData of the topic; this looks at the first by broker name, so the
// answer is deterministic. It reads the views and takes no lock.
func (t *Table) UnitTopics(f UnitFilter) []string {
	var out []string
	t.index.Load().each(func(tp *topic) {
		v := tp.view.Load()
		if v == nil {
			return
		}
		flag := v.queues()[0].TopicSysFlag
		unit, sub := flag&protocol.FlagUnit != 0, flag&protocol.FlagUnitSub != 0
		if f == Unit && unit || f == HasUnitSub && sub || f == HasUnitSubOnly && sub && !unit {
			out = append(out, tp.name)
		}
	})
	slices.Sort(out)
	return out
}

// MemberGroup returns the addresses of a broker group, sorted by id
// (GET_BROKER_MEMBER_GROUP).
func (t *Table) MemberGroup(brokerName string) []body.BrokerAddr {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.brokers[brokerName]
	if b == nil {
		return nil
	}
	return b.data().Addrs
}

// QueryDataVersion answers QUERY_DATA_VERSION
// (docs/protocol.md#query-data-version): whether the broker's
// topic metadata differs from what this NameServer holds, and the stored
// version if any. Like 5.x it also counts as a heartbeat.
func (t *Table) QueryDataVersion(broker AddrKey, dv body.DataVersion) (changed bool, stored body.DataVersion, found bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	li := t.live[broker]
	if li == nil {
		return true, body.DataVersion{}, false
	}
	li.lastUpdate = t.nowMillis()
	return li.dataVersion != dv, li.dataVersion, true
}

// Heartbeat refreshes a broker's liveness (BROKER_HEARTBEAT).
func (t *Table) Heartbeat(broker AddrKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if li := t.live[broker]; li != nil {
		li.lastUpdate = t.nowMillis()
	}
}

// RegisterTopic adds a topic's queue data for known broker names
// (RouteInfoManager.registerTopic, docs/protocol.md#topic-registration).
// For a new topic nothing is stored
// unless every broker name is known; for an existing one, entries are
// applied in order up to the first unknown name, as Java does.
func (t *Table) RegisterTopic(name string, queues []body.QueueData) {
	if len(queues) == 0 {
		return
	}
	t.write(func(c *changes) {
		if c.lookup(t, name) == nil {
			for _, q := range queues {
				if t.brokers[q.BrokerName] == nil {
					t.log.Warn("register topic names an unknown broker", "topic", name, "broker", q.BrokerName)
					return
				}
			}
		}
		for _, q := range queues {
			if t.brokers[q.BrokerName] == nil {
				t.log.Warn("register topic names an unknown broker", "topic", name, "broker", q.BrokerName)
				return
			}
			t.putQueue(c, []byte(name), q)
		}
	})
}
