// Package body encodes and decodes the payloads of NameServer commands: the
// broker registration body (JSON or zlib-compressed), DataVersion, queue and
// broker data, and the route, cluster, topic-list and member-group answers,
// byte for byte as the Java NameServer writes them (namesrv-protocol.md §2).
package body

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

// DataVersion identifies a broker's topic metadata revision. Two versions are
// equal when all three fields are (4.9 brokers send no stateVersion: 0).
type DataVersion struct {
	StateVersion int64
	Timestamp    int64
	Counter      int64
}

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

// DecodeRegisterBody decodes a REGISTER_BROKER body (§2.3.1, §2.3.2). A zlib
// body is recognised by the header flag or by its first byte, because 5.x
// brokers with compressedRegister=true send compressed=false (§2.3.2).
func DecodeRegisterBody(data []byte, opts RegisterOptions) (*RegisterBody, error) {
	b := &RegisterBody{FilterServers: []string{}}
	if len(data) == 0 {
		return b, nil
	}
	if opts.Version < protocol.V3_0_11 {
		r := fjson.NewReader(data)
		if err := decodeWrapper(r, b); err != nil {
			return nil, fmt.Errorf("decode topic config wrapper: %w", err)
		}
		return b, r.End()
	}
	if opts.Compressed || data[0] == 0x78 {
		if err := decodeCompressed(data, opts, b); err != nil {
			return nil, fmt.Errorf("decode compressed register body: %w", err)
		}
		return b, nil
	}
	if err := decodeJSONBody(data, b); err != nil {
		return nil, fmt.Errorf("decode register body: %w", err)
	}
	return b, nil
}

func decodeJSONBody(data []byte, b *RegisterBody) error {
	r := fjson.NewReader(data)
	if err := r.BeginObject(); err != nil {
		return err
	}
	for {
		key, ok, err := r.NextKey()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		switch string(key) {
		case "filterServerList":
			b.FilterServers, err = readStringList(r)
		case "topicConfigSerializeWrapper":
			if !r.Null() {
				err = decodeWrapper(r, b)
			}
		default:
			err = r.Skip()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	return r.End()
}

// decodeWrapper reads a TopicConfigSerializeWrapper (or its 5.x subclass with
// static-topic mappings).
func decodeWrapper(r *fjson.Reader, b *RegisterBody) error {
	if err := r.BeginObject(); err != nil {
		return err
	}
	sawVersion := false
	for {
		key, ok, err := r.NextKey()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		switch string(key) {
		case "dataVersion":
			if !r.Null() {
				sawVersion = true
				b.DataVersion, err = readDataVersion(r)
			}
		case "topicConfigTable":
			err = readTopicConfigTable(r, b, r.Size())
		case "topicQueueMappingInfoMap":
			err = readMappingMap(r, b)
		default:
			err = r.Skip()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	if !sawVersion {
		// Java's wrapper defaults to a fresh DataVersion stamped "now",
		// so such a body always counts as changed.
		b.DataVersion = DataVersion{Timestamp: time.Now().UnixMilli()}
	}
	return nil
}

func readTopicConfigTable(r *fjson.Reader, b *RegisterBody, bodySize int) error {
	if r.Null() {
		return nil
	}
	if err := r.BeginObject(); err != nil {
		return err
	}
	// A topic config takes at least 150 bytes of JSON; sizing the slice
	// from the body avoids regrowing it for brokers with many topics.
	b.Topics = make([]TopicConfig, 0, bodySize/150+1)
	for {
		key, ok, err := r.NextKey()
		if err != nil || !ok {
			return err
		}
		if r.Null() {
			continue
		}
		tc, err := readTopicConfig(r, key)
		if err != nil {
			return fmt.Errorf("topic %s: %w", key, err)
		}
		b.Topics = append(b.Topics, tc)
	}
}

func readTopicConfig(r *fjson.Reader, key []byte) (TopicConfig, error) {
	tc := TopicConfig{ReadQueueNums: defaultQueueNums, WriteQueueNums: defaultQueueNums, Perm: defaultPerm}
	if err := r.BeginObject(); err != nil {
		return tc, err
	}
	for {
		field, ok, err := r.NextKey()
		if err != nil {
			return tc, err
		}
		if !ok {
			break
		}
		switch string(field) {
		case "topicName":
			var isNull bool
			tc.Name, isNull, err = r.Scalar()
			if isNull {
				tc.Name = nil
			}
		case "readQueueNums":
			tc.ReadQueueNums, err = r.Int32()
		case "writeQueueNums":
			tc.WriteQueueNums, err = r.Int32()
		case "perm":
			tc.Perm, err = r.Int32()
		case "topicSysFlag", "topicSynFlag":
			tc.TopicSysFlag, err = r.Int32()
		default:
			err = r.Skip()
		}
		if err != nil {
			return tc, fmt.Errorf("%s: %w", field, err)
		}
	}
	if tc.Name == nil {
		// Java would fail on a config without a name; the table key is
		// the name by construction, so use it.
		tc.Name = key
	}
	return tc, nil
}

func readDataVersion(r *fjson.Reader) (DataVersion, error) {
	var dv DataVersion
	if err := r.BeginObject(); err != nil {
		return dv, err
	}
	for {
		key, ok, err := r.NextKey()
		if err != nil {
			return dv, err
		}
		if !ok {
			return dv, nil
		}
		switch string(key) {
		case "counter":
			dv.Counter, err = r.Int64()
		case "timestamp":
			dv.Timestamp, err = r.Int64()
		case "stateVersion":
			dv.StateVersion, err = r.Int64()
		default:
			err = r.Skip()
		}
		if err != nil {
			return dv, fmt.Errorf("%s: %w", key, err)
		}
	}
}

// DecodeDataVersion decodes a DataVersion body (QUERY_DATA_VERSION).
func DecodeDataVersion(data []byte) (DataVersion, error) {
	r := fjson.NewReader(data)
	dv, err := readDataVersion(r)
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return dv, fmt.Errorf("decode data version: %w", err)
	}
	return dv, nil
}

func readStringList(r *fjson.Reader) ([]string, error) {
	if r.Null() {
		return nil, nil
	}
	if err := r.BeginArray(); err != nil {
		return nil, err
	}
	list := []string{}
	for {
		more, err := r.More()
		if err != nil || !more {
			return list, err
		}
		s, isNull, err := r.Scalar()
		if err != nil {
			return nil, err
		}
		if !isNull {
			list = append(list, string(s))
		}
	}
}

// readMappingMap reads topicQueueMappingInfoMap: topic -> TopicQueueMappingInfo.
func readMappingMap(r *fjson.Reader, b *RegisterBody) error {
	if r.Null() {
		return nil
	}
	if err := r.BeginObject(); err != nil {
		return err
	}
	for {
		key, ok, err := r.NextKey()
		if err != nil || !ok {
			return err
		}
		topic := string(key)
		v, err := r.Value()
		if err != nil {
			return fmt.Errorf("mapping of %s: %w", topic, err)
		}
		if v.Kind != fjson.Object {
			continue
		}
		b.Mappings = append(b.Mappings, MappingInfo{Topic: topic, BrokerName: memberText(&v, "bname"), Info: v})
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

// decodeCompressed reads the zlib form of §2.3.2.
func decodeCompressed(data []byte, opts RegisterOptions, b *RegisterBody) error {
	limit := opts.MaxInflated
	if limit <= 0 {
		limit = DefaultMaxInflated
	}
	zr, err := zlib.NewReader(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("zlib: %w", err)
	}
	// Topic lines compress about fivefold; start there to avoid most of
	// the regrowth of reading into an empty buffer.
	var out bytes.Buffer
	out.Grow(min(limit+1, 6*len(data)+512))
	if _, err := out.ReadFrom(io.LimitReader(zr, int64(limit)+1)); err != nil {
		return fmt.Errorf("zlib: %w", err)
	}
	raw := out.Bytes()
	if len(raw) > limit {
		return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	s := section{data: raw}
	dv, err := s.next("data version")
	if err != nil {
		return err
	}
	if b.DataVersion, err = DecodeDataVersion(dv); err != nil {
		return err
	}
	n, err := s.count("topic configs")
	if err != nil {
		return err
	}
	b.Topics = make([]TopicConfig, 0, n)
	for i := range n {
		line, err := s.next("topic config")
		if err != nil {
			return err
		}
		tc, err := parseTopicLine(line)
		if err != nil {
			return fmt.Errorf("topic config %d: %w", i, err)
		}
		b.Topics = append(b.Topics, tc)
	}
	fl, err := s.next("filter server list")
	if err != nil {
		return err
	}
	// Java logs an unreadable filter list and carries on with an empty one.
	if list, err := readStringList(fjson.NewReader(fl)); err == nil && list != nil {
		b.FilterServers = list
	}
	if opts.Version < protocol.V5_0_0 {
		return nil
	}
	m, err := s.count("mapping infos")
	if err != nil {
		return err
	}
	for range m {
		js, err := s.next("mapping info")
		if err != nil {
			return err
		}
		v, err := fjson.NewReader(js).Value()
		if err != nil {
			return fmt.Errorf("mapping info: %w", err)
		}
		b.Mappings = append(b.Mappings, MappingInfo{Topic: memberText(&v, "topic"), BrokerName: memberText(&v, "bname"), Info: v})
	}
	return nil
}

// section walks the length-prefixed parts of an inflated body.
type section struct {
	data []byte
	pos  int
}

func (s *section) int32(what string) (int, error) {
	if len(s.data)-s.pos < 4 {
		return 0, fmt.Errorf("truncated before the length of the %s", what)
	}
	v := int(int32(binary.BigEndian.Uint32(s.data[s.pos:])))
	s.pos += 4
	return v, nil
}

func (s *section) next(what string) ([]byte, error) {
	n, err := s.int32(what)
	if err != nil {
		return nil, err
	}
	if n < 0 || n > len(s.data)-s.pos {
		return nil, fmt.Errorf("%s length %d exceeds the %d bytes left", what, n, len(s.data)-s.pos)
	}
	b := s.data[s.pos : s.pos+n]
	s.pos += n
	return b, nil
}

// count reads an element count, checking it against the bytes left (each
// element takes at least its 4-byte length) so a forged count cannot make
// us allocate more than the body could hold.
func (s *section) count(what string) (int, error) {
	n, err := s.int32(what)
	if err != nil {
		return 0, err
	}
	if n < 0 || n > (len(s.data)-s.pos)/4 {
		return 0, fmt.Errorf("%s count %d is impossible with %d bytes left", what, n, len(s.data)-s.pos)
	}
	return n, nil
}

// parseTopicLine parses "name read write perm filterType [attributes]",
// split on single spaces like Java's String.split(" ").
func parseTopicLine(line []byte) (TopicConfig, error) {
	var tok [5][]byte
	rest := line
	for i := range tok {
		j := bytes.IndexByte(rest, ' ')
		if j < 0 {
			if i < 4 {
				return TopicConfig{}, fmt.Errorf("line %q has fewer than 5 fields", line)
			}
			j = len(rest)
		}
		tok[i] = rest[:j]
		rest = rest[min(j+1, len(rest)):]
	}
	var nums [3]int32
	for i := range nums {
		v, ok := fjson.ParseInt(tok[i+1])
		if !ok || int64(int32(v)) != v {
			return TopicConfig{}, fmt.Errorf("line %q: field %d is not an integer", line, i+2)
		}
		nums[i] = int32(v)
	}
	tc := TopicConfig{Name: tok[0], ReadQueueNums: nums[0], WriteQueueNums: nums[1], Perm: nums[2]}
	if ft := tok[4]; string(ft) != "SINGLE_TAG" && string(ft) != "MULTI_TAG" {
		return tc, fmt.Errorf("line %q: unknown topic filter type %q", line, ft)
	}
	if len(tc.Name) == 0 {
		return tc, fmt.Errorf("line %q has an empty topic name", line)
	}
	return tc, nil
}
