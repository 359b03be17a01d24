package body

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

// decodeCompressed reads the zlib form of a registration body
// (docs/protocol.md#register-body-compressed).
func decodeCompressed(data []byte, opts RegisterOptions, b *RegisterBody) error {
	raw, err := inflate(data, opts.MaxInflated)
	if err != nil {
		return err
	}
	s := parts{data: raw}
	b.DataVersion = s.dataVersion()
	b.Topics = s.topicConfigs(s.count("topic configs"))
	// Java logs an unreadable filter list and carries on with an empty one.
	fl := fjson.NewReader(s.next("filter server list"))
	if list := readStringList(fl); fl.Err() == nil && list != nil {
		b.FilterServers = list
	}
	if opts.Version >= protocol.V5_0_0 {
		b.Mappings = s.mappingInfos(s.count("mapping infos"))
	}
	return s.err
}

// inflate returns the inflated body, refusing one larger than limit
// (DefaultMaxInflated when not positive).
func inflate(data []byte, limit int) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultMaxInflated
	}
	zr, err := zlib.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("zlib: %w", err)
	}
	// Topic lines compress about fivefold; start there to avoid most of
	// the regrowth of reading into an empty buffer.
	var out bytes.Buffer
	out.Grow(min(limit+1, 6*len(data)+512))
	if _, err := out.ReadFrom(io.LimitReader(zr, int64(limit)+1)); err != nil {
		return nil, fmt.Errorf("zlib: %w", err)
	}
	if out.Len() > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	return out.Bytes(), nil
}

// parts walks the length-prefixed parts of an inflated body. Like
// fjson.Reader it keeps its first error: after it, every read yields a zero
// value.
type parts struct {
	data []byte
	pos  int
	err  error
}

func (s *parts) fail(err error) {
	if s.err == nil {
		s.err = err
	}
	s.pos = len(s.data)
}

func (s *parts) int32(what string) int {
	if len(s.data)-s.pos < 4 {
		s.fail(fmt.Errorf("truncated before the length of the %s", what))
		return 0
	}
	v := int(int32(binary.BigEndian.Uint32(s.data[s.pos:])))
	s.pos += 4
	return v
}

// next returns the next length-prefixed part; after an error, an empty one.
func (s *parts) next(what string) []byte {
	n := s.int32(what)
	if n < 0 || n > len(s.data)-s.pos {
		s.fail(fmt.Errorf("%s length %d exceeds the %d bytes left", what, n, len(s.data)-s.pos))
		return nil
	}
	b := s.data[s.pos : s.pos+n]
	s.pos += n
	return b
}

// count reads an element count, checking it against the bytes left (each
// element takes at least its 4-byte length) so a forged count cannot make
// us allocate more than the body could hold.
func (s *parts) count(what string) int {
	n := s.int32(what)
	if n < 0 || n > (len(s.data)-s.pos)/4 {
		s.fail(fmt.Errorf("%s count %d is impossible with %d bytes left", what, n, len(s.data)-s.pos))
		return 0
	}
	return n
}

func (s *parts) dataVersion() DataVersion {
	part := s.next("data version")
	if s.err != nil {
		return DataVersion{}
	}
	dv, err := DecodeDataVersion(part)
	if err != nil {
		s.fail(err)
	}
	return dv
}

// topicConfigs reads n topic config lines.
func (s *parts) topicConfigs(n int) []TopicConfig {
	out := newTopicList(n)
	for i := 0; i < n && s.err == nil; i++ {
		tc, err := parseTopicLine(s.next("topic config"))
		if err != nil {
			s.fail(fmt.Errorf("topic config %d: %w", i, err))
		}
		out = append(out, tc)
	}
	return out
}

// mappingInfos reads n TopicQueueMappingInfo documents.
func (s *parts) mappingInfos(n int) []MappingInfo {
	var out []MappingInfo
	for i := 0; i < n && s.err == nil; i++ {
		v, err := fjson.NewReader(s.next("mapping info")).Value()
		if err != nil {
			s.fail(fmt.Errorf("mapping info: %w", err))
		}
		out = append(out, MappingInfo{Topic: memberText(&v, "topic"), BrokerName: memberText(&v, "bname"), Info: v})
	}
	return out
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
