package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestWriteCreatesAndReplaces(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "state.json")
	if err := Write(path, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); got != "one" {
		t.Fatalf("content %q", got)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("new file mode %v, %v; want 0644", fi.Mode(), err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("two")); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); got != "two" {
		t.Fatalf("content %q", got)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v not kept", fi.Mode())
	}
	if got := names(t, dir); !slices.Equal(got, []string{"state.json"}) {
		t.Fatalf("directory holds %v, want only the target", got)
	}
}

func TestWriteFailureLeavesNoTrace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.Mkdir(path, 0o755); err != nil { // rename cannot replace a directory
		t.Fatal(err)
	}
	err := Write(path, []byte("x"))
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Write = %v, want an error naming %s", err, path)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"state.json"}) {
		t.Fatalf("directory holds %v after a failed write", got)
	}

	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(filepath.Join(blocker, "sub", "state.json"), []byte("x")); err == nil {
		t.Fatal("Write under a regular file succeeded")
	}
}

func TestBackup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := Backup(path); err != nil {
		t.Fatalf("Backup of a missing file = %v", err)
	}
	if _, err := os.Stat(BackupPath(path)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("Backup of a missing file created a backup")
	}
	if err := Write(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := Backup(path); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path+".bak"); got != "old" {
		t.Fatalf(".bak = %q", got)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Backup(path); err == nil {
		t.Fatal("Backup of a directory succeeded")
	}
}

func TestCleanTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kvConfig.json")
	for _, name := range []string{
		"kvConfig.json", "kvConfig.json.bak", "kvConfig.json.tmp-123", "kvConfig.json.bak.tmp-9",
		"kvConfig.json.tmp", "other.json.tmp-1", "xkvConfig.json.tmp-1",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "kvConfig.json.tmp-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	removed, err := CleanTemp(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "kvConfig.json.bak.tmp-9"), filepath.Join(dir, "kvConfig.json.tmp-123")}
	slices.Sort(removed)
	if !slices.Equal(removed, want) {
		t.Fatalf("removed %v, want %v", removed, want)
	}
	got := names(t, dir)
	for _, keep := range []string{"kvConfig.json", "kvConfig.json.bak", "kvConfig.json.tmp", "other.json.tmp-1", "xkvConfig.json.tmp-1", "kvConfig.json.tmp-dir"} {
		if !slices.Contains(got, keep) {
			t.Errorf("%s was removed", keep)
		}
	}
	if removed, err := CleanTemp(filepath.Join(dir, "missing", "x.json")); err != nil || removed != nil {
		t.Fatalf("CleanTemp in a missing directory = %v, %v", removed, err)
	}
}
