package controllers

import (
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// withRound shortens the brokers' heartbeat the operator paces its reads by.
func withRound(seconds int32) func(*v1alpha1.NameServerCluster) {
	return func(c *v1alpha1.NameServerCluster) { c.Spec.BrokerHeartbeatSeconds = ptr.To(seconds) }
}

// podExists tells whether a pod of the cluster exists and is not going.
func podExists(g Gomega, ns, name string) bool {
	p := &corev1.Pod{}
	err := k8sClient.Get(testCtx, key(ns, name), p)
	if apierrors.IsNotFound(err) {
		return false
	}
	g.Expect(err).NotTo(HaveOccurred())
	return p.DeletionTimestamp == nil
}

// metricValue reads one series of the manager's registry, -999 when absent.
func metricValue(name string, labels map[string]string) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			return value(m)
		}
	}
	return -999
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	return -999
}

var _ = Describe("Route continuity", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace(nil) })

	It("publishes a new peer to clients only once it holds every broker of the serving peers, and tells it what to wait for", func() {
		old := time.Now().Add(-time.Hour)
		b := testBroker("10.7.0.1:10911", old)
		newCluster(ns, "grow", withReplicas(2), withRound(1))
		for o := range 2 {
			testPeers.set(podIP(o), &fakePeer{Brokers: []peerstatus.Broker{b}})
		}
		readyPods(ns, "grow", 0, 1)
		settleStatefulSet(ns, "grow")
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "grow-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "grow", 2)))
			c := getCluster(g, ns, "grow")
			g.Expect(v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionRoutesConsistent)).To(HaveField("Reason", string(v1alpha1.ReasonConsistent)))
		}).Should(Succeed())

		By("scale-up: brokers learn of the new peer at once; clients do not")
		updateCluster(ns, "grow", func(c *v1alpha1.NameServerCluster) { c.Spec.Replicas = ptr.To[int32](3) })
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "grow-namesrv-addr-brokers")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "grow", 3)))
		}).Should(Succeed())
		testPeers.set(podIP(2), &fakePeer{Gated: true, Started: time.Now()})
		setPod(ns, "grow", 2, false, podIP(2))
		settleStatefulSet(ns, "grow")
		Eventually(func(g Gomega) {
			p := testPeers.get(podIP(2))
			g.Expect(p.GateRequests).NotTo(BeEmpty())
			g.Expect(p.GateRequests[len(p.GateRequests)-1].Expect).To(ConsistOf(b.BrokerKey), "the gate waits for the brokers the serving peers hold")
			g.Expect(p.Open).To(BeFalse())
		}).Should(Succeed())

		By("ready (its gate timed out) but still missing the broker: not published, and status says why")
		setPod(ns, "grow", 2, true, podIP(2))
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "grow")
			peer := c.Status.Peers[slices.IndexFunc(c.Status.Peers, func(p v1alpha1.PeerStatus) bool { return p.Ordinal == 2 })]
			g.Expect(peer.RouteComplete).To(HaveValue(BeFalse()))
			g.Expect(peer.MissingBrokers).To(ConsistOf("DefaultCluster/broker-10.7.0.1:10911@10.7.0.1:10911"))
			g.Expect(peer.Published).To(BeFalse())
			cond := v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionAddressesPublished)
			g.Expect(cond.Reason).To(Equal(string(v1alpha1.ReasonWaitingForPeers)))
			g.Expect(cond.Message).To(ContainSubstring("grow-2: route gate closed: 1 of 1 expected brokers missing; lacks 1 brokers of the serving peers"))
			g.Expect(v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionProgressing)).To(HaveField("Reason", string(v1alpha1.ReasonPublishing)))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(addressData(g, ns, "grow-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "grow", 2)))
		}, 3*time.Second).Should(Succeed())

		By("the broker registers with it: published at the next round, without any pod event")
		testPeers.edit(podIP(2), func(p *fakePeer) { p.Brokers = []peerstatus.Broker{testBroker("10.7.0.1:10911", time.Now())} })
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "grow-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "grow", 3)))
			g.Expect(meta.IsStatusConditionTrue(getCluster(g, ns, "grow").Status.Conditions, string(v1alpha1.ConditionAddressesPublished))).To(BeTrue())
		}, 5*time.Second).Should(Succeed())
		Eventually(func() float64 {
			return metricValue("kube_namesrv_cluster_published_peers", map[string]string{"namespace": ns, "name": "grow"})
		}).Should(BeEquivalentTo(3))
		Eventually(func() float64 {
			return metricValue("kube_namesrv_cluster_desired_peers", map[string]string{"namespace": ns, "name": "grow"})
		}).Should(BeEquivalentTo(3))
	})

	It("reports a broker missing from one serving peer, naming both, and clears once it arrives", func() {
		old := time.Now().Add(-time.Hour)
		a, b := testBroker("10.8.0.1:10911", old), testBroker("10.8.0.2:10911", old)
		newCluster(ns, "ap", withRound(1))
		for o := range 3 {
			testPeers.set(podIP(o), &fakePeer{Brokers: []peerstatus.Broker{a, b}})
		}
		readyPods(ns, "ap", 0, 1, 2)
		settleStatefulSet(ns, "ap")
		// Every peer is listed first: a peer that lacks a broker while it
		// becomes ready is held back from the list (the grow spec), and
		// whether the reconciler sees the pods ready one by one or together
		// is up to its timing. The case here is a listed peer losing one.
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "ap-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "ap", 3)))
		}).Should(Succeed())
		testPeers.edit(podIP(1), func(p *fakePeer) { p.Brokers = []peerstatus.Broker{a} })
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "ap")
			cond := v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionRoutesConsistent)
			g.Expect(cond).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", string(v1alpha1.ReasonBrokerMissing))))
			g.Expect(cond.Message).To(ContainSubstring("broker DefaultCluster/broker-10.8.0.2:10911@10.8.0.2:10911 is missing from peer ap-1"))
			g.Expect(eventReasons(g, ns, "ap")).To(ContainElement("Warning/RoutesInconsistent"))
		}).Should(Succeed())
		Eventually(func() float64 {
			return metricValue("kube_namesrv_cluster_routes_consistent", map[string]string{"namespace": ns, "name": "ap"})
		}).Should(BeEquivalentTo(0))
		Eventually(func() float64 {
			return metricValue("kube_namesrv_peer_missing_brokers", map[string]string{"namespace": ns, "name": "ap", "peer": "ap-1"})
		}).Should(BeEquivalentTo(1))

		testPeers.edit(podIP(1), func(p *fakePeer) { p.Brokers = []peerstatus.Broker{a, b} })
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "ap")
			g.Expect(meta.IsStatusConditionTrue(c.Status.Conditions, string(v1alpha1.ConditionRoutesConsistent))).To(BeTrue())
			g.Expect(eventReasons(g, ns, "ap")).To(ContainElement("Normal/RoutesConsistent"))
		}, 5*time.Second).Should(Succeed())
		Eventually(func() float64 {
			return metricValue("kube_namesrv_cluster_routes_consistent", map[string]string{"namespace": ns, "name": "ap"})
		}).Should(BeEquivalentTo(1))
	})

	It("rolls one peer at a time, and only while every other listed peer serves", func() {
		newCluster(ns, "roll")
		readyPods(ns, "roll", 0, 1, 2)
		settleStatefulSet(ns, "roll")
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "roll-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "roll", 3)))
		}).Should(Succeed())

		updateCluster(ns, "roll", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"scanNotActiveBrokerInterval": "6000"}
		})
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "roll")
			g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
			g.Expect(v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionProgressing)).To(HaveField("Reason", string(v1alpha1.ReasonRollingOut)),
				"the first status of a new template says it rolls, never Stable")
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			for o := range 3 {
				g.Expect(podExists(g, ns, podName("roll", o))).To(BeTrue(), "nothing restarts before the StatefulSet controller has the new revision")
			}
		}, 2*time.Second).Should(Succeed())

		Eventually(func(g Gomega) {
			cm := &corev1.ConfigMap{}
			g.Expect(k8sClient.Get(testCtx, key(ns, configName(g, ns, "roll")), cm)).To(Succeed())
			g.Expect(cm.Data["namesrv.properties"]).To(ContainSubstring("scanNotActiveBrokerInterval=6000"))
		}).Should(Succeed())
		observeRevision(ns, "roll", "r2")
		for _, next := range []int{2, 1, 0} {
			By("restarting " + podName("roll", next))
			Eventually(func(g Gomega) { g.Expect(podExists(g, ns, podName("roll", next))).To(BeFalse()) }).Should(Succeed())
			for o := range 3 {
				if o != next {
					Expect(podExists(Default, ns, podName("roll", o))).To(BeTrue(), "two peers restarted at once")
				}
			}
			setPodAt(ns, "roll", next, false, podIP(next), "r2", 9876)
			Consistently(func(g Gomega) {
				for o := range 3 {
					g.Expect(podExists(g, ns, podName("roll", o))).To(BeTrue(), "a peer restarted while %s did not serve", podName("roll", next))
				}
			}, 2*time.Second).Should(Succeed())
			setPodAt(ns, "roll", next, true, podIP(next), "r2", 9876)
		}
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "roll")
			g.Expect(c.Status.UpdatedReplicas).To(BeEquivalentTo(3))
			g.Expect(v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionProgressing)).To(HaveField("Reason", string(v1alpha1.ReasonStable)))
			g.Expect(eventReasons(g, ns, "roll")).To(ContainElement("Normal/RollingPeer"))
		}).Should(Succeed())
	})

	DescribeTable("a roll that starts while one peer is down restarts that one first and never the serving one",
		func(replicas int, down int) {
			newCluster(ns, "half", withReplicas(int32(replicas)))
			for o := range replicas {
				setPod(ns, "half", o, o != down, podIP(o))
			}
			settleStatefulSet(ns, "half")
			Eventually(func(g Gomega) {
				g.Expect(getCluster(g, ns, "half").Status.PublishedReplicas).To(BeEquivalentTo(replicas - 1))
			}).Should(Succeed())
			updateCluster(ns, "half", func(c *v1alpha1.NameServerCluster) { c.Spec.Image = "kube-namesrv/kube-namesrv:v0.0.2-test" })
			waitImage(ns, "half", "kube-namesrv/kube-namesrv:v0.0.2-test")
			observeRevision(ns, "half", "r2")
			Eventually(func(g Gomega) { g.Expect(podExists(g, ns, podName("half", down))).To(BeFalse()) }).Should(Succeed())
			setPodAt(ns, "half", down, false, podIP(down), "r2", 9876)
			Consistently(func(g Gomega) {
				for o := range replicas {
					g.Expect(podExists(g, ns, podName("half", o))).To(BeTrue())
				}
			}, 2*time.Second).Should(Succeed(), "a serving peer was restarted while the restarted one does not serve")
			setPodAt(ns, "half", down, true, podIP(down), "r2", 9876)
			Eventually(func(g Gomega) {
				c := getCluster(g, ns, "half")
				g.Expect(c.Status.PublishedReplicas).To(BeEquivalentTo(replicas))
				g.Expect(slices.ContainsFunc([]int{0, 1, 2}[:replicas], func(o int) bool { return o != down && !podExists(g, ns, podName("half", o)) })).To(BeTrue(),
					"the roll went on once the first peer served")
			}).Should(Succeed())
		},
		Entry("replicas 2, ordinal 0 down", 2, 0),
		Entry("replicas 3, ordinal 1 down", 3, 1),
	)

	It("holds a roll while paused and shows it, then goes on when resumed", func() {
		newCluster(ns, "pause", withReplicas(2), func(c *v1alpha1.NameServerCluster) { c.Spec.Paused = true })
		readyPods(ns, "pause", 0, 1)
		settleStatefulSet(ns, "pause")
		updateCluster(ns, "pause", func(c *v1alpha1.NameServerCluster) { c.Spec.Image = "kube-namesrv/kube-namesrv:v0.0.3-test" })
		waitImage(ns, "pause", "kube-namesrv/kube-namesrv:v0.0.3-test")
		observeRevision(ns, "pause", "r2")
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "pause")
			cond := v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionProgressing)
			g.Expect(cond).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", string(v1alpha1.ReasonRolloutPaused))))
			g.Expect(cond.Message).To(ContainSubstring("pause-0, pause-1 run an outdated pod template"))
			g.Expect(c.Status.UpdatedReplicas).To(BeEquivalentTo(0))
		}).Should(Succeed())
		Eventually(func() float64 {
			return metricValue("kube_namesrv_cluster_rollout_paused", map[string]string{"namespace": ns, "name": "pause"})
		}).Should(BeEquivalentTo(1))
		Consistently(func(g Gomega) {
			g.Expect(podExists(g, ns, "pause-0")).To(BeTrue())
			g.Expect(podExists(g, ns, "pause-1")).To(BeTrue())
		}, 2*time.Second).Should(Succeed())

		updateCluster(ns, "pause", func(c *v1alpha1.NameServerCluster) { c.Spec.Paused = false })
		Eventually(func(g Gomega) { g.Expect(podExists(g, ns, "pause-1")).To(BeFalse()) }).Should(Succeed())
	})

	It("holds a scale-down while the peers that would remain do not serve", func() {
		newCluster(ns, "hold", withDrain(2))
		readyPods(ns, "hold", 0, 1, 2)
		settleStatefulSet(ns, "hold")
		Eventually(func(g Gomega) {
			g.Expect(getCluster(g, ns, "hold").Status.PublishedReplicas).To(BeEquivalentTo(3))
		}).Should(Succeed())
		setPod(ns, "hold", 0, false, podIP(0))
		updateCluster(ns, "hold", func(c *v1alpha1.NameServerCluster) { c.Spec.Replicas = ptr.To[int32](1) })
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "hold")
			cond := v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionProgressing)
			g.Expect(cond).To(HaveField("Reason", string(v1alpha1.ReasonScaleDownHeld)))
			g.Expect(cond.Message).To(ContainSubstring("hold-0, which would remain, does not serve"))
			g.Expect(eventReasons(g, ns, "hold")).To(ContainElement("Warning/" + string(v1alpha1.ReasonScaleDownHeld)))
		}).Should(Succeed())
		Eventually(func() float64 {
			return metricValue("kube_namesrv_cluster_scale_down_held", map[string]string{"namespace": ns, "name": "hold"})
		}).Should(BeEquivalentTo(1))
		Consistently(func(g Gomega) {
			g.Expect(addressData(g, ns, "hold-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "hold", 3)))
			g.Expect(statefulSetReplicas(g, ns, "hold")).To(BeEquivalentTo(3))
		}, 2*time.Second).Should(Succeed())

		setPod(ns, "hold", 0, true, podIP(0))
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "hold-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "hold", 1)))
		}).Should(Succeed())
		Eventually(func(g Gomega) { g.Expect(statefulSetReplicas(g, ns, "hold")).To(BeEquivalentTo(1)) }, 10*time.Second).Should(Succeed())
	})

	It("after a full outage asks every gate to wait for the brokers live before, never for nothing", func() {
		b, recorded := testBroker("10.7.0.1:10911", time.Now().Add(-time.Hour)), testBroker("10.7.0.2:10911", time.Now().Add(-time.Hour))
		newCluster(ns, "outage", withReplicas(2), withRound(2))
		for o := range 2 {
			testPeers.set(podIP(o), &fakePeer{Brokers: []peerstatus.Broker{b}})
		}
		readyPods(ns, "outage", 0, 1)
		settleStatefulSet(ns, "outage")
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "outage")
			g.Expect(c.Status.PublishedReplicas).To(BeEquivalentTo(2))
			g.Expect(c.Status.LiveBrokers).To(ConsistOf(v1alpha1.BrokerRef{Cluster: b.Cluster, Addr: b.Addr}))
		}).Should(Succeed())

		By("every peer restarts at once: nobody can vouch for a complete table")
		for o := range 2 {
			testPeers.set(podIP(o), &fakePeer{Gated: true, Started: time.Now(), BootID: fmt.Sprint("after-", o),
				Record: &peerstatus.GateRecord{RecordedAt: time.Now().Add(-time.Minute), Brokers: []peerstatus.BrokerKey{recorded.BrokerKey}}})
			setPod(ns, "outage", o, false, podIP(o))
		}
		Eventually(func(g Gomega) {
			for o := range 2 {
				p := testPeers.get(podIP(o))
				g.Expect(p.GateRequests).NotTo(BeEmpty())
				last := p.GateRequests[len(p.GateRequests)-1]
				g.Expect(last.Expect).To(ConsistOf(b.BrokerKey, recorded.BrokerKey), "what was live before: as the operator saw it, and as the peer recorded it")
				g.Expect(last.WaitSeconds).To(Equal(3), "one 2 s broker round and a quarter")
				g.Expect(p.Open).To(BeFalse())
			}
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			for o := range 2 {
				for _, req := range testPeers.get(podIP(o)).GateRequests {
					g.Expect(req.Expect).NotTo(BeEmpty(), "a gate asked to wait for nothing opens at once")
				}
			}
		}, time.Second).Should(Succeed())

		By("the brokers register again: the gates open")
		for o := range 2 {
			testPeers.edit(podIP(o), func(p *fakePeer) { p.Brokers = []peerstatus.Broker{b, recorded} })
		}
		Eventually(func(g Gomega) {
			g.Expect(testPeers.get(podIP(0)).Open).To(BeTrue())
			g.Expect(testPeers.get(podIP(1)).Open).To(BeTrue())
		}).Should(Succeed())
	})

	It("moves to a new port in two rolls: the old port stays open until every list has moved and its readers have followed", func() {
		newCluster(ns, "port", withReplicas(2), withDrain(1))
		readyPods(ns, "port", 0, 1)
		settleStatefulSet(ns, "port")
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "port-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "port", 2)))
		}).Should(Succeed())
		updateCluster(ns, "port", func(c *v1alpha1.NameServerCluster) { c.Spec.Ports.Remoting = 9877 })
		Eventually(func(g Gomega) {
			sts := &appsv1.StatefulSet{}
			g.Expect(k8sClient.Get(testCtx, key(ns, "port"), sts)).To(Succeed())
			ctr := sts.Spec.Template.Spec.Containers[0]
			g.Expect(ctr.Ports).To(ContainElements(
				And(HaveField("Name", "remoting"), HaveField("ContainerPort", BeEquivalentTo(9877))),
				And(HaveField("Name", "remoting-9876"), HaveField("ContainerPort", BeEquivalentTo(9876)))))
			g.Expect(ctr.Args).To(ContainElements("--listen-port=9877", "--extra-listen-ports=9876"))
			svc := &corev1.Service{}
			g.Expect(k8sClient.Get(testCtx, key(ns, "port"), svc)).To(Succeed())
			g.Expect(svc.Spec.Ports).To(ContainElements(
				And(HaveField("Name", "remoting"), HaveField("Port", BeEquivalentTo(9877))),
				And(HaveField("Name", "remoting-9876"), HaveField("Port", BeEquivalentTo(9876)), HaveField("TargetPort.IntVal", BeEquivalentTo(9876)))),
				"the client Service keeps the old port while clients may still use it")
		}).Should(Succeed())
		observeRevision(ns, "port", "r2")
		Consistently(func(g Gomega) {
			g.Expect(addressData(g, ns, "port-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "port", 2)),
				"the new port was published before any peer listens on it")
		}, time.Second).Should(Succeed())

		Eventually(func(g Gomega) { g.Expect(podExists(g, ns, "port-1")).To(BeFalse()) }).Should(Succeed())
		setPodAt(ns, "port", 1, false, podIP(1), "r2", 9877)
		newPort := strings.Replace(peerAddr(ns, "port", 1), ":9876", ":9877", 1)
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "port-namesrv-addr-brokers")).To(HaveKeyWithValue("namesrvAddr", peerAddr(ns, "port", 0)+";"+newPort),
				"brokers learn the new port as soon as the peer listens on it")
		}).Should(Succeed())
		Expect(addressData(Default, ns, "port-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "port", 2)))
		setPodAt(ns, "port", 1, true, podIP(1), "r2", 9877)
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "port-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerAddr(ns, "port", 0)+";"+newPort))
			g.Expect(addressData(g, ns, "port-namesrv-addr-ips")).To(HaveKeyWithValue("namesrvAddrIPs", podIP(0)+":9876;"+podIP(1)+":9877"))
		}).Should(Succeed())

		By("the second peer moves too; a drain later, the old port leaves the template")
		Eventually(func(g Gomega) { g.Expect(podExists(g, ns, "port-0")).To(BeFalse()) }).Should(Succeed())
		setPodAt(ns, "port", 0, true, podIP(0), "r2", 9877)
		newPort0 := strings.Replace(peerAddr(ns, "port", 0), ":9876", ":9877", 1)
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "port-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", newPort0+";"+newPort))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			sts := &appsv1.StatefulSet{}
			g.Expect(k8sClient.Get(testCtx, key(ns, "port"), sts)).To(Succeed())
			g.Expect(sts.Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement(HavePrefix("--extra-listen-ports")))
			svc := &corev1.Service{}
			g.Expect(k8sClient.Get(testCtx, key(ns, "port"), svc)).To(Succeed())
			g.Expect(svc.Spec.Ports).To(HaveLen(2), "the client Service dropped the old port with the template")
		}, 10*time.Second).Should(Succeed())
	})
})

// waitImage waits until the operator applied a new image to the template,
// before the test plays the StatefulSet controller observing it.
func waitImage(ns, name, image string) {
	Eventually(func(g Gomega) {
		sts := &appsv1.StatefulSet{}
		g.Expect(k8sClient.Get(testCtx, key(ns, name), sts)).To(Succeed())
		g.Expect(sts.Spec.Template.Spec.Containers[0].Image).To(Equal(image))
	}).Should(Succeed())
}

func podName(cluster string, ordinal int) string { return fmt.Sprintf("%s-%d", cluster, ordinal) }
