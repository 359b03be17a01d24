package header

import (
	"testing"

	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
)

func command(body []byte, kv ...string) *remoting.Command {
	cmd := &remoting.Command{Body: body}
	for i := 0; i+1 < len(kv); i += 2 {
		cmd.Ext = append(cmd.Ext, remoting.ExtField{Key: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	return cmd
}

// without returns kv without the pair whose key is key.
func without(kv []string, key string) []string {
	var out []string
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] != key {
			out = append(out, kv[i], kv[i+1])
		}
	}
	return out
}

type decoder interface {
	Decode(*remoting.Command) error
}

// TestMissingAndMalformedFieldsReadTheSameForEveryCode: each required
// field, left out, gives "missing request header field <name>", and each
// integer, garbled, names the field and the value, whatever the header.
func TestMissingAndMalformedFieldsReadTheSameForEveryCode(t *testing.T) {
	broker := []string{"clusterName", "c", "brokerAddr", "a:1", "brokerName", "b", "brokerId", "0"}
	tests := []struct {
		name     string
		header   func() decoder
		complete []string
		body     []byte
		required []string
		integers []string
	}{
		{"REGISTER_BROKER", func() decoder { return &RegisterBroker{} }, append(broker, "bodyCrc32", "0", "heartbeatTimeoutMillis", "10000"), nil,
			[]string{"clusterName", "brokerAddr", "brokerName", "brokerId"}, []string{"brokerId", "bodyCrc32", "heartbeatTimeoutMillis"}},
		{"UNREGISTER_BROKER", func() decoder { return &UnregisterBroker{} }, broker, nil,
			[]string{"clusterName", "brokerAddr", "brokerName", "brokerId"}, []string{"brokerId"}},
		{"QUERY_DATA_VERSION", func() decoder { return &QueryDataVersion{} }, broker, []byte("{}"), []string{"clusterName", "brokerAddr"}, nil},
		{"BROKER_HEARTBEAT", func() decoder { return &BrokerHeartbeat{} }, broker, nil, []string{"clusterName", "brokerAddr"}, nil},
		{"GET_BROKER_MEMBER_GROUP", func() decoder { return &GetBrokerMemberGroup{} }, broker, nil, []string{"brokerName"}, nil},
		{"REGISTER_TOPIC_IN_NAMESRV", func() decoder { return &RegisterTopic{} }, []string{"topic", "T"}, nil, []string{"topic"}, nil},
		{"WIPE_WRITE_PERM_OF_BROKER", func() decoder { return &WritePermOfBroker{} }, []string{"brokerName", "b"}, nil, []string{"brokerName"}, nil},
		{"DELETE_TOPIC_IN_NAMESRV", func() decoder { return &DeleteTopicInNamesrv{} }, []string{"topic", "T"}, nil, []string{"topic"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.header().Decode(command(tt.body, tt.complete...)); err != nil {
				t.Fatalf("complete header refused: %v", err)
			}
			for _, key := range tt.required {
				err := tt.header().Decode(command(tt.body, without(tt.complete, key)...))
				if _, ok := err.(*Error); !ok || err.Error() != "missing request header field "+key {
					t.Errorf("without %s: %v", key, err)
				}
			}
			for _, key := range tt.integers {
				err := tt.header().Decode(command(tt.body, append(without(tt.complete, key), key, "12x")...))
				if _, ok := err.(*Error); !ok || err.Error() != `request header field `+key+`: "12x" is not an integer` {
					t.Errorf("garbled %s: %v", key, err)
				}
			}
		})
	}
}

func TestRegisterBrokerFields(t *testing.T) {
	var h RegisterBroker
	err := h.Decode(command(nil, "clusterName", "c", "brokerAddr", "a:1", "brokerName", "b", "brokerId", "2", "haServerAddr", "a:2",
		"__ZONE_NAME", "z", "heartbeatTimeoutMillis", "10000", "enableActingMaster", "TRUE", "compressed", "true", "bodyCrc32", "77"))
	want := RegisterBroker{ClusterName: "c", BrokerAddr: "a:1", BrokerName: "b", BrokerID: 2, HAServerAddr: "a:2", ZoneName: "z",
		HeartbeatTimeoutMillis: 10000, Modern: true, EnableActingMaster: true, Compressed: true, BodyCRC32: 77}
	if err != nil || h != want {
		t.Fatalf("%+v, %v", h, err)
	}
	// A 4.x broker sends no enableActingMaster.
	h = RegisterBroker{}
	if err := h.Decode(command(nil, "clusterName", "c", "brokerAddr", "a:1", "brokerName", "b", "brokerId", "0", "compressed", "false")); err != nil || h.Modern || h.EnableActingMaster {
		t.Fatalf("%+v, %v", h, err)
	}
	// The checksum is decoded even when a field after it is missing, so
	// that it can be checked first.
	h = RegisterBroker{}
	if err := h.Decode(command(nil, "bodyCrc32", "77")); err == nil || h.BodyCRC32 != 77 {
		t.Fatalf("%+v, %v", h, err)
	}
}

func TestQueryDataVersionNeedsABody(t *testing.T) {
	var h QueryDataVersion
	err := h.Decode(command(nil, "clusterName", "c", "brokerAddr", "a:1"))
	if _, ok := err.(*Error); !ok || err.Error() != "QUERY_DATA_VERSION needs the broker's DataVersion as its body" {
		t.Fatalf("err = %v", err)
	}
}

func TestGetRouteInfo(t *testing.T) {
	tests := []struct {
		name       string
		kv         []string
		topic      string
		hasTopic   bool
		standard   bool
		zone       string
		zoneFilter bool
	}{
		{"plain", []string{"topic", "T"}, "T", true, false, "", false},
		{"no topic", nil, "", false, false, "", false},
		{"last value wins", []string{"topic", "A", "topic", "B"}, "B", true, false, "", false},
		{"standard JSON asked for", []string{"topic", "T", "acceptStandardJsonOnly", "True"}, "T", true, true, "", false},
		{"zone", []string{"topic", "T", "__ZONE_MODE", "true", "__ZONE_NAME", " az1 "}, "T", true, false, "az1", true},
		{"zone mode off", []string{"topic", "T", "__ZONE_MODE", "false", "__ZONE_NAME", "az1"}, "T", true, false, "", false},
		{"blank zone", []string{"topic", "T", "__ZONE_MODE", "true", "__ZONE_NAME", "  "}, "T", true, false, "", false},
	}
	for _, tt := range tests {
		var h GetRouteInfo
		h.Decode(command(nil, tt.kv...))
		zone, filter := h.Zone()
		if string(h.Topic) != tt.topic || h.HasTopic != tt.hasTopic || h.AcceptStandardJSONOnly != tt.standard || zone != tt.zone || filter != tt.zoneFilter {
			t.Errorf("%s: %+v, zone %q %v", tt.name, h, zone, filter)
		}
	}
	cmd := command(nil, "topic", "T", "lo", "false")
	var h GetRouteInfo
	if n := testing.AllocsPerRun(100, func() { h.Decode(cmd) }); n != 0 {
		t.Fatalf("decoding a route request allocates %v times", n)
	}
}

func TestKVFields(t *testing.T) {
	var put PutKVConfig
	put.Decode(command(nil, "namespace", "NS", "key", ""))
	if put.Namespace != (String{"NS", true}) || put.Key != (String{"", true}) || put.Value.Set {
		t.Fatalf("%+v", put)
	}
	var get GetKVConfig
	get.Decode(command(nil, "key", "k"))
	if get.Namespace.OrNull() != "null" || get.Key.OrNull() != "k" {
		t.Fatalf("%+v", get)
	}
	var del DeleteKVConfig
	del.Decode(command(nil, "namespace", "NS"))
	if !del.Namespace.Set || del.Key.Set {
		t.Fatalf("%+v", del)
	}
	var list GetKVListByNamespace
	list.Decode(command(nil))
	if list.Namespace.OrNull() != "null" {
		t.Fatalf("%+v", list)
	}
	var topics GetTopicsByCluster
	topics.Decode(command(nil, "cluster", "c"))
	if topics.Cluster != "c" {
		t.Fatalf("%+v", topics)
	}
}
