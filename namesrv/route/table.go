// Package route is the NameServer's routing registry, Java's RouteInfoManager:
// which brokers are alive, which broker groups serve which topics, and the
// route every producer and consumer asks for.
//
// Writers (registrations, unregistrations, evictions, admin commands) are
// serialized by one mutex and mutate the authoritative tables. Readers never
// take that mutex: after each write, the topics it touched get a new
// immutable view, published through an atomic pointer, and the encoded route
// body of a view is built once per dialect and reused until the next change.
// A route query is therefore a map lookup in an immutable snapshot plus an
// atomic load, whatever the writers are doing (design.md).
//
// Semantics follow the 5.x RouteInfoManager (namesrv-protocol.md §3), with
// the deliberate differences listed in docs/compatibility.md.
package route

import (
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
	// OrderMessageEnable adds orderTopicConf from the KV store (§3.7 step 5).
	OrderMessageEnable bool
	// SupportActingMaster lets the smallest slave stand in as id 0 for
	// groups without a master whose queues are read-only (§3.7 step 4).
	SupportActingMaster bool
}

// Options configure a Table.
type Options struct {
	View ViewOptions
	// DeleteTopicWithBrokerRegistration prunes a master's topics that are
	// absent from its registration (§3.2 step 10a).
	DeleteTopicWithBrokerRegistration bool
	// Now is the clock; tests replace it.
	Now    func() time.Time
	Logger *slog.Logger
}

// syncBrokerMemberPrefix marks the topics 5.x brokers query to learn their
// group's members; the acting-master rewrite never applies to them.
const syncBrokerMemberPrefix = "rmq_sys_SYNC_BROKER_MEMBER_"

type liveKey struct {
	cluster, addr string
}

type liveInfo struct {
	lastUpdate   int64 // unix ms
	timeout      int64 // ms
	dataVersion  body.DataVersion
	channel      Channel
	haServerAddr string
	brokerName   string
	brokerID     int64
}

type brokerState struct {
	cluster      string
	name         string
	addrs        map[int64]string
	zone         string
	actingMaster bool
	modern       bool
}

// topicState holds a topic's queue data per broker name, and the entry
// readers find it by.
type topicState struct {
	name   string
	queues map[string]body.QueueData
	entry  *entry
}

// entry is what a snapshot maps a topic to; its view is replaced whenever
// the topic's route changes, without rebuilding the snapshot.
type entry struct {
	view atomic.Pointer[view]
}

// view is one immutable route of a topic plus its lazily encoded bodies.
type view struct {
	data body.TopicRouteData
	enc  [2]atomic.Pointer[[]byte]
}

type snapshot struct {
	topics map[string]*entry
}

// Table is the route registry. The zero value is not usable; use New.
type Table struct {
	log *slog.Logger
	now func() time.Time

	mu           sync.Mutex
	opts         Options
	topics       map[string]*topicState
	brokers      map[string]*brokerState
	brokerTopics map[string]map[string]struct{}
	clusters     map[string]map[string]struct{}
	live         map[liveKey]*liveInfo
	filters      map[liveKey][]string
	mappings     map[string]map[string]*fjson.Value
	orderConf    map[string]string

	snap        atomic.Pointer[snapshot]
	clusterInfo atomic.Pointer[[]byte]
	stats       counters
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
		topics:       map[string]*topicState{},
		brokers:      map[string]*brokerState{},
		brokerTopics: map[string]map[string]struct{}{},
		clusters:     map[string]map[string]struct{}{},
		live:         map[liveKey]*liveInfo{},
		filters:      map[liveKey][]string{},
		mappings:     map[string]map[string]*fjson.Value{},
		orderConf:    map[string]string{},
	}
	t.snap.Store(&snapshot{topics: map[string]*entry{}})
	return t
}

// Route returns the encoded route of a topic in dialect d, or false when the
// topic has no route. It takes no lock and, once a body is cached, allocates
// nothing. The returned slice is shared and must not be modified.
func (t *Table) Route(topic []byte, d fjson.Dialect) ([]byte, bool) {
	e := t.snap.Load().topics[string(topic)]
	if e == nil {
		return nil, false
	}
	v := e.view.Load()
	if v == nil {
		return nil, false
	}
	if p := v.enc[d].Load(); p != nil {
		return *p, true
	}
	// Concurrent first readers may both encode; they produce equal bytes.
	b := body.AppendTopicRouteData(nil, &v.data, d)
	v.enc[d].Store(&b)
	return b, true
}

// RouteData returns a topic's route for callers that rewrite it (the zone
// filter). The result is shared and must not be modified.
func (t *Table) RouteData(topic string) (*body.TopicRouteData, bool) {
	e := t.snap.Load().topics[topic]
	if e == nil {
		return nil, false
	}
	v := e.view.Load()
	if v == nil {
		return nil, false
	}
	return &v.data, true
}

// SetViewOptions changes the settings that shape routes and rebuilds them.
func (t *Table) SetViewOptions(vo ViewOptions) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.opts.View == vo {
		return
	}
	t.opts.View = vo
	ch := t.begin()
	for topic := range t.topics {
		ch.touch(topic)
	}
	t.commit(ch)
}

// SetDeleteTopicWithBrokerRegistration changes §3.2 step 10a at run time.
func (t *Table) SetDeleteTopicWithBrokerRegistration(on bool) {
	t.mu.Lock()
	t.opts.DeleteTopicWithBrokerRegistration = on
	t.mu.Unlock()
}

// SetOrderConf records a topic's ORDER_TOPIC_CONFIG value (present false:
// removed); routes carry it when OrderMessageEnable is on.
func (t *Table) SetOrderConf(topic, conf string, present bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old, had := t.orderConf[topic]
	if had == present && old == conf {
		return
	}
	if present {
		t.orderConf[topic] = conf
	} else {
		delete(t.orderConf, topic)
	}
	if !t.opts.View.OrderMessageEnable {
		return
	}
	ch := t.begin()
	ch.touch(topic)
	t.commit(ch)
}

// changes collects what a write touched, to publish it in one step.
type changes struct {
	dirty     map[string]struct{}
	topicSet  bool
	brokerSet bool
}

func (t *Table) begin() *changes { return &changes{} }

func (c *changes) touch(topic string) {
	if c.dirty == nil {
		c.dirty = map[string]struct{}{}
	}
	c.dirty[topic] = struct{}{}
}

// touchBroker marks every topic served by a broker name.
func (t *Table) touchBroker(c *changes, name string) {
	for topic := range t.brokerTopics[name] {
		c.touch(topic)
	}
	c.brokerSet = true
}

// commit publishes the views of every touched topic and, when topics came
// or went, a new snapshot. Readers see each topic change atomically.
func (t *Table) commit(c *changes) {
	for topic := range c.dirty {
		if ts := t.topics[topic]; ts != nil {
			ts.entry.view.Store(t.buildView(topic, ts))
		}
	}
	if c.topicSet {
		m := make(map[string]*entry, len(t.topics))
		for topic, ts := range t.topics {
			m[topic] = ts.entry
		}
		t.snap.Store(&snapshot{topics: m})
	}
	if c.brokerSet {
		t.clusterInfo.Store(nil)
	}
	t.stats.topics.Store(int64(len(t.topics)))
	t.stats.brokers.Store(int64(len(t.live)))
	t.stats.clusters.Store(int64(len(t.clusters)))
}

// buildView computes a topic's route, or nil when it has none: a route
// needs queue data and at least one known broker group (§3.7 steps 1-2).
func (t *Table) buildView(topic string, ts *topicState) *view {
	if len(ts.queues) == 0 {
		return nil
	}
	names := slices.Sorted(maps.Keys(ts.queues))
	rd := body.TopicRouteData{QueueDatas: make([]body.QueueData, 0, len(names))}
	for _, name := range names {
		rd.QueueDatas = append(rd.QueueDatas, ts.queues[name])
		b := t.brokers[name]
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
	if len(rd.BrokerDatas) == 0 {
		return nil
	}
	slices.SortFunc(rd.FilterServers, func(a, b body.FilterServers) int { return strings.Compare(a.BrokerAddr, b.BrokerAddr) })
	if m := t.mappings[topic]; len(m) > 0 {
		for _, bname := range slices.Sorted(maps.Keys(m)) {
			rd.Mappings = append(rd.Mappings, body.Mapping{BrokerName: bname, Info: m[bname]})
		}
	}
	if t.opts.View.SupportActingMaster && !strings.HasPrefix(topic, syncBrokerMemberPrefix) {
		actingMaster(&rd)
	}
	if t.opts.View.OrderMessageEnable {
		rd.OrderTopicConf, rd.HasOrderConf = t.orderConf[topic]
	}
	return &view{data: rd}
}

// actingMaster rewrites groups without a master whose queues are read-only
// so their smallest slave answers as id 0 (§3.7 step 4).
func actingMaster(rd *body.TopicRouteData) {
	need := false
	for i := range rd.BrokerDatas {
		if a := rd.BrokerDatas[i].Addrs; len(a) > 0 && a[0].ID != 0 {
			need = true
			break
		}
	}
	if !need {
		return
	}
	for i := range rd.BrokerDatas {
		bd := &rd.BrokerDatas[i]
		if len(bd.Addrs) == 0 || bd.Addrs[0].ID == 0 || !bd.ActingMaster {
			continue
		}
		for _, q := range rd.QueueDatas {
			if q.BrokerName == bd.BrokerName {
				if q.Perm&protocol.PermWrite == 0 {
					bd.Addrs[0].ID = 0
				}
				break
			}
		}
	}
}

// data copies a broker group into its wire form, addresses sorted by id.
func (b *brokerState) data() body.BrokerData {
	bd := body.BrokerData{
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

// putQueue stores a QueueData and keeps the reverse index.
func (t *Table) putQueue(c *changes, topic string, q body.QueueData) {
	ts := t.topics[topic]
	if ts == nil {
		ts = &topicState{name: topic, queues: map[string]body.QueueData{}, entry: &entry{}}
		t.topics[topic] = ts
		c.topicSet = true
	}
	if old, ok := ts.queues[q.BrokerName]; ok && old == q {
		return
	}
	ts.queues[q.BrokerName] = q
	idx := t.brokerTopics[q.BrokerName]
	if idx == nil {
		idx = map[string]struct{}{}
		t.brokerTopics[q.BrokerName] = idx
	}
	idx[topic] = struct{}{}
	c.touch(topic)
}

// removeQueue deletes a broker name's QueueData of a topic, and the topic
// when no queue data remains.
func (t *Table) removeQueue(c *changes, topic, brokerName string) {
	ts := t.topics[topic]
	if ts == nil {
		return
	}
	if _, ok := ts.queues[brokerName]; !ok {
		return
	}
	delete(ts.queues, brokerName)
	if idx := t.brokerTopics[brokerName]; idx != nil {
		delete(idx, topic)
		if len(idx) == 0 {
			delete(t.brokerTopics, brokerName)
		}
	}
	c.touch(topic)
	if len(ts.queues) == 0 {
		t.dropTopic(c, topic)
	}
}

func (t *Table) dropTopic(c *changes, topic string) {
	ts := t.topics[topic]
	if ts == nil {
		return
	}
	for name := range ts.queues {
		if idx := t.brokerTopics[name]; idx != nil {
			delete(idx, topic)
			if len(idx) == 0 {
				delete(t.brokerTopics, name)
			}
		}
	}
	ts.entry.view.Store(nil)
	delete(t.topics, topic)
	c.topicSet = true
}

func (t *Table) nowMillis() int64 { return t.now().UnixMilli() }
