package logcapture

import (
	"log/slog"
	"slices"
	"sync"
	"testing"
)

func TestLinesMatchEverySubstring(t *testing.T) {
	var b Buffer
	log := b.Logger(slog.LevelInfo)
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			log.Warn("limit hit", "limit", "max_connections", "n", i)
		}()
	}
	wg.Wait()
	log.Debug("hidden", "limit", "max_connections")
	log.Info("other", "limit", "frame")
	if got := len(b.Lines("level=WARN", "limit=max_connections")); got != 10 {
		t.Fatalf("%d warn lines, want 10:\n%s", got, b.String())
	}
	if got := b.Lines("limit=frame"); !slices.Equal(got, b.Lines("msg=other")) || len(got) != 1 {
		t.Fatalf("lines %q", got)
	}
	if got := b.Lines("msg=hidden"); len(got) != 0 {
		t.Fatalf("debug line logged at info level: %q", got)
	}
}
