//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// The operator as `helm install` of the chart makes it.
const (
	operatorNamespace = "kube-namesrv-system"
	// release is also the chart's name, so the chart's full name (the
	// Deployment's and the ServiceAccount's) is the release's.
	release            = "kube-namesrv"
	operatorDeployment = release
	// operatorSelector selects the manager pods.
	operatorSelector = "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/component=operator"
	// leaderElectionID is cmd/manager's.
	leaderElectionID = "kube-namesrv.rocketmq.kube-namesrv.io"
)

// kc is an admin client that knows NameServerClusters.
var kc client.Client

var chartDir = filepath.Join(repoRoot, "charts", "kube-namesrv")

// installOperator installs the operator with `helm install` of the chart,
// running this build's image, as a user would, and waits until a manager
// pod leads. Its pods get their ServiceAccount token and reach the API
// server through the kubernetes Service, so the chart's RBAC authorises
// every call they make.
func installOperator(ctx context.Context) error {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	var err error
	if kc, err = client.New(cl.Config, client.Options{Scheme: scheme}); err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	return helmInstall(ctx, image)
}

// helmInstall installs the chart with the operator image img and waits for
// a leader.
func helmInstall(ctx context.Context, img string) error {
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	begin := time.Now()
	if _, err := cl.Helm(ctx, "install", release, chartDir, "--namespace", operatorNamespace, "--create-namespace",
		"--set", "image.tag="+tagOf(img), "--wait", "--timeout", "3m"); err != nil {
		return err
	}
	holder, err := waitOperator(ctx, img)
	if err != nil {
		return err
	}
	fmt.Printf("e2e: operator installed by helm (%s), leader %s, in %s\n", img, holder, round(time.Since(begin)))
	return nil
}

func tagOf(img string) string { return img[strings.LastIndexByte(img, ':')+1:] }

// waitOperator waits until the Deployment runs img on every replica and one
// of its pods holds the leader Lease, and returns that pod's name.
func waitOperator(ctx context.Context, img string) (string, error) {
	var holder string
	err := pollUntil(ctx, 3*time.Minute, func() (bool, string) {
		d, err := cl.Clientset.AppsV1().Deployments(operatorNamespace).Get(ctx, operatorDeployment, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if got := d.Spec.Template.Spec.Containers[0].Image; got != img {
			return false, fmt.Sprintf("the Deployment runs %s, want %s", got, img)
		}
		if !deploymentDone(d) {
			return false, fmt.Sprintf("Deployment: %d replicas, %d updated, %d available", d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas)
		}
		pods, err := cl.Clientset.CoreV1().Pods(operatorNamespace).List(ctx, metav1.ListOptions{LabelSelector: operatorSelector})
		if err != nil {
			return false, err.Error()
		}
		lease, err := cl.Clientset.CoordinationV1().Leases(operatorNamespace).Get(ctx, leaderElectionID, metav1.GetOptions{})
		if err != nil {
			return false, "leader Lease: " + err.Error()
		}
		// The holder identity is <pod name>_<uid>.
		holder = ptr.Deref(lease.Spec.HolderIdentity, "")
		for _, p := range pods.Items {
			if strings.HasPrefix(holder, p.Name+"_") && p.Spec.Containers[0].Image == img && p.DeletionTimestamp == nil && podReady(&p) {
				holder = p.Name
				return true, ""
			}
		}
		return false, fmt.Sprintf("the Lease is held by %q, not by a ready manager pod running %s", holder, img)
	})
	return holder, err
}

func deploymentDone(d *appsv1.Deployment) bool {
	want := ptr.Deref(d.Spec.Replicas, 1)
	return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == want &&
		d.Status.Replicas == want && d.Status.AvailableReplicas == want
}

// checkAuthorised fails when authorization refused the managers anything:
// some refusals (an Event, say) only show in their logs, read here with
// `kubectl logs`. Other 403s, such as an Event for a namespace being
// deleted, are not about RBAC and do not name the user.
func checkAuthorised(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	pods, err := cl.Clientset.CoreV1().Pods(operatorNamespace).List(ctx, metav1.ListOptions{LabelSelector: operatorSelector})
	if err != nil {
		return fmt.Errorf("listing the manager pods: %w", err)
	}
	var errs []error
	for _, p := range pods.Items {
		logs, err := cl.Kubectl(ctx, "logs", "-n", operatorNamespace, p.Name, "-c", "manager")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var refused []string
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, "forbidden: User ") {
				refused = append(refused, line[:min(len(line), 400)])
			}
		}
		if len(refused) > 0 {
			errs = append(errs, fmt.Errorf("the chart's RBAC refused manager %s %d times, first: %s", p.Name, len(refused), refused[0]))
		}
	}
	return errors.Join(errs...)
}

// managerPods lists the operator's pods that are not being deleted.
func managerPods(ctx context.Context) ([]corev1.Pod, error) {
	l, err := cl.Clientset.CoreV1().Pods(operatorNamespace).List(ctx, metav1.ListOptions{LabelSelector: operatorSelector})
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(l.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil }), nil
}

// pollUntil is eventually for code outside a test: it returns the last
// description as an error when timeout passes or ctx ends.
func pollUntil(ctx context.Context, timeout time.Duration, cond func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("after %v: %s", timeout, msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
