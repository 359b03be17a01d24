package remoting

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

const (
	// DefaultFrameMaxLength is Java's com.rocketmq.remoting.frameMaxLength.
	// Netty compares totalLength+4 with it, so the largest accepted
	// totalLength is 16777212 (docs/protocol.md#framing).
	DefaultFrameMaxLength = 16777216

	// binaryFixedLength is the fixed part of a ROCKETMQ binary header
	// (docs/protocol.md#binary-header).
	binaryFixedLength = 21
)

// ErrMalformed is matched (errors.Is) by every decoding error. The server
// answers none of them: like Java it closes the connection
// (docs/protocol.md#framing).
var ErrMalformed = errors.New("malformed frame")

type frameError struct{ msg string }

func (e *frameError) Error() string        { return e.msg }
func (e *frameError) Is(target error) bool { return target == ErrMalformed }

func malformed(format string, args ...any) error {
	return &frameError{fmt.Sprintf(format, args...)}
}

// Decoder decodes frames into Commands, reusing its buffers between calls.
// It is not safe for concurrent use; the server keeps one per connection.
type Decoder struct {
	json fjson.Reader
}

// Decode parses a frame without its leading length word (serialize type,
// header length, header, body) into cmd. The slices in cmd alias frame and
// the decoder's scratch space until the next call.
func (d *Decoder) Decode(frame []byte, cmd *Command) error {
	cmd.reset()
	if len(frame) < 4 {
		return malformed("frame of %d bytes has no header length", len(frame))
	}
	t := SerializeType(frame[0])
	hlen := int(frame[1])<<16 | int(frame[2])<<8 | int(frame[3])
	if hlen > len(frame)-4 {
		return malformed("header length %d exceeds the %d bytes after it", hlen, len(frame)-4)
	}
	header := frame[4 : 4+hlen]
	if body := frame[4+hlen:]; len(body) > 0 {
		cmd.Body = body
	}
	cmd.Type = t
	switch t {
	case JSON:
		return d.decodeJSON(header, cmd)
	case RocketMQ:
		return decodeBinary(header, cmd)
	}
	return malformed("unknown serialize type %d", byte(t))
}

func (d *Decoder) decodeJSON(header []byte, cmd *Command) error {
	r := &d.json
	r.Reset(header)
	for key := range r.Members() {
		switch string(key) {
		case "code":
			cmd.Code = r.Int32()
		case "version":
			cmd.Version = r.Int32()
		case "opaque":
			cmd.Opaque = r.Int32()
		case "flag":
			cmd.Flag = r.Int32()
		case "remark":
			cmd.Remark, _ = r.Scalar()
		case "extFields":
			d.decodeExt(cmd)
		default:
			// language, serializeTypeCurrentRPC and whatever else a sender
			// adds carry nothing the server needs.
			r.Skip()
		}
	}
	if err := r.End(); err != nil {
		return malformed("JSON header: %v", err)
	}
	return nil
}

// decodeExt reads extFields the way fastjson fills a HashMap<String,String>:
// numbers and booleans become their text, null means absent, and a nested
// object or array is kept as its JSON text.
func (d *Decoder) decodeExt(cmd *Command) {
	r := &d.json
	if r.Null() {
		return
	}
	for key := range r.Members() {
		var val []byte
		isNull := false
		switch r.Peek() {
		case '{', '[':
			val = r.Raw()
		default:
			val, isNull = r.Scalar()
		}
		if !isNull {
			cmd.Ext = append(cmd.Ext, ExtField{Key: key, Value: val})
		}
	}
}

func decodeBinary(h []byte, cmd *Command) error {
	if len(h) < binaryFixedLength {
		return malformed("binary header of %d bytes is shorter than %d", len(h), binaryFixedLength)
	}
	cmd.Code = int32(int16(binary.BigEndian.Uint16(h[0:])))
	cmd.Version = int32(int16(binary.BigEndian.Uint16(h[3:])))
	cmd.Opaque = int32(binary.BigEndian.Uint32(h[5:]))
	cmd.Flag = int32(binary.BigEndian.Uint32(h[9:]))
	rlen := int32(binary.BigEndian.Uint32(h[13:]))
	if rlen < 0 || int(rlen) > len(h)-binaryFixedLength {
		return malformed("binary header remark length %d exceeds the header", rlen)
	}
	pos := 17
	if rlen > 0 {
		cmd.Remark = h[pos : pos+int(rlen)]
	}
	pos += int(rlen)
	elen := int32(binary.BigEndian.Uint32(h[pos:]))
	pos += 4
	if elen < 0 || int(elen) > len(h)-pos {
		return malformed("binary header extFields length %d exceeds the header", elen)
	}
	ext := h[pos : pos+int(elen)]
	for len(ext) > 0 {
		if len(ext) < 2 {
			return malformed("binary header ext key length truncated")
		}
		klen := int(binary.BigEndian.Uint16(ext))
		ext = ext[2:]
		if klen > len(ext) {
			return malformed("binary header ext key of %d bytes is truncated", klen)
		}
		key := ext[:klen]
		ext = ext[klen:]
		if len(ext) < 4 {
			return malformed("binary header ext value length truncated")
		}
		vlen := int32(binary.BigEndian.Uint32(ext))
		ext = ext[4:]
		if vlen < 0 || int(vlen) > len(ext) {
			return malformed("binary header ext value of %d bytes is truncated", vlen)
		}
		// Java reads zero-length strings as null, so an empty value is an
		// absent field (and an empty key a skipped entry).
		if klen > 0 && vlen > 0 {
			cmd.Ext = append(cmd.Ext, ExtField{Key: key, Value: ext[:vlen]})
		}
		ext = ext[vlen:]
	}
	return nil
}

// Header is the header of an outgoing command.
type Header struct {
	Code     int32
	Language string
	Version  int32
	Opaque   int32
	Flag     int32
	Remark   []byte
	HasExt   bool
	Ext      []Pair
}

// languageCodes maps LanguageCode names to their binary byte
// (docs/protocol.md#language-codes).
var languageCodes = map[string]byte{
	"JAVA": 0, "CPP": 1, "DOTNET": 2, "PYTHON": 3, "DELPHI": 4, "ERLANG": 5, "RUBY": 6,
	"OTHER": 7, "HTTP": 8, "GO": 9, "PHP": 10, "OMS": 11, "RUST": 12, "NODE_JS": 13,
}

// AppendFrame appends a complete frame (length word included) to dst.
func AppendFrame(dst []byte, t SerializeType, h *Header, body []byte) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, byte(t), 0, 0, 0)
	if t == RocketMQ {
		dst = appendBinaryHeader(dst, h)
	} else {
		dst = appendJSONHeader(dst, h)
	}
	hlen := len(dst) - start - 8
	dst = append(dst, body...)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	dst[start+5], dst[start+6], dst[start+7] = byte(hlen>>16), byte(hlen>>8), byte(hlen)
	return dst
}

// appendJSONHeader writes the header the way Java's fastjson does: keys
// sorted, nulls omitted, strict JSON (ali-ons parses it with JSON.parse).
func appendJSONHeader(dst []byte, h *Header) []byte {
	dst = append(dst, `{"code":`...)
	dst = fjson.AppendInt(dst, int64(h.Code))
	if h.HasExt || len(h.Ext) > 0 {
		dst = append(dst, `,"extFields":{`...)
		for i := range h.Ext {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = fjson.AppendString(dst, h.Ext[i].Key, fjson.Legacy)
			dst = append(dst, ':')
			dst = fjson.AppendString(dst, h.Ext[i].Value, fjson.Legacy)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `,"flag":`...)
	dst = fjson.AppendInt(dst, int64(h.Flag))
	dst = append(dst, `,"language":`...)
	dst = fjson.AppendString(dst, h.Language, fjson.Legacy)
	dst = append(dst, `,"opaque":`...)
	dst = fjson.AppendInt(dst, int64(h.Opaque))
	if len(h.Remark) > 0 {
		dst = append(dst, `,"remark":`...)
		dst = fjson.AppendString(dst, h.Remark, fjson.Legacy)
	}
	dst = append(dst, `,"serializeTypeCurrentRPC":"JSON","version":`...)
	dst = fjson.AppendInt(dst, int64(h.Version))
	return append(dst, '}')
}

func appendBinaryHeader(dst []byte, h *Header) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.Code))
	dst = append(dst, languageCodes[h.Language])
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.Version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.Opaque))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.Flag))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(h.Remark)))
	dst = append(dst, h.Remark...)
	lenAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	for _, p := range h.Ext {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(p.Key)))
		dst = append(dst, p.Key...)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(p.Value)))
		dst = append(dst, p.Value...)
	}
	binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
	return dst
}

// AppendResponse appends the frame answering a request with the given
// serialize type and opaque. Answers always mirror the request's serialize
// type (ali-ons cannot read a binary answer to its JSON request;
// docs/protocol.md#serialize-types).
func AppendResponse(dst []byte, t SerializeType, opaque int32, r *Response) []byte {
	h := Header{
		Code:     r.Code,
		Language: "JAVA",
		Version:  protocol.ServerVersion,
		Opaque:   opaque,
		Flag:     protocol.FlagResponse,
		Remark:   r.Remark,
		HasExt:   r.HasExt,
		Ext:      r.Ext,
	}
	return AppendFrame(dst, t, &h, r.Body)
}
