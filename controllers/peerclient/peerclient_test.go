package peerclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-namesrv/kube-namesrv/namesrv/httpapi"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"

	// Accepts the flags of TestSimulation: go test ./controllers/... -seed N.
	_ "github.com/kube-namesrv/kube-namesrv/controllers/internal/testflags"
)

func serve(t *testing.T, h http.HandlerFunc) Target {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	p, _ := strconv.Atoi(port)
	return Target{IP: host, Port: int32(p)}
}

func TestHTTP(t *testing.T) {
	ctx := context.Background()
	c := NewHTTP(2 * time.Second)
	var gotGate peerstatus.GateRequest
	target := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == peerstatus.SummaryPath:
			_ = json.NewEncoder(w).Encode(peerstatus.Summary{BootID: "b1", Counts: peerstatus.Counts{Brokers: 1}})
		case r.Method == http.MethodPost && r.URL.Path == peerstatus.GatePath:
			if r.Header.Get("Content-Type") != peerstatus.ContentType {
				http.Error(w, "content type", http.StatusBadRequest)
				return
			}
			_ = json.NewDecoder(r.Body).Decode(&gotGate)
			_ = json.NewEncoder(w).Encode(peerstatus.Summary{BootID: "b1", Gate: peerstatus.Gate{Enabled: true, Open: true}})
		case r.Method == http.MethodPost && r.URL.Path == peerstatus.KVApplyPath:
			_ = json.NewEncoder(w).Encode(peerstatus.KVStatus{Digest: "d", InSync: true})
		default:
			http.NotFound(w, r)
		}
	})
	s, err := c.Summary(ctx, target)
	if err != nil || s.BootID != "b1" || s.Counts.Brokers != 1 {
		t.Fatalf("Summary() = %+v, %v", s, err)
	}
	want := peerstatus.GateRequest{Expect: []peerstatus.BrokerKey{{Cluster: "c", Addr: "10.0.0.1:10911"}}}
	s, err = c.OpenGate(ctx, target, want)
	if err != nil || !s.Gate.Open || len(gotGate.Expect) != 1 || gotGate.Expect[0] != want.Expect[0] {
		t.Fatalf("OpenGate() = %+v, %v; the peer got %+v", s, err, gotGate)
	}
	kv, err := c.ApplyKV(ctx, target)
	if err != nil || !kv.InSync {
		t.Fatalf("ApplyKV() = %+v, %v", kv, err)
	}
}

func TestHTTPErrors(t *testing.T) {
	ctx := context.Background()
	c := NewHTTP(500 * time.Millisecond)
	// Reading 8 MiB can take longer than the short timeout on a loaded
	// machine under -race; that case is about the size only.
	patient := NewHTTP(30 * time.Second)
	tests := []struct {
		name    string
		h       http.HandlerFunc
		like    string
		is      error
		patient bool
	}{
		{name: "an older NameServer", h: http.NotFound, like: "older than the operator", is: ErrUnsupported},
		{name: "a server error", h: func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", 500) }, like: "HTTP 500: boom"},
		{name: "not JSON", h: func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("<html>")) }, like: "decoding the answer"},
		{name: "too large", h: func(w http.ResponseWriter, _ *http.Request) { w.Write(make([]byte, maxBody+1)) }, like: "larger than", patient: true},
		{name: "too slow", h: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, like: "Timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := c
			if tt.patient {
				client = patient
			}
			_, err := client.Summary(ctx, serve(t, tt.h))
			if err == nil || !strings.Contains(err.Error(), tt.like) || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Errorf("Summary() error = %v, want one like %q", err, tt.like)
			}
		})
	}
	// Nothing listens: the error names the address.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().(*net.TCPAddr)
	l.Close()
	if _, err := c.Summary(ctx, Target{IP: "127.0.0.1", Port: int32(addr.Port)}); err == nil || !strings.Contains(err.Error(), addr.String()) {
		t.Errorf("Summary() of a closed port = %v", err)
	}
}

type fakeClient struct{ calls atomic.Int32 }

func (f *fakeClient) Summary(context.Context, Target) (*peerstatus.Summary, error) {
	f.calls.Add(1)
	return &peerstatus.Summary{BootID: "x"}, nil
}

func (f *fakeClient) OpenGate(context.Context, Target, peerstatus.GateRequest) (*peerstatus.Summary, error) {
	return nil, errors.New("unused")
}

func (f *fakeClient) ApplyKV(context.Context, Target) (*peerstatus.KVStatus, error) {
	return nil, errors.New("unused")
}

func TestObserverCadence(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	round := 30 * time.Second
	fc := &fakeClient{}
	o := &Observer{Client: fc}
	name := types.NamespacedName{Namespace: "mq", Name: "ns1"}
	c := o.State(name, "uid-1")
	if due, _ := c.Due(t0, round, "f1"); !due {
		t.Fatal("never read: not due")
	}
	o.Read(context.Background(), c, map[int32]Target{0: {IP: "10.0.0.1", Port: 8080}, 1: {IP: "10.0.0.2", Port: 8080}}, t0, "f1")
	if fc.calls.Load() != 2 || len(c.Peers) != 2 || c.Peers[1].Summary == nil {
		t.Fatalf("read %d peers, state %+v", fc.calls.Load(), c.Peers)
	}
	if due, next := c.Due(t0.Add(10*time.Second), round, "f1"); due || !next.Equal(t0.Add(round)) {
		t.Errorf("10 s after a read: due %v, next %v; want not due before a round", due, next)
	}
	if due, _ := c.Due(t0.Add(10*time.Second), round, "f2"); !due {
		t.Error("a pod changed: not due")
	}
	c.ConfirmAt = t0.Add(20 * time.Second)
	if due, next := c.Due(t0.Add(10*time.Second), round, "f1"); due || !next.Equal(c.ConfirmAt) {
		t.Errorf("confirmation pending: due %v, next %v", due, next)
	}
	if due, _ := c.Due(t0.Add(20*time.Second), round, "f1"); !due {
		t.Error("at the confirmation time: not due")
	}
	if due, _ := c.Due(t0.Add(round), round, "f1"); !due {
		t.Error("a round later: not due")
	}
	if o.State(name, "uid-1") != c {
		t.Error("State() returned a new state for the same cluster")
	}
	if o.State(name, "uid-2") == c || o.Clusters() != 1 {
		t.Errorf("a cluster recreated under the same name shares or leaks state (%d held)", o.Clusters())
	}
	o.Forget(name)
	if o.Clusters() != 0 {
		t.Error("Forget() kept the state")
	}
}

// TestHTTPBearerToken runs the client against a peer that checks
// credentials the way the NameServer's HTTP port does (its bearer parser
// and token file), every endpoint behind the token as under
// spec.authorization.httpAuthScope All: the client's token opens all three
// endpoints the operator calls, and a missing or wrong one is an error
// that says why.
func TestHTTPBearerToken(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := httpapi.NewTokenFile(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	target := serve(t, func(w http.ResponseWriter, r *http.Request) {
		token, err := httpapi.ParseBearer(r.Header.Get("Authorization"))
		if err != nil || !tokens.Accept(token) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case peerstatus.SummaryPath, peerstatus.GatePath:
			_ = json.NewEncoder(w).Encode(peerstatus.Summary{BootID: "b1"})
		case peerstatus.KVApplyPath:
			_ = json.NewEncoder(w).Encode(peerstatus.KVStatus{InSync: true})
		default:
			http.NotFound(w, r)
		}
	})
	c := NewHTTP(2 * time.Second)
	calls := map[string]func(Target) error{
		"summary": func(t Target) error { _, err := c.Summary(ctx, t); return err },
		"gate":    func(t Target) error { _, err := c.OpenGate(ctx, t, peerstatus.GateRequest{}); return err },
		"kv":      func(t Target) error { _, err := c.ApplyKV(ctx, t); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			withToken := target
			withToken.Token = "s3cret-token"
			if err := call(withToken); err != nil {
				t.Errorf("with the token: %v", err)
			}
			for _, token := range []string{"", "another"} {
				other := target
				other.Token = token
				err := call(other)
				if err == nil || !strings.Contains(err.Error(), "HTTP 401") || !errors.Is(err, ErrRefused) {
					t.Errorf("with token %q: error %v, want HTTP 401 and ErrRefused", token, err)
				}
			}
		})
	}
}

// scriptedClient answers each target's summary as its function says.
type scriptedClient struct {
	fakeClient
	answer func(Target) (*peerstatus.Summary, error)
}

func (s *scriptedClient) Summary(_ context.Context, t Target) (*peerstatus.Summary, error) {
	s.calls.Add(1)
	return s.answer(t)
}

// eventually polls cond until it holds or a deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestObserverRuns runs the observer as the manager does: it reads a
// watched cluster's peers at once, records a peer that does not answer as
// an observation, wakes the cluster when the answers change and not when
// they stay the same, reads at once for new pods, and stops on Forget.
func TestObserverRuns(t *testing.T) {
	var brokers atomic.Int32
	sc := &scriptedClient{answer: func(t Target) (*peerstatus.Summary, error) {
		if t.IP == "10.0.0.2" {
			return nil, errors.New("dial tcp 10.0.0.2:8080: connect: connection refused")
		}
		return &peerstatus.Summary{BootID: "b1", Counts: peerstatus.Counts{Brokers: int(brokers.Load())}}, nil
	}}
	changed := make(chan types.NamespacedName, 100)
	o := &Observer{Client: sc, Changed: func(ctx context.Context, name types.NamespacedName) {
		select {
		case changed <- name:
		case <-ctx.Done():
		}
	}}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- o.Start(ctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	name := types.NamespacedName{Namespace: "mq", Name: "ns1"}
	round := 100 * time.Millisecond
	targets := map[int32]Target{0: {IP: "10.0.0.1", Port: 8080}, 1: {IP: "10.0.0.2", Port: 8080}}
	c := o.Watch(name, "uid-1", Want{Targets: targets, Fingerprint: "f1", Round: round})
	if got := <-changed; got != name {
		t.Fatalf("woke %v, want %v", got, name)
	}
	c.Lock()
	if !c.Current("f1") || c.Peers[0].Summary == nil || c.Peers[1].Summary != nil || c.Peers[1].Err == "" {
		t.Errorf("after the first read: current %v, peers %+v", c.Current("f1"), c.Peers)
	}
	if c.Current("f2") {
		t.Error("a read of other pods counts as current")
	}
	c.Unlock()

	// Rounds with the same answers wake nobody.
	before := sc.calls.Load()
	eventually(t, "two more rounds read", func() bool { return sc.calls.Load() >= before+4 })
	select {
	case <-changed:
		t.Error("a read with the same answers woke the cluster")
	default:
	}

	// New answers wake it, at the next round.
	brokers.Store(3)
	if got := <-changed; got != name {
		t.Fatalf("woke %v, want %v", got, name)
	}

	// New pods are read at once, whatever the round.
	c = o.Watch(name, "uid-1", Want{Targets: targets, Fingerprint: "f2", Round: time.Hour})
	<-changed
	c.Lock()
	if !c.Current("f2") {
		t.Error("the pods of fingerprint f2 were not read")
	}
	c.Unlock()

	o.Forget(name)
	if o.Clusters() != 0 {
		t.Error("Forget() kept the state")
	}
}

// TestReadTellsARefusedToken: a read where a peer refused the token says
// so, and only then, so that the reconciler reads the token again.
func TestReadTellsARefusedToken(t *testing.T) {
	refused := fmt.Errorf("GET /routes/summary: HTTP 401: invalid token: %w", ErrRefused)
	unreachable := errors.New("dial tcp: connection refused")
	for _, tc := range []struct {
		name    string
		answers map[string]error
		want    bool
	}{
		{name: "every peer answers", answers: map[string]error{"10.0.0.1": nil, "10.0.0.2": nil}},
		{name: "one peer refuses the token", answers: map[string]error{"10.0.0.1": nil, "10.0.0.2": refused}, want: true},
		{name: "one peer unreachable", answers: map[string]error{"10.0.0.1": nil, "10.0.0.2": unreachable}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &scriptedClient{answer: func(tg Target) (*peerstatus.Summary, error) {
				if err := tc.answers[tg.IP]; err != nil {
					return nil, err
				}
				return &peerstatus.Summary{BootID: "b-" + tg.IP}, nil
			}}
			o := &Observer{Client: sc}
			c := o.State(types.NamespacedName{Namespace: "mq", Name: "ns1"}, "uid-1")
			c.TokenRefused = !tc.want
			targets := map[int32]Target{}
			for i, ip := range []string{"10.0.0.1", "10.0.0.2"} {
				targets[int32(i)] = Target{IP: ip, Port: 8080, Token: "t"}
			}
			o.Read(context.Background(), c, targets, time.Now(), "f1")
			if c.TokenRefused != tc.want {
				t.Errorf("TokenRefused = %v, want %v", c.TokenRefused, tc.want)
			}
		})
	}
}
