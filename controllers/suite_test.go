package controllers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/peerclient"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

// The suite runs the real manager, with the manager's own cache settings,
// against a real kube-apiserver and etcd. There is no kubelet and no
// StatefulSet controller: tests play their part by creating the pods and
// writing pod and StatefulSet status.

const testImage = "kube-namesrv/kube-namesrv:v0.0.0-test"

var (
	restConfig *rest.Config
	// managerConfig acts as the manager's service account.
	managerConfig *rest.Config
	stopManager   func()
	testEnv       *envtest.Environment
	k8sClient     client.Client
	testCtx       context.Context
	stopSuite     context.CancelFunc
	testScheme    = runtime.NewScheme()
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "NameServerCluster controller suite")
}

var _ = BeforeSuite(func() {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		Fail("KUBEBUILDER_ASSETS is not set: this suite needs kube-apiserver and etcd. " +
			"Run `make test`, or KUBEBUILDER_ASSETS=\"$(hack/envtest-binaries.sh)\" go test ./controllers/")
	}
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	// A bound, not a pace: waits poll every 50 ms. A manager started by a
	// spec first reconciles every cluster earlier specs left, which on a
	// loaded 2-core machine took longer than 20 s (a cold make test).
	SetDefaultEventuallyTimeout(time.Minute)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	SetDefaultConsistentlyDuration(time.Second)
	SetDefaultConsistentlyPollingInterval(100 * time.Millisecond)

	utilruntime.Must(clientgoscheme.AddToScheme(testScheme))
	utilruntime.Must(v1alpha1.AddToScheme(testScheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(testScheme))

	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	var err error
	restConfig, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())

	k8sClient, err = client.New(restConfig, client.Options{Scheme: testScheme})
	Expect(err).NotTo(HaveOccurred())

	testCtx, stopSuite = context.WithCancel(context.Background())
	managerConfig = managerIdentity(restConfig)
	startManager(nil)
})

// managerIdentity installs the generated RBAC role (config/rbac/role.yaml)
// for a service account and returns a config that acts as it: every spec
// then also proves that the role allows all the manager does.
func managerIdentity(admin *rest.Config) *rest.Config {
	b, err := os.ReadFile(filepath.Join("..", "config", "rbac", "role.yaml"))
	Expect(err).NotTo(HaveOccurred())
	role := &rbacv1.ClusterRole{}
	Expect(yaml.Unmarshal(b, role)).To(Succeed())
	Expect(k8sClient.Create(testCtx, role)).To(Succeed())
	const ns, sa = "kube-namesrv-system", "controller-manager"
	Expect(k8sClient.Create(testCtx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "manager-test"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
	})).To(Succeed())
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":" + sa,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	return cfg
}

// startManager runs the operator's manager, watching the given namespaces
// (all when empty), until stopManager is called.
func startManager(namespaces []string) { startManagerWith(namespaces, nil) }

// startManagerWith runs the manager with the reconciler's client wrapped by
// wrap (when not nil), to inject API failures.
func startManagerWith(namespaces []string, wrap func(client.Client) client.Client) {
	stopManager = runManager(namespaces, wrap, func(*NameServerClusterReconciler) {})
}

// testIdentity names the suite's manager in status.manager.
const testIdentity = "kube-namesrv-system/kube-namesrv"

// runManager runs a manager of the operator, its reconciler set up by edit,
// and returns what stops it.
func runManager(namespaces []string, wrap func(client.Client) client.Client, edit func(*NameServerClusterReconciler)) func() {
	cfg := rest.CopyConfig(managerConfig)
	cfg.Wrap(apiRequests.wrap)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testScheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  CacheOptions(namespaces),
		// Tests restart the manager within one process. Reconciles of
		// several clusters run at once, as in production.
		Controller: config.Controller{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: 4},
	})
	Expect(err).NotTo(HaveOccurred())
	c := client.Client(&countingClient{Client: mgr.GetClient()})
	if wrap != nil {
		c = wrap(c)
	}
	r := &NameServerClusterReconciler{
		Client:     c,
		APIReader:  mgr.GetAPIReader(),
		Recorder:   mgr.GetEventRecorder("kube-namesrv"),
		Render:     render.Options{ClusterDomain: "cluster.local", DefaultImage: testImage},
		Namespaces: namespaces,
		Clock:      clock.RealClock{},
		Peers:      &peerclient.Observer{Client: testPeers},
		Identity:   testIdentity,
	}
	edit(r)
	Expect(r.SetupWithManager(mgr)).To(Succeed())

	ctx, cancel := context.WithCancel(testCtx)
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	return func() {
		cancel()
		<-done
	}
}

// Every spec starts with no NameServer answering: fake peers are
// registered by the specs that need them.
var _ = BeforeEach(func() {
	testPeers.reset()
	specNet++
})

var _ = AfterSuite(func() {
	if stopManager != nil {
		stopManager()
	}
	if stopSuite != nil {
		stopSuite()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// newNamespace creates a namespace for one test.
func newNamespace(labels map[string]string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "nsc-", Labels: labels}}
	Expect(k8sClient.Create(testCtx, ns)).To(Succeed())
	return ns.Name
}

// newCluster creates a NameServerCluster after applying edits to a minimal one.
func newCluster(ns, name string, edits ...func(*v1alpha1.NameServerCluster)) *v1alpha1.NameServerCluster {
	c := &v1alpha1.NameServerCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for _, e := range edits {
		e(c)
	}
	Expect(k8sClient.Create(testCtx, c)).To(Succeed())
	return c
}

func withReplicas(n int32) func(*v1alpha1.NameServerCluster) {
	return func(c *v1alpha1.NameServerCluster) { c.Spec.Replicas = ptr.To(n) }
}

func withDrain(seconds int32) func(*v1alpha1.NameServerCluster) {
	return func(c *v1alpha1.NameServerCluster) { c.Spec.Publish.DrainSeconds = ptr.To(seconds) }
}

func withTLS(t v1alpha1.TLSSpec) func(*v1alpha1.NameServerCluster) {
	return func(c *v1alpha1.NameServerCluster) { c.Spec.TLS = &t }
}

func key(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

// getCluster reads a cluster, failing the enclosing Eventually on error.
func getCluster(g Gomega, ns, name string) *v1alpha1.NameServerCluster {
	c := &v1alpha1.NameServerCluster{}
	g.Expect(k8sClient.Get(testCtx, key(ns, name), c)).To(Succeed())
	return c
}

// updateCluster retries a change of the cluster's spec on conflicts.
func updateCluster(ns, name string, edit func(*v1alpha1.NameServerCluster)) {
	Eventually(func(g Gomega) {
		c := getCluster(g, ns, name)
		edit(c)
		g.Expect(k8sClient.Update(testCtx, c)).To(Succeed())
	}).Should(Succeed())
}

// configName is the config ConfigMap of a cluster's current spec.config.
func configName(g Gomega, ns, name string) string {
	return render.ConfigMapName(getCluster(g, ns, name))
}

// addressData reads an address ConfigMap's data.
func addressData(g Gomega, ns, name string) map[string]string {
	cm := &corev1.ConfigMap{}
	g.Expect(k8sClient.Get(testCtx, key(ns, name), cm)).To(Succeed())
	return cm.Data
}

func peerAddr(ns, cluster string, ordinal int) string {
	return fmt.Sprintf("%s-%d.%s-headless.%s.svc.cluster.local:9876", cluster, ordinal, cluster, ns)
}

// peerList is the expected namesrvAddr for ordinals 0..n-1.
func peerList(ns, cluster string, n int) string {
	s := ""
	for i := range n {
		if i > 0 {
			s += ";"
		}
		s += peerAddr(ns, cluster, i)
	}
	return s
}

// specNet numbers the specs: each gets pod IPs of its own, so that fake
// peers registered by one spec never answer for the clusters that earlier
// specs left running.
var specNet int

func podIP(ordinal int) string { return fmt.Sprintf("10.%d.0.%d", 1+specNet%250, ordinal+10) }

// setPod plays the StatefulSet controller and the kubelet for one pod:
// creates it when missing (at revision r1, listening on the default ports),
// then writes its readiness and IP.
func setPod(ns, cluster string, ordinal int, ready bool, ip string) {
	setPodAt(ns, cluster, ordinal, ready, ip, "r1", 9876)
}

// setPodAt is setPod for a pod created from a given StatefulSet revision,
// listening on a given remoting port.
func setPodAt(ns, cluster string, ordinal int, ready bool, ip, revision string, port int32) {
	name := fmt.Sprintf("%s-%d", cluster, ordinal)
	pod := &corev1.Pod{}
	if err := k8sClient.Get(testCtx, key(ns, name), pod); err != nil {
		// Like the StatefulSet controller, mount the config ConfigMap of
		// the template as it is now.
		var volumes []corev1.Volume
		sts := &appsv1.StatefulSet{}
		if k8sClient.Get(testCtx, key(ns, cluster), sts) == nil {
			for _, v := range sts.Spec.Template.Spec.Volumes {
				if v.Name == render.ConfigVolume {
					volumes = append(volumes, v)
				}
			}
		}
		pod = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
				render.LabelName: render.AppName, render.LabelInstance: cluster,
				render.LabelManagedBy: render.ManagedBy, render.LabelComponent: render.Component,
				appsv1.ControllerRevisionHashLabelKey: revision, appsv1.StatefulSetPodNameLabel: name,
			}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "namesrv", Image: testImage, Ports: []corev1.ContainerPort{
				{Name: "remoting", ContainerPort: port}, {Name: "http", ContainerPort: 8080},
			}}}, Volumes: volumes},
		}
		Expect(k8sClient.Create(testCtx, pod)).To(Succeed())
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(testCtx, key(ns, name), pod)).To(Succeed())
		pod.Status.Phase = corev1.PodRunning
		if ip != "" {
			pod.Status.PodIP = ip
			pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
		}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
		g.Expect(k8sClient.Status().Update(testCtx, pod)).To(Succeed())
	}).Should(Succeed())
}

// readyPods makes pods 0..n-1 ready with their test IPs.
func readyPods(ns, cluster string, ordinals ...int) {
	for _, o := range ordinals {
		setPod(ns, cluster, o, true, podIP(o))
	}
}

// settleStatefulSet plays the StatefulSet controller's status for a
// StatefulSet whose pods all run the current revision, r1, and are ready.
func settleStatefulSet(ns, name string) { observeRevision(ns, name, "r1") }

// observeRevision plays the StatefulSet controller observing its current
// template as revision rev.
func observeRevision(ns, name, rev string) {
	Eventually(func(g Gomega) {
		sts := &appsv1.StatefulSet{}
		g.Expect(k8sClient.Get(testCtx, key(ns, name), sts)).To(Succeed())
		n := ptr.Deref(sts.Spec.Replicas, 1)
		sts.Status = appsv1.StatefulSetStatus{
			ObservedGeneration: sts.Generation, Replicas: n, ReadyReplicas: n, AvailableReplicas: n,
			CurrentReplicas: n, UpdatedReplicas: n, CurrentRevision: rev, UpdateRevision: rev,
		}
		g.Expect(k8sClient.Status().Update(testCtx, sts)).To(Succeed())
	}).Should(Succeed())
}

// acceptFrom annotates a namespace to accept the address lists of clusters.
func acceptFrom(namespace string, clusters ...string) {
	Eventually(func(g Gomega) {
		n := &corev1.Namespace{}
		g.Expect(k8sClient.Get(testCtx, client.ObjectKey{Name: namespace}, n)).To(Succeed())
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[v1alpha1.AnnotationAcceptPublishFrom] = strings.Join(clusters, ",")
		g.Expect(k8sClient.Update(testCtx, n)).To(Succeed())
	}).Should(Succeed())
}

func statefulSetReplicas(g Gomega, ns, name string) int32 {
	sts := &appsv1.StatefulSet{}
	g.Expect(k8sClient.Get(testCtx, key(ns, name), sts)).To(Succeed())
	return ptr.Deref(sts.Spec.Replicas, -1)
}

// eventReasons lists the reasons of the events about one cluster.
func eventReasons(g Gomega, ns, name string) []string {
	list := &eventsv1.EventList{}
	g.Expect(k8sClient.List(testCtx, list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "NameServerCluster" && e.Regarding.Name == name {
			out = append(out, e.Type+"/"+e.Reason)
		}
	}
	return out
}

// eventNotes lists the notes of the events about one cluster.
func eventNotes(g Gomega, ns, name string) []string {
	list := &eventsv1.EventList{}
	g.Expect(k8sClient.List(testCtx, list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "NameServerCluster" && e.Regarding.Name == name {
			out = append(out, e.Note)
		}
	}
	return out
}
