package config

import (
	"errors"
	"fmt"
	"sort"
	"unicode/utf16"
	"unicode/utf8"
)

// Property is one key/value pair of a Java properties text.
type Property struct {
	Key, Value string
}

// SyntaxError reports the only input java.util.Properties.load rejects: a
// malformed \uxxxx escape. Line is the 1-based natural line on which the
// offending logical line starts.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

// ParseProperties reads a properties text with the rules of Java's
// Properties.load: '#' and '!' comment lines, '=', ':' or whitespace between
// key and value, a trailing odd backslash continuing the line, leading
// whitespace of every natural line skipped, and the escapes \t \n \r \f \uXXXX
// (any other escaped character stands for itself).
//
// Unlike Java's load(InputStream), which decodes bytes as ISO-8859-1, the text
// is taken as UTF-8: bytes outside ASCII are copied unchanged, so raw UTF-8
// values survive instead of turning into mojibake. \u escapes are UTF-16 code
// units; a surrogate pair written as two escapes yields one character and a
// lone surrogate yields U+FFFD.
//
// The result has one Property per distinct key, in order of first appearance,
// holding the last value given for it (Java's Properties is a map: later lines
// win).
func ParseProperties(data []byte) ([]Property, error) {
	var (
		props []Property
		index = map[string]int{}
		r     = lineReader{data: data}
		kbuf  []byte
		vbuf  []byte
	)
	for {
		line, start, ok := r.next()
		if !ok {
			return props, nil
		}
		keyEnd, valueStart := splitKeyValue(line)
		var err error
		if kbuf, err = unescape(kbuf[:0], line[:keyEnd]); err != nil {
			return nil, &SyntaxError{Line: lineNumber(data, start), Msg: "key: " + err.Error()}
		}
		if vbuf, err = unescape(vbuf[:0], line[valueStart:]); err != nil {
			return nil, &SyntaxError{Line: lineNumber(data, start), Msg: "value: " + err.Error()}
		}
		key, value := string(kbuf), string(vbuf)
		if i, seen := index[key]; seen {
			props[i].Value = value
			continue
		}
		index[key] = len(props)
		props = append(props, Property{Key: key, Value: value})
	}
}

// lineNumber converts a byte offset into a 1-based line number counting \n,
// \r and \r\n as line ends, as Properties.load does. It only runs on errors.
func lineNumber(data []byte, off int) int {
	n := 1
	for i := 0; i < off && i < len(data); i++ {
		switch data[i] {
		case '\n':
			n++
		case '\r':
			if i+1 >= len(data) || data[i+1] != '\n' {
				n++
			}
		}
	}
	return n
}

// lineReader yields logical lines: comments and blank lines dropped, natural
// lines joined at an odd trailing backslash, leading whitespace removed. It
// follows the state machine of Java's Properties.LineReader so that corner
// cases (a comment marker right after a continuation, a backslash before EOF,
// a blank line ending a continuation) come out the same.
type lineReader struct {
	data []byte
	off  int
	buf  []byte
}

func isPropSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

// next returns the logical line and the offset of its first character.
func (r *lineReader) next() (line []byte, start int, ok bool) {
	r.buf = r.buf[:0]
	skipSpace := true
	continued := false // the previous natural line ended with a continuation
	backslash := false // an odd number of backslashes precedes the current byte
	for {
		if r.off >= len(r.data) {
			if len(r.buf) == 0 {
				return nil, 0, false
			}
			if backslash {
				r.buf = r.buf[:len(r.buf)-1]
			}
			return r.buf, start, true
		}
		c := r.data[r.off]
		r.off++
		if skipSpace {
			if isPropSpace(c) {
				continue
			}
			if !continued && (c == '\r' || c == '\n') {
				continue
			}
			skipSpace, continued = false, false
		}
		if len(r.buf) == 0 && (c == '#' || c == '!') {
			for r.off < len(r.data) && r.data[r.off] != '\n' && r.data[r.off] != '\r' {
				r.off++
			}
			if r.off >= len(r.data) {
				return nil, 0, false
			}
			r.off++
			skipSpace = true
			continue
		}
		if c != '\n' && c != '\r' {
			if len(r.buf) == 0 {
				start = r.off - 1
			}
			r.buf = append(r.buf, c)
			backslash = c == '\\' && !backslash
			continue
		}
		if len(r.buf) == 0 {
			skipSpace = true
			continue
		}
		if r.off >= len(r.data) || !backslash {
			// Like Java, a continuation cut by EOF still ends a (possibly
			// empty) line.
			if backslash {
				r.buf = r.buf[:len(r.buf)-1]
			}
			return r.buf, start, true
		}
		r.buf = r.buf[:len(r.buf)-1]
		skipSpace, continued, backslash = true, true, false
		if c == '\r' && r.off < len(r.data) && r.data[r.off] == '\n' {
			r.off++
		}
	}
}

// splitKeyValue finds where the key ends and the value starts in a logical
// line: the key stops at the first unescaped '=', ':' or whitespace; then
// whitespace and at most one '=' or ':' (if none ended the key) are skipped.
func splitKeyValue(line []byte) (keyEnd, valueStart int) {
	keyEnd, valueStart = len(line), len(line)
	hasSep, backslash := false, false
	for i, c := range line {
		if !backslash {
			if c == '=' || c == ':' {
				keyEnd, valueStart, hasSep = i, i+1, true
				break
			}
			if isPropSpace(c) {
				keyEnd, valueStart = i, i+1
				break
			}
		}
		backslash = c == '\\' && !backslash
	}
	for valueStart < len(line) {
		c := line[valueStart]
		if !isPropSpace(c) {
			if hasSep || (c != '=' && c != ':') {
				break
			}
			hasSep = true
		}
		valueStart++
	}
	return keyEnd, valueStart
}

var errMalformedU = errors.New("malformed \\uxxxx encoding")

// unescape appends the decoded form of s to dst.
func unescape(dst, s []byte) ([]byte, error) {
	var high rune // pending UTF-16 high surrogate from a \u escape, 0 if none
	flush := func() {
		if high != 0 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
			high = 0
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			// A lone trailing backslash cannot reach here from a logical
			// line (the reader strips it); keeping it is the safe reading.
			flush()
			dst = append(dst, c)
			continue
		}
		i++
		c = s[i]
		if c != 'u' {
			flush()
			switch c {
			case 't':
				c = '\t'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 'f':
				c = '\f'
			}
			dst = append(dst, c)
			continue
		}
		if len(s)-(i+1) < 4 {
			return nil, errMalformedU
		}
		var u rune
		for _, h := range s[i+1 : i+5] {
			d, ok := hexDigit(h)
			if !ok {
				return nil, errMalformedU
			}
			u = u<<4 | d
		}
		i += 4
		switch {
		case utf16.IsSurrogate(u) && u < 0xDC00:
			flush()
			high = u
		case utf16.IsSurrogate(u):
			if high != 0 {
				dst = utf8.AppendRune(dst, utf16.DecodeRune(high, u))
				high = 0
			} else {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			}
		default:
			flush()
			dst = utf8.AppendRune(dst, u)
		}
	}
	flush()
	return dst, nil
}

func hexDigit(c byte) (rune, bool) {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0'), true
	case 'a' <= c && c <= 'f':
		return rune(c-'a') + 10, true
	case 'A' <= c && c <= 'F':
		return rune(c-'A') + 10, true
	}
	return 0, false
}

// FormatProperties renders props as "key=value\n" lines sorted by key, the
// shape of Java's MixAll.properties2String(props, true) that GET_NAMESRV_CONFIG
// answers and UPDATE_NAMESRV_CONFIG persists. It is the one writer of the
// format: the operator renders spec.config with it too. Unlike Java it
// escapes what Properties.load would otherwise misread
// (docs/protocol.md#properties-format), so ParseProperties, and the Java
// admin tool, read back exactly props: keys as Properties.store escapes
// them; values too, except that '=', ':', '#' and '!', which store escapes
// but which cannot end or start anything inside a value, stay raw, as Java's
// NameServer writes them. Characters outside printable ASCII are written as
// \uXXXX, as Properties.store does, because the Java admin decodes this text
// as ISO-8859-1; bytes that are not valid UTF-8 are copied as they are. When
// a key repeats, its last value is kept.
func FormatProperties(props []Property) []byte {
	sorted := make([]Property, 0, len(props))
	last := make(map[string]int, len(props))
	for _, p := range props {
		if i, seen := last[p.Key]; seen {
			sorted[i].Value = p.Value
			continue
		}
		last[p.Key] = len(sorted)
		sorted = append(sorted, p)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Key < sorted[j].Key })
	var out []byte
	for _, p := range sorted {
		out = appendEscaped(out, p.Key, true)
		out = append(out, '=')
		out = appendEscaped(out, p.Value, false)
		out = append(out, '\n')
	}
	return out
}

const upperHex = "0123456789ABCDEF"

func appendUnicodeEscape(b []byte, u rune) []byte {
	return append(b, '\\', 'u', upperHex[u>>12&0xF], upperHex[u>>8&0xF], upperHex[u>>4&0xF], upperHex[u&0xF])
}

func appendEscaped(b []byte, s string, isKey bool) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			first := i == 0
			i++
			switch c {
			case '\\':
				b = append(b, '\\', '\\')
			case '\t':
				b = append(b, '\\', 't')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\f':
				b = append(b, '\\', 'f')
			case ' ':
				// Spaces end a key; in a value only a leading one would be
				// skipped by the reader.
				if isKey || first {
					b = append(b, '\\')
				}
				b = append(b, ' ')
			case '=', ':', '#', '!':
				if isKey {
					b = append(b, '\\')
				}
				b = append(b, c)
			default:
				if c < 0x20 || c == 0x7F {
					b = appendUnicodeEscape(b, rune(c))
				} else {
					b = append(b, c)
				}
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, c)
			i++
			continue
		}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			b = appendUnicodeEscape(b, r1)
			b = appendUnicodeEscape(b, r2)
		} else {
			b = appendUnicodeEscape(b, r)
		}
		i += size
	}
	return b
}
