//go:build e2e

// Package e2e is the end-to-end suite. It runs against one cluster in a box
// (internal/testing/cluster: etcd, kube-apiserver, kube-controller-manager
// and the process kubelet) shared by the whole package, inside the private
// namespaces of hack/e2e-box.sh; `make test-e2e` builds and runs it.
//
// The test binary is also the suite's workload: started by the kubelet with
// E2E_WORKLOAD set, it runs a small HTTP server instead of the tests.
package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kube-namesrv/kube-namesrv/internal/testing/cluster"
	"github.com/kube-namesrv/kube-namesrv/internal/testing/pkubelet"
)

const (
	// workloadEnv selects the workload the test binary runs as.
	workloadEnv = "E2E_WORKLOAD"
	// httpdImage is the image repository the kubelet maps to this binary.
	httpdImage = "e2e/httpd"
	// probeCap keeps ordered StatefulSet steps well under a second.
	probeCap = 250 * time.Millisecond
)

// cl is the package's cluster.
var cl *cluster.Cluster

func TestMain(m *testing.M) {
	if os.Getenv(workloadEnv) == "httpd" {
		os.Exit(runHTTPD(os.Args[1:]))
	}
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	box, err := cluster.BoxFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	// envtest logs through controller-runtime; its own files in the work
	// dir are what matters here.
	ctrllog.SetLogger(logr.Discard())

	c, err := cluster.Start(context.Background(), cluster.Options{
		Box:     box,
		WorkDir: os.Getenv("E2E_WORK_DIR"),
		Kubelet: pkubelet.Config{
			Resolver:       pkubelet.Resolver{Images: map[string][]string{httpdImage: {exe}}},
			ExtraEnv:       extraEnv,
			ProbePeriodCap: probeCap,
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	release := c.StopOnSignal()
	cl = c
	t := c.Timings
	fmt.Printf("e2e: cluster started in %s (control plane %s, controller-manager %s, kubelet %s); work dir %s\n",
		round(t.Start), round(t.ControlPlane), round(t.ControllerManager), round(t.Kubelet), c.WorkDir)

	code := m.Run()

	release()
	if code != 0 {
		c.KeepWorkDir()
		fmt.Printf("e2e: logs kept in %s\n", c.LogDir)
	}
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		code = 1
	}
	fmt.Printf("e2e: cluster stopped in %s\n", round(c.Timings.Stop))
	if left := liveChildren(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: processes still running after Stop: %v\n", left)
		code = 1
	}
	return code
}

// extraEnv is the e2e-only environment: the workload selector, and the
// address to bind, since every Pod shares the box's network namespace.
func extraEnv(_ *corev1.Pod, c *corev1.Container) []corev1.EnvVar {
	if pkubelet.ImageRepository(c.Image) != httpdImage {
		return nil
	}
	return []corev1.EnvVar{
		{Name: workloadEnv, Value: "httpd"},
		{Name: httpdBindEnv, Value: "$(PKUBELET_POD_IP)"},
	}
}

// liveChildren lists the processes (other than zombies) whose parent is this
// process. Inside the box this process is the PID namespace's init, so every
// orphan in the box counts too.
func liveChildren() []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return []string{err.Error()}
	}
	self := os.Getpid()
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may contain spaces.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == self {
			out = append(out, fmt.Sprintf("%d %s", pid, s[strings.IndexByte(s, '(')+1:i]))
		}
	}
	return out
}

func round(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
