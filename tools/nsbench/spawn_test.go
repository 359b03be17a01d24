package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serverFlags are namesrv's flags for the place nsbench chose, as a shell
// command line with placeholders.
const serverFlags = "--bind-address 127.0.0.1 --listen-port {port} --http-port 0 --kv-config-path {kv} --config-store-path {config} --log-level warn"

// TestSpawnCmd starts our namesrv through shell command lines, as
// -spawn-cmd starts any NameServer: the placeholders and the environment
// name the same place, the process measured is the server (also below a
// wrapper that does not exec it), and nothing is left running or on disk.
func TestSpawnCmd(t *testing.T) {
	for _, tc := range []struct {
		name, line string
	}{
		{"placeholders", "exec " + namesrvBin + " " + serverFlags},
		{"environment", `exec "$NSBENCH_BIN" --bind-address 127.0.0.1 --listen-port "$NSBENCH_PORT" --http-port 0 ` +
			`--kv-config-path "$NSBENCH_KV_CONFIG_PATH" --config-store-path "$NSBENCH_CONFIG_PATH" --log-level warn`},
		{"wrapper without exec", `sh -c "$NSBENCH_BIN ` + serverFlags + `"; echo wrapper ends`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("NSBENCH_BIN", namesrvBin)
			rec := filepath.Join(t.TempDir(), "place")
			line := "echo {port} $NSBENCH_PORT {dir} $NSBENCH_DIR {kv} $NSBENCH_KV_CONFIG_PATH {config} $NSBENCH_CONFIG_PATH $$ > " + rec + "; " + tc.line
			var out bytes.Buffer
			if err := run([]string{"-spawn-cmd", line, "-spawn-timeout", "20s", "-mode", "register", "-brokers", "1",
				"-topics-per-broker", "20", "-interval", "10ms", "-duration", "1s"}, &out); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			m := regexp.MustCompile(`server: 127\.0\.0\.1:(\d+), pid (\d+) \((\w+)\)`).FindStringSubmatch(out.String())
			if m == nil {
				t.Fatalf("no server line:\n%s", out.String())
			}
			if m[3] != "namesrv" {
				t.Errorf("measured %s, want the namesrv process", m[3])
			}
			if !strings.Contains(out.String(), "ms per registration; server RSS") {
				t.Errorf("no server CPU and RSS reported:\n%s", out.String())
			}
			b, err := os.ReadFile(rec)
			if err != nil {
				t.Fatal(err)
			}
			f := strings.Fields(string(b))
			if len(f) != 9 || f[0] != m[1] || f[1] != m[1] || f[2] != f[3] || f[4] != f[5] || f[6] != f[7] ||
				f[4] != filepath.Join(f[2], "kvConfig.json") || f[6] != filepath.Join(f[2], "namesrv.properties") {
				t.Errorf("placeholders and environment %q, port %s", f, m[1])
			}
			if _, err := os.Stat(f[2]); !os.IsNotExist(err) {
				t.Errorf("scratch directory %s left behind: %v", f[2], err)
			}
			pid, _ := strconv.Atoi(m[2])
			shell, _ := strconv.Atoi(f[8])
			if tc.name == "wrapper without exec" && pid == shell {
				t.Errorf("measured the wrapper %d, not the server below it", shell)
			}
			for _, p := range []int{pid, shell} {
				if alive(p) {
					t.Errorf("process %d still runs after nsbench ended", p)
				}
			}
		})
	}
}

// TestSpawnCmdCurves runs a curve that needs a fresh server per point
// through -spawn-cmd.
func TestSpawnCmdCurves(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	err := run([]string{"-spawn-cmd", "exec " + namesrvBin + " " + serverFlags, "-mode", "curves", "-quick", "-curves", "storm", "-out", dir}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	positive(t, dir, "storm", 1, []string{"routable_after_ms", "route_queries", "rss_mib"}, "not_found")
	runInfo, err := readTable(dir, "run")
	if err != nil {
		t.Fatal(err)
	}
	// The command line is one argument: the report quotes it.
	if want := "nsbench -spawn-cmd 'exec "; !strings.HasPrefix(runInfo.rows[0][1], want) {
		t.Errorf("run.csv command %q, want it to start with %q", runInfo.rows[0][1], want)
	}
}

// TestSpawnCmdFailures checks that a command that fails, or never
// answers, is reported and stopped.
func TestSpawnCmdFailures(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "pid")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"exits at once", []string{"-spawn-cmd", "echo failing >&2; exit 3", "-spawn-timeout", "60s"}, "exited before answering"},
		{"never answers", []string{"-spawn-cmd", "echo $$ > " + rec + "; exec sleep 30", "-spawn-timeout", "300ms"}, "did not answer"},
		{"not found", []string{"-spawn-cmd", "exec /nonexistent/namesrv " + serverFlags}, "exited before answering"},
		{"both", []string{"-spawn", namesrvBin, "-spawn-cmd", "true"}, "not both"},
		{"empty", []string{"-spawn-cmd", "  "}, "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(append(tc.args, "-mode", "start"), new(bytes.Buffer))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid <= 0 || alive(pid) {
		t.Errorf("the command that never answered (pid %d) was not stopped", pid)
	}
}

func TestSpawnCmdRefusesAShellyTempDir(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "a dir")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	err := run([]string{"-spawn-cmd", "exec " + namesrvBin + " " + serverFlags, "-mode", "start"}, new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), "TMPDIR") {
		t.Fatalf("err %v, want a TMPDIR error", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("scratch directories left in TMPDIR: %v", left)
	}
}

// TestListenerPID finds the process that listens on a port among a
// process group's members, and refuses a group that holds no such socket.
func TestListenerPID(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if pid, err := listenerPID(syscall.Getpgrp(), port); err != nil || pid != os.Getpid() {
		t.Errorf("listener of this test's group: pid %d, %v; want %d", pid, err, os.Getpid())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	other := exec.CommandContext(ctx, "sleep", "30")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	if _, err := listenerPID(other.Process.Pid, port); err == nil || !strings.Contains(err.Error(), "process group") {
		t.Errorf("a group that does not listen: %v", err)
	}

	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freePort := free.Addr().(*net.TCPAddr).Port
	free.Close()
	if _, err := listenerPID(syscall.Getpgrp(), freePort); err == nil || !strings.Contains(err.Error(), "no socket listens") {
		t.Errorf("a port nobody listens on: %v", err)
	}
}
