package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

// spawnPlace is where a spawned server is to listen and keep its files:
// a free loopback port and a scratch directory removed when it stops.
type spawnPlace struct {
	port            int
	dir, kv, config string
}

// env is the place as environment variables, for wrapper scripts.
func (p spawnPlace) env() []string {
	return []string{
		"NSBENCH_PORT=" + strconv.Itoa(p.port),
		"NSBENCH_DIR=" + p.dir,
		"NSBENCH_KV_CONFIG_PATH=" + p.kv,
		"NSBENCH_CONFIG_PATH=" + p.config,
	}
}

// launcher makes the command that starts a NameServer at a place.
type launcher struct {
	what    string // for messages: the binary or the command line
	command func(p spawnPlace) (*exec.Cmd, error)
}

// binaryLauncher starts our namesrv with its own flags.
func binaryLauncher(bin string) *launcher {
	return &launcher{what: bin, command: func(p spawnPlace) (*exec.Cmd, error) {
		return exec.Command(bin, "--bind-address", "127.0.0.1", "--listen-port", strconv.Itoa(p.port), "--http-port", "0",
			"--kv-config-path", p.kv, "--config-store-path", p.config, "--log-level", "warn"), nil
	}}
}

// plainPath is what a scratch path may hold to be put into a command line
// as it is, inside or outside the shell's quotes.
var plainPath = regexp.MustCompile(`^[A-Za-z0-9/._+-]+$`)

// commandLauncher runs a command line with sh -c, its placeholders
// replaced by the place.
func commandLauncher(line string) *launcher {
	return &launcher{what: line, command: func(p spawnPlace) (*exec.Cmd, error) {
		if !plainPath.MatchString(p.dir) {
			return nil, fmt.Errorf("-spawn-cmd: the scratch directory %q holds characters a shell would read; set TMPDIR to a plain path", p.dir)
		}
		r := strings.NewReplacer("{port}", strconv.Itoa(p.port), "{dir}", p.dir, "{kv}", p.kv, "{config}", p.config)
		return exec.Command("/bin/sh", "-c", r.Replace(line)), nil
	}}
}

// launcher is how -spawn or -spawn-cmd start a server; nil when neither
// was given (the server is -addr and -pid).
func (o *options) launcher() (*launcher, error) {
	switch {
	case o.spawn != "" && o.spawnCmd != "":
		return nil, errors.New("give -spawn or -spawn-cmd, not both")
	case o.spawn != "":
		return binaryLauncher(o.spawn), nil
	case strings.TrimSpace(o.spawnCmd) != "":
		return commandLauncher(o.spawnCmd), nil
	case o.spawnCmd != "":
		return nil, errors.New("-spawn-cmd is empty")
	}
	return nil, nil
}

// server is a spawned NameServer: the command nsbench started, in a
// process group of its own, and the process of that group that listens
// on the port (the command itself when it execs the server).
type server struct {
	cmd     *exec.Cmd
	pid     int    // the listening process, measured through /proc
	name    string // its command name
	addr    string
	startup time.Duration
	dir     string
	exited  chan struct{} // closed when cmd has been waited for
	waitErr error
}

// spawn starts a server on a free loopback port and waits for its first
// answer; the time from exec to that answer is its start-up time.
func spawn(ctx context.Context, l *launcher, timeout time.Duration) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir, err := os.MkdirTemp("", "nsbench")
	if err != nil {
		return nil, err
	}
	place := spawnPlace{port: port, dir: dir, kv: filepath.Join(dir, "kvConfig.json"), config: filepath.Join(dir, "namesrv.properties")}
	cmd, err := l.command(place)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd.Env = append(os.Environ(), place.env()...)
	cmd.Stdout = os.Stderr // a server's banner is not the report
	cmd.Stderr = os.Stderr
	// A group of its own: the stop reaches every process the command
	// started, and the listener is looked for among them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s := &server{cmd: cmd, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, exited: make(chan struct{})}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", l.what, err)
	}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitFirstAnswer(ctx, start, timeout); err != nil {
		s.stop()
		return nil, fmt.Errorf("%s: %w", l.what, err)
	}
	if s.pid, err = listenerPID(cmd.Process.Pid, port); err != nil {
		s.stop()
		return nil, fmt.Errorf("%s: %w", l.what, err)
	}
	s.name = commandName(s.pid)
	return s, nil
}

// waitFirstAnswer polls the server, more slowly as time goes by so that a
// JVM starting on the same cores is not slowed by the polls, until it
// answers, exits or the timeout passes.
func (s *server) waitFirstAnswer(ctx context.Context, start time.Time, timeout time.Duration) error {
	pause := 200 * time.Microsecond
	for {
		if c, err := remotingclient.Dial(ctx, s.addr, remotingclient.Options{}); err == nil {
			r, err := c.Invoke(ctx, &remotingclient.Request{Code: protocol.GetBrokerClusterInfo})
			c.Close()
			if err == nil && r.Code == protocol.Success {
				s.startup = time.Since(start)
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("exited before answering on %s (%v)", s.addr, s.waitErr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		if time.Since(start) > timeout {
			return fmt.Errorf("did not answer on %s within %v", s.addr, timeout)
		}
		pause = min(2*pause, 2*time.Millisecond)
	}
}

// stop ends the server, politely first, then the rest of its process
// group, and removes its scratch directory once all are gone. A server
// below a wrapper is stopped before the wrapper, so that the wrapper reaps
// it and exits by itself, as it would when its server stops.
func (s *server) stop() {
	pgid := s.cmd.Process.Pid
	if s.pid > 0 && s.pid != pgid {
		_ = syscall.Kill(s.pid, syscall.SIGTERM) // it may be gone already: the wait below tells
		if s.wait(func() bool { return !alive(s.pid) }, 10*time.Second) {
			s.wait(s.done, 2*time.Second)
		}
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM) // likewise
	if !s.wait(s.done, 10*time.Second) {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		s.wait(s.done, 5*time.Second)
	}
	os.RemoveAll(s.dir)
}

// done reports whether the command has exited and the listening process
// (its descendant, when the command did not exec it) is gone too.
func (s *server) done() bool {
	select {
	case <-s.exited:
		return s.pid <= 0 || !alive(s.pid)
	default:
		return false
	}
}

// wait polls cond until it holds or the time is up.
func (s *server) wait(cond func() bool, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// alive reports whether a process exists and is not a zombie (a
// descendant whose parent exited waits for init to reap it).
func alive(pid int) bool {
	state, _, err := procStat(pid)
	return err == nil && state != "Z" && state != "X"
}

// procStat reads a process's state and process group from
// /proc/<pid>/stat.
func procStat(pid int) (state string, pgrp int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, err
	}
	// The command name may hold spaces; fields are counted after its ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return "", 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	pgrp, err = strconv.Atoi(f[2])
	return f[0], pgrp, err
}

func commandName(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// listenerPID finds the process of group pgid that holds the TCP socket
// listening on port: the command itself, or the server it started below
// a shell or two (as RocketMQ's mqnamesrv does with java).
func listenerPID(pgid, port int) (int, error) {
	inodes, err := listeningInodes(port)
	if err != nil {
		return 0, err
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("no socket listens on port %d", port)
	}
	for _, pid := range groupMembers(pgid) {
		if holdsSocket(pid, inodes) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no process of the command's process group %d holds the socket listening on port %d "+
		"(a server that daemonizes or leaves its group cannot be measured)", pgid, port)
}

// listeningInodes are the inodes of the sockets listening on port, on any
// address, from /proc/net/tcp and /proc/net/tcp6.
func listeningInodes(port int) (map[string]bool, error) {
	const listen = "0A"
	inodes := map[string]bool{}
	suffix := fmt.Sprintf(":%04X", port)
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if errors.Is(err, os.ErrNotExist) {
			continue // no IPv6
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fs := strings.Fields(sc.Text())
			if len(fs) >= 10 && fs[3] == listen && strings.HasSuffix(fs[1], suffix) {
				inodes[fs[9]] = true
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", table, err)
		}
	}
	return inodes, nil
}

// groupMembers lists the processes of a process group, its leader first.
func groupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == pgid {
			continue
		}
		if _, g, err := procStat(pid); err == nil && g == pgid {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return append([]int{pgid}, out...)
}

// holdsSocket reports whether one of pid's file descriptors is a socket
// with one of the inodes.
func holdsSocket(pid int, inodes map[string]bool) bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(dir, fd.Name()))
		if inode, ok := strings.CutPrefix(target, "socket:["); err == nil && ok && inodes[strings.TrimSuffix(inode, "]")] {
			return true
		}
	}
	return false
}
