package pkubelet

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The kubelet's AtomicWriter layout: files live in a timestamped directory,
// "..data" points at it, and each user-visible name is a symlink through
// "..data". Swapping "..data" with a rename updates every file at once, which
// is what file watchers in real Pods are written against.
const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
)

// volumeHostDir is where a Pod volume lives on this host. A PVC is keyed by
// namespace and claim so that every incarnation of a StatefulSet Pod finds
// the data of the previous one; every other volume belongs to one Pod.
func volumeHostDir(root, podDir, namespace string, v *corev1.Volume) string {
	if v.PersistentVolumeClaim != nil {
		return filepath.Join(root, "pvc", namespace, v.PersistentVolumeClaim.ClaimName)
	}
	return filepath.Join(podDir, "volumes", v.Name)
}

// projectedFile is one file of a configMap or secret volume.
type projectedFile struct {
	data []byte
	mode fs.FileMode
}

// keyPayload turns the keys of a ConfigMap or Secret into files, honouring
// items (only the listed keys, at their paths) and the modes like the kubelet.
func keyPayload(data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32, optional bool) (map[string]projectedFile, error) {
	mode := fs.FileMode(0o644)
	if defaultMode != nil {
		mode = fs.FileMode(*defaultMode) & fs.ModePerm
	}
	out := map[string]projectedFile{}
	if len(items) == 0 {
		for k, v := range data {
			out[k] = projectedFile{data: v, mode: mode}
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("key %q not found", it.Key)
		}
		if err := checkPayloadPath(it.Path); err != nil {
			return nil, err
		}
		m := mode
		if it.Mode != nil {
			m = fs.FileMode(*it.Mode) & fs.ModePerm
		}
		out[filepath.Clean(it.Path)] = projectedFile{data: v, mode: m}
	}
	return out, nil
}

func checkPayloadPath(p string) error {
	if p == "" || filepath.IsAbs(p) || strings.HasPrefix(filepath.Clean(p), "..") {
		return fmt.Errorf("invalid item path %q", p)
	}
	return nil
}

// configMapData merges Data and BinaryData the way the volume plugin does.
func configMapData(cm *corev1.ConfigMap) map[string][]byte {
	out := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		out[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		out[k] = v
	}
	return out
}

// writeAtomic makes dir hold exactly payload, using the kubelet's layout so
// that readers see either the old or the new set of files, never a mix. It
// reports whether anything changed; an unchanged payload leaves dir as is
// (no spurious events for watchers).
func writeAtomic(dir string, payload map[string]projectedFile) (bool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("create volume dir: %w", err)
	}
	dataLink := filepath.Join(dir, dataDirName)
	oldTS, err := os.Readlink(dataLink)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read %s: %w", dataLink, err)
	}
	if oldTS != "" {
		same, err := sameContent(filepath.Join(dir, oldTS), payload)
		if err != nil {
			return false, err
		}
		if same {
			return false, nil
		}
	}

	tsDir, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return false, fmt.Errorf("create timestamped dir: %w", err)
	}
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return false, fmt.Errorf("chmod %s: %w", tsDir, err)
	}
	for rel, f := range payload {
		p := filepath.Join(tsDir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return false, fmt.Errorf("create dir for %s: %w", rel, err)
		}
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return false, fmt.Errorf("write %s: %w", rel, err)
		}
		// WriteFile's mode is filtered by the umask; the kubelet chmods too.
		if err := os.Chmod(p, f.mode); err != nil {
			return false, fmt.Errorf("chmod %s: %w", rel, err)
		}
	}

	tmpLink := filepath.Join(dir, newDataDirName)
	if err := os.Remove(tmpLink); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("remove stale %s: %w", tmpLink, err)
	}
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		return false, fmt.Errorf("link %s: %w", tmpLink, err)
	}
	if err := os.Rename(tmpLink, dataLink); err != nil {
		return false, fmt.Errorf("swap %s: %w", dataLink, err)
	}

	if err := syncVisibleLinks(dir, payload); err != nil {
		return true, err
	}
	if oldTS != "" {
		if err := os.RemoveAll(filepath.Join(dir, oldTS)); err != nil {
			return true, fmt.Errorf("remove old %s: %w", oldTS, err)
		}
	}
	return true, nil
}

// syncVisibleLinks creates a "<name> -> ..data/<name>" symlink for every
// top-level name of payload and removes the links of names that are gone.
func syncVisibleLinks(dir string, payload map[string]projectedFile) error {
	want := map[string]bool{}
	for rel := range payload {
		top, _, _ := strings.Cut(rel, string(filepath.Separator))
		want[top] = true
	}
	for name := range want {
		p := filepath.Join(dir, name)
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(dataDirName, name), p); err != nil {
			return fmt.Errorf("link %s: %w", name, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") || want[e.Name()] || e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("remove %s: %w", e.Name(), err)
		}
	}
	return nil
}

// sameContent reports whether tsDir holds exactly payload.
func sameContent(tsDir string, payload map[string]projectedFile) (bool, error) {
	seen := 0
	err := filepath.WalkDir(tsDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(tsDir, p)
		if err != nil {
			return err
		}
		want, ok := payload[rel]
		if !ok {
			return errDiffers
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().Perm() != want.mode {
			return errDiffers
		}
		got, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want.data) {
			return errDiffers
		}
		seen++
		return nil
	})
	switch {
	case errors.Is(err, errDiffers), errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("compare %s: %w", tsDir, err)
	}
	return seen == len(payload), nil
}

var errDiffers = errors.New("content differs")

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
