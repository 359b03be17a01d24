package kvconfig

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzLoadKV feeds arbitrary file content to the kvConfig.json decoder: it
// must never panic, and whatever it accepts must be written back as strict
// JSON that decodes to the same table.
func FuzzLoadKV(f *testing.F) {
	for _, seed := range []string{
		``, `null`, `{}`, `{"configTable":null}`,
		`{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicTest":"broker-a:4;broker-b:4"},"NS":{"k":"v"}}}`,
		`{"configTable":{"NS":{"k":null,"e":""},"N2":null}}`,
		`{"configTable":{"NS":{"u":"\u00e9\ud83d\ude00\/<&>","raw":"顺序 \"q\" \\"}}}`,
		`{"configTable":{"NS":{"k":1}}}`, `{"configTable":{"NS":{"k":"v"`, "{\"configTable\":{\"\xff\":{\"k\":\"\xfe\"}}}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		table, err := decodeFile(data)
		if err != nil {
			return
		}
		out := encodeFile(table)
		if !json.Valid(out) {
			t.Fatalf("encoded file is not JSON: %q", out)
		}
		again, err := decodeFile(out)
		if err != nil {
			t.Fatalf("cannot decode own output %q: %v", out, err)
		}
		if !reflect.DeepEqual(again, table) {
			t.Fatalf("round trip changed the table\n got %q\nwant %q", again, table)
		}
		for ns, kv := range table {
			var body struct {
				Table map[string]string `json:"table"`
			}
			if err := json.Unmarshal(encodeTable(kv), &body); err != nil || !reflect.DeepEqual(body.Table, kv) {
				t.Fatalf("KVTable of %q does not decode to its table: %v", ns, err)
			}
		}
	})
}
