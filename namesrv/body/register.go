package body

import (
	"errors"
	"fmt"
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
