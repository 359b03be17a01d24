package namesrv_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
)

// blockingHandler is a log handler that blocks the goroutine logging a
// given message until released: a writer of the route table that logs
// under its lock then holds the lock, as a deadlocked writer would.
type blockingHandler struct {
	slog.Handler
	msg     string
	blocked chan struct{}
	release chan struct{}
	once    *sync.Once
}

func (h blockingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.blocked) })
		<-h.release
	}
	return h.Handler.Handle(ctx, r)
}

func (h blockingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h.Handler = h.Handler.WithAttrs(attrs)
	return h
}

func (h blockingHandler) WithGroup(name string) slog.Handler {
	h.Handler = h.Handler.WithGroup(name)
	return h
}

func TestHealthzFailsWhileTheRouteTableIsLocked(t *testing.T) {
	h := blockingHandler{Handler: slog.NewTextHandler(io.Discard, nil), msg: "broker connection closed; evicting",
		blocked: make(chan struct{}), release: make(chan struct{}), once: &sync.Once{}}
	cfg, hl := testConfig(t, nil)
	s, err := namesrv.New(namesrv.Options{Config: cfg, HTTPListener: hl, Logger: slog.New(h), LiveTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	released := false
	release := func() {
		if !released {
			released = true
			close(h.release)
		}
	}
	t.Cleanup(func() {
		release()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	if code, text := get(t, s, "/healthz"); code != 200 || text != "ok\n" {
		t.Fatalf("healthy: %d %q", code, text)
	}
	b := startBroker(t, brokersim.Config{Cluster: "c", Name: "b", Topics: []body.TopicConfig{brokersim.Topic("T", 1), brokersim.Topic("U", 1)}})
	mustRegister(t, b, s.Addr().String())
	b.DropConnections() // the eviction logs under the table's lock, and blocks there
	select {
	case <-h.blocked:
	case <-time.After(5 * time.Second):
		t.Fatal("the eviction never logged")
	}
	for range 3 { // repeated probes do not pile up or change the answer
		if code, text := get(t, s, "/healthz"); code != 503 || !strings.Contains(text, "route table") {
			t.Fatalf("with the table locked: %d %q", code, text)
		}
	}
	release()
	eventually(t, "healthz to recover", func() bool { code, _ := get(t, s, "/healthz"); return code == 200 })
}
