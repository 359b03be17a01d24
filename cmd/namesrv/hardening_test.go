package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting/tlstest"
)

// namesrvProcess is a running namesrv command.
type namesrvProcess struct {
	addr   string
	cmd    *exec.Cmd
	exited chan struct{}
	stderr *bytes.Buffer
}

// kill sends SIGKILL and waits until the process is gone, so that no write
// of it can land afterwards.
func (p *namesrvProcess) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// startNamesrv runs the command with args plus a loopback listener and waits
// until it accepts connections.
func startNamesrv(t *testing.T, env []string, args ...string) *namesrvProcess {
	t.Helper()
	port := strconv.Itoa(freePort(t))
	cmd := command(t, append([]string{"--bind-address", "127.0.0.1", "--listen-port", port, "--http-port", "0"}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	p := &namesrvProcess{addr: "127.0.0.1:" + port, cmd: cmd, exited: exited, stderr: &stderr}
	t.Cleanup(p.kill)
	addr := p.addr
	deadline := time.Now().Add(10 * time.Second)
	for {
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			nc.Close()
			return p
		}
		select {
		case <-exited:
			t.Fatalf("namesrv exited: %s", stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("namesrv not listening on %s: %v", addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTLSFlagsAndEnvironment starts namesrv enforcing TLS from flags and
// environment variables, as the operator runs it with a mounted Secret,
// and updates the Secret's files while it runs.
func TestTLSFlagsAndEnvironment(t *testing.T) {
	ca := tlstest.NewCA(t, "operator-ca")
	dir := t.TempDir()
	certPath, keyPath := ca.Server(t).Write(t, dir)
	p := startNamesrv(t, []string{"NAMESRV_TLS_KEY=" + keyPath}, "--tls-mode", "enforcing", "--tls-cert", certPath)
	addr := p.addr

	handshake := func() (*tls.Conn, error) {
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		tc := tls.Client(nc, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
		return tc, tc.Handshake()
	}
	tc, err := handshake()
	if err != nil {
		t.Fatalf("TLS handshake: %v\n%s", err, p.stderr.String())
	}
	c := remotingclient.New(tc, remotingclient.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := c.Invoke(ctx, &remotingclient.Request{Code: protocol.GetNamesrvConfig})
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"tls.server.mode=enforcing\n", "tls.server.certPath=" + certPath + "\n", "tls.server.keyPath=" + keyPath + "\n"} {
		if !strings.Contains(string(r.Body), line) {
			t.Errorf("config lacks %q", line)
		}
	}
	c.Close()

	plain, err := remotingclient.Dial(ctx, addr, remotingclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Invoke(ctx, &remotingclient.Request{Code: protocol.GetNamesrvConfig}); err == nil {
		t.Fatal("a plain client was served by an enforcing server")
	}
	plain.Close()

	next := ca.Server(t)
	next.Write(t, dir)
	tc, err = handshake()
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if got := tc.ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(next.Leaf.SerialNumber) != 0 {
		t.Fatalf("after the update the server presents serial %s, want %s", got, next.Leaf.SerialNumber)
	}
}

func TestTLSMisconfigurationStopsTheStart(t *testing.T) {
	for _, args := range [][]string{
		{"--tls-mode", "enforcing"},
		{"--tls-mode", "sometimes"},
		{"--tls-cert", filepath.Join(t.TempDir(), "missing.crt"), "--tls-key", filepath.Join(t.TempDir(), "missing.key")},
	} {
		var stderr bytes.Buffer
		cmd := command(t, append([]string{"--listen-port", "0", "--http-port", "0"}, args...)...)
		cmd.Stderr = &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(strings.ToLower(stderr.String()), "tls") {
			t.Errorf("%v: err %v, stderr %q; want exit 1 naming the TLS setting", args, err, stderr.String())
		}
	}
}

// kvKey is the history of one key since its state was last observed on
// disk: the observed state, then the operations sent after it, of which the
// first acked were acknowledged.
type kvKey struct {
	present bool
	value   string
	ops     []kvOp
	acked   int
}

type kvOp struct {
	value string
	del   bool
}

// stateAfter is the key's state after its first n operations.
func (k *kvKey) stateAfter(n int) (present bool, value string) {
	present, value = k.present, k.value
	for _, op := range k.ops[:n] {
		present, value = !op.del, op.value
	}
	return present, value
}

// TestKVSurvivesSIGKILLDuringWrites runs the real namesrv, writes KV
// entries from several connections, SIGKILLs it at a random moment, and
// checks after every kill that the file parses and holds every
// acknowledged write, possibly some writes that were sent but not
// acknowledged, and nothing else; then that the restarted server serves
// exactly the file.
func TestKVSurvivesSIGKILLDuringWrites(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("NAMESRV_KILL_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reproduce with NAMESRV_KILL_SEED=%d", seed)
		}
	})
	rng := rand.New(rand.NewPCG(seed, 0))
	kvPath := filepath.Join(t.TempDir(), "kv", "kvConfig.json")
	const ns, writers, rounds = "ORDER_TOPIC_CONFIG", 3, 15
	keys := map[string]*kvKey{}
	var mu sync.Mutex // guards keys while writers run
	totalAcked := 0

	for round := range rounds {
		p := startNamesrv(t, nil, "--kv-config-path", kvPath, "--log-level", "warn")
		addr := p.addr
		checkServed(t, addr, ns, keys)

		var wg sync.WaitGroup
		var roundAcked atomic.Int64
		for w := range writers {
			wrng := rand.New(rand.NewPCG(seed, uint64(round*writers+w+1)))
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				c, err := remotingclient.Dial(ctx, addr, remotingclient.Options{})
				if err != nil {
					return
				}
				defer c.Close()
				for i := 0; ; i++ {
					mu.Lock()
					var mine []string
					for name := range keys {
						if strings.HasPrefix(name, fmt.Sprintf("w%d-", w)) {
							mine = append(mine, name)
						}
					}
					slices.Sort(mine)
					name := fmt.Sprintf("w%d-r%d-%d", w, round, i)
					op := kvOp{value: fmt.Sprintf("v%d.%d \"é\\ %d", round, i, wrng.IntN(1000))}
					if len(mine) > 0 && wrng.IntN(10) < 4 {
						name = mine[wrng.IntN(len(mine))]
						op.del = wrng.IntN(3) == 0
					}
					k := keys[name]
					if k == nil {
						k = &kvKey{}
						keys[name] = k
					}
					k.ops = append(k.ops, op)
					n := len(k.ops)
					mu.Unlock()

					req := &remotingclient.Request{Code: protocol.PutKVConfig,
						Ext: []remoting.Pair{{Key: "namespace", Value: ns}, {Key: "key", Value: name}, {Key: "value", Value: op.value}}}
					if op.del {
						req = &remotingclient.Request{Code: protocol.DeleteKVConfig,
							Ext: []remoting.Pair{{Key: "namespace", Value: ns}, {Key: "key", Value: name}}}
					}
					r, err := c.Invoke(ctx, req)
					if err != nil {
						return // killed
					}
					if r.Code != protocol.Success {
						t.Errorf("write %s: code %d %s", name, r.Code, r.Remark)
						return
					}
					mu.Lock()
					k.acked = n
					mu.Unlock()
					roundAcked.Add(1)
				}
			}()
		}
		// The kill lands at a random moment after the first write of the
		// round is acknowledged: counting from the start instead, a loaded
		// machine can kill before any write, and the round proves nothing.
		waitUntil(t, 10*time.Second, "a write acknowledged", func() bool { return roundAcked.Load() > 0 })
		time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond)
		p.kill()
		wg.Wait()
		if t.Failed() {
			t.Fatalf("round %d: namesrv log:\n%s", round, p.stderr.String())
		}

		onDisk := readKVFile(t, kvPath, ns)
		acked := 0
		for name, k := range keys {
			acked += k.acked
			got, present := onDisk[name]
			ok := false
			for n := k.acked; n <= len(k.ops) && !ok; n++ {
				wantPresent, want := k.stateAfter(n)
				ok = present == wantPresent && (!present || got == want)
			}
			if !ok {
				wantPresent, want := k.stateAfter(k.acked)
				t.Fatalf("round %d: key %s on disk %v %q; acknowledged state %v %q, %d of %d operations acknowledged",
					round, name, present, got, wantPresent, want, k.acked, len(k.ops))
			}
			// What is on disk is now the truth the next round builds on.
			k.present, k.value, k.ops, k.acked = present, got, nil, 0
		}
		for name := range onDisk {
			if keys[name] == nil {
				t.Fatalf("round %d: key %s on disk was never written", round, name)
			}
		}
		totalAcked += acked
	}
	if totalAcked < rounds {
		t.Fatalf("only %d writes acknowledged in %d rounds: the kills came before any write", totalAcked, rounds)
	}
	t.Logf("%d acknowledged writes over %d kills", totalAcked, rounds)
}

// waitUntil polls cond until it holds, failing the test after within.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readKVFile parses the KV file with the standard library, independently
// of the server's own reader, and returns namespace ns.
func readKVFile(t *testing.T, path, ns string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		ConfigTable map[string]map[string]string `json:"configTable"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatalf("KV file does not parse after SIGKILL: %v\n%s", err, data)
	}
	for name := range file.ConfigTable {
		if name != ns {
			t.Fatalf("KV file has a namespace %q nobody wrote", name)
		}
	}
	return file.ConfigTable[ns]
}

// checkServed compares what a freshly started server answers with the
// observed state of every key.
func checkServed(t *testing.T, addr, ns string, keys map[string]*kvKey) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := remotingclient.Dial(ctx, addr, remotingclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Invoke(ctx, &remotingclient.Request{Code: protocol.GetKVListByNamespace, Ext: []remoting.Pair{{Key: "namespace", Value: ns}}})
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]string{}
	if r.Code == protocol.Success {
		var table struct {
			Table map[string]string `json:"table"`
		}
		if err := json.Unmarshal(r.Body, &table); err != nil {
			t.Fatalf("KV list %s: %v", r.Body, err)
		}
		served = table.Table
	}
	want := map[string]string{}
	for name, k := range keys {
		if k.present {
			want[name] = k.value
		}
	}
	if len(served) != len(want) {
		t.Fatalf("restarted server serves %d keys, the file holds %d", len(served), len(want))
	}
	for name, v := range want {
		if served[name] != v {
			t.Fatalf("restarted server serves %s=%q, the file holds %q", name, served[name], v)
		}
	}
}
