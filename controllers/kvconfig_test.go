package controllers

import (
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// kvFileOf reads the declared-KV file the operator rendered, and its digest.
func kvFileOf(g Gomega, ns, name string) (peerstatus.KVFile, string) {
	data := addressData(g, ns, name+"-kv")[render.KVKey]
	var f peerstatus.KVFile
	g.Expect(json.Unmarshal([]byte(data), &f)).To(Succeed())
	return f, peerstatus.Digest([]byte(data))
}

var _ = Describe("Declared KV config", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace(nil) })

	orderConf := []v1alpha1.KVConfigEntry{
		{Namespace: "ORDER_TOPIC_CONFIG", Key: "TopicA", Value: "broker-a:4;broker-b:4"},
		{Namespace: "ORDER_TOPIC_CONFIG", Key: "TopicB", Value: "broker-a:8"},
	}

	It("renders spec.kvConfig for every pod without rolling them, corrects drift under Owned, and removes dropped entries", func() {
		newCluster(ns, "kv", withReplicas(2), withRound(1), func(c *v1alpha1.NameServerCluster) { c.Spec.KVConfig = orderConf })
		var digest string
		Eventually(func(g Gomega) {
			f, d := kvFileOf(g, ns, "kv")
			g.Expect(f.Policy).To(Equal(peerstatus.PolicyOwned))
			g.Expect(f.ConfigTable).To(Equal(map[string]map[string]string{"ORDER_TOPIC_CONFIG": {"TopicA": "broker-a:4;broker-b:4", "TopicB": "broker-a:8"}}))
			digest = d
		}).Should(Succeed())
		sts := &appsv1.StatefulSet{}
		Eventually(func() error { return k8sClient.Get(testCtx, key(ns, "kv"), sts) }).Should(Succeed())
		checksum := sts.Spec.Template.Annotations[render.AnnotationConfigChecksum]

		By("peer 1 holds a value changed by hand: reported, then set back")
		testPeers.set(podIP(0), &fakePeer{KV: &peerstatus.KVStatus{Digest: digest, Policy: "Owned", InSync: true}})
		testPeers.set(podIP(1), &fakePeer{
			KV: &peerstatus.KVStatus{Digest: digest, Policy: "Owned", Drift: []peerstatus.KVDrift{
				{Namespace: "ORDER_TOPIC_CONFIG", Key: "TopicA", Reason: peerstatus.DriftDiffers}}},
			OnApply: &peerstatus.KVStatus{Digest: digest, Policy: "Owned", InSync: true},
		})
		readyPods(ns, "kv", 0, 1)
		settleStatefulSet(ns, "kv")
		Eventually(func(g Gomega) {
			g.Expect(testPeers.get(podIP(1)).KVApplies).To(BeNumerically(">=", 1))
			g.Expect(testPeers.get(podIP(0)).KVApplies).To(BeZero())
			g.Expect(eventReasons(g, ns, "kv")).To(ContainElement("Warning/KVConfigCorrected"))
			c := getCluster(g, ns, "kv")
			g.Expect(v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionKVConfigInSync)).To(HaveField("Reason", string(v1alpha1.ReasonInSync)))
			g.Expect(c.Status.KVConfig).To(HaveValue(HaveField("Declared", ConsistOf("ORDER_TOPIC_CONFIG/TopicA", "ORDER_TOPIC_CONFIG/TopicB"))))
			g.Expect(c.Status.PublishedReplicas).To(BeEquivalentTo(2))
		}).Should(Succeed())

		By("an entry removed from the spec is removed from every peer, and forgotten once they all hold that")
		updateCluster(ns, "kv", func(c *v1alpha1.NameServerCluster) { c.Spec.KVConfig = orderConf[:1] })
		Eventually(func(g Gomega) {
			f, d := kvFileOf(g, ns, "kv")
			g.Expect(f.Removed).To(Equal(map[string][]string{"ORDER_TOPIC_CONFIG": {"TopicB"}}))
			digest = d
			c := getCluster(g, ns, "kv")
			g.Expect(v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionKVConfigInSync)).To(HaveField("Reason", string(v1alpha1.ReasonKVNotDelivered)))
		}).Should(Succeed())
		for o := range 2 {
			testPeers.edit(podIP(o), func(p *fakePeer) { p.KV = &peerstatus.KVStatus{Digest: digest, Policy: "Owned", InSync: true} })
		}
		Eventually(func(g Gomega) {
			f, _ := kvFileOf(g, ns, "kv")
			g.Expect(f.Removed).To(BeEmpty())
			g.Expect(getCluster(g, ns, "kv").Status.KVConfig).To(HaveValue(HaveField("Removed", BeEmpty())))
		}, 5*time.Second).Should(Succeed())
		Expect(k8sClient.Get(testCtx, key(ns, "kv"), sts)).To(Succeed())
		Expect(sts.Spec.Template.Annotations[render.AnnotationConfigChecksum]).To(Equal(checksum), "a kvConfig change rolled the pods")
	})

	It("under Additive writes a declared key deleted by hand again, only reports a hand-made value, and never publishes a peer that lacks a declared key", func() {
		newCluster(ns, "add", withReplicas(2), withRound(1), func(c *v1alpha1.NameServerCluster) {
			c.Spec.KVConfig = orderConf
			c.Spec.KVConfigPolicy = v1alpha1.KVConfigAdditive
		})
		var digest string
		Eventually(func(g Gomega) {
			f, d := kvFileOf(g, ns, "add")
			g.Expect(f.Policy).To(Equal(peerstatus.PolicyAdditive))
			digest = d
		}).Should(Succeed())
		missing := &peerstatus.KVStatus{Digest: digest, Policy: "Additive", Drift: []peerstatus.KVDrift{
			{Namespace: "ORDER_TOPIC_CONFIG", Key: "TopicB", Reason: peerstatus.DriftMissing}}}
		testPeers.set(podIP(0), &fakePeer{KV: &peerstatus.KVStatus{Digest: digest, Policy: "Additive", InSync: true}})
		// Its store refuses the write at first: the apply leaves it lacking.
		testPeers.set(podIP(1), &fakePeer{KV: missing, OnApply: missing})
		readyPods(ns, "add", 0, 1)
		settleStatefulSet(ns, "add")
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "add")
			cond := v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionKVConfigInSync)
			g.Expect(cond).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", string(v1alpha1.ReasonKVDrift))))
			g.Expect(cond.Message).To(Equal("peer add-1: ORDER_TOPIC_CONFIG/TopicB: missing"))
			g.Expect(eventReasons(g, ns, "add")).To(ContainElement("Warning/KVConfigDrift"))
			g.Expect(testPeers.get(podIP(1)).KVApplies).To(BeNumerically(">", 0), "the missing key was not written again")
			g.Expect(c.Status.Addresses).To(Equal([]string{peerAddr(ns, "add", 0)}), "a peer without the declared values was sent clients")
		}).Should(Succeed())

		By("once the apply writes the key, the peer joins")
		testPeers.edit(podIP(1), func(p *fakePeer) { p.OnApply = &peerstatus.KVStatus{Digest: digest, Policy: "Additive", InSync: true} })
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "add")
			g.Expect(c.Status.PublishedReplicas).To(BeEquivalentTo(2))
			g.Expect(eventReasons(g, ns, "add")).To(ContainElement("Warning/" + string(v1alpha1.EventKVConfigCorrected)))
		}).Should(Succeed())

		By("a value changed by hand on a published peer is reported and left alone")
		testPeers.edit(podIP(1), func(p *fakePeer) {
			// As a real NameServer reports it: in sync with Additive, the
			// value listed as drift.
			p.KV = &peerstatus.KVStatus{Digest: digest, Policy: "Additive", InSync: true, Drift: []peerstatus.KVDrift{
				{Namespace: "ORDER_TOPIC_CONFIG", Key: "TopicB", Reason: peerstatus.DriftDiffers}}}
		})
		applies := testPeers.get(podIP(1)).KVApplies
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "add")
			g.Expect(v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionKVConfigInSync)).To(HaveField("Message", "peer add-1: ORDER_TOPIC_CONFIG/TopicB: differs"))
			g.Expect(c.Status.PublishedReplicas).To(BeEquivalentTo(2), "a tolerated hand-made value kept a peer from clients")
		}, 5*time.Second).Should(Succeed())
		Eventually(func() float64 {
			return metricValue("kube_namesrv_cluster_kv_config_in_sync", map[string]string{"namespace": ns, "name": "add"})
		}).Should(BeEquivalentTo(0))
		Eventually(func() float64 {
			return metricValue("kube_namesrv_peer_kv_drift_keys", map[string]string{"namespace": ns, "name": "add", "peer": "add-1"})
		}).Should(BeEquivalentTo(1))
		Consistently(func() int { return testPeers.get(podIP(1)).KVApplies }, 2*time.Second).Should(Equal(applies), "Additive overwrote a hand-made value")
	})
})
