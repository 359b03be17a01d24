package pkubelet

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type probeKind string

const (
	startupProbe   probeKind = "startup"
	readinessProbe probeKind = "readiness"
	livenessProbe  probeKind = "liveness"
)

// probeClient never reuses connections (a probe is one request, as in the
// kubelet), ignores proxy settings of the test's environment, and accepts any
// certificate, like the kubelet's HTTPS probes.
var probeClient = &http.Client{
	Transport: &http.Transport{
		Proxy:             nil,
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the kubelet does not verify probe certificates either
	},
}

// startProbes runs the container's probes for one incarnation until ctx is
// done. Readiness and liveness wait for the startup probe, as in the kubelet.
func (c *container) startProbes(ctx context.Context, inc *incarnation) *sync.WaitGroup {
	var wg sync.WaitGroup
	started := make(chan struct{})
	run := func(kind probeKind, p *corev1.Probe) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.probeLoop(ctx, kind, p, inc, started)
		}()
	}
	if c.spec.StartupProbe != nil {
		run(startupProbe, c.spec.StartupProbe)
	} else {
		close(started)
		if c.spec.ReadinessProbe == nil {
			c.setReady(true)
		}
	}
	if c.spec.ReadinessProbe != nil {
		run(readinessProbe, c.spec.ReadinessProbe)
	}
	if c.spec.LivenessProbe != nil {
		run(livenessProbe, c.spec.LivenessProbe)
	}
	return &wg
}

// probeLoop runs one probe with capped initial delay and period and acts on
// its thresholds. For a startup probe, started is closed on success.
func (c *container) probeLoop(ctx context.Context, kind probeKind, p *corev1.Probe, inc *incarnation, started chan struct{}) {
	cfg := &c.w.k.cfg
	if kind != startupProbe {
		select {
		case <-ctx.Done():
			return
		case <-started:
		}
	}
	delay := min(time.Duration(p.InitialDelaySeconds)*time.Second, cfg.ProbeInitialDelayCap)
	period := cfg.ProbePeriodCap
	if p.PeriodSeconds > 0 {
		period = min(time.Duration(p.PeriodSeconds)*time.Second, period)
	}
	timeout := time.Second
	if p.TimeoutSeconds > 0 {
		timeout = time.Duration(p.TimeoutSeconds) * time.Second
	}
	successThreshold, failureThreshold := int32(1), int32(3)
	if p.SuccessThreshold > 0 {
		successThreshold = p.SuccessThreshold
	}
	if p.FailureThreshold > 0 {
		failureThreshold = p.FailureThreshold
	}

	wait := delay
	var successes, failures int32
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = period
		ok, msg := c.probeOnce(ctx, p, inc, timeout)
		if ctx.Err() != nil {
			return
		}
		if ok {
			successes, failures = successes+1, 0
		} else {
			successes, failures = 0, failures+1
			c.w.log.Debug("probe failed", "container", c.spec.Name, "kind", kind, "msg", msg)
		}
		switch kind {
		case startupProbe:
			if ok {
				c.mu.Lock()
				c.started = true
				c.mu.Unlock()
				if c.spec.ReadinessProbe == nil {
					c.setReady(true)
				}
				c.w.markDirty()
				close(started)
				return
			}
			if failures >= failureThreshold {
				c.requestKill(fmt.Sprintf("startup probe failed: %s", msg))
				return
			}
		case readinessProbe:
			if ok && successes >= successThreshold {
				c.setReady(true)
			} else if !ok && failures >= failureThreshold {
				c.setReady(false)
			}
		case livenessProbe:
			if failures >= failureThreshold {
				c.requestKill(fmt.Sprintf("liveness probe failed: %s", msg))
				return
			}
		}
	}
}

func (c *container) setReady(ready bool) {
	c.mu.Lock()
	changed := c.ready != ready
	c.ready = ready
	c.mu.Unlock()
	if changed {
		c.w.markDirty()
	}
}

func (c *container) requestKill(reason string) {
	select {
	case c.kill <- reason:
	default:
	}
}

// probeOnce runs one probe against the address the process binds.
func (c *container) probeOnce(ctx context.Context, p *corev1.Probe, inc *incarnation, timeout time.Duration) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case p.HTTPGet != nil:
		return c.probeHTTP(ctx, p.HTTPGet, inc)
	case p.TCPSocket != nil:
		port, err := containerPort(c.spec, p.TCPSocket.Port)
		if err != nil {
			return false, err.Error()
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = inc.bindIP
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return false, err.Error()
		}
		conn.Close()
		return true, ""
	case p.Exec != nil:
		return c.probeExec(ctx, p.Exec, inc)
	case p.GRPC != nil:
		return false, "gRPC probes are not supported by pkubelet"
	}
	return false, "probe has no handler"
}

func (c *container) probeHTTP(ctx context.Context, h *corev1.HTTPGetAction, inc *incarnation) (bool, string) {
	port, err := containerPort(c.spec, h.Port)
	if err != nil {
		return false, err.Error()
	}
	host := h.Host
	if host == "" {
		host = inc.bindIP
	}
	scheme := strings.ToLower(string(h.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := h.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+net.JoinHostPort(host, strconv.Itoa(port))+path, nil)
	if err != nil {
		return false, err.Error()
	}
	req.Header.Set("User-Agent", "kube-probe/pkubelet")
	for _, hd := range h.HTTPHeaders {
		if strings.EqualFold(hd.Name, "Host") {
			req.Host = hd.Value
			continue
		}
		req.Header.Add(hd.Name, hd.Value)
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return false, err.Error()
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return false, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)
	}
	return true, ""
}

// probeExec runs the command on the host with the container's environment,
// directory and path translation; it kills the command's group on timeout.
func (c *container) probeExec(ctx context.Context, e *corev1.ExecAction, inc *incarnation) (bool, string) {
	if len(e.Command) == 0 {
		return false, "exec probe without command"
	}
	argv := make([]string, len(e.Command))
	for i, s := range e.Command {
		argv[i] = inc.mounts.rewrite(s)
	}
	if host, ok := c.w.k.cfg.Resolver.Commands[argv[0]]; ok {
		argv[0] = host
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = inc.env
	cmd.Dir = inc.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A leftover child holding the output pipe must not hold the probe.
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return false, fmt.Sprintf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return true, ""
}

// containerPort resolves a probe port, by number or by the name of one of
// the container's ports.
func containerPort(c *corev1.Container, p intstr.IntOrString) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("no container port named %q", p.StrVal)
}
