package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kube-namesrv/kube-namesrv/test/e2e/pkubelet"
)

// Options configure Start. The zero value starts a mapped-mode cluster from
// $KUBEBUILDER_ASSETS in a fresh temporary directory.
type Options struct {
	// AssetsDir holds etcd, kube-apiserver, kube-controller-manager and
	// kubectl (hack/envtest-binaries.sh); default $KUBEBUILDER_ASSETS.
	AssetsDir string
	// CRDDirectoryPaths are installed before the controller-manager
	// starts: its garbage collector learns resource types that appear
	// later only every 30s, so cascading deletes of CRs would lag.
	CRDDirectoryPaths []string
	// WorkDir receives logs/, the kubeconfigs, etcd's data and the
	// kubelet's pods/ and pvc/; default a new temporary directory. Stop
	// removes it unless KeepWorkDir is set or KeepWorkDir() was called.
	WorkDir     string
	KeepWorkDir bool
	// Box, when set, runs in box mode (see BoxFromEnv).
	Box *Box
	// Controllers default to DefaultControllers.
	Controllers []string
	// ControllerManagerFlags are appended to the controller-manager's flags.
	ControllerManagerFlags []string
	// Kubelet is the process kubelet's configuration; Start fills in
	// Client, RootDir, Logger and, in box mode, IPPrefix and HostsFile.
	Kubelet pkubelet.Config
}

// Cluster is a running cluster in a box.
type Cluster struct {
	// Config is an admin (system:masters) client configuration.
	Config *rest.Config
	// Clientset uses Config.
	Clientset *kubernetes.Clientset
	// Kubelet runs the Pods.
	Kubelet *pkubelet.Kubelet
	// Environment is the envtest environment (API server, etcd, CRDs).
	Environment *envtest.Environment

	// WorkDir is the run's directory; LogDir (WorkDir/logs) holds
	// etcd.log, kube-apiserver.log, kube-controller-manager.log and
	// pkubelet.log; the Pods' logs are under WorkDir/kubelet/pods.
	WorkDir string
	LogDir  string
	// KubeconfigPath is an admin kubeconfig for kubectl; KubectlPath is
	// the kubectl binary.
	KubeconfigPath string
	KubectlPath    string

	Timings Timings

	// keep may be set by the suite while a signal handler is stopping.
	keep     atomic.Bool
	kcm      *controllerManager
	logs     []*os.File
	stopOnce sync.Once
	stopErr  error
}

// Timings of the cluster's life, for the suite to report.
type Timings struct {
	ControlPlane      time.Duration // etcd + kube-apiserver + CRDs
	ControllerManager time.Duration // process start
	Kubelet           time.Duration // until the Node is Ready
	Start             time.Duration
	Stop              time.Duration
}

// Start brings up the cluster. On error everything started so far is
// stopped again.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	begin := time.Now()
	assets := opts.AssetsDir
	if assets == "" {
		assets = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if assets == "" {
		return nil, errors.New("cluster: no control-plane binaries: set KUBEBUILDER_ASSETS (hack/envtest-binaries.sh prints it)")
	}
	kcmPath := filepath.Join(assets, "kube-controller-manager")
	if _, err := os.Stat(kcmPath); err != nil {
		return nil, fmt.Errorf("cluster: %w (run hack/envtest-binaries.sh)", err)
	}

	c := &Cluster{WorkDir: opts.WorkDir}
	c.keep.Store(opts.KeepWorkDir)
	if c.WorkDir == "" {
		dir, err := os.MkdirTemp("", "cluster-in-a-box-")
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		c.WorkDir = dir
	}
	c.LogDir = filepath.Join(c.WorkDir, "logs")
	if err := os.MkdirAll(c.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if err := c.start(ctx, opts, assets, kcmPath); err != nil {
		c.keep.Store(true)
		_ = c.Stop()
		return nil, fmt.Errorf("%w (logs in %s)", err, c.LogDir)
	}
	c.Timings.Start = time.Since(begin)
	return c, nil
}

func (c *Cluster) start(ctx context.Context, opts Options, assets, kcmPath string) error {
	private := filepath.Join(c.WorkDir, "bin")
	if err := privateAssets(assets, private); err != nil {
		return err
	}
	c.KubectlPath = filepath.Join(private, "kubectl")

	t := time.Now()
	etcdLog, err := c.logFile("etcd.log")
	if err != nil {
		return err
	}
	apiLog, err := c.logFile("kube-apiserver.log")
	if err != nil {
		return err
	}
	api := &envtest.APIServer{
		Path:    filepath.Join(private, "kube-apiserver"),
		CertDir: filepath.Join(c.WorkDir, "kube-apiserver"),
		Out:     apiLog,
		Err:     apiLog,
	}
	etcd := &envtest.Etcd{
		Path:    filepath.Join(private, "etcd"),
		DataDir: filepath.Join(c.WorkDir, "etcd"),
		Out:     etcdLog,
		Err:     etcdLog,
	}
	// Durability is pointless for a throw-away store, and fsync is what a
	// shared CI disk makes slow.
	etcd.Configure().Set("unsafe-no-fsync", "true")
	if opts.Box != nil {
		// Without a default route kube-apiserver cannot pick an address
		// to advertise and never becomes healthy.
		api.Configure().Set("advertise-address", opts.Box.AdvertiseAddress)
	}
	for _, d := range []string{api.CertDir, etcd.DataDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
	}
	c.Environment = &envtest.Environment{
		ControlPlane:          envtest.ControlPlane{APIServer: api, Etcd: etcd, KubectlPath: c.KubectlPath},
		CRDDirectoryPaths:     opts.CRDDirectoryPaths,
		ErrorIfCRDPathMissing: len(opts.CRDDirectoryPaths) > 0,
	}
	cfg, err := c.Environment.Start()
	if err != nil {
		return fmt.Errorf("cluster: start control plane: %w", err)
	}
	c.Config = cfg
	c.Timings.ControlPlane = time.Since(t)

	c.KubeconfigPath = filepath.Join(c.WorkDir, "admin.kubeconfig")
	if err := os.WriteFile(c.KubeconfigPath, c.Environment.KubeConfig, 0o600); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if c.Clientset, err = kubernetes.NewForConfig(cfg); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}

	t = time.Now()
	user, err := c.Environment.ControlPlane.AddUser(envtest.User{Name: "system:kube-controller-manager", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("cluster: controller-manager user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("cluster: controller-manager kubeconfig: %w", err)
	}
	kcmConfig := filepath.Join(c.WorkDir, "kube-controller-manager.kubeconfig")
	if err := os.WriteFile(kcmConfig, kubeconfig, 0o600); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	controllers := opts.Controllers
	if len(controllers) == 0 {
		controllers = DefaultControllers
	}
	c.kcm, err = startControllerManager(kcmPath, kcmConfig, filepath.Join(c.LogDir, "kube-controller-manager.log"), controllers, opts.ControllerManagerFlags)
	if err != nil {
		return err
	}
	c.Timings.ControllerManager = time.Since(t)

	t = time.Now()
	kubeletLog, err := c.logFile("pkubelet.log")
	if err != nil {
		return err
	}
	kc := opts.Kubelet
	kc.Client = c.Clientset
	kc.RootDir = filepath.Join(c.WorkDir, "kubelet")
	if kc.Logger == nil {
		kc.Logger = slog.New(slog.NewTextHandler(kubeletLog, nil))
	}
	if opts.Box != nil {
		kc.IPPrefix = opts.Box.IPPrefix
		kc.ReportedIPPrefix = opts.Box.IPPrefix
		kc.HostsFile = opts.Box.HostsFile
	}
	if c.Kubelet, err = pkubelet.New(kc); err != nil {
		return err
	}
	// The kubelet lives as long as the cluster, not as long as ctx.
	if err := c.Kubelet.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	c.Timings.Kubelet = time.Since(t)
	return c.kcm.alive()
}

func (c *Cluster) logFile(name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(c.LogDir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c.logs = append(c.logs, f)
	return f, nil
}

// KeepWorkDir makes Stop leave the work directory (logs) in place, e.g.
// after a failed test.
func (c *Cluster) KeepWorkDir() { c.keep.Store(true) }

// Stop stops the kubelet (and every Pod process), the controller-manager,
// kube-apiserver and etcd, in that order, and removes the work directory
// unless it is kept. It is safe to call more than once.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		begin := time.Now()
		var errs []error
		if c.Kubelet != nil {
			c.Kubelet.Stop()
		}
		if c.kcm != nil {
			errs = append(errs, c.kcm.stop(5*time.Second))
		}
		if c.Environment != nil {
			if err := c.Environment.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("cluster: stop control plane: %w", err))
			}
		}
		for _, f := range c.logs {
			f.Close()
		}
		if !c.keep.Load() {
			if err := os.RemoveAll(c.WorkDir); err != nil {
				errs = append(errs, fmt.Errorf("cluster: remove work dir: %w", err))
			}
		}
		c.Timings.Stop = time.Since(begin)
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

// Kubectl runs kubectl against the cluster and returns its combined output.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.KubectlPath, append([]string{"--kubeconfig=" + c.KubeconfigPath}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %v: %w: %s", args, err, out)
	}
	return string(out), nil
}

// StopOnSignal stops the cluster and exits the process with status 1 on
// SIGINT or SIGTERM, so that an interrupted suite leaves nothing behind.
// The before functions run first, in order: they stop what the test process
// itself runs against the cluster (an operator's manager, say), whose open
// requests would otherwise hold kube-apiserver past envtest's stop timeout.
// Call the returned function to stop listening before a regular Stop.
func (c *Cluster) StopOnSignal(before ...func()) (release func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			fmt.Fprintf(os.Stderr, "cluster: %v: stopping the cluster\n", s)
			for _, f := range before {
				f()
			}
			if err := c.Stop(); err != nil {
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
