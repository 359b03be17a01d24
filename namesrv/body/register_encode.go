package body

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"

	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
)

// BrokerGeneration selects the body shape a simulated broker sends.
type BrokerGeneration int

// The two broker generations the NameServer serves.
const (
	// Broker4 writes 4.9.x bodies: no stateVersion, no static-topic
	// sections, 5-token compressed lines.
	Broker4 BrokerGeneration = iota
	// Broker5 writes 5.x bodies: stateVersion, mapping sections,
	// attributes.
	Broker5
)

// EncodeRegisterBody writes a registration body the way a Java broker of
// the given generation does (RegisterBrokerBody.encode), JSON or zlib. The
// broker simulator and the load generator use it; the NameServer itself
// only decodes.
func EncodeRegisterBody(b *RegisterBody, gen BrokerGeneration, compressed bool) ([]byte, error) {
	if compressed {
		return encodeCompressed(b, gen)
	}
	dst := []byte(`{"filterServerList":`)
	dst = appendStrings(dst, b.FilterServers, fjson.Legacy)
	dst = append(dst, `,"topicConfigSerializeWrapper":{"dataVersion":`...)
	dst = appendBrokerDataVersion(dst, b.DataVersion, gen)
	if gen == Broker5 {
		dst = append(dst, `,"mappingDataVersion":`...)
		dst = appendBrokerDataVersion(dst, DataVersion{Timestamp: b.DataVersion.Timestamp}, gen)
	}
	dst = append(dst, `,"topicConfigTable":{`...)
	for i := range b.Topics {
		tc := &b.Topics[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = fjson.AppendString(dst, tc.Name, fjson.Legacy)
		dst = append(dst, ':', '{')
		if gen == Broker5 {
			dst = append(dst, `"attributes":{},`...)
		}
		dst = fmt.Appendf(dst, `"order":false,"perm":%d,"readQueueNums":%d,"topicFilterType":"SINGLE_TAG","topicName":`, tc.Perm, tc.ReadQueueNums)
		dst = fjson.AppendString(dst, tc.Name, fjson.Legacy)
		dst = fmt.Appendf(dst, `,"topicSysFlag":%d,"writeQueueNums":%d}`, tc.TopicSysFlag, tc.WriteQueueNums)
	}
	dst = append(dst, '}')
	if gen == Broker5 {
		dst = append(dst, `,"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{`...)
		for i := range b.Mappings {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = fjson.AppendString(dst, b.Mappings[i].Topic, fjson.Legacy)
			dst = append(dst, ':')
			dst = fjson.AppendValue(dst, &b.Mappings[i].Info, fjson.Legacy)
		}
		dst = append(dst, '}')
	}
	return append(dst, "}}"...), nil
}

func appendBrokerDataVersion(dst []byte, dv DataVersion, gen BrokerGeneration) []byte {
	if gen == Broker5 {
		return AppendDataVersion(dst, dv)
	}
	return fmt.Appendf(dst, `{"counter":%d,"timestamp":%d}`, dv.Counter, dv.Timestamp)
}

func encodeCompressed(b *RegisterBody, gen BrokerGeneration) ([]byte, error) {
	var raw []byte
	part := func(p []byte) {
		raw = binary.BigEndian.AppendUint32(raw, uint32(len(p)))
		raw = append(raw, p...)
	}
	part(appendBrokerDataVersion(nil, b.DataVersion, gen))
	raw = binary.BigEndian.AppendUint32(raw, uint32(len(b.Topics)))
	for i := range b.Topics {
		tc := &b.Topics[i]
		line := fmt.Appendf(nil, "%s %d %d %d SINGLE_TAG", tc.Name, tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm)
		if gen == Broker5 {
			line = append(line, " {}"...)
		}
		part(line)
	}
	part(appendStrings(nil, b.FilterServers, fjson.Legacy))
	if gen == Broker5 {
		raw = binary.BigEndian.AppendUint32(raw, uint32(len(b.Mappings)))
		for i := range b.Mappings {
			part(fjson.AppendValue(nil, &b.Mappings[i].Info, fjson.Legacy))
		}
	}
	var out bytes.Buffer
	zw, err := zlib.NewWriterLevel(&out, zlib.BestCompression)
	if err != nil {
		return nil, fmt.Errorf("compress register body: %w", err)
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, fmt.Errorf("compress register body: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress register body: %w", err)
	}
	return out.Bytes(), nil
}
