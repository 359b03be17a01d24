package controllers

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

// The defaults that make a NameServerCluster a drop-in for an Apache
// NameService, and the production defaults for zones, storage, stuck
// nodes, memory and an outdated CRD.
var _ = Describe("Adoption and production defaults", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace(nil) })

	It("runs on the host network and publishes node IPs", func() {
		newCluster(ns, "hn", withReplicas(2), func(c *v1alpha1.NameServerCluster) { c.Spec.HostNetwork = true })
		sts := &appsv1.StatefulSet{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(testCtx, key(ns, "hn"), sts)).To(Succeed())
		}).Should(Succeed())
		pod := sts.Spec.Template.Spec
		Expect(pod.HostNetwork).To(BeTrue())
		Expect(pod.DNSPolicy).To(Equal(corev1.DNSClusterFirstWithHostNet))
		Expect(pod.Containers[0].Ports).To(ContainElements(
			HaveField("HostPort", BeEquivalentTo(9876)), HaveField("HostPort", BeEquivalentTo(8080))))

		nodeIP := func(o int) string { return fmt.Sprintf("192.168.%d.%d", 1+specNet%250, o+10) }
		for o := range 2 {
			setPod(ns, "hn", o, true, nodeIP(o))
			setHost(ns, fmt.Sprintf("hn-%d", o), "", nodeIP(o))
		}
		settleStatefulSet(ns, "hn")
		want := nodeIP(0) + ":9876;" + nodeIP(1) + ":9876"
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "hn-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", want))
			g.Expect(addressData(g, ns, "hn-namesrv-addr-brokers")).To(HaveKeyWithValue("namesrvAddr", want))
			c := getCluster(g, ns, "hn")
			g.Expect(c.Status.Peers).To(HaveLen(2))
			g.Expect(c.Status.Peers[1].Address).To(Equal(nodeIP(1) + ":9876"))
		}).Should(Succeed())
	})

	It("spreads the peers across zones beside the per-node anti-affinity, and shows each peer's node and zone", func() {
		for _, n := range []struct{ name, zone string }{{"node-a-" + ns, "zone-a"}, {"node-b-" + ns, "zone-b"}} {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{corev1.LabelTopologyZone: n.zone}}}
			Expect(k8sClient.Create(testCtx, node)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(testCtx, node))).To(Succeed()) })
		}
		newCluster(ns, "zones", withReplicas(2), func(c *v1alpha1.NameServerCluster) {
			c.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "mq", Operator: corev1.NodeSelectorOpExists}}}},
			}}}
		})
		sts := &appsv1.StatefulSet{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(testCtx, key(ns, "zones"), sts)).To(Succeed())
		}).Should(Succeed())
		pod := sts.Spec.Template.Spec
		Expect(pod.TopologySpreadConstraints).To(ConsistOf(And(
			HaveField("TopologyKey", corev1.LabelTopologyZone), HaveField("WhenUnsatisfiable", corev1.ScheduleAnyway), HaveField("MaxSkew", BeEquivalentTo(1)))))
		Expect(pod.Affinity.NodeAffinity).NotTo(BeNil(), "the user's node affinity")
		Expect(pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution).To(ConsistOf(
			HaveField("PodAffinityTerm.TopologyKey", corev1.LabelHostname)), "the default anti-affinity stays beside a node affinity")

		readyPods(ns, "zones", 0, 1)
		setHost(ns, "zones-0", "node-a-"+ns, "")
		setHost(ns, "zones-1", "node-b-"+ns, "")
		settleStatefulSet(ns, "zones")
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "zones")
			g.Expect(c.Status.Peers).To(HaveLen(2))
			g.Expect(c.Status.Peers[0]).To(And(HaveField("Node", "node-a-"+ns), HaveField("Zone", "zone-a")))
			g.Expect(c.Status.Peers[1]).To(And(HaveField("Node", "node-b-"+ns), HaveField("Zone", "zone-b")))
		}).Should(Succeed())
	})

	It("keeps the memory defaults when the spec sets only a CPU request, with GOMEMLIMIT at 90% of the limit", func() {
		newCluster(ns, "mem", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		})
		sts := &appsv1.StatefulSet{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(testCtx, key(ns, "mem"), sts)).To(Succeed())
		}).Should(Succeed())
		ctr := sts.Spec.Template.Spec.Containers[0]
		Expect(ctr.Resources.Requests).To(And(
			HaveKeyWithValue(corev1.ResourceCPU, resource.MustParse("1")), HaveKeyWithValue(corev1.ResourceMemory, resource.MustParse("256Mi"))))
		Expect(ctr.Resources.Limits).To(HaveKeyWithValue(corev1.ResourceMemory, resource.MustParse("512Mi")))
		Expect(ctr.Env).To(ContainElement(corev1.EnvVar{Name: "GOMEMLIMIT", Value: "483183819"}))
	})

	DescribeTable("refuses a Java RocketMQ image, which has no /namesrv",
		func(image string, refused bool) {
			c := &v1alpha1.NameServerCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "img"}, Spec: v1alpha1.NameServerClusterSpec{Image: image}}
			err := k8sClient.Create(testCtx, c, client.DryRunAll)
			if !refused {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring("spec.image names a Java RocketMQ image"))
		},
		Entry("apache/rocketmq", "apache/rocketmq:5.3.1", true),
		Entry("the NameServer image of the Apache operator", "apacherocketmq/rocketmq-nameserver:4.5.0-alpine-operator-0.3.0", true),
		Entry("a mirror with a registry port", "registry.example:5000/mirror/rocketmq:4.9.8", true),
		Entry("a digest", "apache/rocketmq@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", true),
		Entry("an organisation named rocketmq", "rocketmq/namesrv:5", true),
		Entry("this project's image", "kube-namesrv/kube-namesrv:v1.2.3", false),
		Entry("a mirror of this project's image under a rocketmq path", "registry.example/rocketmq-team/kube-namesrv:v1", false),
		Entry("rocketmq only in the tag", "registry.example/namesrv:rocketmq-5", false),
	)

	It("lets the claim size grow, refuses a shrink or another change, and lets the retention policy change", func() {
		size := func(q string) *v1alpha1.Storage {
			return &v1alpha1.Storage{VolumeClaimTemplate: &v1alpha1.VolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(q)}},
			}}}
		}
		newCluster(ns, "grow", func(c *v1alpha1.NameServerCluster) { c.Spec.Storage = size("1Gi") })
		Eventually(func(g Gomega) { g.Expect(k8sClient.Get(testCtx, key(ns, "grow"), &appsv1.StatefulSet{})).To(Succeed()) }).Should(Succeed())
		// An update the API server refuses as invalid, retried while the
		// operator's status writes make it conflict.
		try := func(edit func(*v1alpha1.NameServerCluster)) error {
			var err error
			Eventually(func(g Gomega) {
				c := getCluster(g, ns, "grow")
				edit(c)
				err = k8sClient.Update(testCtx, c)
				g.Expect(apierrors.IsConflict(err)).To(BeFalse())
			}).Should(Succeed())
			return err
		}
		err := try(func(c *v1alpha1.NameServerCluster) {
			c.Spec.Storage.VolumeClaimTemplate.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("512Mi")
		})
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("cannot shrink"))
		err = try(func(c *v1alpha1.NameServerCluster) {
			c.Spec.Storage.VolumeClaimTemplate.Spec.StorageClassName = ptr.To("other")
		})
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("can change only in spec.resources.requests.storage"))
		err = try(func(c *v1alpha1.NameServerCluster) { c.Spec.Storage = nil })
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)

		updateCluster(ns, "grow", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Storage.VolumeClaimTemplate.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
			c.Spec.Storage.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
		})
		Eventually(func(g Gomega) {
			sts := &appsv1.StatefulSet{}
			g.Expect(k8sClient.Get(testCtx, key(ns, "grow"), sts)).To(Succeed())
			g.Expect(sts.Spec.PersistentVolumeClaimRetentionPolicy).To(HaveValue(Equal(appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType})))
			g.Expect(sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests).To(HaveKeyWithValue(corev1.ResourceStorage, resource.MustParse("1Gi")),
				"the claim template keeps its size: it is immutable")
			c := getCluster(g, ns, "grow")
			g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
			g.Expect(conditionOf(c, v1alpha1.ConditionDegraded)).To(HaveField("Status", metav1.ConditionFalse), "nothing refused the new generation")
		}).Should(Succeed())
	})

	It("expands the peers' claims where the StorageClass allows it, and says why where it does not", func() {
		expandable := newStorageClass(true)
		fixed := newStorageClass(false)
		storage := func(class string) func(*v1alpha1.NameServerCluster) {
			return func(c *v1alpha1.NameServerCluster) {
				c.Spec.Storage = &v1alpha1.Storage{VolumeClaimTemplate: &v1alpha1.VolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: ptr.To(class),
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				}}}
			}
		}
		newCluster(ns, "exp", withReplicas(2), storage(expandable))
		newCluster(ns, "fix", withReplicas(1), storage(fixed))
		for _, cl := range []struct {
			name, class string
			n           int
		}{{"exp", expandable, 2}, {"fix", fixed, 1}} {
			Eventually(func(g Gomega) {
				g.Expect(k8sClient.Get(testCtx, key(ns, cl.name), &appsv1.StatefulSet{})).To(Succeed())
			}).Should(Succeed())
			for o := range cl.n {
				boundClaim(ns, cl.name, o, cl.class, "1Gi")
			}
		}
		for _, name := range []string{"exp", "fix"} {
			updateCluster(ns, name, func(c *v1alpha1.NameServerCluster) {
				c.Spec.Storage.VolumeClaimTemplate.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("3Gi")
			})
		}
		Eventually(func(g Gomega) {
			for o := range 2 {
				pvc := &corev1.PersistentVolumeClaim{}
				g.Expect(k8sClient.Get(testCtx, key(ns, fmt.Sprintf("data-exp-%d", o)), pvc)).To(Succeed())
				g.Expect(pvc.Spec.Resources.Requests).To(HaveKeyWithValue(corev1.ResourceStorage, resource.MustParse("3Gi")))
			}
			g.Expect(eventReasons(g, ns, "exp")).To(ContainElement("Normal/" + string(v1alpha1.EventVolumeExpanded)))
			g.Expect(conditionOf(getCluster(g, ns, "exp"), v1alpha1.ConditionDegraded)).To(HaveField("Status", metav1.ConditionFalse))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			d := conditionOf(getCluster(g, ns, "fix"), v1alpha1.ConditionDegraded)
			g.Expect(d).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", string(v1alpha1.RefusalVolumeExpansion))))
			g.Expect(d.Message).To(And(ContainSubstring("claim data-fix-0"), ContainSubstring("does not set allowVolumeExpansion"), ContainSubstring("set the size back to 1Gi")))
			g.Expect(eventReasons(g, ns, "fix")).To(ContainElement("Warning/" + string(v1alpha1.RefusalVolumeExpansion)))
			pvc := &corev1.PersistentVolumeClaim{}
			g.Expect(k8sClient.Get(testCtx, key(ns, "data-fix-0"), pvc)).To(Succeed())
			g.Expect(pvc.Spec.Resources.Requests).To(HaveKeyWithValue(corev1.ResourceStorage, resource.MustParse("1Gi")))
		}).Should(Succeed())
	})

	It("names a pod stuck terminating, its node and since when, until it is gone", func() {
		// A manager that takes a pod for stuck one second after its grace
		// period, instead of a minute.
		stopManager()
		stopManager = runManager(nil, nil, func(r *NameServerClusterReconciler) { r.StuckAfter = time.Second })
		DeferCleanup(func() {
			stopManager()
			startManager(nil)
		})
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dead-" + ns, Labels: map[string]string{corev1.LabelTopologyZone: "zone-d"}}}
		Expect(k8sClient.Create(testCtx, node)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(testCtx, node))).To(Succeed()) })
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(testCtx, key("", node.Name), node)).To(Succeed())
			node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
			g.Expect(k8sClient.Status().Update(testCtx, node)).To(Succeed())
		}).Should(Succeed())

		newCluster(ns, "stuck", withReplicas(2))
		readyPods(ns, "stuck", 0, 1)
		setHost(ns, "stuck-1", node.Name, "")
		settleStatefulSet(ns, "stuck")
		// Without a kubelet to confirm it, a scheduled pod stays
		// terminating after its grace period, as on a dead node.
		pod := &corev1.Pod{}
		Expect(k8sClient.Get(testCtx, key(ns, "stuck-1"), pod)).To(Succeed())
		Expect(k8sClient.Delete(testCtx, pod, client.GracePeriodSeconds(1))).To(Succeed())
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "stuck")
			p := peerIn(c.Status.Peers, 1)
			g.Expect(p).NotTo(BeNil())
			g.Expect(p.StuckTerminatingSince).NotTo(BeNil())
			g.Expect(p.Node).To(Equal(node.Name))
			g.Expect(p.Zone).To(Equal("zone-d"))
			g.Expect(p.Message).To(And(ContainSubstring("stuck terminating on node "+node.Name+" since "+p.StuckTerminatingSince.UTC().Format(time.RFC3339)),
				ContainSubstring("is not ready (Ready=Unknown"), ContainSubstring("NamesrvPodStuckTerminating")))
			g.Expect(eventReasons(g, ns, "stuck")).To(ContainElement("Warning/" + string(v1alpha1.EventPodStuck)))
		}).Should(Succeed())

		By("the pod force-deleted, status forgets it")
		Expect(k8sClient.Delete(testCtx, pod, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "stuck")
			p := peerIn(c.Status.Peers, 1)
			g.Expect(p).NotTo(BeNil())
			g.Expect(p.StuckTerminatingSince).To(BeNil())
			g.Expect(p.Message).To(ContainSubstring("its pod does not exist yet"))
		}).Should(Succeed())
	})

	It("says so when the installed CRD is older than the operator, instead of silently losing status fields", func() {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(k8sClient.Get(testCtx, key("", "nameserverclusters.rocketmq.kube-namesrv.io"), crd)).To(Succeed())
		original := crd.DeepCopy()
		DeferCleanup(func() { restoreCRD(original) })
		By("a CRD without status.peers[].node and zone, as the release before them")
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(testCtx, key("", crd.Name), crd)).To(Succeed())
			peer := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties["peers"].Items.Schema
			delete(peer.Properties, "node")
			delete(peer.Properties, "zone")
			g.Expect(k8sClient.Update(testCtx, crd)).To(Succeed())
		}).Should(Succeed())

		newCluster(ns, "skew", withReplicas(1))
		readyPods(ns, "skew", 0)
		setHost(ns, "skew-0", "skew-node-"+ns, "")
		settleStatefulSet(ns, "skew")
		Eventually(func(g Gomega) {
			d := conditionOf(getCluster(g, ns, "skew"), v1alpha1.ConditionDegraded)
			g.Expect(d).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", string(v1alpha1.RefusalCRDOutdated))))
			g.Expect(d.Message).To(And(ContainSubstring("status.peers[].node"), ContainSubstring("apply the CRD of the operator's release")))
			g.Expect(eventReasons(g, ns, "skew")).To(ContainElement("Warning/" + string(v1alpha1.RefusalCRDOutdated)))
		}).Should(Succeed())

		By("the CRD upgraded, the condition clears and the fields are kept")
		restoreCRD(original)
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "skew")
			g.Expect(conditionOf(c, v1alpha1.ConditionDegraded)).To(HaveField("Status", metav1.ConditionFalse))
			g.Expect(c.Status.Peers).To(ContainElement(HaveField("Node", "skew-node-"+ns)))
		}).Should(Succeed())
	})
})

// conditionOf is a condition of a cluster, never nil.
func conditionOf(c *v1alpha1.NameServerCluster, t v1alpha1.ConditionType) metav1.Condition {
	if cond := v1alpha1.FindCondition(c.Status.Conditions, t); cond != nil {
		return *cond
	}
	return metav1.Condition{}
}

// setHost plays the scheduler and the kubelet: the pod's node and, when
// given, its host IP.
func setHost(ns, name, node, hostIP string) {
	pod := &corev1.Pod{}
	if node != "" {
		// spec.nodeName is set once, by a binding.
		Expect(k8sClient.Get(testCtx, key(ns, name), pod)).To(Succeed())
		binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
		Expect(k8sClient.SubResource("binding").Create(testCtx, pod, binding)).To(Succeed())
	}
	if hostIP == "" {
		return
	}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(testCtx, key(ns, name), pod)).To(Succeed())
		pod.Status.HostIP = hostIP
		pod.Status.HostIPs = []corev1.HostIP{{IP: hostIP}}
		g.Expect(k8sClient.Status().Update(testCtx, pod)).To(Succeed())
	}).Should(Succeed())
}

// newStorageClass creates a StorageClass that allows volume expansion or
// not, deleted after the spec.
func newStorageClass(expand bool) string {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{GenerateName: "sc-"}, Provisioner: "example.com/test", AllowVolumeExpansion: ptr.To(expand)}
	Expect(k8sClient.Create(testCtx, sc)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(testCtx, sc))).To(Succeed()) })
	return sc.Name
}

// boundClaim plays the StatefulSet controller and a provisioner: a peer's
// claim, bound, which only bound claims may grow.
func boundClaim(ns, cluster string, ordinal int, class, size string) {
	name := fmt.Sprintf("data-%s-%d", cluster, ordinal)
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{render.LabelName: render.AppName, render.LabelInstance: cluster}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(class),
			VolumeName:       "pv-" + strings.ReplaceAll(name, ".", "-") + "-" + ns,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
	Expect(k8sClient.Create(testCtx, pvc)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(testCtx, key(ns, name), pvc)).To(Succeed())
		pvc.Status.Phase = corev1.ClaimBound
		pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}
		g.Expect(k8sClient.Status().Update(testCtx, pvc)).To(Succeed())
	}).Should(Succeed())
}

// restoreCRD puts the CRD's schema back as it was read.
func restoreCRD(original *apiextensionsv1.CustomResourceDefinition) {
	Eventually(func(g Gomega) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(k8sClient.Get(testCtx, key("", original.Name), crd)).To(Succeed())
		crd.Spec = original.Spec
		g.Expect(k8sClient.Update(testCtx, crd)).To(Succeed())
	}).Should(Succeed())
}
