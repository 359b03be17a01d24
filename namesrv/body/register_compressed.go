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
