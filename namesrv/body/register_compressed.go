package body

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/flate"

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
	b.inflated = raw
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

// inflaters recycles deflate readers: each holds a 32 KiB window and its
// Huffman tables.
var inflaters sync.Pool

// inflatedBuffers recycles the buffers bodies inflate into (Release): a
// 100,000-topic broker's inflates to about 5 MB.
var inflatedBuffers sync.Pool

// inflate returns the inflated body of a zlib stream (RFC 1950), refusing
// one larger than limit (DefaultMaxInflated when not positive). It reads
// the zlib framing itself, the deflate data with klauspost/compress
// (about twice as fast as compress/flate here) and checks the Adler-32
// with updateAdler32; for any stream it yields what compress/zlib yields
// (FuzzInflate), and fails where compress/zlib fails.
func inflate(data []byte, limit int) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultMaxInflated
	}
	src, err := zlibStream(data)
	if err != nil {
		return nil, fmt.Errorf("zlib: %w", err)
	}
	fr, ok := inflaters.Get().(io.ReadCloser)
	if ok {
		if err := fr.(flate.Resetter).Reset(src, nil); err != nil {
			return nil, fmt.Errorf("zlib: %w", err)
		}
	} else {
		fr = flate.NewReader(src)
	}
	defer inflaters.Put(fr)
	// Topic lines compress about twentyfold; start there to avoid most of
	// the regrowth of reading into an empty buffer.
	out := inflatedBuffer(min(limit+1, 20*len(data)+512))
	for {
		if len(out) == cap(out) {
			out = slices.Grow(out, min(limit+1, 2*cap(out))-len(out))
		}
		n, err := fr.Read(out[len(out):min(cap(out), limit+1)])
		out = out[:len(out)+n]
		if len(out) > limit {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("zlib: %w", err)
		}
	}
	// The deflate reader reads no further than its stream from a
	// bytes.Reader: the Adler-32 of the inflated bytes follows.
	var sum [4]byte
	if _, err := io.ReadFull(src, sum[:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("zlib: %w", err)
	}
	if binary.BigEndian.Uint32(sum[:]) != updateAdler32(1, out) {
		return nil, fmt.Errorf("zlib: %w", zlib.ErrChecksum)
	}
	return out, nil
}

// zlibStream checks a zlib header (RFC 1950 section 2.2) as compress/zlib
// does and returns the deflate data after it.
func zlibStream(data []byte) (*bytes.Reader, error) {
	if len(data) < 2 {
		return nil, io.ErrUnexpectedEOF
	}
	cmf, flg := data[0], data[1]
	if cmf&0x0f != 8 || cmf>>4 > 7 || (uint16(cmf)<<8|uint16(flg))%31 != 0 {
		return nil, zlib.ErrHeader
	}
	data = data[2:]
	if flg&0x20 != 0 {
		// A preset dictionary: the registration has none to give, which
		// compress/zlib takes for the empty one (Adler-32 1).
		if len(data) < 4 {
			return nil, io.ErrUnexpectedEOF
		}
		if binary.BigEndian.Uint32(data) != 1 {
			return nil, zlib.ErrDictionary
		}
		data = data[4:]
	}
	return bytes.NewReader(data), nil
}

// inflatedBuffer returns an empty buffer with room for at least n bytes.
func inflatedBuffer(n int) []byte {
	if p, ok := inflatedBuffers.Get().(*[]byte); ok && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]byte, 0, n)
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
		line := s.next("topic config")
		// Parsed in place: a TopicConfig holds a pointer, and copying one
		// into the list would cost a write barrier call.
		out = append(out, TopicConfig{})
		tc := &out[len(out)-1]
		if scanTopicLine(line, tc) {
			continue
		}
		var err error
		if *tc, err = parseTopicLine(line); err != nil {
			s.fail(fmt.Errorf("topic config %d: %w", i, err))
		}
	}
	return out
}

// scanTopicLine recognises a topic line as Java brokers write it, "name
// read write perm SINGLE_TAG" (or MULTI_TAG), with counts of at most 9
// plain digits and anything after a further space, and reads it into tc
// with one IndexByte instead of parseTopicLine's five; on anything else it
// returns false, for parseTopicLine to read or refuse. The two agree on
// every line it accepts (FuzzScanTopicConfig).
func scanTopicLine(line []byte, tc *TopicConfig) bool {
	k := bytes.IndexByte(line, ' ')
	if k <= 0 {
		return false
	}
	p := k + 1
	var nums [3]int32
	for i := range nums {
		start := p
		var v int32
		for p < len(line) && p-start < 10 && line[p]-'0' <= 9 {
			v = v*10 + int32(line[p]-'0')
			p++
		}
		if d := p - start; d == 0 || d > 9 || p >= len(line) || line[p] != ' ' {
			return false
		}
		nums[i] = v
		p++
	}
	rest := line[p:]
	switch {
	case len(rest) >= 10 && string(rest[:10]) == "SINGLE_TAG":
		rest = rest[10:]
	case len(rest) >= 9 && string(rest[:9]) == "MULTI_TAG":
		rest = rest[9:]
	default:
		return false
	}
	if len(rest) > 0 && rest[0] != ' ' {
		return false
	}
	*tc = TopicConfig{Name: line[:k:k], ReadQueueNums: nums[0], WriteQueueNums: nums[1], Perm: nums[2]}
	return true
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
