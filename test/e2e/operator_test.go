//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/internal/version"
	"github.com/kube-namesrv/kube-namesrv/test/e2e/cluster"
)

// What `kubectl apply -k config/default` creates, by kustomize's namespace
// and name prefix.
const (
	operatorNamespace      = "kube-namesrv-system"
	operatorServiceAccount = "kube-namesrv-controller-manager"
	operatorDeployment     = "kube-namesrv-controller-manager"
	// leaderElectionID is cmd/manager's.
	leaderElectionID = "kube-namesrv.rocketmq.kube-namesrv.io"
)

// kc is an admin client that knows NameServerClusters.
var kc client.Client

// installOperator applies config/default with kubectl and runs the
// operator's manager in this process.
//
// Why in-process rather than as the Deployment's pods: the manager finds its
// leader-election namespace in the service-account volume
// (/var/run/secrets/kubernetes.io/serviceaccount/namespace), a path shared by
// every process of the box and absent from it, and its health and metrics
// ports default to all interfaces, which two replicas sharing the box's one
// network namespace cannot both bind. Running its Deployment here would mean
// patching the manifest we claim to test. So config/default is applied as a
// user would, and every object in it must be accepted by the real API
// server; the Deployment stays inert (the controller-manager runs no
// deployment controller). The manager is then wired exactly like
// cmd/manager (controllers.CacheOptions, the reconciler's SetupWithManager,
// leader election on the same Lease), with health and metrics endpoints
// disabled, and it authenticates as the Deployment's ServiceAccount, so the
// RBAC of config/default is what authorises every call it makes.
//
// The returned function stops the manager, releasing its Lease.
func installOperator(c *cluster.Cluster) (stop func() error, err error) {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	begin := time.Now()
	if _, err := c.Kubectl(ctx, "apply", "--server-side", "--force-conflicts", "-k", filepath.Join(repoRoot, "config", "default")); err != nil {
		return nil, err
	}
	if err := checkInstalled(ctx, c); err != nil {
		return nil, err
	}
	if kc, err = client.New(c.Config, client.Options{Scheme: scheme}); err != nil {
		return nil, fmt.Errorf("creating a client: %w", err)
	}

	user, err := c.Environment.ControlPlane.AddUser(envtest.User{
		Name:   "system:serviceaccount:" + operatorNamespace + ":" + operatorServiceAccount,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNamespace},
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("creating the ServiceAccount's credentials: %w", err)
	}
	cfg := user.Config()
	// ctrl.GetConfigOrDie's client-side limits, which the manager runs with.
	cfg.QPS, cfg.Burst = 20, 30

	logFile, err := os.Create(filepath.Join(c.LogDir, "manager.log"))
	if err != nil {
		return nil, fmt.Errorf("creating the manager's log: %w", err)
	}
	log := zap.New(zap.WriteTo(logFile))
	// client-go's leader election logs through klog.
	klog.SetLogger(log.WithName("klog"))

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Logger:                        log,
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                true,
		LeaderElectionNamespace:       operatorNamespace,
		LeaderElectionID:              leaderElectionID,
		LeaderElectionReleaseOnCancel: true,
		Cache:                         controllers.CacheOptions(nil),
	})
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := (&controllers.NameServerClusterReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("kube-namesrv"),
		Render:    render.Options{ClusterDomain: "cluster.local", DefaultImage: version.DefaultImage()},
		Clock:     clock.RealClock{},
	}).SetupWithManager(mgr); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("setting up the NameServerCluster controller: %w", err)
	}

	mgrCtx, stopMgr := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	var (
		stopOnce sync.Once
		stopErr  error
	)
	// Called on a signal and at the end of the suite, maybe both.
	stop = func() error {
		stopOnce.Do(func() {
			stopMgr()
			err := <-done
			klog.SetLogger(logr.Discard())
			stopErr = errors.Join(err, logFile.Close(), checkAuthorised(logFile.Name()))
		})
		return stopErr
	}
	select {
	case <-mgr.Elected():
	case err := <-done:
		done <- err
		return nil, errors.Join(fmt.Errorf("the manager stopped before it was elected: %w", err), stop())
	case <-ctx.Done():
		return nil, errors.Join(fmt.Errorf("the manager was not elected leader within a minute (see %s)", logFile.Name()), stop())
	}
	lease, err := c.Clientset.CoordinationV1().Leases(operatorNamespace).Get(ctx, leaderElectionID, metav1.GetOptions{})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("reading the leader Lease: %w", err), stop())
	}
	fmt.Printf("e2e: operator installed from config/default and manager elected (Lease holder %s) in %s\n",
		ptr.Deref(lease.Spec.HolderIdentity, "?"), round(time.Since(begin)))
	return stop, nil
}

// checkAuthorised fails when authorization refused the manager anything:
// some refusals (an Event, say) only show in its log. Other 403s, such as
// an Event for a namespace being deleted, are not about RBAC and do not
// name the user.
func checkAuthorised(logPath string) error {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return fmt.Errorf("reading the manager's log: %w", err)
	}
	var refused []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "forbidden: User ") {
			refused = append(refused, line[:min(len(line), 400)])
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("the RBAC of config/default refused the manager %d times (%s), first: %s", len(refused), logPath, refused[0])
	}
	return nil
}

// checkInstalled verifies that the objects of config/default the manager
// relies on exist as kustomize renders them.
func checkInstalled(ctx context.Context, c *cluster.Cluster) error {
	cs := c.Clientset
	if _, err := cs.CoreV1().ServiceAccounts(operatorNamespace).Get(ctx, operatorServiceAccount, metav1.GetOptions{}); err != nil {
		return fmt.Errorf("config/default: %w", err)
	}
	d, err := cs.AppsV1().Deployments(operatorNamespace).Get(ctx, operatorDeployment, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("config/default: %w", err)
	}
	if got, want := d.Spec.Template.Spec.Containers[0].Image, version.DefaultImage(); got != want {
		return fmt.Errorf("config/default deploys the manager image %q, want this build's %q", got, want)
	}
	crb, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, "kube-namesrv-manager-rolebinding", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("config/default: %w", err)
	}
	want := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: operatorServiceAccount, Namespace: operatorNamespace}
	for _, s := range crb.Subjects {
		if s == want {
			return nil
		}
	}
	return fmt.Errorf("config/default: ClusterRoleBinding %s does not bind %s/%s: %+v", crb.Name, operatorNamespace, operatorServiceAccount, crb.Subjects)
}
