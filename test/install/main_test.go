// Package install checks the ways users install the operator: the Helm chart
// (charts/kube-namesrv), kustomize (config/default, config/samples) and the
// container image's binaries. Everything is rendered by the real helm and
// kubectl binaries and applied to one envtest kube-apiserver for the whole
// package; `make test` builds helm, kubectl and the image binaries and points
// this package at them.
package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// Paths relative to this package's directory, where `go test` runs it.
var (
	repoRoot = filepath.Join("..", "..")
	chartDir = filepath.Join(repoRoot, "charts", "kube-namesrv")
)

// fieldOwner is the field manager of every apply this package sends.
const fieldOwner = "install-test"

// The package's shared environment, set up once by TestMain.
var (
	testEnv *envtest.Environment
	// k8s acts as a cluster administrator; its warnings land in warned.
	k8s    client.Client
	warned = &warningRecorder{}
	// kubeVersion is the API server's version; charts are rendered for it.
	kubeVersion string
	// adminKubeconfig is a kubeconfig file for helm and kubectl.
	adminKubeconfig string
	helmBin         string
	kubectlBin      string
	imageBinDir     string
	// toolEnv is the environment of helm and kubectl: their caches and
	// configuration live in a temporary HOME, never the user's.
	toolEnv []string
	scheme  = runtime.NewScheme()
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if err := findTools(); err != nil {
		fmt.Fprintln(os.Stderr, "install tests:", err)
		return 1
	}
	logf.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))

	home, err := os.MkdirTemp("", "install-test-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "install tests:", err)
		return 1
	}
	defer os.RemoveAll(home)
	toolEnv = append(os.Environ(), "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, "cache"),
		"XDG_CONFIG_HOME="+filepath.Join(home, "config"), "XDG_DATA_HOME="+filepath.Join(home, "data"))

	// The chart's CRD is installed for real, as `helm install` does from
	// crds/, and so are stand-ins for the Prometheus Operator's CRDs: objects
	// of a kind can only be dry-run once their CRD is established.
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(chartDir, "crds"), filepath.Join("testdata", "crds")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := testEnv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "install tests: starting envtest:", err)
		return 1
	}
	defer func() {
		if err := testEnv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "install tests: stopping envtest:", err)
		}
	}()
	if err := setUpClients(cfg, home); err != nil {
		fmt.Fprintln(os.Stderr, "install tests:", err)
		return 1
	}
	return m.Run()
}

// findTools locates the binaries `make test` provides. Missing ones fail the
// package: an install check that silently does nothing would pass CI.
func findTools() error {
	const how = "run `make test`, which builds and sets it"
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return fmt.Errorf("KUBEBUILDER_ASSETS is not set: this package needs kube-apiserver, etcd and kubectl; %s", how)
	}
	helmBin = os.Getenv("HELM")
	if helmBin == "" {
		return fmt.Errorf("HELM is not set: it names the helm binary; %s", how)
	}
	imageBinDir = os.Getenv("IMAGE_BIN_DIR")
	if imageBinDir == "" {
		return fmt.Errorf("IMAGE_BIN_DIR is not set: it names the directory of the image's binaries (make image-binaries); %s", how)
	}
	var err error
	if helmBin, err = executable(helmBin); err != nil {
		return err
	}
	if kubectlBin, err = executable(filepath.Join(assets, "kubectl")); err != nil {
		return fmt.Errorf("%w (hack/envtest-binaries.sh builds kubectl next to kube-apiserver)", err)
	}
	if imageBinDir, err = filepath.Abs(imageBinDir); err != nil {
		return err
	}
	return nil
}

func executable(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file", path)
	}
	return abs, nil
}

func setUpClients(cfg *rest.Config, home string) error {
	admin := rest.CopyConfig(cfg)
	admin.WarningHandler = warned
	var err error
	if k8s, err = client.New(admin, client.Options{Scheme: scheme}); err != nil {
		return fmt.Errorf("creating the client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return fmt.Errorf("reading the server version: %w", err)
	}
	kubeVersion = v.GitVersion
	user, err := testEnv.AddUser(envtest.User{Name: "install-test-admin", Groups: []string{"system:masters"}}, cfg)
	if err != nil {
		return fmt.Errorf("creating the admin user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return err
	}
	adminKubeconfig = filepath.Join(home, "admin.kubeconfig")
	return os.WriteFile(adminKubeconfig, kc, 0o600)
}

// warningRecorder keeps the warnings the API server sends (deprecated APIs,
// Pod Security violations), so that an accepted object with a warning still
// fails.
type warningRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningRecorder) HandleWarningHeader(code int, _, text string) {
	if code != 299 || text == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// run runs a tool with the tools' environment and returns its stdout; a
// failure carries stderr.
func run(ctx context.Context, bin string, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = toolEnv
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// decodeAll parses a multi-document YAML stream; empty documents are skipped.
func decodeAll(b []byte) ([]*unstructured.Unstructured, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := map[string]any{}
		err := d.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decoding YAML: %w", err)
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}

// restrictedWarnings makes the API server warn about any pod template in
// the namespace that the restricted Pod Security Standard would refuse.
var restrictedWarnings = map[string]string{"pod-security.kubernetes.io/warn": "restricted"}

// ensureNamespaces creates, for real, every namespace the objects live in or
// create (a namespace that exists only in a dry run holds nothing), warning
// of pods that are not restricted. A namespace that exists is left as it is.
func ensureNamespaces(ctx context.Context, t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	seen := map[string]bool{}
	for _, o := range objs {
		name := o.GetNamespace()
		if o.GetKind() == "Namespace" {
			name = o.GetName()
		}
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		createNamespace(ctx, t, name, restrictedWarnings)
	}
}

// createNamespace creates a namespace unless it exists.
func createNamespace(ctx context.Context, t *testing.T, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := k8s.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// dryRunApply sends every object to the API server as a server-side apply
// in dry-run mode: the server validates, defaults and admits it (schema,
// CEL rules, Pod Security warnings) but stores nothing. An error or a
// warning fails the test. Namespace objects are skipped: ensureNamespaces
// created them for real.
func dryRunApply(ctx context.Context, t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	ensureNamespaces(ctx, t, objs)
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			continue
		}
		warnings, err := dryRunOne(ctx, o)
		if err != nil {
			t.Errorf("%s: the API server refused it: %v", describe(o), err)
		}
		if len(warnings) > 0 {
			t.Errorf("%s: the API server warned: %s", describe(o), strings.Join(warnings, "; "))
		}
	}
}

// dryRunOne applies one object in dry-run mode and returns the warnings
// the API server sent with its answer.
func dryRunOne(ctx context.Context, o *unstructured.Unstructured) ([]string, error) {
	warned.take()
	err := k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()),
		client.DryRunAll, client.FieldOwner(fieldOwner), client.ForceOwnership)
	return warned.take(), err
}

func describe(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return fmt.Sprintf("%s %s", o.GetKind(), o.GetName())
	}
	return fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
}

// objectsOf returns the objects of a kind.
func objectsOf(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// only returns the single object of a kind, failing when there is not
// exactly one.
func only(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	found := objectsOf(objs, kind)
	if len(found) != 1 {
		t.Fatalf("want exactly one %s, got %d", kind, len(found))
	}
	return found[0]
}

// typed converts an object into its Go type, refusing unknown fields.
func typed[T any](t *testing.T, o *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, out, true); err != nil {
		t.Fatalf("%s: %v", describe(o), err)
	}
	return out
}

// testContext is bounded so that a hung tool or request fails the test
// instead of the whole run.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
