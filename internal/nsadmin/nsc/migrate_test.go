package nsc

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/kube-namesrv/kube-namesrv/internal/migrate"
	"github.com/kube-namesrv/kube-namesrv/internal/nsadmin"
)

// fixtures are the converter's test manifests.
var fixtures = filepath.Join("..", "..", "migrate", "testdata")

func fixtureNameService(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, file))
	if err != nil {
		t.Fatal(err)
	}
	nss, _, err := migrate.Decode(bytes.NewReader(b))
	if err != nil || len(nss) != 1 {
		t.Fatalf("%s: %d NameServices, %v", file, len(nss), err)
	}
	return nss[0]
}

func newMigrateFake(objs ...runtime.Object) *fake.FakeDynamicClient {
	return fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		clustersResource:            "NameServerClusterList",
		migrate.NameServiceResource: "NameServiceList",
	}, objs...)
}

// TestMigrate runs kubectl nsc migrate against a fake API server and on
// files: output, exit codes and messages, and that nothing is written.
func TestMigrate(t *testing.T) {
	prod := fixtureNameService(t, "production.yaml")
	other := prod.DeepCopy()
	other.SetName("second")
	golden, err := os.ReadFile(filepath.Join(fixtures, "production.golden.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	exampleGolden, err := os.ReadFile(filepath.Join(fixtures, "example-nameservice.golden.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(filepath.Join(fixtures, "example-nameservice.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		objs    []runtime.Object
		args    []string
		stdin   string
		code    int
		stdout  []byte
		has     string // in stdout
		stderr  string
		noFetch bool // the API is not asked anything
	}{
		{name: "by name", objs: []runtime.Object{prod, other}, args: []string{"namesrv", "-n", "rocketmq"}, stdout: golden},
		{name: "the only one of the namespace", objs: []runtime.Object{prod}, args: []string{"-n", "rocketmq"}, stdout: golden},
		{name: "--name", objs: []runtime.Object{prod}, args: []string{"namesrv", "-n", "rocketmq", "--name", "nsc"}, has: "\n  name: nsc\n"},
		{name: "several, none named", objs: []runtime.Object{prod, other}, args: []string{"-n", "rocketmq"}, code: nsadmin.ExitUsage,
			stderr: "namespace rocketmq holds 2 NameServices (namesrv, second): name one"},
		{name: "none in the namespace", objs: []runtime.Object{prod}, args: []string{"-n", "empty"}, code: nsadmin.ExitFailed,
			stderr: "no NameService in namespace empty (-n selects another, -f reads a file)"},
		{name: "not found", objs: []runtime.Object{prod}, args: []string{"gone", "-n", "rocketmq"}, code: nsadmin.ExitFailed,
			stderr: "NameService rocketmq/gone not found"},
		{name: "a file", args: []string{"-f", filepath.Join(fixtures, "example-nameservice.yaml")}, stdout: exampleGolden, noFetch: true},
		{name: "stdin", args: []string{"-f", "-"}, stdin: string(example), stdout: exampleGolden, noFetch: true},
		{name: "a file, by name", args: []string{"-f", filepath.Join(fixtures, "example-cluster.yaml"), "name-service"}, has: "name: name-service-nsc", noFetch: true},
		{name: "a file without the name", args: []string{"-f", filepath.Join(fixtures, "example-cluster.yaml"), "other"}, code: nsadmin.ExitFailed,
			stderr: "no NameService other (rocketmq.apache.org/v1alpha1); it holds ConfigMap broker-config, Broker broker, Console console", noFetch: true},
		{name: "a file with -n of its namespace", args: []string{"-f", filepath.Join(fixtures, "production.yaml"), "-n", "rocketmq"}, stdout: golden, noFetch: true},
		{name: "a file with -n of another namespace", args: []string{"-f", filepath.Join(fixtures, "production.yaml"), "-n", "other"}, code: nsadmin.ExitUsage,
			stderr: "the NameService namesrv is in namespace rocketmq, not other (-n)", noFetch: true},
		{name: "-n for a file without namespace", args: []string{"-f", "-", "-n", "mq"}, stdin: string(example), has: "\n  namespace: mq\n", noFetch: true},
		{name: "a file that is not there", args: []string{"-f", filepath.Join(t.TempDir(), "missing.yaml")}, code: nsadmin.ExitFailed,
			stderr: "missing.yaml: no such file", noFetch: true},
		{name: "a file that is not YAML", args: []string{"-f", "-"}, stdin: "a: [", code: nsadmin.ExitFailed, stderr: "stdin: document 1:", noFetch: true},
		{name: "a NameService that does not convert", args: []string{"-f", "-"}, code: nsadmin.ExitFailed, noFetch: true,
			stdin:  "apiVersion: rocketmq.apache.org/v1alpha1\nkind: NameService\nmetadata:\n  name: a\nspec:\n  size: many\n",
			stderr: "NameService a has a spec this converter cannot read"},
		{name: "two names", args: []string{"a", "b"}, code: nsadmin.ExitUsage, stderr: `one NameService at a time, got ["a" "b"]`, noFetch: true},
		{name: "--dry-run alone", args: []string{"a", "--dry-run"}, code: nsadmin.ExitUsage, stderr: "--dry-run goes with --apply", noFetch: true},
		{name: "a bad --name", args: []string{"a", "--name", "Upper"}, code: nsadmin.ExitUsage,
			stderr: `--name: NameServerCluster name "Upper": must start with a lowercase letter`, noFetch: true},
		{name: "a bad namespace", args: []string{"a", "-n", "a:9876"}, code: nsadmin.ExitUsage, stderr: `namespace "a:9876"`, noFetch: true},
		{name: "an unknown flag", args: []string{"--force"}, code: nsadmin.ExitUsage, stderr: "unknown flag: --force", noFetch: true},
		{name: "help", args: []string{"-h"}, has: "Nothing is written to the cluster unless --apply is given", noFetch: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := newMigrateFake(tt.objs...)
			var stdout, stderr bytes.Buffer
			f := &Frontend{client: client, stdin: strings.NewReader(tt.stdin)}
			code := Main(f, append([]string{"migrate"}, tt.args...), nsadmin.IO{Stdout: &stdout, Stderr: &stderr})
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, &stdout, &stderr)
			}
			if tt.stdout != nil && !bytes.Equal(stdout.Bytes(), tt.stdout) {
				t.Errorf("stdout:\n%s\nwant:\n%s", &stdout, tt.stdout)
			}
			if !strings.Contains(stdout.String(), tt.has) {
				t.Errorf("stdout lacks %q:\n%s", tt.has, &stdout)
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, &stderr)
			}
			if tt.code == nsadmin.ExitUsage && !strings.Contains(stderr.String(), "usage: kubectl nsc migrate") {
				t.Errorf("usage error without usage line:\n%s", &stderr)
			}
			// Without --apply nothing is ever written, and with a file
			// nothing is even read.
			for _, a := range client.Actions() {
				if v := a.GetVerb(); v != "get" && v != "list" || tt.noFetch {
					t.Errorf("%s %s on the API", v, a.GetResource())
				}
			}
			if tt.code == 0 && tt.args[0] != "-h" {
				var u map[string]any
				if err := yaml.Unmarshal(stdout.Bytes(), &u); err != nil || u["kind"] != "NameServerCluster" {
					t.Errorf("stdout is not a NameServerCluster: %v", err)
				}
			}
		})
	}
}

func TestNameServiceAPIErrors(t *testing.T) {
	gr := migrate.NameServiceResource.GroupResource()
	for _, tt := range []struct {
		err  error
		want string
	}{
		{apierrors.NewNotFound(gr, "x"), "NameService mq/x not found"},
		{apierrors.NewGenericServerResponse(http.StatusNotFound, "get", gr, "x", "", 0, false),
			"the API server does not serve NameServices (rocketmq.apache.org/v1alpha1): is apache/rocketmq-operator's CRD installed? -f converts a file instead"},
		{apierrors.NewForbidden(gr, "x", errors.New("no")), "forbidden: kubectl nsc migrate needs get on nameservices.rocketmq.apache.org"},
		{errors.New("connection refused"), "NameService mq/x: connection refused"},
	} {
		if got := nameServiceAPIError(tt.err, "NameService mq/x", "get").Error(); !strings.Contains(got, tt.want) {
			t.Errorf("%v: %q, want %q", tt.err, got, tt.want)
		}
	}
}

// TestMigrateApplySays checks what --apply says it did, against a fake API
// server whose cluster the operator writes the status of between the
// plugin's read and its apply: a new resourceVersion alone is no change.
func TestMigrateApplySays(t *testing.T) {
	prod := fixtureNameService(t, "production.yaml")
	args := []string{"migrate", "namesrv", "-n", "rocketmq"}
	var printed bytes.Buffer
	if code := Main(&Frontend{client: newMigrateFake(prod)}, args, nsadmin.IO{Stdout: &printed, Stderr: &bytes.Buffer{}}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	stored := func(edit func(u *unstructured.Unstructured)) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(printed.Bytes(), &u.Object); err != nil {
			t.Fatal(err)
		}
		u.SetResourceVersion("5")
		edit(u)
		return u
	}
	same := stored(func(*unstructured.Unstructured) {})
	otherSpec := stored(func(u *unstructured.Unstructured) {
		if err := unstructured.SetNestedField(u.Object, int64(5), "spec", "replicas"); err != nil {
			t.Fatal(err)
		}
	})
	labelled := stored(func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"team": "mq"}) })
	for _, tt := range []struct {
		name   string
		before []runtime.Object
		want   string
	}{
		{"new", nil, "NameServerCluster rocketmq/namesrv-nsc created"},
		{"the same spec, its status written meanwhile", []runtime.Object{same}, "NameServerCluster rocketmq/namesrv-nsc unchanged"},
		{"another spec", []runtime.Object{otherSpec}, "NameServerCluster rocketmq/namesrv-nsc configured"},
		{"labels the output does not have", []runtime.Object{labelled}, "NameServerCluster rocketmq/namesrv-nsc configured"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client := newMigrateFake(append([]runtime.Object{prod}, tt.before...)...)
			// The API server's answer: the applied fields, and a
			// resourceVersion the status write moved on.
			client.PrependReactor("patch", "nameserverclusters", func(a k8stesting.Action) (bool, runtime.Object, error) {
				applied := &unstructured.Unstructured{}
				if err := yaml.Unmarshal(a.(k8stesting.PatchAction).GetPatch(), &applied.Object); err != nil {
					return true, nil, err
				}
				applied.SetResourceVersion("7")
				return true, applied, unstructured.SetNestedField(applied.Object, int64(3), "status", "readyReplicas")
			})
			var stdout, stderr bytes.Buffer
			if code := Main(&Frontend{client: client}, append(args, "--apply"), nsadmin.IO{Stdout: &stdout, Stderr: &stderr}); code != 0 {
				t.Fatalf("exit %d\n%s", code, &stderr)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr:\n%s\nwant %q", &stderr, tt.want)
			}
			if !bytes.Equal(stdout.Bytes(), printed.Bytes()) {
				t.Errorf("--apply printed:\n%s\nwant what migrate prints without it:\n%s", &stdout, &printed)
			}
		})
	}
}
