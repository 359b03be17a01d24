package remoting

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

// Headers as real clients send them: a Java 5.x client's JSON, client-go's
// JSON, and the binary form.
var benchHeaders = map[string][]byte{
	"json-java": AppendFrame(nil, JSON, &Header{Code: protocol.GetRouteInfoByTopic, Language: "JAVA", Version: 479, Opaque: 12345,
		Ext: []Pair{{"topic", "TopicTest-0001"}}}, nil)[4:],
	"json-clientgo": func() []byte {
		h := `{"code":105,"language":"GO","version":317,"opaque":12345,"flag":0,"remark":"","extFields":{"topic":"TopicTest-0001"}}`
		return append([]byte{0, 0, 0, byte(len(h))}, h...)
	}(),
	"binary": AppendFrame(nil, RocketMQ, &Header{Code: protocol.GetRouteInfoByTopic, Version: 479, Opaque: 12345,
		Ext: []Pair{{"topic", "TopicTest-0001"}}}, nil)[4:],
}

func BenchmarkDecodeHeader(b *testing.B) {
	for name, frame := range benchHeaders {
		b.Run(name, func(b *testing.B) {
			var d Decoder
			var c Command
			b.ReportAllocs()
			b.SetBytes(int64(len(frame)))
			for b.Loop() {
				if err := d.Decode(frame, &c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncodeResponse(b *testing.B) {
	body := make([]byte, 300)
	for _, tt := range []struct {
		name string
		t    SerializeType
		r    Response
	}{
		{"json-route", JSON, Response{Body: body}},
		{"binary-route", RocketMQ, Response{Body: body}},
		{"json-not-found", JSON, Response{Code: protocol.TopicNotExist, Remark: []byte("No topic route info in name server for the topic: %RETRY%group\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.")}},
		{"json-register", JSON, Response{HasExt: true, Ext: []Pair{{"haServerAddr", "10.0.0.1:10912"}, {"masterAddr", "10.0.0.1:10911"}}}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			var out []byte
			b.ReportAllocs()
			for b.Loop() {
				out = AppendResponse(out[:0], tt.t, 12345, &tt.r)
			}
		})
	}
}

// nopHandler answers every request with an empty success.
type nopHandler struct{}

func (nopHandler) Serve(*Conn, *Command, *Response) {}
func (nopHandler) Closed(*Conn)                     {}

// BenchmarkServePipelined measures the server loop itself over loopback
// TCP: batches of pipelined route-query-sized requests, answered in order.
// Per request it must not allocate.
func BenchmarkServePipelined(b *testing.B) {
	for _, depth := range []int{1, 64} {
		b.Run(fmt.Sprintf("depth-%d", depth), func(b *testing.B) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			s := NewServer(nopHandler{}, Config{})
			go func() { _ = s.Serve(l) }()
			defer func() { _ = s.Shutdown(context.Background()) }()
			nc, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			frame := benchHeaders["json-java"]
			var batch []byte
			for range depth {
				batch = binary.BigEndian.AppendUint32(batch, uint32(len(frame)))
				batch = append(batch, frame...)
			}
			answer := AppendResponse(nil, JSON, 12345, &Response{})
			in := make([]byte, len(answer)*depth)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += depth {
				if _, err := nc.Write(batch); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(nc, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
