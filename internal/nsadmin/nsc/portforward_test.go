package nsc

import (
	"bytes"
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/nsadmin"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
	"github.com/kube-namesrv/kube-namesrv/test/nstest"
)

// fakeForwards stands in for the API server's port-forwards: each pod's
// ports lead to the loopback ports of one in-process NameServer.
type fakeForwards struct {
	mu      sync.Mutex
	servers map[string]*nstest.Server // by pod
	failPod string
	asked   [][]int
	open    int
}

func (f *fakeForwards) forward(_ context.Context, _, pod string, ports []int) (map[int]int, func(), error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, ports)
	if pod == f.failPod {
		return nil, nil, errors.New("pods \"" + pod + "\" not found")
	}
	s := f.servers[pod]
	f.open++
	return map[int]int{ports[0]: s.Addr().(*net.TCPAddr).Port, ports[1]: s.HTTPAddr().(*net.TCPAddr).Port},
		func() { f.mu.Lock(); f.open--; f.mu.Unlock() }, nil
}

// TestPortForward: with --port-forward, peers whose DNS names resolve
// nowhere here are reached through forwards of their remoting and HTTP
// ports, reports keep their names, and every forward is closed afterwards;
// one failed forward fails the command and closes the others.
func TestPortForward(t *testing.T) {
	a, b := nstest.Start(t, nil), nstest.Start(t, nil)
	broker, err := brokersim.Start(brokersim.Config{Cluster: "DefaultCluster", Name: "broker-a",
		Topics: []body.TopicConfig{brokersim.Topic("TopicA", 4), brokersim.Topic("TBW102", 8)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broker.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, r := range broker.Register(ctx, []string{a.Addr().String(), b.Addr().String()}) {
		if r.Err != nil || r.Response.Code != 0 {
			t.Fatalf("register: %v %+v", r.Err, r.Response)
		}
	}
	dns := func(i int) string {
		return "example-" + strconv.Itoa(i) + ".example-headless.mq.svc.cluster.local:9876"
	}
	client := newFake(nameServerCluster("mq", "example", map[string]any{"replicas": int64(2), "ports": map[string]any{"http": int64(18080)}}, peersStatus(
		map[string]any{"name": "example-0", "ordinal": int64(0), "address": dns(0)},
		map[string]any{"name": "example-1", "ordinal": int64(1), "address": dns(1)},
	)))
	fw := &fakeForwards{servers: map[string]*nstest.Server{"example-0": a, "example-1": b}}
	run := func(args ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		code := Main(&Frontend{client: client, forwarder: fw.forward}, args, nsadmin.IO{Stdout: &stdout, Stderr: &stderr})
		return stdout.String(), stderr.String(), code
	}

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"clusterList", "example", "-n", "mq", "--port-forward"}, []string{"broker-a", "2/2"}},
		// peerStatus reads each peer's HTTP side, and names the peers.
		{[]string{"peerStatus", "example", "-n", "mq", "--port-forward"}, []string{dns(0), dns(1), "agree"}},
	} {
		args := tc.args
		out, errOut, code := run(args...)
		for _, w := range tc.want {
			if code != 0 || !strings.Contains(out, w) {
				t.Errorf("%v: exit %d, want %q in\n%s\n%s", args, code, w, out, errOut)
			}
		}
		if fw.open != 0 {
			t.Errorf("%v: %d forwards left open", args, fw.open)
		}
	}
	if want := []int{9876, 18080}; len(fw.asked) == 0 || !slices.Equal(fw.asked[0], want) {
		t.Errorf("forwarded ports %v, want %v for each pod", fw.asked, want)
	}

	fw.failPod = "example-1"
	_, errOut, code := run("clusterList", "example", "-n", "mq", "--port-forward")
	if code == 0 || !strings.Contains(errOut, "port-forward to pod mq/example-1") {
		t.Errorf("a failed forward: exit %d\n%s", code, errOut)
	}
	if fw.open != 0 {
		t.Errorf("a failed forward left %d forwards open", fw.open)
	}

	for _, other := range []string{"--use-pod-ip", "--external"} {
		if _, errOut, code := run("clusterList", "example", "-n", "mq", "--port-forward", other); code != nsadmin.ExitUsage || !strings.Contains(errOut, "exclude each other") {
			t.Errorf("--port-forward %s: exit %d\n%s", other, code, errOut)
		}
	}
}

func TestForwardsDialOnlyWhatTheyForward(t *testing.T) {
	f := &forwards{local: map[string]string{"p-0.h:9876": "127.0.0.1:1"}}
	if _, err := f.dial(context.Background(), "tcp", "p-0.h:8081"); err == nil || !strings.Contains(err.Error(), "no port-forward to p-0.h:8081") {
		t.Errorf("dial of an address not forwarded: %v", err)
	}
	if _, err := forward(context.Background(), nil, "mq", []peerStatus{{Name: "p-0", Address: "p-0.h"}}, 8080); err == nil {
		t.Error("a peer address without a port was forwarded")
	}
}
