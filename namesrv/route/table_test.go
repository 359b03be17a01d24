package route

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
)

type fakeChannel struct {
	name   string
	closed atomic.Bool
}

func (c *fakeChannel) Close() error { c.closed.Store(true); return nil }

type clock struct{ now atomic.Int64 }

func (c *clock) Now() time.Time          { return time.UnixMilli(c.now.Load()) }
func (c *clock) advance(d time.Duration) { c.now.Add(d.Milliseconds()) }

func newTable(t *testing.T) (*Table, *clock) {
	t.Helper()
	c := &clock{}
	c.now.Store(1_700_000_000_000)
	return New(Options{Now: c.Now}), c
}

// orderStore is a fake ORDER_TOPIC_CONFIG namespace of the KV store.
type orderStore struct {
	mu   sync.Mutex
	conf map[string]string
}

func (s *orderStore) get(topic string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.conf[topic]
	return v, ok
}

// set changes the store, then tells the table, as the KV store's change
// callback does.
func (s *orderStore) set(tb *Table, topic, conf string, present bool) {
	s.mu.Lock()
	if present {
		s.conf[topic] = conf
	} else {
		delete(s.conf, topic)
	}
	s.mu.Unlock()
	tb.OrderConfChanged(topic)
}

func newTableWithOrderConf(t *testing.T, conf map[string]string) (*Table, *orderStore, *clock) {
	t.Helper()
	s := &orderStore{conf: conf}
	c := &clock{}
	c.now.Store(1_700_000_000_000)
	return New(Options{Now: c.Now, OrderConf: s.get}), s, c
}

// topic is "name:read:write:perm[:sysflag]".
func topics(specs ...string) []body.TopicConfig {
	var out []body.TopicConfig
	for _, s := range specs {
		var tc body.TopicConfig
		f := strings.Split(s, ":")
		tc.Name = []byte(f[0])
		_, _ = fmt.Sscan(f[1], &tc.ReadQueueNums)
		_, _ = fmt.Sscan(f[2], &tc.WriteQueueNums)
		_, _ = fmt.Sscan(f[3], &tc.Perm)
		if len(f) > 4 {
			_, _ = fmt.Sscan(f[4], &tc.TopicSysFlag)
		}
		out = append(out, tc)
	}
	return out
}

func reg(cluster, name string, id int64, addr string, counter int64, ch Channel, tcs ...body.TopicConfig) *Registration {
	return &Registration{
		Cluster: cluster, BrokerName: name, BrokerID: id, BrokerAddr: addr, HAServerAddr: addr + "1",
		Body:    &body.RegisterBody{DataVersion: body.DataVersion{Counter: counter, Timestamp: 1}, Topics: tcs, FilterServers: []string{}},
		Channel: ch,
	}
}

func route(t *testing.T, tb *Table, topic string, d fjson.Dialect) string {
	t.Helper()
	b, ok := tb.Route([]byte(topic), d)
	if !ok {
		return ""
	}
	return string(b)
}

func TestRegisterMasterAndSlave(t *testing.T) {
	tb, _ := newTable(t)
	res := tb.Register(reg("c", "b", 0, "10.0.0.1:10911", 1, nil, topics("T1:8:8:6", "T2:4:2:4")...))
	if res.Refused || res.MasterAddr != "" {
		t.Fatalf("master result %+v", res)
	}
	res = tb.Register(reg("c", "b", 1, "10.0.0.2:10911", 1, nil, topics("T1:1:1:6", "T9:1:1:6")...))
	if res.MasterAddr != "10.0.0.1:10911" || res.HAServerAddr != "10.0.0.1:109111" {
		t.Fatalf("slave result %+v", res)
	}
	want := `{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"},"brokerName":"b","cluster":"c"}],"filterServerTable":{},"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}`
	if got := route(t, tb, "T1", fjson.Standard); got != want {
		t.Errorf("standard route\n got %s\nwant %s", got, want)
	}
	legacy := strings.Replace(strings.Replace(want, `"0":`, `0:`, 1), `"1":`, `1:`, 1)
	if got := route(t, tb, "T1", fjson.Legacy); got != legacy {
		t.Errorf("legacy route\n got %s\nwant %s", got, legacy)
	}
	if got := route(t, tb, "T9", fjson.Standard); got != "" {
		t.Errorf("a slave's topic got a route: %s", got)
	}
	if got := tb.AllTopics(); !slices.Equal(got, []string{"T1", "T2"}) {
		t.Errorf("topics %v", got)
	}
	wantCI := `{"brokerAddrTable":{"b":{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"b","cluster":"c"}},"clusterAddrTable":{"c":["b"]}}`
	if got := string(tb.ClusterInfo()); got != wantCI {
		t.Errorf("cluster info\n got %s\nwant %s", got, wantCI)
	}
}

func TestSlaveWithoutLiveMasterGetsNoMasterAddr(t *testing.T) {
	tb, _ := newTable(t)
	res := tb.Register(reg("c", "b", 1, "s:1", 1, nil))
	if res.MasterAddr != "" || res.HAServerAddr != "" {
		t.Fatalf("result %+v", res)
	}
}

func TestReRegistrationAndDataVersion(t *testing.T) {
	tests := []struct {
		name           string
		second         *Registration
		wantT1, wantT3 string
	}{
		{"same version keeps stored config, adds missing topics",
			reg("c", "b", 0, "a:1", 1, nil, topics("T1:1:1:6", "T3:2:2:6")...),
			`"perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8`, `"perm":6,"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2`},
		{"new version replaces config",
			reg("c", "b", 0, "a:1", 2, nil, topics("T1:1:1:4")...),
			`"perm":4,"readQueueNums":1,"topicSysFlag":0,"writeQueueNums":1`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb, _ := newTable(t)
			tb.Register(reg("c", "b", 0, "a:1", 1, nil, topics("T1:8:8:6", "T2:8:8:6")...))
			tb.Register(tt.second)
			if got := route(t, tb, "T1", fjson.Standard); !strings.Contains(got, tt.wantT1) {
				t.Errorf("T1 = %s, want %s", got, tt.wantT1)
			}
			got := route(t, tb, "T3", fjson.Standard)
			if tt.wantT3 == "" && got != "" || !strings.Contains(got, tt.wantT3) {
				t.Errorf("T3 = %q, want %q", got, tt.wantT3)
			}
			if route(t, tb, "T2", fjson.Standard) == "" {
				t.Error("topics missing from a later registration are kept")
			}
		})
	}
}

func TestFirstSingleTopicRegistrationIsRefusedAndLeavesNothing(t *testing.T) {
	tb, _ := newTable(t)
	if res := tb.Register(reg("c", "old", 0, "o:1", 1, nil, topics("O:1:1:6")...)); res.Refused {
		t.Fatal("a 4.x broker's first registration with one topic is accepted, as by 4.9 NameServers")
	}
	tb.Unregister(Unregistration{Cluster: "c", BrokerAddr: "o:1", BrokerName: "old"})
	first := reg("c", "b", 0, "a:1", 1, nil, topics("T:1:1:6")...)
	first.Modern = true
	if res := tb.Register(first); !res.Refused {
		t.Fatal("a 5.x broker's first registration with one topic must be refused")
	}
	if ci := string(tb.ClusterInfo()); ci != `{"brokerAddrTable":{},"clusterAddrTable":{}}` {
		t.Fatalf("refusal left %s", ci)
	}
	tb.Register(reg("c", "b", 0, "a:1", 1, nil, topics("T:1:1:6", "U:1:1:6")...))
	if res := tb.Register(reg("c", "b", 0, "a:1", 2, nil, topics("V:1:1:6")...)); res.Refused {
		t.Fatal("an incremental registration of a known broker is fine")
	}
	if route(t, tb, "V", fjson.Legacy) == "" {
		t.Fatal("incremental topic missing")
	}
}

func TestSameAddressNewIDReplacesOldEntry(t *testing.T) {
	tb, _ := newTable(t)
	tb.Register(reg("c", "b", 0, "m:1", 1, nil, topics("T:1:1:6", "U:1:1:6")...))
	tb.Register(reg("c", "b", 1, "s:1", 1, nil))
	tb.Unregister(Unregistration{Cluster: "c", BrokerAddr: "m:1", BrokerName: "b"})
	tb.Register(reg("c", "b", 0, "s:1", 1, nil, topics("T:1:1:6", "U:1:1:6")...))
	if got := route(t, tb, "T", fjson.Standard); !strings.Contains(got, `"brokerAddrs":{"0":"s:1"}`) {
		t.Fatalf("route %s", got)
	}
}

func TestUnregister(t *testing.T) {
	tb, _ := newTable(t)
	tb.Register(reg("c", "b", 0, "m:1", 1, nil, topics("T:1:1:6", "U:1:1:6")...))
	tb.Register(reg("c", "b", 1, "s:1", 1, nil))
	tb.Register(reg("c", "o", 0, "o:1", 1, nil, topics("T:1:1:6", "X:1:1:6")...))

	tb.Unregister(Unregistration{Cluster: "c", BrokerAddr: "m:1", BrokerName: "b"})
	if got := route(t, tb, "U", fjson.Standard); !strings.Contains(got, `{"1":"s:1"}`) {
		t.Fatalf("after master leaves, route %s", got)
	}
	tb.Unregister(Unregistration{Cluster: "c", BrokerAddr: "s:1", BrokerName: "b"})
	if got := route(t, tb, "U", fjson.Standard); got != "" {
		t.Fatalf("topic of a gone group still routed: %s", got)
	}
	if got := route(t, tb, "T", fjson.Standard); strings.Contains(got, `"b"`) || !strings.Contains(got, `"o"`) {
		t.Fatalf("shared topic %s", got)
	}
	if got := tb.AllTopics(); !slices.Equal(got, []string{"T", "X"}) {
		t.Fatalf("topics %v", got)
	}
	if ci := string(tb.ClusterInfo()); strings.Contains(ci, `"b"`) {
		t.Fatalf("cluster info still lists b: %s", ci)
	}
	if s := tb.Stats(); s.LiveBrokers != 1 || s.Evictions[EvictUnregister] != 2 || s.Topics != 2 || s.Clusters != 1 {
		t.Fatalf("stats %+v", s)
	}
	tb.Unregister(Unregistration{Cluster: "c", BrokerAddr: "o:1", BrokerName: "o"})
	if ci := string(tb.ClusterInfo()); ci != `{"brokerAddrTable":{},"clusterAddrTable":{}}` {
		t.Fatalf("left %s", ci)
	}
	if len(tb.AllTopics()) != 0 || len(tb.brokerTopics) != 0 || len(tb.live) != 0 {
		t.Fatalf("half-removed state: topics %v index %v live %v", tb.AllTopics(), tb.brokerTopics, tb.live)
	}
}

func TestClosedChannelEvictsOnlyItsLatestBrokers(t *testing.T) {
	tb, _ := newTable(t)
	old, latest, other := &fakeChannel{name: "old"}, &fakeChannel{name: "latest"}, &fakeChannel{name: "other"}
	tb.Register(reg("c", "b", 0, "m:1", 1, old, topics("T:1:1:6", "U:1:1:6")...))
	tb.Register(reg("c", "b", 0, "m:1", 1, latest, topics("T:1:1:6", "U:1:1:6")...))
	tb.Register(reg("c", "b", 1, "s:1", 1, latest))
	tb.Register(reg("c", "o", 0, "o:1", 1, other, topics("T:1:1:6", "X:1:1:6")...))

	tb.ChannelClosed(old)
	if route(t, tb, "U", fjson.Legacy) == "" {
		t.Fatal("closing a superseded connection evicted the broker")
	}
	tb.ChannelClosed(latest)
	if route(t, tb, "U", fjson.Legacy) != "" {
		t.Fatal("closing the latest connection must evict every broker registered over it")
	}
	if s := tb.Stats(); s.Evictions[EvictClosed] != 2 || s.LiveBrokers != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestExpiryScan(t *testing.T) {
	tb, clk := newTable(t)
	quiet, chatty, short := &fakeChannel{}, &fakeChannel{}, &fakeChannel{}
	tb.Register(reg("c", "q", 0, "q:1", 1, quiet, topics("Q:1:1:6", "QQ:1:1:6")...))
	tb.Register(reg("c", "k", 0, "k:1", 1, chatty, topics("K:1:1:6", "KK:1:1:6")...))
	r := reg("c", "s", 0, "s:1", 1, short, topics("S:1:1:6", "SS:1:1:6")...)
	r.HeartbeatTimeoutMillis = 10_000
	tb.Register(r)

	clk.advance(11 * time.Second)
	if n := tb.ScanExpired(); n != 1 || !short.closed.Load() || route(t, tb, "S", fjson.Legacy) != "" {
		t.Fatalf("per-broker timeout: evicted %d, closed %v", n, short.closed.Load())
	}
	clk.advance(100 * time.Second)
	tb.QueryDataVersion(AddrKey{"c", "k:1"}, body.DataVersion{Counter: 1, Timestamp: 1})
	clk.advance(10 * time.Second)
	tb.Heartbeat(AddrKey{"c", "k:1"})
	clk.advance(10 * time.Second) // quiet: 120.0 s + 1 ms silent; chatty: 10 s
	clk.advance(time.Millisecond)
	if n := tb.ScanExpired(); n != 1 || !quiet.closed.Load() || chatty.closed.Load() {
		t.Fatalf("default timeout: evicted %d quiet closed %v chatty closed %v", n, quiet.closed.Load(), chatty.closed.Load())
	}
	if route(t, tb, "Q", fjson.Legacy) != "" || route(t, tb, "K", fjson.Legacy) == "" {
		t.Fatal("wrong broker evicted")
	}
	// The closed channel's own close notification finds nothing left.
	tb.ChannelClosed(quiet)
	if s := tb.Stats(); s.Evictions[EvictExpired] != 2 || s.Evictions[EvictClosed] != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestWipeAndAddWritePerm(t *testing.T) {
	tb, _ := newTable(t)
	tb.Register(reg("c", "b", 0, "m:1", 1, nil, topics("P6:4:4:6", "P7:4:4:7", "P2:2:4:2", "P4:4:4:4")...))
	tb.Register(reg("c", "o", 0, "o:1", 1, nil, topics("P6:4:4:6", "Z:1:1:6")...))
	if n := tb.WipeWritePerm("b"); n != 4 {
		t.Fatalf("wiped %d", n)
	}
	if n := tb.WipeWritePerm("b"); n != 4 {
		t.Fatalf("a repeated wipe counts again: %d", n)
	}
	got := route(t, tb, "P6", fjson.Standard)
	if !strings.Contains(got, `{"brokerName":"b","perm":4`) || !strings.Contains(got, `{"brokerName":"o","perm":6`) {
		t.Fatalf("P6 after wipe %s", got)
	}
	if got := route(t, tb, "P7", fjson.Standard); !strings.Contains(got, `"perm":5`) {
		t.Fatalf("P7 after wipe %s", got)
	}
	// A heartbeat with the same DataVersion keeps the wipe.
	tb.Register(reg("c", "b", 0, "m:1", 1, nil, topics("P6:4:4:6", "P7:4:4:7", "P2:2:4:2", "P4:4:4:4")...))
	if got := route(t, tb, "P6", fjson.Standard); !strings.Contains(got, `{"brokerName":"b","perm":4`) {
		t.Fatalf("same-version heartbeat undid the wipe: %s", got)
	}
	if n := tb.AddWritePerm("b"); n != 4 {
		t.Fatalf("added %d", n)
	}
	if got := route(t, tb, "P7", fjson.Standard); !strings.Contains(got, `"perm":6`) {
		t.Fatalf("add sets exactly 6: %s", got)
	}
	tb.WipeWritePerm("b")
	tb.Register(reg("c", "b", 0, "m:1", 2, nil, topics("P6:4:4:6", "P7:4:4:7", "P2:2:4:2", "P4:4:4:4")...))
	if got := route(t, tb, "P7", fjson.Standard); !strings.Contains(got, `"perm":7`) {
		t.Fatalf("a new DataVersion resets the wipe: %s", got)
	}
	if n := tb.WipeWritePerm("unknown"); n != 0 {
		t.Fatalf("unknown broker wiped %d", n)
	}
}

func TestDeleteTopic(t *testing.T) {
	tb, _ := newTable(t)
	tb.Register(reg("c1", "b1", 0, "1:1", 1, nil, topics("T:1:1:6", "A:1:1:6")...))
	tb.Register(reg("c2", "b2", 0, "2:1", 1, nil, topics("T:1:1:6", "B:1:1:6")...))
	tb.DeleteTopic("T", "nope")
	if got := route(t, tb, "T", fjson.Standard); !strings.Contains(got, "b1") || !strings.Contains(got, "b2") {
		t.Fatalf("unknown cluster changed T: %s", got)
	}
	tb.DeleteTopic("T", "c1")
	if got := route(t, tb, "T", fjson.Standard); strings.Contains(got, "b1") || !strings.Contains(got, "b2") {
		t.Fatalf("after deleting from c1: %s", got)
	}
	tb.DeleteTopic("T", "")
	if route(t, tb, "T", fjson.Standard) != "" || slices.Contains(tb.AllTopics(), "T") {
		t.Fatal("T still there")
	}
	// 5.x: a broker that still has the topic brings it back on its next
	// registration, even with an unchanged DataVersion.
	tb.Register(reg("c2", "b2", 0, "2:1", 1, nil, topics("T:1:1:6", "B:1:1:6")...))
	if route(t, tb, "T", fjson.Standard) == "" {
		t.Fatal("registration did not restore T")
	}
}

func TestTopicLists(t *testing.T) {
	tb, _ := newTable(t)
	tb.Register(reg("c1", "b1", 0, "1:1", 1, nil, topics("plain:1:1:6:0", "unit:1:1:6:1", "sub:1:1:6:2", "both:1:1:6:3")...))
	tb.Register(reg("c2", "b2", 0, "2:1", 1, nil, topics("only2:1:1:6", "plain:1:1:6")...))
	if got := tb.TopicsByCluster("c2"); !slices.Equal(got, []string{"only2", "plain"}) {
		t.Errorf("by cluster %v", got)
	}
	if got := tb.TopicsByCluster("none"); len(got) != 0 {
		t.Errorf("unknown cluster %v", got)
	}
	if got := tb.UnitTopics(Unit); !slices.Equal(got, []string{"both", "unit"}) {
		t.Errorf("unit %v", got)
	}
	if got := tb.UnitTopics(HasUnitSub); !slices.Equal(got, []string{"both", "sub"}) {
		t.Errorf("unit sub %v", got)
	}
	if got := tb.UnitTopics(HasUnitSubOnly); !slices.Equal(got, []string{"sub"}) {
		t.Errorf("unit sub only %v", got)
	}
	sys, addr := tb.SystemTopics()
	if !slices.Equal(sys, []string{"b1", "b2", "c1", "c2"}) || addr != "1:1" {
		t.Errorf("system %v %s", sys, addr)
	}
	if got := tb.MemberGroup("b1"); len(got) != 1 || got[0].Addr != "1:1" {
		t.Errorf("members %v", got)
	}
}

func TestQueryDataVersion(t *testing.T) {
	tb, _ := newTable(t)
	dv := body.DataVersion{Counter: 3, Timestamp: 9, StateVersion: 1}
	if changed, _, found := tb.QueryDataVersion(AddrKey{"c", "a:1"}, dv); !changed || found {
		t.Fatal("unknown broker must read as changed without a stored version")
	}
	r := reg("c", "b", 0, "a:1", 0, nil, topics("T:1:1:6", "U:1:1:6")...)
	r.Body.DataVersion = dv
	tb.Register(r)
	if changed, stored, found := tb.QueryDataVersion(AddrKey{"c", "a:1"}, dv); changed || !found || stored != dv {
		t.Fatalf("same version: changed %v stored %v", changed, stored)
	}
	dv.StateVersion = 2
	if changed, _, _ := tb.QueryDataVersion(AddrKey{"c", "a:1"}, dv); !changed {
		t.Fatal("stateVersion counts")
	}
}

func TestRegisterTopic(t *testing.T) {
	tb, _ := newTable(t)
	tb.Register(reg("c", "b", 0, "a:1", 1, nil, topics("T:1:1:6", "U:1:1:6")...))
	tb.RegisterTopic("New", []body.QueueData{{BrokerName: "b", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6}, {BrokerName: "ghost"}})
	if route(t, tb, "New", fjson.Legacy) != "" {
		t.Fatal("a new topic naming an unknown broker must store nothing")
	}
	tb.RegisterTopic("New", []body.QueueData{{BrokerName: "b", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6}})
	if got := route(t, tb, "New", fjson.Legacy); !strings.Contains(got, `"readQueueNums":8`) {
		t.Fatalf("route %s", got)
	}
}

func TestSlaveSemanticsOf5xBrokers(t *testing.T) {
	tb, _ := newTable(t)
	modern := func(r *Registration, acting bool) *Registration {
		r.Modern, r.ActingMaster = true, acting
		return r
	}
	tb.Register(modern(reg("c", "b", 0, "m:1", 1, nil, topics("T:1:1:6", "U:1:1:6")...), true))
	tb.Register(modern(reg("c", "b", 1, "s:1", 1, nil, topics("T:1:1:6", "U:1:1:6")...), true))
	if got := route(t, tb, "T", fjson.Standard); !strings.Contains(got, `"enableActingMaster":true`) || !strings.Contains(got, `"perm":6`) {
		t.Fatalf("route %s", got)
	}
	tb.Unregister(Unregistration{Cluster: "c", BrokerAddr: "m:1", BrokerName: "b"})
	if got := route(t, tb, "T", fjson.Standard); !strings.Contains(got, `"perm":4`) {
		t.Fatalf("a group without master must lose write permission: %s", got)
	}
	// The surviving slave is now the prime slave and writes (read-only) routes.
	tb.Register(modern(reg("c", "b", 1, "s:1", 2, nil, topics("T:1:1:6", "U:1:1:6", "V:1:1:6")...), true))
	if got := route(t, tb, "V", fjson.Standard); !strings.Contains(got, `"perm":4`) {
		t.Fatalf("prime slave topic %s", got)
	}
	tb.SetViewOptions(ViewOptions{SupportActingMaster: true})
	if got := route(t, tb, "V", fjson.Standard); !strings.Contains(got, `"brokerAddrs":{"0":"s:1"}`) {
		t.Fatalf("acting master rewrite %s", got)
	}
}

func TestOrderConfAndMappingsInRoutes(t *testing.T) {
	tb, kv, _ := newTableWithOrderConf(t, map[string]string{})
	r := reg("c", "b", 0, "m:1", 1, nil, topics("T:1:1:6", "U:1:1:6")...)
	info, _ := fjson.NewReader([]byte(`{"bname":"b","currIdMap":{0:0},"topic":"T"}`)).Value()
	r.Body.Mappings = []body.MappingInfo{{Topic: "T", BrokerName: "b", Info: info}}
	tb.Register(r)
	before := route(t, tb, "T", fjson.Legacy)
	if !strings.Contains(before, `"topicQueueMappingByBroker":{"b":{"bname":"b","currIdMap":{0:0},"topic":"T"}}`) {
		t.Fatalf("legacy mapping %s", before)
	}
	if got := route(t, tb, "T", fjson.Standard); !strings.Contains(got, `"currIdMap":{"0":0}`) {
		t.Fatalf("standard mapping %s", got)
	}
	kv.set(tb, "T", "b:4", true)
	if route(t, tb, "T", fjson.Legacy) != before {
		t.Fatal("orderTopicConf must stay out unless orderMessageEnable")
	}
	tb.SetViewOptions(ViewOptions{OrderMessageEnable: true})
	if got := route(t, tb, "T", fjson.Legacy); !strings.Contains(got, `"filterServerTable":{},"orderTopicConf":"b:4","queueDatas"`) {
		t.Fatalf("order conf %s", got)
	}
	kv.set(tb, "T", "b:8", true)
	if got := route(t, tb, "T", fjson.Legacy); !strings.Contains(got, `"orderTopicConf":"b:8"`) {
		t.Fatalf("cached route not invalidated by a KV change: %s", got)
	}
	kv.set(tb, "T", "", false)
	if got := route(t, tb, "T", fjson.Legacy); strings.Contains(got, "orderTopicConf") {
		t.Fatalf("removed order conf still shown: %s", got)
	}
}

// TestOrderConfIsReadWhenRoutesAreBuilt: the table keeps no copy of the
// order config, so a value that reached the KV store without a change
// callback (loaded from the file at start) is in the first route built,
// and switching orderMessageEnable rebuilds routes both ways.
func TestOrderConfIsReadWhenRoutesAreBuilt(t *testing.T) {
	tb, kv, _ := newTableWithOrderConf(t, map[string]string{"T": "b:4"})
	tb.SetViewOptions(ViewOptions{OrderMessageEnable: true})
	tb.Register(reg("c", "b", 0, "m:1", 1, nil, topics("T:1:1:6", "U:1:1:6")...))
	if got := route(t, tb, "T", fjson.Standard); !strings.Contains(got, `"orderTopicConf":"b:4"`) {
		t.Fatalf("route without the stored order config: %s", got)
	}
	if got := route(t, tb, "U", fjson.Standard); strings.Contains(got, "orderTopicConf") {
		t.Fatalf("order config on a topic without one: %s", got)
	}
	tb.SetViewOptions(ViewOptions{})
	if got := route(t, tb, "T", fjson.Standard); strings.Contains(got, "orderTopicConf") {
		t.Fatalf("orderMessageEnable off, route still carries it: %s", got)
	}
	// A change while off is read when it is switched back on.
	kv.set(tb, "T", "b:8", true)
	tb.SetViewOptions(ViewOptions{OrderMessageEnable: true})
	if got := route(t, tb, "T", fjson.Standard); !strings.Contains(got, `"orderTopicConf":"b:8"`) {
		t.Fatalf("orderMessageEnable on again: %s", got)
	}
	// A change callback for a topic without a route builds nothing.
	kv.set(tb, "Nope", "b:1", true)
	if got := route(t, tb, "Nope", fjson.Standard); got != "" {
		t.Fatalf("route of an unknown topic %s", got)
	}
}

func TestFilterServers(t *testing.T) {
	tb, _ := newTable(t)
	r := reg("c", "b", 0, "m:1", 1, nil, topics("T:1:1:6", "U:1:1:6")...)
	r.Body.FilterServers = []string{"f:1", "f:2"}
	tb.Register(r)
	if got := route(t, tb, "T", fjson.Legacy); !strings.Contains(got, `"filterServerTable":{"m:1":["f:1","f:2"]}`) {
		t.Fatalf("route %s", got)
	}
	r.Body.FilterServers = []string{}
	tb.Register(r)
	if got := route(t, tb, "T", fjson.Legacy); !strings.Contains(got, `"filterServerTable":{}`) {
		t.Fatalf("an empty list clears filter servers: %s", got)
	}
}

func TestDeleteTopicWithBrokerRegistration(t *testing.T) {
	tb, _ := newTable(t)
	tb.SetDeleteTopicWithBrokerRegistration(true)
	tb.Register(reg("c", "b", 0, "m:1", 1, nil, topics("T:1:1:6", "U:1:1:6")...))
	tb.Register(reg("c", "b", 0, "m:1", 2, nil, topics("T:1:1:6", "V:1:1:6")...))
	if route(t, tb, "U", fjson.Legacy) != "" || route(t, tb, "V", fjson.Legacy) == "" {
		t.Fatal("topics absent from the registration must be pruned")
	}
}

// TestRouteCacheFollowsEveryChange checks that a cached encoded route is
// replaced by every kind of write that changes it.
func TestRouteCacheFollowsEveryChange(t *testing.T) {
	tb, kv, clk := newTableWithOrderConf(t, map[string]string{})
	tb.SetViewOptions(ViewOptions{OrderMessageEnable: true})
	ch := &fakeChannel{}
	tb.Register(reg("c", "b", 0, "m:1", 1, ch, topics("T:1:1:6", "U:1:1:6")...))
	other := reg("c2", "o", 0, "o:1", 1, nil, topics("T:1:1:6", "V:1:1:6")...)
	other.HeartbeatTimeoutMillis = 1000
	steps := []struct {
		name         string
		do           func()
		want, absent string
	}{
		{"slave registers", func() { tb.Register(reg("c", "b", 1, "s:1", 1, nil)) }, `"1":"s:1"`, ""},
		{"wipe", func() { tb.WipeWritePerm("b") }, `"perm":4`, ""},
		{"add", func() { tb.AddWritePerm("b") }, `"perm":6`, ""},
		{"new version", func() { tb.Register(reg("c", "b", 0, "m:1", 2, ch, topics("T:3:3:6", "U:1:1:6")...)) }, `"readQueueNums":3`, ""},
		{"order config set", func() { kv.set(tb, "T", "b:3", true) }, `"orderTopicConf":"b:3"`, ""},
		{"order config changed", func() { kv.set(tb, "T", "b:2", true) }, `"orderTopicConf":"b:2"`, ""},
		{"another group registers", func() { tb.Register(other) }, `"brokerName":"o"`, ""},
		{"topic deleted from that group's cluster", func() { tb.DeleteTopic("T", "c2") }, `"brokerName":"b"`, `"brokerName":"o"`},
		{"that group re-registers", func() { tb.Register(other) }, `"brokerName":"o"`, ""},
		{"that group expires", func() { clk.advance(2 * time.Second); tb.ScanExpired() }, `"brokerName":"b"`, `"brokerName":"o"`},
		{"slave unregisters", func() { tb.Unregister(Unregistration{Cluster: "c", BrokerAddr: "s:1", BrokerName: "b"}) }, `{"0":"m:1"}`, `"s:1"`},
		{"master connection closes", func() { tb.ChannelClosed(ch) }, "", ""},
	}
	for _, s := range steps {
		route(t, tb, "T", fjson.Standard) // populate the cache
		s.do()
		got := route(t, tb, "T", fjson.Standard)
		if s.want == "" && got != "" || !strings.Contains(got, s.want) || s.absent != "" && strings.Contains(got, s.absent) {
			t.Fatalf("after %s: route %q, want %q without %q", s.name, got, s.want, s.absent)
		}
	}
}

// TestConcurrentReadersSeeWholeRoutes runs readers against writers under
// the race detector: every route read must be one that some write produced.
func TestConcurrentReadersSeeWholeRoutes(t *testing.T) {
	tb, _ := newTable(t)
	tb.Register(reg("c", "b", 0, "m:1", 1, nil, topics("T:1:1:6", "U:1:1:6")...))
	var stop atomic.Bool
	var wg sync.WaitGroup
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := fjson.Dialect(r % 2)
			for !stop.Load() {
				b, ok := tb.Route([]byte("T"), d)
				if ok && !strings.HasSuffix(string(b), "]}") {
					t.Errorf("torn route %s", b)
					return
				}
			}
		}()
	}
	for i := range 300 {
		tb.Register(reg("c", "b", 0, "m:1", int64(i+2), nil, topics(fmt.Sprintf("T:%d:1:6", i), "U:1:1:6")...))
		if i%10 == 0 {
			tb.Unregister(Unregistration{Cluster: "c", BrokerAddr: "m:1", BrokerName: "b"})
		}
	}
	stop.Store(true)
	wg.Wait()
}

func TestRouteAllocatesNothingOnceCached(t *testing.T) {
	tb, _ := newTable(t)
	tb.Register(reg("c", "b", 0, "m:1", 1, nil, topics("T:1:1:6", "U:1:1:6")...))
	topic := []byte("T")
	tb.Route(topic, fjson.Legacy)
	if n := testing.AllocsPerRun(1000, func() { tb.Route(topic, fjson.Legacy) }); n != 0 {
		t.Fatalf("%v allocations per cached route lookup", n)
	}
}
