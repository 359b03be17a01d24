package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
	"github.com/kube-namesrv/kube-namesrv/test/nstest"
)

// The tests run the plugin as a process against a real API server
// (envtest): the test binary re-executes itself as kubectl-nsc when this
// variable is set, also when kubectl finds it on PATH as a plugin.
const runMainEnv = "KUBECTL_NSC_TEST_RUN_MAIN"

var (
	testEnv *envtest.Environment
	// admin and nobody are kubeconfig files: a cluster admin, and a user
	// without any permission.
	admin, nobody string
	restConfig    *rest.Config
)

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: these tests need kube-apiserver, etcd and kubectl. "+
			`Run make test, or KUBEBUILDER_ASSETS="$(hack/envtest-binaries.sh)" go test ./cmd/kubectl-nsc/`)
		return 1
	}
	// The test's API clients log nothing worth reading.
	log.SetLogger(logr.Discard())
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		// migrate reads NameServices of apache/rocketmq-operator.
		CRDs: []*apiextensionsv1.CustomResourceDefinition{nameServiceCRD()},
	}
	var err error
	if restConfig, err = testEnv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		return 1
	}
	defer func() { _ = testEnv.Stop() }()
	dir, err := os.MkdirTemp("", "kubectl-nsc-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	for _, u := range []struct {
		path   *string
		user   envtest.User
		column string
	}{
		{&admin, envtest.User{Name: "admin", Groups: []string{"system:masters"}}, "admin"},
		{&nobody, envtest.User{Name: "nobody"}, "nobody"},
	} {
		au, err := testEnv.AddUser(u.user, nil)
		if err == nil {
			var b []byte
			if b, err = au.KubeConfig(); err == nil {
				*u.path = filepath.Join(dir, u.column+".kubeconfig")
				err = os.WriteFile(*u.path, b, 0o600)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "kubeconfig:", err)
			return 1
		}
	}
	return m.Run()
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs name (the test binary as kubectl-nsc, or kubectl) with args,
// env added to a clean environment.
func run(t *testing.T, name string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append([]string{runMainEnv + "=1", "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return r
}

func plugin(t *testing.T, code int, env []string, args ...string) result {
	t.Helper()
	r := run(t, os.Args[0], env, args...)
	if r.code != code {
		t.Fatalf("kubectl-nsc %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, r.code, code, r.stdout, r.stderr)
	}
	return r
}

// TestPluginAgainstAnAPIServer creates a NameServerCluster whose status
// lists two NameServers on loopback, as an operator without status.peers
// publishes them (DNS names), with pods whose IPs route (127.0.0.1), and
// runs the plugin against it.
func TestPluginAgainstAnAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := nstest.Start(t, nil), nstest.Start(t, nil)
	broker, err := brokersim.Start(brokersim.Config{Cluster: "DefaultCluster", Name: "broker-a",
		Topics: []body.TopicConfig{brokersim.Topic("TopicA", 4), brokersim.Topic("TBW102", 8)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broker.Close)
	for _, r := range broker.Register(ctx, []string{a.Addr().String(), b.Addr().String()}) {
		if r.Err != nil || r.Response.Code != 0 {
			t.Fatalf("register: %v %+v", r.Err, r.Response)
		}
	}

	cs := kubernetes.NewForConfigOrDie(restConfig)
	const ns = "mq"
	// Another test, or an earlier run (-count), may have made it.
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	var addrs []string
	for i, s := range []*nstest.Server{a, b} {
		name := "example-" + strconv.Itoa(i)
		port := strconv.Itoa(s.Addr().(*net.TCPAddr).Port)
		addrs = append(addrs, name+".example-headless.mq.svc.cluster.local:"+port)
		p, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "namesrv", Image: "namesrv"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			// Unscheduled pods go at once.
			if err := cs.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
				t.Error(err)
			}
		})
		p.Status.PodIP = "127.0.0.1"
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	kc, err := client.New(restConfig, client.Options{Scheme: scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	nsc := &v1alpha1.NameServerCluster{ObjectMeta: metav1.ObjectMeta{Name: "example", Namespace: ns},
		Spec: v1alpha1.NameServerClusterSpec{Replicas: ptr.To[int32](2)}}
	if err := kc.Create(ctx, nsc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := kc.Delete(context.Background(), nsc); err != nil {
			t.Error(err)
		}
	})
	nsc.Status.Addresses = addrs
	nsc.Status.NamesrvAddr = strings.Join(addrs, ";")
	if err := kc.Status().Update(ctx, nsc); err != nil {
		t.Fatal(err)
	}

	env := []string{"KUBECONFIG=" + admin}
	r := plugin(t, 0, env, "clusterList", "example", "-n", ns, "--use-pod-ip")
	if !strings.Contains(r.stdout, "broker-a") || !strings.Contains(r.stdout, "2/2") {
		t.Errorf("clusterList:\n%s", r.stdout)
	}
	// The namespace's only cluster needs no name; --kubeconfig as kubectl's.
	r = plugin(t, 0, nil, "topicRoute", "-t", "TopicA", "--kubeconfig", admin, "--namespace", ns, "--use-pod-ip")
	if !strings.Contains(r.stdout, "broker-a") {
		t.Errorf("topicRoute:\n%s", r.stdout)
	}
	r = plugin(t, 0, env, "updateKvConfig", "example", "-n", ns, "--use-pod-ip", "-s", "NS", "-k", "k", "-v", "v")
	if strings.Count(r.stdout, "] OK") != 2 {
		t.Errorf("updateKvConfig:\n%s", r.stdout)
	}
	plugin(t, 0, env, "diff", "example", "-n", ns, "--use-pod-ip", "--kv-namespace", "NS")
	r = plugin(t, 0, env, "peers", "example", "-n", ns, "--use-pod-ip")
	for _, i := range []int{0, 1} {
		if !strings.Contains(r.stdout, "example-"+strconv.Itoa(i)) {
			t.Errorf("peers:\n%s", r.stdout)
		}
	}

	// By DNS name, from outside the cluster: the names do not resolve.
	r = plugin(t, 3, env, "clusterList", "example", "-n", ns, "--timeout", "2s")
	if !strings.Contains(r.stderr, "hint: peers are reached by their DNS names") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	// A user who may not read NameServerClusters.
	r = plugin(t, 3, []string{"KUBECONFIG=" + nobody}, "clusterList", "example", "-n", ns)
	if !strings.Contains(r.stderr, "forbidden: kubectl nsc needs get on nameserverclusters.rocketmq.kube-namesrv.io") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	r = plugin(t, 3, env, "clusterList", "nothing", "-n", ns)
	if !strings.Contains(r.stderr, "NameServerCluster mq/nothing not found") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	plugin(t, 2, env, "clusterList", "example", "-n", "a:9876;b:9876")
	r = plugin(t, 3, nil, "clusterList", "example", "-n", ns, "--kubeconfig", filepath.Join(t.TempDir(), "missing"))
	if !strings.Contains(r.stderr, "kubeconfig") {
		t.Errorf("stderr:\n%s", r.stderr)
	}

	// kubectl runs it as a plugin: kubectl-nsc on PATH is `kubectl nsc`.
	bin := t.TempDir()
	if err := os.Symlink(os.Args[0], filepath.Join(bin, "kubectl-nsc")); err != nil {
		t.Fatal(err)
	}
	kubectl := testEnv.ControlPlane.KubectlPath
	r = run(t, kubectl, []string{"KUBECONFIG=" + admin, "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")},
		"nsc", "clusterList", "example", "-n", ns, "--use-pod-ip")
	if r.code != 0 || !strings.Contains(r.stdout, "broker-a") {
		t.Errorf("kubectl nsc: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}
