//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// webManifest is a plain StatefulSet with everything the NameServer's will
// rely on: a headless Service, per-pod DNS names, an HTTP readiness probe
// on a named port, and a configMap volume whose path is passed in args.
const webManifest = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  greeting: hello
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  clusterIP: None
  selector:
    app: web
  ports:
  - name: http
    port: 8080
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: web
  replicas: 3
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: httpd
        image: e2e/httpd:v1
        args: ["--port=8080", "--config=/etc/web/greeting"]
        ports:
        - name: http
          containerPort: 8080
        readinessProbe:
          httpGet:
            path: /healthz
            port: http
          periodSeconds: 10
        volumeMounts:
        - name: config
          mountPath: /etc/web
      volumes:
      - name: config
        configMap:
          name: web-config
`

// TestStatefulSetInABox proves the harness with a plain StatefulSet. The
// steps share one StatefulSet and run in order; the first failure stops
// the test.
func TestStatefulSetInABox(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := cl.Clientset
	ns := createNamespace(ctx, t, "harness-")
	rec := recordPods(ctx, t, ns, "app=web")

	step := func(name string, f func(t *testing.T)) {
		begin := time.Now()
		ok := t.Run(name, f)
		t.Logf("step %-22s %v", name, round(time.Since(begin)))
		if !ok {
			t.FailNow()
		}
	}

	step("ordered-ready", func(t *testing.T) {
		manifest := filepath.Join(t.TempDir(), "web.yaml")
		if err := os.WriteFile(manifest, []byte(webManifest), 0o644); err != nil {
			t.Fatal(err)
		}
		kubectl(ctx, t, "apply", "-n", ns, "-f", manifest)
		waitReadyReplicas(ctx, t, ns, 3)
		for i := 1; i < 3; i++ {
			assertCreatedAfterReady(t, rec, 0, podName(i), podName(i-1))
		}
	})

	step("dns", func(t *testing.T) {
		for _, p := range listPods(ctx, t, ns) {
			url := fmt.Sprintf("http://%s.web.%s.svc.cluster.local:8080/", p.Name, ns)
			want := fmt.Sprintf("%s %s ", p.Name, p.Status.PodIP)
			// Go re-reads /etc/hosts at most every 5s.
			eventually(t, 10*time.Second, func() (bool, string) {
				body, err := get(ctx, url)
				return err == nil && strings.HasPrefix(body, want), fmt.Sprintf("GET %s: %q, %v (want prefix %q)", url, body, err, want)
			})
		}
	})

	step("endpointslices", func(t *testing.T) {
		waitEndpointsMatchReadyPods(ctx, t, ns, 3)
	})

	step("quiet-when-steady", func(t *testing.T) {
		// Probes keep running, but a steady Pod's status is not rewritten.
		mark := rec.len()
		time.Sleep(time.Second)
		if n := rec.len() - mark; n != 0 {
			t.Errorf("%d pod events in a second of steady state; the kubelet rewrites unchanged status", n)
		}
	})

	step("configmap-refresh", func(t *testing.T) {
		before := listPods(ctx, t, ns)
		for _, p := range before {
			if body := mustGet(ctx, t, podURL(ns, p.Name, "/config")); body != "hello" {
				t.Fatalf("%s /config = %q, want hello", p.Name, body)
			}
			// The kubelet's layout, which file watchers rely on.
			link, err := os.Readlink(filepath.Join(cl.Kubelet.PodDir(&p), "volumes", "config", "..data"))
			if err != nil || !strings.HasPrefix(link, "..20") {
				t.Fatalf("%s: ..data -> %q, %v; want a timestamped directory", p.Name, link, err)
			}
		}
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "web-config", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["greeting"] = "bonjour"
		if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, p := range before {
			eventually(t, 10*time.Second, func() (bool, string) {
				body, err := get(ctx, podURL(ns, p.Name, "/config"))
				return body == "bonjour", fmt.Sprintf("%s /config = %q, %v", p.Name, body, err)
			})
		}
		for i, p := range listPods(ctx, t, ns) {
			old, now := before[i].Status.ContainerStatuses[0], p.Status.ContainerStatuses[0]
			if now.RestartCount != 0 || now.ContainerID != old.ContainerID {
				t.Errorf("%s restarted for a ConfigMap change: %s -> %s, restarts %d", p.Name, old.ContainerID, now.ContainerID, now.RestartCount)
			}
		}
	})

	step("restart-killed-process", func(t *testing.T) {
		p := getPod(ctx, t, ns, podName(1))
		old, uid := p.Status.ContainerStatuses[0], p.UID
		pid := containerPID(t, old)
		mark := rec.len()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill %s (pid %d): %v", p.Name, pid, err)
		}
		eventually(t, 15*time.Second, func() (bool, string) {
			p = getPod(ctx, t, ns, podName(1))
			cs := p.Status.ContainerStatuses[0]
			return cs.RestartCount == 1 && cs.Ready && podReady(&p), fmt.Sprintf("restarts %d, ready %v", cs.RestartCount, cs.Ready)
		})
		now := p.Status.ContainerStatuses[0]
		if now.ContainerID == old.ContainerID || p.UID != uid {
			t.Errorf("container not replaced in the same pod: %s -> %s", old.ContainerID, now.ContainerID)
		}
		if last := now.LastTerminationState.Terminated; last == nil || last.ExitCode != 137 || last.Signal != 9 {
			t.Errorf("lastState = %+v, want exit code 137 (SIGKILL)", now.LastTerminationState)
		}
		if rec.first(mark, func(e podEvent) bool { return e.pod.Name == podName(1) && !podReady(e.pod) }) < 0 {
			t.Errorf("%s was never reported NotReady while its process was down", podName(1))
		}
		assertGone(t, pid)
		waitEndpointsMatchReadyPods(ctx, t, ns, 3)
	})

	step("scale-up", func(t *testing.T) {
		mark := rec.len()
		kubectl(ctx, t, "scale", "-n", ns, "statefulset/web", "--replicas=5")
		waitReadyReplicas(ctx, t, ns, 5)
		assertCreatedAfterReady(t, rec, mark, podName(4), podName(3))
		waitEndpointsMatchReadyPods(ctx, t, ns, 5)
	})

	step("scale-down", func(t *testing.T) {
		var pids []int
		for i := 2; i < 5; i++ {
			pids = append(pids, containerPID(t, getPod(ctx, t, ns, podName(i)).Status.ContainerStatuses[0]))
		}
		mark := rec.len()
		kubectl(ctx, t, "scale", "-n", ns, "statefulset/web", "--replicas=2")
		eventually(t, 30*time.Second, func() (bool, string) {
			names := podNames(listPods(ctx, t, ns))
			return slices.Equal(names, []string{podName(0), podName(1)}), fmt.Sprintf("pods %v", names)
		})
		// OrderedReady: the highest ordinal goes first, each one fully
		// deleted (the kubelet's final delete) before the next starts.
		for i := 4; i > 2; i-- {
			deleted := rec.first(mark, func(e podEvent) bool { return e.typ == watch.Deleted && e.pod.Name == podName(i) })
			next := rec.first(mark, func(e podEvent) bool { return e.pod.Name == podName(i-1) && e.pod.DeletionTimestamp != nil })
			if deleted < 0 || next < 0 || next < deleted {
				t.Errorf("%s began terminating (event %d) before %s was deleted (event %d)", podName(i-1), next, podName(i), deleted)
			}
		}
		for _, pid := range pids {
			assertGone(t, pid)
		}
		waitEndpointsMatchReadyPods(ctx, t, ns, 2)
	})

	step("garbage-collection", func(t *testing.T) {
		var pids []int
		for _, p := range listPods(ctx, t, ns) {
			pids = append(pids, containerPID(t, p.Status.ContainerStatuses[0]))
		}
		if err := cs.AppsV1().StatefulSets(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, func() (bool, string) {
			names := podNames(listPods(ctx, t, ns))
			return len(names) == 0, fmt.Sprintf("pods left: %v", names)
		})
		for _, pid := range pids {
			assertGone(t, pid)
		}
	})
}

func podName(i int) string { return "web-" + strconv.Itoa(i) }

func podURL(ns, pod, path string) string {
	return fmt.Sprintf("http://%s.web.%s.svc.cluster.local:8080%s", pod, ns, path)
}

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

func getPod(ctx context.Context, t *testing.T, ns, name string) corev1.Pod {
	t.Helper()
	p, err := cl.Clientset.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return *p
}

// listPods returns the StatefulSet's Pods, by name.
func listPods(ctx context.Context, t *testing.T, ns string) []corev1.Pod {
	t.Helper()
	l, err := cl.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(l.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return l.Items
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

func waitReadyReplicas(ctx context.Context, t *testing.T, ns string, n int32) {
	t.Helper()
	eventually(t, 30*time.Second, func() (bool, string) {
		s, err := cl.Clientset.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return s.Status.ReadyReplicas == n && s.Status.Replicas == n && *s.Spec.Replicas == n, describeSTS(s)
	})
}

func describeSTS(s *appsv1.StatefulSet) string {
	return fmt.Sprintf("statefulset %s: replicas %d, ready %d", s.Name, s.Status.Replicas, s.Status.ReadyReplicas)
}

// waitEndpointsMatchReadyPods waits until the Service's EndpointSlices list
// as ready exactly the addresses of the n Ready Pods.
func waitEndpointsMatchReadyPods(ctx context.Context, t *testing.T, ns string, n int) {
	t.Helper()
	eventually(t, 10*time.Second, func() (bool, string) {
		var ready []string
		for _, p := range listPods(ctx, t, ns) {
			if podReady(&p) && p.DeletionTimestamp == nil {
				ready = append(ready, p.Status.PodIP)
			}
		}
		l, err := cl.Clientset.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil {
			return false, err.Error()
		}
		var listed []string
		for _, s := range l.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready == nil || *e.Conditions.Ready {
					listed = append(listed, e.Addresses...)
				}
			}
		}
		slices.Sort(ready)
		slices.Sort(listed)
		return len(ready) == n && slices.Equal(ready, listed), fmt.Sprintf("ready pod IPs %v, ready endpoints %v (want %d)", ready, listed, n)
	})
}

// assertCreatedAfterReady checks, on the recorded watch, that pod was first
// seen only after prev had been reported Ready.
func assertCreatedAfterReady(t *testing.T, rec *podRecorder, from int, pod, prev string) {
	t.Helper()
	ready := rec.first(from, func(e podEvent) bool { return e.pod.Name == prev && podReady(e.pod) })
	created := rec.first(from, func(e podEvent) bool { return e.pod.Name == pod })
	if ready < 0 || created < 0 || created < ready {
		t.Errorf("%s created (event %d) before %s was Ready (event %d)", pod, created, prev, ready)
	}
}

func containerPID(t *testing.T, cs corev1.ContainerStatus) int {
	t.Helper()
	s, ok := strings.CutPrefix(cs.ContainerID, "process://")
	pid, err := strconv.Atoi(s)
	if !ok || err != nil {
		t.Fatalf("container %s: containerID %q is not process://<pid>", cs.Name, cs.ContainerID)
	}
	return pid
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
