//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/test/e2e/box"
)

// These scenarios prove what only a real node can: the image runs as the
// operator renders it, under the kubelet's own probes, hooks and grace, and
// the API server's logs, exec and port-forward reach it.

// TestTheRealNode runs one cluster of the operator's defaults and checks
// the running containers and the node's APIs against it. The steps share
// the cluster and run in order.
func TestTheRealNode(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	c := applyCluster(ctx, t, "node", clusterSpec{replicas: 2, drain: 2, defaultResources: true})
	since := time.Now()
	b := startBroker(ctx, t, c)
	b.waitRegistered(t, c.peers(2), since)
	pod := getPeerPod(ctx, t, c, 0)
	peer := runningContainer(ctx, t, processOf(t, pod).container)

	t.Run("security settings hold in the running container", func(t *testing.T) {
		assertLockedDown(t, peer.PID)
		st := procStatus(t, peer.PID)
		for key, want := range map[string]string{
			// The pod's fsGroup is a supplementary group.
			"Groups": strconv.Itoa(render.NonRootID),
		} {
			if got := st[key]; got != want {
				t.Errorf("%s: %q, want %q", key, got, want)
			}
		}
		limit := pod.Spec.Containers[0].Resources.Limits.Memory().Value()
		if limit == 0 {
			t.Fatalf("the pod has no memory limit: %+v", pod.Spec.Containers[0].Resources)
		}
		if got := cgroupValue(t, peer.PID, "memory", "memory.limit_in_bytes"); got != strconv.FormatInt(limit, 10) {
			t.Errorf("the container's memory cgroup limit is %s, want the pod's %d", got, limit)
		}
		// 90% of the limit: the headroom is for what the Go runtime does
		// not count (docs/production.md, "Memory").
		if got, want := environ(t, peer.PID)["GOMEMLIMIT"], strconv.FormatInt(limit/10*9, 10); got != want {
			t.Errorf("GOMEMLIMIT=%q in the container, want %s, 90%% of the memory limit %d", got, want, limit)
		}
		self, err1 := os.Readlink("/proc/self/ns/net")
		its, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", peer.PID))
		if err1 != nil || err2 != nil || self == its {
			t.Errorf("the container shares the node's network namespace (%s, %s; %v %v)", self, its, err1, err2)
		}
		// The operator's pods, as the chart's values render them.
		ms, err := managerPods(ctx)
		if err != nil || len(ms) == 0 {
			t.Fatalf("manager pods: %v %v", ms, err)
		}
		mgr := runningContainer(ctx, t, containerID(t, ms[0].Status.ContainerStatuses[0]))
		assertLockedDown(t, mgr.PID)
	})

	t.Run("probes run at the rendered periods", func(t *testing.T) {
		ctr := pod.Spec.Containers[0]
		for name, p := range map[string]*corev1.Probe{"readiness": ctr.ReadinessProbe, "liveness": ctr.LivenessProbe} {
			if p == nil || p.HTTPGet == nil {
				t.Fatalf("%s probe %+v, want an HTTP probe", name, p)
			}
		}
		// The kubelet's own count of the probes it ran: a capped period
		// would show as probes coming faster.
		count := func(typ string) (float64, error) {
			return proberCount(ctx, pod.Namespace, pod.Name, typ)
		}
		start := time.Now()
		r0, err := count("Readiness")
		if err != nil {
			t.Fatal(err)
		}
		l0, err := count("Liveness")
		if err != nil {
			t.Fatal(err)
		}
		const probes = 4
		period := time.Duration(ctr.ReadinessProbe.PeriodSeconds) * time.Second
		eventually(t, probes*period+time.Minute, func() (bool, string) {
			r, err := count("Readiness")
			return err == nil && r-r0 >= probes, fmt.Sprintf("%v readiness probes since %s (%v)", r-r0, start.Format(time.StampMilli), err)
		})
		took := time.Since(start)
		l, err := count("Liveness")
		if err != nil {
			t.Fatal(err)
		}
		// probes readiness probes take at least probes-1 periods; liveness
		// probes, twice as far apart, are about half as many.
		if took < (probes-1)*period {
			t.Errorf("%d readiness probes in %v; the rendered period is %v", probes, took, period)
		}
		lperiod := time.Duration(ctr.LivenessProbe.PeriodSeconds) * time.Second
		if max := float64(took/lperiod) + 1; l-l0 > max {
			t.Errorf("%v liveness probes in %v; the rendered period is %v", l-l0, took, lperiod)
		}
		t.Logf("%d readiness probes (period %v) and %v liveness probes (period %v) in %v", probes, period, l-l0, lperiod, round(took))
	})

	t.Run("logs", func(t *testing.T) {
		out := kubectlOut(ctx, t, "logs", "-n", c.ns, pod.Name, "-c", render.ContainerName)
		if !strings.Contains(out, `msg="starting namesrv"`) {
			t.Errorf("kubectl logs of %s:\n%s", pod.Name, out)
		}
	})

	t.Run("exec", func(t *testing.T) {
		// The image's own admin tool, inside the pod's network namespace.
		out := kubectlOut(ctx, t, "exec", "-n", c.ns, pod.Name, "-c", render.ContainerName, "--",
			"/nsadmin", "clusterList", "-n", net.JoinHostPort("127.0.0.1", strconv.Itoa(remotingPort)))
		if !strings.Contains(out, brokerName) {
			t.Errorf("nsadmin clusterList in %s:\n%s", pod.Name, out)
		}
	})

	t.Run("port-forward", func(t *testing.T) {
		local := portForward(ctx, t, c.ns, pod.Name, httpPort)
		if body := mustGet(ctx, t, "http://"+local+"/readyz"); body != "ok\n" {
			t.Errorf("/readyz through the port-forward: %q", body)
		}
	})

	t.Run("kubectl nsc through port-forwards", func(t *testing.T) {
		// As from a laptop: this user's connections to pods are refused, so
		// only the port-forwards through the API server get through.
		const laptop = 61000
		rejectPodsFor(t, laptop)
		out, errOut, code := kubectlNscAs(ctx, t, laptop, "clusterList", c.name, "-n", c.ns)
		if code == 0 {
			t.Fatalf("the plugin reached the pods without --port-forward: the laptop is not cut off\n%s\n%s", out, errOut)
		}
		out, errOut, code = kubectlNscAs(ctx, t, laptop, "clusterList", c.name, "-n", c.ns, "--port-forward")
		if code != 0 || !strings.Contains(out, brokerName) || !strings.Contains(out, "2/2") {
			t.Errorf("kubectl nsc clusterList --port-forward: exit %d\n%s\n%s", code, out, errOut)
		}
		out, errOut, code = kubectlNscAs(ctx, t, laptop, "peerStatus", c.name, "-n", c.ns, "--port-forward")
		if code != 0 || !strings.Contains(out, c.peer(0)) || !strings.Contains(out, c.peer(1)) {
			t.Errorf("kubectl nsc peerStatus --port-forward: exit %d\n%s\n%s", code, out, errOut)
		}
	})
}

// assertLockedDown checks what the restricted Pod Security Standard and a
// read-only root promise of a running process: a non-root user and group
// (65532), no capabilities at all, no privilege escalation, the runtime's
// default seccomp filter and a read-only root filesystem.
func assertLockedDown(t *testing.T, pid int) {
	t.Helper()
	st := procStatus(t, pid)
	id := strconv.Itoa(render.NonRootID)
	for key, want := range map[string]string{
		"Uid":        strings.Repeat(id+"\t", 3) + id,
		"Gid":        strings.Repeat(id+"\t", 3) + id,
		"CapInh":     "0000000000000000",
		"CapPrm":     "0000000000000000",
		"CapEff":     "0000000000000000",
		"CapBnd":     "0000000000000000",
		"CapAmb":     "0000000000000000",
		"NoNewPrivs": "1",
		// 2 is a seccomp filter, which RuntimeDefault installs.
		"Seccomp": "2",
	} {
		if got := st[key]; got != want {
			t.Errorf("process %d (%s): %s %q, want %q", pid, st["Name"], key, got, want)
		}
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent dev root mountpoint options ...
		if fields := strings.Fields(sc.Text()); len(fields) > 5 && fields[4] == "/" {
			if opts := strings.Split(fields[5], ","); opts[0] != "ro" {
				t.Errorf("process %d (%s): its root is mounted %s, want read-only", pid, st["Name"], fields[5])
			}
			return
		}
	}
	t.Errorf("process %d: no root mount in its mountinfo", pid)
}

// procStatus reads /proc/<pid>/status.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// environ reads a process's environment.
func environ(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, kv := range strings.Split(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// cgroupValue reads a file of a process's cgroup in one (v1) hierarchy.
func cgroupValue(t *testing.T, pid int, controller, file string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		// id:controllers:path
		parts := strings.SplitN(l, ":", 3)
		if len(parts) == 3 && strings.Contains(","+parts[1]+",", ","+controller+",") {
			v, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", controller, parts[2], file))
			if err != nil {
				t.Fatal(err)
			}
			return strings.TrimSpace(string(v))
		}
	}
	t.Fatalf("process %d is in no %s cgroup", pid, controller)
	return ""
}

// proberCount is the kubelet's count of successful probes of one type of a
// pod's container (prober_probe_total on its /metrics/probes).
func proberCount(ctx context.Context, ns, pod, typ string) (float64, error) {
	// The kubelet's serving certificate is its own, self-signed; only the
	// box reaches it.
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+net.JoinHostPort(box.NodeIP, "10250")+"/metrics/probes", nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("kubelet /metrics/probes: %s %v", resp.Status, err)
	}
	total := 0.0
	wants := []string{`namespace="` + ns + `"`, `pod="` + pod + `"`, `probe_type="` + typ + `"`, `result="successful"`}
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "prober_probe_total{") || slices.ContainsFunc(wants, func(w string) bool { return !strings.Contains(l, w) }) {
			continue
		}
		if v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64); err == nil {
			total += v
		}
	}
	return total, nil
}

// kubectlOut runs kubectl and returns its output.
func kubectlOut(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	out, err := cl.Kubectl(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var forwardingFrom = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> \d+`)

// portForward runs `kubectl port-forward` to a pod's port until the test
// ends, and returns the local address.
func portForward(ctx context.Context, t *testing.T, ns, pod string, port int) string {
	t.Helper()
	pctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(pctx, cl.KubectlPath, "--kubeconfig="+cl.KubeconfigPath, "port-forward", "-n", ns,
		"--address=127.0.0.1", "pod/"+pod, ":"+strconv.Itoa(port))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	local := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := forwardingFrom.FindStringSubmatch(sc.Text()); m != nil {
				local <- "127.0.0.1:" + m[1]
			}
		}
		close(local)
	}()
	select {
	case l, ok := <-local:
		if !ok {
			t.Fatalf("kubectl port-forward ended: %s", stderr.String())
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatalf("kubectl port-forward not ready in 30s: %s", stderr.String())
	}
	return ""
}

// rejectPodsFor refuses every connection of one user to the pod network
// for the rest of the test, with a rule in the box's own netfilter tables.
func rejectPodsFor(t *testing.T, uid int) {
	t.Helper()
	rule := []string{"OUTPUT", "-m", "owner", "--uid-owner", strconv.Itoa(uid), "-d", box.PodCIDR, "-j", "REJECT"}
	if out, err := exec.Command("iptables", append([]string{"-w", "-I"}, rule...)...).CombinedOutput(); err != nil {
		t.Fatalf("iptables: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("iptables", append([]string{"-w", "-D"}, rule...)...).CombinedOutput(); err != nil {
			t.Errorf("iptables: %v: %s", err, out)
		}
	})
}

// kubectlNscAs runs the kubectl nsc plugin as another user, with copies of
// the plugin and of the admin kubeconfig that user can read.
func kubectlNscAs(ctx context.Context, t *testing.T, uid int, args ...string) (string, string, int) {
	t.Helper()
	built, err := builtBinary("kubectl-nsc")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	plugin := filepath.Join(home, "kubectl-nsc")
	bin, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plugin, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(home, "kubeconfig")
	b, err := os.ReadFile(cl.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	// The kubeconfig names the CA by path: carry the CA along.
	ca := filepath.Join(home, "ca.crt")
	caPath := regexp.MustCompile(`certificate-authority: (\S+)`).FindSubmatch(b)
	if caPath == nil {
		t.Fatalf("no certificate-authority in %s", cl.KubeconfigPath)
	}
	caPEM, err := os.ReadFile(string(caPath[1]))
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, caPath[1], []byte(ca), 1)
	for p, data := range map[string][]byte{kubeconfig: b, ca: caPEM} {
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{home, kubeconfig, ca} {
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	// t.TempDir's parent is not for everyone to enter.
	if err := os.Chmod(filepath.Dir(home), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, plugin, args...)
	cmd.Env = []string{"KUBECONFIG=" + kubeconfig, "HOME=" + home}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("kubectl-nsc %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// TestPreStopKeepsAnswering: a NameServer pod being deleted keeps answering
// the clients connected to it through its preStop pause, then stops on
// SIGTERM well within its grace period, exiting cleanly.
func TestPreStopKeepsAnswering(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	c := applyCluster(ctx, t, "grace", clusterSpec{replicas: 2, drain: 2})
	since := time.Now()
	b := startBroker(ctx, t, c)
	b.waitRegistered(t, c.peers(2), since)
	p := getPeerPod(ctx, t, c, 1)
	pods := recordPods(ctx, t, c.ns, c.selector())

	rc, err := remotingclient.Dial(ctx, net.JoinHostPort(p.Status.PodIP, strconv.Itoa(remotingPort)), remotingclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	type answer struct {
		at   time.Time
		code int32
		err  error
	}
	answers := make(chan answer, 1000)
	go func() {
		defer close(answers)
		for ctx.Err() == nil {
			qctx, qcancel := context.WithTimeout(ctx, time.Second)
			resp, err := rc.Invoke(qctx, &remotingclient.Request{Code: protocol.GetRouteInfoByTopic,
				Ext: []remoting.Pair{{Key: "topic", Value: topic}}})
			qcancel()
			a := answer{at: time.Now(), err: err}
			if err == nil {
				a.code = resp.Code
			}
			answers <- a
			if err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	deleted := time.Now()
	if err := cl.Clientset.CoreV1().Pods(c.ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var last time.Time
	var closedAt time.Time
	for a := range answers {
		switch {
		case a.err != nil:
			closedAt = a.at
		case a.code != protocol.Success:
			t.Errorf("%s answered code %d at %s, %v after its deletion", p.Name, a.code, a.at.Format(time.StampMilli), a.at.Sub(deleted))
		default:
			last = a.at
		}
	}
	preStop := time.Duration(render.PreStopSeconds) * time.Second
	grace := time.Duration(*p.Spec.TerminationGracePeriodSeconds) * time.Second
	t.Logf("%s answered until %v after its deletion; its connection closed after %v", p.Name, round(last.Sub(deleted)), round(closedAt.Sub(deleted)))
	if last.Sub(deleted) < preStop-time.Second {
		t.Errorf("%s stopped answering %v after its deletion, before its %v preStop pause ended", p.Name, last.Sub(deleted), preStop)
	}
	if closedAt.IsZero() || closedAt.Sub(deleted) > grace {
		t.Errorf("%s's connection closed %v after its deletion; the grace period is %v", p.Name, closedAt.Sub(deleted), grace)
	}
	// The kubelet's last report of the old pod: its container exited by
	// itself on SIGTERM, not killed at the end of the grace period.
	eventually(t, podTimeout, func() (bool, string) {
		return pods.first(0, func(e podEvent) bool { return e.typ == watch.Deleted && e.pod.UID == p.UID }) >= 0, p.Name + " not deleted yet"
	})
	var exit *corev1.ContainerStateTerminated
	for i := range pods.len() {
		if e := pods.at(i); e.UID == p.UID && len(e.Status.ContainerStatuses) == 1 && e.Status.ContainerStatuses[0].State.Terminated != nil {
			exit = e.Status.ContainerStatuses[0].State.Terminated
		}
	}
	if exit == nil || exit.ExitCode != 0 {
		t.Errorf("%s's container ended %+v, want exit code 0 (a clean stop on SIGTERM)", p.Name, exit)
	}
}

// TestKubeletStoppedForAMinute: the node's kubelet stops for a minute, long
// enough for the node-lifecycle controller to mark the node unreachable and
// its pods not ready, and starts again. The containers run on meanwhile:
// no client misses a route, and afterwards the same containers are ready
// and published again, none restarted.
func TestKubeletStoppedForAMinute(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	c, _, fleet := servingCluster(ctx, t, "kubelet", clusterSpec{replicas: 3, drain: 2}, 6)
	before := processes(t, ctx, c, 3)
	lists := recordConfigMap(ctx, t, c.ns, c.addressConfigMap())

	stopped := time.Now()
	if err := cl.StopKubelet(); err != nil {
		t.Fatal(err)
	}
	running := false
	t.Cleanup(func() {
		// The scenarios after this one need a node.
		if !running {
			if err := cl.StartKubelet(context.Background()); err != nil {
				t.Errorf("starting the kubelet again: %v", err)
			}
		}
	})
	// The fault lasts a minute; meanwhile, watch the node go unready.
	var unready time.Duration
	poll := time.NewTicker(time.Second)
	defer poll.Stop()
	for time.Since(stopped) < time.Minute {
		n, err := cl.Clientset.CoreV1().Nodes().Get(ctx, box.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status != corev1.ConditionTrue && unready == 0 {
				unready = time.Since(stopped)
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("watching the node while the kubelet is stopped: %v", ctx.Err())
		case <-poll.C:
		}
	}
	if err := cl.StartKubelet(ctx); err != nil {
		t.Fatal(err)
	}
	running = true
	back := time.Since(stopped)
	eventually(t, podTimeout, func() (bool, string) {
		ps, err := peerPods(ctx, c)
		if err != nil {
			return false, err.Error()
		}
		for _, p := range ps {
			if !podReady(&p) {
				return false, p.Name + " is not ready again"
			}
		}
		return len(ps) == 3, fmt.Sprintf("%d pods", len(ps))
	})
	if now := processes(t, ctx, c, 3); !equalProcesses(now, before) {
		t.Errorf("containers restarted while the kubelet was away: %v -> %v", before, now)
	}
	waitPublished(ctx, t, c, 3)
	t.Logf("node unready %v after the kubelet stopped (0: not within the minute); kubelet back and Node Ready after %v; the client list took %d versions meanwhile",
		round(unready), round(back), len(lists.all()))
	judgeClients(t, fleet.stop(), c.peers(3)...)
}
