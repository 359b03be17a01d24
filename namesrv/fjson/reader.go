// Package fjson reads and writes JSON the way Alibaba fastjson does, which is
// what every Java RocketMQ component puts on the wire.
//
// fastjson output is not always standard JSON: maps with integer keys are
// written with bare keys ({0:"10.0.0.1:10911"}), and its reader accepts more
// than the standard allows. The Reader here is as lenient as the Java side
// needs (bare keys, single-quoted strings, trailing commas, numbers or
// booleans where strings are expected) and never panics on any input; the
// writer functions produce both dialects the NameServer must answer in
// (docs/protocol.md#json-dialects).
//
// The Reader is a pull parser without reflection or per-value allocation, so
// it serves both the hot header path and the multi-megabyte registration
// bodies.
package fjson

import (
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds the nesting of arrays and objects. Registration bodies nest
// five levels deep; the bound keeps hostile input (a frame full of '[') from
// costing more than a small, fixed amount of stack.
const MaxDepth = 128

// maxPath is how many levels of the path to a value a SyntaxError names;
// every document the NameServer decodes itself nests less deeply.
const maxPath = 8

// SyntaxError reports malformed input and where it was found.
type SyntaxError struct {
	Offset int
	// Path names the value being read, as member names and array indexes
	// from the top ("topicConfigTable.TopicA.perm", "queueDatas[2]"); empty
	// at the top level.
	Path string
	Msg  string
}

func (e *SyntaxError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("json: %s at offset %d", e.Msg, e.Offset)
	}
	return fmt.Sprintf("json: %s at %s (offset %d)", e.Msg, e.Path, e.Offset)
}

// ErrSyntax is matched by every *SyntaxError through errors.Is.
var ErrSyntax = errors.New("json syntax error")

// Is makes errors.Is(err, ErrSyntax) true for syntax errors.
func (e *SyntaxError) Is(target error) bool { return target == ErrSyntax }

// Reader is a pull parser over one JSON document held in memory.
//
// Reads do not return errors. The first one is kept, as franz-go's
// kbin.Reader keeps it: every later read returns a zero value and the
// Members and Items loops end. A decoder therefore reads every field it
// wants and checks Err (or End) once.
//
// Byte slices it returns alias either the input or an internal scratch
// buffer; they stay valid until the next Reset.
type Reader struct {
	data    []byte
	pos     int
	depth   int
	first   bool
	bare    bool
	scratch []byte
	err     error
	// path records, for the levels open, the member or index being read,
	// so that an error can say where it happened.
	path [maxPath]pathElem
}

type pathElem struct {
	key   []byte
	index int
	array bool
}

// NewReader returns a Reader positioned at the start of data.
func NewReader(data []byte) *Reader {
	r := &Reader{}
	r.Reset(data)
	return r
}

// Reset repositions the Reader at the start of data and forgets its error,
// keeping its scratch buffer for reuse.
func (r *Reader) Reset(data []byte) {
	r.data = data
	r.pos = 0
	r.depth = 0
	r.first = false
	r.err = nil
	r.scratch = r.scratch[:0]
}

// Err is the first error the Reader met, or nil.
func (r *Reader) Err() error { return r.err }

// Size is the length of the document.
func (r *Reader) Size() int { return len(r.data) }

// fail records an error at the current offset, unless one is recorded, and
// moves to the end of the input: every later read then finds nothing to
// read, which is what keeps the error sticky without a test on every path.
func (r *Reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = &SyntaxError{Offset: r.pos, Path: r.pathString(), Msg: fmt.Sprintf(format, args...)}
	}
	r.pos = len(r.data)
}

// Fail records a decoder's own finding about well-formed input, such as a
// map key that is not the integer the decoder needs, as the Reader's error:
// at the current offset and path, unless an error is recorded already, and
// with every later read then finding nothing.
func (r *Reader) Fail(format string, args ...any) { r.fail(format, args...) }

func (r *Reader) pathString() string {
	var b strings.Builder
	for i := range min(r.depth, maxPath) {
		e := &r.path[i]
		switch {
		case e.array && e.index >= 0:
			b.WriteString("[" + strconv.Itoa(e.index) + "]")
		case !e.array && e.key != nil:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.Write(e.key)
		default:
			return b.String()
		}
	}
	if r.depth > maxPath {
		b.WriteString("...")
	}
	return b.String()
}

func (r *Reader) skipWS() {
	// Every blank is below '!', so one comparison settles the common case.
	for r.pos < len(r.data) && r.data[r.pos] <= ' ' {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r', '\f', '\b':
			r.pos++
		default:
			return
		}
	}
}

// Peek returns the next non-blank byte without consuming it, or 0 at the end
// or after an error.
func (r *Reader) Peek() byte {
	r.skipWS()
	if r.pos >= len(r.data) {
		return 0
	}
	return r.data[r.pos]
}

// End checks that nothing but whitespace follows the document, and returns
// the Reader's error.
func (r *Reader) End() error {
	if r.Peek() != 0 {
		r.fail("unexpected %q after the document", r.data[r.pos])
	}
	return r.err
}

func (r *Reader) literal(word string) bool {
	if len(r.data)-r.pos >= len(word) && string(r.data[r.pos:r.pos+len(word)]) == word {
		r.pos += len(word)
		return true
	}
	return false
}

// Null consumes a null literal if one comes next and reports whether it did.
func (r *Reader) Null() bool {
	r.skipWS()
	return r.literal("null")
}

// Members reads an object and yields the name of each member. The loop
// body reads the member's value (or Skips it) before the next iteration;
// the loop ends after the closing '}' or at the first error. Names may be
// quoted, single-quoted or bare (fastjson writes integer map keys bare).
// A value other than an object is an error (test Null first where null is
// allowed).
func (r *Reader) Members() iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		if !r.enter('{', "expected an object") {
			return
		}
		for {
			key, ok := r.nextKey()
			if !ok || !yield(key) {
				return
			}
		}
	}
}

// Items reads an array and yields the index of each element; the loop body
// reads the element. The loop ends after the closing ']' or at the first
// error.
func (r *Reader) Items() iter.Seq[int] {
	return func(yield func(int) bool) {
		if !r.enter('[', "expected an array") {
			return
		}
		for i := 0; r.nextItem() && yield(i); i++ {
		}
	}
}

// enter consumes the '{' or '[' that opens a container.
func (r *Reader) enter(open byte, msg string) bool {
	if r.Peek() != open {
		r.fail("%s", msg)
		return false
	}
	if r.depth >= MaxDepth {
		r.fail("nesting deeper than %d", MaxDepth)
		return false
	}
	if r.depth < maxPath {
		r.path[r.depth] = pathElem{array: open == '[', index: -1}
	}
	r.depth++
	r.pos++
	r.first = true
	return true
}

// nextKey returns the next member name of the current object and consumes
// the ':' after it; ok is false once the closing '}' has been consumed, or
// on an error.
func (r *Reader) nextKey() (key []byte, ok bool) {
	c := r.Peek()
	if r.first {
		r.first = false
	} else {
		switch c {
		case ',':
			r.pos++
			c = r.Peek()
		case '}':
		default:
			r.fail("expected ',' or '}' in an object")
			return nil, false
		}
	}
	switch c {
	case '}':
		r.pos++
		r.depth--
		return nil, false
	case 0:
		r.fail("unterminated object")
		return nil, false
	case '"', '\'':
		r.bare = false
		key = r.str()
	default:
		r.bare = true
		key = r.bareKey()
	}
	if r.depth <= maxPath {
		r.path[r.depth-1].key = key
	}
	if r.Peek() != ':' {
		r.fail("expected ':' after a member name")
		return nil, false
	}
	r.pos++
	return key, true
}

func isBareKeyByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' ||
		c == '_' || c == '$' || c == '-' || c == '+' || c == '.'
}

func (r *Reader) bareKey() []byte {
	start := r.pos
	for r.pos < len(r.data) && isBareKeyByte(r.data[r.pos]) {
		r.pos++
	}
	if r.pos == start {
		r.fail("expected a member name")
		return nil
	}
	return r.data[start:r.pos]
}

// nextItem consumes the ',' before the next element of the current array,
// or the closing ']' (false).
func (r *Reader) nextItem() bool {
	c := r.Peek()
	if r.first {
		r.first = false
	} else {
		switch c {
		case ',':
			r.pos++
			c = r.Peek()
		case ']':
		default:
			r.fail("expected ',' or ']' in an array")
			return false
		}
	}
	switch c {
	case ']':
		r.pos++
		r.depth--
		return false
	case 0:
		r.fail("unterminated array")
		return false
	}
	if r.depth <= maxPath {
		r.path[r.depth-1].index++
	}
	return true
}

// str reads a string value (double- or single-quoted) and returns its
// unescaped bytes.
func (r *Reader) str() []byte {
	q := r.Peek()
	if q != '"' && q != '\'' {
		r.fail("expected a string")
		return nil
	}
	r.pos++
	start := r.pos
	for i, c := range r.data[start:] {
		if c == q {
			r.pos = start + i + 1
			return r.data[start : start+i]
		}
		if c == '\\' {
			return r.unescape(start, start+i, q)
		}
	}
	r.pos = len(r.data)
	r.fail("unterminated string")
	return nil
}

// unescape continues reading a string whose first escape is at i, writing the
// unescaped bytes into the scratch buffer.
func (r *Reader) unescape(start, i int, q byte) []byte {
	out := len(r.scratch)
	r.scratch = append(r.scratch, r.data[start:i]...)
	for i < len(r.data) {
		c := r.data[i]
		if c == q {
			r.pos = i + 1
			return r.scratch[out:len(r.scratch):len(r.scratch)]
		}
		if c != '\\' {
			r.scratch = append(r.scratch, c)
			i++
			continue
		}
		if i+1 >= len(r.data) {
			break
		}
		e := r.data[i+1]
		i += 2
		switch e {
		case '"', '\'', '\\', '/':
			r.scratch = append(r.scratch, e)
		case 'b':
			r.scratch = append(r.scratch, '\b')
		case 'f':
			r.scratch = append(r.scratch, '\f')
		case 'n':
			r.scratch = append(r.scratch, '\n')
		case 'r':
			r.scratch = append(r.scratch, '\r')
		case 't':
			r.scratch = append(r.scratch, '\t')
		case 'u':
			ch, ok := hex4(r.data, i)
			if !ok {
				r.pos = i
				r.fail("malformed \\u escape")
				return nil
			}
			i += 4
			if utf16.IsSurrogate(ch) {
				if lo, ok := hex4(r.data, i+2); ok && r.data[i] == '\\' && r.data[i+1] == 'u' {
					if dec := utf16.DecodeRune(ch, lo); dec != utf8.RuneError {
						ch = dec
						i += 6
					}
				}
			}
			r.scratch = utf8.AppendRune(r.scratch, ch)
		default:
			r.pos = i - 1
			r.fail("invalid escape '\\%c'", e)
			return nil
		}
	}
	r.pos = len(r.data)
	r.fail("unterminated string")
	return nil
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var v rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// Scalar reads any non-container value and returns its text the way fastjson
// fills a String field: a string's contents, or the literal text of a number
// or boolean. null yields isNull and no text.
func (r *Reader) Scalar() (text []byte, isNull bool) {
	switch c := r.Peek(); {
	case c == '"' || c == '\'':
		return r.str(), false
	case c == 'n':
		if r.literal("null") {
			return nil, true
		}
	case c == 't':
		if r.literal("true") {
			return r.data[r.pos-4 : r.pos], false
		}
	case c == 'f':
		if r.literal("false") {
			return r.data[r.pos-5 : r.pos], false
		}
	case c == '-' || c >= '0' && c <= '9':
		return r.number(), false
	}
	r.fail("expected a string, number or boolean")
	return nil, false
}

func (r *Reader) number() []byte {
	start := r.pos
	if r.data[r.pos] == '-' {
		r.pos++
	}
	digits := r.pos
	for r.pos < len(r.data) {
		c := r.data[r.pos]
		if c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' {
			r.pos++
			continue
		}
		break
	}
	if r.pos == digits {
		r.fail("malformed number")
		return nil
	}
	return r.data[start:r.pos]
}

// Int64 reads an integer given as a number or as a string holding one
// (fastjson converts both); null reads as 0.
func (r *Reader) Int64() int64 {
	at := r.pos
	text, isNull := r.Scalar()
	if isNull {
		return 0
	}
	v, ok := ParseInt(text)
	if !ok {
		r.pos = at
		r.fail("%q is not an integer", text)
		return 0
	}
	return v
}

// Int32 reads an integer that must fit 32 bits.
func (r *Reader) Int32() int32 {
	at := r.pos
	v := r.Int64()
	if int64(int32(v)) != v {
		r.pos = at
		r.fail("%d does not fit 32 bits", v)
		return 0
	}
	return int32(v)
}

// Bool reads a boolean given as a literal or a string ("true", any case);
// null reads as false.
func (r *Reader) Bool() bool {
	text, _ := r.Scalar()
	return ParseBool(text)
}

// ParseInt parses a decimal integer without allocating.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	neg := b[0] == '-'
	if neg || b[0] == '+' {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<63-d)/10 {
			if neg && v*10+d == 1<<63 {
				v = 1 << 63
				continue
			}
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

// ParseBool is Java's Boolean.parseBoolean: "true" in any case is true,
// everything else false.
func ParseBool(b []byte) bool {
	return len(b) == 4 && b[0]|0x20 == 't' && b[1]|0x20 == 'r' && b[2]|0x20 == 'u' && b[3]|0x20 == 'e'
}

// Skip consumes one value of any kind.
func (r *Reader) Skip() {
	switch r.Peek() {
	case '{':
		for range r.Members() {
			r.Skip()
		}
	case '[':
		for range r.Items() {
			r.Skip()
		}
	default:
		r.Scalar()
	}
}

// Rest returns the input from the next non-blank byte on, for a decoder
// that recognises a value's exact bytes faster than it can read them
// member by member; Advance then consumes what it recognised.
func (r *Reader) Rest() []byte {
	r.skipWS()
	return r.data[r.pos:]
}

// Advance consumes n bytes of Rest, which must be one whole value.
func (r *Reader) Advance(n int) { r.pos += n }

// Raw consumes one value and returns its undecoded bytes.
func (r *Reader) Raw() []byte {
	r.skipWS()
	start := r.pos
	r.Skip()
	if r.err != nil {
		return nil
	}
	return r.data[start:r.pos]
}

// Quote renders untrusted input for an error message: Go-quoted and cut to
// a readable length.
func Quote(b []byte) string {
	const limit = 64
	if len(b) > limit {
		return strconv.Quote(string(b[:limit])) + "..."
	}
	return strconv.Quote(string(b))
}
