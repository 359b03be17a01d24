package nsadmin

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

// Fetches of one peer's tables.

// fetch asks one peer for a table and decodes the answer's body; an answer
// that does not decode names the peer. Errors of the call itself are
// returned as they are, so callers can test their code.
func fetch[T any](ctx context.Context, p *peer, code int32, decode func([]byte) (T, error), ext ...string) (T, error) {
	var zero T
	r, err := p.call(ctx, code, nil, ext...)
	if err != nil {
		return zero, err
	}
	v, err := decode(r.Body)
	if err != nil {
		return zero, badAnswer(p.addr, err)
	}
	return v, nil
}

func fetchClusterInfo(ctx context.Context, p *peer) (*body.ClusterInfo, error) {
	return fetch(ctx, p, protocol.GetBrokerClusterInfo, decodeClusterInfo)
}

func fetchTopicList(ctx context.Context, p *peer) ([]string, error) {
	return fetch(ctx, p, protocol.GetAllTopicListFromNameserver, decodeTopics)
}

func fetchTopicsByCluster(ctx context.Context, p *peer, cluster string) ([]string, error) {
	return fetch(ctx, p, protocol.GetTopicsByCluster, decodeTopics, "cluster", cluster)
}

// fetchRoute returns nil without error when the peer has no route for the
// topic (TOPIC_NOT_EXIST).
func fetchRoute(ctx context.Context, p *peer, topic string) (*body.TopicRouteData, error) {
	rd, err := fetch(ctx, p, protocol.GetRouteInfoByTopic, decodeRoute, "topic", topic)
	if isCode(err, protocol.TopicNotExist) {
		return nil, nil
	}
	return rd, err
}

func fetchConfig(ctx context.Context, p *peer) (map[string]string, error) {
	return fetch(ctx, p, protocol.GetNamesrvConfig, func(body []byte) (map[string]string, error) {
		props, err := config.ParseProperties(body)
		if err != nil {
			return nil, fmt.Errorf("%w: configuration: %v", errAnswer, err)
		}
		out := make(map[string]string, len(props))
		for _, pr := range props {
			out[pr.Key] = pr.Value
		}
		return out, nil
	})
}

// fetchKV returns an empty table when the peer has no such namespace
// (QUERY_NOT_FOUND).
func fetchKV(ctx context.Context, p *peer, namespace string) (map[string]string, error) {
	kv, err := fetch(ctx, p, protocol.GetKVListByNamespace, decodeKVTable, "namespace", namespace)
	if isCode(err, protocol.QueryNotFound) {
		return map[string]string{}, nil
	}
	return kv, err
}

// collect records each answer's failure in b and returns the values of the
// peers that answered.
func collect[T any](b *base, answers []answer[T]) map[string]T {
	out := map[string]T{}
	for _, a := range answers {
		if a.Err != nil {
			b.fail(a.Addr, a.Err)
			continue
		}
		out[a.Addr] = a.Value
	}
	return out
}

// clusterList

// BrokerRow is one live broker address (mqadmin clusterList's first
// columns).
type BrokerRow struct {
	Cluster    string `json:"cluster"`
	BrokerName string `json:"brokerName"`
	BrokerID   int64  `json:"brokerId"`
	Addr       string `json:"addr"`
	Presence
}

func brokerKey(r BrokerRow) string {
	return fmt.Sprintf("%s\x00%s\x00%020d", r.Cluster, r.BrokerName, r.BrokerID)
}

// brokerRows lists a cluster info as mqadmin's clusterList walks it: each
// cluster of clusterAddrTable, its broker names, their addresses by id.
func brokerRows(ci *body.ClusterInfo, only string) []BrokerRow {
	var out []BrokerRow
	for _, c := range ci.Clusters {
		if only != "" && c.Cluster != only {
			continue
		}
		for _, name := range c.BrokerNames {
			bd := ci.Broker(name)
			if bd == nil {
				continue
			}
			for _, a := range bd.Addrs {
				out = append(out, BrokerRow{Cluster: c.Cluster, BrokerName: name, BrokerID: a.ID, Addr: a.Addr})
			}
		}
	}
	return out
}

func mergeBrokers(answered []string, cis map[string]*body.ClusterInfo, only string) []BrokerRow {
	rows := map[string][]BrokerRow{}
	for addr, ci := range cis {
		rows[addr] = brokerRows(ci, only)
	}
	out := []BrokerRow{}
	for _, m := range mergeRows(answered, rows, brokerKey, func(a, b BrokerRow) bool { return a.Addr == b.Addr }) {
		r := m.Value
		r.Presence = m.Presence
		out = append(out, r)
	}
	return out
}

type clusterList struct {
	cluster  string
	more     bool
	interval string
}

type clusterListReport struct {
	base
	Brokers []BrokerRow `json:"brokers"`
	Agreed  bool        `json:"agreed"`
}

// The columns of mqadmin clusterList that a NameServer knows.
const clusterListFormat = "%-22s  %-22s  %-4s  %-22s"

func (c *clusterList) check() error {
	if c.more || c.interval != "" {
		return usagef("-m and -i show broker runtime stats, which only brokers have: use mqadmin for them")
	}
	return nil
}

func (c *clusterList) run(ctx context.Context, ps *Peers) report {
	rep := &clusterListReport{base: newBase(ps)}
	cis := collect(&rep.base, each(ctx, ps, fetchClusterInfo))
	rep.Brokers = mergeBrokers(rep.answered(), cis, strings.TrimSpace(c.cluster))
	rep.Agreed = agreed(rep.Brokers)
	return rep
}

func (r *clusterListReport) table(w io.Writer) {
	if len(r.answered()) == 0 {
		return
	}
	line(w, withColumn(r.multi, fmt.Sprintf(clusterListFormat, "#Cluster Name", "#Broker Name", "#BID", "#Addr"), "#NameServers"))
	for _, b := range r.Brokers {
		line(w, withColumn(r.multi, fmt.Sprintf(clusterListFormat, b.Cluster, b.BrokerName, fmt.Sprint(b.BrokerID), b.Addr), b.Column()))
	}
	summary(w, r.multi, r.answered(), r.Agreed, "the live brokers")
}

// topicList

// TopicRow is one topic, with its cluster in -c mode.
type TopicRow struct {
	Cluster string `json:"cluster,omitempty"`
	Topic   string `json:"topic"`
	Presence
}

type topicList struct{ clusterModel bool }

type topicListReport struct {
	base
	Topics       []TopicRow `json:"topics"`
	Agreed       bool       `json:"agreed"`
	clusterModel bool
}

func (*topicList) check() error { return nil }

func (c *topicList) run(ctx context.Context, ps *Peers) report {
	rep := &topicListReport{base: newBase(ps), Topics: []TopicRow{}, clusterModel: c.clusterModel}
	rows := map[string][]TopicRow{}
	if !c.clusterModel {
		for addr, topics := range collect(&rep.base, each(ctx, ps, fetchTopicList)) {
			for _, t := range topics {
				rows[addr] = append(rows[addr], TopicRow{Topic: t})
			}
		}
	} else {
		answers := each(ctx, ps, func(ctx context.Context, p *peer) ([]TopicRow, error) {
			ci, err := fetchClusterInfo(ctx, p)
			if err != nil {
				return nil, err
			}
			var out []TopicRow
			for _, c := range ci.Clusters {
				cluster := c.Cluster
				topics, err := fetchTopicsByCluster(ctx, p, cluster)
				if err != nil {
					return nil, err
				}
				for _, t := range topics {
					// mqadmin's cluster model leaves out retry and dead-letter topics.
					if !strings.HasPrefix(t, "%RETRY%") && !strings.HasPrefix(t, "%DLQ%") {
						out = append(out, TopicRow{Cluster: cluster, Topic: t})
					}
				}
			}
			return out, nil
		})
		rows = collect(&rep.base, answers)
	}
	key := func(r TopicRow) string { return r.Cluster + "\x00" + r.Topic }
	for _, m := range mergeRows(rep.answered(), rows, key, func(a, b TopicRow) bool { return true }) {
		r := m.Value
		r.Presence = m.Presence
		rep.Topics = append(rep.Topics, r)
	}
	rep.Agreed = agreed(rep.Topics)
	return rep
}

func (r *topicListReport) table(w io.Writer) {
	if len(r.answered()) == 0 {
		return
	}
	if r.clusterModel {
		// mqadmin's header says #Consumer Group too: consumer groups
		// are known to brokers only.
		line(w, withColumn(r.multi, fmt.Sprintf("%-20s  %-64s", "#Cluster Name", "#Topic"), "#NameServers"))
		for _, t := range r.Topics {
			line(w, withColumn(r.multi, fmt.Sprintf("%-20s  %-64s", t.Cluster, t.Topic), t.Column()))
		}
	} else {
		width := 0
		for _, t := range r.Topics {
			width = max(width, len(t.Topic))
		}
		for _, t := range r.Topics {
			line(w, withColumn(r.multi, fmt.Sprintf("%-*s ", width, t.Topic), t.Column()))
		}
	}
	summary(w, r.multi, r.answered(), r.Agreed, "the topic list")
}

// topicRoute

// RouteRow is one broker of a topic's route (mqadmin topicRoute -l).
type RouteRow struct {
	Cluster        string           `json:"cluster"`
	BrokerName     string           `json:"brokerName"`
	BrokerAddrs    map[int64]string `json:"brokerAddrs"`
	ReadQueueNums  int32            `json:"readQueueNums"`
	WriteQueueNums int32            `json:"writeQueueNums"`
	Perm           int32            `json:"perm"`
	TopicSysFlag   int32            `json:"topicSysFlag"`
	Presence
}

func (a RouteRow) same(b RouteRow) bool {
	return a.Cluster == b.Cluster && maps.Equal(a.BrokerAddrs, b.BrokerAddrs) && a.ReadQueueNums == b.ReadQueueNums &&
		a.WriteQueueNums == b.WriteQueueNums && a.Perm == b.Perm && a.TopicSysFlag == b.TopicSysFlag
}

// routeRows joins a route's broker and queue data by broker name.
func routeRows(rd *body.TopicRouteData) []RouteRow {
	if rd == nil {
		return nil
	}
	byName := map[string]*RouteRow{}
	var names []string
	row := func(name string) *RouteRow {
		if r, ok := byName[name]; ok {
			return r
		}
		r := &RouteRow{BrokerName: name}
		byName[name] = r
		names = append(names, name)
		return r
	}
	for _, b := range rd.BrokerDatas {
		r := row(b.BrokerName)
		r.Cluster, r.BrokerAddrs = b.Cluster, map[int64]string{}
		for _, a := range b.Addrs {
			r.BrokerAddrs[a.ID] = a.Addr
		}
	}
	for _, q := range rd.QueueDatas {
		r := row(q.BrokerName)
		r.ReadQueueNums, r.WriteQueueNums, r.Perm, r.TopicSysFlag = q.ReadQueueNums, q.WriteQueueNums, q.Perm, q.TopicSysFlag
	}
	out := make([]RouteRow, 0, len(names))
	for _, n := range names {
		out = append(out, *byName[n])
	}
	return out
}

type topicRoute struct {
	topic string
	// list is mqadmin's -l, accepted so that habits work: the table is
	// the default here.
	list bool
}

// PeerRoute is one peer's route, as it answered it; Route is null where
// the peer has no route for the topic.
type PeerRoute struct {
	Addr  string               `json:"nameServer"`
	Route *body.TopicRouteData `json:"route"`
}

type topicRouteReport struct {
	base
	Topic   string      `json:"topic"`
	Brokers []RouteRow  `json:"brokers"`
	Agreed  bool        `json:"agreed"`
	Routes  []PeerRoute `json:"routes"`
}

// mqadmin topicRoute -l's line.
const routeFormat = "%-45s %-32s %-50s %-10s %-11s %-5s"

func (c *topicRoute) check() error {
	if c.topic = strings.TrimSpace(c.topic); c.topic == "" {
		return usagef("-t/--topic is required")
	}
	return nil
}

func (c *topicRoute) run(ctx context.Context, ps *Peers) report {
	rep := &topicRouteReport{base: newBase(ps), Topic: c.topic, Brokers: []RouteRow{}, Routes: []PeerRoute{}}
	routes := collect(&rep.base, each(ctx, ps, func(ctx context.Context, p *peer) (*body.TopicRouteData, error) {
		return fetchRoute(ctx, p, c.topic)
	}))
	rows := map[string][]RouteRow{}
	found := false
	for _, addr := range rep.answered() {
		rd := routes[addr]
		rep.Routes = append(rep.Routes, PeerRoute{Addr: addr, Route: rd})
		rows[addr] = routeRows(rd)
		found = found || rd != nil
	}
	for _, m := range mergeRows(rep.answered(), rows, func(r RouteRow) string { return r.BrokerName }, RouteRow.same) {
		r := m.Value
		r.Presence = m.Presence
		rep.Brokers = append(rep.Brokers, r)
	}
	rep.Agreed = agreed(rep.Brokers)
	if !found {
		rep.Routes = []PeerRoute{}
		for _, addr := range rep.answered() {
			rep.fail(addr, &PeerError{Addr: addr, Kind: Refused, Code: protocol.TopicNotExist,
				Msg: fmt.Sprintf("refused: TOPIC_NOT_EXIST: no route for topic %s", c.topic)})
		}
	}
	return rep
}

func (r *topicRouteReport) table(w io.Writer) {
	if len(r.Routes) == 0 {
		return
	}
	line(w, withColumn(r.multi, fmt.Sprintf(routeFormat, "#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm"), "#NameServers"))
	for _, b := range r.Brokers {
		line(w, withColumn(r.multi, fmt.Sprintf(routeFormat, b.Cluster, b.BrokerName, javaMap(b.BrokerAddrs),
			fmt.Sprint(b.ReadQueueNums), fmt.Sprint(b.WriteQueueNums), fmt.Sprint(b.Perm)), b.Column()))
	}
	fmt.Fprintln(w, strings.Repeat("-", 158))
	if r.Agreed {
		total(w, "Total:", r.Brokers)
	} else {
		// The peers' totals differ: one line each.
		for _, pr := range r.Routes {
			total(w, "Total("+pr.Addr+"):", routeRows(pr.Route))
		}
	}
	summary(w, r.multi, r.answered(), r.Agreed, "the route of "+r.Topic)
}

func total(w io.Writer, label string, rows []RouteRow) {
	var read, write int32
	brokers := 0
	for _, b := range rows {
		read += b.ReadQueueNums
		write += b.WriteQueueNums
		brokers++
	}
	line(w, fmt.Sprintf(routeFormat, label, fmt.Sprint(brokers), "", fmt.Sprint(read), fmt.Sprint(write), ""))
}

// topicClusterList

// ClusterRow is one cluster name.
type ClusterRow struct {
	Cluster string `json:"cluster"`
	Presence
}

type topicClusterList struct{ topic string }

type topicClusterReport struct {
	base
	Topic    string       `json:"topic"`
	Clusters []ClusterRow `json:"clusters"`
	Agreed   bool         `json:"agreed"`
}

func (c *topicClusterList) check() error {
	if c.topic = strings.TrimSpace(c.topic); c.topic == "" {
		return usagef("-t/--topic is required")
	}
	return nil
}

func (c *topicClusterList) run(ctx context.Context, ps *Peers) report {
	rep := &topicClusterReport{base: newBase(ps), Topic: c.topic, Clusters: []ClusterRow{}}
	routes := collect(&rep.base, each(ctx, ps, func(ctx context.Context, p *peer) (*body.TopicRouteData, error) {
		return fetchRoute(ctx, p, c.topic)
	}))
	rows := map[string][]ClusterRow{}
	found := false
	for addr, rd := range routes {
		if rd == nil {
			continue
		}
		found = true
		for _, b := range rd.BrokerDatas {
			rows[addr] = append(rows[addr], ClusterRow{Cluster: b.Cluster})
		}
	}
	for _, m := range mergeRows(rep.answered(), rows, func(r ClusterRow) string { return r.Cluster }, func(a, b ClusterRow) bool { return true }) {
		rep.Clusters = append(rep.Clusters, ClusterRow{Cluster: m.Value.Cluster, Presence: m.Presence})
	}
	rep.Agreed = agreed(rep.Clusters)
	if !found {
		for _, addr := range rep.answered() {
			rep.fail(addr, &PeerError{Addr: addr, Kind: Refused, Code: protocol.TopicNotExist,
				Msg: fmt.Sprintf("refused: TOPIC_NOT_EXIST: no route for topic %s", c.topic)})
		}
	}
	return rep
}

func (r *topicClusterReport) table(w io.Writer) {
	if len(r.answered()) == 0 {
		return
	}
	width := 0
	for _, c := range r.Clusters {
		width = max(width, len(c.Cluster))
	}
	for _, c := range r.Clusters {
		line(w, withColumn(r.multi, fmt.Sprintf("%-*s ", width, c.Cluster), c.Column()))
	}
	summary(w, r.multi, r.answered(), r.Agreed, "the clusters of "+r.Topic)
}

// getNamesrvConfig

// ConfigRow is one property as some peers hold it.
type ConfigRow struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	Presence
}

// PeerConfig is one peer's whole configuration.
type PeerConfig struct {
	Addr   string            `json:"nameServer"`
	Config map[string]string `json:"config"`
}

type getNamesrvConfig struct{}

type configReport struct {
	base
	Configs []PeerConfig `json:"configs"`
	// Differences are the properties not held alike by every peer.
	Differences []ConfigRow `json:"differences"`
}

func (getNamesrvConfig) check() error { return nil }

func mergeConfigs(answered []string, cfgs map[string]map[string]string) []ConfigRow {
	rows := map[string][]ConfigRow{}
	for addr, cfg := range cfgs {
		for k, v := range cfg {
			rows[addr] = append(rows[addr], ConfigRow{Key: k, Value: v})
		}
	}
	var out []ConfigRow
	for _, m := range mergeRows(answered, rows, func(r ConfigRow) string { return r.Key }, func(a, b ConfigRow) bool { return a.Value == b.Value }) {
		if !m.Agreed() {
			out = append(out, ConfigRow{Key: m.Value.Key, Value: m.Value.Value, Presence: m.Presence})
		}
	}
	return out
}

func (getNamesrvConfig) run(ctx context.Context, ps *Peers) report {
	rep := &configReport{base: newBase(ps), Configs: []PeerConfig{}, Differences: []ConfigRow{}}
	cfgs := collect(&rep.base, each(ctx, ps, fetchConfig))
	for _, addr := range rep.answered() {
		rep.Configs = append(rep.Configs, PeerConfig{Addr: addr, Config: cfgs[addr]})
	}
	rep.Differences = append(rep.Differences, mergeConfigs(rep.answered(), cfgs)...)
	return rep
}

func (r *configReport) table(w io.Writer) {
	// mqadmin getNamesrvConfig's blocks, keys sorted.
	for _, c := range r.Configs {
		fmt.Fprintf(w, "============%s============\n", c.Addr)
		for _, k := range slices.Sorted(maps.Keys(c.Config)) {
			line(w, fmt.Sprintf("%-50s=  %s", k, c.Config[k]))
		}
	}
	if !r.multi || len(r.Configs) < 2 {
		return
	}
	if len(r.Differences) == 0 {
		fmt.Fprintf(w, "\n%d NameServers agree on every property.\n", len(r.Configs))
		return
	}
	fmt.Fprintf(w, "\nProperties the NameServers DISAGREE on:\n")
	for _, d := range r.Differences {
		line(w, fmt.Sprintf("%-50s=  %s  %s", d.Key, d.Value, d.Column()))
	}
}

// kvList

// KVRow is one KV config entry.
type KVRow struct {
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
	Value     string `json:"value"`
	Presence
}

type kvList struct{ namespace string }

type kvListReport struct {
	base
	Namespace string  `json:"namespace"`
	Entries   []KVRow `json:"entries"`
	Agreed    bool    `json:"agreed"`
}

const kvFormat = "%-32s  %-40s  %-40s"

func (c *kvList) check() error {
	if c.namespace = strings.TrimSpace(c.namespace); c.namespace == "" {
		return usagef("-s (the KV namespace) is required")
	}
	return nil
}

func mergeKV(answered []string, namespace string, tables map[string]map[string]string) []KVRow {
	rows := map[string][]KVRow{}
	for addr, t := range tables {
		for k, v := range t {
			rows[addr] = append(rows[addr], KVRow{Namespace: namespace, Key: k, Value: v})
		}
	}
	out := []KVRow{}
	for _, m := range mergeRows(answered, rows, func(r KVRow) string { return r.Key }, func(a, b KVRow) bool { return a.Value == b.Value }) {
		r := m.Value
		r.Presence = m.Presence
		out = append(out, r)
	}
	return out
}

func (c *kvList) run(ctx context.Context, ps *Peers) report {
	rep := &kvListReport{base: newBase(ps), Namespace: c.namespace}
	tables := collect(&rep.base, each(ctx, ps, func(ctx context.Context, p *peer) (map[string]string, error) {
		return fetchKV(ctx, p, c.namespace)
	}))
	rep.Entries = mergeKV(rep.answered(), c.namespace, tables)
	rep.Agreed = agreed(rep.Entries)
	return rep
}

func (r *kvListReport) table(w io.Writer) {
	if len(r.answered()) == 0 {
		return
	}
	line(w, withColumn(r.multi, fmt.Sprintf(kvFormat, "#Namespace", "#Key", "#Value"), "#NameServers"))
	for _, e := range r.Entries {
		line(w, withColumn(r.multi, fmt.Sprintf(kvFormat, e.Namespace, e.Key, e.Value), e.Column()))
	}
	summary(w, r.multi, r.answered(), r.Agreed, "namespace "+r.Namespace)
}
