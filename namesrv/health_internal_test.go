package namesrv

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
)

// stallingHandler blocks GET_NAMESRV_CONFIG, the code of the liveness
// probe, while stalled: a processor hung on shared state.
type stallingHandler struct {
	remoting.Handler
	mu    sync.Mutex
	stall chan struct{}
}

func (h *stallingHandler) Serve(c *remoting.Conn, req *remoting.Command, resp *remoting.Response) {
	h.mu.Lock()
	stall := h.stall
	h.mu.Unlock()
	if req.Code == protocol.GetNamesrvConfig && stall != nil {
		<-stall
	}
	h.Handler.Serve(c, req, resp)
}

func TestHealthzFailsWhileTheRemotingServerIsHung(t *testing.T) {
	cfg := config.Default()
	dir := t.TempDir()
	cfg.BindAddress, cfg.ListenPort = "127.0.0.1", 0
	cfg.KVConfigPath, cfg.ConfigStorePath = filepath.Join(dir, "kv.json"), filepath.Join(dir, "namesrv.properties")
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &stallingHandler{}
	s, err := New(Options{Config: cfg, HTTPListener: hl, LiveTimeout: 200 * time.Millisecond,
		wrapHandler: func(p remoting.Handler) remoting.Handler { h.Handler = p; return h }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	stall := make(chan struct{})
	t.Cleanup(func() {
		h.mu.Lock()
		if h.stall != nil {
			close(h.stall)
			h.stall = nil
		}
		h.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	healthz := func() (int, string) {
		resp, err := http.Get("http://" + s.HTTPAddr().String() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, text := healthz(); code != 200 {
		t.Fatalf("healthy: %d %q", code, text)
	}
	h.mu.Lock()
	h.stall = stall
	h.mu.Unlock()
	start := time.Now()
	if code, text := healthz(); code != 503 || !strings.Contains(text, "remoting server") || !strings.Contains(text, "no answer in time") {
		t.Fatalf("hung: %d %q", code, text)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the check took %v, far beyond its deadline", d)
	}
	h.mu.Lock()
	close(h.stall)
	h.stall = nil
	h.mu.Unlock()
	if code, text := healthz(); code != 200 {
		t.Fatalf("recovered: %d %q", code, text)
	}
}
