package remoting

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

// frameBody strips the 4-byte length word, checking it.
func frameBody(t testing.TB, frame []byte) []byte {
	t.Helper()
	if n := int(binary.BigEndian.Uint32(frame)); n != len(frame)-4 {
		t.Fatalf("length word %d, frame has %d bytes after it", n, len(frame)-4)
	}
	return frame[4:]
}

func readGolden(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readHexGolden reads a commented hex dump from testdata.
func readHexGolden(t testing.TB, name string) []byte {
	t.Helper()
	var clean strings.Builder
	for _, line := range strings.Split(string(readGolden(t, name)), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		clean.WriteString(strings.ReplaceAll(line, " ", ""))
	}
	b, err := hex.DecodeString(clean.String())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

func ext(c *Command) map[string]string {
	m := map[string]string{}
	for _, e := range c.Ext {
		m[string(e.Key)] = string(e.Value)
	}
	return m
}

func TestDecodeBinaryGolden(t *testing.T) {
	// The example of docs/protocol.md#binary-header.
	frame := readHexGolden(t, "route-request-binary.hex")
	var d Decoder
	var c Command
	if err := d.Decode(frameBody(t, frame), &c); err != nil {
		t.Fatal(err)
	}
	if c.Type != RocketMQ || c.Code != 105 || c.Version != 479 || c.Opaque != 7 || c.Flag != 0 || c.Remark != nil || c.Body != nil {
		t.Fatalf("decoded %+v", c)
	}
	if got := ext(&c); len(got) != 1 || got["topic"] != "TopicTest" {
		t.Fatalf("ext = %v", got)
	}
}

func TestDecodeJSONHeadersOfRealSenders(t *testing.T) {
	tests := []struct {
		name    string
		header  string
		code    int32
		version int32
		opaque  int32
		flag    int32
		remark  string
		ext     map[string]string
	}{
		{"java 5.3.3", `{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":479}`,
			105, 479, 7, 0, "", map[string]string{"topic": "TopicTest"}},
		{"client-go", `{"code":105,"language":"GO","version":317,"opaque":3,"flag":0,"remark":"","extFields":{"topic":"TopicTest"}}`,
			105, 317, 3, 0, "", map[string]string{"topic": "TopicTest"}},
		{"ali-ons numbers and booleans", `{"code":105,"language":"JAVA","opaque":1,"flag":0,"version":121,"extFields":{"topic":"T","queueId":1,"sync":true,"big":12345678901234}}`,
			105, 121, 1, 0, "", map[string]string{"topic": "T", "queueId": "1", "sync": "true", "big": "12345678901234"}},
		{"nulls", `{"code":101,"remark":null,"extFields":{"namespace":"ns","key":null},"opaque":-5,"flag":2}`,
			101, 0, -5, 2, "", map[string]string{"namespace": "ns"}},
		{"null extFields, numeric language", `{"code":106,"language":9,"extFields":null,"opaque":2147483647}`,
			106, 0, 2147483647, 0, "", map[string]string{}},
		{"whitespace, unknown keys, duplicate key wins last", "{ \"x\" : {\"y\":[1,2]} ,\n \"code\" : 1 , \"code\":100, \"remark\":\"r\\u00e9\", \"extFields\":{\"k\":\"a\",\"k\":\"b\"}}",
			100, 0, 0, 0, "ré", map[string]string{"k": "b"}},
		{"numeric strings", `{"code":"105","version":"401","opaque":"9"}`,
			105, 401, 9, 0, "", map[string]string{}},
		{"nested ext value kept as JSON text", `{"code":1,"extFields":{"o":{"a":1},"l":[1]}}`,
			1, 0, 0, 0, "", map[string]string{"o": `{"a":1}`, "l": `[1]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame := append([]byte{0, 0, 0, 0, 0}, 0, 0, byte(len(tt.header)))
			frame = append(frame, tt.header...)
			frame = append(frame, "BODY"...)
			binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
			var d Decoder
			var c Command
			if err := d.Decode(frameBody(t, frame), &c); err != nil {
				t.Fatal(err)
			}
			if c.Code != tt.code || c.Version != tt.version || c.Opaque != tt.opaque || c.Flag != tt.flag || string(c.Remark) != tt.remark {
				t.Errorf("got code=%d version=%d opaque=%d flag=%d remark=%q", c.Code, c.Version, c.Opaque, c.Flag, c.Remark)
			}
			got := ext(&c)
			if len(got) != len(tt.ext) {
				t.Errorf("ext = %v, want %v", got, tt.ext)
			}
			for k, v := range tt.ext {
				if got[k] != v {
					t.Errorf("ext[%s] = %q, want %q", k, got[k], v)
				}
			}
			if string(c.Body) != "BODY" {
				t.Errorf("body = %q", c.Body)
			}
		})
	}
}

func TestDecodeRejectsMalformedFrames(t *testing.T) {
	jsonFrame := func(h string) []byte {
		return append([]byte{0, 0, 0, byte(len(h))}, h...)
	}
	binHeader := func(remarkLen, extLen int32, ext []byte) []byte {
		h := make([]byte, 13)
		binary.BigEndian.PutUint16(h, 105)
		h = binary.BigEndian.AppendUint32(h, uint32(remarkLen))
		h = binary.BigEndian.AppendUint32(h, uint32(extLen))
		h = append(h, ext...)
		return append([]byte{1, 0, 0, byte(len(h))}, h...)
	}
	tests := map[string][]byte{
		"too short":                   {0, 0},
		"header length beyond frame":  {0, 0, 0, 10, '{', '}'},
		"unknown serialize type":      {2, 0, 0, 2, '{', '}'},
		"garbage JSON":                jsonFrame(`{"code":`),
		"array header":                jsonFrame(`[1,2]`),
		"non-numeric code":            jsonFrame(`{"code":"abc"}`),
		"code beyond int32":           jsonFrame(`{"code":2147483648}`),
		"trailing garbage":            jsonFrame(`{"code":1}x`),
		"extFields not an object":     jsonFrame(`{"code":1,"extFields":"x"}`),
		"short binary header":         {1, 0, 0, 3, 0, 105, 0},
		"remark length past header":   binHeader(100, 0, nil),
		"negative remark length":      binHeader(-1, 0, nil),
		"ext length past header":      binHeader(0, 50, nil),
		"ext key truncated":           binHeader(0, 1, []byte{0}),
		"ext key longer than block":   binHeader(0, 3, []byte{0, 9, 'a'}),
		"ext value length truncated":  binHeader(0, 4, []byte{0, 1, 'k', 0}),
		"ext value longer than block": binHeader(0, 8, []byte{0, 1, 'k', 0, 0, 0, 9, 'v'}),
		"negative ext value length":   binHeader(0, 8, []byte{0, 1, 'k', 0xff, 0xff, 0xff, 0xff, 'v'}),
	}
	for name, frame := range tests {
		t.Run(name, func(t *testing.T) {
			var d Decoder
			var c Command
			err := d.Decode(frame, &c)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
}

func TestBinaryEmptyValuesAreAbsent(t *testing.T) {
	h := &Header{Code: 101, Language: "JAVA", Ext: []Pair{{"namespace", "ns"}, {"key", ""}}}
	frame := AppendFrame(nil, RocketMQ, h, nil)
	var d Decoder
	var c Command
	if err := d.Decode(frameBody(t, frame), &c); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.ExtValue("key"); ok {
		t.Error("an empty binary value must read as absent, as Java reads it as null")
	}
	if v, _ := c.ExtValue("namespace"); string(v) != "ns" {
		t.Errorf("namespace = %q", v)
	}
}

func TestEncodeResponsesLikeJava(t *testing.T) {
	tests := []struct {
		name string
		resp Response
		want string
	}{
		{"route answer", Response{Code: 0}, `{"code":0,"flag":1,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":479}`},
		{"registration answer", Response{HasExt: true}, `{"code":0,"extFields":{},"flag":1,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":479}`},
		{"slave answer", Response{Ext: []Pair{{"haServerAddr", "127.0.0.1:20051"}, {"masterAddr", "127.0.0.1:20050"}}},
			`{"code":0,"extFields":{"haServerAddr":"127.0.0.1:20051","masterAddr":"127.0.0.1:20050"},"flag":1,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":479}`},
		{"error with newline and slash", Response{Code: 17, Remark: []byte("No topic\nSee http://x/ \"q\"")},
			`{"code":17,"flag":1,"language":"JAVA","opaque":7,"remark":"No topic\nSee http://x/ \"q\"","serializeTypeCurrentRPC":"JSON","version":479}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame := AppendResponse(nil, JSON, 7, &tt.resp)
			fb := frameBody(t, frame)
			hlen := int(fb[1])<<16 | int(fb[2])<<8 | int(fb[3])
			if fb[0] != 0 || string(fb[4:4+hlen]) != tt.want {
				t.Errorf("header = %s\nwant     %s", fb[4:4+hlen], tt.want)
			}
		})
	}
}

func TestEncodeBinaryResponseGolden(t *testing.T) {
	// A Java 4.9.8 NameServer's binary answer to a slave registration
	// (namesrv/testdata/java-4.9.8-exchanges.json, scenario "rbh"), with the
	// version field set to ours.
	want := readHexGolden(t, "register-slave-response-binary.hex")
	r := Response{Ext: []Pair{{"haServerAddr", "127.0.0.1:20006"}, {"masterAddr", "127.0.0.1:20005"}}}
	got := AppendResponse(nil, RocketMQ, 30, &r)
	if !bytes.Equal(got, want) {
		t.Fatalf("got  %x\nwant %x", got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, st := range []SerializeType{JSON, RocketMQ} {
		h := &Header{Code: 103, Language: "GO", Version: 317, Opaque: -42, Flag: protocol.FlagOneway,
			Remark: []byte("rémark/\"x\""), Ext: []Pair{{"brokerName", "broker-a"}, {"k", "v\u00e9\n"}}}
		frame := AppendFrame(nil, st, h, []byte("payload"))
		var d Decoder
		var c Command
		if err := d.Decode(frameBody(t, frame), &c); err != nil {
			t.Fatalf("%v: %v", st, err)
		}
		if c.Type != st || c.Code != 103 || c.Version != 317 || c.Opaque != -42 || !c.IsOneway() || c.IsResponse() ||
			string(c.Remark) != string(h.Remark) || string(c.Body) != "payload" {
			t.Errorf("%v: decoded %+v", st, c)
		}
		if got := ext(&c); got["brokerName"] != "broker-a" || got["k"] != "v\u00e9\n" {
			t.Errorf("%v: ext = %v", st, got)
		}
	}
}

// FuzzDecode feeds arbitrary frames to the decoder: it must never panic,
// and whatever it accepts must survive re-encoding.
func FuzzDecode(f *testing.F) {
	f.Add(AppendFrame(nil, JSON, &Header{Code: 105, Language: "JAVA", Version: 479, Opaque: 7, Ext: []Pair{{"topic", "T"}}}, nil)[4:])
	f.Add(AppendFrame(nil, RocketMQ, &Header{Code: 103, Remark: []byte("r"), Ext: []Pair{{"a", "b"}}}, []byte("{}"))[4:])
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
	f.Add([]byte{1, 0, 0, 21, 0, 105, 0, 1, 0xdf, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, frame []byte) {
		var d Decoder
		var c Command
		if err := d.Decode(frame, &c); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		h := &Header{Code: c.Code, Version: c.Version, Opaque: c.Opaque, Flag: c.Flag, Remark: c.Remark}
		if c.Type == RocketMQ && (c.Code != int32(int16(c.Code)) || c.Version != int32(int16(c.Version))) {
			return
		}
		for _, e := range c.Ext {
			h.Ext = append(h.Ext, Pair{string(e.Key), string(e.Value)})
		}
		again := AppendFrame(nil, c.Type, h, c.Body)
		var c2 Command
		if err := d.Decode(again[4:], &c2); err != nil {
			t.Fatalf("re-decoding %x: %v", again, err)
		}
		if c2.Code != c.Code || c2.Opaque != c.Opaque || c2.Flag != c.Flag || c2.Version != c.Version || !bytes.Equal(c2.Body, c.Body) {
			t.Fatalf("round trip changed %+v into %+v", c, c2)
		}
	})
}

// FuzzBinaryHeader fuzzes the ROCKETMQ binary header decoder alone.
func FuzzBinaryHeader(f *testing.F) {
	f.Add(AppendFrame(nil, RocketMQ, &Header{Code: 103, Remark: []byte("r"), Ext: []Pair{{"brokerName", "b"}, {"k", ""}}}, nil)[8:])
	f.Add(readHexGolden(f, "route-request-binary.hex")[8:])
	f.Fuzz(func(t *testing.T, header []byte) {
		var c Command
		if err := decodeBinary(header, &c); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v is not ErrMalformed", err)
		}
		for _, e := range c.Ext {
			if len(e.Key) == 0 || len(e.Value) == 0 {
				t.Fatalf("empty key or value kept: %q", e)
			}
		}
	})
}

// FuzzJSONHeader fuzzes the lenient JSON header reader alone.
func FuzzJSONHeader(f *testing.F) {
	for _, h := range []string{
		`{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":479}`,
		`{"code":105,"language":"GO","version":317,"opaque":3,"flag":0,"remark":"","extFields":{"topic":"TopicTest"}}`,
		`{"code":105,"language":"JAVA","opaque":1,"flag":0,"version":121,"extFields":{"topic":"T","queueId":1,"b":true,"n":null}}`,
	} {
		f.Add([]byte(h))
	}
	f.Fuzz(func(t *testing.T, header []byte) {
		var d Decoder
		var c Command
		if err := d.decodeJSON(header, &c); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v is not ErrMalformed", err)
		}
	})
}
