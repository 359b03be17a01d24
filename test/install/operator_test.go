package install

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

// TestManagerRunsUnderChartRBAC runs the image's manager with the chart's
// arguments as the chart's service account, bound only by the chart's RBAC,
// and has it reconcile a NameServerCluster end to end: children, a
// published list copied into another namespace, status, events, and the
// copy's removal on deletion. A permission the chart lacks shows up as a cluster
// that never gets there, or as "forbidden" in the manager's log.
func TestManagerRunsUnderChartRBAC(t *testing.T) {
	cases := []struct {
		name                  string
		args                  renderArgs
		clusterNS, targetNS   string
		unwatched             string
		namespacesClusterWide bool
	}{
		// The release namespace differs from TestChart's, so that the
		// ClusterRoleBinding created here binds no other case's account.
		{name: "cluster mode", args: renderArgs{namespace: "op-cluster"},
			clusterNS: "apps", targetNS: "brokers", namespacesClusterWide: true},
		{name: "namespaced mode", args: renderArgs{namespace: "op-namespaced", values: "namespaced-values.yaml"},
			clusterNS: "team-a", targetNS: "team-b", unwatched: "default"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := testContext(t)
			objs := helmTemplate(ctx, t, c.args)
			ensureNamespaces(ctx, t, objs)
			createNamespace(ctx, t, c.clusterNS, nil)
			createNamespace(ctx, t, c.targetNS, nil)
			acceptFrom(ctx, t, c.targetNS, c.clusterNS+"/*")
			installRBAC(ctx, t, objs)

			d := typed[appsv1.Deployment](t, only(t, objs, "Deployment"))
			sa := fmt.Sprintf("system:serviceaccount:%s:%s", d.Namespace, d.Spec.Template.Spec.ServiceAccountName)
			groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + d.Namespace}

			t.Run("least privilege", func(t *testing.T) {
				checkAccess(ctx, t, sa, groups, d.Namespace, "coordination.k8s.io", "leases", "update", true)
				checkAccess(ctx, t, sa, groups, "", "", "namespaces", "list", c.namespacesClusterWide)
				checkAccess(ctx, t, sa, groups, "", "rbac.authorization.k8s.io", "clusterroles", "create", false)
				// Secrets: the HTTP token Secret is read by name and
				// created, nothing else.
				checkAccess(ctx, t, sa, groups, c.clusterNS, "", "secrets", "get", true)
				checkAccess(ctx, t, sa, groups, c.clusterNS, "", "secrets", "create", true)
				for _, verb := range []string{"list", "watch", "update", "patch", "delete"} {
					checkAccess(ctx, t, sa, groups, c.clusterNS, "", "secrets", verb, false)
				}
				checkAccess(ctx, t, sa, groups, c.clusterNS, "apps", "deployments", "create", false)
				if c.unwatched != "" {
					checkAccess(ctx, t, sa, groups, c.unwatched, "", "configmaps", "list", false)
				}
			})

			mgr := startManager(ctx, t, sa, groups, d.Spec.Template.Spec.Containers[0].Args)
			reconcileOneCluster(ctx, t, c.clusterNS, c.targetNS)
			mgr.stop(t)
			if strings.Contains(strings.ToLower(mgr.output()), "forbidden") {
				t.Error("the manager was refused something; see its output")
			}
		})
	}
}

// installRBAC creates, for real, the service account and RBAC objects the
// chart renders.
func installRBAC(ctx context.Context, t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
			if err := k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()),
				client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
				t.Fatalf("creating %s: %v", describe(o), err)
			}
		}
	}
}

// checkAccess asks the API server's authorizer whether the account may do
// something.
func checkAccess(ctx context.Context, t *testing.T, user string, groups []string, ns, group, resource, verb string, want bool) {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Group: group, Resource: resource, Verb: verb},
	}}
	if err := k8s.Create(ctx, sar); err != nil {
		t.Fatal(err)
	}
	if sar.Status.Allowed != want {
		t.Errorf("%s may %s %s.%s in %q: %v, want %v", user, verb, resource, group, ns, sar.Status.Allowed, want)
	}
}

// reconcileOneCluster creates a one-peer cluster publishing into another
// namespace, plays the kubelet for its pod, and waits for the operator to do
// each kind of write it has RBAC for.
func reconcileOneCluster(ctx context.Context, t *testing.T, ns, target string) {
	t.Helper()
	const name = "rbac-check"
	c := &v1alpha1.NameServerCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.NameServerClusterSpec{
			Replicas: ptr.To[int32](1),
			Publish:  v1alpha1.PublishSpec{Targets: []v1alpha1.PublishTarget{{Namespace: target}}},
		},
	}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	// No kubelet runs in envtest: the test creates the peer pod, ready.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-0", Labels: render.Labels(c)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: render.ContainerName, Image: "namesrv"}}},
	}
	if err := k8s.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}}
	if err := k8s.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}

	addr := name + "-namesrv-addr"
	want := render.PeerAddress(withPorts(c), render.Options{ClusterDomain: "cluster.local"}, 0, 9876)
	waitFor(t, "the StatefulSet, Services, PDB, the published list in both namespaces, status and an event", func() string {
		for _, o := range []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}, &policyv1.PodDisruptionBudget{}} {
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o); err != nil {
				return err.Error()
			}
		}
		for _, key := range []client.ObjectKey{{Namespace: ns, Name: addr}, {Namespace: target, Name: addr}} {
			cm := &corev1.ConfigMap{}
			if err := k8s.Get(ctx, key, cm); err != nil {
				return err.Error()
			}
			if cm.Data[v1alpha1.NamesrvAddrKey] != want {
				return fmt.Sprintf("%s holds %q, want %q", key, cm.Data[v1alpha1.NamesrvAddrKey], want)
			}
		}
		got := &v1alpha1.NameServerCluster{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), got); err != nil {
			return err.Error()
		}
		if got.Status.ObservedGeneration != got.Generation || got.Status.PublishedReplicas != 1 || len(got.Finalizers) != 0 {
			return fmt.Sprintf("status %+v, finalizers %v (want none)", got.Status, got.Finalizers)
		}
		events := &eventsv1.EventList{}
		if err := k8s.List(ctx, events, client.InNamespace(ns)); err != nil {
			return err.Error()
		}
		if !slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool { return e.Regarding.Name == name }) {
			return "no event about the cluster"
		}
		return ""
	})

	if err := k8s.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the cluster and the copy in the other namespace deleted", func() string {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: target, Name: addr}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("the copy in %s: %v", target, err)
		}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), &v1alpha1.NameServerCluster{}); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("the cluster: %v", err)
		}
		return ""
	})
}

// withPorts fills in the ports the CRD defaults.
func withPorts(c *v1alpha1.NameServerCluster) *v1alpha1.NameServerCluster {
	c = c.DeepCopy()
	c.Spec.Ports = v1alpha1.Ports{Remoting: 9876, HTTP: 8080}
	return c
}

// waitFor polls until check returns "", failing with its last answer.
func waitFor(t *testing.T, what string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		last := check()
		if last == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %s", what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type managerProcess struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
}

// startManager runs the image's manager as user (a client certificate of
// that name, as a service account token would authenticate it) with the
// chart's arguments. Only what cannot work outside a pod changes: leader
// election needs the pod's namespace file, and the ports must be free here.
func startManager(ctx context.Context, t *testing.T, user string, groups []string, args []string) *managerProcess {
	t.Helper()
	u, err := testEnv.AddUser(envtest.User{Name: user, Groups: groups}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	probe := freeAddress(t)
	args = append(slices.Clone(args), "--leader-elect=false", "--metrics-bind-address=0", "--health-probe-bind-address="+probe)

	m := &managerProcess{out: &lockedBuffer{}, done: make(chan struct{})}
	m.cmd = exec.Command(filepath.Join(imageBinDir, "manager"), args...)
	m.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	m.cmd.Stdout, m.cmd.Stderr = m.out, m.out
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = m.cmd.Wait()
		close(m.done)
	}()
	t.Cleanup(func() {
		m.stop(t)
		if t.Failed() {
			t.Logf("manager output:\n%s", m.output())
		}
	})

	waitFor(t, "the manager's /readyz", func() string {
		select {
		case <-m.done:
			return "the manager exited:\n" + m.output()
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+probe+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err.Error()
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return resp.Status
		}
		return ""
	})
	return m
}

// stop ends the manager with SIGTERM, as the kubelet would.
func (m *managerProcess) stop(t *testing.T) {
	select {
	case <-m.done:
		return
	default:
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(15 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
		t.Errorf("the manager did not stop within 15s of SIGTERM")
	}
}

func (m *managerProcess) output() string { return m.out.String() }

func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// lockedBuffer is written by the process's output copier and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// acceptFrom makes a namespace accept the address lists of clusters.
func acceptFrom(ctx context.Context, t *testing.T, namespace, from string) {
	t.Helper()
	n := &corev1.Namespace{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: namespace}, n); err != nil {
		t.Fatal(err)
	}
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[v1alpha1.AnnotationAcceptPublishFrom] = from
	if err := k8s.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
}
