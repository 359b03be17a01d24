package namesrv_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
)

// testConfig is a configuration for a NameServer on a loopback port with
// private files; tweak adjusts it. The second result is a listener for the
// HTTP side on a free loopback port.
func testConfig(t testing.TB, tweak func(*config.Config)) (*config.Config, net.Listener) {
	t.Helper()
	cfg := config.Default()
	dir := t.TempDir()
	cfg.BindAddress = "127.0.0.1"
	cfg.ListenPort = 0
	cfg.KVConfigPath = filepath.Join(dir, "kvConfig.json")
	cfg.ConfigStorePath = filepath.Join(dir, "namesrv.properties")
	if tweak != nil {
		tweak(cfg)
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return cfg, hl
}

// startServer runs a NameServer on a loopback port with a private KV file;
// tweak adjusts the configuration first.
func startServer(t testing.TB, tweak func(*config.Config)) *namesrv.Server {
	t.Helper()
	cfg, hl := testConfig(t, tweak)
	s, err := namesrv.New(namesrv.Options{Config: cfg, HTTPListener: hl})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return s
}

func dial(t *testing.T, s *namesrv.Server, opts remotingclient.Options) *remotingclient.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := remotingclient.Dial(ctx, s.Addr().String(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func invoke(t *testing.T, c *remotingclient.Client, code int32, body []byte, ext ...string) *remotingclient.Response {
	t.Helper()
	req := &remotingclient.Request{Code: code, Body: body}
	for i := 0; i+1 < len(ext); i += 2 {
		req.Ext = append(req.Ext, remoting.Pair{Key: ext[i], Value: ext[i+1]})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := c.Invoke(ctx, req)
	if err != nil {
		t.Fatalf("request %d: %v", code, err)
	}
	return r
}

// eventually polls cond until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
