package kvdeclared

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

func TestDecode(t *testing.T) {
	good := `{"policy":"Owned","configTable":{"ORDER_TOPIC_CONFIG":{"T":"broker-a:4"}},"removed":{"NS":["old"]}}`
	f, err := Decode([]byte(good + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := &peerstatus.KVFile{Policy: "Owned", ConfigTable: map[string]map[string]string{"ORDER_TOPIC_CONFIG": {"T": "broker-a:4"}},
		Removed: map[string][]string{"NS": {"old"}}}
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("decoded %+v", f)
	}
	// What the operator renders decodes to what it rendered.
	enc, _ := want.Encode()
	if f, err := Decode(enc); err != nil || !reflect.DeepEqual(f, want) {
		t.Fatalf("round trip: %+v, %v", f, err)
	}
	if f, err := Decode([]byte(`{"policy":"Additive","configTable":null}`)); err != nil || f.Policy != "Additive" || f.ConfigTable != nil {
		t.Fatalf("an empty declaration: %+v, %v", f, err)
	}
	if f, err := Decode([]byte(`{"policy":"Exclusive"}`)); err != nil || f.Policy != peerstatus.PolicyExclusive {
		t.Fatalf("an Exclusive declaration: %+v, %v", f, err)
	}

	tests := []struct {
		name, file, want string
	}{
		{"empty", "", "empty"},
		{"blank", " \n", "empty"},
		{"not JSON", "policy: Owned", "not valid JSON"},
		{"truncated", `{"policy":"Owned","configTable":{`, "not valid JSON"},
		{"array", `[]`, "not valid JSON"},
		{"unknown field", `{"policy":"Owned","configs":{}}`, `unknown field "configs"`},
		{"trailing data", `{"policy":"Owned"} {}`, "data after"},
		{"no policy", `{"configTable":{}}`, "no policy"},
		{"bad policy", `{"policy":"owned"}`, `policy "owned"`},
		{"value not a string", `{"policy":"Owned","configTable":{"NS":{"k":1}}}`, "not valid JSON"},
		{"empty namespace", `{"policy":"Owned","configTable":{"":{"k":"v"}}}`, "empty namespace"},
		{"empty key", `{"policy":"Owned","configTable":{"NS":{"":"v"}}}`, "empty key"},
		{"empty removed namespace", `{"policy":"Owned","removed":{"":["k"]}}`, "empty namespace"},
		{"empty removed key", `{"policy":"Owned","removed":{"NS":[""]}}`, "empty one"},
		{"declared and removed", `{"policy":"Additive","configTable":{"NS":{"k":"v"}},"removed":{"NS":["k"]}}`, "both declared and removed"},
		{"too large", `{"policy":"Owned","configTable":{"NS":{"k":"` + strings.Repeat("x", MaxFileSize) + `"}}}`, "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Decode([]byte(tt.file))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode = %+v, %v; want an error mentioning %q", f, err, tt.want)
			}
		})
	}
}

// FuzzDecodeKVFile: Decode never panics, and what it accepts re-encodes to
// a file that decodes to the same declaration.
func FuzzDecodeKVFile(f *testing.F) {
	f.Add([]byte(`{"policy":"Owned","configTable":{"ORDER_TOPIC_CONFIG":{"T":"broker-a:4"}},"removed":{"NS":["old"]}}`))
	f.Add([]byte(`{"policy":"Additive","configTable":{"NS":{"k":"v","\u00e9":"\ud800"}}}`))
	f.Add([]byte(`{"policy":"Owned","configTable":{"NS":null},"removed":null}`))
	f.Add([]byte(`{"policy":"Owned"} x`))
	f.Fuzz(func(t *testing.T, data []byte) {
		decl, err := Decode(data)
		if err != nil {
			return
		}
		enc, err := decl.Encode()
		if err != nil {
			t.Fatalf("encode %+v: %v", decl, err)
		}
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("re-encoded %s does not decode: %v", enc, err)
		}
		enc2, _ := again.Encode()
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the declaration:\n%s\n%s", enc, enc2)
		}
	})
}
