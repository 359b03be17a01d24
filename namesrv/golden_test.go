package namesrv_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
)

// The captures of testdata/java-4.9.8-exchanges.json: request/response
// pairs exchanged with a real Java 4.9.8 NameServer.
type capture struct {
	Exchanges []struct {
		Scenario string
		Label    string
		Outcome  string
		Request  capturedFrame
		Response *capturedFrame
	}
}

type capturedFrame struct {
	Ser    byte
	Header json.RawMessage
	Body   json.RawMessage
}

// bytesOf decodes a captured header or body: text, or {"b64": ...}.
func bytesOf(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	if len(raw) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []byte(s)
	}
	var b struct{ B64 string }
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatalf("captured value %s: %v", raw, err)
	}
	out, err := base64.StdEncoding.DecodeString(b.B64)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func frameOf(t *testing.T, f *capturedFrame) []byte {
	t.Helper()
	h := bytesOf(t, f.Header)
	b := bytesOf(t, f.Body)
	out := binary.BigEndian.AppendUint32(nil, uint32(4+len(h)+len(b)))
	out = append(out, f.Ser, byte(len(h)>>16), byte(len(h)>>8), byte(len(h)))
	out = append(out, h...)
	return append(out, b...)
}

// The documented differences between this server's answers and Java
// 4.9.8's (docs/compatibility.md): the version it stamps, and the 5.x FAQ
// link in TOPIC_NOT_EXIST remarks.
const (
	java498FAQ = "See http://rocketmq.apache.org/docs/faq/ for further details."
	ourFAQ     = "See https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
)

func normalizeJava498Header(ser byte, h []byte) []byte {
	if ser == byte(remoting.JSON) {
		h = bytes.Replace(h, []byte(`"version":409`), []byte(fmt.Sprintf(`"version":%d`, protocol.ServerVersion)), 1)
		return bytes.Replace(h, []byte(java498FAQ), []byte(ourFAQ), 1)
	}
	h = slices.Clone(h)
	binary.BigEndian.PutUint16(h[3:], uint16(protocol.ServerVersion))
	rlen := int(binary.BigEndian.Uint32(h[13:]))
	remark := h[17 : 17+rlen]
	if bytes.Contains(remark, []byte(java498FAQ)) {
		remark = bytes.Replace(remark, []byte(java498FAQ), []byte(ourFAQ), 1)
		out := append(slices.Clone(h[:13]), binary.BigEndian.AppendUint32(nil, uint32(len(remark)))...)
		out = append(out, remark...)
		return append(out, h[17+rlen:]...)
	}
	return h
}

type rawFrame struct {
	ser    byte
	header []byte
	body   []byte
}

func readRaw(br *bufio.Reader) (*rawFrame, error) {
	var n [4]byte
	if _, err := io.ReadFull(br, n[:]); err != nil {
		return nil, err
	}
	f := make([]byte, binary.BigEndian.Uint32(n[:]))
	if _, err := io.ReadFull(br, f); err != nil {
		return nil, err
	}
	hl := int(f[1])<<16 | int(f[2])<<8 | int(f[3])
	return &rawFrame{ser: f[0], header: f[4 : 4+hl], body: f[4+hl:]}, nil
}

// TestGoldenExchangesOfJava498 replays every captured request against this
// server, in order, on one connection, and compares each answer with the
// Java NameServer's byte for byte (after the documented normalisations).
// Cluster info and topic lists were captured from a NameServer that also
// served scenarios not in the file, so for them every broker and topic this
// server reports must appear in Java's answer with the same content.
func TestGoldenExchangesOfJava498(t *testing.T) {
	raw, err := os.ReadFile("testdata/java-4.9.8-exchanges.json")
	if err != nil {
		t.Fatal(err)
	}
	var c capture
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, nil)
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	br := bufio.NewReader(nc)

	seeded := false
	for i, ex := range c.Exchanges {
		name := fmt.Sprintf("%d %s: %s", i, ex.Scenario, ex.Label)
		if ex.Scenario == "wp" && !seeded {
			// By scenario wp the captured NameServer had an empty
			// ORDER_TOPIC_CONFIG namespace, left by an order-config
			// scenario that is not in the file; recreate that state.
			seeded = true
			empty := ""
			if err := s.KV().Put(protocol.NamespaceOrderTopicConfig, "k", &empty); err != nil {
				t.Fatal(err)
			}
			if err := s.KV().Delete(protocol.NamespaceOrderTopicConfig, "k"); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := nc.Write(frameOf(t, &ex.Request)); err != nil {
			t.Fatal(err)
		}
		if ex.Outcome != "response" {
			t.Fatalf("%s: outcome %q has no replay rule", name, ex.Outcome)
		}
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := readRaw(br)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		wantHeader := normalizeJava498Header(ex.Response.Ser, bytesOf(t, ex.Response.Header))
		if got.ser != ex.Response.Ser || !bytes.Equal(got.header, wantHeader) {
			t.Errorf("%s: header\n got %d %q\nwant %d %q", name, got.ser, got.header, ex.Response.Ser, wantHeader)
		}
		wantBody := bytesOf(t, ex.Response.Body)
		switch ex.Label {
		case "GET_BROKER_CLUSTER_INFO", "cluster info (ROCKETMQ header)", "GET_ALL_TOPIC_LIST_FROM_NAMESERVER":
			containedIn(t, name, got.body, wantBody)
		default:
			if !bytes.Equal(got.body, wantBody) {
				t.Errorf("%s: body\n got %s\nwant %s", name, got.body, wantBody)
			}
		}
	}
}

// containedIn checks that every member of got's maps and lists is in want.
func containedIn(t *testing.T, name string, got, want []byte) {
	t.Helper()
	g, err := fjson.NewReader(got).Value()
	if err != nil {
		t.Fatalf("%s: our body %s: %v", name, got, err)
	}
	w, err := fjson.NewReader(want).Value()
	if err != nil {
		t.Fatalf("%s: Java body: %v", name, err)
	}
	gs, ws := flatten("", &g), flatten("", &w)
	for k := range gs {
		if !ws[k] {
			t.Errorf("%s: we answer %s, Java does not", name, k)
		}
	}
	if len(gs) == 0 {
		t.Errorf("%s: empty answer", name)
	}
}

// flatten turns a value into the set of its leaf paths, so that order of
// map members and list items does not matter.
func flatten(prefix string, v *fjson.Value) map[string]bool {
	out := map[string]bool{}
	switch v.Kind {
	case fjson.Object:
		for i := range v.Members {
			for k := range flatten(prefix+"/"+v.Members[i].Key, &v.Members[i].Value) {
				out[k] = true
			}
		}
	case fjson.Array:
		for i := range v.Items {
			for k := range flatten(prefix+"[]", &v.Items[i]) {
				out[k] = true
			}
		}
	default:
		out[prefix+"="+v.Text] = true
	}
	return out
}

func TestFlattenIgnoresOrderOnly(t *testing.T) {
	a, _ := fjson.NewReader([]byte(`{"x":[1,2],"y":{"b":1,"a":2}}`)).Value()
	b, _ := fjson.NewReader([]byte(`{"y":{"a":2,"b":1},"x":[2,1]}`)).Value()
	c, _ := fjson.NewReader([]byte(`{"y":{"a":2,"b":3},"x":[2,1]}`)).Value()
	keys := func(m map[string]bool) string {
		var k []string
		for s := range m {
			k = append(k, s)
		}
		sort.Strings(k)
		return strings.Join(k, " ")
	}
	if keys(flatten("", &a)) != keys(flatten("", &b)) || keys(flatten("", &a)) == keys(flatten("", &c)) {
		t.Fatal("flatten must ignore order and nothing else")
	}
}
