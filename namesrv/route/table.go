// Package route is the NameServer's routing registry, Java's RouteInfoManager:
// which brokers are alive, which broker groups serve which topics, and the
// route every producer and consumer asks for.
//
// Writers (registrations, unregistrations, evictions, admin commands) are
// serialized by one mutex. Readers never take it. Each topic's state is an
// immutable view (its queue data, the broker groups serving it, the encoded
// route bodies built on first use) published through an atomic pointer; a
// write builds new views for the topics it touched and swaps them in. The
// topic index is an insert-only hash table, which readers probe with
// atomic loads (see index). A route query is therefore a probe and an
// atomic load, whatever the writers are doing, and allocates nothing once
// its body is cached.
//
// The views are also the only copy of the queue data, and broker groups are
// shared between the views of all their topics, which keeps a table of
// 100,000 topics to a few tens of megabytes.
//
// Semantics follow the 5.x RouteInfoManager (docs/protocol.md#route-table),
// with the deliberate differences listed in docs/compatibility.md.
package route

import (
	"hash/maphash"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

// Channel is the connection a broker registered over. Closing it is how an
// expired broker is cut off; its identity decides which broker a closed
// connection evicts.
type Channel interface {
	Close() error
}

// ViewOptions are the settings that shape route answers; changing them
// rebuilds every route.
type ViewOptions struct {
	// OrderMessageEnable adds orderTopicConf from the KV store
	// (docs/protocol.md#order-topic-conf), read through Options.OrderConf.
	OrderMessageEnable bool
	// SupportActingMaster lets the smallest slave stand in as id 0 for
	// groups without a master whose queues are read-only
	// (docs/protocol.md#acting-master).
	SupportActingMaster bool
}

// Options configure a Table.
type Options struct {
	View ViewOptions
	// DeleteTopicWithBrokerRegistration prunes a master's topics that are
	// absent from its registration (docs/protocol.md#prune-topics).
	DeleteTopicWithBrokerRegistration bool
	// OrderConf returns a topic's ORDER_TOPIC_CONFIG value in the KV store,
	// read whenever a route is built with OrderMessageEnable on (nil: none).
	// The table holds no copy of it: whatever put the value in the store
	// (loading the file at start, a KV write, a declared-KV apply), a route
	// built afterwards carries it. Routes already built are rebuilt by
	// OrderConfChanged, which the store's change callback calls. It must
	// not wait for the table.
	OrderConf func(topic string) (conf string, ok bool)
	// Now is the clock; tests replace it.
	Now func() time.Time
	// OnRegister, if set, runs after every registration that leaves the
	// broker live, outside the writers' lock (it may call the table).
	OnRegister func(cluster, addr string)
	Logger     *slog.Logger
}

// syncBrokerMemberPrefix marks the topics 5.x brokers query to learn their
// group's members; the acting-master rewrite never applies to them.
const syncBrokerMemberPrefix = "rmq_sys_SYNC_BROKER_MEMBER_"

// liveKey keys the live table.
type liveKey = AddrKey

type liveInfo struct {
	// registeredAt is when the entry began: its first registration since
	// the address was last absent (unix ms).
	registeredAt int64
	lastUpdate   int64 // unix ms
	timeout      int64 // ms
	dataVersion  body.DataVersion
	channel      Channel
	haServerAddr string
	brokerName   string
	brokerID     int64
	// What the last fully applied registration from this address looked
	// like, so that a repeat of it can be recognised without decoding its
	// body (see Reregister): the body's fingerprint (0: none given), the
	// group's topicsGen right after, whether it wrote topics (master or
	// 5.x prime slave), and whether it pruned topics it did not list.
	fingerprint uint64
	topicsGen   uint64
	wroteTopics bool
	pruned      bool
	// known lists that registration's topics, when it wrote topics,
	// for the next one (see knownTopic).
	known []knownTopic
}

type brokerState struct {
	cluster      string
	name         string
	addrs        map[int64]string
	zone         string
	actingMaster bool
	modern       bool
	// wire is the group as routes show it, shared by the views of all
	// its topics; nil after a change until the next commit rebuilds it.
	wire *body.BrokerData
	// topicsGen changes whenever any queue data of this broker name
	// changes, whoever changed it (a registration, an admin command, an
	// eviction); values come from Table.gen, so they are never reused.
	topicsGen uint64
}

// topic is one entry of the topic index. Its view is never nil while the
// topic is in the index; a removed topic's view becomes nil, so readers of
// an older index see it gone too.
type topic struct {
	name string
	view atomic.Pointer[view]

	// Writer-only state of the write in progress (under Table.mu; readers
	// never look): whether the topic needs a new view, and its queue data
	// as the write has changed it so far. Kept here rather than in maps of
	// the write because a registration may touch 10,000 topics.
	dirty   bool
	hasWork bool
	work    []body.QueueData
	// fresh marks a topic this write created.
	fresh bool
	// seen is the Table.seq of the last registration that wrote the
	// topic, which tells a body naming it twice (see knownTopic).
	seen uint64
}

// view is the immutable state of one topic: its queue data (sorted by
// broker name; the table's only copy), its route, and the route's encoded
// bodies, built on first use per dialect.
type view struct {
	route    body.TopicRouteData
	routable bool
	enc      [2]atomic.Pointer[[]byte]
	// Most topics live on one broker group; their queue data and broker
	// list sit here instead of in allocations of their own.
	oneQueue  [1]body.QueueData
	oneBroker [1]*body.BrokerData
}

func (v *view) queues() []body.QueueData { return v.route.QueueDatas }

// Table is the route registry. The zero value is not usable; use New.
//
// Its maps are RouteInfoManager's tables, keyed the same way; the comment
// of each says what it maps and which Java table it is. Java's
// topicQueueTable (topic → brokerName → QueueData) is the index: topic
// name → topic, whose view holds the QueueData sorted by broker name.
type Table struct {
	log *slog.Logger
	now func() time.Time

	// mu serialises the writers (see write); readers never take it. The
	// fields up to index are the writers' own.
	mu   sync.Mutex
	opts Options
	// brokers: brokerName → the broker group: its cluster, brokerId →
	// address, zone and acting-master flag. Java's brokerAddrTable; as
	// there, a broker name is global, and two clusters using one name
	// share a group.
	brokers map[string]*brokerState
	// brokerTopics: brokerName → the set of topic names that have a
	// QueueData of that broker name: the reverse of the views, so that a
	// change to a broker group touches only its topics. Java scans every
	// topic instead.
	brokerTopics map[string]map[string]struct{}
	// clusters: clusterName → the set of broker names registered in it.
	// Java's clusterAddrTable.
	clusters map[string]map[string]struct{}
	// live: (clusterName, brokerAddr) → the latest registration of that
	// address: when it came, its timeout, DataVersion, connection and HA
	// address. Java's brokerLiveTable.
	live map[liveKey]*liveInfo
	// filters: (clusterName, brokerAddr) → the filter-server addresses the
	// broker registered. Java's filterServerTable.
	filters map[liveKey][]string
	// mappings: topic → brokerName → the static-topic mapping info
	// (TopicQueueMappingInfo) routes carry. Java's
	// topicQueueMappingInfoTable.
	mappings map[string]map[string]*fjson.Value
	// pending collects what the write in progress changed; zero between
	// writes.
	pending changes

	// queueMu guards queue, the registrations waiting for mu (see
	// register); it is taken with or without mu, never the other way.
	queueMu sync.Mutex
	queue   []*pendingRegistration
	// work bounds the goroutines doing registration work; a writer
	// applying registrations takes a slot after mu, never the other way.
	work workSlots

	// index: topic name → topic, published for lock-free readers.
	index atomic.Pointer[index]
	// clusterInfo is the encoded GET_BROKER_CLUSTER_INFO body, nil until
	// asked for after a change.
	clusterInfo atomic.Pointer[[]byte]
	stats       counters
	lockProbe   lockProbe
	// topics and tombstones count the index's live and removed topics.
	topics, tombstones int
	// gen is the last brokerState.topicsGen handed out.
	gen uint64
	// seq numbers the registrations that write topics (topic.seen).
	seq uint64
	// seed hashes topic names, in the index and in liveInfo.known alike.
	seed maphash.Seed
}

// New returns an empty table.
func New(opts Options) *Table {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	t := &Table{
		log:          opts.Logger,
		now:          opts.Now,
		opts:         opts,
		brokers:      map[string]*brokerState{},
		brokerTopics: map[string]map[string]struct{}{},
		clusters:     map[string]map[string]struct{}{},
		live:         map[liveKey]*liveInfo{},
		filters:      map[liveKey][]string{},
		mappings:     map[string]map[string]*fjson.Value{},
		seed:         maphash.MakeSeed(),
		work:         newWorkSlots(),
	}
	t.index.Store(newIndex(t.seed, 0))
	return t
}

// Route returns the encoded route of a topic in dialect d, or false when the
// topic has no route. It takes no lock and, once a body is cached, allocates
// nothing. The returned slice is shared and must not be modified.
func (t *Table) Route(name []byte, d fjson.Dialect) ([]byte, bool) {
	tp := t.index.Load().getBytes(name)
	if tp == nil {
		return nil, false
	}
	v := tp.view.Load()
	if v == nil || !v.routable {
		return nil, false
	}
	if p := v.enc[d].Load(); p != nil {
		return *p, true
	}
	// Concurrent first readers may both encode; they produce equal bytes.
	b := body.AppendTopicRouteData(nil, &v.route, d)
	v.enc[d].Store(&b)
	return b, true
}

// RouteData returns a topic's route for callers that rewrite it (the zone
// filter). The result is shared and must not be modified.
func (t *Table) RouteData(name string) (*body.TopicRouteData, bool) {
	tp := t.index.Load().get(name)
	if tp == nil {
		return nil, false
	}
	v := tp.view.Load()
	if v == nil || !v.routable {
		return nil, false
	}
	return &v.route, true
}

// SetViewOptions changes the settings that shape routes and rebuilds them.
func (t *Table) SetViewOptions(vo ViewOptions) {
	t.write(func(c *changes) {
		if t.opts.View == vo {
			return
		}
		t.opts.View = vo
		t.index.Load().each(func(tp *topic) {
			if tp.view.Load() != nil {
				c.touch(tp)
			}
		})
	})
}

// SetDeleteTopicWithBrokerRegistration switches docs/protocol.md#prune-topics
// at run time.
func (t *Table) SetDeleteTopicWithBrokerRegistration(on bool) {
	t.mu.Lock()
	t.opts.DeleteTopicWithBrokerRegistration = on
	t.mu.Unlock()
}

// OrderConfChanged rebuilds a topic's route after its ORDER_TOPIC_CONFIG
// value changed in the KV store, when routes carry it (OrderMessageEnable).
// Java reads the KV store at each route query; here the value is read when
// the route is built, and this call makes sure the built route follows.
func (t *Table) OrderConfChanged(name string) {
	t.write(func(c *changes) {
		if !t.opts.View.OrderMessageEnable {
			return
		}
		if tp := c.lookup(t, name); tp != nil && tp.view.Load() != nil {
			c.touch(tp)
		}
	})
}

// changes collects what one write touched, to publish it in one step.
type changes struct {
	// dirty topics get a new view at commit.
	dirty   []*topic
	brokers bool
}

// write runs f under the writers' lock and then publishes what it changed:
// every write to the table is lock, change, commit, unlock. f may return
// early; what it changed so far is published.
func (t *Table) write(f func(c *changes)) { t.writeWith(false, f) }

// writeWork is write holding a registration work slot (see workSlots)
// from after the lock until after the commit.
func (t *Table) writeWork(f func(c *changes)) { t.writeWith(true, f) }

func (t *Table) writeWith(work bool, f func(c *changes)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if work {
		t.EnterWork()
		defer t.LeaveWork()
	}
	c := &t.pending
	*c = changes{}
	f(c)
	t.commit(c)
	*c = changes{}
}

// lookup finds a topic, removed or not, in the index, which holds the
// ones this write created too.
func (c *changes) lookup(t *Table, name string) *topic {
	return t.index.Load().get(name)
}

func (c *changes) touch(tp *topic) {
	if !tp.dirty {
		tp.dirty = true
		c.dirty = append(c.dirty, tp)
	}
}

// queues returns the topic's queue data as this write sees it.
func (c *changes) queues(tp *topic) []body.QueueData {
	if tp.hasWork {
		return tp.work
	}
	if v := tp.view.Load(); v != nil {
		return v.queues()
	}
	return nil
}

// setQueues replaces the topic's queue data for the rest of this write.
func (c *changes) setQueues(tp *topic, q []body.QueueData) {
	tp.work, tp.hasWork = q, true
	c.touch(tp)
}

// touchBroker marks every topic served by a broker name, and the broker
// group's wire form stale.
func (t *Table) touchBroker(c *changes, name string) {
	if b := t.brokers[name]; b != nil {
		b.wire = nil
	}
	for name := range t.brokerTopics[name] {
		if tp := c.lookup(t, name); tp != nil {
			c.touch(tp)
		}
	}
	c.brokers = true
}

// commit publishes the views of every touched topic, then the topics that
// came. Readers see each topic change atomically.
func (t *Table) commit(c *changes) {
	for _, tp := range c.dirty {
		isNew, wasLive := tp.fresh, tp.view.Load() != nil
		q := c.queues(tp)
		tp.dirty, tp.hasWork, tp.work, tp.fresh = false, false, nil, false
		if len(q) == 0 {
			tp.view.Store(nil)
		} else {
			tp.view.Store(t.buildView(tp.name, q))
			t.stats.viewsBuilt.Add(1)
		}
		switch isLive := len(q) > 0; {
		case isNew && !isLive:
			t.tombstones++
		case isNew:
			t.topics++
		case wasLive && !isLive:
			t.topics--
			t.tombstones++
		case !wasLive && isLive:
			t.topics++
			t.tombstones--
		}
	}
	if t.tombstones > t.topics {
		t.index.Store(t.index.Load().rebuilt(t.topics, true))
		t.tombstones = 0
	}
	if c.brokers {
		t.clusterInfo.Store(nil)
	}
	t.stats.topics.Store(int64(t.topics))
	t.stats.brokers.Store(int64(len(t.live)))
	t.stats.clusters.Store(int64(len(t.clusters)))
}

// buildView computes a topic's view. The route needs queue data and at
// least one known broker group (docs/protocol.md#building-a-route).
func (t *Table) buildView(name string, queues []body.QueueData) *view {
	v := &view{}
	rd := &v.route
	if len(queues) == 1 {
		v.oneQueue[0] = queues[0]
		rd.QueueDatas, rd.BrokerDatas = v.oneQueue[:], v.oneBroker[:0]
	} else {
		if cap(queues) > len(queues)+len(queues)/4 {
			// Grown in place by a batch of registrations: the view keeps
			// it, so keep no more than it holds.
			queues = slices.Clone(queues)
		}
		rd.QueueDatas, rd.BrokerDatas = queues, make([]*body.BrokerData, 0, len(queues))
	}
	for i := range queues {
		b := t.brokers[queues[i].BrokerName]
		if b == nil {
			continue
		}
		bd := b.data()
		rd.BrokerDatas = append(rd.BrokerDatas, bd)
		if len(t.filters) == 0 {
			continue
		}
		for _, a := range bd.Addrs {
			if fs, ok := t.filters[liveKey{b.cluster, a.Addr}]; ok {
				rd.FilterServers = append(rd.FilterServers, body.FilterServers{BrokerAddr: a.Addr, Servers: fs})
			}
		}
	}
	v.routable = len(rd.BrokerDatas) > 0
	slices.SortFunc(rd.FilterServers, func(a, b body.FilterServers) int { return strings.Compare(a.BrokerAddr, b.BrokerAddr) })
	if m := t.mappings[name]; len(m) > 0 {
		for _, bname := range slices.Sorted(maps.Keys(m)) {
			rd.Mappings = append(rd.Mappings, body.Mapping{BrokerName: bname, Info: m[bname]})
		}
	}
	if t.opts.View.SupportActingMaster && !strings.HasPrefix(name, syncBrokerMemberPrefix) {
		actingMaster(rd)
	}
	if t.opts.View.OrderMessageEnable && t.opts.OrderConf != nil {
		rd.OrderTopicConf, rd.HasOrderConf = t.opts.OrderConf(name)
	}
	return v
}

// actingMaster rewrites groups without a master whose queues are read-only
// so their smallest slave answers as id 0 (docs/protocol.md#acting-master).
// The groups are
// shared, so a rewritten one is a copy.
func actingMaster(rd *body.TopicRouteData) {
	need := false
	for _, bd := range rd.BrokerDatas {
		if len(bd.Addrs) > 0 && bd.Addrs[0].ID != 0 {
			need = true
			break
		}
	}
	if !need {
		return
	}
	for i, bd := range rd.BrokerDatas {
		if len(bd.Addrs) == 0 || bd.Addrs[0].ID == 0 || !bd.ActingMaster {
			continue
		}
		for _, q := range rd.QueueDatas {
			if q.BrokerName == bd.BrokerName {
				if q.Perm&protocol.PermWrite == 0 {
					cp := *bd
					cp.Addrs = slices.Clone(bd.Addrs)
					cp.Addrs[0].ID = 0
					rd.BrokerDatas[i] = &cp
				}
				break
			}
		}
	}
}

// data returns the group's wire form, addresses sorted by id, building it
// once per change.
func (b *brokerState) data() *body.BrokerData {
	if b.wire != nil {
		return b.wire
	}
	bd := &body.BrokerData{
		Cluster:      b.cluster,
		BrokerName:   b.name,
		ZoneName:     b.zone,
		ActingMaster: b.actingMaster,
		Modern:       b.modern,
		Addrs:        make([]body.BrokerAddr, 0, len(b.addrs)),
	}
	for id, addr := range b.addrs {
		bd.Addrs = append(bd.Addrs, body.BrokerAddr{ID: id, Addr: addr})
	}
	body.SortAddrs(bd.Addrs)
	b.wire = bd
	return bd
}

func (b *brokerState) minID() (int64, bool) {
	first := true
	var m int64
	for id := range b.addrs {
		if first || id < m {
			m, first = id, false
		}
	}
	return m, !first
}

// findQueue returns the index of brokerName's entry in sorted queues, and
// whether it is there.
func findQueue(queues []body.QueueData, brokerName string) (int, bool) {
	// Most topics live on one broker group; a registration re-applying
	// 10,000 of them asks this 10,000 times.
	if len(queues) == 1 {
		if c := strings.Compare(queues[0].BrokerName, brokerName); c >= 0 {
			return 0, c == 0
		}
		return 1, false
	}
	return slices.BinarySearchFunc(queues, brokerName, func(q body.QueueData, name string) int {
		return strings.Compare(q.BrokerName, name)
	})
}

// putQueue stores a QueueData (creating the topic), keeping the reverse
// index; nothing is touched when the stored data is already equal. It
// returns the topic.
func (t *Table) putQueue(c *changes, name []byte, q body.QueueData) *topic {
	h := maphash.Bytes(t.seed, name)
	tp := t.index.Load().find(h, name)
	if tp == nil {
		tp = t.newTopic(h, string(name))
	}
	t.putTopicQueue(c, tp, q)
	return tp
}

// newTopic adds a topic to the index, without a view until commit; h is
// the hash of its name.
func (t *Table) newTopic(h uint64, name string) *topic {
	tp := &topic{name: name, fresh: true}
	ix := t.index.Load()
	if next := ix.insert(h, tp); next != ix {
		t.index.Store(next)
	}
	return tp
}

// putTopicQueue is putQueue for a topic at hand.
func (t *Table) putTopicQueue(c *changes, tp *topic, q body.QueueData) {
	cur := c.queues(tp)
	i, found := findQueue(cur, q.BrokerName)
	switch {
	case found && cur[i] == q:
		return
	case tp.hasWork && found:
		// The write's own copy, published only at commit: change it in
		// place (a batch of registrations puts many brokers' queues).
		tp.work[i] = q
	case tp.hasWork:
		tp.work = slices.Insert(tp.work, i, q)
	default:
		next := make([]body.QueueData, 0, len(cur)+1)
		next = append(next, cur[:i]...)
		next = append(next, q)
		if found {
			i++
		}
		next = append(next, cur[i:]...)
		c.setQueues(tp, next)
	}
	t.queuesChanged(q.BrokerName)
	idx := t.brokerTopics[q.BrokerName]
	if idx == nil {
		idx = map[string]struct{}{}
		t.brokerTopics[q.BrokerName] = idx
	}
	idx[tp.name] = struct{}{}
}

// removeQueue deletes a broker name's QueueData of a topic; the topic goes
// at commit when no queue data remains.
func (t *Table) removeQueue(c *changes, name, brokerName string) {
	tp := c.lookup(t, name)
	if tp == nil {
		return
	}
	cur := c.queues(tp)
	i, found := findQueue(cur, brokerName)
	if !found {
		return
	}
	if tp.hasWork {
		tp.work = slices.Delete(tp.work, i, i+1)
	} else {
		c.setQueues(tp, slices.Concat(cur[:i], cur[i+1:]))
	}
	t.queuesChanged(brokerName)
	if idx := t.brokerTopics[brokerName]; idx != nil {
		delete(idx, name)
		if len(idx) == 0 {
			delete(t.brokerTopics, brokerName)
		}
	}
}

// dropTopic removes a topic and all its queue data.
func (t *Table) dropTopic(c *changes, name string) {
	tp := c.lookup(t, name)
	if tp == nil {
		return
	}
	for _, q := range c.queues(tp) {
		t.queuesChanged(q.BrokerName)
		if idx := t.brokerTopics[q.BrokerName]; idx != nil {
			delete(idx, name)
			if len(idx) == 0 {
				delete(t.brokerTopics, q.BrokerName)
			}
		}
	}
	c.setQueues(tp, nil)
}

// modifyQueue applies f to a broker name's QueueData of a topic; it
// reports whether the topic has one.
func (t *Table) modifyQueue(c *changes, tp *topic, brokerName string, f func(*body.QueueData)) bool {
	cur := c.queues(tp)
	i, found := findQueue(cur, brokerName)
	if !found {
		return false
	}
	q := cur[i]
	f(&q)
	if q != cur[i] {
		next := slices.Clone(cur)
		next[i] = q
		c.setQueues(tp, next)
		t.queuesChanged(brokerName)
	}
	return true
}

// queuesChanged records that queue data of a broker name changed, which
// makes the next registration of each of its addresses a full one.
func (t *Table) queuesChanged(brokerName string) {
	if b := t.brokers[brokerName]; b != nil {
		t.gen++
		b.topicsGen = t.gen
	}
}

func (t *Table) nowMillis() int64 { return t.now().UnixMilli() }
