//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/test/e2e/box"
)

func createNamespace(ctx context.Context, t *testing.T, prefix string) string {
	t.Helper()
	ns, err := cl.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The namespace controller finishes this in the background.
		_ = cl.Clientset.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// acceptingNamespace creates a namespace that accepts the address lists of
// the given NameServerClusters (<namespace>/<name>), as a target must.
func acceptingNamespace(ctx context.Context, t *testing.T, prefix, from string) string {
	t.Helper()
	ns := createNamespace(ctx, t, prefix)
	n, err := cl.Clientset.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Annotations = map[string]string{v1alpha1.AnnotationAcceptPublishFrom: from}
	if _, err := cl.Clientset.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

func kubectl(ctx context.Context, t *testing.T, args ...string) {
	t.Helper()
	if _, err := cl.Kubectl(ctx, args...); err != nil {
		t.Fatal(err)
	}
}

func podNames(pods []corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// assertGone checks that a process no longer exists.
func assertGone(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d still exists (kill 0: %v)", pid, err)
	}
}

// httpClient never uses a proxy from the environment and keeps no
// connections, so a restarted server is always dialled afresh.
var httpClient = &http.Client{
	Timeout:   2 * time.Second,
	Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
}

func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return string(b), err
}

func mustGet(ctx context.Context, t *testing.T, url string) string {
	t.Helper()
	body, err := get(ctx, url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return body
}

// eventually polls cond until it holds or timeout passes, then fails with
// cond's last description.
func eventually(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", timeout, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// podEvent is one watch event of the recorder.
type podEvent struct {
	typ watch.EventType
	pod *corev1.Pod
	at  time.Time // when the recorder received it
}

// podRecorder keeps the watch events of a namespace's Pods in order. Watch
// events are ordered by resourceVersion, so "A happened before B" can be
// read off their indexes without relying on timestamps.
type podRecorder struct {
	mu     sync.Mutex
	events []podEvent
}

func recordPods(ctx context.Context, t *testing.T, ns, selector string) *podRecorder {
	t.Helper()
	w, err := cl.Clientset.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	r := &podRecorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				r.mu.Lock()
				r.events = append(r.events, podEvent{typ: ev.Type, pod: p, at: time.Now()})
				r.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		<-done
	})
	return r
}

func (r *podRecorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// at returns the pod of event i.
func (r *podRecorder) at(i int) *corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[i].pod
}

// seenAt returns when event i was received.
func (r *podRecorder) seenAt(i int) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[i].at
}

// first returns the index of the first event at or after from that matches,
// or -1.
func (r *podRecorder) first(from int, match func(podEvent) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := from; i < len(r.events); i++ {
		if match(r.events[i]) {
			return i
		}
	}
	return -1
}

// containerID is the runtime's ID of a container status's container
// (containerd://<id>).
func containerID(t *testing.T, cs corev1.ContainerStatus) string {
	t.Helper()
	id, ok := strings.CutPrefix(cs.ContainerID, "containerd://")
	if !ok {
		t.Fatalf("container %s: containerID %q is not containerd://<id>", cs.Name, cs.ContainerID)
	}
	return id
}

// runningContainer finds a running container of the node's runtime by ID.
func runningContainer(ctx context.Context, t *testing.T, id string) box.Container {
	t.Helper()
	cs, err := cl.Containers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.ID == id && c.Running && c.PID > 0 {
			return c
		}
	}
	t.Fatalf("container %s is not running", id)
	return box.Container{}
}

// killContainer kills a container's main process with SIGKILL, as the
// kernel's OOM killer or a crash would end it.
func killContainer(ctx context.Context, t *testing.T, id string) {
	t.Helper()
	c := runningContainer(ctx, t, id)
	if err := syscall.Kill(c.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill container %s of %s/%s (pid %d): %v", id, c.PodNamespace, c.PodName, c.PID, err)
	}
}

// namesrvContainers lists the running NameServer containers of pods of a
// namespace, also of pods already deleted from the API.
func namesrvContainers(ctx context.Context, t *testing.T, ns string) []box.Container {
	t.Helper()
	cs, err := cl.Containers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []box.Container
	for _, c := range cs {
		if c.Running && c.PodNamespace == ns && c.Name == render.ContainerName {
			out = append(out, c)
		}
	}
	return out
}
