package nsadmin

import (
	"errors"
	"maps"
	"reflect"
	"testing"

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
)

// What Java NameServers put on the wire (fastjson's legacy dialect: integer
// map keys bare), and what this repository's NameServer encodes.
const (
	javaClusterInfo = `{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false},"broker-b":{"brokerAddrs":{0:"10.0.0.3:10911"},"brokerName":"broker-b","cluster":"DefaultCluster","zoneName":"z1"}},"clusterAddrTable":{"DefaultCluster":["broker-b","broker-a"]}}`
	javaRoute       = `{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.3:10911"},"brokerName":"broker-b","cluster":"DefaultCluster"},{"brokerAddrs":{"0":"10.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],"filterServerTable":{"10.0.0.1:10911":["10.0.0.1:10921"]},"orderTopicConf":"broker-a:4","queueDatas":[{"brokerName":"broker-b","perm":4,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4},{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSynFlag":1,"writeQueueNums":8}]}`
	javaTopicList   = `{"brokerAddr":"10.0.0.1:10911","topicList":["TopicB","TopicA","TopicA"]}`
	javaKVTable     = `{"table":{"TopicA":"broker-a:4","n":5}}`
)

func TestDecodeJavaAnswers(t *testing.T) {
	ci, err := DecodeClusterInfo([]byte(javaClusterInfo))
	if err != nil {
		t.Fatal(err)
	}
	wantCI := &ClusterInfo{
		BrokerAddrTable: map[string]BrokerData{
			"broker-a": {Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerAddrs: map[int64]string{0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}},
			"broker-b": {Cluster: "DefaultCluster", BrokerName: "broker-b", BrokerAddrs: map[int64]string{0: "10.0.0.3:10911"}, ZoneName: "z1"},
		},
		ClusterAddrTable: map[string][]string{"DefaultCluster": {"broker-a", "broker-b"}},
	}
	if !reflect.DeepEqual(ci, wantCI) {
		t.Errorf("cluster info\n got %+v\nwant %+v", ci, wantCI)
	}

	rd, err := DecodeTopicRouteData([]byte(javaRoute))
	if err != nil {
		t.Fatal(err)
	}
	wantRD := &TopicRouteData{
		OrderTopicConf: "broker-a:4",
		BrokerDatas: []BrokerData{
			{Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerAddrs: map[int64]string{0: "10.0.0.1:10911"}},
			{Cluster: "DefaultCluster", BrokerName: "broker-b", BrokerAddrs: map[int64]string{0: "10.0.0.3:10911"}},
		},
		QueueDatas: []QueueData{
			{BrokerName: "broker-a", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6, TopicSysFlag: 1},
			{BrokerName: "broker-b", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 4},
		},
		FilterServerTable: map[string][]string{"10.0.0.1:10911": {"10.0.0.1:10921"}},
	}
	if !reflect.DeepEqual(rd, wantRD) {
		t.Errorf("route\n got %+v\nwant %+v", rd, wantRD)
	}

	topics, err := DecodeTopicList([]byte(javaTopicList))
	if err != nil || !reflect.DeepEqual(topics, []string{"TopicA", "TopicB"}) {
		t.Errorf("topic list %q, %v", topics, err)
	}
	kv, err := DecodeKVTable([]byte(javaKVTable))
	if err != nil || !maps.Equal(kv, map[string]string{"TopicA": "broker-a:4", "n": "5"}) {
		t.Errorf("KV table %v, %v", kv, err)
	}
}

// TestDecodeWhatNamesrvEncodes reads back the bodies of this repository's
// NameServer, in both dialects.
func TestDecodeWhatNamesrvEncodes(t *testing.T) {
	bd := &body.BrokerData{Cluster: "c", BrokerName: "b", Addrs: []body.BrokerAddr{{ID: 0, Addr: "10.0.0.1:10911"}, {ID: 2, Addr: "10.0.0.2:10911"}}, Modern: true}
	ci, err := DecodeClusterInfo(body.AppendClusterInfo(nil, &body.ClusterInfo{Brokers: []*body.BrokerData{bd}, Clusters: []body.ClusterMembers{{Cluster: "c", BrokerNames: []string{"b"}}}}))
	if err != nil {
		t.Fatal(err)
	}
	if got := ci.BrokerAddrTable["b"].BrokerAddrs; !maps.Equal(got, map[int64]string{0: "10.0.0.1:10911", 2: "10.0.0.2:10911"}) {
		t.Errorf("addrs %v", got)
	}
	for _, d := range []fjson.Dialect{fjson.Legacy, fjson.Standard} {
		route := &body.TopicRouteData{QueueDatas: []body.QueueData{{BrokerName: "b/é", ReadQueueNums: 3, WriteQueueNums: 2, Perm: 6}}, BrokerDatas: []*body.BrokerData{bd}}
		rd, err := DecodeTopicRouteData(body.AppendTopicRouteData(nil, route, d))
		if err != nil {
			t.Fatal(err)
		}
		if q := rd.QueueDatas[0]; q.BrokerName != "b/é" || q.ReadQueueNums != 3 || q.WriteQueueNums != 2 || q.Perm != 6 {
			t.Errorf("dialect %d: %+v", d, q)
		}
	}
	topics, err := DecodeTopicList(body.AppendTopicList(nil, &body.TopicList{Topics: []string{"a", "x"}}))
	if err != nil || !reflect.DeepEqual(topics, []string{"a", "x"}) {
		t.Errorf("%q %v", topics, err)
	}
}

func TestDecodeRejectsWhatIsNotAnAnswer(t *testing.T) {
	decoders := map[string]func([]byte) error{
		"cluster":    func(b []byte) error { _, err := DecodeClusterInfo(b); return err },
		"route":      func(b []byte) error { _, err := DecodeTopicRouteData(b); return err },
		"topic list": func(b []byte) error { _, err := DecodeTopicList(b); return err },
		"kv":         func(b []byte) error { _, err := DecodeKVTable(b); return err },
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

// FuzzDecodeAnswers feeds any bytes to every answer decoder: none may
// panic, and each either decodes or says the answer is unexpected.
func FuzzDecodeAnswers(f *testing.F) {
	for _, s := range []string{javaClusterInfo, javaRoute, javaTopicList, javaKVTable, `{}`, `null`, `{"table":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := DecodeClusterInfo(data); err != nil && !errors.Is(err, errAnswer) {
			t.Fatalf("cluster info: %v", err)
		}
		if rd, err := DecodeTopicRouteData(data); err != nil && !errors.Is(err, errAnswer) {
			t.Fatalf("route: %v", err)
		} else if err == nil {
			routeRows(rd)
		}
		if _, err := DecodeTopicList(data); err != nil && !errors.Is(err, errAnswer) {
			t.Fatalf("topic list: %v", err)
		}
		if _, err := DecodeKVTable(data); err != nil && !errors.Is(err, errAnswer) {
			t.Fatalf("KV table: %v", err)
		}
	})
}
