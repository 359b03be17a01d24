package metrics_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNamesrvBinaryHasNoPrometheusClient: the namesrv command links
// neither the Prometheus Go client nor the protobuf runtime (this package
// writes the format itself, to keep the idle NameServer small). Tests may
// import them; the command must not, directly or through a dependency.
func TestNamesrvBinaryHasNoPrometheusClient(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("this test lists the namesrv command's packages and needs the go command on PATH: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", "github.com/kube-namesrv/kube-namesrv/cmd/namesrv").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/prometheus/", "google.golang.org/protobuf/"} {
			if strings.HasPrefix(pkg, banned) {
				t.Errorf("cmd/namesrv depends on %s", pkg)
			}
		}
	}
}
