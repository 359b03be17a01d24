package route

import (
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

// EvictReason says why a broker left the live table.
type EvictReason string

// Why brokers are removed.
const (
	EvictUnregister EvictReason = "unregister"
	EvictClosed     EvictReason = "connection_closed"
	EvictExpired    EvictReason = "expired"
)

// Unregistration is one UNREGISTER_BROKER request: the address to remove
// and the broker group it is a member of.
type Unregistration struct {
	Cluster    string
	BrokerAddr string
	BrokerName string
}

// Unregister removes a broker address on its own request
// (docs/protocol.md#unregistration). Unlike the
// 5.x queue, it applies synchronously, so the answer is sent only once the
// route no longer lists the broker.
func (t *Table) Unregister(u Unregistration) {
	t.write(func(c *changes) {
		t.unregister(c, u.Cluster, u.BrokerAddr, u.BrokerName, EvictUnregister)
	})
}

// ChannelClosed evicts every broker whose latest registration came over ch
// (docs/protocol.md#closed-connections). A connection that is no longer any
// broker's latest evicts nothing.
func (t *Table) ChannelClosed(ch Channel) {
	t.write(func(c *changes) {
		for key, li := range t.live {
			if li.channel == ch {
				t.log.Info("broker connection closed; evicting", "cluster", key.Cluster, "broker", li.brokerName, "addr", key.Addr)
				t.unregister(c, key.Cluster, key.Addr, li.brokerName, EvictClosed)
			}
		}
	})
}

// ScanExpired evicts every broker silent for longer than its timeout and
// closes its connection (docs/protocol.md#expiry). It returns how many it
// evicted.
func (t *Table) ScanExpired() int {
	now := t.nowMillis()
	var closing []Channel
	n := 0
	t.write(func(c *changes) {
		for key, li := range t.live {
			if li.lastUpdate+li.timeout >= now {
				continue
			}
			t.log.Warn("broker expired; evicting", "cluster", key.Cluster, "broker", li.brokerName, "addr", key.Addr,
				"silentMillis", now-li.lastUpdate, "timeoutMillis", li.timeout)
			if li.channel != nil {
				closing = append(closing, li.channel)
			}
			t.unregister(c, key.Cluster, key.Addr, li.brokerName, EvictExpired)
			n++
		}
	})
	// Closed outside the lock: closing runs ChannelClosed, which finds the
	// entries already gone.
	for _, ch := range closing {
		ch.Close()
	}
	return n
}

// unregister is the 5.x RouteInfoManager.unRegisterBroker for one address:
// the group loses every id that has this address, and its topics go with
// its last address.
func (t *Table) unregister(c *changes, cluster, addr, brokerName string, why EvictReason) {
	key := liveKey{cluster, addr}
	if _, ok := t.live[key]; ok {
		delete(t.live, key)
		t.stats.evictions(why).Add(1)
	}
	if _, ok := t.filters[key]; ok {
		delete(t.filters, key)
		t.touchBroker(c, brokerName)
	}
	b := t.brokers[brokerName]
	if b == nil {
		return
	}
	for id, a := range b.addrs {
		if a == addr {
			delete(b.addrs, id)
			t.touchBroker(c, brokerName)
		}
	}
	if len(b.addrs) == 0 {
		delete(t.brokers, brokerName)
		if names := t.clusters[cluster]; names != nil {
			delete(names, brokerName)
			if len(names) == 0 {
				delete(t.clusters, cluster)
			}
		}
		c.brokers = true
		for name := range t.brokerTopics[brokerName] {
			t.removeQueue(c, name, brokerName)
		}
		return
	}
	if _, hasMaster := b.addrs[0]; !hasMaster && b.actingMaster {
		// A group left without a master stops taking writes until one
		// returns or a prime slave registers.
		for name := range t.brokerTopics[brokerName] {
			if tp := c.lookup(t, name); tp != nil {
				t.modifyQueue(c, tp, brokerName, func(q *body.QueueData) { q.Perm &^= protocol.PermWrite })
			}
		}
	}
}

// WipeWritePerm clears the write permission of every queue of a broker
// name and returns how many queue entries it touched
// (docs/protocol.md#write-perm).
func (t *Table) WipeWritePerm(brokerName string) int {
	return t.setPerm(brokerName, func(p int32) int32 { return p &^ protocol.PermWrite })
}

// AddWritePerm sets the permission of every queue of a broker name to
// read-write, exactly 6 as Java does, and returns the count.
func (t *Table) AddWritePerm(brokerName string) int {
	return t.setPerm(brokerName, func(int32) int32 { return protocol.PermRead | protocol.PermWrite })
}

func (t *Table) setPerm(brokerName string, f func(int32) int32) int {
	n := 0
	t.write(func(c *changes) {
		for name := range t.brokerTopics[brokerName] {
			if tp := c.lookup(t, name); tp != nil && t.modifyQueue(c, tp, brokerName, func(q *body.QueueData) { q.Perm = f(q.Perm) }) {
				n++
			}
		}
	})
	return n
}

// DeleteTopic removes a topic (docs/protocol.md#topic-lists): from the
// brokers of one cluster, or,
// with cluster "", entirely. Static-topic mappings stay, as in Java.
func (t *Table) DeleteTopic(name, cluster string) {
	t.write(func(c *changes) {
		if cluster == "" {
			t.dropTopic(c, name)
			return
		}
		for brokerName := range t.clusters[cluster] {
			t.removeQueue(c, name, brokerName)
		}
	})
}
