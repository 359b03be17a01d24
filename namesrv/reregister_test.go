package namesrv_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
)

// TestRepeatedRegistrationSkipsTheDecode sends a broker's registration
// over the wire again and again, as brokers do every 30 s: the repeat is
// applied without decoding or rebuilding anything, yet a repeat with a
// wrong checksum or another decoding flag is still refused, and one that
// follows an admin's change to the broker's topics is applied in full.
func TestRepeatedRegistrationSkipsTheDecode(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s, remotingclient.Options{Version: protocol.V5_3_3})
	var topics []body.TopicConfig
	for i := range 1000 {
		topics = append(topics, brokersim.Topic(fmt.Sprintf("T%04d", i), 8))
	}
	data, err := body.EncodeRegisterBody(&body.RegisterBody{DataVersion: body.DataVersion{Counter: 3, Timestamp: 1}, Topics: topics, FilterServers: []string{}}, body.Broker5, false)
	if err != nil {
		t.Fatal(err)
	}
	register := func(extra ...string) (int32, string) {
		ext := []string{"brokerName", "b", "brokerAddr", "10.0.0.1:10911", "clusterName", "c", "brokerId", "0",
			"haServerAddr", "10.0.0.1:10912", "enableActingMaster", "false"}
		if len(extra) == 0 {
			extra = []string{"compressed", "false", "bodyCrc32", crcOf(data)}
		}
		r := invoke(t, c, protocol.RegisterBroker, data, append(ext, extra...)...)
		return r.Code, r.Remark
	}
	stats := func() (unchanged, views int64) {
		st := s.Routes().Stats()
		return st.UnchangedRegistrations, st.ViewsBuilt
	}
	routed := func(topic string) bool {
		return invoke(t, c, protocol.GetRouteInfoByTopic, nil, "topic", topic).Code == protocol.Success
	}

	if code, remark := register(); code != protocol.Success {
		t.Fatalf("first registration: %d %s", code, remark)
	}
	_, views := stats()
	for i := range 3 {
		if code, remark := register(); code != protocol.Success {
			t.Fatalf("repeat %d: %d %s", i, code, remark)
		}
	}
	if u, v := stats(); u != 3 || v != views {
		t.Fatalf("after 3 repeats: %d recognised (want 3), %d views built (want 0)", u, v-views)
	}

	for _, tt := range []struct {
		name   string
		extra  []string
		remark string
	}{
		{"wrong checksum", []string{"compressed", "false", "bodyCrc32", "12345"}, "crc32 not match"},
		{"compressed flag", []string{"compressed", "true", "bodyCrc32", crcOf(data)}, "zlib"},
	} {
		code, remark := register(tt.extra...)
		if code != protocol.SystemError || !strings.Contains(remark, tt.remark) {
			t.Errorf("%s: got %d %q, want SYSTEM_ERROR containing %q", tt.name, code, remark, tt.remark)
		}
	}
	if u, _ := stats(); u != 3 {
		t.Errorf("refused registrations were counted as repeats: %d", u)
	}

	if r := invoke(t, c, protocol.DeleteTopicInNamesrv, nil, "topic", "T0042"); r.Code != protocol.Success {
		t.Fatalf("delete topic: %d %s", r.Code, r.Remark)
	}
	if routed("T0042") {
		t.Fatal("T0042 still routed after its deletion")
	}
	register()
	if !routed("T0042") {
		t.Error("the broker's next registration did not restore T0042")
	}
	if u, v := stats(); u != 3 || v != views+1 {
		t.Errorf("after the deletion: %d recognised (want 3), %d views built (want 1)", u, v-views)
	}
	register()
	if u, _ := stats(); u != 4 {
		t.Errorf("the registration after the restoring one was not recognised: %d", u)
	}
}
