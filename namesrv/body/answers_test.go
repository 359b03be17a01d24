package body

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
)

// javaAnswers are the route, cluster-info and topic-list answers of a Java
// 4.9.8 NameServer in the replay captures (namesrv/golden_test.go), keyed
// by the captures' labels.
func javaAnswers(t testing.TB) (routes, clusters, topicLists map[string][]byte) {
	t.Helper()
	raw, err := os.ReadFile("../testdata/java-4.9.8-exchanges.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Exchanges []struct {
			Scenario, Label string
			Response        *struct {
				Body any
			}
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	routes, clusters, topicLists = map[string][]byte{}, map[string][]byte{}, map[string][]byte{}
	for _, e := range doc.Exchanges {
		if e.Response == nil {
			continue
		}
		b, ok := e.Response.Body.(string)
		if !ok {
			continue
		}
		label := e.Scenario + "/" + e.Label
		switch {
		case strings.HasPrefix(b, `{"brokerDatas":`):
			routes[label] = []byte(b)
		case strings.HasPrefix(b, `{"brokerAddrTable":`):
			clusters[label] = []byte(b)
		case strings.HasPrefix(b, `{"topicList":`):
			topicLists[label] = []byte(b)
		}
	}
	if len(routes) < 10 || len(clusters) < 2 || len(topicLists) < 1 {
		t.Fatalf("the captures hold %d routes, %d cluster infos, %d topic lists", len(routes), len(clusters), len(topicLists))
	}
	return routes, clusters, topicLists
}

// TestDecodeJavaAnswers: every answer of the Java NameServer decodes, and a
// route written back in its dialect is Java's, byte for byte (the captured
// routes list their brokers in the order this NameServer sorts them).
// Cluster infos and topic lists come in Java's hash order, so they are
// compared as decoded.
func TestDecodeJavaAnswers(t *testing.T) {
	routes, clusters, topicLists := javaAnswers(t)
	for label, java := range routes {
		rd, err := DecodeTopicRouteData(java)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		d := fjson.Standard
		if bytes.Contains(java, []byte(`{0:`)) {
			d = fjson.Legacy
		}
		if got := AppendTopicRouteData(nil, rd, d); !bytes.Equal(got, java) {
			t.Errorf("%s:\n got %s\nwant %s", label, got, java)
		}
	}
	for label, java := range clusters {
		ci, err := DecodeClusterInfo(java)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		checkClusterRoundTrip(t, ci, fjson.Legacy)
		checkClusterRoundTrip(t, ci, fjson.Standard)
		b := ci.Broker("cmpmyolt-rmsj-b")
		if b == nil || b.Cluster != "cmpmyolt-rmsj-c" || !slices.Equal(b.Addrs, BrokerAddrs{{0, "127.0.0.1:20001"}, {1, "127.0.0.1:20003"}}) {
			t.Errorf("%s: cmpmyolt-rmsj-b is %+v", label, b)
		}
	}
	for label, java := range topicLists {
		tl, err := DecodeTopicList(java)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if !slices.IsSorted(tl.Topics) || !slices.Contains(tl.Topics, "cmpmyolt-rmsj-T1") || bytes.Count(java, []byte(`","`))+1 != len(tl.Topics) {
			t.Errorf("%s: %d topics %q", label, len(tl.Topics), tl.Topics)
		}
	}
}

// TestDecodeWhatJava5Adds reads the members 5.x NameServers add: zone
// names, enableActingMaster and static-topic mappings, and what fastjson
// tolerates (quoted or bare ids, numbers for strings, the 4.x misspelling
// topicSynFlag, nulls).
func TestDecodeWhatJava5Adds(t *testing.T) {
	rd, err := DecodeTopicRouteData([]byte(`{"brokerDatas":[{"brokerAddrs":{"1":"a:2",0:"a:1"},"brokerName":"b","cluster":7,"enableActingMaster":"TRUE","zoneName":"z"},{"brokerAddrs":null,"brokerName":"c","cluster":null,"enableActingMaster":null}],` +
		`"filterServerTable":{"z:1":["f"],"a:1":null,"z:1":["g"]},"orderTopicConf":"b:4","queueDatas":[{"brokerName":"b","perm":"6","readQueueNums":8,"topicSynFlag":1,"writeQueueNums":8,"extra":{}}],` +
		`"topicQueueMappingByBroker":{"c":null,"b":{"bname":"b","currIdMap":{0:0},"epoch":3}},"unknown":[1]}`))
	if err != nil {
		t.Fatal(err)
	}
	info := &fjson.Value{Kind: fjson.Object, Members: []fjson.Member{
		{Key: "bname", Value: fjson.Value{Kind: fjson.String, Text: "b"}},
		{Key: "currIdMap", Value: fjson.Value{Kind: fjson.Object, Members: []fjson.Member{{Key: "0", Bare: true, Value: fjson.Value{Kind: fjson.Number, Text: "0"}}}}},
		{Key: "epoch", Value: fjson.Value{Kind: fjson.Number, Text: "3"}},
	}}
	want := &TopicRouteData{
		BrokerDatas: []*BrokerData{
			{Cluster: "7", BrokerName: "b", Addrs: BrokerAddrs{{0, "a:1"}, {1, "a:2"}}, ZoneName: "z", Modern: true, ActingMaster: true},
			{BrokerName: "c"},
		},
		FilterServers:  FilterServerTable{{BrokerAddr: "a:1"}, {BrokerAddr: "z:1", Servers: []string{"g"}}},
		OrderTopicConf: "b:4", HasOrderConf: true,
		QueueDatas: []QueueData{{BrokerName: "b", Perm: 6, ReadQueueNums: 8, WriteQueueNums: 8, TopicSysFlag: 1}},
		Mappings:   []Mapping{{BrokerName: "b", Info: info}},
	}
	if !reflect.DeepEqual(rd, want) {
		t.Errorf("\n got %s\nwant %s", AppendTopicRouteData(nil, rd, fjson.Legacy), AppendTopicRouteData(nil, want, fjson.Legacy))
	}

	ci, err := DecodeClusterInfo([]byte(`{"brokerAddrTable":{'b':{"brokerAddrs":{"0":"a:1"},"cluster":"c","enableActingMaster":false},"a":null},"clusterAddrTable":{"c":["b","a","b"],"d":null},"other":1}`))
	if err != nil {
		t.Fatal(err)
	}
	wantCI := &ClusterInfo{
		Brokers:  []*BrokerData{{Cluster: "c", BrokerName: "b", Addrs: BrokerAddrs{{0, "a:1"}}, Modern: true}},
		Clusters: []ClusterMembers{{Cluster: "c", BrokerNames: []string{"a", "b"}}, {Cluster: "d"}},
	}
	if !reflect.DeepEqual(ci, wantCI) {
		t.Errorf("cluster info\n got %s\nwant %s", AppendClusterInfo(nil, ci), AppendClusterInfo(nil, wantCI))
	}
	if ci.Broker("a") != nil || ci.Broker("b") != ci.Brokers[0] {
		t.Error("Broker finds the wrong group")
	}

	tl, err := DecodeTopicList([]byte(`{"brokerAddr":"x:1","topicList":["b","a",null,"b",1]}`))
	if err != nil || !reflect.DeepEqual(tl, &TopicList{Topics: []string{"1", "a", "b"}, BrokerAddr: "x:1"}) {
		t.Errorf("topic list %+v, %v", tl, err)
	}
}

// TestDecodeAnswersRejectBadBodies: what fastjson would not read into the
// Java class is an error that says where it is.
func TestDecodeAnswersRejectBadBodies(t *testing.T) {
	decoders := map[string]func([]byte) error{
		"route":   func(b []byte) error { _, err := DecodeTopicRouteData(b); return err },
		"cluster": func(b []byte) error { _, err := DecodeClusterInfo(b); return err },
		"topics":  func(b []byte) error { _, err := DecodeTopicList(b); return err },
	}
	for _, tt := range []struct {
		decoder, body, err string
	}{
		{"route", ``, "decode topic route data: json: expected an object at offset 0"},
		{"route", `[]`, "expected an object"},
		{"route", `{"queueDatas":{}}`, "expected an array at queueDatas"},
		{"route", `{"queueDatas":[1]}`, "expected an object at queueDatas[0]"},
		{"route", `{"queueDatas":[{"readQueueNums":"many"}]}`, `"many" is not an integer at queueDatas[0].readQueueNums`},
		{"route", `{"queueDatas":[{"perm":99999999999}]}`, "does not fit 32 bits at queueDatas[0].perm"},
		{"route", `{"brokerDatas":[[]]}`, "expected an object at brokerDatas[0]"},
		{"route", `{"brokerDatas":[{"brokerAddrs":{x:"a"}}]}`, `broker id "x" is not an integer at brokerDatas[0].brokerAddrs.x`},
		{"route", `{"brokerDatas":[{"brokerAddrs":{"0":{}}}]}`, "expected a string, number or boolean at brokerDatas[0].brokerAddrs.0"},
		{"route", `{"brokerDatas":[{"cluster":[]}]}`, "at brokerDatas[0].cluster"},
		{"route", `{"filterServerTable":{"a":"b"}}`, "expected an array at filterServerTable.a"},
		{"route", `{"filterServerTable":{"a":[{}]}}`, "at filterServerTable.a[0]"},
		{"route", `{"orderTopicConf":{}}`, "at orderTopicConf"},
		{"route", `{"topicQueueMappingByBroker":[]}`, "expected an object at topicQueueMappingByBroker"},
		{"route", `{} trailing`, "unexpected 't' after the document"},
		{"cluster", `{"brokerAddrTable":[]}`, "expected an object at brokerAddrTable"},
		{"cluster", `{"brokerAddrTable":{"b":{"brokerAddrs":{x:"a"}}}}`, `broker id "x" is not an integer at brokerAddrTable.b.brokerAddrs.x`},
		{"cluster", `{"brokerAddrTable":{"b":{"brokerName":"c"}}}`, `decode cluster info: json: brokerName "c" differs from its key at brokerAddrTable.b`},
		{"cluster", `{"brokerAddrTable":{"b":7}}`, "expected an object at brokerAddrTable.b"},
		{"cluster", `{"clusterAddrTable":{"c":"b"}}`, "expected an array at clusterAddrTable.c"},
		{"cluster", `{"clusterAddrTable":{"c":[{}]}}`, "at clusterAddrTable.c[0]"},
		{"topics", `{"topicList":"a"}`, "decode topic list: json: expected an array at topicList"},
		{"topics", `{"topicList":[[]]}`, "at topicList[0]"},
		{"topics", `{"brokerAddr":{}}`, "at brokerAddr"},
		{"topics", `"x"`, "expected an object"},
	} {
		err := decoders[tt.decoder]([]byte(tt.body))
		if !errors.Is(err, fjson.ErrSyntax) || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s %s: %v, want an error with %q", tt.decoder, tt.body, err, tt.err)
		}
	}
}

// TestRoundTrips: what the NameServer writes reads back as it was, in
// either dialect.
func TestRoundTrips(t *testing.T) {
	info, err := fjson.NewReader([]byte(`{"bname":"b","currIdMap":{0:0,"1":-1},"scope":"x/é","flags":[true,null,1.5]}`)).Value()
	if err != nil {
		t.Fatal(err)
	}
	master := &BrokerData{Cluster: "c", BrokerName: "b/é\"\\", Addrs: BrokerAddrs{{0, "10.0.0.1:10911"}, {2, "10.0.0.2:10911"}}, ZoneName: "z\n", Modern: true, ActingMaster: true}
	routes := []*TopicRouteData{
		{},
		{QueueDatas: []QueueData{{BrokerName: "b", ReadQueueNums: 8, WriteQueueNums: 4, Perm: 6, TopicSysFlag: -1}}, BrokerDatas: []*BrokerData{master, {BrokerName: "4.x", Addrs: BrokerAddrs{{-1, "x"}}}}},
		{FilterServers: FilterServerTable{{BrokerAddr: "a", Servers: []string{"f:1", "😀"}}, {BrokerAddr: "b"}}, HasOrderConf: true, Mappings: []Mapping{{BrokerName: "b", Info: &info}}},
		{HasOrderConf: true, OrderTopicConf: "b:4;c:8"},
	}
	for i, rd := range routes {
		for _, d := range []fjson.Dialect{fjson.Legacy, fjson.Standard} {
			checkRouteRoundTrip(t, rd, d)
		}
		if t.Failed() {
			t.Fatalf("route %d", i)
		}
	}
	for _, ci := range []*ClusterInfo{
		{},
		{Brokers: []*BrokerData{{BrokerName: "a"}, master}, Clusters: []ClusterMembers{{Cluster: "", BrokerNames: []string{"a"}}, {Cluster: "c", BrokerNames: []string{"a", "b/é\"\\", "gone"}}}},
	} {
		checkClusterRoundTrip(t, ci, fjson.Legacy)
		checkClusterRoundTrip(t, ci, fjson.Standard)
	}
	for _, tl := range []*TopicList{{}, {Topics: []string{"%RETRY%g", "T/é"}}, {Topics: []string{""}, BrokerAddr: "10.0.0.1:10911"}} {
		checkTopicListRoundTrip(t, tl, fjson.Legacy)
		checkTopicListRoundTrip(t, tl, fjson.Standard)
	}
}

// TestAnswersAsJSON: the json tags and the map types print an answer with
// its Java field names, brokerAddrs and filterServerTable as objects.
func TestAnswersAsJSON(t *testing.T) {
	rd := &TopicRouteData{
		QueueDatas:    []QueueData{{BrokerName: "b", ReadQueueNums: 8, WriteQueueNums: 4, Perm: 6}},
		BrokerDatas:   []*BrokerData{{Cluster: "c", BrokerName: "b", Addrs: BrokerAddrs{{0, "a:1"}, {10, "a:3"}, {2, "a:2"}}, Modern: true}, {}},
		FilterServers: FilterServerTable{{BrokerAddr: "a:1", Servers: []string{"f"}}},
		HasOrderConf:  true, Mappings: []Mapping{{BrokerName: "b"}},
	}
	got, err := json.Marshal(rd)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"queueDatas":[{"brokerName":"b","readQueueNums":8,"writeQueueNums":4,"perm":6,"topicSysFlag":0}],` +
		`"brokerDatas":[{"cluster":"c","brokerName":"b","brokerAddrs":{"0":"a:1","10":"a:3","2":"a:2"}},{"cluster":"","brokerName":"","brokerAddrs":{}}],` +
		`"filterServerTable":{"a:1":["f"]}}`
	if string(got) != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
}

func checkRouteRoundTrip(t *testing.T, rd *TopicRouteData, d fjson.Dialect) {
	t.Helper()
	data := AppendTopicRouteData(nil, rd, d)
	got, err := DecodeTopicRouteData(data)
	if err != nil {
		t.Fatalf("dialect %d: %s: %v", d, data, err)
	}
	if !equalRoute(got, rd, d == fjson.Standard) {
		t.Fatalf("dialect %d: %s\nreads back as %s", d, data, AppendTopicRouteData(nil, got, d))
	}
}

func checkClusterRoundTrip(t *testing.T, ci *ClusterInfo, d fjson.Dialect) {
	t.Helper()
	data := inDialect(t, AppendClusterInfo(nil, ci), d)
	got, err := DecodeClusterInfo(data)
	if err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	if !equalClusterInfo(got, ci) {
		t.Fatalf("%s\nreads back as %s", data, AppendClusterInfo(nil, got))
	}
}

func checkTopicListRoundTrip(t *testing.T, tl *TopicList, d fjson.Dialect) {
	t.Helper()
	data := inDialect(t, AppendTopicList(nil, tl), d)
	got, err := DecodeTopicList(data)
	if err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	if got.BrokerAddr != tl.BrokerAddr || !slices.Equal(got.Topics, tl.Topics) {
		t.Fatalf("%s\nreads back as %+v", data, got)
	}
}

// inDialect rewrites a body that Java writes in the legacy dialect only
// (cluster infos, topic lists) in dialect d, for decoders that must read
// both.
func inDialect(t *testing.T, legacy []byte, d fjson.Dialect) []byte {
	t.Helper()
	if d == fjson.Legacy {
		return legacy
	}
	v, err := fjson.NewReader(legacy).Value()
	if err != nil {
		t.Fatalf("%s: %v", legacy, err)
	}
	return fjson.AppendValue(nil, &v, d)
}

// equalRoute compares routes, an empty list equal to none. In the
// standard dialect every map key is quoted, so the bare keys of mapping
// infos come back quoted.
func equalRoute(a, b *TopicRouteData, standard bool) bool {
	return a.OrderTopicConf == b.OrderTopicConf && a.HasOrderConf == b.HasOrderConf &&
		slices.Equal(a.QueueDatas, b.QueueDatas) &&
		slices.EqualFunc(a.BrokerDatas, b.BrokerDatas, equalBrokerData) &&
		slices.EqualFunc(a.FilterServers, b.FilterServers, func(x, y FilterServers) bool {
			return x.BrokerAddr == y.BrokerAddr && slices.Equal(x.Servers, y.Servers)
		}) &&
		slices.EqualFunc(a.Mappings, b.Mappings, func(x, y Mapping) bool {
			return x.BrokerName == y.BrokerName && equalValue(x.Info, y.Info, standard)
		})
}

func equalBrokerData(a, b *BrokerData) bool {
	return a.Cluster == b.Cluster && a.BrokerName == b.BrokerName && a.ZoneName == b.ZoneName &&
		a.Modern == b.Modern && a.ActingMaster == b.ActingMaster && slices.Equal(a.Addrs, b.Addrs)
}

func equalClusterInfo(a, b *ClusterInfo) bool {
	return slices.EqualFunc(a.Brokers, b.Brokers, equalBrokerData) &&
		slices.EqualFunc(a.Clusters, b.Clusters, func(x, y ClusterMembers) bool {
			return x.Cluster == y.Cluster && slices.Equal(x.BrokerNames, y.BrokerNames)
		})
}

func equalValue(a, b *fjson.Value, ignoreBare bool) bool {
	if a.Kind != b.Kind || a.Text != b.Text {
		return false
	}
	return slices.EqualFunc(a.Items, b.Items, func(x, y fjson.Value) bool { return equalValue(&x, &y, ignoreBare) }) &&
		slices.EqualFunc(a.Members, b.Members, func(x, y fjson.Member) bool {
			return x.Key == y.Key && (ignoreBare || x.Bare == y.Bare) && equalValue(&x.Value, &y.Value, ignoreBare)
		})
}

// gen draws the values of an answer from fuzz input; once the input runs
// out every draw is zero, so every input makes an answer.
type gen struct {
	data []byte
	// valid makes every string valid UTF-8, each bad byte U+FFFD: the
	// standard dialect escapes characters, and a byte that is none
	// cannot come back.
	valid bool
}

func (g *gen) bytes(n int) []byte {
	n = min(n, len(g.data))
	b := g.data[:n]
	g.data = g.data[n:]
	return b
}

func (g *gen) n(limit int) int {
	b := g.bytes(1)
	if len(b) == 0 {
		return 0
	}
	return int(b[0]) % (limit + 1)
}

func (g *gen) bool() bool { return g.n(1) == 1 }

func (g *gen) int64() int64 {
	var b [8]byte
	copy(b[:], g.bytes(g.n(8)))
	return int64(binary.LittleEndian.Uint64(b[:]))
}

func (g *gen) int32() int32 { return int32(g.int64()) }

func (g *gen) string() string {
	s := string(g.bytes(g.n(16)))
	if !g.valid || utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r)
		i += size
	}
	return b.String()
}

func (g *gen) brokerData() *BrokerData {
	b := &BrokerData{Cluster: g.string(), BrokerName: g.string(), ZoneName: g.string(), Modern: g.bool()}
	b.ActingMaster = b.Modern && g.bool()
	for range g.n(3) {
		b.Addrs = append(b.Addrs, BrokerAddr{ID: g.int64(), Addr: g.string()})
	}
	b.Addrs = sortedLastWins(b.Addrs, compareIDs)
	return b
}

// value draws a static-topic mapping info: an object, as brokers register
// them, with bare integer keys as fastjson writes its maps.
func (g *gen) value(depth int) fjson.Value {
	kind := fjson.Object
	if depth > 0 {
		kind = fjson.Kind(g.n(int(fjson.Object)))
	}
	v := fjson.Value{Kind: kind}
	switch kind {
	case fjson.Bool:
		v.Text = strconv.FormatBool(g.bool())
	case fjson.Number:
		v.Text = strconv.FormatInt(g.int64(), 10)
	case fjson.String:
		v.Text = g.string()
	case fjson.Array:
		for range g.n(min(2, 3-depth)) {
			v.Items = append(v.Items, g.value(depth+1))
		}
	case fjson.Object:
		for range g.n(min(3, 3-depth)) {
			m := fjson.Member{Bare: g.bool()}
			if m.Bare {
				m.Key = strconv.Itoa(g.n(200))
			} else {
				m.Key = g.string()
			}
			m.Value = g.value(depth + 1)
			v.Members = append(v.Members, m)
		}
	}
	return v
}

func (g *gen) route() *TopicRouteData {
	rd := &TopicRouteData{}
	for range g.n(3) {
		rd.QueueDatas = append(rd.QueueDatas, QueueData{BrokerName: g.string(), ReadQueueNums: g.int32(), WriteQueueNums: g.int32(), Perm: g.int32(), TopicSysFlag: g.int32()})
	}
	for range g.n(3) {
		rd.BrokerDatas = append(rd.BrokerDatas, g.brokerData())
	}
	for range g.n(2) {
		fs := FilterServers{BrokerAddr: g.string()}
		for range g.n(2) {
			fs.Servers = append(fs.Servers, g.string())
		}
		rd.FilterServers = append(rd.FilterServers, fs)
	}
	rd.FilterServers = sortedLastWins(rd.FilterServers, func(a, b FilterServers) int { return strings.Compare(a.BrokerAddr, b.BrokerAddr) })
	if rd.HasOrderConf = g.bool(); rd.HasOrderConf {
		rd.OrderTopicConf = g.string()
	}
	for range g.n(2) {
		info := g.value(0)
		rd.Mappings = append(rd.Mappings, Mapping{BrokerName: g.string(), Info: &info})
	}
	rd.Mappings = sortedLastWins(rd.Mappings, func(a, b Mapping) int { return strings.Compare(a.BrokerName, b.BrokerName) })
	return rd
}

func (g *gen) clusterInfo() *ClusterInfo {
	ci := &ClusterInfo{}
	for range g.n(3) {
		ci.Brokers = append(ci.Brokers, g.brokerData())
	}
	ci.Brokers = sortedLastWins(ci.Brokers, func(a, b *BrokerData) int { return strings.Compare(a.BrokerName, b.BrokerName) })
	for range g.n(3) {
		c := ClusterMembers{Cluster: g.string()}
		for range g.n(3) {
			c.BrokerNames = append(c.BrokerNames, g.string())
		}
		slices.Sort(c.BrokerNames)
		c.BrokerNames = slices.Compact(c.BrokerNames)
		ci.Clusters = append(ci.Clusters, c)
	}
	ci.Clusters = sortedLastWins(ci.Clusters, func(a, b ClusterMembers) int { return strings.Compare(a.Cluster, b.Cluster) })
	return ci
}

func (g *gen) topicList() *TopicList {
	tl := &TopicList{BrokerAddr: g.string()}
	for range g.n(4) {
		tl.Topics = append(tl.Topics, g.string())
	}
	slices.Sort(tl.Topics)
	tl.Topics = slices.Compact(tl.Topics)
	return tl
}

var answerSeeds = [][]byte{
	nil,
	[]byte("\x03\x02b\x00\x01\x08\x00\x01\x06\x02c\x01\x03\x01\x01a"),
	[]byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"),
	[]byte("\x01\x04\xc3\xa9/\"\x05\x0a\\\x00\x7f\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c"),
}

// FuzzRouteRoundTrip: any route the NameServer can hold reads back equal
// from its encoding in either dialect.
func FuzzRouteRoundTrip(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRouteRoundTrip(t, (&gen{data: data}).route(), fjson.Legacy)
		checkRouteRoundTrip(t, (&gen{data: data, valid: true}).route(), fjson.Standard)
	})
}

// FuzzClusterInfoRoundTrip: any cluster info reads back equal from its
// encoding, and from that rewritten in the standard dialect.
func FuzzClusterInfoRoundTrip(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkClusterRoundTrip(t, (&gen{data: data}).clusterInfo(), fjson.Legacy)
		checkClusterRoundTrip(t, (&gen{data: data, valid: true}).clusterInfo(), fjson.Standard)
	})
}

// FuzzTopicListRoundTrip: any topic list reads back equal from its
// encoding, and from that rewritten in the standard dialect.
func FuzzTopicListRoundTrip(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkTopicListRoundTrip(t, (&gen{data: data}).topicList(), fjson.Legacy)
		checkTopicListRoundTrip(t, (&gen{data: data, valid: true}).topicList(), fjson.Standard)
	})
}

// FuzzDecodeAnswers feeds any bytes to the answer decoders: none may panic,
// and what one accepts, written back, reads back the same. The standard
// dialect turns bytes that are not UTF-8 into U+FFFD, so there the second
// writing must equal the first.
func FuzzDecodeAnswers(f *testing.F) {
	routes, clusters, topicLists := javaAnswers(f)
	for _, m := range []map[string][]byte{routes, clusters, topicLists} {
		for _, b := range m {
			f.Add(b)
		}
	}
	for _, s := range []string{
		`{}`, `null`,
		`{"brokerDatas":[{"brokerAddrs":{0:"\xff"},"enableActingMaster":"true"}],"topicQueueMappingByBroker":{"b":{1:[1e5,'x']}}}`,
		`{"brokerDatas":[{"brokerAddrs":{"2":"b",0:"a","2":"c"}}],"filterServerTable":{"b":[],"a":[]},"topicQueueMappingByBroker":{"b":{},"a":{}}}`,
		`{"brokerAddrTable":{"b":{"brokerAddrs":{1:"x",0:"y"}},"a":{}},"clusterAddrTable":{"d":["b","a","a"],"c":[]},"topicList":["b","a","a"]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if rd, err := DecodeTopicRouteData(data); err == nil {
			for _, b := range rd.BrokerDatas {
				ascending(t, b.Addrs, compareIDs)
			}
			ascending(t, rd.FilterServers, func(a, b FilterServers) int { return strings.Compare(a.BrokerAddr, b.BrokerAddr) })
			ascending(t, rd.Mappings, func(a, b Mapping) int { return strings.Compare(a.BrokerName, b.BrokerName) })
			checkRouteRoundTrip(t, rd, fjson.Legacy)
			standard := AppendTopicRouteData(nil, rd, fjson.Standard)
			again, err := DecodeTopicRouteData(standard)
			if err != nil {
				t.Fatalf("%s: %v", standard, err)
			}
			if twice := AppendTopicRouteData(nil, again, fjson.Standard); !bytes.Equal(twice, standard) {
				t.Fatalf("written %s\nthen %s", standard, twice)
			}
		}
		if ci, err := DecodeClusterInfo(data); err == nil {
			ascending(t, ci.Brokers, func(a, b *BrokerData) int { return strings.Compare(a.BrokerName, b.BrokerName) })
			ascending(t, ci.Clusters, func(a, b ClusterMembers) int { return strings.Compare(a.Cluster, b.Cluster) })
			for _, b := range ci.Brokers {
				ascending(t, b.Addrs, compareIDs)
			}
			for _, c := range ci.Clusters {
				ascending(t, c.BrokerNames, strings.Compare)
			}
			checkClusterRoundTrip(t, ci, fjson.Legacy)
		}
		if tl, err := DecodeTopicList(data); err == nil {
			ascending(t, tl.Topics, strings.Compare)
			checkTopicListRoundTrip(t, tl, fjson.Legacy)
		}
	})
}

// ascending checks a decoded map or set: sorted by key, each key once.
func ascending[S ~[]E, E any](t *testing.T, s S, compare func(a, b E) int) {
	t.Helper()
	for i := 1; i < len(s); i++ {
		if compare(s[i-1], s[i]) >= 0 {
			t.Fatalf("entries %d and %d are out of order: %+v", i-1, i, s)
		}
	}
}
