package namesrv

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/liverecord"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// TestRecordKeptWhileTheGateIsClosed: the recorder checks the live set
// while the gate of a restarted NameServer is closed, and leaves the
// previous process's record alone until the gate opens.
func TestRecordKeptWhileTheGateIsClosed(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default()
	cfg.BindAddress, cfg.ListenPort, cfg.HTTPPort = "127.0.0.1", 0, 0
	cfg.KVConfigPath, cfg.ConfigStorePath = filepath.Join(dir, "kv.json"), filepath.Join(dir, "namesrv.properties")
	cfg.RouteGateEnable, cfg.RouteGateTimeoutSeconds = true, 3600
	path := filepath.Join(dir, liverecord.FileName)
	prev := `{"recordedAt":"2025-01-01T00:00:00Z","brokers":[{"cluster":"c","addr":"10.0.0.1:10911"}]}` + "\n"
	if err := os.WriteFile(path, []byte(prev), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Config: cfg, LiveRecordInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	poll := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	poll("checks while the gate is closed", func() bool { return s.recorder.Stats().Checks >= 5 })
	if got, _ := os.ReadFile(path); string(got) != prev || s.recorder.Stats().Written != 0 {
		t.Fatalf("record rewritten while the gate was closed: %s", got)
	}
	s.gate.Expect(peerstatus.GateRequest{})
	poll("the empty live set to be recorded", func() bool {
		rec, err := liverecord.Load(path)
		return err == nil && rec != nil && len(rec.Brokers) == 0
	})
}
