package box

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestLockTellsLiveRunsFromDead: a run's lock is held while its file is
// open, by any process; a directory without one is a dead run's kept logs.
func TestLockTellsLiveRunsFromDead(t *testing.T) {
	dir := t.TempDir()
	f, err := lockRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if isLive, err := live(dir); err != nil || !isLive {
		t.Errorf("a locked run: live %v, %v", isLive, err)
	}
	if _, err := lockRun(dir); err == nil {
		t.Error("a second lock of a live run succeeded")
	}
	f.Close()
	if isLive, err := live(dir); err != nil || isLive {
		t.Errorf("a run whose lock was released: live %v, %v", isLive, err)
	}
	if err := os.Remove(filepath.Join(dir, lockName)); err != nil {
		t.Fatal(err)
	}
	if _, err := live(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a directory without a lock: %v, want not exist", err)
	}
}

func TestUnescapeMountPath(t *testing.T) {
	for in, want := range map[string]string{
		`/var/lib/kubelet`:           "/var/lib/kubelet",
		`/tmp/with\040space`:         "/tmp/with space",
		`/tmp/tab\011and\134slash`:   "/tmp/tab\tand\\slash",
		`/tmp/not\04an-escape\`:      `/tmp/not\04an-escape\`,
		`/tmp/out-of-range\777-kept`: `/tmp/out-of-range\777-kept`,
	} {
		if got := unescapeMountPath(in); got != want {
			t.Errorf("unescapeMountPath(%q) = %q, want %q", in, got, want)
		}
	}
}
