package pkubelet

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodHostNames(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "demo"}, Spec: corev1.PodSpec{Hostname: "web-0", Subdomain: "web"}}
	want := []string{"web-0.web.demo.svc.cluster.local", "web-0.web.demo.svc", "web-0"}
	if got := podHostNames(pod, "cluster.local"); !slices.Equal(got, want) {
		t.Errorf("names = %q, want %q", got, want)
	}
	pod.Spec.Subdomain = ""
	if got := podHostNames(pod, "cluster.local"); got != nil {
		t.Errorf("names without subdomain = %q, want none", got)
	}
}

func TestRenderHosts(t *testing.T) {
	got := string(renderHosts([]hostEntry{
		{ip: "10.244.0.10", names: []string{"b.web.demo.svc.cluster.local", "b"}},
		{ip: "10.244.0.9", names: []string{"a.web.demo.svc.cluster.local", "a"}},
	}))
	want := "127.0.0.1\tlocalhost\n::1\tlocalhost\n" +
		"10.244.0.9\ta.web.demo.svc.cluster.local a\n" +
		"10.244.0.10\tb.web.demo.svc.cluster.local b\n"
	if got != want {
		t.Errorf("hosts =\n%s\nwant\n%s", got, want)
	}
	if got := string(renderHosts(nil)); got != "127.0.0.1\tlocalhost\n::1\tlocalhost\n" {
		t.Errorf("empty hosts = %q", got)
	}
}

func TestWriteInPlaceKeepsTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(p, []byte("a long first version of the file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := inode(t, p)
	if err := writeInPlace(p, []byte("short\n")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "short\n" {
		t.Errorf("content = %q, want %q", b, "short\n")
	}
	if after := inode(t, p); after != before {
		t.Errorf("inode changed from %d to %d: a bind mount would be detached", before, after)
	}
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}
