package controllers

import (
	"maps"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

var _ = Describe("A cluster at rest", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace(nil) })

	// A cluster at rest must cost the API server nothing: a thousand of them
	// would otherwise send a write per child per broker round through every
	// admission webhook.
	It("sends no write and no read around the cache over three broker rounds", func() {
		const round = 2 * time.Second
		testPeers.set(podIP(0), &fakePeer{})
		newCluster(ns, "rest", withReplicas(1), func(c *v1alpha1.NameServerCluster) {
			c.Spec.BrokerHeartbeatSeconds = ptr.To(int32(round / time.Second))
		})
		Eventually(func(g Gomega) { g.Expect(statefulSetReplicas(g, ns, "rest")).To(BeEquivalentTo(1)) }).Should(Succeed())
		readyPods(ns, "rest", 0)
		settleStatefulSet(ns, "rest")
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "rest")
			g.Expect(atRest(c.Status)).To(BeTrue(), "conditions %+v", c.Status.Conditions)
			g.Expect(c.Status.PublishedReplicas).To(BeEquivalentTo(1))
			g.Expect(c.Status.Peers).To(ConsistOf(HaveField("Reachable", HaveValue(BeTrue()))))
		}).Should(Succeed())

		By("a pass after the last change, which writes nothing")
		passes := func() int { return reconciles.in(ns)["rest"] }
		settled := passes()
		Eventually(passes).WithTimeout(3 * round).Should(BeNumerically(">", settled))

		By("three broker rounds of passes")
		spent := func() map[string]int {
			out := map[string]int{}
			for what, n := range apiRequests.in(ns) {
				if verb, _, _ := strings.Cut(what, " "); verb != "list" && verb != "watch" {
					out[what] = n
				}
			}
			return out
		}
		before, start := spent(), passes()
		Consistently(func() map[string]int {
			now := spent()
			maps.DeleteFunc(now, func(what string, n int) bool { return before[what] == n })
			return now
		}).WithTimeout(3*round).WithPolling(100*time.Millisecond).Should(BeEmpty(),
			"requests (cumulative counts) a cluster at rest sent to the API server besides the cache's lists and watches")
		Expect(passes()-start).To(BeNumerically(">=", 2), "the cluster was not reconciled during the rounds: the check proves nothing")
	})

	It("sets back a child edited by hand and removes what it no longer sets", func() {
		newCluster(ns, "drift", withReplicas(1), func(c *v1alpha1.NameServerCluster) {
			c.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{LoadBalancerSourceRanges: []string{"10.0.0.0/8"}}
		})
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "drift-namesrv-addr")).To(HaveKey(v1alpha1.NamesrvAddrExternalKey))
			g.Expect(addressData(g, ns, "drift-namesrv-addr-brokers")).To(HaveKeyWithValue(v1alpha1.NamesrvAddrKey, peerList(ns, "drift", 1)))
		}).Should(Succeed())

		By("a label of the headless Service edited by hand")
		Eventually(func(g Gomega) {
			svc := &corev1.Service{}
			g.Expect(k8sClient.Get(testCtx, key(ns, "drift-headless"), svc)).To(Succeed())
			svc.Labels[render.LabelComponent] = "edited"
			g.Expect(k8sClient.Update(testCtx, svc)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			svc := &corev1.Service{}
			g.Expect(k8sClient.Get(testCtx, key(ns, "drift-headless"), svc)).To(Succeed())
			g.Expect(svc.Labels).To(HaveKeyWithValue(render.LabelComponent, render.Component))
		}).Should(Succeed())

		By("a data key of an address ConfigMap edited, another deleted by hand")
		Eventually(func(g Gomega) {
			cm := &corev1.ConfigMap{}
			g.Expect(k8sClient.Get(testCtx, key(ns, "drift-namesrv-addr-brokers"), cm)).To(Succeed())
			cm.Data[v1alpha1.NamesrvAddrKey] = "10.9.9.9:9876"
			delete(cm.Data, v1alpha1.NamesrvAddrEnvKey)
			g.Expect(k8sClient.Update(testCtx, cm)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "drift-namesrv-addr-brokers")).To(And(
				HaveKeyWithValue(v1alpha1.NamesrvAddrKey, peerList(ns, "drift", 1)),
				HaveKeyWithValue(v1alpha1.NamesrvAddrEnvKey, peerList(ns, "drift", 1))))
		}).Should(Succeed())

		By("spec.externalAccess removed: the external list's key leaves the ConfigMaps")
		updateCluster(ns, "drift", func(c *v1alpha1.NameServerCluster) { c.Spec.ExternalAccess = nil })
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "drift-namesrv-addr")).NotTo(HaveKey(v1alpha1.NamesrvAddrExternalKey))
			g.Expect(addressData(g, ns, "drift-namesrv-addr-brokers")).NotTo(HaveKey(v1alpha1.NamesrvAddrExternalKey))
		}).Should(Succeed())
	})
})
