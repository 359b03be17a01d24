package body

import "bytes"

// scanTopicConfig recognises a TopicConfig written exactly as a Java broker
// writes it: fastjson's compact form, members in alphabetical order,
// "attributes" empty (5.x) or absent (4.x), no escapes in the name. That
// is every topic of every real broker's registration, so the full
// member-by-member read (readQueueFields) is left for anything else: on
// any other byte scanTopicConfig returns ok false, having decided nothing.
// It reads only the fields readQueueFields keeps, and the two agree on
// every input the scan accepts (FuzzScanTopicConfig).
//
// A 10,000-topic registration with a new DataVersion must read every
// topic, and this is most of its cost.
func scanTopicConfig(b []byte, tc *TopicConfig) (n int, ok bool) {
	s := scanner{b: b, ok: true}
	s.lit(`{`)
	if s.ok && s.peekLit(`"attributes":{},`) {
		s.lit(`"attributes":{},`)
	}
	s.lit(`"order":`)
	if s.ok && s.peekLit(`true`) {
		s.lit(`true`)
	} else {
		s.lit(`false`)
	}
	s.lit(`,"perm":`)
	tc.Perm = s.int32()
	s.lit(`,"readQueueNums":`)
	tc.ReadQueueNums = s.int32()
	s.lit(`,"topicFilterType":`)
	s.plainString()
	s.lit(`,"topicName":`)
	tc.Name = s.plainString()
	s.lit(`,"topicSysFlag":`)
	tc.TopicSysFlag = s.int32()
	s.lit(`,"writeQueueNums":`)
	tc.WriteQueueNums = s.int32()
	s.lit(`}`)
	return s.pos, s.ok
}

// scanner matches expected bytes; the first mismatch clears ok, and every
// later step then does nothing.
type scanner struct {
	b   []byte
	pos int
	ok  bool
}

func (s *scanner) peekLit(want string) bool {
	return len(s.b)-s.pos >= len(want) && string(s.b[s.pos:s.pos+len(want)]) == want
}

func (s *scanner) lit(want string) {
	if !s.ok || !s.peekLit(want) {
		s.ok = false
		return
	}
	s.pos += len(want)
}

// int32 reads a plain decimal integer of at most 9 digits (a real queue
// count, permission or flag; anything longer takes the full read, which
// checks the range).
func (s *scanner) int32() int32 {
	if !s.ok {
		return 0
	}
	neg := s.pos < len(s.b) && s.b[s.pos] == '-'
	if neg {
		s.pos++
	}
	start := s.pos
	var v int32
	for s.pos < len(s.b) && s.pos-start < 10 {
		c := s.b[s.pos]
		if c < '0' || c > '9' {
			break
		}
		v = v*10 + int32(c-'0')
		s.pos++
	}
	if digits := s.pos - start; digits == 0 || digits > 9 {
		s.ok = false
		return 0
	}
	if neg {
		return -v
	}
	return v
}

// plainString reads a double-quoted string without escapes.
func (s *scanner) plainString() []byte {
	if !s.ok || s.pos >= len(s.b) || s.b[s.pos] != '"' {
		s.ok = false
		return nil
	}
	rest := s.b[s.pos+1:]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		s.ok = false
		return nil
	}
	s.pos += end + 2
	return rest[:end:end]
}
