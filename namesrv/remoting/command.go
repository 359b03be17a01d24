// Package remoting is RocketMQ's remoting protocol: the frame codec for both
// header encodings (JSON and the binary ROCKETMQ form) and a pipelined TCP
// server that reads requests, hands them to a Handler and writes the answers.
//
// Frames are length-prefixed (docs/protocol.md#framing):
//
//	int32 totalLength | byte serializeType | uint24 headerLength | header | body
//
// Decoding never allocates on the request path: a decoded Command's byte
// slices alias the connection's read buffer (or the decoder's scratch space
// for unescaped JSON strings) and are valid only until the handler returns.
//
// The server speaks plain TCP, TLS, or both on one port (the Java server's
// tls.server.mode), with certificates re-read from files when they change
// (CertFiles). Every connection is bounded: a frame limit, a deadline for a
// frame that has begun, a write deadline, a cap on unwritten answers, a
// handshake deadline and a maximum number of connections; each hit is
// counted through the Observer and logged with the peer's address.
package remoting

import (
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

// SerializeType is the header encoding of a frame
// (docs/protocol.md#serialize-types).
type SerializeType byte

// The two header encodings. Every client defaults to JSON.
const (
	JSON     SerializeType = 0
	RocketMQ SerializeType = 1
)

func (t SerializeType) String() string {
	switch t {
	case JSON:
		return "JSON"
	case RocketMQ:
		return "ROCKETMQ"
	}
	return "unknown"
}

// ExtField is one entry of a command's extFields map, the typed "custom
// header" that carries every request parameter as a string
// (docs/protocol.md#header-fields).
type ExtField struct {
	Key, Value []byte
}

// Command is a decoded request (or, for clients of this package, response).
type Command struct {
	Type    SerializeType
	Code    int32
	Version int32
	Opaque  int32
	Flag    int32
	// Remark is nil when the sender sent none.
	Remark []byte
	Ext    []ExtField
	Body   []byte
}

// IsResponse reports whether the response bit is set.
func (c *Command) IsResponse() bool { return c.Flag&protocol.FlagResponse != 0 }

// IsOneway reports whether the sender expects no answer.
func (c *Command) IsOneway() bool { return c.Flag&protocol.FlagOneway != 0 }

// ExtValue returns the value of an ext field. Keys are few (at most about ten
// on NameServer requests), so a linear scan beats a map and allocates nothing.
// A key given twice yields its last value, as a JSON object would.
func (c *Command) ExtValue(key string) ([]byte, bool) {
	for i := len(c.Ext) - 1; i >= 0; i-- {
		if string(c.Ext[i].Key) == key {
			return c.Ext[i].Value, true
		}
	}
	return nil, false
}

func (c *Command) reset() {
	c.Type, c.Code, c.Version, c.Opaque, c.Flag = 0, 0, 0, 0, 0
	c.Remark = nil
	c.Ext = c.Ext[:0]
	c.Body = nil
}

// Pair is one extFields entry of an outgoing command.
type Pair struct {
	Key, Value string
}

// Response is what a handler fills in to answer a request. The server owns
// it and reuses it for the connection's next request, so handlers append into
// Remark and Ext rather than keeping references.
type Response struct {
	Code int32
	// Remark is the free-text explanation; empty means none.
	Remark []byte
	// HasExt makes the JSON header carry "extFields":{} even when Ext is
	// empty, which Java does for answers that have a response header class.
	HasExt bool
	Ext    []Pair
	// Body is written as is; it may be a shared, cached slice.
	Body []byte
	// Close, when set, sends no answer: the server writes the answers
	// already due on the connection, then closes it for this reason. A
	// client sees its request fail at the transport level, which is what
	// makes RocketMQ clients try another server.
	Close CloseReason
}

// Reset clears the response for reuse, keeping its buffers.
func (r *Response) Reset() {
	r.Code = protocol.Success
	r.Remark = r.Remark[:0]
	r.HasExt = false
	r.Ext = r.Ext[:0]
	r.Body = nil
	r.Close = ""
}

// SetExt adds an ext field to the answer.
func (r *Response) SetExt(key, value string) {
	r.HasExt = true
	r.Ext = append(r.Ext, Pair{key, value})
}

// Fail turns the answer into an error with a remark.
func (r *Response) Fail(code int32, remark string) {
	r.Code = code
	r.Remark = append(r.Remark[:0], remark...)
	r.Body = nil
}
