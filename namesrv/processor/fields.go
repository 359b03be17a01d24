package processor

import (
	"fmt"

	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
)

// fieldError is a request the processor refuses because of its header
// fields; the client gets the message as the remark. Java would fail later
// with an exception text; a plain sentence names what is wrong.
type fieldError struct{ msg string }

func (e *fieldError) Error() string { return e.msg }

// fields reads typed values out of a request's extFields (§1.10).
type fields struct{ cmd *remoting.Command }

func (f fields) string(key string) string {
	v, _ := f.cmd.ExtValue(key)
	return string(v)
}

// stringOrNull renders an absent field as Java prints a null String.
func (f fields) stringOrNull(key string) string {
	if v, ok := f.cmd.ExtValue(key); ok {
		return string(v)
	}
	return "null"
}

func (f fields) required(key string) (string, error) {
	v, ok := f.cmd.ExtValue(key)
	if !ok {
		return "", &fieldError{fmt.Sprintf("missing request header field %s", key)}
	}
	return string(v), nil
}

// requiredAll reads several required fields, in order.
func (f fields) requiredAll(keys ...string) ([]string, error) {
	out := make([]string, len(keys))
	for i, k := range keys {
		v, err := f.required(k)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// int64 parses an optional integer field; absent yields def.
func (f fields) int64(key string, def int64) (int64, error) {
	v, ok := f.cmd.ExtValue(key)
	if !ok {
		return def, nil
	}
	n, ok := fjson.ParseInt(v)
	if !ok {
		return 0, &fieldError{fmt.Sprintf("request header field %s: %s is not an integer", key, fjson.Quote(v))}
	}
	return n, nil
}

func (f fields) requiredInt64(key string) (int64, error) {
	if _, ok := f.cmd.ExtValue(key); !ok {
		return 0, &fieldError{fmt.Sprintf("missing request header field %s", key)}
	}
	return f.int64(key, 0)
}

// bool is Java's Boolean.parseBoolean of an optional field.
func (f fields) bool(key string) bool {
	v, _ := f.cmd.ExtValue(key)
	return fjson.ParseBool(v)
}
