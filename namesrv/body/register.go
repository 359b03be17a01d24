package body

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

// TopicConfig is the part of a broker's topic config the NameServer keeps.
// Name aliases the decoded body; copy it to keep it.
type TopicConfig struct {
	Name           []byte
	ReadQueueNums  int32
	WriteQueueNums int32
	Perm           int32
	TopicSysFlag   int32
}

// Java's TopicConfig defaults, used for fields a JSON body leaves out.
const (
	defaultQueueNums = 16
	defaultPerm      = protocol.PermRead | protocol.PermWrite
)

// MappingInfo is one static-topic mapping (TopicQueueMappingInfo) a broker
// registers; the NameServer only passes it through to route answers.
type MappingInfo struct {
	Topic      string
	BrokerName string
	Info       fjson.Value
}

// RegisterBody is a decoded REGISTER_BROKER body.
type RegisterBody struct {
	DataVersion DataVersion
	Topics      []TopicConfig
	// FilterServers is nil only when the body said "filterServerList":null,
	// which leaves the broker's stored filter servers alone.
	FilterServers []string
	Mappings      []MappingInfo
	// inflated is what a zlib body inflated to, which Topics alias.
	inflated []byte
}

// topicLists recycles the topic lists of decoded bodies (Release): a
// 10,000-topic broker's is half a megabyte, which a registration every few
// milliseconds would otherwise allocate, zero and leave to the collector.
// A recycled list's entries past its new length may still point into the
// body they came from until overwritten; the pool drops its lists at the
// next collections, as the server's pool of frame buffers drops those.
var topicLists sync.Pool

// newTopicList returns an empty list with room for n topics.
func newTopicList(n int) []TopicConfig {
	if p, ok := topicLists.Get().(*[]TopicConfig); ok && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]TopicConfig, 0, n)
}

// Release hands the body's topic list (and a zlib body's inflated bytes)
// over to later decodes; b.Topics must not be used after it. Call it once
// the body has been applied; Mappings and FilterServers stay valid.
func (b *RegisterBody) Release() {
	if cap(b.Topics) > 0 {
		l := b.Topics[:0]
		topicLists.Put(&l)
	}
	if cap(b.inflated) > 0 {
		raw := b.inflated[:0]
		inflatedBuffers.Put(&raw)
	}
	b.Topics, b.inflated = nil, nil
}

// RegisterOptions says how to read a body.
type RegisterOptions struct {
	// Compressed is the request's compressed header field.
	Compressed bool
	// Version is the request's version ordinal.
	Version int32
	// MaxInflated caps the inflated size of a compressed body.
	MaxInflated int
}

// DefaultMaxInflated caps an inflated registration body. A broker with
// 100,000 topics inflates to about 6 MiB; the cap keeps a small hostile body
// (a zlib bomb) from costing more than this much memory.
const DefaultMaxInflated = 32 << 20

// ErrTooLarge is returned when a compressed body inflates past the cap.
var ErrTooLarge = errors.New("inflated body too large")

// DecodeRegisterBody decodes a REGISTER_BROKER body, JSON
// (docs/protocol.md#register-body-json) or zlib
// (docs/protocol.md#register-body-compressed). A zlib body is recognised by
// the header flag or by its first byte, because 5.x brokers with
// compressedRegister=true send compressed=false.
func DecodeRegisterBody(data []byte, opts RegisterOptions) (*RegisterBody, error) {
	b := &RegisterBody{FilterServers: []string{}}
	if len(data) == 0 {
		return b, nil
	}
	if opts.Version < protocol.V3_0_11 {
		r := fjson.NewReader(data)
		readWrapper(r, b)
		if err := r.End(); err != nil {
			return nil, fmt.Errorf("decode topic config wrapper: %w", err)
		}
		return b, nil
	}
	if opts.Compressed || data[0] == 0x78 {
		if err := decodeCompressed(data, opts, b); err != nil {
			return nil, fmt.Errorf("decode compressed register body: %w", err)
		}
		return b, nil
	}
	r := fjson.NewReader(data)
	for key := range r.Members() {
		switch string(key) {
		case "filterServerList":
			b.FilterServers = readStringList(r)
		case "topicConfigSerializeWrapper":
			if !r.Null() {
				readWrapper(r, b)
			}
		default:
			r.Skip()
		}
	}
	if err := r.End(); err != nil {
		return nil, fmt.Errorf("decode register body: %w", err)
	}
	return b, nil
}

// readWrapper reads a TopicConfigSerializeWrapper (or its 5.x subclass with
// static-topic mappings).
func readWrapper(r *fjson.Reader, b *RegisterBody) {
	sawVersion := false
	for key := range r.Members() {
		switch string(key) {
		case "dataVersion":
			if !r.Null() {
				sawVersion = true
				b.DataVersion = readDataVersion(r)
			}
		case "topicConfigTable":
			readTopicConfigTable(r, b)
		case "topicQueueMappingInfoMap":
			readMappingMap(r, b)
		default:
			r.Skip()
		}
	}
	if !sawVersion {
		// Java's wrapper defaults to a fresh DataVersion stamped "now",
		// so such a body always counts as changed.
		b.DataVersion = DataVersion{Timestamp: time.Now().UnixMilli()}
	}
}

func readTopicConfigTable(r *fjson.Reader, b *RegisterBody) {
	if r.Null() {
		return
	}
	// A topic config takes at least 150 bytes of JSON; sizing the slice
	// from the body avoids regrowing it for brokers with many topics.
	b.Topics = newTopicList(r.Size()/150 + 1)
	for key := range r.Members() {
		if !r.Null() {
			b.Topics = append(b.Topics, readTopicConfig(r, key))
		}
		// The members after it, as long as they are laid out as Java
		// writes them, without the reader.
		n, topics := scanTopicEntries(r.Rest(), b.Topics)
		r.Advance(n)
		b.Topics = topics
	}
}

// readTopicConfig reads the value of topicConfigTable's member key.
func readTopicConfig(r *fjson.Reader, key []byte) TopicConfig {
	var tc TopicConfig
	plainKey := key
	if bytes.IndexByte(key, '\\') >= 0 {
		plainKey = nil
	}
	if n := scanTopicValue(r.Rest(), plainKey, &tc); n > 0 {
		r.Advance(n)
		return tc
	}
	tc = TopicConfig{ReadQueueNums: defaultQueueNums, WriteQueueNums: defaultQueueNums, Perm: defaultPerm}
	readQueueFields(r, "topicName", &tc)
	if tc.Name == nil {
		// Java would fail on a config without a name; the table key is
		// the name by construction, so use it.
		tc.Name = key
	}
	return tc
}

// readQueueFields reads a broker's TopicConfig or a route's QueueData into
// tc, which holds the defaults. The two share their queue fields and differ
// in the member that names them: nameKey, read into tc.Name (null: nil).
func readQueueFields(r *fjson.Reader, nameKey string, tc *TopicConfig) {
	for field := range r.Members() {
		switch string(field) {
		case "readQueueNums":
			tc.ReadQueueNums = r.Int32()
		case "writeQueueNums":
			tc.WriteQueueNums = r.Int32()
		case "perm":
			tc.Perm = r.Int32()
		case "topicSysFlag", "topicSynFlag":
			tc.TopicSysFlag = r.Int32()
		default:
			if string(field) == nameKey {
				tc.Name, _ = r.Scalar()
			} else {
				r.Skip()
			}
		}
	}
}

// readStringList reads an array of strings; null yields nil, and null
// elements are left out.
func readStringList(r *fjson.Reader) []string {
	if r.Null() {
		return nil
	}
	list := []string{}
	for range r.Items() {
		if s, isNull := r.Scalar(); !isNull {
			list = append(list, string(s))
		}
	}
	return list
}

// readMappingMap reads topicQueueMappingInfoMap: topic -> TopicQueueMappingInfo.
func readMappingMap(r *fjson.Reader, b *RegisterBody) {
	if r.Null() {
		return
	}
	for key := range r.Members() {
		topic := string(key)
		if v, err := r.Value(); err == nil && v.Kind == fjson.Object {
			b.Mappings = append(b.Mappings, MappingInfo{Topic: topic, BrokerName: memberText(&v, "bname"), Info: v})
		}
	}
}

func memberText(v *fjson.Value, key string) string {
	for i := range v.Members {
		if v.Members[i].Key == key {
			return v.Members[i].Value.Text
		}
	}
	return ""
}
