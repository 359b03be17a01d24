// Command manager runs the kube-namesrv operator: the NameServerCluster
// controller with leader election, metrics and health endpoints.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/internal/version"
)

// config holds the command-line settings.
type config struct {
	metricsAddr   string
	probeAddr     string
	leaderElect   bool
	namespaces    string
	clusterDomain string
	namesrvImage  string
	identity      string
	// concurrency and the API client's rate limit, sized for a thousand
	// clusters.
	maxConcurrentReconciles int
	kubeAPIQPS              float64
	kubeAPIBurst            int
}

func main() {
	var cfg config
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	fs.StringVar(&cfg.metricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus metrics endpoint (plain HTTP); \"0\" disables it.")
	fs.StringVar(&cfg.probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	fs.BoolVar(&cfg.leaderElect, "leader-elect", false, "Elect a leader, so that only one of several managers reconciles.")
	fs.StringVar(&cfg.namespaces, "namespaces", "", "Comma-separated namespaces to manage; empty manages all.")
	fs.StringVar(&cfg.clusterDomain, "cluster-domain", "cluster.local", "DNS suffix of Services in the published addresses.")
	fs.StringVar(&cfg.namesrvImage, "namesrv-image", version.DefaultImage(), "NameServer image for clusters that set no spec.image.")
	fs.StringVar(&cfg.identity, "manager-identity", "", "Name of this install in status.manager, which another install defers to; empty means <the manager's namespace>/kube-namesrv.")
	fs.IntVar(&cfg.maxConcurrentReconciles, "max-concurrent-reconciles", 8, "Clusters reconciled at once; reconciles of one cluster never overlap.")
	fs.Float64Var(&cfg.kubeAPIQPS, "kube-api-qps", 100, "Sustained requests per second the manager sends to the API server.")
	fs.IntVar(&cfg.kubeAPIBurst, "kube-api-burst", 200, "Requests the manager may send to the API server in a burst above --kube-api-qps.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	_ = fs.Parse(os.Args[1:])
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	if err := run(cfg); err != nil {
		ctrl.Log.Error(err, "manager stopped")
		os.Exit(1)
	}
}

func run(cfg config) error {
	log := ctrl.Log.WithName("setup")
	if err := cfg.validate(); err != nil {
		return err
	}
	if cfg.identity == "" {
		cfg.identity = defaultIdentity(os.Getenv("POD_NAMESPACE"), serviceAccountNamespace)
	}
	namespaces := splitNamespaces(cfg.namespaces)

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))

	restConfig, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("finding the cluster (in-cluster config or kubeconfig): %w", err)
	}
	restConfig.QPS, restConfig.Burst = float32(cfg.kubeAPIQPS), cfg.kubeAPIBurst
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: cfg.metricsAddr},
		HealthProbeBindAddress:        cfg.probeAddr,
		LeaderElection:                cfg.leaderElect,
		LeaderElectionID:              "kube-namesrv.rocketmq.kube-namesrv.io",
		LeaderElectionReleaseOnCancel: true,
		Cache:                         controllers.CacheOptions(namespaces),
		Controller:                    ctrlconfig.Controller{MaxConcurrentReconciles: cfg.maxConcurrentReconciles},
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := (&controllers.NameServerClusterReconciler{
		Client:     mgr.GetClient(),
		APIReader:  mgr.GetAPIReader(),
		Recorder:   mgr.GetEventRecorder("kube-namesrv"),
		Render:     render.Options{ClusterDomain: cfg.clusterDomain, DefaultImage: cfg.namesrvImage},
		Namespaces: namespaces,
		Clock:      clock.RealClock{},
		Identity:   cfg.identity,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the NameServerCluster controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	log.Info("starting the manager", "version", version.Version, "identity", cfg.identity, "namespaces", namespaces,
		"clusterDomain", cfg.clusterDomain, "namesrvImage", cfg.namesrvImage,
		"maxConcurrentReconciles", cfg.maxConcurrentReconciles, "kubeAPIQPS", cfg.kubeAPIQPS, "kubeAPIBurst", cfg.kubeAPIBurst)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		return fmt.Errorf("running the manager: %w", err)
	}
	return nil
}

// validate refuses settings the manager cannot run with.
func (c config) validate() error {
	if c.clusterDomain == "" || c.namesrvImage == "" {
		return errors.New("--cluster-domain and --namesrv-image must not be empty")
	}
	if c.maxConcurrentReconciles < 1 || c.kubeAPIQPS <= 0 || c.kubeAPIBurst < 1 {
		return errors.New("--max-concurrent-reconciles, --kube-api-qps and --kube-api-burst must be positive")
	}
	return nil
}

// splitNamespaces parses --namespaces, dropping blanks.
func splitNamespaces(s string) []string {
	var out []string
	for _, ns := range strings.Split(s, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}

// serviceAccountNamespace is where a pod finds its own namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// defaultIdentity names an install by its namespace: installs in one
// namespace share a leader lease, so at most one of them runs, and installs
// in two namespaces are two managers. The namespace comes from podNamespace
// (the POD_NAMESPACE variable), else from the service account's namespace
// file; a manager run outside a cluster is "local".
func defaultIdentity(podNamespace, namespaceFile string) string {
	ns := strings.TrimSpace(podNamespace)
	if ns == "" {
		if b, err := os.ReadFile(namespaceFile); err == nil {
			ns = strings.TrimSpace(string(b))
		}
	}
	if ns == "" {
		ns = "local"
	}
	return ns + "/kube-namesrv"
}
