package kvconfig

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// fileFormat is Java's KVConfigSerializeWrapper. Values are pointers because
// a hand-edited or old file may hold null, which Java reads as "no value";
// a plain string would turn it into "".
type fileFormat struct {
	ConfigTable map[string]map[string]*string `json:"configTable"`
}

// decodeFile parses a kvConfig.json written by Java (fastjson) or by this
// package. Null namespaces and null values are dropped, as they are
// invisible in Java too. An empty or blank file is an empty table: Java's
// in-place rewrite can leave one after a crash, and Java loads it as empty.
// Strings come out as valid UTF-8 (encoding/json replaces invalid bytes).
func decodeFile(data []byte) (map[string]map[string]string, error) {
	table := map[string]map[string]string{}
	if len(bytes.TrimSpace(data)) == 0 {
		return table, nil
	}
	var f fileFormat
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	for ns, kv := range f.ConfigTable {
		if kv == nil {
			continue
		}
		m := make(map[string]string, len(kv))
		for k, v := range kv {
			if v != nil {
				m[k] = *v
			}
		}
		table[ns] = m
	}
	return table, nil
}

// jsonWriter writes JSON the way fastjson writes this file: compact, raw
// UTF-8, no HTML escaping. encoding/json replaces every invalid UTF-8 byte by
// U+FFFD; validUTF8 applies the same rule to keys and values before they are
// stored, so memory and file always agree.
type jsonWriter struct {
	buf bytes.Buffer
	enc *json.Encoder
}

func newJSONWriter() *jsonWriter {
	w := &jsonWriter{}
	w.enc = json.NewEncoder(&w.buf)
	w.enc.SetEscapeHTML(false)
	return w
}

func (w *jsonWriter) raw(b ...byte) { w.buf.Write(b) }

func (w *jsonWriter) string(s string) {
	// Encoding a Go string cannot fail; Encode adds a newline to drop.
	_ = w.enc.Encode(s)
	w.buf.Truncate(w.buf.Len() - 1)
}

// object writes kv as a JSON object with sorted keys.
func (w *jsonWriter) object(kv map[string]string) {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	w.raw('{')
	for i, k := range keys {
		if i > 0 {
			w.raw(',')
		}
		w.string(k)
		w.raw(':')
		w.string(kv[k])
	}
	w.raw('}')
}

// encodeTable renders a namespace as the GET_KVLIST_BY_NAMESPACE body,
// Java's KVTable: {"table":{...}}.
func encodeTable(kv map[string]string) []byte {
	w := newJSONWriter()
	w.raw([]byte(`{"table":`)...)
	w.object(kv)
	w.raw('}')
	return w.buf.Bytes()
}

// encodeFile renders the whole table as kvConfig.json:
// {"configTable":{"NS":{"k":"v"}}}, namespaces and keys sorted, no trailing
// newline (like fastjson).
func encodeFile(table map[string]map[string]string) []byte {
	names := make([]string, 0, len(table))
	for ns := range table {
		names = append(names, ns)
	}
	slices.Sort(names)
	w := newJSONWriter()
	w.raw([]byte(`{"configTable":{`)...)
	for i, ns := range names {
		if i > 0 {
			w.raw(',')
		}
		w.string(ns)
		w.raw(':')
		w.object(table[ns])
	}
	w.raw('}', '}')
	return w.buf.Bytes()
}

// validUTF8 replaces each byte that is not part of valid UTF-8 by U+FFFD,
// byte for byte like encoding/json, so a stored string survives a reload
// unchanged. Keys and values can come from binary (ROCKETMQ) request headers,
// which carry raw bytes.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	out := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, s[i:i+size]...)
		}
		i += size
	}
	return string(out)
}
