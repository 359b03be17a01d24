package body

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

func golden(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func summary(b *RegisterBody) string {
	var s strings.Builder
	fmt.Fprintf(&s, "dv=%d/%d/%d", b.DataVersion.Counter, b.DataVersion.Timestamp, b.DataVersion.StateVersion)
	for _, tc := range b.Topics {
		fmt.Fprintf(&s, " %s:%d:%d:%d:%d", tc.Name, tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm, tc.TopicSysFlag)
	}
	fmt.Fprintf(&s, " fs=%v", b.FilterServers)
	for _, m := range b.Mappings {
		fmt.Fprintf(&s, " map=%s/%s", m.Topic, m.BrokerName)
	}
	return s.String()
}

func TestDecodeJavaBodies(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		opts RegisterOptions
		want string
	}{
		{"4.9.8 compressed (capture)", golden(t, "register-compressed-4.9.8.zlib"), RegisterOptions{Compressed: true, Version: protocol.V4_9_8},
			"dv=3/1700000000000/0 cmpmyolt-rc-T1:8:8:6:0 cmpmyolt-rc-T2:4:2:4:0 cmpmyolt-rc-T3:16:16:7:0 cmpmyolt-rc-T4:1:1:6:0 cmpmyolt-rc-T5:2:2:6:0 cmpmyolt-rc-T6:3:3:6:0 cmpmyolt-rc-T7:2:4:2:0 cmpmyolt-rc-T8:8:8:6:0 fs=[]"},
		{"zlib sniffed although compressed=false (5.x brokers)", golden(t, "register-compressed-4.9.8.zlib"), RegisterOptions{Version: protocol.V4_9_8},
			"dv=3/1700000000000/0 cmpmyolt-rc-T1:8:8:6:0 cmpmyolt-rc-T2:4:2:4:0 cmpmyolt-rc-T3:16:16:7:0 cmpmyolt-rc-T4:1:1:6:0 cmpmyolt-rc-T5:2:2:6:0 cmpmyolt-rc-T6:3:3:6:0 cmpmyolt-rc-T7:2:4:2:0 cmpmyolt-rc-T8:8:8:6:0 fs=[]"},
		{"4.9.8 JSON (capture)", golden(t, "register-json-4.9.8.json"), RegisterOptions{Version: protocol.V4_9_8},
			"dv=1/1700000000000/0 cmpmyolt-rmsj-T1:8:8:6:0 cmpmyolt-rmsj-T2:4:2:4:0 cmpmyolt-rmsj-T3:16:16:7:0 cmpmyolt-rmsj-T4:1:1:6:1 cmpmyolt-rmsj-T5:2:2:6:2 cmpmyolt-rmsj-T6:3:3:6:3 cmpmyolt-rmsj-T7:2:4:2:0 cmpmyolt-rmsj-T8:8:8:6:0 fs=[]"},
		{"5.x JSON with static topic", []byte(`{"filterServerList":["f:1"],"topicConfigSerializeWrapper":{"dataVersion":{"counter":12,"stateVersion":3,"timestamp":1700000000000},"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1},"topicConfigTable":{"T":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":4}},"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{"T":{"bname":"broker-a","currIdMap":{0:0,1:1},"dirty":false,"epoch":1700000000000,"scope":"__global__","topic":"T","totalQueues":8}}}}`),
			RegisterOptions{Version: protocol.V5_3_3}, "dv=12/1700000000000/3 T:4:4:6:0 fs=[f:1] map=T/broker-a"},
		{"bare wrapper of very old brokers", []byte(`{"dataVersion":{"counter":5,"timestamp":7},"topicConfigTable":{"T":{"topicName":"T","perm":6,"readQueueNums":1,"writeQueueNums":1}}}`),
			RegisterOptions{Version: protocol.V3_0_11 - 1}, "dv=5/7/0 T:1:1:6:0 fs=[]"},
		{"defaults and key as name", []byte(`{"topicConfigSerializeWrapper":{"dataVersion":{"counter":"2","timestamp":3},"topicConfigTable":{"K":{},"N":null}}}`),
			RegisterOptions{Version: protocol.V5_3_3}, "dv=2/3/0 K:16:16:6:0 fs=[]"},
		{"old field name topicSynFlag", []byte(`{"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"timestamp":1},"topicConfigTable":{"T":{"topicName":"T","topicSynFlag":2}}}}`),
			RegisterOptions{Version: protocol.V4_9_8}, "dv=1/1/0 T:16:16:6:2 fs=[]"},
		{"null filter list", []byte(`{"filterServerList":null,"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"timestamp":1}}}`),
			RegisterOptions{Version: protocol.V4_9_8}, "dv=1/1/0 fs=[]"},
		{"empty body", nil, RegisterOptions{}, "dv=0/0/0 fs=[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := DecodeRegisterBody(tt.data, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(b); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestNullFilterListKeepsNil(t *testing.T) {
	b, err := DecodeRegisterBody([]byte(`{"filterServerList":null}`), RegisterOptions{Version: protocol.V4_9_8})
	if err != nil {
		t.Fatal(err)
	}
	if b.FilterServers != nil {
		t.Fatalf("filter servers %v, want nil (leave stored ones alone)", b.FilterServers)
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	info, err := fjson.NewReader([]byte(`{"bname":"b","currIdMap":{0:0},"topic":"S"}`)).Value()
	if err != nil {
		t.Fatal(err)
	}
	in := &RegisterBody{
		DataVersion:   DataVersion{Counter: 7, Timestamp: 1700000000000, StateVersion: 2},
		Topics:        []TopicConfig{{Name: []byte("A"), ReadQueueNums: 4, WriteQueueNums: 2, Perm: 6, TopicSysFlag: 1}, {Name: []byte("%RETRY%g"), ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
		FilterServers: []string{},
		Mappings:      []MappingInfo{{Topic: "S", BrokerName: "b", Info: info}},
	}
	for _, gen := range []BrokerGeneration{Broker4, Broker5} {
		for _, compressed := range []bool{false, true} {
			data, err := EncodeRegisterBody(in, gen, compressed)
			if err != nil {
				t.Fatal(err)
			}
			version := protocol.V4_9_8
			if gen == Broker5 {
				version = protocol.V5_3_3
			}
			out, err := DecodeRegisterBody(data, RegisterOptions{Compressed: compressed, Version: version})
			if err != nil {
				t.Fatalf("gen %d compressed %v: %v", gen, compressed, err)
			}
			want := "dv=7/1700000000000/2 A:4:2:6:1 %RETRY%g:1:1:6:0 fs=[] map=S/b"
			switch {
			case gen == Broker4:
				want = "dv=7/1700000000000/0 A:4:2:6:1 %RETRY%g:1:1:6:0 fs=[]"
				if compressed {
					want = strings.Replace(want, "A:4:2:6:1", "A:4:2:6:0", 1)
				}
			case compressed:
				// The compressed form carries no topicSysFlag
				// (docs/protocol.md#register-body-compressed).
				want = strings.Replace(want, "A:4:2:6:1", "A:4:2:6:0", 1)
			}
			if got := summary(out); got != want {
				t.Errorf("gen %d compressed %v:\n got %s\nwant %s", gen, compressed, got, want)
			}
			if compressed && !bytes.HasPrefix(data, []byte{0x78, 0xda}) {
				t.Errorf("compressed body starts %x, want Java's 78 da", data[:2])
			}
		}
	}
}

func TestCompressedInflatesToTheDocumentedLayout(t *testing.T) {
	data, err := EncodeRegisterBody(&RegisterBody{DataVersion: DataVersion{Counter: 3, Timestamp: 1700000000000}, Topics: []TopicConfig{{Name: []byte("a")}, {Name: []byte("b")}}, FilterServers: []string{}}, Broker5, true)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zlib.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var raw bytes.Buffer
	_, _ = raw.ReadFrom(zr)
	// docs/protocol.md#test-vectors
	want := []byte("\x00\x00\x00\x38{\"counte")
	if !bytes.HasPrefix(raw.Bytes(), want) {
		t.Fatalf("inflated starts %q", raw.Bytes()[:12])
	}
	if got := raw.Bytes()[4+0x38 : 4+0x38+4]; !bytes.Equal(got, []byte{0, 0, 0, 2}) {
		t.Fatalf("topic count %x", got)
	}
}

func zlibOf(t testing.TB, raw []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&out, zlib.BestCompression)
	_, _ = zw.Write(raw)
	zw.Close()
	return out.Bytes()
}

func sections(parts ...any) []byte {
	var raw []byte
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			raw = binary.BigEndian.AppendUint32(raw, uint32(len(v)))
			raw = append(raw, v...)
		case int:
			raw = binary.BigEndian.AppendUint32(raw, uint32(int32(v)))
		}
	}
	return raw
}

func TestDecodeRejectsBadBodies(t *testing.T) {
	dv := `{"counter":1,"timestamp":1}`
	bomb := zlibOf(t, make([]byte, 2<<20))
	tests := []struct {
		name string
		data []byte
		opts RegisterOptions
		want string
	}{
		{"not JSON", []byte(`{"filterServerList":[`), RegisterOptions{Version: protocol.V4_9_8}, "decode register body"},
		{"JSON array", []byte(`[]`), RegisterOptions{Version: protocol.V4_9_8}, "expected an object"},
		{"non-numeric perm", []byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"perm":"x"}}}}`), RegisterOptions{Version: protocol.V4_9_8}, "perm"},
		{"compressed flag on JSON", []byte(`{"filterServerList":[]}`), RegisterOptions{Compressed: true, Version: protocol.V4_9_8}, "zlib"},
		{"corrupt zlib", append([]byte{0x78, 0xda}, "garbage"...), RegisterOptions{Version: protocol.V4_9_8}, "zlib"},
		{"bad checksum", func() []byte { b := zlibOf(t, sections(dv, 0, "[]")); b[len(b)-1]++; return b }(), RegisterOptions{Compressed: true, Version: protocol.V4_9_8}, "checksum"},
		{"zlib bomb", bomb, RegisterOptions{Compressed: true, Version: protocol.V4_9_8, MaxInflated: 1 << 20}, "inflated body too large"},
		{"truncated topic count", zlibOf(t, sections(dv)), RegisterOptions{Compressed: true, Version: protocol.V4_9_8}, "topic configs"},
		{"forged topic count", zlibOf(t, sections(dv, 1<<30)), RegisterOptions{Compressed: true, Version: protocol.V4_9_8}, "impossible"},
		{"negative line length", zlibOf(t, sections(dv, 1, -5)), RegisterOptions{Compressed: true, Version: protocol.V4_9_8}, "length -5"},
		{"short line", zlibOf(t, sections(dv, 1, "T 1 1 6", "[]")), RegisterOptions{Compressed: true, Version: protocol.V4_9_8}, "fewer than 5 fields"},
		{"bad number in line", zlibOf(t, sections(dv, 1, "T 1 x 6 SINGLE_TAG", "[]")), RegisterOptions{Compressed: true, Version: protocol.V4_9_8}, "not an integer"},
		{"bad filter type", zlibOf(t, sections(dv, 1, "T 1 1 6 NO_TAG", "[]")), RegisterOptions{Compressed: true, Version: protocol.V4_9_8}, "filter type"},
		{"missing mapping count for 5.x", zlibOf(t, sections(dv, 0, "[]")), RegisterOptions{Compressed: true, Version: protocol.V5_0_0}, "mapping infos"},
		{"bad data version", zlibOf(t, sections(`{"counter":`, 0, "[]")), RegisterOptions{Compressed: true, Version: protocol.V4_9_8}, "data version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeRegisterBody(tt.data, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
	if _, err := DecodeRegisterBody(bomb, RegisterOptions{Compressed: true, Version: protocol.V4_9_8, MaxInflated: 1 << 20}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("bomb err %v", err)
	}
}

func TestCompressedFilterListErrorsAreIgnored(t *testing.T) {
	b, err := DecodeRegisterBody(zlibOf(t, sections(`{"counter":1,"timestamp":1}`, 0, "not json")), RegisterOptions{Compressed: true, Version: protocol.V4_9_8})
	if err != nil || len(b.FilterServers) != 0 || b.FilterServers == nil {
		t.Fatalf("body %+v err %v", b, err)
	}
}

func TestEncoders(t *testing.T) {
	rd := &TopicRouteData{
		BrokerDatas:   []*BrokerData{{Cluster: "c", BrokerName: "b", Addrs: []BrokerAddr{{0, "a:1"}, {1, "a:2"}}, Modern: true, ZoneName: "z/1"}},
		QueueDatas:    []QueueData{{BrokerName: "b", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
		FilterServers: []FilterServers{{BrokerAddr: "a:1", Servers: []string{"f:1"}}},
	}
	if got, want := string(AppendTopicRouteData(nil, rd, fjson.Standard)), `{"brokerDatas":[{"brokerAddrs":{"0":"a:1","1":"a:2"},"brokerName":"b","cluster":"c","enableActingMaster":false,"zoneName":"z\/1"}],"filterServerTable":{"a:1":["f:1"]},"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}`; got != want {
		t.Errorf("route\n got %s\nwant %s", got, want)
	}
	if got, want := string(AppendTopicList(nil, &TopicList{Topics: []string{"a", "b"}, BrokerAddr: "x:1"})), `{"brokerAddr":"x:1","topicList":["a","b"]}`; got != want {
		t.Errorf("topic list %s", got)
	}
	if got, want := string(AppendTopicList(nil, &TopicList{})), `{"topicList":[]}`; got != want {
		t.Errorf("empty topic list %s", got)
	}
	if got, want := string(AppendBrokerMemberGroup(nil, "c", "b", []BrokerAddr{{0, "a:1"}})), `{"brokerMemberGroup":{"brokerAddrs":{0:"a:1"},"brokerName":"b","cluster":"c"}}`; got != want {
		t.Errorf("member group %s", got)
	}
	if got, want := string(AppendDataVersion(nil, DataVersion{Counter: 1, Timestamp: 2, StateVersion: 3})), `{"counter":1,"stateVersion":3,"timestamp":2}`; got != want {
		t.Errorf("data version %s", got)
	}
}

func TestDecodeQueueDatas(t *testing.T) {
	qs, err := DecodeQueueDatas([]byte(`{"brokerDatas":[],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSysFlag":1,"writeQueueNums":8}]}`))
	if err != nil || len(qs) != 1 || qs[0] != (QueueData{BrokerName: "broker-a", Perm: 6, ReadQueueNums: 8, WriteQueueNums: 8, TopicSysFlag: 1}) {
		t.Fatalf("%+v %v", qs, err)
	}
	if _, err := DecodeQueueDatas([]byte(`{"queueDatas":[{"perm":"x"}]}`)); err == nil {
		t.Fatal("bad perm accepted")
	}
}

// TestDecodeQueueDatasNull: Java reads "queueDatas":null as no queue data
// (REGISTER_TOPIC_IN_NAMESRV then changes nothing and answers SUCCESS).
func TestDecodeQueueDatasNull(t *testing.T) {
	for _, in := range []string{`{"queueDatas":null}`, `{"brokerDatas":[],"queueDatas":null,"filterServerTable":{}}`, `{}`} {
		if qs, err := DecodeQueueDatas([]byte(in)); err != nil || len(qs) != 0 {
			t.Errorf("%s: %v %v", in, qs, err)
		}
	}
}

// FuzzDecodeRegisterBody feeds arbitrary bodies, plain and compressed: the
// decoder must return a body or an error, never panic or blow up memory.
func FuzzDecodeRegisterBody(f *testing.F) {
	f.Add(golden(f, "register-json-4.9.8.json"), false, int32(409))
	f.Add(golden(f, "register-compressed-4.9.8.zlib"), true, int32(409))
	f.Add([]byte(`{"dataVersion":{"counter":1}}`), false, int32(1))
	f.Fuzz(func(t *testing.T, data []byte, compressed bool, version int32) {
		b, err := DecodeRegisterBody(data, RegisterOptions{Compressed: compressed, Version: version, MaxInflated: 1 << 20})
		if err == nil && b == nil {
			t.Fatal("nil body without error")
		}
	})
}

// FuzzDecodeCompressed fuzzes the inflated layout directly, which random
// zlib streams would rarely reach.
func FuzzDecodeCompressed(f *testing.F) {
	f.Add(sections(`{"counter":1,"timestamp":1}`, 1, "T 1 1 6 SINGLE_TAG {}", "[]", 1, `{"topic":"T","bname":"b"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var out bytes.Buffer
		zw := zlib.NewWriter(&out)
		_, _ = zw.Write(raw)
		zw.Close()
		_, _ = DecodeRegisterBody(out.Bytes(), RegisterOptions{Compressed: true, Version: protocol.V5_3_3})
	})
}

// TestReleasedTopicListsAreReused: a body decoded into a list another body
// released holds its own topics only, whichever form either came in.
func TestReleasedTopicListsAreReused(t *testing.T) {
	many := &RegisterBody{DataVersion: DataVersion{Counter: 1}, FilterServers: []string{}}
	for i := range 50 {
		many.Topics = append(many.Topics, TopicConfig{Name: fmt.Appendf(nil, "M%02d", i), ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6})
	}
	few := &RegisterBody{DataVersion: DataVersion{Counter: 2}, Topics: []TopicConfig{{Name: []byte("F"), ReadQueueNums: 2, WriteQueueNums: 2, Perm: 4}}, FilterServers: []string{}}
	for _, compressed := range []bool{false, true} {
		manyData, err := EncodeRegisterBody(many, Broker5, compressed)
		if err != nil {
			t.Fatal(err)
		}
		fewData, err := EncodeRegisterBody(few, Broker5, compressed)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			b, err := DecodeRegisterBody(manyData, RegisterOptions{Version: protocol.V5_3_3})
			if err != nil || len(b.Topics) != 50 || string(b.Topics[49].Name) != "M49" {
				t.Fatalf("compressed %v: %d topics, %v", compressed, len(b.Topics), err)
			}
			b.Release()
			if b.Topics != nil {
				t.Fatal("Release left the topics")
			}
			b, err = DecodeRegisterBody(fewData, RegisterOptions{Version: protocol.V5_3_3})
			if err != nil || summary(b) != "dv=2/0/0 F:2:2:4:0 fs=[]" {
				t.Fatalf("compressed %v: %s, %v", compressed, summary(b), err)
			}
			b.Release()
		}
	}
}
