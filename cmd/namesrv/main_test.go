package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

// The tests run the real command: the test binary re-executes itself as
// namesrv when this variable is set.
const runMainEnv = "NAMESRV_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func command(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "HOME="+t.TempDir())
	return cmd
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

func TestPrintConfig(t *testing.T) {
	out, err := command(t, "-p").Output()
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	for _, line := range []string{"listenPort=9876\n", "bindAddress=0.0.0.0\n", "serverChannelMaxIdleTimeSeconds=120\n", "httpPort=8080\n",
		"routeGateEnable=false\n", "routeGateTimeoutSeconds=90\n", "kvDeclaredFile=\n", "brokerAddressFile=\n", "liveBrokersPath=\n"} {
		if !strings.Contains(text, line) {
			t.Errorf("-p output lacks %q", line)
		}
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	for i := 1; i < len(lines); i++ {
		if lines[i-1] > lines[i] {
			t.Fatalf("-p output not sorted: %q before %q", lines[i-1], lines[i])
		}
	}
}

func TestBadConfigurationIsAClearError(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.properties")
	if err := os.WriteFile(bad, []byte("listenPort=nine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(dir, "kv.json")
	if err := os.WriteFile(corrupt, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-c", bad}, 1, "listenPort"},
		{[]string{"-c", filepath.Join(dir, "missing.properties")}, 1, "missing.properties"},
		{[]string{"--listen-port", "-5"}, 1, "listenPort"},
		{[]string{"--no-such-flag"}, 2, "no-such-flag"},
		{[]string{"extra-arg"}, 2, "unexpected arguments"},
		{[]string{"--kv-config-path", corrupt, "--listen-port", "0", "--http-port", "0"}, 1, "kv.json"},
		{[]string{"--route-gate-enable", "--route-gate-timeout-seconds", "0"}, 1, "routeGateTimeoutSeconds"},
	}
	for _, tt := range tests {
		var stderr bytes.Buffer
		cmd := command(t, tt.args...)
		cmd.Stderr = &stderr
		err := cmd.Run()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != tt.code || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: err %v, stderr %q; want exit %d mentioning %q", tt.args, err, stderr.String(), tt.code, tt.want)
		}
	}
}

// TestJavaPropertiesFileAndSIGTERM starts namesrv from a Java-style
// namesrv.properties (unknown keys included), checks the file took effect
// over the wire, then stops it with SIGTERM.
func TestJavaPropertiesFileAndSIGTERM(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	props := filepath.Join(dir, "namesrv.properties")
	if err := os.WriteFile(props, []byte(fmt.Sprintf(`# a namesrv.properties as mqnamesrv -c reads it
rocketmqHome=/opt/rocketmq
kvConfigPath=%s/kv/kvConfig.json
listenPort = %d
orderMessageEnable=true
serverWorkerThreads=16
someFutureJavaKey=1
`, dir, port)), 0o644); err != nil {
		t.Fatal(err)
	}
	httpPort := freePort(t)
	cmd := command(t, "-c", props, "--bind-address", "127.0.0.1", "--log-format", "json", "--http-port", strconv.Itoa(httpPort))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	logs := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs <- sc.Text()
		}
		close(logs)
	}()
	var seen []string
	waitLog := func(substr string) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-logs:
				if !ok {
					t.Fatalf("namesrv exited before logging %q; logs:\n%s", substr, strings.Join(seen, "\n"))
				}
				seen = append(seen, l)
				if strings.Contains(l, substr) {
					return
				}
			case <-timeout:
				t.Fatalf("no %q in logs:\n%s", substr, strings.Join(seen, "\n"))
			}
		}
	}
	waitLog("someFutureJavaKey")
	waitLog("boot success")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := remotingclient.Dial(ctx, "127.0.0.1:"+strconv.Itoa(port), remotingclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Invoke(ctx, &remotingclient.Request{Code: protocol.GetNamesrvConfig})
	if err != nil {
		t.Fatal(err)
	}
	text := string(r.Body)
	for _, line := range []string{"orderMessageEnable=true\n", "serverWorkerThreads=16\n", "someFutureJavaKey=1\n", "rocketmqHome=/opt/rocketmq\n", "configStorePath=" + props + "\n"} {
		if !strings.Contains(text, line) {
			t.Errorf("config lacks %q:\n%s", line, text)
		}
	}

	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", httpPort))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("readyz %d", resp.StatusCode)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitLog("stopped")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("client connection still open after shutdown")
	}
}

func TestPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	var stderr bytes.Buffer
	cmd := command(t, "--bind-address", "127.0.0.1", "--listen-port", port, "--http-port", "0")
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "address already in use") {
		t.Fatalf("err %v stderr %s", err, stderr.String())
	}
}
