package nsc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"

	"github.com/kube-namesrv/kube-namesrv/internal/nsadmin"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
	"github.com/kube-namesrv/kube-namesrv/test/nstest"
)

func object(apiVersion, kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns}}}
	for k, v := range fields {
		u.Object[k] = v
	}
	return u
}

func nameServerCluster(ns, name string, spec, status map[string]any) *unstructured.Unstructured {
	return object("rocketmq.kube-namesrv.io/v1alpha1", "NameServerCluster", ns, name, map[string]any{"spec": spec, "status": status})
}

func pod(ns, name, ip string) *unstructured.Unstructured {
	return object("v1", "Pod", ns, name, map[string]any{"status": map[string]any{"podIP": ip}})
}

func newFake(objs ...runtime.Object) *fake.FakeDynamicClient {
	return fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		clustersResource: "NameServerClusterList",
		podsResource:     "PodList",
	}, objs...)
}

// peersStatus is a status of an operator that reports status.peers.
func peersStatus(peers ...map[string]any) map[string]any {
	items := make([]any, len(peers))
	for i, p := range peers {
		items[i] = p
	}
	return map[string]any{"peers": items, "namesrvAddr": "ignored:1"}
}

func TestChoosingPeers(t *testing.T) {
	const ns = "mq"
	dns := func(i string) string { return "example-" + i + ".example-headless.mq.svc.cluster.local:9876" }
	full := nameServerCluster(ns, "example", map[string]any{"replicas": int64(3)}, peersStatus(
		map[string]any{"name": "example-0", "ordinal": int64(0), "address": dns("0"), "podIP": "10.1.0.1", "externalAddress": "1.2.3.4:9876", "ready": true},
		map[string]any{"name": "example-1", "ordinal": int64(1), "address": dns("1"), "podIP": "10.1.0.2"},
		map[string]any{"name": "example-2", "ordinal": int64(2), "address": dns("2")},
	))
	older := nameServerCluster(ns, "older", map[string]any{"replicas": int64(3), "tls": map[string]any{"secretName": "s", "mode": "Enforcing"}}, map[string]any{
		"addresses":         []any{dns("0")},
		"namesrvAddr":       dns("0") + ";" + dns("1"),
		"brokerNamesrvAddr": dns("0") + ";" + dns("1") + ";" + dns("2"),
	})
	empty := nameServerCluster(ns, "new", map[string]any{"replicas": int64(3)}, nil)
	broken := nameServerCluster("other", "broken", nil, map[string]any{"peers": "not a list"})
	client := newFake(full, older, empty, broken, pod(ns, "example-0", "10.2.0.1"), pod(ns, "example-1", "10.2.0.2"), pod(ns, "example-2", ""))

	tests := []struct {
		name    string
		args    []string
		flags   func(f *Frontend)
		addrs   []string
		tls     bool
		note    string
		err     string
		isUsage bool
	}{
		{name: "status.peers by DNS name", args: []string{"example"},
			addrs: []string{dns("0"), dns("1"), dns("2")}},
		{name: "status.peers by pod IP", args: []string{"example"}, flags: func(f *Frontend) { f.usePodIP = true },
			addrs: []string{"10.1.0.1:9876", "10.1.0.2:9876"}, note: "left out: example-2 (no pod IP)"},
		{name: "status.peers by external address", args: []string{"example"}, flags: func(f *Frontend) { f.external = true },
			addrs: []string{"1.2.3.4:9876"}, note: "left out: example-1 (no external address), example-2 (no external address)"},
		{name: "an older operator's lists, brokers' included", args: []string{"older"},
			addrs: []string{dns("0"), dns("1"), dns("2")}, tls: true},
		{name: "an older operator's peers by pod IP, from the pods", args: []string{"older"}, flags: func(f *Frontend) { f.usePodIP = true },
			addrs: []string{"10.2.0.1:9876", "10.2.0.2:9876"}, tls: true, note: "left out: example-2 (no pod IP)"},
		{name: "an older operator has no external addresses", args: []string{"older"}, flags: func(f *Frontend) { f.external = true },
			err: "--external needs status.peers[].externalAddress"},
		{name: "no peers yet", args: []string{"new"}, err: "lists no peers in its status yet"},
		{name: "not found", args: []string{"nothing"}, err: "NameServerCluster mq/nothing not found"},
		{name: "several clusters, none named", err: "namespace mq holds 3 NameServerClusters (example, new, older): name one", isUsage: true},
		{name: "two names", args: []string{"a", "b"}, err: "one NameServerCluster at a time", isUsage: true},
		{name: "a status this plugin cannot read", args: []string{"broken"}, flags: func(f *Frontend) { f.namespace = "other" },
			err: "NameServerCluster other/broken has a status this plugin cannot read"},
		{name: "mqadmin's -n", flags: func(f *Frontend) { f.namespace = "10.0.0.1:9876" }, err: "-n is kubectl's --namespace", isUsage: true},
		{name: "both ways", args: []string{"example"}, flags: func(f *Frontend) { f.usePodIP, f.external = true, true }, err: "exclude each other", isUsage: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &Frontend{client: client, namespace: ns}
			if tt.flags != nil {
				tt.flags(f)
			}
			target, err := f.Resolve(context.Background(), tt.args)
			if tt.err != "" {
				_, usage := err.(*nsadmin.UsageError)
				if err == nil || !strings.Contains(err.Error(), tt.err) || usage != tt.isUsage {
					t.Fatalf("err %v (usage %v), want %q (usage %v)", err, usage, tt.err, tt.isUsage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(target.Addrs, tt.addrs) || target.TLS != tt.tls || target.Note != tt.note {
				t.Errorf("got %q tls %v note %q; want %q tls %v note %q", target.Addrs, target.TLS, target.Note, tt.addrs, tt.tls, tt.note)
			}
		})
	}

	// The only cluster of a namespace needs no name; its HTTP port is the
	// CRD's default unless set.
	f := &Frontend{client: newFake(full), namespace: ns}
	if target, err := f.Resolve(context.Background(), nil); err != nil || len(target.Addrs) != 3 || target.HTTPPort != 8080 {
		t.Errorf("only cluster: %+v %v", target, err)
	}
	ported := nameServerCluster(ns, "ported", map[string]any{"ports": map[string]any{"http": int64(18080)}}, peersStatus(map[string]any{"name": "p-0", "address": "p-0:9876"}))
	f = &Frontend{client: newFake(ported), namespace: ns}
	if target, err := f.Resolve(context.Background(), nil); err != nil || target.HTTPPort != 18080 {
		t.Errorf("spec.ports.http: %+v %v", target, err)
	}
	f = &Frontend{client: newFake(), namespace: ns}
	if _, err := f.Resolve(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "no NameServerCluster in namespace mq") {
		t.Errorf("no cluster: %v", err)
	}
}

// TestCommandsAgainstTheClustersPeers runs the plugin's commands, peers
// found through a NameServerCluster's status, against NameServers on
// loopback.
func TestCommandsAgainstTheClustersPeers(t *testing.T) {
	a, b := nstest.Start(t, nil), nstest.Start(t, nil)
	broker, err := brokersim.Start(brokersim.Config{Cluster: "DefaultCluster", Name: "broker-a",
		Topics: []body.TopicConfig{brokersim.Topic("TopicA", 4), brokersim.Topic("TBW102", 8)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broker.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, r := range broker.Register(ctx, []string{a.Addr().String()}) {
		if r.Err != nil || r.Response.Code != 0 {
			t.Fatalf("register: %v %+v", r.Err, r.Response)
		}
	}
	client := newFake(nameServerCluster("mq", "example", map[string]any{"replicas": int64(2)}, peersStatus(
		map[string]any{"name": "example-0", "ordinal": int64(0), "address": a.Addr().String(), "ready": true, "published": true,
			"reachable": true, "routeComplete": true, "brokers": int64(1)},
		map[string]any{"name": "example-1", "ordinal": int64(1), "address": b.Addr().String(), "ready": true, "reachable": true,
			"routeComplete": false, "brokers": int64(0), "missingBrokers": []any{"DefaultCluster/broker-a@" + broker.Addr()}, "message": "waiting for brokers"},
	)))
	run := func(args ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		code := Main(&Frontend{client: client}, args, nsadmin.IO{Stdout: &stdout, Stderr: &stderr})
		return stdout.String(), stderr.String(), code
	}

	out, errOut, code := run("clusterList", "example", "-n", "mq")
	if code != 0 || !strings.Contains(out, "broker-a") || !strings.Contains(out, "1/2 missing on "+b.Addr().String()) {
		t.Errorf("clusterList: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, _, code := run("diff", "example", "-n", "mq"); code != nsadmin.ExitDifferent {
		t.Errorf("diff: exit %d, want 1", code)
	}
	out, errOut, code = run("updateKvConfig", "-s", "NS", "-k", "k", "-v", "v", "example", "-n", "mq")
	if code != 0 || strings.Count(out, "] OK") != 2 {
		t.Errorf("updateKvConfig: exit %d\n%s\n%s", code, out, errOut)
	}

	out, errOut, code = run("peers", "example", "-n", "mq")
	lines := strings.Split(out, "\n")
	for i, want := range [][]string{
		{"PEER", "ORDINAL", "ADDRESS", "READY", "PUBLISHED", "REACHABLE", "ROUTE-COMPLETE", "BROKERS", "MESSAGE"},
		{"example-0", "0", a.Addr().String(), "true", "true", "true", "true", "1"},
		{"example-1", "1", b.Addr().String(), "true", "false", "true", "false", "0", "waiting", "for", "brokers", "missing:", "DefaultCluster/broker-a@" + broker.Addr()},
	} {
		if code != 0 || len(lines) <= i || !slices.Equal(strings.Fields(lines[i]), want) {
			t.Errorf("peers: exit %d, line %d of\n%s\nwant %q\n%s", code, i, out, want, errOut)
		}
	}
	out, _, code = run("peers", "example", "-n", "mq", "-o", "json")
	var listed []peerStatus
	if err := json.Unmarshal([]byte(out), &listed); code != 0 || err != nil || len(listed) != 2 || listed[1].Address != b.Addr().String() {
		t.Errorf("peers -o json: exit %d %v\n%s", code, err, out)
	}
	if _, errOut, code = run("peers", "example", "-n", "mq", "-o", "xml"); code != nsadmin.ExitUsage {
		t.Errorf("peers -o xml: exit %d %s", code, errOut)
	}
	if _, errOut, code = run("peers", "nothing", "-n", "mq"); code != nsadmin.ExitFailed || !strings.Contains(errOut, "not found") {
		t.Errorf("peers of a missing cluster: exit %d %s", code, errOut)
	}

	// A peer whose DNS name does not resolve outside the cluster.
	client = newFake(nameServerCluster("mq", "example", map[string]any{"replicas": int64(2)}, peersStatus(
		map[string]any{"name": "example-0", "address": a.Addr().String()},
		map[string]any{"name": "example-1", "address": "127.0.0.1:1"},
	)))
	_, errOut, code = run("clusterList", "example", "-n", "mq")
	if code != nsadmin.ExitFailed || !strings.Contains(errOut, "hint: peers are reached by their DNS names") {
		t.Errorf("unreachable peer: exit %d\n%s", code, errOut)
	}
}

func TestAPIErrorsSayWhatIsNeeded(t *testing.T) {
	gr := clustersResource.GroupResource()
	for _, tt := range []struct {
		err  error
		want string
	}{
		{apierrors.NewNotFound(gr, "x"), "NameServerCluster mq/x not found"},
		{apierrors.NewGenericServerResponse(http.StatusNotFound, "get", gr, "x", "", 0, false),
			"the API server does not serve NameServerClusters (is the kube-namesrv CRD installed?)"},
		{apierrors.NewForbidden(gr, "x", errors.New("no")), "forbidden: kubectl nsc needs get on nameserverclusters.rocketmq.kube-namesrv.io"},
		{errors.New("connection refused"), "NameServerCluster mq/x: connection refused"},
	} {
		if got := apiError(tt.err, "NameServerCluster mq/x", "get").Error(); !strings.Contains(got, tt.want) {
			t.Errorf("%v: %q, want %q", tt.err, got, tt.want)
		}
	}
}
