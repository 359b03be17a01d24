package fjson

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

// Value reads the next value into a tree and returns it with the Reader's
// error, so that one call decodes a whole document:
// fjson.NewReader(b).Value().
func (r *Reader) Value() (Value, error) {
	v := r.value()
	if r.err != nil {
		return Value{}, r.err
	}
	return v, nil
}

func (r *Reader) value() Value {
	switch r.Peek() {
	case '{':
		v := Value{Kind: Object}
		for key := range r.Members() {
			m := Member{Key: string(key), Bare: r.bare}
			m.Value = r.value()
			v.Members = append(v.Members, m)
		}
		return v
	case '[':
		v := Value{Kind: Array}
		for range r.Items() {
			v.Items = append(v.Items, r.value())
		}
		return v
	}
	text, isNull := r.Scalar()
	switch {
	case r.err != nil:
		return Value{}
	case isNull:
		return Value{Kind: Null}
	}
	v := Value{Text: string(text), Kind: Number}
	switch c := r.data[r.pos-1]; {
	case c == '"' || c == '\'':
		v.Kind = String
	case text[0] == 't' || text[0] == 'f':
		v.Kind = Bool
	}
	return v
}
