package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

func do(t *testing.T, h http.Handler, method, path, body string) (int, http.Header, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, rec.Result().Header, string(b)
}

func newHandler(o Options) *Handler {
	if o.Ready == nil {
		o.Ready = func() (bool, string) { return true, "" }
	}
	if o.Metrics == nil {
		o.Metrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "# no metrics\n") })
	}
	if o.AddressFile == nil {
		o.AddressFile = func() string { return "" }
	}
	return New(o)
}

func TestDecodeGateRequest(t *testing.T) {
	req, err := decodeGateRequest([]byte(`{"expect":[{"cluster":"c","addr":"10.0.0.1:10911"},{"cluster":"c","addr":"10.0.0.2:10911"}]}` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := peerstatus.GateRequest{Expect: []peerstatus.BrokerKey{{Cluster: "c", Addr: "10.0.0.1:10911"}, {Cluster: "c", Addr: "10.0.0.2:10911"}}}
	if !reflect.DeepEqual(req, want) {
		t.Fatalf("decoded %+v", req)
	}
	for _, empty := range []string{`{"expect":[]}`, `{"expect":null}`, `{}`, `{"waitSeconds":0}`} {
		if req, err := decodeGateRequest([]byte(empty)); err != nil || len(req.Expect) != 0 || req.WaitSeconds != 0 {
			t.Fatalf("%s: %+v, %v", empty, req, err)
		}
	}
	for body, want := range map[string]int{
		`{"expect":[],"waitSeconds":45}`:   45,
		`{"waitSeconds":1}`:                1,
		`{"expect":[],"waitSeconds":3600}`: peerstatus.MaxGateWaitSeconds,
	} {
		if req, err := decodeGateRequest([]byte(body)); err != nil || req.WaitSeconds != want {
			t.Fatalf("%s: %+v, %v", body, req, err)
		}
	}
	tests := []struct{ name, body, want string }{
		{"empty", "", "empty gate request"},
		{"blank", "  \n", "empty gate request"},
		{"not JSON", "expect=c/a", "not a valid JSON"},
		{"array", `[{"cluster":"c","addr":"a"}]`, "not a valid JSON"},
		{"truncated", `{"expect":[{"cluster":"c"`, "not a valid JSON"},
		{"unknown field", `{"expect":[],"close":true}`, `unknown field "close"`},
		{"unknown broker field", `{"expect":[{"cluster":"c","addr":"a","id":0}]}`, `unknown field "id"`},
		{"trailing object", `{"expect":[]} {}`, "data after"},
		{"trailing brace", `{"expect":[]}}`, "data after"},
		{"no cluster", `{"expect":[{"addr":"a"}]}`, "expect[0] needs both cluster and addr"},
		{"empty addr", `{"expect":[{"cluster":"c","addr":"a"},{"cluster":"c","addr":""}]}`, "expect[1]"},
		{"addr a number", `{"expect":[{"cluster":"c","addr":1}]}`, "not a valid JSON"},
		{"negative wait", `{"expect":[],"waitSeconds":-1}`, "waitSeconds -1 out of range, want 0 to 3600"},
		{"absurd wait", `{"expect":[],"waitSeconds":86400}`, "waitSeconds 86400 out of range"},
		{"wait in milliseconds", `{"waitSeconds":45000}`, "out of range"},
		{"fractional wait", `{"waitSeconds":1.5}`, "not a valid JSON"},
		{"wait a string", `{"waitSeconds":"45"}`, "not a valid JSON"},
		{"wait beyond int", `{"waitSeconds":99999999999999999999}`, "not a valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if req, err := decodeGateRequest([]byte(tt.body)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("decoded %+v, %v; want an error mentioning %q", req, err, tt.want)
			}
		})
	}
}

// FuzzDecodeGateRequest: the decoder never panics, and what it accepts
// names only complete brokers and survives a round trip.
func FuzzDecodeGateRequest(f *testing.F) {
	f.Add([]byte(`{"expect":[{"cluster":"c","addr":"10.0.0.1:10911"}]}`))
	f.Add([]byte(`{"expect":[]}`))
	f.Add([]byte(`{"expect":null} `))
	f.Add([]byte(`{"expect":[{"cluster":"\u00e9","addr":"\ud800"}]}}`))
	f.Add([]byte(`{"expect":[],"waitSeconds":45}`))
	f.Add([]byte(`{"waitSeconds":-2147483649}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeGateRequest(body)
		if err != nil {
			return
		}
		if req.WaitSeconds < 0 || req.WaitSeconds > peerstatus.MaxGateWaitSeconds {
			t.Fatalf("accepted waitSeconds %d", req.WaitSeconds)
		}
		for _, k := range req.Expect {
			if k.Cluster == "" || k.Addr == "" {
				t.Fatalf("accepted an incomplete broker %+v", k)
			}
		}
		enc, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeGateRequest(enc)
		if err != nil || len(again.Expect) != len(req.Expect) || again.WaitSeconds != req.WaitSeconds {
			t.Fatalf("round trip of %s: %+v, %v", enc, again, err)
		}
	})
}

func TestGateEndpoint(t *testing.T) {
	var got []peerstatus.GateRequest
	h := newHandler(Options{
		Gate: func(r peerstatus.GateRequest) peerstatus.Summary {
			got = append(got, r)
			return peerstatus.Summary{BootID: "b", Gate: peerstatus.Gate{Enabled: true, Open: true, OpenedBy: "request"}}
		},
	})
	code, hdr, body := do(t, h, "POST", peerstatus.GatePath, `{"expect":[{"cluster":"c","addr":"a:1"}]}`)
	if code != 200 || hdr.Get("Content-Type") != peerstatus.ContentType || hdr.Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %v %s", code, hdr, body)
	}
	var sum peerstatus.Summary
	if err := json.Unmarshal([]byte(body), &sum); err != nil || sum.BootID != "b" || sum.Gate.OpenedBy != "request" {
		t.Fatalf("answer %s: %v", body, err)
	}
	if len(got) != 1 || got[0].Expect[0].Addr != "a:1" {
		t.Fatalf("gate got %+v", got)
	}
	if code, _, body := do(t, h, "POST", peerstatus.GatePath, `{"expect":[{"cluster":"c"}]}`); code != 400 || !strings.Contains(body, "needs both cluster and addr") {
		t.Fatalf("bad request: %d %s", code, body)
	}
	if code, _, body := do(t, h, "POST", peerstatus.GatePath, `{"expect":[],"waitSeconds":-5}`); code != 400 || !strings.Contains(body, "waitSeconds -5 out of range") {
		t.Fatalf("negative wait: %d %s", code, body)
	}
	if code, _, _ := do(t, h, "POST", peerstatus.GatePath, `{"expect":[],"waitSeconds":45}`); code != 200 || len(got) != 2 || got[1].WaitSeconds != 45 {
		t.Fatalf("wait request: %d %+v", code, got)
	}
	big := `{"expect":[` + strings.Repeat(`{"cluster":"c","addr":"a:1"},`, maxGateRequest/28) + `{"cluster":"c","addr":"a:1"}]}`
	if code, _, body := do(t, h, "POST", peerstatus.GatePath, big); code != 413 {
		t.Fatalf("a body over 1 MiB: %d %s", code, body)
	}
	if code, _, _ := do(t, h, "GET", peerstatus.GatePath, ""); code != 405 {
		t.Fatalf("GET on the gate: %d", code)
	}
	if len(got) != 2 {
		t.Fatalf("refused requests reached the gate: %+v", got)
	}
}

func TestSummaryAndApplyEndpoints(t *testing.T) {
	configured := false
	h := newHandler(Options{
		Summary: func() peerstatus.Summary { return peerstatus.Summary{BootID: "x", Digest: "d"} },
		ApplyKV: func() (peerstatus.KVStatus, bool) { return peerstatus.KVStatus{File: "/f", InSync: true}, configured },
	})
	code, hdr, body := do(t, h, "GET", peerstatus.SummaryPath, "")
	if code != 200 || hdr.Get("Content-Type") != peerstatus.ContentType || hdr.Get("Cache-Control") != "no-store" || !strings.Contains(body, `"bootID":"x"`) {
		t.Fatalf("summary %d %v %s", code, hdr, body)
	}
	if code, _, body := do(t, h, "POST", peerstatus.KVApplyPath, ""); code != 404 || !strings.Contains(body, "kvDeclaredFile") {
		t.Fatalf("apply without a file: %d %s", code, body)
	}
	configured = true
	code, _, body = do(t, h, "POST", peerstatus.KVApplyPath, "")
	var st peerstatus.KVStatus
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil || st.File != "/f" || !st.InSync {
		t.Fatalf("apply %d %s", code, body)
	}
	if code, _, _ := do(t, newHandler(Options{}), "GET", peerstatus.SummaryPath, ""); code != 404 {
		t.Fatalf("summary without a source: %d", code)
	}
}

func TestHealthzRunsTheLivenessCheckWithADeadline(t *testing.T) {
	var live func(context.Context) error
	h := newHandler(Options{LiveTimeout: 50 * time.Millisecond, Live: func(ctx context.Context) error { return live(ctx) }})
	live = func(context.Context) error { return nil }
	if code, _, body := do(t, h, "GET", "/healthz", ""); code != 200 || body != "ok\n" {
		t.Fatalf("%d %q", code, body)
	}
	live = func(ctx context.Context) error {
		<-ctx.Done()
		return errors.New("remoting: no answer in time")
	}
	start := time.Now()
	if code, _, body := do(t, h, "GET", "/healthz", ""); code != 503 || !strings.Contains(body, "remoting: no answer in time") {
		t.Fatalf("%d %q", code, body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the check took %v", d)
	}
	if code, _, _ := do(t, newHandler(Options{}), "GET", "/healthz", ""); code != 200 {
		t.Fatalf("without a check: %d", code)
	}
}

func TestBrokerSubGroup(t *testing.T) {
	dir := t.TempDir()
	clients, brokers := filepath.Join(dir, "clients"), filepath.Join(dir, "brokers")
	if err := os.WriteFile(clients, []byte("10.0.0.1:9876;10.0.0.2:9876\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(brokers, []byte("10.0.0.1:9876;10.0.0.2:9876;10.0.0.3:9876\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	brokerFile := ""
	h := newHandler(Options{AddressFile: func() string { return clients }, BrokerAddressFile: func() string { return brokerFile }})
	get := func(sub string) (int, string) {
		code, _, body := do(t, h, "GET", "/rocketmq/"+sub, "")
		return code, body
	}
	for _, sub := range []string{"nsaddr", "brokers", "nsaddr-unit"} {
		if code, body := get(sub); code != 200 || body != "10.0.0.1:9876;10.0.0.2:9876" {
			t.Fatalf("without a broker file, %s: %d %q", sub, code, body)
		}
	}
	brokerFile = brokers
	if code, body := get("brokers"); code != 200 || body != "10.0.0.1:9876;10.0.0.2:9876;10.0.0.3:9876" {
		t.Fatalf("brokers: %d %q", code, body)
	}
	for _, sub := range []string{"nsaddr", "nsaddr-unit", "Brokers", "brokers-x"} {
		if code, body := get(sub); code != 200 || body != "10.0.0.1:9876;10.0.0.2:9876" {
			t.Fatalf("with a broker file, %s: %d %q", sub, code, body)
		}
	}
	os.Remove(brokers)
	if code, body := get("brokers"); code != 503 || !strings.Contains(body, "broker NameServer address list not published") {
		t.Fatalf("broker file not there yet: %d %q", code, body)
	}
}
