package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// adapter is the script that starts RocketMQ's Java NameServer for nsbench.
const adapter = "rocketmq-namesrv.sh"

// fakeRocketMQ lays out a RocketMQ distribution and a JAVA_HOME whose java
// records its process id, arguments and the properties file it was given,
// in place of a JVM (none of RocketMQ's jars can be had here).
func fakeRocketMQ(t *testing.T) (home, javaHome, record string) {
	t.Helper()
	root := t.TempDir()
	home, javaHome, record = filepath.Join(root, "rocketmq"), filepath.Join(root, "jdk"), filepath.Join(root, "record")
	for _, d := range []string{filepath.Join(home, "lib"), filepath.Join(home, "conf"), filepath.Join(javaHome, "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	java := `#!/bin/sh
{ echo "pid $$"; for a in "$@"; do echo "arg $a"; done; echo "home $ROCKETMQ_HOME"
  while [ $# -gt 1 ]; do [ "$1" = -c ] && sed 's/^/prop /' "$2"; shift; done; } > ` + record + "\n"
	if err := os.WriteFile(filepath.Join(javaHome, "bin", "java"), []byte(java), 0o755); err != nil {
		t.Fatal(err)
	}
	return home, javaHome, record
}

// runAdapter runs the script with args and the environment given.
func runAdapter(t *testing.T, env []string, args ...string) (pid int, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "./"+adapter, args...)
	cmd.Env = append(os.Environ(), env...)
	var e bytes.Buffer
	cmd.Stderr = &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	return cmd.Process.Pid, e.String(), err
}

// TestAdapterStartsTheJavaNameServer checks what the script hands the JVM
// for the flags -spawn passes and those a -spawn-cmd line would: the
// properties, the options and the main class, in the process nsbench
// started (exec, not a child).
func TestAdapterStartsTheJavaNameServer(t *testing.T) {
	home, javaHome, record := fakeRocketMQ(t)
	dir := t.TempDir()
	kv := filepath.Join(dir, "kvConfig.json")
	for _, tc := range []struct {
		name   string
		args   []string
		config string
	}{
		{"-spawn's flags", []string{"--bind-address", "127.0.0.1", "--listen-port", "45678", "--http-port", "0",
			"--kv-config-path", kv, "--config-store-path", filepath.Join(dir, "spawn.properties"), "--log-level", "warn"}, "spawn.properties"},
		{"-spawn-cmd's, with =", []string{"--listen-port=45678", "--kv-config-path=" + kv}, "namesrv.properties"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pid, stderr, err := runAdapter(t, []string{"ROCKETMQ_HOME=" + home, "JAVA_HOME=" + javaHome, "NSBENCH_JAVA_OPTS=-Dextra=1 -Dmore=2"}, tc.args...)
			if err != nil {
				t.Fatalf("%v: %s", err, stderr)
			}
			b, err := os.ReadFile(record)
			if err != nil {
				t.Fatal(err)
			}
			got := string(b)
			config := filepath.Join(dir, tc.config)
			for _, want := range []string{
				"pid " + strconv.Itoa(pid) + "\n",
				"arg -Xms256m\narg -Xmx4g\narg -Xmn1g\n",
				"arg -XX:+UseG1GC\n",
				"arg -Duser.home=" + dir + "\n",
				"arg -Dextra=1\narg -Dmore=2\n",
				"arg -cp\narg " + home + "/conf:" + home + "/lib/*\n",
				"arg org.apache.rocketmq.namesrv.NamesrvStartup\narg -c\narg " + config + "\n",
				"home " + home + "\n",
				"prop listenPort=45678\nprop kvConfigPath=" + kv + "\n",
			} {
				if !strings.Contains(got, want) {
					t.Errorf("the JVM was not given %q:\n%s", want, got)
				}
			}
		})
	}
}

func TestAdapterRefusesWhatItCannotStart(t *testing.T) {
	home, javaHome, _ := fakeRocketMQ(t)
	kv := filepath.Join(t.TempDir(), "kvConfig.json")
	env := []string{"ROCKETMQ_HOME=" + home, "JAVA_HOME=" + javaHome}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"no port", env, []string{"--kv-config-path", kv}, "--listen-port is required"},
		{"no kv path", env, []string{"--listen-port", "1"}, "--kv-config-path is required"},
		{"a flag without its value", env, []string{"--kv-config-path", kv, "--listen-port"}, "--listen-port needs a value"},
		{"a stray argument", env, []string{"stray"}, "unexpected argument stray"},
		{"no distribution", []string{"ROCKETMQ_HOME=" + t.TempDir(), "JAVA_HOME=" + javaHome}, []string{"--listen-port", "1", "--kv-config-path", kv}, "set ROCKETMQ_HOME"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, err := runAdapter(t, tc.env, tc.args...)
			if err == nil || !strings.Contains(stderr, tc.want) {
				t.Errorf("err %v, stderr %q; want a failure saying %q", err, stderr, tc.want)
			}
		})
	}
}

// TestAdapterIsTheDocumented checks that docs/benchmarks.md shows the
// script as it is.
func TestAdapterIsTheDocumented(t *testing.T) {
	script, err := os.ReadFile(adapter)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, append(append([]byte("```sh\n"), script...), "```\n"...)) {
		t.Errorf("docs/benchmarks.md does not show %s as it is, in a sh block", adapter)
	}
}
