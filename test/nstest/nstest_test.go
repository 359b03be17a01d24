package nstest

import (
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
)

func TestConfigIsPrivateAndLoopback(t *testing.T) {
	tweaked := false
	cfg, hl := Config(t, func(c *config.Config) { tweaked = c.BindAddress == "127.0.0.1" })
	if !tweaked {
		t.Error("tweak did not run after the loopback defaults")
	}
	if cfg.ListenPort != 0 || filepath.Dir(cfg.KVConfigPath) != filepath.Dir(cfg.ConfigStorePath) {
		t.Errorf("port %d, KV %s, properties %s", cfg.ListenPort, cfg.KVConfigPath, cfg.ConfigStorePath)
	}
	if ip := hl.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		t.Errorf("HTTP listener on %v", ip)
	}
}

// TestStartServesUntilStop: both sides answer while the server runs, and
// neither does after Stop; a second Stop, like the one at the test's end,
// does nothing.
func TestStartServesUntilStop(t *testing.T) {
	s := Start(t, nil)
	if !s.Addr().(*net.TCPAddr).IP.IsLoopback() {
		t.Fatalf("remoting side on %v", s.Addr())
	}
	nc, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatalf("remoting side: %v", err)
	}
	nc.Close()
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + s.HTTPAddr().String() + "/healthz")
	if err != nil {
		t.Fatalf("HTTP side: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: %s", resp.Status)
	}

	s.Stop()
	s.Stop()
	if nc, err := net.DialTimeout("tcp", s.Addr().String(), time.Second); err == nil {
		nc.Close()
		t.Error("remoting side still accepts after Stop")
	}
}
