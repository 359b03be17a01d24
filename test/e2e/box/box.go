package box

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Options configure Start.
type Options struct {
	// ControlPlaneDir holds etcd, kube-apiserver, kube-controller-manager
	// and kubectl (hack/envtest-binaries.sh prints it); NodeDir holds the
	// kubelet, kube-scheduler, kube-proxy and coredns
	// (hack/node-binaries.sh prints it).
	ControlPlaneDir, NodeDir string
	// Helm is the helm binary Box.Helm runs; optional.
	Helm string
	// Images are docker-archive tarballs imported into containerd before
	// the kubelet starts. PauseImage, the pods' sandbox, must be one of
	// their tags.
	Images     []string
	PauseImage string
	// CRDs are manifests applied before kube-controller-manager starts:
	// its garbage collector learns resource types that appear later only
	// every 30 s, so cascading deletes would lag behind.
	CRDs []string
}

// parent is where work directories are made: short, because unix socket
// paths under it are limited to 108 bytes, and one place for every run, so
// that a run can tell the cgroups of dead runs from those of live ones.
const parent = "/tmp"

// Box is a running one-node cluster.
type Box struct {
	// WorkDir is the run's directory; LogDir (WorkDir/logs) holds every
	// component's log, and, when the run is kept, the pods' logs.
	WorkDir, LogDir string
	// KubeconfigPath is an admin (system:masters) kubeconfig; Config and
	// Clientset are the same identity.
	KubeconfigPath string
	Config         *rest.Config
	Clientset      *kubernetes.Clientset
	// KubectlPath is the kubectl binary.
	KubectlPath string

	Timings Timings

	opts       Options
	cgroupRoot string
	lock       *os.File
	pki        *pki

	mu      sync.Mutex // guards the daemons
	daemons map[string]*daemon

	provisioner *provisioner
	keep        atomic.Bool
	stopOnce    sync.Once
	stopErr     error
}

// Timings of the box's life, for the suite to report.
type Timings struct {
	Namespace    time.Duration // sweep, mounts, network, cgroups
	ControlPlane time.Duration // etcd, kube-apiserver, CRDs
	Images       time.Duration // containerd and the imports
	Node         time.Duration // kubelet until the Node is Ready
	DNS          time.Duration // kube-proxy and CoreDNS until they serve
	Start, Stop  time.Duration
}

// Start brings the box up. On error, everything started so far is stopped
// and the logs are kept.
func Start(ctx context.Context, opts Options) (*Box, error) {
	begin := time.Now()
	if err := checkPrivate(); err != nil {
		return nil, err
	}
	for _, p := range []string{opts.ControlPlaneDir, opts.NodeDir} {
		if p == "" {
			return nil, errors.New("box: Options.ControlPlaneDir and NodeDir are required (hack/envtest-binaries.sh, hack/node-binaries.sh)")
		}
	}
	if err := sweepStale(parent); err != nil {
		return nil, fmt.Errorf("box: cleaning up after an earlier run: %w", err)
	}
	work, err := os.MkdirTemp(parent, runPrefix)
	if err != nil {
		return nil, fmt.Errorf("box: %w", err)
	}
	b := &Box{WorkDir: work, LogDir: filepath.Join(work, "logs"), opts: opts, cgroupRoot: filepath.Base(work),
		daemons: map[string]*daemon{}, KubectlPath: filepath.Join(opts.ControlPlaneDir, "kubectl")}
	if b.lock, err = lockRun(work); err != nil {
		os.RemoveAll(work)
		return nil, err
	}
	if err := b.start(ctx); err != nil {
		b.keep.Store(true)
		return nil, errors.Join(fmt.Errorf("%w (logs in %s)", err, b.LogDir), b.Stop())
	}
	b.Timings.Start = time.Since(begin)
	return b, nil
}

func (b *Box) start(ctx context.Context) error {
	t := time.Now()
	if err := os.MkdirAll(b.LogDir, 0o755); err != nil {
		return fmt.Errorf("box: %w", err)
	}
	if err := setupMounts(b.WorkDir); err != nil {
		return err
	}
	if err := setupNetwork(); err != nil {
		return err
	}
	if err := createCgroupRoot(b.cgroupRoot); err != nil {
		return err
	}
	var err error
	if b.pki, err = newPKI(filepath.Join(b.WorkDir, "pki"), net.ParseIP(apiServiceIP), net.ParseIP(NodeIP), ClusterDomain); err != nil {
		return err
	}
	b.Timings.Namespace = time.Since(t)

	t = time.Now()
	if err := b.startControlPlane(ctx); err != nil {
		return err
	}
	b.Timings.ControlPlane = time.Since(t)

	t = time.Now()
	if err := b.startContainerd(ctx); err != nil {
		return err
	}
	if err := b.ImportImages(ctx, b.opts.Images...); err != nil {
		return err
	}
	b.Timings.Images = time.Since(t)

	t = time.Now()
	if err := b.startControllers(); err != nil {
		return err
	}
	if err := b.StartKubelet(ctx); err != nil {
		return err
	}
	b.Timings.Node = time.Since(t)

	t = time.Now()
	if err := b.startServices(ctx); err != nil {
		return err
	}
	b.Timings.DNS = time.Since(t)
	return nil
}

func (b *Box) bin(dir, name string) string { return filepath.Join(dir, name) }

func (b *Box) startDaemon(name, path string, args ...string) error {
	d, err := startDaemon(b.LogDir, name, path, args, nil)
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.daemons[name] = d
	b.mu.Unlock()
	return nil
}

func (b *Box) daemon(name string) *daemon {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.daemons[name]
}

// alive fails when a daemon the box started has exited.
func (b *Box) alive(names ...string) error {
	for _, n := range names {
		if d := b.daemon(n); d != nil {
			if err := d.alive(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *Box) startControlPlane(ctx context.Context) error {
	cp := b.opts.ControlPlaneDir
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeerPort)
	// Durability is pointless for a throw-away store, and fsync is what a
	// shared CI disk makes slow.
	if err := b.startDaemon("etcd", b.bin(cp, "etcd"), "--data-dir="+filepath.Join(b.WorkDir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--unsafe-no-fsync"); err != nil {
		return err
	}
	p := b.pki
	if err := b.startDaemon("kube-apiserver", b.bin(cp, "kube-apiserver"),
		"--etcd-servers="+etcdURL,
		"--bind-address=0.0.0.0", "--secure-port="+strconv.Itoa(apiPort), "--advertise-address="+NodeIP,
		"--tls-cert-file="+p.serverCert, "--tls-private-key-file="+p.serverKey, "--client-ca-file="+p.caCert,
		"--service-cluster-ip-range="+ServiceCIDR,
		"--token-auth-file="+p.tokens,
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--service-account-issuer=https://kubernetes.default.svc."+ClusterDomain,
		"--service-account-key-file="+p.saPub, "--service-account-signing-key-file="+p.saKey,
		"--allow-privileged=true",
		// The API server reaches the kubelet (logs, exec, port-forward) by
		// its address: the node's name resolves nowhere.
		"--kubelet-preferred-address-types=InternalIP",
		"--profiling=false", "--v=1"); err != nil {
		return err
	}
	b.KubeconfigPath = filepath.Join(b.WorkDir, "admin.kubeconfig")
	server := fmt.Sprintf("https://%s:%d", NodeIP, apiPort)
	if err := p.kubeconfig(b.KubeconfigPath, server, p.adminToken); err != nil {
		return err
	}
	b.Config = &rest.Config{Host: server, BearerToken: p.adminToken, TLSClientConfig: rest.TLSClientConfig{CAFile: p.caCert},
		QPS: 50, Burst: 100}
	var err error
	if b.Clientset, err = kubernetes.NewForConfig(b.Config); err != nil {
		return fmt.Errorf("box: %w", err)
	}
	if err := b.waitAPIServer(ctx); err != nil {
		return err
	}
	for _, crd := range b.opts.CRDs {
		if _, err := b.Kubectl(ctx, "apply", "--server-side", "-f", crd); err != nil {
			return fmt.Errorf("box: CRDs: %w", err)
		}
	}
	return nil
}

func (b *Box) waitAPIServer(ctx context.Context) error {
	ca, err := os.ReadFile(b.pki.caCert)
	if err != nil {
		return fmt.Errorf("box: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, Proxy: nil}}
	return poll("kube-apiserver ready", 2*time.Minute, func() error {
		if err := b.alive("etcd", "kube-apiserver"); err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/readyz", apiPort), nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+b.pki.adminToken)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %s", resp.Status)
		}
		return nil
	})
}

// controllers is kube-controller-manager's set: the workload controllers
// the operator relies on, the node lifecycle (it lifts the new node's
// not-ready taint, and marks pods of an unreachable node), ServiceAccounts
// and their tokens with the CA bundle (the operator runs in a pod), and the
// volume controllers the harness's provisioner needs.
var controllers = []string{
	"statefulset-controller", "deployment-controller", "replicaset-controller",
	"endpointslice-controller", "garbage-collector-controller", "namespace-controller",
	"disruption-controller", "pod-garbage-collector-controller",
	"node-lifecycle-controller", "taint-eviction-controller",
	"serviceaccount-controller", "serviceaccount-token-controller", "root-ca-certificate-publisher-controller",
	"clusterrole-aggregation-controller",
	"persistentvolume-binder-controller", "persistentvolume-protection-controller",
	"persistentvolumeclaim-protection-controller",
}

func (b *Box) startControllers() error {
	p := b.pki
	if err := b.startDaemon("kube-controller-manager", b.bin(b.opts.ControlPlaneDir, "kube-controller-manager"),
		"--kubeconfig="+b.KubeconfigPath, "--controllers="+strings.Join(controllers, ","),
		"--leader-elect=false", "--secure-port=0",
		"--service-account-private-key-file="+p.saKey, "--root-ca-file="+p.caCert,
		"--use-service-account-credentials=false",
		"--kube-api-qps=100", "--kube-api-burst=200", "--v=2"); err != nil {
		return err
	}
	return b.startDaemon("kube-scheduler", b.bin(b.opts.NodeDir, "kube-scheduler"),
		"--kubeconfig="+b.KubeconfigPath, "--leader-elect=false", "--secure-port=0", "--v=1")
}

func (b *Box) containerdDir() string { return filepath.Join(b.WorkDir, "containerd") }

func (b *Box) containerdSock() string { return filepath.Join(b.containerdDir(), "containerd.sock") }

func (b *Box) startContainerd(ctx context.Context) error {
	dir := b.containerdDir()
	cniConf := filepath.Join(b.WorkDir, "cni")
	if err := writeFiles(dir, map[string]string{"config.toml": containerdConfig(dir, cniConf, b.opts.PauseImage)}); err != nil {
		return err
	}
	if err := writeFiles(cniConf, map[string]string{"10-e2e.conflist": cniConfig}); err != nil {
		return err
	}
	if err := b.startDaemon("containerd", "containerd", "--config="+filepath.Join(dir, "config.toml")); err != nil {
		return err
	}
	return poll("containerd serving", time.Minute, func() error {
		if err := b.alive("containerd"); err != nil {
			return err
		}
		_, err := b.ctr(ctx, "version")
		return err
	})
}

// ctr runs containerd's client against the box's containerd, in the
// namespace the CRI plugin uses.
func (b *Box) ctr(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "ctr", append([]string{"--address", b.containerdSock(), "--namespace", "k8s.io"}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ctr %v: %w: %s", args, err, out)
	}
	return string(out), nil
}

// ImportImages loads docker-archive tarballs into containerd, where pods
// find them by their tags: nothing is ever pulled.
func (b *Box) ImportImages(ctx context.Context, tarballs ...string) error {
	for _, t := range tarballs {
		abs, err := filepath.Abs(t)
		if err != nil {
			return fmt.Errorf("box: %w", err)
		}
		if _, err := b.ctr(ctx, "images", "import", abs); err != nil {
			return fmt.Errorf("box: importing %s: %w", t, err)
		}
	}
	return nil
}

// StartKubelet starts the kubelet (again, after StopKubelet) and waits until
// the Node is Ready.
func (b *Box) StartKubelet(ctx context.Context) error {
	dir := filepath.Join(b.WorkDir, "kubelet")
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeFiles(dir, map[string]string{
		"config.yaml": kubeletConfig(b.containerdSock(), "/"+b.cgroupRoot, filepath.Join(dir, "volume-plugins")),
	}); err != nil {
		return err
	}
	if err := b.pki.kubeconfig(kubeconfig, fmt.Sprintf("https://%s:%d", NodeIP, apiPort), b.pki.nodeToken); err != nil {
		return err
	}
	started := time.Now()
	if err := b.startDaemon("kubelet", b.bin(b.opts.NodeDir, "kubelet"), "--config="+filepath.Join(dir, "config.yaml"),
		"--kubeconfig="+kubeconfig, "--hostname-override="+NodeName, "--node-ip="+NodeIP, "--v=2"); err != nil {
		return err
	}
	return poll("Node Ready", 2*time.Minute, func() error {
		if err := b.alive("kubelet"); err != nil {
			return err
		}
		n, err := b.Clientset.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range n.Status.Conditions {
			// A heartbeat from before this start says nothing of it.
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && !c.LastHeartbeatTime.Time.Before(started.Truncate(time.Second)) {
				for _, t := range n.Spec.Taints {
					if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
						return fmt.Errorf("ready, still tainted %s", t.Key)
					}
				}
				return nil
			}
		}
		return fmt.Errorf("conditions %v", n.Status.Conditions)
	})
}

// StopKubelet stops the kubelet as a node fault would: its pods keep
// running, no status is reported until StartKubelet.
func (b *Box) StopKubelet() error {
	b.mu.Lock()
	d := b.daemons["kubelet"]
	delete(b.daemons, "kubelet")
	b.mu.Unlock()
	return d.stop(10 * time.Second)
}

func (b *Box) startServices(ctx context.Context) error {
	if err := b.startDaemon("kube-proxy", b.bin(b.opts.NodeDir, "kube-proxy"),
		"--kubeconfig="+b.KubeconfigPath, "--hostname-override="+NodeName, "--cluster-cidr="+PodCIDR,
		"--proxy-mode=iptables",
		// Leaves the machine-wide conntrack table size alone.
		"--conntrack-max-per-core=0",
		"--metrics-bind-address=127.0.0.1:10249", "--healthz-bind-address=127.0.0.1:10256", "--v=1"); err != nil {
		return err
	}
	corefilePath := filepath.Join(b.WorkDir, "coredns", "Corefile")
	if err := writeFiles(filepath.Dir(corefilePath), map[string]string{"Corefile": corefile(b.KubeconfigPath)}); err != nil {
		return err
	}
	if err := b.startDaemon("coredns", b.bin(b.opts.NodeDir, "coredns"), "-conf", corefilePath); err != nil {
		return err
	}
	// The kubernetes Service through kube-proxy, by its name through CoreDNS:
	// what a pod of the operator needs first.
	r := &net.Resolver{PreferGo: true}
	if err := poll("cluster DNS and the kubernetes Service", 2*time.Minute, func() error {
		if err := b.alive("kube-proxy", "coredns"); err != nil {
			return err
		}
		addrs, err := r.LookupHost(ctx, "kubernetes.default.svc."+ClusterDomain)
		if err != nil {
			return err
		}
		c, err := net.DialTimeout("tcp", net.JoinHostPort(addrs[0], "443"), 2*time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	}); err != nil {
		return err
	}
	var err error
	if b.provisioner, err = startProvisioner(b.Clientset, filepath.Join(b.WorkDir, "volumes"), b.LogDir); err != nil {
		return err
	}
	return b.provisioner.ready(ctx)
}

// KeepWorkDir makes Stop keep the logs (LogDir), the pods' logs included,
// e.g. after a failed test.
func (b *Box) KeepWorkDir() { b.keep.Store(true) }

// Stop takes the box down: the cluster's daemons, every pod's process (by
// cgroup), containerd and its shims, the control plane; then the mounts and
// the work directory (all but the logs if kept). Safe to call more than once.
func (b *Box) Stop() error {
	b.stopOnce.Do(func() {
		begin := time.Now()
		var errs []error
		if b.provisioner != nil {
			b.provisioner.stop()
		}
		if b.keep.Load() {
			// The pods' logs, before their processes and files go.
			if _, err := run("cp", "-a", "/var/log/pods", filepath.Join(b.LogDir, "pods")); err != nil {
				errs = append(errs, err)
			}
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, n := range []string{"coredns", "kube-proxy", "kube-scheduler", "kube-controller-manager", "kubelet"} {
			wg.Go(func() {
				if err := b.daemon(n).stop(5 * time.Second); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		// The kubelet leaves its pods running; they are what its cgroups hold.
		if err := sweepCgroup(b.cgroupRoot, 30*time.Second); err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, b.daemon("containerd").stop(5*time.Second))
		// Shims outlive containerd.
		errs = append(errs, killShims(b.containerdDir()))
		errs = append(errs, b.daemon("kube-apiserver").stop(10*time.Second))
		errs = append(errs, b.daemon("etcd").stop(5*time.Second))
		errs = append(errs, sweepCgroup(b.cgroupRoot, 30*time.Second))
		errs = append(errs, unmountUnder(append([]string{b.WorkDir}, hostPaths...)...))
		errs = append(errs, b.removeWorkDir())
		b.Timings.Stop = time.Since(begin)
		b.stopErr = errors.Join(errs...)
	})
	return b.stopErr
}

// removeWorkDir removes the work directory, or, when kept, all of it but
// the logs (and the lock, so that the next run's sweep leaves the logs be).
func (b *Box) removeWorkDir() error {
	defer b.lock.Close()
	if !b.keep.Load() {
		return os.RemoveAll(b.WorkDir)
	}
	entries, err := os.ReadDir(b.WorkDir)
	if err != nil {
		return fmt.Errorf("box: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if e.Name() != "logs" {
			errs = append(errs, os.RemoveAll(filepath.Join(b.WorkDir, e.Name())))
		}
	}
	return errors.Join(errs...)
}

// killShims kills the containerd shims of this run's containerd: they
// outlive it and are not in the pods' cgroups.
func killShims(containerdDir string) error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("box: %w", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if strings.HasSuffix(args[0], "containerd-shim-runc-v2") && strings.Contains(string(cmdline), containerdDir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return nil
}

// Kubectl runs kubectl against the cluster as the admin and returns its
// combined output.
func (b *Box) Kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, b.KubectlPath, append([]string{"--kubeconfig=" + b.KubeconfigPath}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %v: %w: %s", args, err, out)
	}
	return string(out), nil
}

// Helm runs Options.Helm against the cluster as the admin, with its caches
// and configuration in the work directory.
func (b *Box) Helm(ctx context.Context, args ...string) (string, error) {
	if b.opts.Helm == "" {
		return "", errors.New("box: no helm binary (Options.Helm)")
	}
	home := filepath.Join(b.WorkDir, "helm")
	cmd := exec.CommandContext(ctx, b.opts.Helm, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+b.KubeconfigPath,
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("helm %v: %w: %s", args, err, out)
	}
	return string(out), nil
}

// StopOnSignal stops the box and exits the process with status 1 on SIGINT
// or SIGTERM, so that an interrupted suite leaves nothing behind. The before
// functions run first. Call the returned function to stop listening before
// a regular Stop.
func (b *Box) StopOnSignal(before ...func()) (release func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			fmt.Fprintf(os.Stderr, "box: %v: stopping the box\n", s)
			for _, f := range before {
				f()
			}
			if err := b.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
			os.Exit(1)
		case <-done:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
		})
	}
}
