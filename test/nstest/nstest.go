// Package nstest starts a NameServer in the test's own process, the one way
// every test of this module and of the tools module does it: loopback
// ports chosen by the kernel, private files in the test's temp directory,
// and a shutdown at the test's end that fails the test when it errs.
package nstest

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
)

// shutdownTimeout bounds the shutdown at the test's end, so that a server
// that cannot stop fails the test instead of hanging it.
const shutdownTimeout = 5 * time.Second

// Config is the configuration Start uses: the defaults, bound to 127.0.0.1
// on a port the kernel picks, with the KV and properties files in a fresh
// temp directory; tweak, when not nil, adjusts it last. The listener is
// the HTTP side's, on a free loopback port; a server that takes it closes
// it, otherwise the test's cleanup does.
func Config(t testing.TB, tweak func(*config.Config)) (*config.Config, net.Listener) {
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
		t.Fatalf("HTTP listener: %v", err)
	}
	t.Cleanup(func() { hl.Close() })
	return cfg, hl
}

// Server is a running NameServer that stops at the end of its test, or
// earlier when the test calls Stop.
type Server struct {
	*namesrv.Server
	t    testing.TB
	once sync.Once
}

// Start runs a NameServer with Config(t, tweak).
func Start(t testing.TB, tweak func(*config.Config)) *Server {
	t.Helper()
	cfg, hl := Config(t, tweak)
	return Run(t, namesrv.Options{Config: cfg, HTTPListener: hl})
}

// Run starts a NameServer with the given options, typically a Config
// result plus a logger or hooks of the test's own.
func Run(t testing.TB, opts namesrv.Options) *Server {
	t.Helper()
	s, err := namesrv.New(opts)
	if err != nil {
		t.Fatalf("new NameServer: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("start NameServer: %v", err)
	}
	r := &Server{Server: s, t: t}
	t.Cleanup(r.Stop)
	return r
}

// Stop shuts the server down and fails the test if that errs; only the
// first call does anything, since a NameServer shuts down once.
func (s *Server) Stop() {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			s.t.Errorf("NameServer shutdown: %v", err)
		}
	})
}
