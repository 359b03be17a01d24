package fjson

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// readAll decodes a document into a Value and checks nothing follows it.
func readAll(t testing.TB, doc string) (Value, error) {
	t.Helper()
	r := NewReader([]byte(doc))
	v, err := r.Value()
	if err != nil {
		return v, err
	}
	return v, r.End()
}

func TestReaderAcceptsWhatFastjsonWrites(t *testing.T) {
	tests := []struct {
		name, in, legacy, standard string
	}{
		{"standard object", `{"a":1,"b":"x"}`, `{"a":1,"b":"x"}`, `{"a":1,"b":"x"}`},
		{"bare integer keys", `{0:"10.0.0.1:10911",1:"10.0.0.2:10911"}`, `{0:"10.0.0.1:10911",1:"10.0.0.2:10911"}`, `{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"}`},
		{"whitespace everywhere", " { \"a\" : [ 1 , 2 ] ,\n\t\"b\" : null } ", `{"a":[1,2],"b":null}`, `{"a":[1,2],"b":null}`},
		{"single quotes", `{'a':'it''s'}`, ``, ``},
		{"trailing commas", `{"a":[1,2,],}`, `{"a":[1,2]}`, `{"a":[1,2]}`},
		{"escapes", `"a\"b\\c\/d\n\u00e9\ud83d\ude00"`, "\"a\\\"b\\\\c/d\\né😀\"", `"a\"b\\c\/d\n\u00E9\uD83D\uDE00"`},
		{"nested", `{"currIdMap":{0:0,1:1},"epoch":1700000000000,"dirty":false}`, `{"currIdMap":{0:0,1:1},"epoch":1700000000000,"dirty":false}`, `{"currIdMap":{"0":0,"1":1},"epoch":1700000000000,"dirty":false}`},
		{"negative and exponent", `[-1,2.5e3,true,false]`, `[-1,2.5e3,true,false]`, `[-1,2.5e3,true,false]`},
		{"empty containers", `{"a":{},"b":[]}`, `{"a":{},"b":[]}`, `{"a":{},"b":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := readAll(t, tt.in)
			if tt.legacy == "" {
				if err == nil {
					t.Fatalf("accepted %q", tt.in)
				}
				return
			}
			if err != nil {
				t.Fatalf("read %q: %v", tt.in, err)
			}
			if got := string(AppendValue(nil, &v, Legacy)); got != tt.legacy {
				t.Errorf("legacy = %s, want %s", got, tt.legacy)
			}
			if got := string(AppendValue(nil, &v, Standard)); got != tt.standard {
				t.Errorf("standard = %s, want %s", got, tt.standard)
			}
		})
	}
}

func TestSingleQuotedStrings(t *testing.T) {
	v, err := readAll(t, `{'a':'b"c'}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(AppendValue(nil, &v, Legacy)); got != `{"a":"b\"c"}` {
		t.Errorf("got %s", got)
	}
}

func TestReaderRejectsMalformedInput(t *testing.T) {
	tests := map[string]string{
		"empty":             ``,
		"unterminated obj":  `{"a":1`,
		"unterminated arr":  `[1,2`,
		"unterminated str":  `"abc`,
		"missing colon":     `{"a" 1}`,
		"missing comma":     `{"a":1 "b":2}`,
		"bad escape":        `"\x"`,
		"short unicode":     `"\u12"`,
		"garbage":           `@`,
		"bad literal":       `nul`,
		"lone minus":        `-`,
		"trailing garbage":  `{} x`,
		"key without value": `{"a":}`,
		"array as key":      `{[]:1}`,
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := readAll(t, in)
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("read %q: err = %v, want a syntax error", in, err)
			}
		})
	}
}

func TestDepthIsBounded(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	if _, err := readAll(t, deep); err == nil || !strings.Contains(err.Error(), "nesting") {
		t.Fatalf("err = %v, want a nesting error", err)
	}
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if _, err := readAll(t, ok); err != nil {
		t.Fatalf("depth %d refused: %v", MaxDepth, err)
	}
}

func TestTypedReads(t *testing.T) {
	r := NewReader([]byte(`{"n":"42","b":"TRUE","i":-7,"big":9223372036854775807,"min":-9223372036854775808,"nul":null}`))
	got := map[string]any{}
	for k := range r.Members() {
		switch string(k) {
		case "b":
			got["b"] = r.Bool()
		default:
			got[string(k)] = r.Int64()
		}
	}
	if err := r.End(); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"n": int64(42), "b": true, "i": int64(-7), "big": int64(9223372036854775807), "min": int64(-9223372036854775808), "nul": int64(0)}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

func TestIntErrors(t *testing.T) {
	for _, in := range []string{`"abc"`, `9223372036854775808`, `1.5`, `{}`, `true`} {
		r := NewReader([]byte(in))
		if v := r.Int64(); r.Err() == nil || v != 0 {
			t.Errorf("Int64(%s) = %d, err %v", in, v, r.Err())
		}
	}
	r := NewReader([]byte(`4294967296`))
	if r.Int32(); r.Err() == nil {
		t.Error("Int32 accepted a 33-bit value")
	}
}

// TestErrorsAreSticky: after the first error every read yields a zero value,
// the loops end, and Err and End report that first error.
func TestErrorsAreSticky(t *testing.T) {
	r := NewReader([]byte(`{"a":"x","b":2,"c":[1,2]}`))
	var keys []string
	var b int64
	for k := range r.Members() {
		keys = append(keys, string(k))
		switch string(k) {
		case "a":
			r.Int32()
		case "b":
			b = r.Int64()
		default:
			r.Skip()
		}
	}
	first := r.Err()
	if first == nil || !strings.Contains(first.Error(), `"x" is not an integer`) {
		t.Fatalf("err = %v", first)
	}
	if len(keys) != 1 || b != 0 {
		t.Fatalf("the loop went on after the error: keys %v, b %d", keys, b)
	}
	if r.Int64() != 0 || r.Bool() || r.Peek() != 0 || r.Null() || r.Raw() != nil {
		t.Fatal("a read after the error returned something")
	}
	for range r.Items() {
		t.Fatal("Items yielded after the error")
	}
	if text, isNull := r.Scalar(); text != nil || isNull {
		t.Fatal("Scalar returned something after the error")
	}
	if err := r.End(); err != first {
		t.Fatalf("End = %v, want the first error %v", err, first)
	}
	r.Reset([]byte(`{}`))
	for range r.Members() {
	}
	if err := r.End(); err != nil {
		t.Fatalf("Reset kept the error: %v", err)
	}
}

// TestErrorsNameTheirPath: a syntax error says which member or element it
// was reading, so decoders need not wrap each field's error.
func TestErrorsNameTheirPath(t *testing.T) {
	tests := []struct{ in, path string }{
		{`{"a":{"b":[1,{"c":"x"}]}}`, "a.b[1].c"},
		{`{"a":1,"b":"x"}`, "b"},
		{`[0,1,"x"]`, "[2]"},
		{`{0:{'k':"x"}}`, "0.k"},
		{`"x"`, ""},
		{`{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":"x"}}}}}}}}}`, "a.b.c.d.e.f.g.h..."},
	}
	for _, tt := range tests {
		r := NewReader([]byte(tt.in))
		readInts(r)
		var se *SyntaxError
		if !errors.As(r.Err(), &se) || se.Path != tt.path {
			t.Errorf("%s: err %v, want path %q", tt.in, r.Err(), tt.path)
		}
	}
	r := NewReader([]byte(`{"a":"x"}`))
	readInts(r)
	if got, want := r.Err().Error(), `json: "x" is not an integer at a (offset 5)`; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}

// TestFailIsADecodersError: a decoder's own error is kept like a syntax
// error, names where it was found and ends the reading.
func TestFailIsADecodersError(t *testing.T) {
	r := NewReader([]byte(`{"ids":{"x":"a","1":"b"}}`))
	var read []string
	for range r.Members() {
		for key := range r.Members() {
			if _, ok := ParseInt(key); !ok {
				r.Fail("%s is not an id", Quote(key))
			}
			s, _ := r.Scalar()
			read = append(read, string(s))
		}
	}
	if got, want := fmt.Sprint(r.End()), `json: "x" is not an id at ids.x (offset 12)`; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
	if len(read) != 1 || read[0] != "" {
		t.Errorf("read %q after the failure", read)
	}
	if !errors.Is(r.Err(), ErrSyntax) {
		t.Errorf("%v is not a syntax error", r.Err())
	}
	r.Fail("second")
	if !strings.Contains(r.Err().Error(), "is not an id") {
		t.Errorf("a later Fail replaced the first error: %v", r.Err())
	}
}

// readInts reads a document whose leaves must all be integers.
func readInts(r *Reader) {
	switch r.Peek() {
	case '{':
		for range r.Members() {
			readInts(r)
		}
	case '[':
		for range r.Items() {
			readInts(r)
		}
	default:
		r.Int64()
	}
}

func TestItemsYieldIndexes(t *testing.T) {
	r := NewReader([]byte(`[ "a", 'b' ,"c",]`))
	var got []string
	for i := range r.Items() {
		s, _ := r.Scalar()
		got = append(got, strconv.Itoa(i)+string(s))
	}
	if err := r.End(); err != nil || strings.Join(got, " ") != "0a 1b 2c" {
		t.Fatalf("got %v, err %v", got, err)
	}
}

func TestMembersNeedAnObject(t *testing.T) {
	for _, in := range []string{`[]`, `null`, `1`, ``} {
		r := NewReader([]byte(in))
		for range r.Members() {
			t.Fatalf("%s yielded a member", in)
		}
		if !errors.Is(r.Err(), ErrSyntax) {
			t.Errorf("%s: err %v, want a syntax error", in, r.Err())
		}
	}
}

func TestParseBoolIsJavas(t *testing.T) {
	for in, want := range map[string]bool{"true": true, "TRUE": true, "True": true, "false": false, "yes": false, "1": false, "": false, "truex": false} {
		if got := ParseBool([]byte(in)); got != want {
			t.Errorf("ParseBool(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestAppendStringDialects(t *testing.T) {
	tests := []struct{ in, legacy, standard string }{
		{`värde/&<"x">`, `"värde/&<\"x\">"`, `"v\u00E4rde\/&<\"x\">"`},
		{"tab\there\x01", `"tab\there\u0001"`, `"tab\there\u0001"`},
		{"emoji 😀", `"emoji 😀"`, `"emoji \uD83D\uDE00"`},
		{"bad \xff utf8", "\"bad \xff utf8\"", `"bad \uFFFD utf8"`},
	}
	for _, tt := range tests {
		if got := string(AppendString(nil, tt.in, Legacy)); got != tt.legacy {
			t.Errorf("legacy(%q) = %s, want %s", tt.in, got, tt.legacy)
		}
		if got := string(AppendString(nil, []byte(tt.in), Standard)); got != tt.standard {
			t.Errorf("standard(%q) = %s, want %s", tt.in, got, tt.standard)
		}
	}
}

func TestAppendIntKey(t *testing.T) {
	if got := string(AppendIntKey(nil, 10, Legacy)); got != "10:" {
		t.Errorf("legacy = %s", got)
	}
	if got := string(AppendIntKey(nil, 10, Standard)); got != `"10":` {
		t.Errorf("standard = %s", got)
	}
}

// FuzzReader checks that no input panics the reader and that whatever it
// accepts survives a write and a second read unchanged.
func FuzzReader(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{0:"x",1:"y"}`, `[1,"a",null,true,{'k':[]}]`, `"\u00e9\ud83d\ude00"`, `{"a":[1,2,],}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(data)
		v, err := r.Value()
		if err != nil {
			return
		}
		for _, d := range []Dialect{Legacy, Standard} {
			out := AppendValue(nil, &v, d)
			again, err := NewReader(out).Value()
			if err != nil {
				t.Fatalf("re-reading %s: %v", out, err)
			}
			if out2 := AppendValue(nil, &again, d); string(out2) != string(out) {
				t.Fatalf("not stable: %s then %s", out, out2)
			}
		}
		NewReader(data).Skip()
	})
}
