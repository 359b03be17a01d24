package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// DefaultControllers is the minimal controller set for this project's
// workloads. Left out on purpose: node-lifecycle (it would taint the fake
// Node and evict Pods whenever heartbeats lag), the service-account
// controllers (envtest disables ServiceAccount admission, so Pods need no
// tokens) and the legacy endpoints controller.
var DefaultControllers = []string{
	"statefulset-controller",
	"endpointslice-controller",
	"garbage-collector-controller",
	"namespace-controller",
	"persistentvolumeclaim-protection-controller",
	"disruption-controller",
}

// controllerManager is the kube-controller-manager subprocess.
type controllerManager struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // of Wait, valid once exited is closed
}

func startControllerManager(path, kubeconfig, logPath string, controllers, extraFlags []string) (*controllerManager, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cluster: controller-manager log: %w", err)
	}
	defer logf.Close()
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + strings.Join(controllers, ","),
		"--leader-elect=false",
		// Without it the controller-manager serves on 0.0.0.0:10257.
		"--secure-port=0",
		"--kube-api-qps=100",
		"--kube-api-burst=200",
		"--v=2",
	}
	cmd := exec.Command(path, append(args, extraFlags...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cluster: start kube-controller-manager: %w", err)
	}
	m := &controllerManager{cmd: cmd, exited: make(chan struct{})}
	go func() {
		m.err = cmd.Wait()
		close(m.exited)
	}()
	return m, nil
}

// alive reports an error if the process has already exited.
func (m *controllerManager) alive() error {
	select {
	case <-m.exited:
		return fmt.Errorf("cluster: kube-controller-manager exited: %v", m.err)
	default:
		return nil
	}
}

// stop sends SIGTERM, then SIGKILL after a grace period, and waits.
func (m *controllerManager) stop(grace time.Duration) error {
	if m.alive() != nil {
		return nil
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(grace):
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
	var exitErr *exec.ExitError
	if m.err != nil && !errors.As(m.err, &exitErr) {
		return fmt.Errorf("cluster: kube-controller-manager: %w", m.err)
	}
	return nil
}
