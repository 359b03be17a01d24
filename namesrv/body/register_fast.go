package body

import "bytes"

// A 10,000-topic registration with a new DataVersion must read every topic
// of a 1.9 MB body, and reading them was most of its cost. Every real
// broker writes its topicConfigTable the same way: fastjson's compact
// form, members in alphabetical order, "attributes" empty (5.x) or absent
// (4.x), names without escapes, each topic's key equal to its topicName.
// The scanners here match those exact bytes, literal by literal, and leave
// anything else to the member-by-member read (readQueueFields): on any
// other byte they return 0, having decided nothing. They read only the
// fields readQueueFields keeps, and the two agree on every input the
// scanners accept (FuzzScanTopicConfig).

// The literals of a topic config, in the order Java writes them, are
// compared in pieces of at most 16 bytes written out as constants: the
// compiler compares those with two loads each, where a longer or
// non-constant one costs a call (and most of the scan's time).

// scanTopicConfig recognises one TopicConfig value written as a Java
// broker writes it and returns its length, or ok false.
func scanTopicConfig(b []byte, tc *TopicConfig) (n int, ok bool) {
	n = scanTopicValue(b, nil, tc)
	return n, n > 0
}

// scanTopicEntries consumes the members of a topicConfigTable that follow
// one already read, as long as each is `,"NAME":{...}` laid out as Java
// writes it, appending their configs to topics. It stops before the first
// member it does not recognise (or the closing '}'), which the caller's
// reader then reads.
func scanTopicEntries(b []byte, topics []TopicConfig) (int, []TopicConfig) {
	n := 0
	for {
		e := b[n:]
		if len(e) < 2 || e[0] != ',' || e[1] != '"' {
			return n, topics
		}
		k := bytes.IndexByte(e[2:], '"')
		if k < 0 || 2+k+2 > len(e) || e[2+k+1] != ':' {
			return n, topics
		}
		key := e[2 : 2+k]
		if bytes.IndexByte(key, '\\') >= 0 {
			return n, topics
		}
		// Scanned in place: a TopicConfig holds a pointer, and copying
		// one into the slice would cost a write barrier call.
		topics = append(topics, TopicConfig{})
		m := scanTopicValue(e[2+k+2:], key, &topics[len(topics)-1])
		if m == 0 {
			return n, topics[:len(topics)-1]
		}
		n += 2 + k + 2 + m
	}
}

// scanTopicValue recognises one TopicConfig value and returns its length,
// or 0. key, when not nil, is the member's name and holds no backslash:
// a topicName of the same bytes is then matched with one comparison.
func scanTopicValue(b []byte, key []byte, tc *TopicConfig) int {
	if len(b) == 0 || b[0] != '{' {
		return 0
	}
	p := 1
	if len(b)-p >= 16 && string(b[p:p+16]) == `"attributes":{},` {
		p += 16
	}
	switch {
	case len(b)-p >= 21 && string(b[p:p+16]) == `"order":false,"p` && string(b[p+16:p+21]) == `erm":`:
		p += 21
	case len(b)-p >= 20 && string(b[p:p+16]) == `"order":true,"pe` && string(b[p+16:p+20]) == `rm":`:
		p += 20
	default:
		return 0
	}
	if v, ok := digitAt(b, p); ok {
		tc.Perm, p = v, p+1
	} else if tc.Perm, p = scanLongInt(b, p); p < 0 {
		return 0
	}
	if len(b)-p < 17 || string(b[p:p+16]) != `,"readQueueNums"` || b[p+16] != ':' {
		return 0
	}
	if v, ok := digitAt(b, p+17); ok {
		tc.ReadQueueNums, p = v, p+18
	} else if tc.ReadQueueNums, p = scanLongInt(b, p+17); p < 0 {
		return 0
	}
	switch {
	case len(b)-p >= 45 && string(b[p:p+16]) == `,"topicFilterTyp` && string(b[p+16:p+32]) == `e":"SINGLE_TAG",` &&
		string(b[p+32:p+45]) == `"topicName":"`:
		p += 45
	case len(b)-p >= 44 && string(b[p:p+16]) == `,"topicFilterTyp` && string(b[p+16:p+31]) == `e":"MULTI_TAG",` &&
		string(b[p+31:p+44]) == `"topicName":"`:
		p += 44
	case len(b)-p >= 19 && string(b[p:p+16]) == `,"topicFilterTyp` && string(b[p+16:p+19]) == `e":`:
		if _, p = scanPlainString(b, p+19); p < 0 || len(b)-p < 14 || string(b[p:p+14]) != `,"topicName":"` {
			return 0
		}
		p += 14
	default:
		return 0
	}
	// p is past the name's opening quote.
	if k := len(key); key != nil && len(b)-p > k && string(b[p:p+k]) == string(key) && b[p+k] == '"' {
		tc.Name = b[p : p+k : p+k]
		p += k + 1
	} else if tc.Name, p = scanPlainString(b, p-1); p < 0 {
		return 0
	}
	if len(b)-p < 16 || string(b[p:p+16]) != `,"topicSysFlag":` {
		return 0
	}
	if v, ok := digitAt(b, p+16); ok {
		tc.TopicSysFlag, p = v, p+17
	} else if tc.TopicSysFlag, p = scanLongInt(b, p+16); p < 0 {
		return 0
	}
	if len(b)-p < 18 || string(b[p:p+16]) != `,"writeQueueNums` || string(b[p+16:p+18]) != `":` {
		return 0
	}
	if v, ok := digitAt(b, p+18); ok {
		tc.WriteQueueNums, p = v, p+19
	} else if tc.WriteQueueNums, p = scanLongInt(b, p+18); p < 0 {
		return 0
	}
	if p >= len(b) || b[p] != '}' {
		return 0
	}
	return p + 1
}

// digitAt reads a single digit followed by a non-digit at p: most queue
// counts, permissions and flags, read inline. What follows is the
// caller's to check.
func digitAt(b []byte, p int) (int32, bool) {
	if p+1 < len(b) && b[p]-'0' <= 9 && b[p+1]-'0' > 9 {
		return int32(b[p] - '0'), true
	}
	return 0, false
}

// scanLongInt reads a plain decimal integer of at most 9 digits at p (a
// real queue count, permission or flag; anything longer takes the full
// read, which checks the range) and returns the position after it, or -1.
func scanLongInt(b []byte, p int) (int32, int) {
	neg := p < len(b) && b[p] == '-'
	if neg {
		p++
	}
	start := p
	var v int32
	for p < len(b) && p-start < 10 {
		c := b[p] - '0'
		if c > 9 {
			break
		}
		v = v*10 + int32(c)
		p++
	}
	if digits := p - start; digits == 0 || digits > 9 {
		return 0, -1
	}
	if neg {
		v = -v
	}
	return v, p
}

// scanPlainString reads a double-quoted string without escapes at p and
// returns its contents and the position after it, or -1.
func scanPlainString(b []byte, p int) ([]byte, int) {
	if p < 0 || p >= len(b) || b[p] != '"' {
		return nil, -1
	}
	rest := b[p+1:]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return nil, -1
	}
	return rest[:end:end], p + end + 2
}
