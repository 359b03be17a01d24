package filestamp

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestStampFollowsSymlinkSwaps(t *testing.T) {
	dir := t.TempDir()
	mtime := time.Unix(1_700_000_000, 0)
	for _, v := range []string{"v1", "v2"} {
		if err := os.Mkdir(filepath.Join(dir, v), 0o755); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, v, "file")
		// Same size, same time: only the inode tells them apart.
		if err := os.WriteFile(f, []byte("same"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "file")
	if err := os.Symlink("v1/file", link); err != nil {
		t.Fatal(err)
	}
	s1, err := Of(link)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Of(link)
	if !s1.Equal(again) {
		t.Fatal("an unchanged file has a new stamp")
	}
	os.Remove(link)
	if err := os.Symlink("v2/file", link); err != nil {
		t.Fatal(err)
	}
	s2, err := Of(link)
	if err != nil {
		t.Fatal(err)
	}
	if s1.Equal(s2) {
		t.Fatal("a symlink swap to another file of the same size and time went unnoticed")
	}
	if _, err := Of(filepath.Join(dir, "none")); !os.IsNotExist(err) {
		t.Fatalf("missing file: %v", err)
	}
	if (Stamp{}).Equal(s2) {
		t.Fatal("the zero stamp equals a file's")
	}
}
