//go:build e2e

// Package e2e is the end-to-end suite. It runs against one box (package box:
// a one-node cluster with a real kubelet, containerd, runc, CNI bridge,
// kube-proxy and CoreDNS) shared by the whole package, inside the private
// namespaces of hack/e2e-box.sh. The images are this build's, packed by
// tools/mkimage and imported into the node's containerd; the operator is
// installed in the cluster by `helm install` of charts/kube-namesrv
// (operator_test.go). docs/e2e.md says how to run it and how to add a
// scenario.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kube-namesrv/kube-namesrv/internal/version"
	"github.com/kube-namesrv/kube-namesrv/test/e2e/box"
)

const (
	// repoRoot is relative to the package directory, where `go test` and
	// `make test-e2e` run the suite.
	repoRoot = "../.."
	// pauseImage is the pods' sandbox image: tools/pause, packed with the
	// project image (make e2e-images).
	pauseImage = "kube-namesrv-e2e/pause:1"
)

var (
	// cl is the package's box.
	cl *box.Box
	// image is this build's image, which the operator runs and deploys by
	// default; nextImage is the same image under a second tag, a release
	// to upgrade to.
	image, nextImage string
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

// suiteEnv reads what `make test-e2e` hands the suite.
func suiteEnv() (box.Options, error) {
	o := box.Options{PauseImage: pauseImage}
	need := func(name, what string) (string, error) {
		v := os.Getenv(name)
		if v == "" {
			return "", fmt.Errorf("%s is not set: it names %s (`make test-e2e` sets it)", name, what)
		}
		return v, nil
	}
	var err error
	if o.ControlPlaneDir, err = need("KUBEBUILDER_ASSETS", "the control-plane binaries (hack/envtest-binaries.sh)"); err != nil {
		return o, err
	}
	if o.NodeDir, err = need("E2E_NODE_ASSETS", "the node binaries (hack/node-binaries.sh)"); err != nil {
		return o, err
	}
	if o.Helm, err = need("HELM", "the helm binary"); err != nil {
		return o, err
	}
	images, err := need("E2E_IMAGES", "the directory of the packed images (make e2e-images)")
	if err != nil {
		return o, err
	}
	for _, f := range []string{"pause.tar", "kube-namesrv.tar"} {
		o.Images = append(o.Images, filepath.Join(images, f))
	}
	tag, err := need("E2E_IMAGE_TAG", "the tag of this build's image")
	if err != nil {
		return o, err
	}
	next, err := need("E2E_NEXT_TAG", "the image's second tag, to upgrade to")
	if err != nil {
		return o, err
	}
	image, nextImage = version.Image+":"+tag, version.Image+":"+next
	// Installed before the controller-manager starts, so that its garbage
	// collector knows NameServerClusters from the beginning; the chart's
	// copy is the same file (make verify-chart-crds).
	o.CRDs = []string{filepath.Join(repoRoot, "config", "crd", "bases")}
	return o, nil
}

func runSuite(m *testing.M) int {
	opts, err := suiteEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	// controller-runtime's client logs nothing the suite needs.
	ctrllog.SetLogger(logr.Discard())
	b, err := box.Start(context.Background(), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	cl = b
	release := b.StopOnSignal()
	t := b.Timings
	fmt.Printf("e2e: box started in %s (namespace %s, control plane %s, images %s, node %s, DNS %s); work dir %s\n",
		round(t.Start), round(t.Namespace), round(t.ControlPlane), round(t.Images), round(t.Node), round(t.DNS), b.WorkDir)

	code := 1
	if err := installOperator(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: installing the operator:", err)
	} else {
		code = m.Run()
		if err := checkAuthorised(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			code = 1
		}
	}

	release()
	if code != 0 {
		b.KeepWorkDir()
		fmt.Printf("e2e: logs kept in %s\n", b.LogDir)
	}
	if err := b.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		code = 1
	}
	fmt.Printf("e2e: box stopped in %s\n", round(b.Timings.Stop))
	if left := liveProcesses(); len(left) > 0 {
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

// liveProcesses lists the processes (other than zombies) in the box's PID
// namespace besides this one, which is its init: after Stop there must be
// none.
func liveProcesses() []string {
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
		// pid (comm) state ...; comm may contain spaces.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		if f := strings.Fields(s[i+1:]); len(f) > 0 && f[0] == "Z" {
			continue
		}
		out = append(out, fmt.Sprintf("%d %s", pid, s[strings.IndexByte(s, '(')+1:i]))
	}
	return out
}

func round(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
