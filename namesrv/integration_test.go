package namesrv_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
)

func startBroker(t *testing.T, cfg brokersim.Config) *brokersim.Broker {
	t.Helper()
	b, err := brokersim.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

func mustRegister(t *testing.T, b *brokersim.Broker, ns ...string) []brokersim.RegisterResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res := b.Register(ctx, ns)
	for _, r := range res {
		if r.Err != nil || r.Response.Code != protocol.Success {
			t.Fatalf("register %s with %s: err %v resp %+v", b.Name(), r.NameServer, r.Err, r.Response)
		}
	}
	return res
}

// TestBrokersOfEveryKindRegister drives the server with simulated brokers
// speaking every variant real brokers use: 4.9 and 5.x, JSON and binary
// headers, JSON and zlib bodies (flagged or not), master and slave.
func TestBrokersOfEveryKindRegister(t *testing.T) {
	s := startServer(t, nil)
	ns := s.Addr().String()
	kinds := []struct {
		gen        body.BrokerGeneration
		typ        remoting.SerializeType
		compressed bool
	}{
		{body.Broker4, remoting.JSON, false},
		{body.Broker4, remoting.JSON, true},
		{body.Broker4, remoting.RocketMQ, false},
		{body.Broker4, remoting.RocketMQ, true},
		{body.Broker5, remoting.JSON, false},
		{body.Broker5, remoting.JSON, true},
		{body.Broker5, remoting.RocketMQ, false},
		{body.Broker5, remoting.RocketMQ, true},
	}
	client := dial(t, s, remotingclient.Options{})
	for i, k := range kinds {
		name := fmt.Sprintf("broker-%d", i)
		topic := fmt.Sprintf("Topic%d", i)
		cfg := brokersim.Config{Cluster: "DefaultCluster", Name: name, Generation: k.gen, Type: k.typ, Compressed: k.compressed,
			Topics: []body.TopicConfig{brokersim.Topic(topic, 4), brokersim.Topic("Shared", 2), brokersim.Topic("%RETRY%g", 1)}}
		master := startBroker(t, cfg)
		if r := mustRegister(t, master, ns)[0].Response; r.Ext["masterAddr"] != "" || r.Type != k.typ {
			t.Fatalf("%s master answer %+v", name, r)
		}
		cfg.ID = 1
		slave := startBroker(t, cfg)
		r := mustRegister(t, slave, ns)[0].Response
		if r.Ext["masterAddr"] != master.Addr() || r.Ext["haServerAddr"] == "" {
			t.Fatalf("%s slave answer %+v", name, r)
		}
		route := invoke(t, client, protocol.GetRouteInfoByTopic, nil, "topic", topic)
		want := fmt.Sprintf(`{"brokerAddrs":{"0":%q,"1":%q},"brokerName":%q`, master.Addr(), slave.Addr(), name)
		if route.Code != protocol.Success || !strings.Contains(string(route.Body), want) || !strings.Contains(string(route.Body), `"readQueueNums":4`) {
			t.Fatalf("%s route %d %s", name, route.Code, route.Body)
		}
	}
	shared := invoke(t, client, protocol.GetRouteInfoByTopic, nil, "topic", "Shared")
	if n := strings.Count(string(shared.Body), `"brokerName":"broker-`); n != 2*len(kinds) {
		t.Fatalf("shared topic lists %d broker entries: %s", n, shared.Body)
	}
	ci := string(invoke(t, client, protocol.GetBrokerClusterInfo, nil).Body)
	if !strings.Contains(ci, `"clusterAddrTable":{"DefaultCluster":["broker-0","broker-1","broker-2","broker-3","broker-4","broker-5","broker-6","broker-7"]}`) {
		t.Fatalf("cluster info %s", ci)
	}
}

func TestOnewayRegistrationIsApplied(t *testing.T) {
	s := startServer(t, nil)
	b := startBroker(t, brokersim.Config{Cluster: "c", Name: "b", Topics: []body.TopicConfig{brokersim.Topic("A", 1), brokersim.Topic("B", 1)}})
	if err := b.RegisterOneway(context.Background(), s.Addr().String()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the oneway registration", func() bool { return s.Routes().Stats().LiveBrokers == 1 })
}

func TestBrokerLeavesEveryWay(t *testing.T) {
	s := startServer(t, func(c *config.Config) { c.ScanNotActiveBrokerInterval = 20 })
	ns := s.Addr().String()
	client := dial(t, s, remotingclient.Options{})
	routed := func(topic string) bool {
		return invoke(t, client, protocol.GetRouteInfoByTopic, nil, "topic", topic).Code == protocol.Success
	}
	topics := func(n string) []body.TopicConfig {
		return []body.TopicConfig{brokersim.Topic(n, 1), brokersim.Topic(n+"2", 1)}
	}

	unreg := startBroker(t, brokersim.Config{Cluster: "c", Name: "unreg", Topics: topics("U")})
	crash := startBroker(t, brokersim.Config{Cluster: "c", Name: "crash", Topics: topics("C")})
	silent := startBroker(t, brokersim.Config{Cluster: "c", Name: "silent", Generation: body.Broker5, HeartbeatTimeoutMillis: 300, Topics: topics("S")})
	mustRegister(t, unreg, ns)
	mustRegister(t, crash, ns)
	mustRegister(t, silent, ns)
	if !routed("U") || !routed("C") || !routed("S") {
		t.Fatal("routes missing after registration")
	}

	r, err := unreg.Unregister(context.Background(), ns)
	if err != nil || r.Code != protocol.Success {
		t.Fatalf("unregister %v %+v", err, r)
	}
	if routed("U") {
		t.Fatal("unregister answered before the route was gone")
	}
	crash.DropConnections()
	eventually(t, "eviction of a broker whose connection closed", func() bool { return !routed("C") })
	start := time.Now()
	eventually(t, "expiry of a silent 5.x broker", func() bool { return !routed("S") })
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("silent broker evicted after %v, before its 300 ms timeout", d)
	}
	st := s.Routes().Stats()
	if st.LiveBrokers != 0 || st.Topics != 0 || st.Evictions["unregister"] != 1 || st.Evictions["connection_closed"] != 1 || st.Evictions["expired"] != 1 {
		t.Fatalf("stats %+v", st)
	}
	if ci := string(invoke(t, client, protocol.GetBrokerClusterInfo, nil).Body); ci != `{"brokerAddrTable":{},"clusterAddrTable":{}}` {
		t.Fatalf("left behind: %s", ci)
	}
}

func TestRouteDialectFollowsVersionAndFlag(t *testing.T) {
	s := startServer(t, nil)
	mustRegister(t, startBroker(t, brokersim.Config{Cluster: "c", Name: "b", Topics: []body.TopicConfig{brokersim.Topic("T", 1), brokersim.Topic("U", 1)}}), s.Addr().String())
	tests := []struct {
		version int32
		ext     []string
		quoted  bool
	}{
		{0, nil, false}, {protocol.V3_4_9, nil, false}, {protocol.V4_5_2, nil, false}, {400, nil, false},
		{protocol.V4_9_4, nil, true}, {2000, nil, true},
		{protocol.V4_5_2, []string{"acceptStandardJsonOnly", "TRUE"}, true},
		{protocol.V4_5_2, []string{"acceptStandardJsonOnly", "false"}, false},
	}
	for _, tt := range tests {
		c := dial(t, s, remotingclient.Options{Version: tt.version, Language: "GO"})
		if tt.version == 0 {
			c = dial(t, s, remotingclient.Options{Version: -1})
		}
		r := invoke(t, c, protocol.GetRouteInfoByTopic, nil, append([]string{"topic", "T"}, tt.ext...)...)
		if got := strings.Contains(string(r.Body), `{"0":`); got != tt.quoted {
			t.Errorf("version %d ext %v: quoted=%v body %s", tt.version, tt.ext, got, r.Body)
		}
	}
}

func TestMissingTopicAnswer(t *testing.T) {
	s := startServer(t, nil)
	for _, typ := range []remoting.SerializeType{remoting.JSON, remoting.RocketMQ} {
		c := dial(t, s, remotingclient.Options{Type: typ})
		r := invoke(t, c, protocol.GetRouteInfoByTopic, nil, "topic", "%RETRY%group")
		want := "No topic route info in name server for the topic: %RETRY%group\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
		if r.Code != protocol.TopicNotExist || r.Remark != want || r.Type != typ || len(r.Body) != 0 {
			t.Errorf("%v: %+v", typ, r)
		}
	}
}

func TestKVCodesAndPersistence(t *testing.T) {
	dir := t.TempDir()
	kvPath := dir + "/kv/kvConfig.json"
	s := startServer(t, func(c *config.Config) { c.KVConfigPath = kvPath })
	c := dial(t, s, remotingclient.Options{})
	steps := []struct {
		code   int32
		ext    []string
		want   int32
		remark string
		value  string
		body   string
	}{
		{protocol.GetKVListByNamespace, []string{"namespace", "ns"}, protocol.QueryNotFound, "No config item, Namespace: ns", "", ""},
		{protocol.GetKVConfig, []string{"namespace", "ns", "key", "k"}, protocol.QueryNotFound, "No config item, Namespace: ns Key: k", "", ""},
		{protocol.PutKVConfig, []string{"namespace", "ns"}, protocol.SystemError, "namespace or key is null", "", ""},
		{protocol.PutKVConfig, []string{"namespace", "ns", "key", "k", "value", "värde/&<\"x\">"}, protocol.Success, "", "", ""},
		{protocol.PutKVConfig, []string{"namespace", "ns", "key", "empty", "value", ""}, protocol.Success, "", "", ""},
		{protocol.PutKVConfig, []string{"namespace", "ns", "key", "novalue"}, protocol.Success, "", "", ""},
		{protocol.GetKVConfig, []string{"namespace", "ns", "key", "k"}, protocol.Success, "", "värde/&<\"x\">", ""},
		{protocol.GetKVConfig, []string{"namespace", "ns", "key", "novalue"}, protocol.QueryNotFound, "No config item, Namespace: ns Key: novalue", "", ""},
		{protocol.GetKVListByNamespace, []string{"namespace", "ns"}, protocol.Success, "", "", `{"table":{"empty":"","k":"värde/&<\"x\">"}}`},
		{protocol.DeleteKVConfig, []string{"namespace", "ns", "key", "k"}, protocol.Success, "", "", ""},
		{protocol.DeleteKVConfig, []string{"namespace", "ns", "key", "k"}, protocol.Success, "", "", ""},
		{protocol.DeleteKVConfig, []string{"namespace", "ns", "key", "empty"}, protocol.Success, "", "", ""},
		{protocol.GetKVListByNamespace, []string{"namespace", "ns"}, protocol.Success, "", "", `{"table":{}}`},
		{protocol.PutKVConfig, []string{"namespace", protocol.NamespaceOrderTopicConfig, "key", "T", "value", "b:4"}, protocol.Success, "", "", ""},
	}
	for i, st := range steps {
		r := invoke(t, c, st.code, nil, st.ext...)
		if r.Code != st.want || r.Remark != st.remark || r.Ext["value"] != st.value || string(r.Body) != st.body {
			t.Fatalf("step %d (%d %v): %+v", i, st.code, st.ext, r)
		}
	}
	// The table survives a restart.
	s2 := startServer(t, func(c *config.Config) { c.KVConfigPath = kvPath })
	c2 := dial(t, s2, remotingclient.Options{})
	if r := invoke(t, c2, protocol.GetKVConfig, nil, "namespace", protocol.NamespaceOrderTopicConfig, "key", "T"); r.Ext["value"] != "b:4" {
		t.Fatalf("after restart: %+v", r)
	}
	if r := invoke(t, c2, protocol.GetKVListByNamespace, nil, "namespace", "ns"); string(r.Body) != `{"table":{}}` {
		t.Fatalf("emptied namespace must survive: %+v", r)
	}
}

func TestOrderTopicConfInRoutesAndRegistrationAnswers(t *testing.T) {
	s := startServer(t, func(c *config.Config) { c.OrderMessageEnable = true })
	c := dial(t, s, remotingclient.Options{})
	b := startBroker(t, brokersim.Config{Cluster: "c", Name: "b", Topics: []body.TopicConfig{brokersim.Topic("T", 4), brokersim.Topic("U", 4)}})
	if r := mustRegister(t, b, s.Addr().String())[0].Response; len(r.Body) != 0 {
		t.Fatalf("no ORDER_TOPIC_CONFIG namespace yet, but body %s", r.Body)
	}
	route := string(invoke(t, c, protocol.GetRouteInfoByTopic, nil, "topic", "T").Body)
	invoke(t, c, protocol.PutKVConfig, nil, "namespace", protocol.NamespaceOrderTopicConfig, "key", "T", "value", "b:4")
	if r := mustRegister(t, b, s.Addr().String())[0].Response; string(r.Body) != `{"table":{"T":"b:4"}}` {
		t.Fatalf("registration answer body %s", r.Body)
	}
	got := string(invoke(t, c, protocol.GetRouteInfoByTopic, nil, "topic", "T").Body)
	if got == route || !strings.Contains(got, `"orderTopicConf":"b:4"`) {
		t.Fatalf("route after the order config %s", got)
	}
	if r := invoke(t, c, protocol.UpdateNamesrvConfig, []byte("orderMessageEnable=false\n")); r.Code != protocol.Success {
		t.Fatalf("update %+v", r)
	}
	if got := string(invoke(t, c, protocol.GetRouteInfoByTopic, nil, "topic", "T").Body); got != route {
		t.Fatalf("orderMessageEnable=false must drop orderTopicConf: %s", got)
	}
}

func TestConfigCodes(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s, remotingclient.Options{})
	text := string(invoke(t, c, protocol.GetNamesrvConfig, nil).Body)
	for _, line := range []string{"listenPort=0\n", "orderMessageEnable=false\n", "scanNotActiveBrokerInterval=5000\n", "serverChannelMaxIdleTimeSeconds=120\n"} {
		if !strings.Contains(text, line) {
			t.Errorf("config text lacks %q", line)
		}
	}
	tests := []struct {
		body   string
		code   int32
		remark string
	}{
		{"enableAllTopicList=false\nkvConfigPath=/tmp/x\n", protocol.NoPermission, "Can not update config in black list."},
		{"rocketmqHome=/x\n", protocol.NoPermission, "Can not update config in black list."},
		{"a=\\uZZZZ\n", protocol.SystemError, "string2Properties error"},
		{"waitSecondsForService=abc\n", protocol.SystemError, ""},
		{"enableAllTopicList=false\nsomethingUnknown=1\n", protocol.Success, ""},
	}
	for _, tt := range tests {
		r := invoke(t, c, protocol.UpdateNamesrvConfig, []byte(tt.body))
		if r.Code != tt.code || tt.remark != "" && r.Remark != tt.remark {
			t.Errorf("update %q: %+v", tt.body, r)
		}
	}
	if r := invoke(t, c, protocol.GetAllTopicListFromNameserver, nil); r.Code != protocol.SystemError || r.Remark != "disable" {
		t.Fatalf("gated code after enableAllTopicList=false: %+v", r)
	}
	if !strings.Contains(string(invoke(t, c, protocol.GetNamesrvConfig, nil).Body), "enableAllTopicList=false\n") {
		t.Fatal("config text does not reflect the update")
	}
}

func TestListsAndAdminCodes(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s, remotingclient.Options{})
	b1 := startBroker(t, brokersim.Config{Cluster: "c1", Name: "b1", Topics: []body.TopicConfig{brokersim.Topic("A", 4), brokersim.Topic("Both", 4)}})
	b2 := startBroker(t, brokersim.Config{Cluster: "c2", Name: "b2", Topics: []body.TopicConfig{brokersim.Topic("B", 4), brokersim.Topic("Both", 4)}})
	mustRegister(t, b1, s.Addr().String())
	mustRegister(t, b2, s.Addr().String())
	tests := []struct {
		code int32
		ext  []string
		body string
	}{
		{protocol.GetAllTopicListFromNameserver, nil, `{"topicList":["A","B","Both"]}`},
		{protocol.GetTopicsByCluster, []string{"cluster", "c2"}, `{"topicList":["B","Both"]}`},
		{protocol.GetTopicsByCluster, []string{"cluster", "nope"}, `{"topicList":[]}`},
		{protocol.GetSystemTopicListFromNS, nil, `{"brokerAddr":"` + b1.Addr() + `","topicList":["b1","b2","c1","c2"]}`},
		{protocol.GetUnitTopicList, nil, `{"topicList":[]}`},
		{protocol.GetBrokerMemberGroup, []string{"clusterName", "c1", "brokerName", "b1"}, `{"brokerMemberGroup":{"brokerAddrs":{0:"` + b1.Addr() + `"},"brokerName":"b1","cluster":"c1"}}`},
		{protocol.GetBrokerMemberGroup, []string{"clusterName", "x", "brokerName", "nope"}, `{"brokerMemberGroup":{"brokerAddrs":{},"brokerName":"nope","cluster":"x"}}`},
	}
	for _, tt := range tests {
		if r := invoke(t, c, tt.code, nil, tt.ext...); r.Code != protocol.Success || string(r.Body) != tt.body {
			t.Errorf("code %d %v: %d %s", tt.code, tt.ext, r.Code, r.Body)
		}
	}
	if r := invoke(t, c, protocol.WipeWritePermOfBroker, nil, "brokerName", "b1"); r.Ext["wipeTopicCount"] != "2" {
		t.Fatalf("wipe %+v", r)
	}
	if r := invoke(t, c, protocol.AddWritePermOfBroker, nil, "brokerName", "nope"); r.Ext["addTopicCount"] != "0" {
		t.Fatalf("add for unknown broker %+v", r)
	}
	invoke(t, c, protocol.DeleteTopicInNamesrv, nil, "topic", "Both", "clusterName", "c1")
	if r := invoke(t, c, protocol.GetRouteInfoByTopic, nil, "topic", "Both"); strings.Contains(string(r.Body), `"b1"`) {
		t.Fatalf("Both still on b1: %s", r.Body)
	}
	dv := body.AppendDataVersion(nil, body.DataVersion{Counter: 99})
	r := invoke(t, c, protocol.QueryDataVersion, dv, "clusterName", "c1", "brokerAddr", b1.Addr(), "brokerName", "b1", "brokerId", "0")
	if r.Ext["changed"] != "true" || !strings.Contains(string(r.Body), `"counter":1`) {
		t.Fatalf("query data version %+v %s", r, r.Body)
	}
	rt := `{"brokerDatas":[],"filterServerTable":{},"queueDatas":[{"brokerName":"b2","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}`
	if r := invoke(t, c, protocol.RegisterTopicInNamesrv, []byte(rt), "topic", "Single"); r.Code != protocol.Success {
		t.Fatalf("register topic %+v", r)
	}
	if r := invoke(t, c, protocol.GetRouteInfoByTopic, nil, "topic", "Single"); !strings.Contains(string(r.Body), `"readQueueNums":8`) {
		t.Fatalf("registered topic route %s", r.Body)
	}
	if r := invoke(t, c, protocol.BrokerHeartbeat, nil, "clusterName", "c1", "brokerAddr", b1.Addr(), "brokerName", "b1"); r.Code != protocol.Success {
		t.Fatalf("heartbeat %+v", r)
	}
	if r := invoke(t, c, 9999, nil); r.Code != protocol.RequestCodeNotSupported || r.Remark != " request type 9999 not supported" {
		t.Fatalf("unknown code %+v", r)
	}
}

func TestNeedWaitForService(t *testing.T) {
	s := startServer(t, func(c *config.Config) { c.NeedWaitForService = true; c.WaitSecondsForService = 60 })
	c := dial(t, s, remotingclient.Options{})
	if r := invoke(t, c, protocol.GetRouteInfoByTopic, nil, "topic", "T"); r.Code != protocol.SystemError || r.Remark != "name server not ready" {
		t.Fatalf("%+v", r)
	}
}

func TestZoneFilteredRoutes(t *testing.T) {
	s := startServer(t, nil)
	for _, z := range []string{"east", "west"} {
		b := startBroker(t, brokersim.Config{Cluster: "c", Name: z, Generation: body.Broker5, Topics: []body.TopicConfig{brokersim.Topic("T", 1), brokersim.Topic("U", 1)}})
		// Zones come from the broker's __ZONE_NAME header; register by hand.
		c := dial(t, s, remotingclient.Options{})
		data, _ := body.EncodeRegisterBody(&body.RegisterBody{DataVersion: body.DataVersion{Counter: 1}, Topics: b.Topics(), FilterServers: []string{}}, body.Broker5, false)
		r := invoke(t, c, protocol.RegisterBroker, data, "brokerName", z, "brokerAddr", b.Addr(), "clusterName", "c", "brokerId", "0",
			"haServerAddr", "x", "enableActingMaster", "false", "compressed", "false", "__ZONE_NAME", z)
		if r.Code != 0 {
			t.Fatalf("register %+v", r)
		}
		t.Cleanup(func() { c.Close() })
	}
	c := dial(t, s, remotingclient.Options{})
	r := invoke(t, c, protocol.GetRouteInfoByTopic, nil, "topic", "T", "__ZONE_MODE", "true", "__ZONE_NAME", "EAST")
	if got := string(r.Body); !strings.Contains(got, `"brokerName":"east"`) || strings.Contains(got, `"brokerName":"west"`) || !strings.Contains(got, `{0:`) {
		t.Fatalf("zone route %s", got)
	}
	all := string(invoke(t, c, protocol.GetRouteInfoByTopic, nil, "topic", "T").Body)
	if !strings.Contains(all, `"brokerName":"east"`) || !strings.Contains(all, `"zoneName":"west"`) {
		t.Fatalf("unfiltered route %s", all)
	}
}
