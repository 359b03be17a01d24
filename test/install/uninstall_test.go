package install

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// TestHelmUninstallWithANameServerCluster installs the chart with
// nameserver.enabled and a publish target, runs its manager under the
// release's own RBAC until the cluster is reconciled, then uninstalls the
// way Helm does it: the manager goes first (Helm deletes custom kinds last),
// and `helm uninstall --wait` must still finish, because the cluster carries
// no finalizer that only the manager could remove. The copy of the list left
// in the other namespace is deleted by the next manager that starts.
func TestHelmUninstallWithANameServerCluster(t *testing.T) {
	ctx := testContext(t)
	const rel, ns, target = "helm-gone", "helm-gone", "helm-gone-brokers"
	createNamespace(ctx, t, target, nil)
	acceptFrom(ctx, t, target, ns+"/"+rel)
	if _, err := run(ctx, helmBin, "install", rel, chartDir, "--kubeconfig", adminKubeconfig,
		"--namespace", ns, "--create-namespace", "--set", "nameserver.enabled=true",
		"--set-json", fmt.Sprintf(`nameserver.publish.targets=[{"namespace":%q}]`, target)); err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: rel + "-kube-namesrv"}, d); err != nil {
		t.Fatal(err)
	}
	sa := fmt.Sprintf("system:serviceaccount:%s:%s", ns, d.Spec.Template.Spec.ServiceAccountName)
	mgr := startManager(ctx, t, sa, []string{"system:serviceaccounts", "system:serviceaccounts:" + ns}, d.Spec.Template.Spec.Containers[0].Args)
	copyKey := client.ObjectKey{Namespace: target, Name: rel + "-namesrv-addr-brokers"}
	waitFor(t, "the cluster reconciled and its broker list copied into "+target, func() string {
		c := &v1alpha1.NameServerCluster{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: rel}, c); err != nil {
			return err.Error()
		}
		if c.Status.ObservedGeneration != c.Generation {
			return fmt.Sprintf("status of generation %d, want %d", c.Status.ObservedGeneration, c.Generation)
		}
		if len(c.Finalizers) > 0 {
			return fmt.Sprintf("finalizers %v", c.Finalizers)
		}
		if err := k8s.Get(ctx, copyKey, &corev1.ConfigMap{}); err != nil {
			return err.Error()
		}
		return ""
	})

	mgr.stop(t)
	if _, err := run(ctx, helmBin, "uninstall", rel, "--kubeconfig", adminKubeconfig, "--namespace", ns, "--wait", "--timeout", "60s"); err != nil {
		t.Fatalf("helm uninstall with the manager gone: %v", err)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: rel}, &v1alpha1.NameServerCluster{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the NameServerCluster after helm uninstall: %v", err)
	}

	sweeper := startManager(ctx, t, "kube-namesrv-sweeper", []string{"system:masters"}, d.Spec.Template.Spec.Containers[0].Args)
	waitFor(t, "the orphaned copy in "+target+" deleted by a manager that starts", func() string {
		if err := k8s.Get(ctx, copyKey, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("%s: %v", copyKey, err)
		}
		return ""
	})
	sweeper.stop(t)
}
