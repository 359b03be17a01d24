package nsadmin

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
)

// What Java NameServers put on the wire (fastjson's legacy dialect: integer
// map keys bare), in Java's hash order.
const (
	javaClusterInfo = `{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false},"broker-b":{"brokerAddrs":{0:"10.0.0.3:10911"},"brokerName":"broker-b","cluster":"DefaultCluster","zoneName":"z1"}},"clusterAddrTable":{"DefaultCluster":["broker-b","broker-a"]}}`
	javaRoute       = `{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.3:10911"},"brokerName":"broker-b","cluster":"DefaultCluster"},{"brokerAddrs":{"0":"10.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],"filterServerTable":{"10.0.0.1:10911":["10.0.0.1:10921"]},"orderTopicConf":"broker-a:4","queueDatas":[{"brokerName":"broker-b","perm":4,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4},{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSynFlag":1,"writeQueueNums":8}]}`
	javaTopicList   = `{"brokerAddr":"10.0.0.1:10911","topicList":["TopicB","TopicA","TopicA"]}`
	javaKVTable     = `{"table":{"TopicA":"broker-a:4","n":5}}`
)

// TestDecodeJavaAnswers: nsadmin reads Java's answers into namesrv/body's
// types, a route's brokers and queues sorted by broker name for comparing
// and printing.
func TestDecodeJavaAnswers(t *testing.T) {
	ci, err := decodeClusterInfo([]byte(javaClusterInfo))
	if err != nil {
		t.Fatal(err)
	}
	wantCI := &body.ClusterInfo{
		Brokers: []*body.BrokerData{
			{Cluster: "DefaultCluster", BrokerName: "broker-a", Addrs: body.BrokerAddrs{{ID: 0, Addr: "10.0.0.1:10911"}, {ID: 1, Addr: "10.0.0.2:10911"}}, Modern: true},
			{Cluster: "DefaultCluster", BrokerName: "broker-b", Addrs: body.BrokerAddrs{{ID: 0, Addr: "10.0.0.3:10911"}}, ZoneName: "z1"},
		},
		Clusters: []body.ClusterMembers{{Cluster: "DefaultCluster", BrokerNames: []string{"broker-a", "broker-b"}}},
	}
	if !reflect.DeepEqual(ci, wantCI) {
		t.Errorf("cluster info\n got %s\nwant %s", body.AppendClusterInfo(nil, ci), body.AppendClusterInfo(nil, wantCI))
	}

	rd, err := decodeRoute([]byte(javaRoute))
	if err != nil {
		t.Fatal(err)
	}
	wantRD := &body.TopicRouteData{
		OrderTopicConf: "broker-a:4", HasOrderConf: true,
		BrokerDatas: []*body.BrokerData{
			{Cluster: "DefaultCluster", BrokerName: "broker-a", Addrs: body.BrokerAddrs{{ID: 0, Addr: "10.0.0.1:10911"}}},
			{Cluster: "DefaultCluster", BrokerName: "broker-b", Addrs: body.BrokerAddrs{{ID: 0, Addr: "10.0.0.3:10911"}}},
		},
		QueueDatas: []body.QueueData{
			{BrokerName: "broker-a", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6, TopicSysFlag: 1},
			{BrokerName: "broker-b", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 4},
		},
		FilterServers: body.FilterServerTable{{BrokerAddr: "10.0.0.1:10911", Servers: []string{"10.0.0.1:10921"}}},
	}
	if !reflect.DeepEqual(rd, wantRD) {
		t.Errorf("route\n got %s\nwant %s", body.AppendTopicRouteData(nil, rd, 0), body.AppendTopicRouteData(nil, wantRD, 0))
	}

	topics, err := decodeTopics([]byte(javaTopicList))
	if err != nil || !reflect.DeepEqual(topics, []string{"TopicA", "TopicB"}) {
		t.Errorf("topic list %q, %v", topics, err)
	}
	kv, err := decodeKVTable([]byte(javaKVTable))
	if err != nil || !maps.Equal(kv, map[string]string{"TopicA": "broker-a:4", "n": "5"}) {
		t.Errorf("KV table %v, %v", kv, err)
	}
}

// TestRouteJSON: topicRoute -o json prints each peer's route with the
// Java field names, in the shape nsadmin has always printed
// (testdata/topicRoute.json): brokerAddrs and filterServerTable as objects,
// orderTopicConf and zoneName only when set, and neither
// enableActingMaster nor the static-topic mappings.
func TestRouteJSON(t *testing.T) {
	var routes []PeerRoute
	for i, answer := range []string{
		`{"brokerDatas":[{"brokerAddrs":{"10":"10.0.0.9:10911","2":"10.0.0.2:10911",0:"10.0.0.1:10911"},"brokerName":"broker-a","cluster":"C<&>","enableActingMaster":true,"zoneName":"zone-é"},{"brokerAddrs":{},"brokerName":"broker-0","cluster":"C"}],` +
			`"filterServerTable":{"10.0.0.1:10911":["f:1","f:2"],"a:1":[]},"orderTopicConf":"broker-a:4","queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSysFlag":1,"writeQueueNums":8},{"brokerName":"broker-0","perm":2,"readQueueNums":1,"topicSynFlag":3,"writeQueueNums":1}],` +
			`"topicQueueMappingByBroker":{"broker-a":{"bname":"broker-a","currIdMap":{0:0},"epoch":3}}}`,
		javaRoute,
		"",
		`{"queueDatas":[],"brokerDatas":[]}`,
		`{}`,
	} {
		pr := PeerRoute{Addr: string(rune('a' + i))}
		if answer != "" {
			rd, err := decodeRoute([]byte(answer))
			if err != nil {
				t.Fatal(err)
			}
			pr.Route = rd
		}
		routes = append(routes, pr)
	}
	got, err := json.MarshalIndent(&topicRouteReport{base: onePeer(), Topic: "T", Routes: routes}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "topicRoute.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestDecodeRejectsWhatIsNotAnAnswer(t *testing.T) {
	decoders := map[string]func([]byte) error{
		"cluster":    func(b []byte) error { _, err := decodeClusterInfo(b); return err },
		"route":      func(b []byte) error { _, err := decodeRoute(b); return err },
		"topic list": func(b []byte) error { _, err := decodeTopics(b); return err },
		"kv":         func(b []byte) error { _, err := decodeKVTable(b); return err },
	}
	for _, tt := range []struct {
		decoder, body string
	}{
		{"cluster", ``},
		{"cluster", `[]`},
		{"cluster", `{"brokerAddrTable":[]}`},
		{"cluster", `{"brokerAddrTable":{"b":{"brokerAddrs":{x:"a"}}}}`},
		{"cluster", `{"brokerAddrTable":{"b":{"brokerAddrs":{0:{}}}}}`},
		{"cluster", `{"brokerAddrTable":{"b":{"cluster":[]}}}`},
		{"cluster", `{"brokerAddrTable":{"b":{"brokerName":"c"}}}`},
		{"cluster", `{"clusterAddrTable":{"c":"b"}}`},
		{"cluster", `{"clusterAddrTable":{"c":[{}]}}`},
		{"cluster", `{} trailing`},
		{"route", `{"queueDatas":{}}`},
		{"route", `{"queueDatas":[{"readQueueNums":"many"}]}`},
		{"route", `{"queueDatas":[{"perm":99999999999}]}`},
		{"route", `{"queueDatas":[1]}`},
		{"route", `{"brokerDatas":[[]]}`},
		{"route", `{"filterServerTable":{"a":"b"}}`},
		{"route", `{"orderTopicConf":{}}`},
		{"topic list", `{"topicList":"a"}`},
		{"topic list", `"x"`},
		{"kv", `{"table":[]}`},
		{"kv", `{"table":{"k":[]}}`},
		{"kv", `{`},
	} {
		err := decoders[tt.decoder]([]byte(tt.body))
		if !errors.Is(err, errAnswer) {
			t.Errorf("%s %q: %v, want an errAnswer", tt.decoder, tt.body, err)
		}
	}
}

// FuzzDecodeAnswers feeds any bytes to every answer decoder as nsadmin
// calls it: none may panic, each either decodes or says the answer is
// unexpected, and a decoded route makes rows.
func FuzzDecodeAnswers(f *testing.F) {
	for _, s := range []string{javaClusterInfo, javaRoute, javaTopicList, javaKVTable, `{}`, `null`, `{"table":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if ci, err := decodeClusterInfo(data); err != nil && !errors.Is(err, errAnswer) {
			t.Fatalf("cluster info: %v", err)
		} else if err == nil {
			brokerRows(ci, "")
		}
		if rd, err := decodeRoute(data); err != nil && !errors.Is(err, errAnswer) {
			t.Fatalf("route: %v", err)
		} else if err == nil {
			routeRows(rd)
		}
		if _, err := decodeTopics(data); err != nil && !errors.Is(err, errAnswer) {
			t.Fatalf("topic list: %v", err)
		}
		if _, err := decodeKVTable(data); err != nil && !errors.Is(err, errAnswer) {
			t.Fatalf("KV table: %v", err)
		}
	})
}
