// Package atomicfile replaces small state files so that a crash at any
// moment leaves either the old or the new content at the path, never a
// truncated mix: the NameServer's KV table and persisted configuration are
// rewritten in full on every change, and Java's in-place rewrite
// (MixAll.string2File) can leave an empty file behind after a kill.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// tempSuffix marks temporary files next to the target; CleanTemp removes
// them. The random part added by os.CreateTemp keeps concurrent writers of
// different targets from colliding.
const tempSuffix = ".tmp-"

// Write replaces the content of path with data: it writes a temporary file in
// the same directory, fsyncs it, renames it over path and fsyncs the
// directory so that the rename itself survives a power loss. Missing parent
// directories are created. An existing file keeps its permission bits; a new
// one gets 0644. On error path is unchanged, except that when only the final
// directory fsync fails the new content may already be visible.
func Write(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create directory of %s: %w", path, err)
	}
	perm := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		perm = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+tempSuffix+"*")
	if err != nil {
		return fmt.Errorf("create temporary file for %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("chmod %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename %s to %s: %w", tmp.Name(), path, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory %s: %w", dir, err)
	}
	defer d.Close()
	// Some file systems cannot fsync a directory; their renames are as
	// durable as they get.
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// BackupPath is where Backup keeps the previous content of path, the
// "<path>.bak" of Java's MixAll.string2File that operators know.
func BackupPath(path string) string { return path + ".bak" }

// Backup copies the current content of path to BackupPath(path) with Write.
// A missing path is not an error: there is nothing to keep yet.
func Backup(path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s for backup: %w", path, err)
	}
	return Write(BackupPath(path), data)
}

// CleanTemp removes temporary files that a crash during Write left next to
// path or its backup, and returns the names it removed. Call it before the
// first Write; it would race with a concurrent Write of the same path.
func CleanTemp(path string) ([]string, error) {
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	prefixes := []string{
		filepath.Base(path) + tempSuffix,
		filepath.Base(BackupPath(path)) + tempSuffix,
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		for _, p := range prefixes {
			if strings.HasPrefix(e.Name(), p) {
				name := filepath.Join(dir, e.Name())
				if err := os.Remove(name); err != nil {
					errs = append(errs, err)
				} else {
					removed = append(removed, name)
				}
				break
			}
		}
	}
	return removed, errors.Join(errs...)
}
