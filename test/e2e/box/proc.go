package box

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// daemon is one long-running process of the box, logging to its own file.
type daemon struct {
	name    string
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error // valid once exited is closed
}

// startDaemon starts path with args, its output appended to
// <logDir>/<name>.log. It dies with the test process (Pdeathsig) and has a
// process group of its own, so that a signal to the test's group (a ^C)
// reaches it only through Stop.
func startDaemon(logDir, name, path string, args []string, env []string) (*daemon, error) {
	logf, err := os.OpenFile(filepath.Join(logDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("box: %s log: %w", name, err)
	}
	defer logf.Close()
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("box: start %s: %w", name, err)
	}
	d := &daemon{name: name, cmd: cmd, exited: make(chan struct{})}
	go func() {
		d.waitErr = cmd.Wait()
		close(d.exited)
	}()
	return d, nil
}

// alive reports an error once the process has exited.
func (d *daemon) alive() error {
	select {
	case <-d.exited:
		return fmt.Errorf("box: %s exited: %v (see its log)", d.name, d.waitErr)
	default:
		return nil
	}
}

// stop sends SIGTERM, then SIGKILL after grace, and waits for the exit. A
// nil daemon, or one already gone, is stopped.
func (d *daemon) stop(grace time.Duration) error {
	if d == nil || d.alive() != nil {
		return nil
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(grace):
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
	var exitErr *exec.ExitError
	if d.waitErr != nil && !errors.As(d.waitErr, &exitErr) {
		return fmt.Errorf("box: %s: %w", d.name, d.waitErr)
	}
	return nil
}

// run runs a short command to completion and returns its combined output.
func run(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %v: %w: %s", name, args, err, out)
	}
	return string(out), nil
}

// poll calls cond every interval until it returns nil or timeout passes,
// then returns the last error with what was waited for.
func poll(what string, timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("box: %s: not within %v: %w", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
