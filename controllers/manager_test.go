package controllers

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// These specs stop and start the suite's manager, as an operator upgrade or
// a lost leader would.
var _ = Describe("The manager", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace(nil) })

	It("finishes a drain it did not start, without ever publishing a wrong list", func() {
		newCluster(ns, "restart", withReplicas(4), withDrain(4))
		readyPods(ns, "restart", 0, 1, 2, 3)
		settleStatefulSet(ns, "restart")
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "restart-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "restart", 4)))
		}).Should(Succeed())

		updateCluster(ns, "restart", func(c *v1alpha1.NameServerCluster) { c.Spec.Replicas = ptr.To[int32](2) })
		var drainStart time.Time
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "restart")
			g.Expect(c.Status.DrainStartTime).NotTo(BeNil())
			drainStart = c.Status.DrainStartTime.Time
			g.Expect(addressData(g, ns, "restart-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "restart", 2)))
		}).Should(Succeed())

		stopManager()
		DeferCleanup(func() {
			if stopManager == nil {
				startManager(nil)
			}
		})
		stopManager = nil
		Expect(statefulSetReplicas(Default, ns, "restart")).To(BeEquivalentTo(4), "the StatefulSet shrank before the drain")
		startManager(nil)

		shrunk := false
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "restart-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "restart", 2)),
				"a restarted manager must never publish the removed peers again")
			if n := statefulSetReplicas(g, ns, "restart"); n == 2 && !shrunk {
				shrunk = true
				g.Expect(time.Now()).To(BeTemporally(">=", drainStart.Add(4*time.Second)), "shrank before the persisted drain end")
			}
			g.Expect(shrunk).To(BeTrue())
			g.Expect(getCluster(g, ns, "restart").Status.DrainStartTime).To(BeNil())
		}, 15*time.Second).Should(Succeed())
	})

	It("never publishes a longer list than its status records", func() {
		var failing atomic.Bool
		stopManager()
		stopManager = nil
		startManagerWith(nil, func(c client.Client) client.Client {
			return conflictingStatus{Client: c, fail: func(o client.Object) bool { return o.GetName() == "lost" && failing.Load() }}
		})
		DeferCleanup(func() {
			stopManager()
			startManager(nil)
		})

		newCluster(ns, "lost", withReplicas(3), withDrain(60))
		Eventually(func(g Gomega) {
			g.Expect(getCluster(g, ns, "lost").Status.Manager).NotTo(BeNil(), "the manager claims the cluster first")
			g.Expect(addressData(g, ns, "lost-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", ""))
		}).Should(Succeed())
		failing.Store(true)
		readyPods(ns, "lost", 0, 1, 2)
		Eventually(func(g Gomega) { g.Expect(statefulSetReplicas(g, ns, "lost")).To(BeEquivalentTo(3)) }).Should(Succeed())
		By("while every status write is lost, the ready peers stay unpublished")
		Consistently(func(g Gomega) {
			g.Expect(addressData(g, ns, "lost-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", ""))
		}).Should(Succeed())

		failing.Store(false)
		updateCluster(ns, "lost", func(c *v1alpha1.NameServerCluster) { c.Annotations = map[string]string{"poke": "1"} })
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "lost-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "lost", 3)))
			g.Expect(getCluster(g, ns, "lost").Status.PublishedReplicas).To(BeEquivalentTo(3))
		}).Should(Succeed())

		By("so a scale-down drains every peer that was ever listed")
		updateCluster(ns, "lost", func(c *v1alpha1.NameServerCluster) { c.Spec.Replicas = ptr.To[int32](1) })
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "lost-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "lost", 1)))
			g.Expect(getCluster(g, ns, "lost").Status.DrainStartTime).NotTo(BeNil())
		}).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(statefulSetReplicas(g, ns, "lost")).To(BeEquivalentTo(3)) }).Should(Succeed())
	})

	It("can be restricted to some namespaces", func() {
		targets, elsewhere := newNamespace(nil), newNamespace(nil)
		stopManager()
		stopManager = nil
		startManager([]string{ns, targets})
		DeferCleanup(func() {
			stopManager()
			startManager(nil)
		})

		newCluster(ns, "scoped", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Publish.Targets = []v1alpha1.PublishTarget{{Namespace: targets}, {Namespace: elsewhere}}
		})
		newCluster(elsewhere, "ignored")
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, targets, "scoped-namesrv-addr")).To(HaveKey("namesrvAddr"))
			cond := v1alpha1.FindCondition(getCluster(g, ns, "scoped").Status.Conditions, v1alpha1.ConditionAddressesPublished)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal(string(v1alpha1.RefusalTarget)))
			g.Expect(cond.Message).To(ContainSubstring("outside the namespaces this operator manages"))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(k8sClient.Get(testCtx, key(elsewhere, "scoped-namesrv-addr"), &corev1.ConfigMap{}))).To(BeTrue())
			g.Expect(apierrors.IsNotFound(k8sClient.Get(testCtx, key(elsewhere, "ignored"), &appsv1.StatefulSet{}))).To(BeTrue())
		}).Should(Succeed())
	})

	It("leaves a cluster to the install that manages it, and takes over once that one is gone", func() {
		newCluster(ns, "duo", withReplicas(1))
		readyPods(ns, "duo", 0)
		settleStatefulSet(ns, "duo")
		Eventually(func(g Gomega) {
			g.Expect(getCluster(g, ns, "duo").Status.Manager).To(HaveValue(HaveField("Identity", testIdentity)))
		}).Should(Succeed())

		By("a second install, of another version, writes nothing to it")
		const other, otherImage = "other/kube-namesrv", "kube-namesrv/kube-namesrv:v9-test"
		var writes atomic.Int32
		stopOther := runManager(nil, func(c client.Client) client.Client {
			return countingWrites{Client: c, count: func(o client.Object) {
				if strings.HasPrefix(o.GetName(), "duo") {
					writes.Add(1)
				}
			}}
		}, func(r *NameServerClusterReconciler) {
			r.Identity, r.Render.DefaultImage, r.TakeoverAfter = other, otherImage, 3*time.Second
		})
		DeferCleanup(func() { stopOther() })
		Consistently(func(g Gomega) {
			g.Expect(writes.Load()).To(BeZero())
			sts := &appsv1.StatefulSet{}
			g.Expect(k8sClient.Get(testCtx, key(ns, "duo"), sts)).To(Succeed())
			g.Expect(sts.Spec.Template.Spec.Containers[0].Image).To(Equal(testImage), "the second install applied its template")
		}, 4*time.Second).Should(Succeed())

		By("once the manager is gone and a spec change waits, the second takes over")
		stopManager()
		stopManager = nil
		DeferCleanup(func() {
			if stopManager == nil {
				startManager(nil)
			}
		})
		updateCluster(ns, "duo", func(c *v1alpha1.NameServerCluster) { c.Spec.Replicas = ptr.To[int32](2) })
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "duo")
			g.Expect(c.Status.Manager).To(HaveValue(HaveField("Identity", other)))
			g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
			g.Expect(statefulSetReplicas(g, ns, "duo")).To(BeEquivalentTo(2))
			g.Expect(eventReasons(g, ns, "duo")).To(ContainElement("Warning/" + string(v1alpha1.EventManagerTookOver)))
		}, 20*time.Second).Should(Succeed())
	})
})

// countingWrites reports every object the client writes.
type countingWrites struct {
	client.Client
	count func(client.Object)
}

func (c countingWrites) Create(ctx context.Context, o client.Object, opts ...client.CreateOption) error {
	c.count(o)
	return c.Client.Create(ctx, o, opts...)
}

func (c countingWrites) Update(ctx context.Context, o client.Object, opts ...client.UpdateOption) error {
	c.count(o)
	return c.Client.Update(ctx, o, opts...)
}

func (c countingWrites) Patch(ctx context.Context, o client.Object, p client.Patch, opts ...client.PatchOption) error {
	c.count(o)
	return c.Client.Patch(ctx, o, p, opts...)
}

func (c countingWrites) Delete(ctx context.Context, o client.Object, opts ...client.DeleteOption) error {
	c.count(o)
	return c.Client.Delete(ctx, o, opts...)
}

func (c countingWrites) Apply(ctx context.Context, ac runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	if o, ok := ac.(interface{ GetName() *string }); ok && o.GetName() != nil {
		c.count(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: *o.GetName()}})
	}
	return c.Client.Apply(ctx, ac, opts...)
}

func (c countingWrites) Status() client.SubResourceWriter {
	return countingStatus{SubResourceWriter: c.Client.Status(), count: c.count}
}

type countingStatus struct {
	client.SubResourceWriter
	count func(client.Object)
}

func (c countingStatus) Patch(ctx context.Context, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
	c.count(o)
	return c.SubResourceWriter.Patch(ctx, o, p, opts...)
}

// conflictingStatus fails the status writes of the objects fail selects
// with a conflict, as a concurrent writer would.
type conflictingStatus struct {
	client.Client
	fail func(client.Object) bool
}

func (c conflictingStatus) Status() client.SubResourceWriter {
	return conflictingStatusWriter{SubResourceWriter: c.Client.Status(), fail: c.fail}
}

type conflictingStatusWriter struct {
	client.SubResourceWriter
	fail func(client.Object) bool
}

func (w conflictingStatusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if w.fail(obj) {
		return apierrors.NewConflict(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "nameserverclusters"}, obj.GetName(), errInjected)
	}
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

var errInjected = errors.New("injected by the test")
