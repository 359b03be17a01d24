package namesrv_test

import (
	"bytes"
	"compress/zlib"
	"hash/crc32"
	"strconv"
	"strings"
	"testing"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
)

func crcOf(b []byte) string {
	return strconv.FormatUint(uint64(crc32.ChecksumIEEE(b)&0x7FFFFFFF), 10)
}

func TestCRCExampleOfTheProtocolReference(t *testing.T) {
	// docs/protocol.md#crc
	if got := crcOf([]byte(`{"filterServerList":[]}`)); got != "2053024402" {
		t.Fatalf("crc %s", got)
	}
}

// TestBadRequestsGetAnErrorAndChangeNothing sends every kind of malformed
// request a NameServer can receive over a healthy connection: each gets a
// SYSTEM_ERROR with a remark that says what is wrong, the connection stays
// usable, and neither the route table nor other connections notice.
func TestBadRequestsGetAnErrorAndChangeNothing(t *testing.T) {
	s := startServer(t, func(c *config.Config) { c.MaxInflatedBodySize = 1 << 20 })
	ns := s.Addr().String()
	b := startBroker(t, brokersim.Config{Cluster: "c", Name: "good", Topics: []body.TopicConfig{brokersim.Topic("T", 4), brokersim.Topic("U", 4)}})
	mustRegister(t, b, ns)
	bystander := dial(t, s, remotingclient.Options{})
	route := string(invoke(t, bystander, protocol.GetRouteInfoByTopic, nil, "topic", "T").Body)
	clusterInfo := string(invoke(t, bystander, protocol.GetBrokerClusterInfo, nil).Body)

	goodBody, _ := body.EncodeRegisterBody(&body.RegisterBody{DataVersion: body.DataVersion{Counter: 5}, Topics: []body.TopicConfig{brokersim.Topic("X", 1), brokersim.Topic("Y", 1)}, FilterServers: []string{}}, body.Broker4, false)
	var bomb bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&bomb, zlib.BestCompression)
	_, _ = zw.Write(make([]byte, 2<<20))
	zw.Close()
	reg := func(data []byte, extra ...string) (int32, []byte, []string) {
		ext := []string{"brokerName", "evil", "brokerAddr", "6.6.6.6:1", "clusterName", "c", "brokerId", "0", "haServerAddr", "6.6.6.6:2", "compressed", "false", "bodyCrc32", crcOf(data)}
		for i := 0; i+1 < len(extra); i += 2 {
			for j := 0; j < len(ext); j += 2 {
				if ext[j] == extra[i] {
					ext = append(ext[:j], ext[j+2:]...)
					break
				}
			}
			if extra[i+1] != "<absent>" {
				ext = append(ext, extra[i], extra[i+1])
			}
		}
		return protocol.RegisterBroker, data, ext
	}
	tests := []struct {
		name   string
		code   int32
		body   []byte
		ext    []string
		remark string
	}{
		{"crc mismatch", protocol.RegisterBroker, goodBody, []string{"brokerName", "evil", "brokerAddr", "6.6.6.6:1", "clusterName", "c", "brokerId", "0", "bodyCrc32", "12345"}, "crc32 not match"},
		{"non-numeric crc", protocol.RegisterBroker, goodBody, []string{"brokerName", "evil", "brokerAddr", "6.6.6.6:1", "clusterName", "c", "brokerId", "0", "bodyCrc32", "abc"}, "bodyCrc32"},
		// The checksum comes first, as in Java, whatever else is wrong.
		{"crc mismatch and a missing field", protocol.RegisterBroker, goodBody, []string{"brokerAddr", "6.6.6.6:1", "clusterName", "c", "brokerId", "x", "bodyCrc32", "12345"}, "crc32 not match"},
	}
	add := func(name, remark string, code int32, data []byte, ext []string) {
		tests = append(tests, struct {
			name   string
			code   int32
			body   []byte
			ext    []string
			remark string
		}{name, code, data, ext, remark})
	}
	c, d, e := reg(goodBody, "brokerId", "zero")
	add("non-numeric broker id", "brokerId", c, d, e)
	c, d, e = reg(goodBody, "brokerId", "<absent>")
	add("missing broker id", "missing request header field brokerId", c, d, e)
	c, d, e = reg(goodBody, "brokerName", "<absent>")
	add("missing broker name", "missing request header field brokerName", c, d, e)
	c, d, e = reg(goodBody, "heartbeatTimeoutMillis", "1e9")
	add("non-numeric timeout", "heartbeatTimeoutMillis", c, d, e)
	c, d, e = reg([]byte("this is not JSON"))
	add("body not JSON", "decode register body", c, d, e)
	c, d, e = reg([]byte(`["an","array"]`))
	add("body a JSON array", "decode register body", c, d, e)
	c, d, e = reg(append([]byte{0x78, 0xda}, "corrupt"...))
	add("corrupt zlib", "zlib", c, d, e)
	c, d, e = reg(goodBody, "compressed", "true")
	add("JSON body flagged compressed", "zlib", c, d, e)
	c, d, e = reg(bomb.Bytes(), "compressed", "true")
	add("zlib bomb", "inflated body too large", c, d, e)
	add("data version body not JSON", "decode data version", protocol.QueryDataVersion, []byte("{{"), []string{"clusterName", "c", "brokerAddr", b.Addr(), "brokerName", "good", "brokerId", "0"})
	add("query data version without body", "DataVersion", protocol.QueryDataVersion, nil, []string{"clusterName", "c", "brokerAddr", b.Addr(), "brokerName", "good", "brokerId", "0"})
	add("unregister without address", "brokerAddr", protocol.UnregisterBroker, nil, []string{"clusterName", "c", "brokerName", "good", "brokerId", "0"})
	// Java refuses it too (brokerId is @CFNotNull); this table would
	// otherwise remove the live broker by its address.
	add("unregister without broker id", "missing request header field brokerId", protocol.UnregisterBroker, nil,
		[]string{"clusterName", "c", "brokerAddr", b.Addr(), "brokerName", "good"})
	add("unregister with a non-numeric broker id", "request header field brokerId", protocol.UnregisterBroker, nil,
		[]string{"clusterName", "c", "brokerAddr", b.Addr(), "brokerName", "good", "brokerId", "master"})
	add("register topic with bad body", "decode topic route data", protocol.RegisterTopicInNamesrv, []byte(`{"queueDatas":[{"perm":"rw"}]}`), []string{"topic", "T"})
	add("wipe without broker name", "brokerName", protocol.WipeWritePermOfBroker, nil, nil)
	add("delete topic without topic", "topic", protocol.DeleteTopicInNamesrv, nil, nil)

	evil := dial(t, s, remotingclient.Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := invoke(t, evil, tt.code, tt.body, tt.ext...)
			if r.Code != protocol.SystemError || !strings.Contains(r.Remark, tt.remark) {
				t.Fatalf("answer %d %q, want SYSTEM_ERROR mentioning %q", r.Code, r.Remark, tt.remark)
			}
			if got := string(invoke(t, bystander, protocol.GetRouteInfoByTopic, nil, "topic", "T").Body); got != route {
				t.Fatalf("route changed: %s", got)
			}
			if got := string(invoke(t, bystander, protocol.GetBrokerClusterInfo, nil).Body); got != clusterInfo {
				t.Fatalf("cluster info changed: %s", got)
			}
		})
	}
	if r := invoke(t, evil, protocol.GetRouteInfoByTopic, nil, "topic", "T"); r.Code != protocol.Success {
		t.Fatalf("the connection of the bad requests stopped working: %+v", r)
	}
}
