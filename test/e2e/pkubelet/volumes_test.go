package pkubelet

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestVolumeHostDir(t *testing.T) {
	pvc := &corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-0"}}}
	if got, want := volumeHostDir("/r", "/r/pods/p", "demo", pvc), "/r/pvc/demo/data-web-0"; got != want {
		t.Errorf("pvc dir = %q, want %q", got, want)
	}
	empty := &corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	if got, want := volumeHostDir("/r", "/r/pods/p", "demo", empty), "/r/pods/p/volumes/tmp"; got != want {
		t.Errorf("emptyDir dir = %q, want %q", got, want)
	}
}

func TestKeyPayload(t *testing.T) {
	data := map[string][]byte{"a": []byte("A"), "b": []byte("B")}
	mode := int32(0o600)
	itemMode := int32(0o400)

	all, err := keyPayload(data, nil, &mode, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || string(all["a"].data) != "A" || all["b"].mode != 0o600 {
		t.Errorf("all keys = %+v", all)
	}

	items, err := keyPayload(data, []corev1.KeyToPath{{Key: "a", Path: "sub/a.txt", Mode: &itemMode}}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || string(items["sub/a.txt"].data) != "A" || items["sub/a.txt"].mode != 0o400 {
		t.Errorf("items = %+v", items)
	}

	if _, err := keyPayload(data, []corev1.KeyToPath{{Key: "missing", Path: "m"}}, nil, false); err == nil {
		t.Error("a missing item key of a non-optional source must fail")
	}
	opt, err := keyPayload(data, []corev1.KeyToPath{{Key: "missing", Path: "m"}, {Key: "b", Path: "b"}}, nil, true)
	if err != nil || len(opt) != 1 {
		t.Errorf("optional source: %v, %+v", err, opt)
	}
	for _, bad := range []string{"../x", "/abs", "..data", ""} {
		if _, err := keyPayload(data, []corev1.KeyToPath{{Key: "a", Path: bad}}, nil, false); err == nil {
			t.Errorf("item path %q must be rejected", bad)
		}
	}
}

func TestConfigMapData(t *testing.T) {
	cm := &corev1.ConfigMap{Data: map[string]string{"t": "text"}, BinaryData: map[string][]byte{"b": {0, 1}}}
	got := configMapData(cm)
	if string(got["t"]) != "text" || len(got["b"]) != 2 {
		t.Errorf("data = %v", got)
	}
}

func TestWriteAtomic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	v1 := map[string]projectedFile{
		"greeting":   {data: []byte("hello"), mode: 0o644},
		"conf/a.txt": {data: []byte("a1"), mode: 0o600},
	}
	changed, err := writeAtomic(dir, v1)
	if err != nil || !changed {
		t.Fatalf("first write: changed %v, err %v", changed, err)
	}
	assertFile(t, dir, "greeting", "hello", 0o644)
	assertFile(t, dir, "conf/a.txt", "a1", 0o600)
	firstTS := dataTarget(t, dir)
	if link, _ := os.Readlink(filepath.Join(dir, "greeting")); link != "..data/greeting" {
		t.Errorf("greeting -> %q, want a link through ..data", link)
	}

	if changed, err := writeAtomic(dir, v1); err != nil || changed {
		t.Errorf("unchanged payload: changed %v, err %v; want no write", changed, err)
	}
	if ts := dataTarget(t, dir); ts != firstTS {
		t.Errorf("unchanged payload swapped ..data: %s -> %s", firstTS, ts)
	}

	// A file kept open by a reader keeps the old content, as with the kubelet.
	old, err := os.Open(filepath.Join(dir, "greeting"))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()

	v2 := map[string]projectedFile{"greeting": {data: []byte("bonjour"), mode: 0o644}}
	if changed, err := writeAtomic(dir, v2); err != nil || !changed {
		t.Fatalf("second write: changed %v, err %v", changed, err)
	}
	assertFile(t, dir, "greeting", "bonjour", 0o644)
	if _, err := os.Lstat(filepath.Join(dir, "conf")); !os.IsNotExist(err) {
		t.Errorf("link of a removed key still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, firstTS)); !os.IsNotExist(err) {
		t.Errorf("old timestamped dir %s not removed: %v", firstTS, err)
	}
	b := make([]byte, 16)
	n, _ := old.Read(b)
	if string(b[:n]) != "hello" {
		t.Errorf("open reader sees %q, want the old content", b[:n])
	}

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "..20") {
			names = append(names, e.Name())
		}
	}
	if want := []string{"..data", "greeting"}; !slices.Equal(names, want) {
		t.Errorf("dir holds %q, want %q plus one timestamped dir", names, want)
	}
}

func TestWriteAtomicEmptyPayload(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	if _, err := writeAtomic(dir, map[string]projectedFile{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "..data")); err != nil {
		t.Errorf("an optional missing source still gets the layout: %v", err)
	}
}

func assertFile(t *testing.T, dir, rel, content string, mode fs.FileMode) {
	t.Helper()
	p := filepath.Join(dir, rel)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != content {
		t.Errorf("%s = %q, want %q", rel, b, content)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != mode {
		t.Errorf("%s mode = %v, want %v", rel, fi.Mode().Perm(), mode)
	}
}

func dataTarget(t *testing.T, dir string) string {
	t.Helper()
	ts, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ts, "..20") {
		t.Errorf("..data -> %q, want a timestamped dir", ts)
	}
	return ts
}
