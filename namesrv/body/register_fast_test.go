package body

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
)

// fullRead is the member-by-member read scanTopicConfig must agree with.
func fullRead(t *testing.T, data []byte) (TopicConfig, error) {
	t.Helper()
	r := fjson.NewReader(data)
	tc := TopicConfig{ReadQueueNums: defaultQueueNums, WriteQueueNums: defaultQueueNums, Perm: defaultPerm}
	readQueueFields(r, "topicName", &tc)
	return tc, r.End()
}

func TestScanTopicConfig(t *testing.T) {
	const java5 = `{"attributes":{},"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"T1","topicSysFlag":0,"writeQueueNums":4}`
	for _, tt := range []struct {
		name    string
		json    string
		scanned bool
	}{
		{"5.x broker", java5, true},
		{"4.9 broker", `{"order":true,"perm":7,"readQueueNums":16,"topicFilterType":"MULTI_TAG","topicName":"%RETRY%g","topicSysFlag":1,"writeQueueNums":16}`, true},
		{"negative flag", `{"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":-2,"writeQueueNums":8}`, true},
		{"attributes set", `{"attributes":{"+queue.type":"BatchCQ"},"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":8}`, false},
		{"escaped name", `{"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"T\u0031","topicSysFlag":0,"writeQueueNums":8}`, false},
		{"blanks", `{ "order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":8}`, false},
		{"other order", `{"perm":6,"order":false,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":8}`, false},
		{"missing field", `{"order":false,"perm":6,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":8}`, false},
		{"extra field", `{"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":8,"x":1}`, false},
		{"quoted number", `{"order":false,"perm":"6","readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":8}`, false},
		{"ten digits", `{"order":false,"perm":6,"readQueueNums":1234567890,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":8}`, false},
		{"null name", `{"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":null,"topicSysFlag":0,"writeQueueNums":8}`, false},
		{"cut short", java5[:len(java5)-3], false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var fast TopicConfig
			n, ok := scanTopicConfig([]byte(tt.json+`,"next":{}`), &fast)
			if ok != tt.scanned {
				t.Fatalf("scanned %v, want %v", ok, tt.scanned)
			}
			want, err := fullRead(t, []byte(tt.json))
			if ok {
				if n != len(tt.json) {
					t.Errorf("consumed %d bytes, want %d", n, len(tt.json))
				}
				if err != nil || !sameTopicConfig(fast, want) {
					t.Errorf("scan %+v, full read %+v (%v)", fast, want, err)
				}
			}
			// Through the decoder, either way, the result is the full read's.
			r := fjson.NewReader([]byte(tt.json))
			got := readTopicConfig(r, []byte("key"))
			if gotErr := r.End(); (gotErr != nil) != (err != nil) || err == nil && !sameTopicConfig(got, want) && want.Name != nil {
				t.Errorf("readTopicConfig %+v (%v), full read %+v (%v)", got, gotErr, want, err)
			}
		})
	}
}

func sameTopicConfig(a, b TopicConfig) bool {
	return bytes.Equal(a.Name, b.Name) && a.ReadQueueNums == b.ReadQueueNums && a.WriteQueueNums == b.WriteQueueNums &&
		a.Perm == b.Perm && a.TopicSysFlag == b.TopicSysFlag
}

// fullReadTable reads a topicConfigTable member by member, without the
// scanners.
func fullReadTable(t *testing.T, data []byte) ([]TopicConfig, error) {
	t.Helper()
	r := fjson.NewReader(data)
	var out []TopicConfig
	for key := range r.Members() {
		if r.Null() {
			continue
		}
		tc := TopicConfig{ReadQueueNums: defaultQueueNums, WriteQueueNums: defaultQueueNums, Perm: defaultPerm}
		readQueueFields(r, "topicName", &tc)
		if tc.Name == nil {
			tc.Name = bytes.Clone(key)
		}
		out = append(out, tc)
	}
	return out, r.End()
}

// FuzzScanTopicConfig checks that whatever the scanners accept, the full
// read accepts too, with the same fields and the same length: one topic
// config (scanTopicConfig), the members following a table's first
// (scanTopicEntries), and a compressed body's topic line (scanTopicLine
// against parseTopicLine).
func FuzzScanTopicConfig(f *testing.F) {
	f.Add([]byte(`{"attributes":{},"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"T1","topicSysFlag":0,"writeQueueNums":4}`))
	f.Add([]byte(`{"order":true,"perm":-7,"readQueueNums":016,"topicFilterType":"","topicName":"","topicSysFlag":1,"writeQueueNums":999999999}`))
	f.Add([]byte(`,"T1":{"attributes":{},"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"T1","topicSysFlag":0,"writeQueueNums":4},"T2":{"order":true,"perm":7,"readQueueNums":1,"topicFilterType":"MULTI_TAG","topicName":"T2","topicSysFlag":0,"writeQueueNums":4}}`))
	f.Add([]byte(`,"a\\":{"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"X","topicName":"b","topicSysFlag":0,"writeQueueNums":4}}`))
	f.Add([]byte("T-1 8 16 6 SINGLE_TAG {}"))
	f.Add([]byte("T 1 2 3 MULTI_TAG"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast TopicConfig
		if n, ok := scanTopicConfig(data, &fast); ok {
			want, err := fullRead(t, data[:n])
			if err != nil {
				t.Fatalf("scan accepted %q, the full read refuses it: %v", data[:n], err)
			}
			if !sameTopicConfig(fast, want) {
				t.Fatalf("%q: scan %+v, full read %+v", data[:n], fast, want)
			}
		}
		if scanTopicLine(data, &fast) {
			want, err := parseTopicLine(data)
			if err != nil || !sameTopicConfig(fast, want) {
				t.Fatalf("topic line %q: scan %+v, parse %+v (%v)", data, fast, want, err)
			}
		}
		n, topics := scanTopicEntries(data, nil)
		if n == 0 {
			return
		}
		table := append(append([]byte(`{"first":{}`), data[:n]...), '}')
		want, err := fullReadTable(t, table)
		if err != nil {
			t.Fatalf("entries scan accepted %q, the full read refuses it: %v", data[:n], err)
		}
		if len(want) != len(topics)+1 {
			t.Fatalf("%q: scanned %d topics, full read %d", data[:n], len(topics), len(want)-1)
		}
		for i := range topics {
			if !sameTopicConfig(topics[i], want[i+1]) {
				t.Fatalf("%q: topic %d scanned %+v, full read %+v", data[:n], i, topics[i], want[i+1])
			}
		}
	})
}

func TestScanTopicEntries(t *testing.T) {
	const (
		a = `"A":{"attributes":{},"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"A","topicSysFlag":0,"writeQueueNums":4}`
		b = `"B":{"order":true,"perm":7,"readQueueNums":16,"topicFilterType":"MULTI_TAG","topicName":"B","topicSysFlag":1,"writeQueueNums":16}`
		// The key is not the name: the name is read on its own.
		c = `"K":{"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"OTHER","topicName":"C","topicSysFlag":0,"writeQueueNums":8}`
	)
	for _, tt := range []struct {
		name    string
		in      string
		entries int // how many leading entries the scan takes
	}{
		{"Java's layout", "," + a + "," + b + "}", 2},
		{"key other than the name", "," + c + "," + a + "}", 2},
		{"escaped key", `,"A\u0041":` + a[4:] + "}", 0},
		{"blank before the key", ", " + a + "}", 0},
		{"null value", `,"N":null,` + a + "}", 0},
		{"stops at the first other member", "," + a + `,"X":{"perm":1},` + b + "}", 1},
		{"end of the table", "}", 0},
		{"cut short", "," + a[:len(a)-1], 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n, topics := scanTopicEntries([]byte(tt.in), nil)
			if len(topics) != tt.entries {
				t.Fatalf("scanned %d entries, want %d", len(topics), tt.entries)
			}
			// The scan stops before a member it leaves to the reader.
			if rest := tt.in[n:]; !strings.HasPrefix(rest, ",") && !strings.HasPrefix(rest, "}") && rest != "" {
				t.Fatalf("stopped inside a member: %q", rest)
			}
			// Whatever it scanned, the decoder's result is the full read's.
			table := `{"first":{}` + tt.in
			want, wantErr := fullReadTable(t, []byte(table))
			r := fjson.NewReader([]byte(table))
			var got RegisterBody
			readTopicConfigTable(r, &got)
			if err := r.End(); (err != nil) != (wantErr != nil) {
				t.Fatalf("decode error %v, full read %v", err, wantErr)
			}
			if wantErr != nil {
				return
			}
			if len(got.Topics) != len(want) {
				t.Fatalf("decoded %d topics, full read %d", len(got.Topics), len(want))
			}
			for i := range want {
				if !sameTopicConfig(got.Topics[i], want[i]) {
					t.Errorf("topic %d: decoded %+v, full read %+v", i, got.Topics[i], want[i])
				}
			}
		})
	}
}

func TestScanTopicLine(t *testing.T) {
	for _, tt := range []struct {
		line    string
		scanned bool
	}{
		{"T 8 16 6 SINGLE_TAG", true},
		{"%RETRY%g 1 1 6 MULTI_TAG {}", true},
		{"T 8 16 6 SINGLE_TAG {\"+queue.type\":\"BatchCQ\"}", true},
		{"T 8 16 6 SINGLE_TAGX", false},
		{"T +8 16 6 SINGLE_TAG", false},
		{"T 1234567890 16 6 SINGLE_TAG", false},
		{" 8 16 6 SINGLE_TAG", false},
		{"T 8  16 6 SINGLE_TAG", false},
		{"T 8 16 6 NO_TAG", false},
		{"T 8 16 6", false},
	} {
		var tc TopicConfig
		if got := scanTopicLine([]byte(tt.line), &tc); got != tt.scanned {
			t.Errorf("%q: scanned %v, want %v", tt.line, got, tt.scanned)
			continue
		}
		if !tt.scanned {
			continue
		}
		want, err := parseTopicLine([]byte(tt.line))
		if err != nil || !sameTopicConfig(tc, want) {
			t.Errorf("%q: scan %+v, parse %+v (%v)", tt.line, tc, want, err)
		}
	}
}
