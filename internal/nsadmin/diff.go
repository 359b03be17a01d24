package nsadmin

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
)

// routeConcurrency bounds the route requests in flight per peer while diff
// reads every topic's route over one pipelined connection.
const routeConcurrency = 32

// QueueRow is one broker's queues of a topic.
type QueueRow struct {
	Topic          string `json:"topic"`
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	WriteQueueNums int32  `json:"writeQueueNums"`
	Perm           int32  `json:"perm"`
	TopicSysFlag   int32  `json:"topicSysFlag"`
	Presence
}

// PeerCounts are the sizes of one peer's tables.
type PeerCounts struct {
	Addr    string `json:"nameServer"`
	Brokers int    `json:"brokers"`
	Topics  int    `json:"topics"`
}

type diff struct {
	namespaces []string
	config     bool
}

// snapshot is what diff reads from one peer.
type snapshot struct {
	ci     *body.ClusterInfo
	topics []string
	routes map[string]*body.TopicRouteData
	kv     map[string]map[string]string
	config map[string]string
}

type diffReport struct {
	base
	Counts []PeerCounts `json:"counts"`
	// The rows not held alike by every peer that answered.
	Brokers   []BrokerRow `json:"brokers"`
	Topics    []TopicRow  `json:"topics"`
	QueueData []QueueRow  `json:"queueData"`
	KV        []KVRow     `json:"kv,omitempty"`
	Config    []ConfigRow `json:"config,omitempty"`
	// Differences counts the keys (a broker, a topic, a topic's broker, a
	// KV key, a property) the peers disagree on.
	Differences int `json:"differences"`

	namespaces []string
	config     bool
}

func (c *diff) check() error {
	var ns []string
	for _, n := range c.namespaces {
		for _, s := range strings.Split(n, ",") {
			if s = strings.TrimSpace(s); s != "" && !slices.Contains(ns, s) {
				ns = append(ns, s)
			}
		}
	}
	c.namespaces = ns
	return nil
}

func (c *diff) snapshot(ctx context.Context, p *peer) (*snapshot, error) {
	s := &snapshot{routes: map[string]*body.TopicRouteData{}, kv: map[string]map[string]string{}}
	var err error
	if s.ci, err = fetchClusterInfo(ctx, p); err != nil {
		return nil, err
	}
	if s.topics, err = fetchTopicList(ctx, p); err != nil {
		return nil, err
	}
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		sem      = make(chan struct{}, routeConcurrency)
	)
	for _, t := range s.topics {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			rd, err := fetchRoute(ctx, p, t)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			s.routes[t] = rd
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	for _, ns := range c.namespaces {
		if s.kv[ns], err = fetchKV(ctx, p, ns); err != nil {
			return nil, err
		}
	}
	if c.config {
		if s.config, err = fetchConfig(ctx, p); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (c *diff) run(ctx context.Context, ps *Peers) report {
	rep := &diffReport{base: newBase(ps), namespaces: c.namespaces, config: c.config,
		Brokers: []BrokerRow{}, Topics: []TopicRow{}, QueueData: []QueueRow{}}
	snaps := collect(&rep.base, each(ctx, ps, c.snapshot))
	answered := rep.answered()
	if len(ps.peers) < 2 {
		rep.Notes = append(rep.Notes, "only one NameServer given: there is nothing to compare it with")
	}

	cis := map[string]*body.ClusterInfo{}
	topicRows := map[string][]TopicRow{}
	for _, addr := range answered {
		s := snaps[addr]
		cis[addr] = s.ci
		for _, t := range s.topics {
			topicRows[addr] = append(topicRows[addr], TopicRow{Topic: t})
		}
		rep.Counts = append(rep.Counts, PeerCounts{Addr: addr, Brokers: len(brokerRows(s.ci, "")), Topics: len(s.topics)})
	}
	differing := func(keys ...string) {
		slices.Sort(keys)
		rep.Differences += len(slices.Compact(keys))
	}

	var keys []string
	for _, b := range mergeBrokers(answered, cis, "") {
		if !b.Agreed() {
			rep.Brokers = append(rep.Brokers, b)
			keys = append(keys, brokerKey(b))
		}
	}
	differing(keys...)

	keys = nil
	holders := map[string][]string{}
	for _, m := range mergeRows(answered, topicRows, func(r TopicRow) string { return r.Topic }, func(a, b TopicRow) bool { return true }) {
		holders[m.Value.Topic] = m.On
		if !m.Agreed() {
			rep.Topics = append(rep.Topics, TopicRow{Topic: m.Value.Topic, Presence: m.Presence})
			keys = append(keys, m.Value.Topic)
		}
	}
	differing(keys...)

	// Queue data is compared among the peers holding the topic: a topic
	// missing from a peer is reported once, above.
	keys = nil
	for _, topic := range slices.Sorted(maps.Keys(holders)) {
		rows := map[string][]QueueRow{}
		for _, addr := range holders[topic] {
			if rd := snaps[addr].routes[topic]; rd != nil {
				for _, q := range rd.QueueDatas {
					rows[addr] = append(rows[addr], QueueRow{Topic: topic, BrokerName: q.BrokerName, ReadQueueNums: q.ReadQueueNums,
						WriteQueueNums: q.WriteQueueNums, Perm: q.Perm, TopicSysFlag: q.TopicSysFlag})
				}
			}
		}
		key := func(r QueueRow) string { return r.BrokerName }
		same := func(a, b QueueRow) bool {
			return a.ReadQueueNums == b.ReadQueueNums && a.WriteQueueNums == b.WriteQueueNums && a.Perm == b.Perm && a.TopicSysFlag == b.TopicSysFlag
		}
		for _, m := range mergeRows(holders[topic], rows, key, same) {
			if !m.Agreed() {
				r := m.Value
				r.Presence = m.Presence
				rep.QueueData = append(rep.QueueData, r)
				keys = append(keys, topic+"\x00"+r.BrokerName)
			}
		}
	}
	differing(keys...)

	for _, ns := range c.namespaces {
		tables := map[string]map[string]string{}
		for _, addr := range answered {
			tables[addr] = snaps[addr].kv[ns]
		}
		keys = nil
		for _, r := range mergeKV(answered, ns, tables) {
			if !r.Agreed() {
				rep.KV = append(rep.KV, r)
				keys = append(keys, r.Key)
			}
		}
		differing(keys...)
	}

	if c.config {
		cfgs := map[string]map[string]string{}
		for _, addr := range answered {
			cfgs[addr] = snaps[addr].config
		}
		rep.Config = mergeConfigs(answered, cfgs)
		keys = nil
		for _, r := range rep.Config {
			keys = append(keys, r.Key)
		}
		differing(keys...)
	}
	return rep
}

func (r *diffReport) exitCode() int {
	if r.Differences > 0 {
		return ExitDifferent
	}
	return ExitOK
}

func (r *diffReport) table(w io.Writer) {
	line(w, fmt.Sprintf("%-40s  %-8s  %-8s  %s", "#NameServer", "#Brokers", "#Topics", "#Status"))
	counts := map[string]PeerCounts{}
	for _, c := range r.Counts {
		counts[c.Addr] = c
	}
	for _, s := range r.NameServers {
		if !s.OK {
			line(w, fmt.Sprintf("%-40s  %-8s  %-8s  %s", s.Addr, "-", "-", "FAILED: "+s.Error))
			continue
		}
		c := counts[s.Addr]
		line(w, fmt.Sprintf("%-40s  %-8d  %-8d  %s", s.Addr, c.Brokers, c.Topics, "ok"))
	}
	if len(r.Brokers) > 0 {
		fmt.Fprintln(w, "\nLive brokers the NameServers disagree on:")
		line(w, fmt.Sprintf(clusterListFormat+" %s", "#Cluster Name", "#Broker Name", "#BID", "#Addr", "#NameServers"))
		for _, b := range r.Brokers {
			line(w, fmt.Sprintf(clusterListFormat+" %s", b.Cluster, b.BrokerName, fmt.Sprint(b.BrokerID), b.Addr, b.Column()))
		}
	}
	if len(r.Topics) > 0 {
		fmt.Fprintln(w, "\nTopics not on every NameServer:")
		line(w, fmt.Sprintf("%-64s  %s", "#Topic", "#NameServers"))
		for _, t := range r.Topics {
			line(w, fmt.Sprintf("%-64s  %s", t.Topic, t.Column()))
		}
	}
	if len(r.QueueData) > 0 {
		fmt.Fprintln(w, "\nQueue data the NameServers disagree on:")
		const f = "%-45s %-32s %-10s %-11s %-5s %-12s %s"
		line(w, fmt.Sprintf(f, "#Topic", "#BrokerName", "#ReadQueue", "#WriteQueue", "#Perm", "#TopicSysFlag", "#NameServers"))
		for _, q := range r.QueueData {
			line(w, fmt.Sprintf(f, q.Topic, q.BrokerName, fmt.Sprint(q.ReadQueueNums), fmt.Sprint(q.WriteQueueNums),
				fmt.Sprint(q.Perm), fmt.Sprint(q.TopicSysFlag), q.Column()))
		}
	}
	if len(r.KV) > 0 {
		fmt.Fprintln(w, "\nKV config the NameServers disagree on:")
		line(w, fmt.Sprintf(kvFormat+" %s", "#Namespace", "#Key", "#Value", "#NameServers"))
		for _, e := range r.KV {
			line(w, fmt.Sprintf(kvFormat+" %s", e.Namespace, e.Key, e.Value, e.Column()))
		}
	}
	if len(r.Config) > 0 {
		fmt.Fprintln(w, "\nProperties the NameServers disagree on:")
		for _, d := range r.Config {
			line(w, fmt.Sprintf("%-50s=  %s  %s", d.Key, d.Value, d.Column()))
		}
	}
	compared := "live brokers, topics and every topic's queue data"
	if len(r.namespaces) > 0 {
		compared += ", KV namespaces " + strings.Join(r.namespaces, ", ")
	}
	if r.config {
		compared += ", configuration"
	}
	n := len(r.answered())
	switch r.Differences {
	case 0:
		fmt.Fprintf(w, "\nNo differences among %d NameServers (%s).\n", n, compared)
	case 1:
		fmt.Fprintf(w, "\n1 difference among %d NameServers (%s).\n", n, compared)
	default:
		fmt.Fprintf(w, "\n%d differences among %d NameServers (%s).\n", r.Differences, n, compared)
	}
}
