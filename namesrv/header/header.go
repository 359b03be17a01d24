// Package header decodes the request headers of the NameServer's request
// codes: one struct per header, named after the code, as Java's
// *RequestHeader classes (RegisterBrokerRequestHeader, ...) and franz-go's
// kmsg requests are. Each is decoded once, by its Decode, from a command's
// extFields, where every typed field travels as a string
// (docs/protocol.md#header-fields).
//
// Required fields and integers are checked here and nowhere else, so a
// missing or malformed field gets the same answer whatever the code: an
// *Error, which the processor sends back as a SYSTEM_ERROR remark. Java
// only logs such fields and usually fails later with an exception text
// (docs/compatibility.md).
package header

import (
	"fmt"

	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
)

// Error is a request refused for its header fields, or for a body its code
// cannot do without. The client gets Error() as the remark.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// String is a field that may be absent, which Java reads as null.
type String struct {
	Value string
	Set   bool
}

// OrNull is the field as Java prints it: "null" when absent.
func (s String) OrNull() string {
	if s.Set {
		return s.Value
	}
	return "null"
}

// fields reads typed values out of a command's extFields. Like fjson.Reader
// it keeps the first error; every field is still read, so a header holds
// whatever did decode.
type fields struct {
	cmd *remoting.Command
	err error
}

func (f *fields) fail(format string, args ...any) {
	if f.err == nil {
		f.err = &Error{fmt.Sprintf(format, args...)}
	}
}

// string reads an optional field; absent reads as "".
func (f *fields) string(key string) string {
	v, _ := f.cmd.ExtValue(key)
	return string(v)
}

func (f *fields) optional(key string) String {
	v, ok := f.cmd.ExtValue(key)
	return String{Value: string(v), Set: ok}
}

func (f *fields) required(key string) string {
	v, ok := f.cmd.ExtValue(key)
	if !ok {
		f.fail("missing request header field %s", key)
	}
	return string(v)
}

// int64 reads an optional integer; absent reads as 0.
func (f *fields) int64(key string) int64 {
	v, ok := f.cmd.ExtValue(key)
	if !ok {
		return 0
	}
	n, ok := fjson.ParseInt(v)
	if !ok {
		f.fail("request header field %s: %s is not an integer", key, fjson.Quote(v))
	}
	return n
}

func (f *fields) requiredInt64(key string) int64 {
	if _, ok := f.cmd.ExtValue(key); !ok {
		f.fail("missing request header field %s", key)
		return 0
	}
	return f.int64(key)
}

// bool is Java's Boolean.parseBoolean of an optional field.
func (f *fields) bool(key string) bool {
	v, _ := f.cmd.ExtValue(key)
	return fjson.ParseBool(v)
}

func (f *fields) has(key string) bool {
	_, ok := f.cmd.ExtValue(key)
	return ok
}
