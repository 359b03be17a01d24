package namesrv_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
)

// post sends a POST to the HTTP side and returns the status and body.
func post(t *testing.T, s *namesrv.Server, path, reqBody string) (int, string) {
	t.Helper()
	resp, err := http.Post("http://"+s.HTTPAddr().String()+path, peerstatus.ContentType, strings.NewReader(reqBody))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func decodeJSON[T any](t *testing.T, text string) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", text, err)
	}
	return v
}

func summary(t *testing.T, s *namesrv.Server) peerstatus.Summary {
	t.Helper()
	code, text := get(t, s, peerstatus.SummaryPath)
	if code != 200 {
		t.Fatalf("summary %d %s", code, text)
	}
	return decodeJSON[peerstatus.Summary](t, text)
}

func gateRequest(t *testing.T, s *namesrv.Server, keys ...peerstatus.BrokerKey) peerstatus.Summary {
	t.Helper()
	b, _ := json.Marshal(peerstatus.GateRequest{Expect: keys})
	code, text := post(t, s, peerstatus.GatePath, string(b))
	if code != 200 {
		t.Fatalf("gate request %d %s", code, text)
	}
	return decodeJSON[peerstatus.Summary](t, text)
}

// gated expects the server to close a client's connection instead of
// answering a request.
func gated(t *testing.T, c *remotingclient.Client, code int32, ext ...string) {
	t.Helper()
	req := &remotingclient.Request{Code: code}
	for i := 0; i+1 < len(ext); i += 2 {
		req.Ext = append(req.Ext, remoting.Pair{Key: ext[i], Value: ext[i+1]})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := c.Invoke(ctx, req)
	if err == nil {
		t.Fatalf("request %d answered %+v while the gate is closed", code, r)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("request %d: no answer, but the connection stayed open", code)
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the connection is still open")
	}
}

func key(b *brokersim.Broker, cluster string) peerstatus.BrokerKey {
	return peerstatus.BrokerKey{Cluster: cluster, Addr: b.Addr()}
}

func TestRouteGateClosesClientConnectionsAndServesBrokers(t *testing.T) {
	s := startServer(t, func(c *config.Config) { c.RouteGateEnable = true; c.RouteGateTimeoutSeconds = 3600 })
	ns := s.Addr().String()
	if code, text := get(t, s, "/readyz"); code != 503 || !strings.Contains(text, "waiting for a gate request") {
		t.Fatalf("readyz %d %q", code, text)
	}
	a := startBroker(t, brokersim.Config{Cluster: "c", Name: "broker-a", Topics: []body.TopicConfig{brokersim.Topic("T", 4), brokersim.Topic("U", 4)}})
	b := startBroker(t, brokersim.Config{Cluster: "c", Name: "broker-b", Generation: body.Broker5, Topics: []body.TopicConfig{brokersim.Topic("T", 2), brokersim.Topic("V", 2)}})
	mustRegister(t, a, ns)

	// A broker's own connection is served, route queries included.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := a.Invoke(ctx, ns, &remotingclient.Request{Code: protocol.GetRouteInfoByTopic, Ext: []remoting.Pair{{Key: "topic", Value: "T"}}})
	if err != nil || r.Code != protocol.Success || !strings.Contains(string(r.Body), "broker-a") {
		t.Fatalf("route query over the broker's connection: %v %+v", err, r)
	}

	// A client's route and KV reads get their connection closed.
	gated(t, dial(t, s, remotingclient.Options{}), protocol.GetRouteInfoByTopic, "topic", "T")
	gated(t, dial(t, s, remotingclient.Options{}), protocol.GetKVConfig, "namespace", "ns", "key", "k")
	// Answers already due on the connection are written first.
	pipelined := dial(t, s, remotingclient.Options{})
	if r := invoke(t, pipelined, protocol.GetBrokerClusterInfo, nil); r.Code != protocol.Success {
		t.Fatalf("cluster info %+v", r)
	}
	gated(t, pipelined, protocol.GetRouteInfoByTopic, "topic", "T")
	// Every other code is served: admin tools, KV writes.
	admin := dial(t, s, remotingclient.Options{})
	for _, code := range []int32{protocol.GetBrokerClusterInfo, protocol.GetNamesrvConfig, protocol.GetAllTopicListFromNameserver} {
		if r := invoke(t, admin, code, nil); r.Code != protocol.Success {
			t.Fatalf("code %d while gated: %+v", code, r)
		}
	}
	if r := invoke(t, admin, protocol.PutKVConfig, nil, "namespace", "ns", "key", "k", "value", "v"); r.Code != protocol.Success {
		t.Fatalf("KV write while gated: %+v", r)
	}
	// Closing clients' connections evicted nobody.
	if s.Routes().Stats().LiveBrokers != 1 {
		t.Fatal("a gated close evicted a broker")
	}
	m := scrapeMetrics(t, s)
	if m.value("rocketmq_namesrv_route_gate_open") != 0 || m.value("rocketmq_namesrv_route_gate_refusals_total") != 3 ||
		m.value("rocketmq_namesrv_connections_closed_total", "reason", "gated") != 3 {
		t.Fatalf("gate metrics: open %v refusals %v closed %v", m.value("rocketmq_namesrv_route_gate_open"),
			m.value("rocketmq_namesrv_route_gate_refusals_total"), m.value("rocketmq_namesrv_connections_closed_total", "reason", "gated"))
	}

	// A request naming a broker not registered yet keeps the gate closed.
	sum := gateRequest(t, s, key(a, "c"), key(b, "c"))
	if sum.Gate.Open || !sum.Gate.Enabled || sum.Gate.Expected != 2 || len(sum.Gate.Missing) != 1 || sum.Gate.Missing[0] != key(b, "c") || sum.Gate.Deadline == nil {
		t.Fatalf("gate after the request %+v", sum.Gate)
	}
	if code, text := get(t, s, "/readyz"); code != 503 || !strings.Contains(text, "1 of 2 expected brokers") {
		t.Fatalf("readyz %d %q", code, text)
	}
	gated(t, dial(t, s, remotingclient.Options{}), protocol.GetRouteInfoByTopic, "topic", "T")

	// The moment the last one registers, the gate opens.
	mustRegister(t, b, ns)
	if s.Gate().Closed() {
		t.Fatal("the gate is closed after the last expected broker registered")
	}
	if code, text := get(t, s, "/readyz"); code != 200 {
		t.Fatalf("readyz %d %q", code, text)
	}
	client := dial(t, s, remotingclient.Options{})
	if r := invoke(t, client, protocol.GetRouteInfoByTopic, nil, "topic", "T"); r.Code != protocol.Success || !strings.Contains(string(r.Body), "broker-b") {
		t.Fatalf("route once open %+v", r)
	}
	if r := invoke(t, client, protocol.GetKVConfig, nil, "namespace", "ns", "key", "k"); r.Ext["value"] != "v" {
		t.Fatalf("KV once open %+v", r)
	}
	if g := summary(t, s).Gate; !g.Open || g.OpenedBy != "request" || g.Deadline != nil {
		t.Fatalf("gate %+v", g)
	}
	if v := scrapeMetrics(t, s).value("rocketmq_namesrv_route_gate_open"); v != 1 {
		t.Fatalf("route_gate_open %v", v)
	}
	// A later request cannot close it.
	gateRequest(t, s, peerstatus.BrokerKey{Cluster: "c", Addr: "10.9.9.9:1"})
	if s.Gate().Closed() {
		t.Fatal("a gate request closed an open gate")
	}
}

func TestRouteGateOpensByTimeout(t *testing.T) {
	s := startServer(t, func(c *config.Config) { c.RouteGateEnable = true; c.RouteGateTimeoutSeconds = 1 })
	if !s.Gate().Closed() {
		t.Fatal("an enabled gate started open")
	}
	gated(t, dial(t, s, remotingclient.Options{}), protocol.GetRouteInfoByTopic, "topic", "T")
	eventually(t, "the timeout to open the gate", func() bool { return !s.Gate().Closed() })
	if g := summary(t, s).Gate; !g.Open || g.OpenedBy != "timeout" {
		t.Fatalf("gate %+v", g)
	}
	if code, text := get(t, s, "/readyz"); code != 200 {
		t.Fatalf("readyz %d %q", code, text)
	}
	if r := invoke(t, dial(t, s, remotingclient.Options{}), protocol.GetRouteInfoByTopic, nil, "topic", "T"); r.Code != protocol.TopicNotExist {
		t.Fatalf("route once open %+v", r)
	}
}

func TestRouteGateRequestOnAServerWithoutGate(t *testing.T) {
	s := startServer(t, nil)
	sum := gateRequest(t, s, peerstatus.BrokerKey{Cluster: "c", Addr: "10.0.0.1:10911"})
	if g := sum.Gate; g.Enabled || !g.Open || g.OpenedBy != "" || g.Expected != 1 || len(g.Missing) != 1 {
		t.Fatalf("gate %+v", g)
	}
	if code, text := post(t, s, peerstatus.GatePath, `{"expect":[{"cluster":"c"}]}`); code != 400 || !strings.Contains(text, "cluster and addr") {
		t.Fatalf("bad gate request %d %q", code, text)
	}
	if v := scrapeMetrics(t, s).value("rocketmq_namesrv_route_gate_open"); v != 1 {
		t.Fatalf("route_gate_open without a gate %v", v)
	}
}

// TestRocketMQClientGoAgainstAGatedServer: an independent client's route
// query fails at the transport level while the gate is closed (so it
// would move to another NameServer), and succeeds once it is open.
func TestRocketMQClientGoAgainstAGatedServer(t *testing.T) {
	s := startServer(t, func(c *config.Config) { c.RouteGateEnable = true; c.RouteGateTimeoutSeconds = 3600 })
	ns := s.Addr().String()
	mustRegister(t, startBroker(t, brokersim.Config{Cluster: "DefaultCluster", Name: "broker-a",
		Topics: []body.TopicConfig{brokersim.Topic("TopicTest", 4), brokersim.Topic("TBW102", 8)}}), ns)
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{ns})))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = adm.FetchPublishMessageQueues(ctx, "TopicTest")
	if err == nil {
		t.Fatal("a gated server answered rocketmq-client-go's route query")
	}
	if strings.Contains(strings.ToLower(err.Error()), "not exist") || strings.Contains(err.Error(), "No topic route") {
		t.Fatalf("the client got an answer, not a transport error: %v", err)
	}
	if s.Gate().Refusals() == 0 {
		t.Fatalf("the query failed (%v), but not because the gate closed its connection", err)
	}
	t.Logf("rocketmq-client-go while gated: %v", err)
	gateRequest(t, s)
	mqs, err := adm.FetchPublishMessageQueues(ctx, "TopicTest")
	if err != nil || len(mqs) != 4 {
		t.Fatalf("once open: %v, %d queues", err, len(mqs))
	}
}

func TestRouteSummary(t *testing.T) {
	s := startServer(t, nil)
	ns := s.Addr().String()
	empty := summary(t, s)
	if empty.Digest != "" || empty.Brokers == nil || len(empty.Brokers) != 0 || empty.KV != nil || empty.Counts != (peerstatus.Counts{}) {
		t.Fatalf("empty summary %+v", empty)
	}
	if id, err := hex.DecodeString(empty.BootID); err != nil || len(id) != 16 {
		t.Fatalf("boot id %q", empty.BootID)
	}
	if d := time.Since(empty.StartTime); d < 0 || d > time.Minute {
		t.Fatalf("start time %v", empty.StartTime)
	}
	if other := summary(t, startServer(t, nil)); other.BootID == empty.BootID {
		t.Fatal("two servers share a boot id")
	}
	resp, err := http.Get("http://" + s.HTTPAddr().String() + peerstatus.SummaryPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Content-Type") != peerstatus.ContentType || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("headers %v", resp.Header)
	}

	before := time.Now()
	master := startBroker(t, brokersim.Config{Cluster: "c1", Name: "broker-a", Topics: []body.TopicConfig{brokersim.Topic("T", 4), brokersim.Topic("U", 4)}})
	slave := startBroker(t, brokersim.Config{Cluster: "c1", Name: "broker-a", ID: 1})
	other := startBroker(t, brokersim.Config{Cluster: "c2", Name: "broker-b", Topics: []body.TopicConfig{brokersim.Topic("T", 2), brokersim.Topic("W", 2)}})
	for _, b := range []*brokersim.Broker{master, slave, other} {
		mustRegister(t, b, ns)
	}
	sum := summary(t, s)
	if sum.BootID != empty.BootID || sum.Counts != (peerstatus.Counts{Brokers: 3, Clusters: 2, Topics: 3}) || len(sum.Brokers) != 3 {
		t.Fatalf("summary %+v", sum)
	}
	byAddr := map[string]peerstatus.Broker{}
	for _, b := range sum.Brokers {
		byAddr[b.Addr] = b
	}
	m := byAddr[master.Addr()]
	if m.Cluster != "c1" || m.BrokerName != "broker-a" || m.BrokerID != 0 || m.DataVersion.Counter != 1 || m.DataVersion.Timestamp == 0 ||
		m.RegisteredAt.Before(before.Add(-time.Second)) || m.LastUpdate.Before(m.RegisteredAt) {
		t.Fatalf("master entry %+v", m)
	}
	if sl := byAddr[slave.Addr()]; sl.BrokerID != 1 || sl.BrokerName != "broker-a" {
		t.Fatalf("slave entry %+v", sl)
	}
	if sum.Digest != peerstatus.BrokersDigest(sum.Brokers) || len(sum.Digest) != 64 {
		t.Fatalf("digest %q", sum.Digest)
	}

	// Re-registrations at the same version keep the digest and the
	// registration time; a new DataVersion changes the digest.
	time.Sleep(5 * time.Millisecond)
	mustRegister(t, master, ns)
	again := summary(t, s)
	var m2 peerstatus.Broker
	for _, b := range again.Brokers {
		if b.Addr == master.Addr() {
			m2 = b
		}
	}
	if again.Digest != sum.Digest || !m2.RegisteredAt.Equal(m.RegisteredAt) || !m2.LastUpdate.After(m.LastUpdate) {
		t.Fatalf("after a heartbeat: digest %s (was %s), entry %+v (was %+v)", again.Digest, sum.Digest, m2, m)
	}
	master.SetTopics(master.Topics())
	mustRegister(t, master, ns)
	if changed := summary(t, s); changed.Digest == sum.Digest {
		t.Fatal("the digest did not change with a DataVersion")
	}
	other.DropConnections()
	eventually(t, "eviction", func() bool { return s.Routes().Stats().LiveBrokers == 2 })
	if left := summary(t, s); len(left.Brokers) != 2 || left.Counts.Brokers != 2 || left.Counts.Clusters != 1 {
		t.Fatalf("after an eviction %+v", left)
	}
}

func TestRouteSummaryJSONShape(t *testing.T) {
	s := startServer(t, func(c *config.Config) { c.RouteGateEnable = true; c.RouteGateTimeoutSeconds = 3600 })
	b := startBroker(t, brokersim.Config{Cluster: "c", Name: "broker-a", Topics: []body.TopicConfig{brokersim.Topic("T", 4), brokersim.Topic("U", 4)}})
	mustRegister(t, b, s.Addr().String())
	gateRequest(t, s, peerstatus.BrokerKey{Cluster: "c", Addr: "10.0.0.9:10911"})
	_, text := get(t, s, peerstatus.SummaryPath)
	var raw map[string]any
	if err := json.Unmarshal([]byte(text), &raw); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"bootID", "startTime", "gate", "counts", "digest", "brokers"} {
		if _, ok := raw[field]; !ok {
			t.Errorf("summary lacks %q: %s", field, text)
		}
	}
	for _, frag := range []string{
		`"gate":{"enabled":true,"open":false,"deadline":"`, `"expected":1,"missing":[{"cluster":"c","addr":"10.0.0.9:10911"}]`,
		`"counts":{"brokers":1,"clusters":1,"topics":2}`, `"brokerName":"broker-a","brokerId":0,"dataVersion":{"stateVersion":0,`,
		`"registeredAt":"`, `"lastUpdate":"`,
	} {
		if !bytes.Contains([]byte(text), []byte(frag)) {
			t.Errorf("summary lacks %s:\n%s", frag, text)
		}
	}
}

// TestRouteGateSettingsTakeEffectAtStartOnly: UPDATE_NAMESRV_CONFIG
// persists the gate's keys for the next start but neither opens nor
// closes the running gate.
func TestRouteGateSettingsTakeEffectAtStartOnly(t *testing.T) {
	s := startServer(t, func(c *config.Config) { c.RouteGateEnable = true; c.RouteGateTimeoutSeconds = 3600 })
	admin := dial(t, s, remotingclient.Options{})
	text := string(invoke(t, admin, protocol.GetNamesrvConfig, nil).Body)
	for _, line := range []string{"routeGateEnable=true\n", "routeGateTimeoutSeconds=3600\n", "kvDeclaredFile=\n", "brokerAddressFile=\n"} {
		if !strings.Contains(text, line) {
			t.Errorf("GET_NAMESRV_CONFIG lacks %q", line)
		}
	}
	if r := invoke(t, admin, protocol.UpdateNamesrvConfig, []byte("routeGateEnable=false\n")); r.Code != protocol.Success {
		t.Fatalf("update %+v", r)
	}
	if !s.Gate().Closed() {
		t.Fatal("an update opened the gate")
	}
	gated(t, dial(t, s, remotingclient.Options{}), protocol.GetRouteInfoByTopic, "topic", "T")
	if r := invoke(t, admin, protocol.UpdateNamesrvConfig, []byte("routeGateEnable=true\nrouteGateTimeoutSeconds=0\n")); r.Code != protocol.SystemError ||
		!strings.Contains(r.Remark, "routeGateTimeoutSeconds") {
		t.Fatalf("an update that would stop the next start: %+v", r)
	}
	gateRequest(t, s)
	if r := invoke(t, admin, protocol.UpdateNamesrvConfig, []byte("routeGateEnable=true\n")); r.Code != protocol.Success {
		t.Fatalf("update %+v", r)
	}
	if s.Gate().Closed() {
		t.Fatal("an update closed the gate")
	}
}
