package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"
)

// tuningFlags are the manager's flags for a large fleet, passed when the
// manager has them (its --help lists them).
var tuningFlags = []string{"max-concurrent-reconciles", "kube-api-qps", "kube-api-burst"}

// managerFlags lists the flags of a manager binary with their defaults,
// from its --help.
func managerFlags(ctx context.Context, bin string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--help").CombinedOutput()
	flags := parseHelp(out)
	if len(flags) == 0 {
		return nil, fmt.Errorf("%s --help listed no flags (%v): %s", bin, err, bytes.TrimSpace(out[:min(len(out), 500)]))
	}
	return flags, nil
}

var (
	helpFlag    = regexp.MustCompile(`(?m)^\s+-{1,2}([A-Za-z0-9][A-Za-z0-9_.-]*)`)
	helpDefault = regexp.MustCompile(`\(default "?([^")]*)"?\)\s*$`)
)

// parseHelp reads Go flag package usage: "  -name type" lines, each
// followed by its description, which ends with "(default x)" when the
// default is not the zero value.
func parseHelp(out []byte) map[string]string {
	flags := map[string]string{}
	name := ""
	for line := range bytes.Lines(out) {
		if m := helpFlag.FindSubmatch(line); m != nil && !bytes.HasPrefix(line, []byte("    \t")) && !bytes.HasPrefix(line, []byte("\t")) {
			name = string(m[1])
			flags[name] = ""
		}
		if name == "" {
			continue
		}
		if m := helpDefault.FindSubmatch(bytes.TrimRight(line, "\n")); m != nil {
			flags[name] = string(m[1])
		}
	}
	return flags
}

// manager is the manager process, in a process group of its own so that
// whatever it starts stops with it.
type manager struct {
	cmd     *exec.Cmd
	metrics string // URL of /metrics
	out     *lockedBuffer
	done    chan struct{}
}

// startManager runs the manager against the kubeconfig with its metrics
// and probes on free loopback ports, and waits for /readyz.
func startManager(ctx context.Context, bin, kubeconfig string, args []string) (*manager, error) {
	metricsAddr, err := freeAddress()
	if err != nil {
		return nil, err
	}
	probeAddr, err := freeAddress()
	if err != nil {
		return nil, err
	}
	args = append([]string{"--leader-elect=false", "--metrics-bind-address=" + metricsAddr,
		"--health-probe-bind-address=" + probeAddr, "--zap-log-level=error"}, args...)
	m := &manager{metrics: "http://" + metricsAddr + "/metrics", out: &lockedBuffer{}, done: make(chan struct{})}
	m.cmd = exec.Command(bin, args...)
	m.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	m.cmd.Stdout, m.cmd.Stderr = m.out, m.out
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() {
		_ = m.cmd.Wait()
		close(m.done)
	}()
	err = poll(ctx, 60*time.Second, func() error {
		select {
		case <-m.done:
			return errPermanent{fmt.Errorf("the manager exited: %s", m.tail())}
		default:
		}
		resp, err := http.Get("http://" + probeAddr + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	})
	if err != nil {
		m.stop()
		return nil, fmt.Errorf("waiting for the manager's /readyz: %w", err)
	}
	return m, nil
}

func (m *manager) pid() int { return m.cmd.Process.Pid }

// stop sends SIGTERM to the manager's process group, and SIGKILL when it
// has not exited 15 s later.
func (m *manager) stop() {
	select {
	case <-m.done:
		return
	default:
	}
	_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
		<-m.done
	}
}

// tail is the end of the manager's output, for errors.
func (m *manager) tail() string {
	s := m.out.String()
	return s[max(0, len(s)-2000):]
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// writeKubeconfig writes a kubeconfig into dir.
func writeKubeconfig(dir string, kc []byte) (string, error) {
	path := filepath.Join(dir, "kubeconfig")
	return path, os.WriteFile(path, kc, 0o600)
}

// errPermanent ends a poll at once.
type errPermanent struct{ error }

// poll calls check every 100 ms until it returns nil, returns a permanent
// error, or timeout passes.
func poll(ctx context.Context, timeout time.Duration, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		err := check()
		if err == nil {
			return nil
		}
		var p errPermanent
		if errors.As(err, &p) {
			return p.error
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// tuningArgs are the --flag=value arguments of the tuning flags set (a
// value other than ""), refused when the manager lacks the flag; and the
// value in effect of each: the one set, else the manager's default, or
// "-" when it has no such flag.
func tuningArgs(set map[string]string, flags map[string]string) ([]string, map[string]string, error) {
	var args []string
	effective := map[string]string{}
	for _, f := range tuningFlags {
		def, has := flags[f]
		v := set[f]
		switch {
		case v != "" && !has:
			return nil, nil, fmt.Errorf("-%s is set, but the manager has no --%s", f, f)
		case v != "":
			args = append(args, "--"+f+"="+v)
			effective[f] = v
		case has && def != "":
			effective[f] = def
		case has:
			effective[f] = "0"
		default:
			effective[f] = "-"
		}
	}
	return args, effective, nil
}
