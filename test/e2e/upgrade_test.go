//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// These scenarios change the operator itself with Helm; they run last, and
// each leaves an operator installed.

// operatorImage is the image the operator's Deployment runs now.
func operatorImage(ctx context.Context, t *testing.T) string {
	t.Helper()
	d, err := cl.Clientset.AppsV1().Deployments(operatorNamespace).Get(ctx, operatorDeployment, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

// TestOperatorUpgradeByHelm: `helm upgrade` to another release's image rolls
// the managers, and the new leader, whose default NameServer image is its
// own, rolls every cluster to it one peer at a time, no client missing a
// route.
func TestOperatorUpgradeByHelm(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	from := operatorImage(ctx, t)
	to := nextImage
	if from == nextImage {
		to = image
	}
	type served struct {
		c      nsc
		fleet  *clientFleet
		before map[int]peerProcess
		pods   *podRecorder
		mark   int
	}
	var clusters []served
	for name, n := range map[string]int{"upgrade-a": 3, "upgrade-b": 2} {
		c, _, fleet := servingCluster(ctx, t, name, clusterSpec{replicas: n, drain: 2}, 4)
		pods := recordPods(ctx, t, c.ns, c.selector())
		clusters = append(clusters, served{c: c, fleet: fleet, before: processes(t, ctx, c, n), pods: pods, mark: pods.len()})
	}
	// The managers about to go: what they were refused is in their logs.
	if err := checkAuthorised(ctx); err != nil {
		t.Error(err)
	}
	if _, err := cl.Helm(ctx, "upgrade", release, chartDir, "--namespace", operatorNamespace, "--reuse-values",
		"--set", "image.tag="+tagOf(to), "--wait", "--timeout", "3m"); err != nil {
		t.Fatal(err)
	}
	holder, err := waitOperator(ctx, to)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("operator upgraded from %s to %s; leader %s", from, to, holder)
	for _, s := range clusters {
		waitAllReplaced(ctx, t, s.c, s.before, len(s.before), rollTimeout)
		for _, p := range mustPeerPods(ctx, t, s.c) {
			if img := p.Spec.Containers[0].Image; img != to {
				t.Errorf("%s runs %s after the upgrade, want %s", p.Name, img, to)
			}
		}
		assertOneAtATime(t, s.c, s.pods, s.mark, s.before)
		judgeClients(t, s.fleet.stop(), s.c.peers(len(s.before))...)
	}
}

// TestHelmUninstallLeavesClustersServing: `helm uninstall` removes the
// operator, its RBAC and its ServiceAccount, and leaves the CRD, the
// NameServerClusters and their peers serving, untouched; `helm install`
// again takes the clusters over.
func TestHelmUninstallLeavesClustersServing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	img := operatorImage(ctx, t)
	c, _, fleet := servingCluster(ctx, t, "orphan", clusterSpec{replicas: 3, drain: 2}, 6)
	before := processes(t, ctx, c, 3)
	if _, err := cl.Helm(ctx, "uninstall", release, "--namespace", operatorNamespace, "--wait", "--timeout", "2m"); err != nil {
		t.Fatal(err)
	}
	installed := false
	t.Cleanup(func() {
		// The scenarios after this one need an operator.
		if !installed {
			if err := helmInstall(context.Background(), img); err != nil {
				t.Errorf("installing the operator again: %v", err)
			}
		}
	})
	eventually(t, podTimeout, func() (bool, string) {
		ms, err := managerPods(ctx)
		return err == nil && len(ms) == 0, fmt.Sprintf("manager pods %v (%v)", podNames(ms), err)
	})
	if _, err := cl.Clientset.AppsV1().Deployments(operatorNamespace).Get(ctx, operatorDeployment, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the operator's Deployment after helm uninstall: %v", err)
	}
	if _, err := cl.Clientset.CoreV1().ServiceAccounts(operatorNamespace).Get(ctx, release, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the operator's ServiceAccount after helm uninstall: %v", err)
	}
	roles, err := cl.Clientset.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release})
	if err != nil || len(roles.Items) > 0 {
		t.Errorf("ClusterRoles of the release after helm uninstall: %d (%v)", len(roles.Items), err)
	}
	if _, err := cl.Kubectl(ctx, "get", "crd", "nameserverclusters."+v1alpha1.GroupVersion.Group); err != nil {
		t.Errorf("helm uninstall removed the CRD: %v", err)
	}
	if err := kc.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, &v1alpha1.NameServerCluster{}); err != nil {
		t.Errorf("the NameServerCluster after helm uninstall: %v", err)
	}
	// Without an operator, nothing changes: a few broker rounds on, the
	// same peers serve the same list.
	time.Sleep(3 * brokerPeriod)
	if now := processes(t, ctx, c, 3); !equalProcesses(now, before) {
		t.Errorf("peers restarted without an operator: %v -> %v", before, now)
	}
	if got, err := published(ctx, c); err != nil || strings.Join(got, ";") != strings.Join(c.peers(3), ";") {
		t.Errorf("the client list without an operator: %v (%v)", got, err)
	}

	if err := helmInstall(ctx, img); err != nil {
		t.Fatal(err)
	}
	installed = true
	// The new operator takes the cluster over: a change is reconciled.
	kubectl(ctx, t, "scale", "-n", c.ns, "nameservercluster/"+c.name, "--replicas=4")
	waitPublished(ctx, t, c, 4)
	eventuallyRoutes(ctx, t, c.peers(4))
	judgeClients(t, fleet.stop(), c.peers(3)...)
}
