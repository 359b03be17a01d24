//go:build e2e

// Package e2e is the end-to-end suite. It runs against one cluster in a box
// (test/e2e/cluster: etcd, kube-apiserver, kube-controller-manager
// and the process kubelet) shared by the whole package, inside the private
// namespaces of hack/e2e-box.sh, with the operator installed from
// config/default and its manager running in this process (operator_test.go).
// The NameServer pods run the namesrv binary that `make build` put in
// $E2E_BIN_DIR; `make test-e2e` builds everything and runs the suite.
//
// The test binary is also the harness smoke test's workload: started by the
// kubelet with E2E_WORKLOAD set, it runs a small HTTP server instead of the
// tests.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/internal/version"
	"github.com/kube-namesrv/kube-namesrv/test/e2e/cluster"
	"github.com/kube-namesrv/kube-namesrv/test/e2e/pkubelet"
)

const (
	// workloadEnv selects the workload the test binary runs as.
	workloadEnv = "E2E_WORKLOAD"
	// httpdImage is the image repository the kubelet maps to this binary.
	httpdImage = "e2e/httpd"
	// probeCap keeps ordered StatefulSet steps well under a second.
	probeCap = 250 * time.Millisecond
	// repoRoot is relative to the package directory, where `go test` and
	// `make test-e2e` run the suite.
	repoRoot = "../.."
)

var (
	// cl is the package's cluster.
	cl *cluster.Cluster
	// box is the private network namespace the suite runs in.
	box *cluster.Box
	// namesrvBin is the namesrv binary the NameServer pods run.
	namesrvBin string
)

func TestMain(m *testing.M) {
	if os.Getenv(workloadEnv) == "httpd" {
		os.Exit(runHTTPD(os.Args[1:]))
	}
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	var err error
	if box, err = cluster.BoxFromEnv(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if namesrvBin, err = builtBinary("namesrv"); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	// envtest logs through controller-runtime; its own files in the work
	// dir are what matters here.
	ctrllog.SetLogger(logr.Discard())

	c, err := cluster.Start(context.Background(), cluster.Options{
		Box:     box,
		WorkDir: os.Getenv("E2E_WORK_DIR"),
		// Installed before the controller-manager starts, so that its
		// garbage collector knows NameServerClusters from the beginning;
		// installing the operator applies the same file again.
		CRDDirectoryPaths: []string{filepath.Join(repoRoot, "config", "crd", "bases")},
		Kubelet: pkubelet.Config{
			// The operator's real pod template runs unchanged: its image
			// and its "/namesrv" command map to the built binary.
			Resolver: pkubelet.Resolver{
				Images:   map[string][]string{httpdImage: {exe}, version.Image: {namesrvBin}},
				Commands: map[string]string{"/namesrv": namesrvBin},
			},
			ExtraEnv:       extraEnv,
			ProbePeriodCap: probeCap,
			// Rolls restart pods one after another: the NameServer pods'
			// 5 s preStop pause would dominate the suite's time.
			PreStopSleepCap: 500 * time.Millisecond,
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	// The manager runs in this process, against the cluster: on a signal
	// it must stop before the cluster does.
	var (
		mu           sync.Mutex
		stopOperator = func() error { return nil }
	)
	release := c.StopOnSignal(func() {
		mu.Lock()
		defer mu.Unlock()
		if err := stopOperator(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: stopping the manager:", err)
		}
	})
	cl = c
	t := c.Timings
	fmt.Printf("e2e: cluster started in %s (control plane %s, controller-manager %s, kubelet %s); work dir %s\n",
		round(t.Start), round(t.ControlPlane), round(t.ControllerManager), round(t.Kubelet), c.WorkDir)

	code := 1
	if stop, err := installOperator(c); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: installing the operator:", err)
	} else {
		mu.Lock()
		stopOperator = stop
		mu.Unlock()
		code = m.Run()
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: stopping the manager:", err)
			code = 1
		}
	}

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

// builtBinary finds a binary of `make build` in $E2E_BIN_DIR.
func builtBinary(name string) (string, error) {
	dir := os.Getenv("E2E_BIN_DIR")
	if dir == "" {
		return "", fmt.Errorf("E2E_BIN_DIR is not set; it names the directory holding the %s binary (`make test-e2e` sets it)", name)
	}
	p, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		return "", fmt.Errorf("locating %s: %w", name, err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("%w (run `make build`)", err)
	}
	if fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not executable", p)
	}
	return p, nil
}

// extraEnv is the e2e-only environment. Every Pod shares the box's network
// namespace, so each process must bind its own Pod IP rather than all
// interfaces; production manifests never set these variables.
func extraEnv(_ *corev1.Pod, c *corev1.Container) []corev1.EnvVar {
	switch {
	case pkubelet.ImageRepository(c.Image) == httpdImage:
		return []corev1.EnvVar{
			{Name: workloadEnv, Value: "httpd"},
			{Name: httpdBindEnv, Value: "$(PKUBELET_POD_IP)"},
		}
	case c.Name == render.ContainerName && pkubelet.ImageRepository(c.Image) == version.Image:
		return []corev1.EnvVar{{Name: "NAMESRV_BIND_ADDRESS", Value: "$(PKUBELET_POD_IP)"}}
	}
	return nil
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
