package pkubelet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// These tests run real processes (/bin/sh) through a pod worker, without an
// API server or any network.

func newTestWorker(t *testing.T, pod *corev1.Pod, objects ...*corev1.ConfigMap) *podWorker {
	t.Helper()
	client := fake.NewClientset()
	for _, o := range objects {
		if _, err := client.CoreV1().ConfigMaps(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	k, err := New(Config{Client: client, RootDir: t.TempDir(), ProbePeriodCap: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w := newPodWorker(k, pod)
	if err := w.setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	return w
}

// runContainer runs the pod's first container until the test ends.
func runContainer(t *testing.T, w *podWorker) *container {
	t.Helper()
	c := w.containers[0]
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("container did not stop within 5s")
		}
	})
	return c
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testPod(restart corev1.RestartPolicy, c corev1.Container, volumes ...corev1.Volume) *corev1.Pod {
	c.Name, c.Image = "main", "test/image"
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "p", UID: "uid-1"},
		Spec:       corev1.PodSpec{RestartPolicy: restart, Containers: []corev1.Container{c}, Volumes: volumes},
	}
}

func TestContainerRestartsWithEnvMountsAndLogs(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "cfg"}, Data: map[string]string{"greeting": "hello"}}
	pod := testPod(corev1.RestartPolicyAlways, corev1.Container{
		Command: []string{"/bin/sh", "-c", `echo "run $(POD_NAME) $GREETING $PKUBELET_POD_IP"; cat /etc/cfg/greeting; echo; exit 3`},
		Env: []corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "GREETING", Value: "hi"},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}},
	}, corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}})
	w := newTestWorker(t, pod, cm)
	c := runContainer(t, w)

	waitFor(t, "a restart", func() bool { return c.status().RestartCount >= 1 })
	st := c.status()
	last := st.LastTerminationState.Terminated
	if last == nil || last.ExitCode != 3 || last.Reason != "Error" {
		t.Errorf("last state = %+v, want exit code 3", st.LastTerminationState)
	}
	log, err := os.ReadFile(w.k.LogPath(pod, "main"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"run p hi 127.0.0.", "\nhello\n", "pkubelet: start #0"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

func TestContainerStopEscalatesToSIGKILL(t *testing.T) {
	// The shell says when it ignores SIGTERM: a stop sent before its trap
	// is set would end it with SIGTERM and prove nothing.
	trapped := filepath.Join(t.TempDir(), "trapped")
	pod := testPod(corev1.RestartPolicyAlways, corev1.Container{
		Command: []string{"/bin/sh", "-c", `trap "" TERM; : > "$0"; while :; do sleep 0.05; done`, trapped},
	})
	w := newTestWorker(t, pod)
	c := w.containers[0]
	c.setGrace(200 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.run(ctx)
	}()
	waitFor(t, "the process", func() bool { return c.status().State.Running != nil })
	waitFor(t, "the SIGTERM trap", func() bool { _, err := os.Stat(trapped); return err == nil })
	pid := c.status().ContainerID
	begin := time.Now()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("stop did not escalate to SIGKILL")
	}
	if d := time.Since(begin); d < 200*time.Millisecond {
		t.Errorf("stopped after %v, before the grace period", d)
	}
	st := c.status().State.Terminated
	if st == nil || st.Signal != int32(syscall.SIGKILL) || st.ExitCode != 137 {
		t.Errorf("state = %+v, want killed by SIGKILL (137)", c.status().State)
	}
	n, err := strconv.Atoi(strings.TrimPrefix(pid, "process://"))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(n, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d still exists: %v", n, err)
	}
}

func TestContainerNeverRestartCompletes(t *testing.T) {
	pod := testPod(corev1.RestartPolicyNever, corev1.Container{Command: []string{"/bin/sh", "-c", "exit 0"}})
	w := newTestWorker(t, pod)
	c := runContainer(t, w)
	waitFor(t, "completion", func() bool { done, _ := c.finished(corev1.RestartPolicyNever); return done })
	st := w.desiredStatus(pod)
	if st.Phase != corev1.PodSucceeded {
		t.Errorf("phase = %s, want Succeeded", st.Phase)
	}
	cs := st.ContainerStatuses[0]
	if cs.RestartCount != 0 || cs.State.Terminated == nil || cs.State.Terminated.Reason != "Completed" {
		t.Errorf("container status = %+v", cs)
	}
}

func TestExecProbes(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, corev1.Container{
		Command: []string{"/bin/sh", "-c", "sleep 0.3; touch /work/ready; sleep 30"},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "test -f /work/ready"}}},
			PeriodSeconds: 10, // capped to 50ms by the test kubelet
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work"}},
	}, corev1.Volume{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	w := newTestWorker(t, pod)
	c := runContainer(t, w)
	waitFor(t, "the process", func() bool { return c.status().State.Running != nil })
	if c.status().Ready {
		t.Error("ready before the readiness probe passed")
	}
	waitFor(t, "readiness", func() bool { return c.status().Ready })
	st := w.desiredStatus(pod)
	if st.Phase != corev1.PodRunning || !conditionTrue(st.Conditions, corev1.PodReady) {
		t.Errorf("phase %s, conditions %+v", st.Phase, st.Conditions)
	}
}

func TestLivenessProbeRestarts(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, corev1.Container{
		Command: []string{"/bin/sh", "-c", "sleep 30"},
		LivenessProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/false"}}},
			FailureThreshold: 2,
		},
	})
	grace := int64(0)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	w := newTestWorker(t, pod)
	c := runContainer(t, w)
	waitFor(t, "a liveness restart", func() bool { return c.status().RestartCount >= 1 })
	last := c.status().LastTerminationState.Terminated
	if last == nil || !strings.Contains(last.Message, "liveness probe failed") {
		t.Errorf("last state = %+v, want a liveness failure", last)
	}
}

// TestPreStopSleepComesBeforeSIGTERM: a preStop sleep keeps the process
// running, untouched, before the SIGTERM, and counts against the grace
// period, as with the kubelet.
func TestPreStopSleepComesBeforeSIGTERM(t *testing.T) {
	dir := t.TempDir()
	termed := filepath.Join(dir, "termed")
	pod := testPod(corev1.RestartPolicyAlways, corev1.Container{
		Command:   []string{"/bin/sh", "-c", `trap 'date +%s%N > "$0"; exit 0' TERM; while :; do sleep 0.05; done`, termed},
		Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}}},
	})
	w := newTestWorker(t, pod)
	c := w.containers[0]
	c.setGrace(5 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.run(ctx)
	}()
	waitFor(t, "the process", func() bool { return c.status().State.Running != nil })
	time.Sleep(200 * time.Millisecond) // the trap is set
	begin := time.Now()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the container did not stop")
	}
	b, err := os.ReadFile(termed)
	if err != nil {
		t.Fatalf("the process never got SIGTERM: %v", err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if at := time.Unix(0, ns); at.Sub(begin) < 900*time.Millisecond {
		t.Errorf("SIGTERM came %v after the stop, before the 1 s preStop sleep ended", at.Sub(begin))
	}
	if st := c.status().State.Terminated; st == nil || st.ExitCode != 0 {
		t.Errorf("state = %+v, want a clean exit on SIGTERM", c.status().State)
	}
}
