package pkubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Restart back-off, shorter than the kubelet's 10s..5min so that crash
// scenarios finish in seconds while a crash loop still cannot spin.
const (
	minBackoff   = 500 * time.Millisecond
	maxBackoff   = 10 * time.Second
	backoffReset = 10 * time.Second
)

// container runs one container of a Pod: one process per incarnation,
// restarted according to the Pod's restartPolicy.
type container struct {
	w    *podWorker
	spec *corev1.Container
	// kill carries restart requests from failing liveness and startup probes.
	kill chan string

	mu           sync.Mutex
	grace        time.Duration
	restartCount int32
	pid          int
	containerID  string
	imageID      string
	running      bool
	startedAt    time.Time
	started      bool
	ready        bool
	waiting      *corev1.ContainerStateWaiting
	terminated   *corev1.ContainerStateTerminated
	lastState    *corev1.ContainerStateTerminated
}

func newContainer(w *podWorker, spec *corev1.Container) *container {
	return &container{w: w, spec: spec, kill: make(chan string, 1)}
}

// incarnation is what one process start needs, resolved from the Pod.
type incarnation struct {
	argv   []string
	env    []string
	dir    string
	bindIP string
	mounts mountTable
}

// setGrace sets how long a stopping process gets between SIGTERM and SIGKILL.
func (c *container) setGrace(d time.Duration) {
	c.mu.Lock()
	c.grace = d
	c.mu.Unlock()
}

func (c *container) getGrace() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.grace
}

// run starts the process and restarts it until ctx is done, or until the
// restartPolicy says the container is finished.
func (c *container) run(ctx context.Context) {
	backoff := minBackoff
	for {
		ran, exitCode, ranFor := c.runOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		policy := c.w.latest().Spec.RestartPolicy
		if ran && (policy == corev1.RestartPolicyNever || (policy == corev1.RestartPolicyOnFailure && exitCode == 0)) {
			c.w.markDirty()
			<-ctx.Done()
			return
		}
		if ranFor >= backoffReset {
			backoff = minBackoff
		}
		c.mu.Lock()
		if ran {
			c.restartCount++
			c.lastState, c.terminated = c.terminated, nil
			c.waiting = &corev1.ContainerStateWaiting{
				Reason:  "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", backoff, c.spec.Name, c.w.name),
			}
		}
		c.mu.Unlock()
		c.w.markDirty()
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// runOnce runs one incarnation. ran is false when no process could even be
// prepared (a missing ConfigMap key, say), which the kubelet retries without
// counting a restart.
func (c *container) runOnce(ctx context.Context) (ran bool, exitCode int32, ranFor time.Duration) {
	inc, err := c.prepare(ctx)
	if err != nil {
		c.w.log.Warn("container config", "container", c.spec.Name, "err", err)
		c.setWaiting("CreateContainerConfigError", err.Error())
		return false, 0, 0
	}
	pod := c.w.latest()
	logf, err := os.OpenFile(c.w.k.LogPath(pod, c.spec.Name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.setWaiting("RunContainerError", err.Error())
		return false, 0, 0
	}
	c.mu.Lock()
	attempt := c.restartCount
	c.mu.Unlock()
	fmt.Fprintf(logf, "pkubelet: start #%d: %q\n", attempt, inc.argv)

	cmd := exec.Command(inc.argv[0], inc.argv[1:]...)
	cmd.Env = inc.env
	cmd.Dir = inc.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group, so that SIGTERM/SIGKILL reach everything the
	// container started; Pdeathsig, so that nothing survives a killed test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	startedAt := time.Now()
	err = cmd.Start()
	logf.Close() // the child holds its own descriptor
	if err != nil {
		c.w.log.Warn("container start", "container", c.spec.Name, "err", err)
		c.mu.Lock()
		c.running, c.ready = false, false
		c.terminated = &corev1.ContainerStateTerminated{
			ExitCode: 128, Reason: "StartError", Message: err.Error(),
			StartedAt: metaTime(startedAt), FinishedAt: metaTime(time.Now()),
		}
		c.mu.Unlock()
		return true, 128, 0
	}
	pid := cmd.Process.Pid
	c.w.log.Info("container started", "container", c.spec.Name, "pid", pid, "argv", inc.argv)
	c.mu.Lock()
	c.pid, c.running, c.startedAt = pid, true, startedAt
	c.containerID = fmt.Sprintf("process://%d", pid)
	c.imageID = "process://" + inc.argv[0]
	c.waiting, c.terminated, c.ready = nil, nil, false
	c.started = c.spec.StartupProbe == nil
	c.mu.Unlock()
	c.w.markDirty()

	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // the exit status is read from ProcessState below
		close(exited)
	}()
	probeCtx, stopProbes := context.WithCancel(ctx)
	probes := c.startProbes(probeCtx, inc)
	var killReason string
	select {
	case <-exited:
	case <-ctx.Done():
		terminate(pid, exited, c.preStop(exited, c.getGrace()))
	case killReason = <-c.kill:
		c.w.log.Info("restarting container", "container", c.spec.Name, "reason", killReason)
		terminate(pid, exited, c.preStop(exited, podGrace(pod)))
	}
	stopProbes()
	probes.Wait()
	// Whatever the main process left behind in its group goes with it, as
	// with a container's cgroup.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-c.kill:
	default:
	}

	finishedAt := time.Now()
	code, sig := exitStatus(cmd.ProcessState)
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	c.w.log.Info("container exited", "container", c.spec.Name, "pid", pid, "exitCode", code, "signal", sig)
	c.mu.Lock()
	c.running, c.ready, c.pid = false, false, 0
	c.terminated = &corev1.ContainerStateTerminated{
		ExitCode: code, Signal: sig, Reason: reason, Message: killReason,
		StartedAt: metaTime(startedAt), FinishedAt: metaTime(finishedAt), ContainerID: c.containerID,
	}
	c.mu.Unlock()
	c.w.markDirty()
	return true, code, finishedAt.Sub(startedAt)
}

// preStop runs the container's preStop hook before it is stopped, as the
// kubelet does, and returns what is left of the grace period for SIGTERM.
// Only the sleep action is supported; its time counts against the grace
// period, and a process that exits meanwhile ends it.
func (c *container) preStop(exited <-chan struct{}, grace time.Duration) time.Duration {
	lc := c.spec.Lifecycle
	if lc == nil || lc.PreStop == nil {
		return grace
	}
	if lc.PreStop.Sleep == nil {
		c.w.log.Warn("preStop handlers other than sleep are not supported by pkubelet", "container", c.spec.Name)
		return grace
	}
	d := time.Duration(lc.PreStop.Sleep.Seconds) * time.Second
	if limit := c.w.k.cfg.PreStopSleepCap; limit > 0 {
		d = min(d, limit)
	}
	if grace > 0 {
		d = min(d, grace)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	start := time.Now()
	select {
	case <-exited:
	case <-t.C:
	}
	if grace <= 0 {
		return grace
	}
	return max(grace-time.Since(start), time.Millisecond)
}

// terminate sends SIGTERM to the process group, and SIGKILL once grace has
// passed; it returns when the main process has exited.
func terminate(pid int, exited <-chan struct{}, grace time.Duration) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	if grace > 0 {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-exited:
			return
		case <-t.C:
		}
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-exited
}

func podGrace(pod *corev1.Pod) time.Duration {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return 30 * time.Second
}

// exitStatus reports a signal death the way container runtimes do: exit
// code 128+signal.
func exitStatus(ps *os.ProcessState) (code, sig int32) {
	if ps == nil {
		return 128, 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int32(ws.Signal()), int32(ws.Signal())
	}
	return int32(ps.ExitCode()), 0
}

func (c *container) setWaiting(reason, msg string) {
	c.mu.Lock()
	c.waiting = &corev1.ContainerStateWaiting{Reason: reason, Message: msg}
	c.mu.Unlock()
	c.w.markDirty()
}

// prepare resolves the environment, command line and working directory of
// the next incarnation from the current Pod, as the kubelet does at every
// container start.
func (c *container) prepare(ctx context.Context) (*incarnation, error) {
	w := c.w
	k := w.k
	pod := w.latest()
	w.mu.Lock()
	bindIP := w.bindIP
	w.mu.Unlock()

	mounts, err := c.mounts(pod)
	if err != nil {
		return nil, err
	}
	e := newEnvList()
	inherited := k.cfg.inheritedEnv()
	for _, n := range sortedKeys(inherited) {
		e.set(n, inherited[n])
	}
	hostname := pod.Spec.Hostname
	if hostname == "" {
		hostname = pod.Name
	}
	e.set("HOSTNAME", hostname)
	e.set("PKUBELET_POD_IP", bindIP)
	e.set("PKUBELET_POD_DIR", w.dir)
	for _, m := range sortedMounts(mounts) {
		e.set(mountEnvName(m.path), m.hostPath)
	}
	var extra []corev1.EnvVar
	if k.cfg.ExtraEnv != nil {
		extra = k.cfg.ExtraEnv(pod, c.spec)
	}
	ec := envContext{
		client:      k.cfg.Client,
		pod:         pod,
		c:           c.spec,
		podIP:       bindIP,
		hostIP:      k.cfg.IPPrefix + "1",
		allocatable: k.allocatable,
		mounts:      mounts,
	}
	if err := resolveEnv(ctx, ec, e, extra); err != nil {
		return nil, err
	}
	command := make([]string, len(c.spec.Command))
	for i, s := range c.spec.Command {
		command[i] = expandRewrite(s, e.lookup, mounts)
	}
	args := make([]string, len(c.spec.Args))
	for i, s := range c.spec.Args {
		args[i] = expandRewrite(s, e.lookup, mounts)
	}
	argv, err := k.cfg.Resolver.argv(c.spec, command, args)
	if err != nil {
		return nil, err
	}
	// An image's working directory does not exist here; only one inside a
	// volume does.
	dir := w.dir
	if wd := c.spec.WorkingDir; wd != "" {
		if r := mounts.rewrite(wd); r != wd {
			dir = r
		}
	}
	return &incarnation{argv: argv, env: e.environ(), dir: dir, bindIP: bindIP, mounts: mounts}, nil
}

// mounts maps the container's volumeMounts to host paths.
func (c *container) mounts(pod *corev1.Pod) (mountTable, error) {
	var ms []mount
	for _, vm := range c.spec.VolumeMounts {
		var vol *corev1.Volume
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == vm.Name {
				vol = &pod.Spec.Volumes[i]
			}
		}
		if vol == nil {
			return nil, fmt.Errorf("volumeMount %s: no such volume", vm.Name)
		}
		if vm.SubPathExpr != "" {
			return nil, fmt.Errorf("volumeMount %s: subPathExpr is not supported by pkubelet", vm.Name)
		}
		host := volumeHostDir(c.w.k.cfg.RootDir, c.w.dir, pod.Namespace, vol)
		if vm.SubPath != "" {
			if err := checkPayloadPath(vm.SubPath); err != nil {
				return nil, fmt.Errorf("volumeMount %s: %w", vm.Name, err)
			}
			host = filepath.Join(host, vm.SubPath)
			if _, err := os.Lstat(host); errors.Is(err, os.ErrNotExist) {
				if err := os.MkdirAll(host, 0o755); err != nil {
					return nil, fmt.Errorf("volumeMount %s: %w", vm.Name, err)
				}
			}
		}
		ms = append(ms, mount{path: vm.MountPath, hostPath: host})
	}
	return newMountTable(ms), nil
}

func sortedMounts(t mountTable) mountTable {
	out := append(mountTable(nil), t...)
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// status is the container's entry in the Pod status.
func (c *container) status() corev1.ContainerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	started := c.running && c.started
	st := corev1.ContainerStatus{
		Name:         c.spec.Name,
		Image:        c.spec.Image,
		ImageID:      c.imageID,
		ContainerID:  c.containerID,
		RestartCount: c.restartCount,
		Ready:        c.running && c.ready,
		Started:      &started,
	}
	switch {
	case c.running:
		st.State.Running = &corev1.ContainerStateRunning{StartedAt: metaTime(c.startedAt)}
	case c.waiting != nil:
		st.State.Waiting = c.waiting.DeepCopy()
	case c.terminated != nil:
		st.State.Terminated = c.terminated.DeepCopy()
	default:
		st.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	}
	if c.lastState != nil {
		st.LastTerminationState.Terminated = c.lastState.DeepCopy()
	}
	return st
}

// finished reports whether the container ended for good under its
// restartPolicy, and its exit code.
func (c *container) finished(policy corev1.RestartPolicy) (bool, int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running || c.terminated == nil {
		return false, 0
	}
	code := c.terminated.ExitCode
	done := policy == corev1.RestartPolicyNever || (policy == corev1.RestartPolicyOnFailure && code == 0)
	return done, code
}

// everStarted reports whether a process of this container ever ran.
func (c *container) everStarted() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.containerID != ""
}

// metaTime truncates to the API's one-second resolution, so that a status
// read back compares equal to the one written.
func metaTime(t time.Time) metav1.Time { return metav1.NewTime(t.UTC().Truncate(time.Second)) }
