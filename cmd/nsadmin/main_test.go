package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/brokersim"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

// The tests run nsadmin as a process against real namesrv processes: the
// test binary re-executes itself as nsadmin when this variable is set, and
// TestMain builds cmd/namesrv.
const runMainEnv = "NSADMIN_TEST_RUN_MAIN"

// namesrvBin is the namesrv binary TestMain built.
var namesrvBin string

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "nsadmin-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	gobin, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintln(os.Stderr, "these tests build cmd/namesrv and need the go command on PATH:", err)
		return 1
	}
	namesrvBin = filepath.Join(dir, "namesrv")
	build := exec.Command(gobin, "build", "-o", namesrvBin, "github.com/kube-namesrv/kube-namesrv/cmd/namesrv")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building namesrv: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// peer is a namesrv process on loopback.
type peer struct {
	addr     string
	httpAddr string
}

// startPeers runs n namesrv processes with the extra arguments, waits until
// each accepts connections, and stops them with SIGTERM at the end.
func startPeers(t *testing.T, n int, args ...string) []peer {
	t.Helper()
	var out []peer
	for range n {
		port, httpPort := freePort(t), freePort(t)
		home := t.TempDir()
		cmd := exec.Command(namesrvBin, append([]string{"--bind-address", "127.0.0.1", "--listen-port", strconv.Itoa(port),
			"--http-port", strconv.Itoa(httpPort)}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home)
		var logs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() {
			cmd.Wait()
			close(exited)
		}()
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-exited
				t.Errorf("namesrv on %d did not stop on SIGTERM", port)
			}
		})
		p := peer{addr: "127.0.0.1:" + strconv.Itoa(port), httpAddr: "127.0.0.1:" + strconv.Itoa(httpPort)}
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", p.addr, time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-exited:
				t.Fatalf("namesrv exited: %s", logs.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("namesrv on %s not accepting after 10s: %v", p.addr, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		out = append(out, p)
	}
	return out
}

func list(peers []peer) string {
	addrs := make([]string, len(peers))
	for i, p := range peers {
		addrs[i] = p.addr
	}
	return strings.Join(addrs, ";")
}

// result is one nsadmin run.
type result struct {
	stdout, stderr string
	code           int
}

// nsadmin runs the command with a clean environment plus env ("K=V").
func runNsadmin(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "NAMESRV_ADDR=") && !strings.HasPrefix(e, "ROCKETMQ_SERIALIZE_TYPE=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, runMainEnv+"=1")
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("nsadmin %v: %v", args, err)
	}
	return r
}

// want runs nsadmin and checks its exit code.
func want(t *testing.T, code int, args ...string) result {
	t.Helper()
	r := runNsadmin(t, nil, args...)
	if r.code != code {
		t.Fatalf("nsadmin %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, r.code, code, r.stdout, r.stderr)
	}
	return r
}

func startBroker(t *testing.T, name string, topics ...body.TopicConfig) *brokersim.Broker {
	t.Helper()
	b, err := brokersim.Start(brokersim.Config{Cluster: "DefaultCluster", Name: name, Generation: body.Broker5, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

func register(t *testing.T, b *brokersim.Broker, peers ...peer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var addrs []string
	for _, p := range peers {
		addrs = append(addrs, p.addr)
	}
	for _, r := range b.Register(ctx, addrs) {
		if r.Err != nil || r.Response.Code != protocol.Success {
			t.Fatalf("register %s with %s: %v %+v", b.Name(), r.NameServer, r.Err, r.Response)
		}
	}
}

// lineWith returns the output line holding every one of parts.
func lineWith(t *testing.T, out string, parts ...string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return l
		}
	}
	t.Fatalf("no line with %q in:\n%s", parts, out)
	return ""
}

func decode[T any](t *testing.T, r result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("-o json output does not decode: %v\n%s", err, r.stdout)
	}
	return v
}

type presence struct {
	On        []string `json:"presentOn"`
	MissingOn []string `json:"missingOn"`
	DiffersOn []string `json:"differsOn"`
}

// TestReadCommandsShowWherePeersDiffer runs every read command against
// three peers: broker-a registered with all of them, broker-b with the
// first two, and the third holding a KV entry the others lack.
func TestReadCommandsShowWherePeersDiffer(t *testing.T) {
	peers := startPeers(t, 3)
	n := list(peers)
	a := startBroker(t, "broker-a", brokersim.Topic("TopicA", 4), brokersim.Topic("Shared", 2))
	b := startBroker(t, "broker-b", brokersim.Topic("TopicB", 8), brokersim.Topic("Shared", 2))
	register(t, a, peers...)
	register(t, b, peers[:2]...)
	third := peers[2].addr

	t.Run("clusterList", func(t *testing.T) {
		r := want(t, 0, "clusterList", "-n", n)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if lines[0] != "#Cluster Name           #Broker Name            #BID  #Addr                  #NameServers" {
			t.Errorf("header %q", lines[0])
		}
		if l := lineWith(t, r.stdout, "broker-a"); !strings.HasSuffix(l, a.Addr()+"        3/3") {
			t.Errorf("broker-a line %q", l)
		}
		if l := lineWith(t, r.stdout, "broker-b"); !strings.HasSuffix(l, "2/3 missing on "+third) {
			t.Errorf("broker-b line %q", l)
		}
		lineWith(t, r.stdout, "DISAGREE on the live brokers")

		type out struct {
			NameServers []struct {
				Addr string `json:"nameServer"`
				OK   bool   `json:"ok"`
			} `json:"nameServers"`
			Brokers []struct {
				Cluster, BrokerName, Addr string
				BrokerID                  int64 `json:"brokerId"`
				presence
			} `json:"brokers"`
			Agreed bool `json:"agreed"`
		}
		j := decode[out](t, want(t, 0, "clusterList", "-n", n, "-o", "json"))
		if len(j.NameServers) != 3 || j.Agreed || len(j.Brokers) != 2 {
			t.Fatalf("json %+v", j)
		}
		if bb := j.Brokers[1]; bb.BrokerName != "broker-b" || bb.Addr != b.Addr() || !slices.Equal(bb.MissingOn, []string{third}) || len(bb.On) != 2 {
			t.Errorf("broker-b in json: %+v", bb)
		}
		y := want(t, 0, "clusterList", "-n", n, "-o", "yaml")
		if !strings.Contains(y.stdout, "brokerName: broker-b") || !strings.Contains(y.stdout, "missingOn:\n  - "+third) {
			t.Errorf("yaml:\n%s", y.stdout)
		}
		if r := want(t, 0, "clusterList", "-n", peers[0].addr); strings.Contains(r.stdout, "#NameServers") || strings.Contains(r.stdout, "3/3") {
			t.Errorf("one peer shows no presence column:\n%s", r.stdout)
		}
		if r := want(t, 0, "clusterList", "-n", n, "-c", "NoSuchCluster"); strings.Contains(r.stdout, "broker-") {
			t.Errorf("-c NoSuchCluster:\n%s", r.stdout)
		}
	})

	t.Run("topicList", func(t *testing.T) {
		r := want(t, 0, "topicList", "-n", n)
		if l := lineWith(t, r.stdout, "TopicB"); !strings.HasSuffix(l, "2/3 missing on "+third) {
			t.Errorf("TopicB %q", l)
		}
		if l := lineWith(t, r.stdout, "TopicA"); !strings.HasSuffix(l, "3/3") {
			t.Errorf("TopicA %q", l)
		}
		one := want(t, 0, "topicList", "-n", peers[0].addr)
		if got := strings.Fields(one.stdout); !slices.Equal(got, []string{"Shared", "TopicA", "TopicB"}) {
			t.Errorf("one peer, mqadmin's plain list: %q", one.stdout)
		}
		c := want(t, 0, "topicList", "-c", "-n", n)
		lineWith(t, c.stdout, "#Cluster Name", "#Topic", "#NameServers")
		if l := lineWith(t, c.stdout, "DefaultCluster", "TopicB"); !strings.HasSuffix(l, "missing on "+third) {
			t.Errorf("-c TopicB %q", l)
		}
	})

	t.Run("topicRoute", func(t *testing.T) {
		r := want(t, 0, "topicRoute", "-t", "Shared", "-n", n)
		lineWith(t, r.stdout, "#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm", "#NameServers")
		if l := lineWith(t, r.stdout, "broker-a"); !strings.Contains(l, "{0="+a.Addr()+"}") || !strings.HasSuffix(l, "3/3") {
			t.Errorf("broker-a %q", l)
		}
		if l := lineWith(t, r.stdout, "broker-b"); !strings.HasSuffix(l, "2/3 missing on "+third) {
			t.Errorf("broker-b %q", l)
		}
		// The peers' totals differ, so each gets its own.
		lineWith(t, r.stdout, "Total("+peers[0].addr+"):", " 2 ", " 4 ")
		lineWith(t, r.stdout, "Total("+third+"):", " 1 ", " 2 ")

		missing := want(t, 0, "topicRoute", "-t", "TopicB", "-n", n)
		if l := lineWith(t, missing.stdout, "broker-b"); !strings.HasSuffix(l, "missing on "+third) {
			t.Errorf("TopicB %q", l)
		}
		type out struct {
			Routes []struct {
				Addr  string `json:"nameServer"`
				Route *struct {
					QueueDatas []struct {
						BrokerName    string `json:"brokerName"`
						ReadQueueNums int    `json:"readQueueNums"`
					} `json:"queueDatas"`
				} `json:"route"`
			} `json:"routes"`
		}
		j := decode[out](t, want(t, 0, "topicRoute", "-t", "TopicB", "-n", n, "-o", "json"))
		if len(j.Routes) != 3 || j.Routes[2].Route != nil || j.Routes[0].Route.QueueDatas[0].ReadQueueNums != 8 {
			t.Errorf("json %+v", j)
		}

		none := want(t, 4, "topicRoute", "-t", "NoSuchTopic", "-n", n)
		if strings.Contains(none.stdout, "Total") || !strings.Contains(none.stderr, "TOPIC_NOT_EXIST") {
			t.Errorf("no route anywhere:\nstdout %s\nstderr %s", none.stdout, none.stderr)
		}
	})

	t.Run("topicClusterList", func(t *testing.T) {
		r := want(t, 0, "topicClusterList", "-t", "TopicA", "-n", n)
		if l := lineWith(t, r.stdout, "DefaultCluster"); !strings.HasSuffix(l, "3/3") {
			t.Errorf("%q", l)
		}
		one := want(t, 0, "topicClusterList", "-t", "TopicA", "-n", peers[0].addr)
		if one.stdout != "DefaultCluster\n" {
			t.Errorf("one peer: %q", one.stdout)
		}
		want(t, 4, "topicClusterList", "-t", "NoSuchTopic", "-n", n)
	})

	t.Run("getNamesrvConfig", func(t *testing.T) {
		r := want(t, 0, "getNamesrvConfig", "-n", n)
		for _, p := range peers {
			lineWith(t, r.stdout, "============"+p.addr+"============")
		}
		// Each peer listens on its own port: that shows as a difference.
		lineWith(t, r.stdout, "Properties the NameServers DISAGREE on:")
		lineWith(t, r.stdout, "listenPort", "=  "+strings.TrimPrefix(third, "127.0.0.1:"), "1/3 on "+third)
		if l := lineWith(t, r.stdout, "orderMessageEnable"); !strings.HasSuffix(l, "=  false") {
			t.Errorf("%q", l)
		}
	})

	t.Run("kvList", func(t *testing.T) {
		want(t, 0, "updateKvConfig", "-s", "NS", "-k", "only-third", "-v", "x", "-n", third)
		want(t, 0, "updateKvConfig", "-s", "NS", "-k", "everywhere", "-v", "1", "-n", n)
		want(t, 0, "updateKvConfig", "-s", "NS", "-k", "everywhere", "-v", "2", "-n", third)
		r := want(t, 0, "kvList", "-s", "NS", "-n", n)
		if l := lineWith(t, r.stdout, "only-third"); !strings.HasSuffix(l, "1/3 missing on "+peers[0].addr+","+peers[1].addr) {
			t.Errorf("%q", l)
		}
		if l := lineWith(t, r.stdout, "everywhere", " 1 "); !strings.HasSuffix(l, "2/3 on "+peers[0].addr+","+peers[1].addr) {
			t.Errorf("%q", l)
		}
		if l := lineWith(t, r.stdout, "everywhere", " 2 "); !strings.HasSuffix(l, "1/3 on "+third) {
			t.Errorf("%q", l)
		}
		if r := want(t, 0, "kvList", "-s", "Nothing", "-n", n); strings.Count(r.stdout, "\n") != 3 {
			t.Errorf("an empty namespace:\n%s", r.stdout)
		}
	})
}
