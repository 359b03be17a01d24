package body

import (
	"bytes"
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

// FuzzScanTopicConfig checks that whatever the scan accepts, the full read
// accepts too, with the same fields and the same length.
func FuzzScanTopicConfig(f *testing.F) {
	f.Add([]byte(`{"attributes":{},"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"T1","topicSysFlag":0,"writeQueueNums":4}`))
	f.Add([]byte(`{"order":true,"perm":-7,"readQueueNums":016,"topicFilterType":"","topicName":"","topicSysFlag":1,"writeQueueNums":999999999}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast TopicConfig
		n, ok := scanTopicConfig(data, &fast)
		if !ok {
			return
		}
		want, err := fullRead(t, data[:n])
		if err != nil {
			t.Fatalf("scan accepted %q, the full read refuses it: %v", data[:n], err)
		}
		if !sameTopicConfig(fast, want) {
			t.Fatalf("%q: scan %+v, full read %+v", data[:n], fast, want)
		}
	})
}
