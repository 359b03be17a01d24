package install

import (
	"bufio"
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/internal/version"
)

const module = "github.com/kube-namesrv/kube-namesrv"

// imageBinaries are the commands the image holds at /.
var imageBinaries = []string{"manager", "namesrv", "nsadmin", "kubectl-nsc"}

// TestImageBinaries checks what `make image-binaries` built with the
// Dockerfile's script: static executables (the image is FROM scratch, with
// no libc or loader) of the right commands.
func TestImageBinaries(t *testing.T) {
	for _, name := range imageBinaries {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(imageBinDir, name)
			f, err := elf.Open(path)
			if err != nil {
				t.Fatalf("%v (make image-binaries builds it)", err)
			}
			defer f.Close()
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
					t.Errorf("%s is dynamically linked (program header %v)", path, p.Type)
				}
			}
			info, err := buildinfo.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if info.Path != module+"/cmd/"+name {
				t.Errorf("%s is %s", path, info.Path)
			}
			settings := map[string]string{}
			for _, s := range info.Settings {
				settings[s.Key] = s.Value
			}
			if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
				t.Errorf("%s built with CGO_ENABLED=%q -trimpath=%q", path, settings["CGO_ENABLED"], settings["-trimpath"])
			}
		})
	}
}

// TestManagerDeploysItsOwnImage: the image's manager, stamped with the
// Makefile's VERSION, defaults the NameServer image to this build's image,
// which is also what the chart and config/default run it as.
func TestManagerDeploysItsOwnImage(t *testing.T) {
	defaults := managerDefaults(testContext(t), t)
	if got := defaults["namesrv-image"]; got != version.DefaultImage() {
		t.Errorf("the image's manager defaults --namesrv-image to %q, want %q (Makefile VERSION and internal/version disagree?)",
			got, version.DefaultImage())
	}
}

// TestDockerfile checks the Dockerfile against what the rest of the project
// assumes of the image; no Docker engine runs here to build it.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	stages := dockerStages(string(b))
	if len(stages) != 2 {
		t.Fatalf("want a build stage and a final stage, got %d stages", len(stages))
	}
	for _, s := range stages {
		if host := registryHost(s.from); host != "" {
			t.Errorf("FROM %s names the registry %s; images are named without one", s.from, host)
		}
	}
	build, final := stages[0], stages[1]
	if !hasInstruction(build.instructions, "RUN", `hack/build-binaries.sh /out`) {
		t.Error("the build stage does not run hack/build-binaries.sh, the script `make image-binaries` tests")
	}
	if final.from != "scratch" {
		t.Errorf("the final stage is FROM %s, want scratch", final.from)
	}
	copies := "--from=" + build.name
	for _, name := range imageBinaries {
		copies += " /out/" + name
	}
	if !hasInstruction(final.instructions, "COPY", copies+" /") {
		t.Errorf("the final stage does not copy %v to /: %v", imageBinaries, final.instructions)
	}
	// The NameServer pods run the image's namesrv as their command.
	c := &v1alpha1.NameServerCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "image", Namespace: "default"},
		Spec:       v1alpha1.NameServerClusterSpec{Replicas: ptr.To[int32](1), Ports: v1alpha1.Ports{Remoting: 9876, HTTP: 8080}},
	}
	sts, err := render.StatefulSet(c, render.Options{ClusterDomain: "cluster.local", DefaultImage: version.DefaultImage()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if cmd := sts.Spec.Template.Spec.Containers[0].Command; len(cmd) != 1 || cmd[0] != "/namesrv" {
		t.Errorf("the NameServer pods run %v; the image holds /namesrv", cmd)
	}
	// The user of the NameServer pods' and the chart's security contexts.
	user := fmt.Sprintf("%d:%d", render.NonRootID, render.NonRootID)
	if !hasInstruction(final.instructions, "USER", user) {
		t.Errorf("the image must run as %s, the user the NameServer pods run as: %v", user, final.instructions)
	}
	values := map[string]any{}
	if b, err := os.ReadFile(filepath.Join(chartDir, "values.yaml")); err != nil || yaml.Unmarshal(b, &values) != nil {
		t.Fatalf("reading the chart's values: %v", err)
	}
	if uid, _, _ := unstructured.NestedFieldNoCopy(values, "podSecurityContext", "runAsUser"); fmt.Sprint(uid) != strconv.Itoa(render.NonRootID) {
		t.Errorf("the chart runs the manager as user %v, the image's user is %s", uid, user)
	}
	if !hasInstruction(final.instructions, "ENTRYPOINT", `["/manager"]`) {
		t.Errorf("the entrypoint is not /manager: %v", final.instructions)
	}
}

type dockerStage struct {
	from, name   string
	instructions []string
}

// dockerStages splits a Dockerfile into stages of "INSTRUCTION args" lines,
// with continuation lines joined and comments dropped.
func dockerStages(text string) []dockerStage {
	var stages []dockerStage
	var line strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") || (l == "" && line.Len() == 0) {
			continue
		}
		if cont, ok := strings.CutSuffix(l, `\`); ok {
			line.WriteString(cont + " ")
			continue
		}
		line.WriteString(l)
		full := strings.Join(strings.Fields(line.String()), " ")
		line.Reset()
		if full == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(full, "FROM "); ok {
			f := strings.Fields(rest)
			s := dockerStage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) > 0 {
			stages[len(stages)-1].instructions = append(stages[len(stages)-1].instructions, full)
		}
	}
	return stages
}

// hasInstruction tells whether an instruction with this keyword contains text.
func hasInstruction(instructions []string, keyword, text string) bool {
	for _, in := range instructions {
		if rest, ok := strings.CutPrefix(in, keyword+" "); ok && strings.Contains(rest, text) {
			return true
		}
	}
	return false
}

// registryHost returns the registry host of an image reference, if it
// names one (a first component with a dot or a port, or localhost).
func registryHost(ref string) string {
	first, _, found := strings.Cut(ref, "/")
	if found && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return first
	}
	return ""
}

var (
	helpOnce  sync.Once
	helpFlags map[string]string
	helpErr   error
	// A flag line of Go's flag.PrintDefaults, then its default, if any.
	flagLine     = regexp.MustCompile(`^  -([a-zA-Z0-9-]+)`)
	defaultValue = regexp.MustCompile(`\(default "?([^")]*)"?\)$`)
)

// managerDefaults returns every flag of the image's manager with its
// default value ("" when it has none), from its -h output.
func managerDefaults(ctx context.Context, t *testing.T) map[string]string {
	t.Helper()
	helpOnce.Do(func() {
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, filepath.Join(imageBinDir, "manager"), "-h")
		cmd.Stdout, cmd.Stderr = &out, &out
		if helpErr = cmd.Run(); helpErr != nil {
			helpErr = &toolError{err: helpErr, out: out.String()}
			return
		}
		helpFlags = map[string]string{}
		var last string
		for _, l := range strings.Split(out.String(), "\n") {
			if m := flagLine.FindStringSubmatch(l); m != nil {
				last = m[1]
				// A boolean flag has no type after its name and shows
				// no default when it is false.
				helpFlags[last] = ""
				if strings.TrimSpace(strings.TrimPrefix(l, "  -"+last)) == "" {
					helpFlags[last] = "false"
				}
			}
			if m := defaultValue.FindStringSubmatch(strings.TrimSpace(l)); m != nil && last != "" {
				helpFlags[last] = m[1]
			}
		}
	})
	if helpErr != nil {
		t.Fatalf("running the image's manager -h: %v", helpErr)
	}
	if len(helpFlags) == 0 {
		t.Fatal("the image's manager -h listed no flags")
	}
	return helpFlags
}

// managerFlags is the set of flag names of the image's manager.
func managerFlags(ctx context.Context, t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for f := range managerDefaults(ctx, t) {
		out[f] = true
	}
	return out
}

type toolError struct {
	err error
	out string
}

func (e *toolError) Error() string { return e.err.Error() + "\n" + e.out }
