package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting/tlstest"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
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

func freePort(t testing.TB) int {
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
func startPeers(t testing.TB, n int, args ...string) []peer {
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
			_ = cmd.Wait()
			close(exited)
		}()
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
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
	// nsadmin allows 3 s per peer by default, which a test's race-built
	// peers on a loaded machine can exceed; tests of the timeout itself set
	// --timeout.
	if slices.Contains(args, "-n") && !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--timeout") }) {
		args = append(slices.Clone(args), "--timeout=20s")
	}
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

// eventually runs nsadmin until it exits with code, for up to 10 s.
func eventually(t *testing.T, code int, args ...string) result {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := runNsadmin(t, nil, args...)
		if r.code == code {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("nsadmin %v: exit %d after 10s, want %d\nstdout:\n%s\nstderr:\n%s", args, r.code, code, r.stdout, r.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func startBroker(t testing.TB, name string, topics ...body.TopicConfig) *brokersim.Broker {
	t.Helper()
	b, err := brokersim.Start(brokersim.Config{Cluster: "DefaultCluster", Name: name, Generation: body.Broker5, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

func register(t testing.TB, b *brokersim.Broker, peers ...peer) {
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

// TestDiffExitsNonZeroOnAnyDifference makes three peers agree, then
// disagree in every table diff compares, one at a time.
func TestDiffExitsNonZeroOnAnyDifference(t *testing.T) {
	peers := startPeers(t, 3)
	n := list(peers)
	third := peers[2].addr
	a := startBroker(t, "broker-a", brokersim.Topic("TopicA", 4), brokersim.Topic("Shared", 2))
	register(t, a, peers...)
	want(t, 0, "updateKvConfig", "-s", "NS", "-k", "k", "-v", "v", "-n", n)

	r := want(t, 0, "diff", "-s", "NS", "-n", n)
	lineWith(t, r.stdout, "No differences among 3 NameServers", "KV namespaces NS")
	for _, p := range peers {
		if l := lineWith(t, r.stdout, p.addr); !strings.HasSuffix(l, "1         2         ok") {
			t.Errorf("summary %q", l)
		}
	}

	type out struct {
		Brokers []struct {
			BrokerName string `json:"brokerName"`
			presence
		} `json:"brokers"`
		Topics []struct {
			Topic string `json:"topic"`
			presence
		} `json:"topics"`
		QueueData []struct {
			Topic         string `json:"topic"`
			ReadQueueNums int    `json:"readQueueNums"`
			presence
		} `json:"queueData"`
		KV []struct {
			Key, Value string
			presence
		} `json:"kv"`
		Differences int `json:"differences"`
	}

	// The queue data of a topic: broker-a changes TopicA to 8 queues and
	// tells the third peer only.
	a.SetTopics([]body.TopicConfig{brokersim.Topic("TopicA", 8), brokersim.Topic("Shared", 2)})
	register(t, a, peers[2])
	r = want(t, 1, "diff", "-n", n)
	lineWith(t, r.stdout, "Queue data the NameServers disagree on:")
	if l := lineWith(t, r.stdout, "TopicA", "broker-a", " 8 "); !strings.HasSuffix(l, "1/3 on "+third) {
		t.Errorf("%q", l)
	}
	lineWith(t, r.stdout, "1 difference among 3 NameServers")
	j := decode[out](t, want(t, 1, "diff", "-n", n, "-o", "json"))
	if j.Differences != 1 || len(j.QueueData) != 2 || len(j.Brokers)+len(j.Topics) != 0 {
		t.Fatalf("json %+v", j)
	}
	register(t, a, peers...)
	want(t, 0, "diff", "-n", n)

	// A broker live on two peers and missing on the third, with its topic.
	b := startBroker(t, "broker-b", brokersim.Topic("TopicB", 2), brokersim.Topic("Shared", 2))
	register(t, b, peers[:2]...)
	r = want(t, 1, "diff", "-n", n)
	if l := lineWith(t, r.stdout, "broker-b", b.Addr()); !strings.HasSuffix(l, "2/3 missing on "+third) {
		t.Errorf("%q", l)
	}
	if l := lineWith(t, r.stdout, "TopicB"); !strings.HasSuffix(l, "2/3 missing on "+third) {
		t.Errorf("%q", l)
	}
	j = decode[out](t, want(t, 1, "diff", "-n", n, "-o", "json"))
	// broker-b, TopicB, and broker-b's queues of Shared.
	if j.Differences != 3 || len(j.Brokers) != 1 || !slices.Equal(j.Brokers[0].MissingOn, []string{third}) {
		t.Fatalf("json %+v", j)
	}
	// Its connections closing evicts it from the peers that had it.
	b.DropConnections()
	eventually(t, 0, "diff", "-s", "NS", "-n", n)
	want(t, 0, "updateKvConfig", "-s", "NS", "-k", "k", "-v", "other", "-n", peers[0].addr)
	r = want(t, 1, "diff", "-s", "NS", "-n", n)
	if l := lineWith(t, r.stdout, "NS", "other"); !strings.HasSuffix(l, "1/3 on "+peers[0].addr) {
		t.Errorf("%q", l)
	}
	// Without -s, KV is not compared.
	want(t, 0, "diff", "-n", n)

	// The configuration, when asked: each peer has its own port.
	r = want(t, 1, "diff", "--config", "-n", n)
	lineWith(t, r.stdout, "listenPort")

	// A peer that fails is not a difference, but fails the command.
	r = want(t, 3, "diff", "-n", n+";127.0.0.1:"+strconv.Itoa(freePort(t)))
	lineWith(t, r.stdout, "FAILED: unreachable")
	lineWith(t, r.stdout, "No differences among 3 NameServers")

	// One peer: nothing to compare, said so.
	r = want(t, 0, "diff", "-n", peers[0].addr)
	if !strings.Contains(r.stderr, "only one NameServer") {
		t.Errorf("stderr %q", r.stderr)
	}
}

// TestWriteCommandsReachEveryPeer runs each write command against three
// peers and reads the effect back from each.
func TestWriteCommandsReachEveryPeer(t *testing.T) {
	peers := startPeers(t, 3)
	n := list(peers)
	a := startBroker(t, "broker-a", brokersim.Topic("TopicA", 4), brokersim.Topic("Shared", 2))
	register(t, a, peers...)

	r := want(t, 0, "updateKvConfig", "-s", "NS", "-k", "key", "-v", "value", "-n", n)
	for _, p := range peers {
		lineWith(t, r.stdout, "create or update kv config [NS: key=value] in name server["+p.addr+"] OK")
	}
	if l := lineWith(t, want(t, 0, "kvList", "-s", "NS", "-n", n).stdout, "key"); !strings.HasSuffix(l, "value                                    3/3") {
		t.Errorf("%q", l)
	}
	r = want(t, 0, "deleteKvConfig", "-s", "NS", "-k", "key", "-n", n)
	lineWith(t, r.stdout, "delete kv config [NS: key] in name server["+peers[2].addr+"] OK")
	if r := want(t, 0, "kvList", "-s", "NS", "-n", n); strings.Contains(r.stdout, "key") {
		t.Errorf("deleted key still listed:\n%s", r.stdout)
	}

	r = want(t, 0, "updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true", "-n", n)
	lineWith(t, r.stdout, "update name server config [orderMessageEnable=true] in name server["+peers[1].addr+"] OK")
	cfg := want(t, 0, "getNamesrvConfig", "-n", n)
	if c := strings.Count(cfg.stdout, "orderMessageEnable                                =  true"); c != 3 {
		t.Errorf("orderMessageEnable=true on %d peers:\n%s", c, cfg.stdout)
	}
	r = want(t, 4, "updateNamesrvConfig", "-k", "kvConfigPath", "-v", "/tmp/x", "-n", n)
	lineWith(t, r.stdout, "in name server["+peers[0].addr+"] Failed")
	if !strings.Contains(r.stderr, peers[0].addr+": refused: NO_PERMISSION: Can not update config in black list. (the key is in the NameServer's configBlackList)") {
		t.Errorf("stderr %q", r.stderr)
	}

	r = want(t, 0, "wipeWritePerm", "-b", "broker-a", "-n", n)
	for _, p := range peers {
		lineWith(t, r.stdout, "wipe write perm of broker[broker-a] in name server["+p.addr+"] OK, 2")
	}
	if l := lineWith(t, want(t, 0, "topicRoute", "-t", "TopicA", "-n", n).stdout, "broker-a"); !strings.Contains(l, " 4     3/3") {
		t.Errorf("perm after wipe: %q", l)
	}
	r = want(t, 0, "addWritePerm", "-b", "broker-a", "-n", n)
	lineWith(t, r.stdout, "add write perm of broker[broker-a] in name server["+peers[0].addr+"] OK, 2")
	if l := lineWith(t, want(t, 0, "topicRoute", "-t", "TopicA", "-n", n).stdout, "broker-a"); !strings.Contains(l, " 6     3/3") {
		t.Errorf("perm after add: %q", l)
	}
	type writeOut struct {
		Results []struct {
			Addr  string `json:"nameServer"`
			OK    bool   `json:"ok"`
			Count *int   `json:"count"`
		} `json:"results"`
	}
	j := decode[writeOut](t, want(t, 0, "wipeWritePerm", "-b", "broker-a", "-n", n, "-o", "json"))
	if len(j.Results) != 3 || !j.Results[2].OK || j.Results[2].Count == nil || *j.Results[2].Count != 2 {
		t.Errorf("json %+v", j)
	}

	r = want(t, 0, "deleteTopic", "-t", "TopicA", "-c", "DefaultCluster", "-n", n)
	lineWith(t, r.stdout, "delete topic [TopicA] from cluster [DefaultCluster] in name server["+peers[2].addr+"] OK")
	if !strings.Contains(r.stderr, "deleted from the NameServers only") {
		t.Errorf("no note on the brokers' half: %q", r.stderr)
	}
	want(t, 4, "topicRoute", "-t", "TopicA", "-n", n)

	// A write with a peer down reports each peer and fails.
	down := "127.0.0.1:" + strconv.Itoa(freePort(t))
	r = want(t, 3, "updateKvConfig", "-s", "NS", "-k", "k", "-v", "v", "-n", n+";"+down)
	lineWith(t, r.stdout, "in name server["+peers[2].addr+"] OK")
	lineWith(t, r.stdout, "in name server["+down+"] Failed")
	if !strings.Contains(r.stderr, down+": unreachable: nothing listens there (connection refused)") {
		t.Errorf("stderr %q", r.stderr)
	}
}

// TestFailuresAreExplained points nsadmin at what is not a working
// NameServer and checks each message and exit code.
func TestFailuresAreExplained(t *testing.T) {
	peers := startPeers(t, 1)
	good := peers[0].addr
	closed := "127.0.0.1:" + strconv.Itoa(freePort(t))

	// A port that accepts and never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	go serve(silent, func(c net.Conn) {
		_, _ = io.Copy(io.Discard, c)
	})
	// A server of another protocol: it answers a frame whose serialize
	// type is neither JSON nor ROCKETMQ.
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	go serve(other, func(c net.Conn) {
		var hdr [8]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		_, _ = c.Write([]byte{0, 0, 0, 6, 7, 0, 0, 2, '{', '}'})
		_, _ = io.Copy(io.Discard, c)
	})

	// An HTTP server that answers what it cannot parse.
	web, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { web.Close() })
	go serve(web, func(c net.Conn) {
		_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n"))
	})

	tests := []struct {
		name string
		args []string
		code int
		// stderr must hold each of these.
		stderr []string
	}{
		{"refused connection", []string{"clusterList", "-n", good + ";" + closed}, 3,
			[]string{closed + ": unreachable: nothing listens there (connection refused)"}},
		{"no answer", []string{"clusterList", "--timeout", "300ms", "-n", silent.Addr().String()}, 3,
			[]string{silent.Addr().String() + ": no answer within 300ms"}},
		{"the NameServer's HTTP port", []string{"clusterList", "--timeout", "300ms", "-n", peers[0].httpAddr}, 3,
			[]string{"no answer within 300ms (check it is the remoting port (9876 by default)"}},
		{"an HTTP server that answers", []string{"clusterList", "-n", web.Addr().String()}, 3,
			[]string{"answered in HTTP: this is an HTTP port, not the remoting port"}},
		{"wrong serialize type", []string{"topicList", "-n", other.Addr().String()}, 3,
			[]string{"answered with serialize type 7, which is neither JSON (0) nor ROCKETMQ (1)"}},
		{"refused request", []string{"updateNamesrvConfig", "-k", "rocketmqHome", "-v", "/x", "-n", good}, 4,
			[]string{good + ": refused: NO_PERMISSION"}},
		{"refused beats nothing, failure beats refused", []string{"updateNamesrvConfig", "-k", "rocketmqHome", "-v", "/x", "-n", good + ";" + closed}, 3,
			[]string{"NO_PERMISSION", "connection refused"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := want(t, tt.code, tt.args...)
			for _, s := range tt.stderr {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
				}
			}
		})
	}

	// The answering peer's table is still printed when another fails.
	r := want(t, 3, "clusterList", "-n", good+";"+closed)
	lineWith(t, r.stdout, "#Cluster Name")
	type out struct {
		NameServers []struct {
			Addr  string `json:"nameServer"`
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		} `json:"nameServers"`
	}
	j := decode[out](t, want(t, 3, "clusterList", "-o", "json", "-n", good+";"+closed))
	if !j.NameServers[0].OK || j.NameServers[1].OK || !strings.Contains(j.NameServers[1].Error, "connection refused") {
		t.Errorf("json %+v", j)
	}
}

// serve accepts connections until l closes, each handled by h.
func serve(l net.Listener, h func(net.Conn)) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			h(c)
		}()
	}
}

// TestTLSFollowsTheNameServersMode runs nsadmin against NameServers
// enforcing TLS, serving both, and serving plain only.
func TestTLSFollowsTheNameServersMode(t *testing.T) {
	ca := tlstest.NewCA(t, "nsadmin-test-ca")
	dir := t.TempDir()
	cert, key := ca.Server(t).Write(t, dir)
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	enforcing := startPeers(t, 1, "--tls-mode", "enforcing", "--tls-cert", cert, "--tls-key", key)[0].addr
	permissive := startPeers(t, 1, "--tls-mode", "permissive", "--tls-cert", cert, "--tls-key", key)[0].addr
	plain := startPeers(t, 1, "--tls-mode", "disabled")[0].addr

	want(t, 0, "clusterList", "--tls-ca", caFile, "-n", enforcing+";"+permissive)
	want(t, 0, "clusterList", "-n", permissive+";"+plain)
	want(t, 0, "clusterList", "--tls", "--tls-insecure-skip-verify", "-n", enforcing)

	for _, tt := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"clusterList", "-n", enforcing}, "closed the connection without answering (a NameServer enforcing TLS does this to plain clients: try --tls)"},
		{[]string{"clusterList", "--tls", "-n", enforcing}, "not signed by a trusted CA (pass --tls-ca FILE, or --tls-insecure-skip-verify)"},
		{[]string{"clusterList", "--tls-ca", caFile, "--tls-server-name", "elsewhere", "-n", enforcing}, "--tls-server-name"},
		{[]string{"clusterList", "--tls-ca", caFile, "-n", plain}, "TLS"},
	} {
		r := want(t, 3, tt.args...)
		if !strings.Contains(r.stderr, tt.stderr) {
			t.Errorf("%v: stderr lacks %q:\n%s", tt.args, tt.stderr, r.stderr)
		}
	}
}

// TestSerializeTypes sends ROCKETMQ headers, from the flag and from
// RocketMQ's environment variable.
func TestSerializeTypes(t *testing.T) {
	peers := startPeers(t, 2)
	a := startBroker(t, "broker-a", brokersim.Topic("TopicA", 4), brokersim.Topic("Shared", 2))
	register(t, a, peers...)
	r := want(t, 0, "topicRoute", "-t", "TopicA", "--serialize-type", "ROCKETMQ", "-n", list(peers))
	lineWith(t, r.stdout, "broker-a", "2/2")
	r = runNsadmin(t, []string{"ROCKETMQ_SERIALIZE_TYPE=ROCKETMQ", "NAMESRV_ADDR=" + list(peers)}, "clusterList")
	if r.code != 0 || !strings.Contains(r.stdout, "broker-a") {
		t.Errorf("env: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestUsageErrors(t *testing.T) {
	n := "127.0.0.1:9"
	tests := []struct {
		args   []string
		env    []string
		stderr string
	}{
		{nil, nil, "usage: nsadmin COMMAND"},
		{[]string{"noSuchCommand"}, nil, `no command "noSuchCommand"`},
		{[]string{"clusterList"}, nil, "no NameServer: give -n"},
		{[]string{"clusterList", "-n", "no-port"}, nil, `"no-port" is not host:port`},
		{[]string{"clusterList", "-n", ";;"}, nil, "the NameServer list is empty"},
		{[]string{"clusterList", "-n", n, "extra"}, nil, `unexpected arguments ["extra"]`},
		{[]string{"clusterList", "-n", n, "--no-such-flag"}, nil, "unknown flag: --no-such-flag"},
		{[]string{"clusterList", "-n", n, "-m"}, nil, "broker runtime stats"},
		{[]string{"clusterList", "-n", n, "-o", "xml"}, nil, `-o "xml": want table, json or yaml`},
		{[]string{"clusterList", "-n", n, "--timeout", "0s"}, nil, "--timeout must be positive"},
		{[]string{"clusterList", "-n", n, "--serialize-type", "XML"}, nil, `serialize type "XML": want JSON or ROCKETMQ`},
		{[]string{"clusterList", "-n", n}, []string{"ROCKETMQ_SERIALIZE_TYPE=XML"}, `serialize type "XML"`},
		{[]string{"clusterList", "-n", n, "--tls-cert", "x.crt"}, nil, "--tls-cert and --tls-key go together"},
		{[]string{"clusterList", "-n", n, "--tls-ca", "/no/such/ca.crt"}, nil, "--tls-ca: open /no/such/ca.crt"},
		{[]string{"clusterList", "-n", n, "--tls=false", "--tls-insecure-skip-verify"}, nil, "--tls=false contradicts"},
		{[]string{"topicRoute", "-n", n}, nil, "-t/--topic is required"},
		{[]string{"topicClusterList", "-n", n}, nil, "-t/--topic is required"},
		{[]string{"updateNamesrvConfig", "-n", n, "-v", "x"}, nil, "-k/--key is required"},
		{[]string{"updateKvConfig", "-n", n, "-k", "k", "-v", "v"}, nil, "-s (the KV namespace) is required"},
		{[]string{"deleteKvConfig", "-n", n, "-s", "ns"}, nil, "-k/--key is required"},
		{[]string{"kvList", "-n", n}, nil, "-s (the KV namespace) is required"},
		{[]string{"wipeWritePerm", "-n", n}, nil, "-b/--brokerName is required"},
		{[]string{"addWritePerm", "-n", n, "-b", " "}, nil, "-b/--brokerName is required"},
		{[]string{"deleteTopic", "-n", n, "-t", "T"}, nil, "-c/--clusterName is required"},
		{[]string{"help", "noSuchCommand"}, nil, `no command "noSuchCommand"`},
	}
	for _, tt := range tests {
		r := runNsadmin(t, tt.env, tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.stderr) || r.stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 mentioning %q", tt.args, r.code, r.stderr, r.stdout, tt.stderr)
		}
	}
}

func TestHelp(t *testing.T) {
	r := want(t, 0, "help")
	for _, s := range []string{"clusterList", "topicRoute", "updateKvConfig", "wipeWritePerm", "diff", "Exit codes:", "4  a peer refused the request"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("help lacks %q:\n%s", s, r.stdout)
		}
	}
	r = want(t, 0, "help", "clusterList")
	for _, s := range []string{"usage: nsadmin clusterList", "#ACTIVATED", "--namesrvAddr", "--output", "Exit codes:"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("help clusterList lacks %q:\n%s", s, r.stdout)
		}
	}
	if r2 := want(t, 0, "clusterList", "-h"); r2.stdout != r.stdout {
		t.Errorf("clusterList -h differs from help clusterList:\n%s", r2.stdout)
	}
	want(t, 0, "version")
}

// TestZeroTrustNameServer runs nsadmin against a NameServer that
// authorizes remoting requests by role and needs a credential for every
// read of its HTTP port, served over TLS only: nsadmin presents the client
// certificate, the bearer token or both it is given, and when refused says
// what to pass.
func TestZeroTrustNameServer(t *testing.T) {
	ca := tlstest.NewCA(t, "nsadmin-zero-trust-ca")
	dir := t.TempDir()
	cert, key := ca.Server(t).Write(t, dir)
	caFile, tokenFile, wrongToken := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token"), filepath.Join(dir, "wrong")
	tlstest.WriteFile(t, caFile, ca.PEM)
	tlstest.WriteFile(t, tokenFile, []byte("\n  s3cret-Token.1  \n"))
	tlstest.WriteFile(t, wrongToken, []byte("not-the-token\n"))
	client := func(name string) []string {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		c, k := ca.Client(t, name).Write(t, d)
		return []string{"--tls-ca", caFile, "--tls-cert", c, "--tls-key", k}
	}
	admin, reader, stranger := client("admin"), client("reader"), client("stranger")
	p := startPeers(t, 1, "--tls-mode", "permissive", "--tls-cert", cert, "--tls-key", key,
		"--tls-trust-cert", caFile, "--tls-client-auth", "optional",
		"--authz-enable", "--authz-admin-identities", "cn:admin", "--authz-read-identities", "cn:reader", "--authz-read-networks", "127.0.0.0/8",
		"--http-auth-scope", "all", "--http-auth-token-file", tokenFile, "--http-tls-mode", "enforcing")[0]
	_, httpPort, _ := net.SplitHostPort(p.httpAddr)
	with := func(args []string, more ...string) []string { return append(append([]string{}, args...), more...) }

	// The remoting port: reads by network; writes need the admin role.
	want(t, 0, "getNamesrvConfig", "-n", p.addr)
	r := want(t, 4, "updateKvConfig", "-s", "ns", "-k", "k", "-v", "v", "-n", p.addr)
	if !strings.Contains(r.stderr, "needs the admin role") || !strings.Contains(r.stderr, "present a client certificate holding it with --tls-cert") {
		t.Errorf("refused write: stderr\n%s", r.stderr)
	}
	want(t, 4, with([]string{"updateKvConfig", "-s", "ns", "-k", "k", "-v", "v", "-n", p.addr}, stranger...)...)
	want(t, 0, with([]string{"updateKvConfig", "-s", "ns", "-k", "k", "-v", "v", "-n", p.addr}, admin...)...)
	r = want(t, 0, "kvList", "-s", "ns", "-n", p.addr)
	lineWith(t, r.stdout, "k", "v")

	// The HTTP port: a token or a certificate holding read, over HTTPS.
	peerStatus := []string{"peerStatus", "--http-port", httpPort, "-n", p.addr}
	eventually(t, 0, with(peerStatus, "--https", "--tls-ca", caFile, "--http-token-file", tokenFile)...)
	want(t, 0, with(with(peerStatus, reader...), "--https")...)
	want(t, 0, with(with(peerStatus, admin...), "--https")...)
	for _, tt := range []struct {
		args   []string
		stderr string
	}{
		{with(peerStatus, "--http-token-file", tokenFile), "serves TLS only (httpTLSMode=enforcing): pass --https"},
		{with(peerStatus, "--https", "--tls-ca", caFile), "401 Unauthorized (the NameServer's HTTP port needs a credential (httpAuthScope=all): pass --http-token-file FILE, or --https with --tls-cert and --tls-key)"},
		{with(peerStatus, "--https", "--tls-ca", caFile, "--http-token-file", wrongToken), "does not accept the token of --http-token-file"},
		{with(with(peerStatus, stranger...), "--https"), "403 Forbidden (the client certificate does not hold the read role"},
	} {
		r := want(t, 4, tt.args...)
		if !strings.Contains(r.stderr, tt.stderr) {
			t.Errorf("%v: stderr lacks %q:\n%s", tt.args, tt.stderr, r.stderr)
		}
	}
	empty := filepath.Join(dir, "empty")
	tlstest.WriteFile(t, empty, []byte("\n \n"))
	for file, msg := range map[string]string{empty: "holds no token", filepath.Join(dir, "none"): "no such file"} {
		r := want(t, 2, with(peerStatus, "--http-token-file", file)...)
		if !strings.Contains(r.stderr, "--http-token-file: ") || !strings.Contains(r.stderr, msg) {
			t.Errorf("token file %s: stderr\n%s", file, r.stderr)
		}
	}
}
