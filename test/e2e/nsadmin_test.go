//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
)

// kubectlNsc runs `kubectl nsc args...` as a user would: kubectl finds the
// plugin, the kubectl-nsc that `make build` built, on PATH, and the plugin
// reads the kubeconfig from $KUBECONFIG. It returns stdout, stderr and the
// exit code.
func kubectlNsc(ctx context.Context, t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	plugin, err := builtBinary("kubectl-nsc")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cl.KubectlPath, append([]string{"nsc"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cl.KubeconfigPath,
		"PATH="+filepath.Dir(plugin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return stdout.String(), stderr.String(), ee.ExitCode()
	case err != nil:
		t.Fatalf("kubectl nsc %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), 0
}

// TestNsadminPlugin runs `kubectl nsc` against a NameServerCluster of three
// peers in the box, first agreeing, then with a broker registered with one
// peer only.
func TestNsadminPlugin(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	c := applyCluster(ctx, t, "admin", clusterSpec{replicas: 3})
	since := time.Now()
	b := startBroker(ctx, t, c)
	// clusterList lists what the peers hold: wait for the broker's first
	// round to reach every peer (under load, it may come after the first
	// query otherwise).
	b.waitRegistered(t, c.peers(3), since)
	// Every peer's DNS name, as the plugin reaches them by default.
	want := func(code int, args ...string) string {
		t.Helper()
		var out, errOut string
		var got int
		eventually(t, 20*time.Second, func() (bool, string) {
			out, errOut, got = kubectlNsc(ctx, t, args...)
			return got == code, fmt.Sprintf("kubectl nsc %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, got, code, out, errOut)
		})
		return out
	}

	// The broker simulator registers with every published peer.
	out := want(0, "clusterList", c.name, "-n", c.ns)
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, brokerName) && !strings.HasSuffix(l, "3/3") {
			t.Errorf("clusterList: %q, want the broker on 3/3 peers\n%s", l, out)
		}
	}
	if !strings.Contains(out, brokerName) {
		t.Fatalf("clusterList lacks %s:\n%s", brokerName, out)
	}
	out = want(0, "topicRoute", c.name, "-n", c.ns, "-t", topic)
	if !strings.Contains(out, brokerName) || !strings.Contains(out, "Total:") {
		t.Errorf("topicRoute:\n%s", out)
	}
	want(0, "diff", c.name, "-n", c.ns)
	out = want(0, "peers", c.name, "-n", c.ns)
	for i := range 3 {
		if !strings.Contains(out, c.peer(i)) {
			t.Errorf("peers lacks %s:\n%s", c.peer(i), out)
		}
	}
	// Pod IPs route in the box as on a node.
	out = want(0, "clusterList", c.name, "-n", c.ns, "--use-pod-ip")
	if !strings.Contains(out, brokerName) {
		t.Errorf("clusterList --use-pod-ip:\n%s", out)
	}
	// Writes reach every peer.
	out = want(0, "updateKvConfig", c.name, "-n", c.ns, "-s", "E2E", "-k", "key", "-v", "value")
	if n := strings.Count(out, "] OK"); n != 3 {
		t.Errorf("updateKvConfig answered OK by %d peers:\n%s", n, out)
	}
	want(0, "diff", c.name, "-n", c.ns, "--kv-namespace", "E2E")

	// A broker that registered with the first peer only.
	lone, err := brokersim.Start(brokersim.Config{Cluster: "DefaultCluster", Name: "broker-lone", Generation: body.Broker5,
		Topics: []body.TopicConfig{brokersim.Topic("LoneTopic", 2), brokersim.Topic("TBW102", 8)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lone.Close)
	ip, err := resolve(c.peer(0))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range lone.Register(ctx, []string{ip}) {
		if r.Err != nil || r.Response.Code != 0 {
			t.Fatalf("registering with %s: %v %+v", c.peer(0), r.Err, r.Response)
		}
	}
	out = want(1, "diff", c.name, "-n", c.ns)
	for _, what := range []string{"broker-lone", "LoneTopic"} {
		found := false
		for _, l := range strings.Split(out, "\n") {
			found = found || strings.Contains(l, what) && strings.HasSuffix(l, "1/3 missing on "+c.peer(1)+","+c.peer(2))
		}
		if !found {
			t.Errorf("diff does not show %s on %s only:\n%s", what, c.peer(0), out)
		}
	}
}
