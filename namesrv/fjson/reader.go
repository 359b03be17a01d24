// Package fjson reads and writes JSON the way Alibaba fastjson does, which is
// what every Java RocketMQ component puts on the wire.
//
// fastjson output is not always standard JSON: maps with integer keys are
// written with bare keys ({0:"10.0.0.1:10911"}), and its reader accepts more
// than the standard allows. The Reader here is as lenient as the Java side
// needs (bare keys, single-quoted strings, trailing commas, numbers or
// booleans where strings are expected) and never panics on any input; the
// writer functions produce both dialects the NameServer must answer in
// (namesrv-protocol.md §2.4, §6 items 11-16).
//
// The Reader is a pull parser without reflection or per-value allocation, so
// it serves both the hot header path and the multi-megabyte registration
// bodies.
package fjson

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds the nesting of arrays and objects. Registration bodies nest
// five levels deep; the bound keeps hostile input (a frame full of '[') from
// costing more than a small, fixed amount of stack.
const MaxDepth = 128

// SyntaxError reports malformed input and where it was found.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("json: %s at offset %d", e.Msg, e.Offset)
}

// ErrSyntax is matched by every *SyntaxError through errors.Is.
var ErrSyntax = errors.New("json syntax error")

// Is makes errors.Is(err, ErrSyntax) true for syntax errors.
func (e *SyntaxError) Is(target error) bool { return target == ErrSyntax }

// Reader is a pull parser over one JSON document held in memory.
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
}

// NewReader returns a Reader positioned at the start of data.
func NewReader(data []byte) *Reader {
	r := &Reader{}
	r.Reset(data)
	return r
}

// Reset repositions the Reader at the start of data, keeping its scratch
// buffer for reuse.
func (r *Reader) Reset(data []byte) {
	r.data = data
	r.pos = 0
	r.depth = 0
	r.first = false
	r.scratch = r.scratch[:0]
}

// Size is the length of the document.
func (r *Reader) Size() int { return len(r.data) }

// Offset is the position of the next unread byte.
func (r *Reader) Offset() int { return r.pos }

func (r *Reader) errorf(format string, args ...any) error {
	return &SyntaxError{Offset: r.pos, Msg: fmt.Sprintf(format, args...)}
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

// Peek returns the next non-blank byte without consuming it, or 0 at the end.
func (r *Reader) Peek() byte {
	r.skipWS()
	if r.pos >= len(r.data) {
		return 0
	}
	return r.data[r.pos]
}

// End checks that nothing but whitespace follows the document.
func (r *Reader) End() error {
	if r.Peek() != 0 {
		return r.errorf("unexpected %q after the document", r.data[r.pos])
	}
	return nil
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

// BeginObject consumes the '{' that opens an object.
func (r *Reader) BeginObject() error {
	if r.Peek() != '{' {
		return r.errorf("expected an object")
	}
	return r.enter()
}

// BeginArray consumes the '[' that opens an array.
func (r *Reader) BeginArray() error {
	if r.Peek() != '[' {
		return r.errorf("expected an array")
	}
	return r.enter()
}

func (r *Reader) enter() error {
	if r.depth >= MaxDepth {
		return r.errorf("nesting deeper than %d", MaxDepth)
	}
	r.depth++
	r.pos++
	r.first = true
	return nil
}

// NextKey returns the next member name of the current object and consumes
// the ':' after it; ok is false once the closing '}' has been consumed.
// Keys may be quoted, single-quoted or bare (fastjson writes integer map keys
// bare). The caller must consume the member's value before calling again.
func (r *Reader) NextKey() (key []byte, ok bool, err error) {
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
			return nil, false, r.errorf("expected ',' or '}' in an object")
		}
	}
	if c == '}' {
		r.pos++
		r.depth--
		return nil, false, nil
	}
	r.bare = c != '"' && c != '\''
	switch c {
	case '"', '\'':
		key, err = r.String()
	case 0:
		return nil, false, r.errorf("unterminated object")
	default:
		key, err = r.bareKey()
	}
	if err != nil {
		return nil, false, err
	}
	if r.Peek() != ':' {
		return nil, false, r.errorf("expected ':' after a member name")
	}
	r.pos++
	return key, true, nil
}

func isBareKeyByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' ||
		c == '_' || c == '$' || c == '-' || c == '+' || c == '.'
}

func (r *Reader) bareKey() ([]byte, error) {
	start := r.pos
	for r.pos < len(r.data) && isBareKeyByte(r.data[r.pos]) {
		r.pos++
	}
	if r.pos == start {
		return nil, r.errorf("expected a member name")
	}
	return r.data[start:r.pos], nil
}

// More reports whether the current array has another element, consuming the
// separating ',' or the closing ']'.
func (r *Reader) More() (bool, error) {
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
			return false, r.errorf("expected ',' or ']' in an array")
		}
	}
	switch c {
	case ']':
		r.pos++
		r.depth--
		return false, nil
	case 0:
		return false, r.errorf("unterminated array")
	}
	return true, nil
}

// String reads a string value (double- or single-quoted) and returns its
// unescaped bytes.
func (r *Reader) String() ([]byte, error) {
	q := r.Peek()
	if q != '"' && q != '\'' {
		return nil, r.errorf("expected a string")
	}
	r.pos++
	start := r.pos
	for i, c := range r.data[start:] {
		if c == q {
			r.pos = start + i + 1
			return r.data[start : start+i], nil
		}
		if c == '\\' {
			return r.unescape(start, start+i, q)
		}
	}
	r.pos = len(r.data)
	return nil, r.errorf("unterminated string")
}

// unescape continues reading a string whose first escape is at i, writing the
// unescaped bytes into the scratch buffer.
func (r *Reader) unescape(start, i int, q byte) ([]byte, error) {
	out := len(r.scratch)
	r.scratch = append(r.scratch, r.data[start:i]...)
	for i < len(r.data) {
		c := r.data[i]
		if c == q {
			r.pos = i + 1
			return r.scratch[out:len(r.scratch):len(r.scratch)], nil
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
				return nil, r.errorf("malformed \\u escape")
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
			return nil, r.errorf("invalid escape '\\%c'", e)
		}
	}
	r.pos = len(r.data)
	return nil, r.errorf("unterminated string")
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
// or boolean. null yields isNull.
func (r *Reader) Scalar() (text []byte, isNull bool, err error) {
	switch c := r.Peek(); {
	case c == '"' || c == '\'':
		text, err = r.String()
		return text, false, err
	case c == 'n':
		if r.literal("null") {
			return nil, true, nil
		}
	case c == 't':
		if r.literal("true") {
			return r.data[r.pos-4 : r.pos], false, nil
		}
	case c == 'f':
		if r.literal("false") {
			return r.data[r.pos-5 : r.pos], false, nil
		}
	case c == '-' || c >= '0' && c <= '9':
		return r.number()
	}
	return nil, false, r.errorf("expected a string, number or boolean")
}

func (r *Reader) number() ([]byte, bool, error) {
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
		return nil, false, r.errorf("malformed number")
	}
	return r.data[start:r.pos], false, nil
}

// Int64 reads an integer given as a number or as a string holding one
// (fastjson converts both); null reads as 0.
func (r *Reader) Int64() (int64, error) {
	at := r.pos
	text, isNull, err := r.Scalar()
	if err != nil {
		return 0, err
	}
	if isNull {
		return 0, nil
	}
	v, ok := ParseInt(text)
	if !ok {
		r.pos = at
		return 0, r.errorf("%q is not an integer", text)
	}
	return v, nil
}

// Int32 reads an integer that must fit 32 bits.
func (r *Reader) Int32() (int32, error) {
	at := r.pos
	v, err := r.Int64()
	if err != nil {
		return 0, err
	}
	if int64(int32(v)) != v {
		r.pos = at
		return 0, r.errorf("%d does not fit 32 bits", v)
	}
	return int32(v), nil
}

// Bool reads a boolean given as a literal or a string ("true", any case);
// null reads as false.
func (r *Reader) Bool() (bool, error) {
	text, isNull, err := r.Scalar()
	if err != nil || isNull {
		return false, err
	}
	return ParseBool(text), nil
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
func (r *Reader) Skip() error {
	switch r.Peek() {
	case '{':
		if err := r.BeginObject(); err != nil {
			return err
		}
		for {
			_, ok, err := r.NextKey()
			if err != nil || !ok {
				return err
			}
			if err := r.Skip(); err != nil {
				return err
			}
		}
	case '[':
		if err := r.BeginArray(); err != nil {
			return err
		}
		for {
			ok, err := r.More()
			if err != nil || !ok {
				return err
			}
			if err := r.Skip(); err != nil {
				return err
			}
		}
	}
	_, _, err := r.Scalar()
	return err
}

// Raw consumes one value and returns its undecoded bytes.
func (r *Reader) Raw() ([]byte, error) {
	r.skipWS()
	start := r.pos
	if err := r.Skip(); err != nil {
		return nil, err
	}
	return r.data[start:r.pos], nil
}

// Kind classifies a Value.
type Kind uint8

// The kinds of JSON values.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

// Value is a decoded JSON value kept for passing through, such as the
// static-topic mapping infos a broker registers and clients read back.
type Value struct {
	Kind    Kind
	Text    string // a string's contents, or a number's or boolean's literal
	Items   []Value
	Members []Member
}

// Member is one name/value pair of an object. Bare records that the name was
// written without quotes (a fastjson integer map key), so that it can be
// written back the same way in the legacy dialect.
type Member struct {
	Key   string
	Bare  bool
	Value Value
}

// Value reads any value into a tree.
func (r *Reader) Value() (Value, error) {
	switch r.Peek() {
	case '{':
		if err := r.BeginObject(); err != nil {
			return Value{}, err
		}
		v := Value{Kind: Object}
		for {
			key, ok, err := r.NextKey()
			if err != nil {
				return Value{}, err
			}
			if !ok {
				return v, nil
			}
			m := Member{Key: string(key), Bare: r.bare}
			if m.Value, err = r.Value(); err != nil {
				return Value{}, err
			}
			v.Members = append(v.Members, m)
		}
	case '[':
		if err := r.BeginArray(); err != nil {
			return Value{}, err
		}
		v := Value{Kind: Array}
		for {
			ok, err := r.More()
			if err != nil {
				return Value{}, err
			}
			if !ok {
				return v, nil
			}
			item, err := r.Value()
			if err != nil {
				return Value{}, err
			}
			v.Items = append(v.Items, item)
		}
	}
	text, isNull, err := r.Scalar()
	switch {
	case err != nil:
		return Value{}, err
	case isNull:
		return Value{Kind: Null}, nil
	}
	v := Value{Text: string(text), Kind: Number}
	switch c := r.data[r.pos-1]; {
	case c == '"' || c == '\'':
		v.Kind = String
	case text[0] == 't' || text[0] == 'f':
		v.Kind = Bool
	}
	return v, nil
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
