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
	const round = 2 * time.Second
	passes := func(name string) int { return reconciles.in(ns)[name] }

	// settle creates a one-peer cluster with a short broker round and waits
	// for it to be at rest, then for a pass after the last change.
	settle := func(name string, edit func(*v1alpha1.NameServerCluster)) {
		testPeers.set(podIP(0), &fakePeer{})
		newCluster(ns, name, withReplicas(1), func(c *v1alpha1.NameServerCluster) {
			c.Spec.BrokerHeartbeatSeconds = ptr.To(int32(round / time.Second))
		}, edit)
		Eventually(func(g Gomega) { g.Expect(statefulSetReplicas(g, ns, name)).To(BeEquivalentTo(1)) }).Should(Succeed())
		readyPods(ns, name, 0)
		settleStatefulSet(ns, name)
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, name)
			g.Expect(atRest(c.Status)).To(BeTrue(), "conditions %+v", c.Status.Conditions)
			g.Expect(c.Status.PublishedReplicas).To(BeEquivalentTo(1))
			g.Expect(c.Status.Peers).To(ConsistOf(HaveField("Reachable", HaveValue(BeTrue()))))
		}).Should(Succeed())

		By("a pass after the last change, which writes nothing")
		settled := passes(name)
		Eventually(func() int { return passes(name) }).WithTimeout(3 * round).Should(BeNumerically(">", settled))
	}

	// quiet checks that the cluster, reconciled meanwhile, sends the API
	// server nothing for three broker rounds.
	quiet := func(name string) {
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
		before, start := spent(), passes(name)
		sent := func() map[string]int {
			now := spent()
			maps.DeleteFunc(now, func(what string, n int) bool { return before[what] == n })
			return now
		}
		const why = "requests (cumulative counts) a cluster at rest sent to the API server besides the cache's lists and watches"
		Consistently(sent).WithTimeout(3*round).WithPolling(100*time.Millisecond).Should(BeEmpty(), why)
		// On a loaded machine the passes may lag the rounds: the counts are
		// cumulative, so waiting for them keeps the check whole.
		Eventually(func() int { return passes(name) - start }).WithTimeout(3*round).Should(BeNumerically(">=", 2),
			"the cluster was not reconciled during the rounds: the check proves nothing")
		Expect(sent()).To(BeEmpty(), why)
	}

	It("sends no write and no read around the cache over three broker rounds", func() {
		settle("rest", func(*v1alpha1.NameServerCluster) {})
		quiet("rest")
	})

	// The token Secret cannot be cached (the operator may only get and
	// create Secrets): the token is kept in memory, its Secret read again
	// every tokenRereadRounds rounds.
	It("with spec.authorization, reads its token Secret only every ten broker rounds", func() {
		settle("rest-auth", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Authorization = &v1alpha1.AuthorizationSpec{HTTPAuthScope: v1alpha1.HTTPAuthAll}
		})
		secret := &corev1.Secret{}
		Expect(k8sClient.Get(testCtx, key(ns, "rest-auth-http-token"), secret)).To(Succeed())
		testPeers.edit(podIP(0), func(p *fakePeer) { p.Token = string(secret.Data[render.HTTPTokenKey]) })

		By("the Secret read again after ten rounds")
		secretGets := func() int { return apiRequests.in(ns)["get secrets"] }
		read := secretGets()
		Eventually(secretGets).WithTimeout(2 * tokenRereadRounds * round).Should(BeNumerically(">", read))
		quiet("rest-auth")
		Expect(testPeers.get(podIP(0)).Refused).To(BeZero(), "the peer refused the operator's token")
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
