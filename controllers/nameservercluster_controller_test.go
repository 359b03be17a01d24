package controllers

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

var _ = Describe("NameServerCluster", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace(nil) })

	It("creates every child as specified, then writes nothing more", func() {
		newCluster(ns, "alpha")

		sts := &appsv1.StatefulSet{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(testCtx, key(ns, "alpha"), sts)).To(Succeed())
		}).Should(Succeed())
		Expect(sts.Spec.Replicas).To(HaveValue(BeEquivalentTo(3)))
		Expect(sts.Spec.ServiceName).To(Equal("alpha-headless"))
		Expect(sts.OwnerReferences).To(ConsistOf(HaveField("Name", "alpha")))
		pod := sts.Spec.Template.Spec
		Expect(pod.Containers).To(HaveLen(1))
		ctr := pod.Containers[0]
		Expect(ctr.Image).To(Equal(testImage))
		Expect(ctr.Command).To(Equal([]string{"/namesrv"}))
		Expect(ctr.Args).To(ContainElements("--listen-port=9876", "--http-port=8080", "--address-file=/etc/namesrv-addr/namesrvAddr",
			"--broker-address-file=/etc/namesrv-broker-addr/namesrvAddr", "--kv-declared-file=/etc/namesrv-kv/kvConfig.json"))
		Expect(sts.Spec.UpdateStrategy.Type).To(Equal(appsv1.OnDeleteStatefulSetStrategyType), "the operator paces rolls itself")
		Expect(sts.Spec.PersistentVolumeClaimRetentionPolicy).To(HaveValue(Equal(appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenScaled: appsv1.DeletePersistentVolumeClaimRetentionPolicyType, WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType})))
		By("production defaults: requests and a memory limit, GOMEMLIMIT at 90% of it, a preStop pause")
		Expect(ctr.Resources.Requests).To(And(HaveKey(corev1.ResourceCPU), HaveKey(corev1.ResourceMemory)))
		Expect(ctr.Resources.Limits).To(HaveKeyWithValue(corev1.ResourceMemory, resource.MustParse("512Mi")))
		Expect(ctr.Env).To(ContainElement(corev1.EnvVar{Name: "GOMEMLIMIT", Value: "483183819"}))
		Expect(ctr.Lifecycle.PreStop.Sleep.Seconds).To(BeEquivalentTo(render.PreStopSeconds))
		Expect(ctr.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
		Expect(ctr.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
		Expect(ctr.ReadinessProbe.HTTPGet.Port).To(Equal(intstr.FromString("http")))
		Expect(ctr.SecurityContext.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
		Expect(ctr.SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
		Expect(pod.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
		Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
		Expect(pod.TerminationGracePeriodSeconds).To(HaveValue(BeEquivalentTo(30)))
		Expect(ctr.VolumeMounts).To(ContainElements(
			And(HaveField("Name", "namesrv-addr"), HaveField("MountPath", "/etc/namesrv-addr"), HaveField("ReadOnly", true)),
			And(HaveField("Name", "namesrv-broker-addr"), HaveField("MountPath", "/etc/namesrv-broker-addr"), HaveField("ReadOnly", true)),
			And(HaveField("Name", "namesrv-kv"), HaveField("MountPath", "/etc/namesrv-kv"), HaveField("ReadOnly", true))))
		Expect(pod.Volumes).To(ContainElements(
			And(HaveField("Name", "namesrv-addr"), HaveField("ConfigMap.LocalObjectReference.Name", "alpha-namesrv-addr"), HaveField("ConfigMap.Optional", HaveValue(BeTrue()))),
			And(HaveField("Name", "namesrv-broker-addr"), HaveField("ConfigMap.LocalObjectReference.Name", "alpha-namesrv-addr-brokers")),
			And(HaveField("Name", "namesrv-kv"), HaveField("ConfigMap.LocalObjectReference.Name", "alpha-kv"))))
		Expect(sts.Spec.Template.Annotations).To(HaveKey(render.AnnotationConfigChecksum))

		for _, name := range []string{"alpha-headless", "alpha"} {
			svc := &corev1.Service{}
			Eventually(func() error { return k8sClient.Get(testCtx, key(ns, name), svc) }).Should(Succeed())
			Expect(svc.Spec.Ports).To(ConsistOf(
				And(HaveField("Name", "remoting"), HaveField("Port", BeEquivalentTo(9876))),
				And(HaveField("Name", "http"), HaveField("Port", BeEquivalentTo(8080)))))
			Expect(svc.Spec.Selector).To(Equal(map[string]string{render.LabelName: render.AppName, render.LabelInstance: "alpha"}))
		}
		headless := &corev1.Service{}
		Expect(k8sClient.Get(testCtx, key(ns, "alpha-headless"), headless)).To(Succeed())
		Expect(headless.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
		Expect(headless.Spec.PublishNotReadyAddresses).To(BeTrue())

		Eventually(func(g Gomega) {
			cm := &corev1.ConfigMap{}
			g.Expect(k8sClient.Get(testCtx, key(ns, configName(g, ns, "alpha")), cm)).To(Succeed())
			g.Expect(cm.Data).To(HaveKey("namesrv.properties"))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			domain := "alpha." + ns + ".svc.cluster.local:8080"
			g.Expect(addressData(g, ns, "alpha-namesrv-addr")).To(Equal(map[string]string{
				"namesrvAddr": "", "NAMESRV_ADDR": "",
				"rocketmq.namesrv.domain": domain, "rocketmq.namesrv.domain.subgroup": "nsaddr",
			}), "nothing serves yet: the client list is empty")
			g.Expect(addressData(g, ns, "alpha-namesrv-addr-brokers")).To(Equal(map[string]string{
				"namesrvAddr": peerList(ns, "alpha", 3), "NAMESRV_ADDR": peerList(ns, "alpha", 3),
				"rmqAddressServerDomain": domain, "rmqAddressServerSubGroup": "brokers",
			}), "brokers learn of every peer at once")
			g.Expect(addressData(g, ns, "alpha-namesrv-addr-ips")).To(Equal(map[string]string{"namesrvAddrIPs": ""}))
			g.Expect(addressData(g, ns, "alpha-kv")).To(HaveKeyWithValue("kvConfig.json", `{"policy":"Owned","configTable":{}}`))
		}).Should(Succeed())
		pdb := &policyv1.PodDisruptionBudget{}
		Eventually(func() error { return k8sClient.Get(testCtx, key(ns, "alpha"), pdb) }).Should(Succeed())
		Expect(pdb.Spec.MaxUnavailable).To(HaveValue(Equal(intstr.FromInt32(1))))
		Expect(pdb.Spec.UnhealthyPodEvictionPolicy).To(HaveValue(Equal(policyv1.AlwaysAllow)))

		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "alpha")
			g.Expect(c.Finalizers).To(BeEmpty(), "no finalizer: uninstalling the operator first must not leave the cluster undeletable")
			g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
			g.Expect(c.Status.Selector).To(Equal("app.kubernetes.io/instance=alpha,app.kubernetes.io/name=namesrv"))
			g.Expect(meta.IsStatusConditionFalse(c.Status.Conditions, string(v1alpha1.ConditionAddressesPublished))).To(BeTrue())
			g.Expect(meta.IsStatusConditionFalse(c.Status.Conditions, string(v1alpha1.ConditionAvailable))).To(BeTrue())
			g.Expect(eventReasons(g, ns, "alpha")).To(ContainElement("Normal/Created"))
			g.Expect(eventNotes(g, ns, "alpha")).To(ContainElements(
				"created StatefulSet "+ns+"/alpha", "created Service "+ns+"/alpha", "created Service "+ns+"/alpha-headless",
				"created ConfigMap "+ns+"/"+configName(g, ns, "alpha"), "created ConfigMap "+ns+"/alpha-namesrv-addr",
				"created ConfigMap "+ns+"/alpha-namesrv-addr-brokers", "created ConfigMap "+ns+"/alpha-namesrv-addr-ips",
				"created ConfigMap "+ns+"/alpha-kv", "created PodDisruptionBudget "+ns+"/alpha"))
		}).Should(Succeed())

		By("re-reconciling an unchanged cluster writes nothing")
		versions := func(g Gomega) []string {
			var out []string
			for _, o := range []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}, &policyv1.PodDisruptionBudget{}} {
				g.Expect(k8sClient.Get(testCtx, key(ns, "alpha"), o)).To(Succeed())
				out = append(out, o.GetResourceVersion())
			}
			for _, name := range []string{configName(g, ns, "alpha"), "alpha-kv", "alpha-namesrv-addr", "alpha-namesrv-addr-brokers", "alpha-namesrv-addr-ips"} {
				cm := &corev1.ConfigMap{}
				g.Expect(k8sClient.Get(testCtx, key(ns, name), cm)).To(Succeed())
				out = append(out, cm.ResourceVersion)
			}
			return out
		}
		before := versions(Default)
		updateCluster(ns, "alpha", func(c *v1alpha1.NameServerCluster) { c.Annotations = map[string]string{"poke": "1"} })
		Consistently(versions).Should(Equal(before))
	})

	It("publishes every serving peer, gaps included, and keeps the IP list current in a ConfigMap of its own", func() {
		newCluster(ns, "pub")
		Eventually(func(g Gomega) { g.Expect(statefulSetReplicas(g, ns, "pub")).To(BeEquivalentTo(3)) }).Should(Succeed())

		By("one pending pod does not hide a ready one above it")
		setPod(ns, "pub", 0, true, podIP(0))
		setPod(ns, "pub", 1, false, "")
		setPod(ns, "pub", 2, true, podIP(2))
		gap := peerAddr(ns, "pub", 0) + ";" + peerAddr(ns, "pub", 2)
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "pub-namesrv-addr")).To(And(
				HaveKeyWithValue("namesrvAddr", gap), HaveKeyWithValue("NAMESRV_ADDR", gap)))
			g.Expect(addressData(g, ns, "pub-namesrv-addr-ips")).To(HaveKeyWithValue("namesrvAddrIPs", podIP(0)+":9876;"+podIP(2)+":9876"))
			c := getCluster(g, ns, "pub")
			g.Expect(c.Status.PublishedReplicas).To(BeEquivalentTo(2))
			g.Expect(meta.IsStatusConditionTrue(c.Status.Conditions, string(v1alpha1.ConditionAvailable))).To(BeTrue())
			cond := v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionAddressesPublished)
			g.Expect(cond).To(HaveField("Reason", string(v1alpha1.ReasonWaitingForPeers)))
			g.Expect(cond.Message).To(ContainSubstring("pub-1: its pod is not ready"))
			g.Expect(c.Status.Peers).To(ContainElements(
				And(HaveField("Name", "pub-0"), HaveField("Published", true), HaveField("Ready", true), HaveField("Reachable", HaveValue(BeFalse()))),
				And(HaveField("Name", "pub-1"), HaveField("Published", false), HaveField("Ready", false)),
				And(HaveField("Name", "pub-2"), HaveField("Published", true))))
		}).Should(Succeed())

		By("the gap closes and every peer is published")
		readyPods(ns, "pub", 1)
		settleStatefulSet(ns, "pub")
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "pub-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "pub", 3)))
			g.Expect(addressData(g, ns, "pub-namesrv-addr-ips")).To(
				HaveKeyWithValue("namesrvAddrIPs", podIP(0)+":9876;"+podIP(1)+":9876;"+podIP(2)+":9876"))
			c := getCluster(g, ns, "pub")
			g.Expect(c.Status.NamesrvAddr).To(Equal(peerList(ns, "pub", 3)))
			g.Expect(c.Status.BrokerNamesrvAddr).To(Equal(peerList(ns, "pub", 3)))
			g.Expect(c.Status.Addresses).To(HaveLen(3))
			g.Expect(c.Status.ReadyReplicas).To(BeEquivalentTo(3))
			for _, t := range []v1alpha1.ConditionType{v1alpha1.ConditionAvailable, v1alpha1.ConditionAddressesPublished} {
				g.Expect(meta.IsStatusConditionTrue(c.Status.Conditions, string(t))).To(BeTrue(), string(t))
			}
			for _, t := range []v1alpha1.ConditionType{v1alpha1.ConditionDegraded, v1alpha1.ConditionProgressing} {
				g.Expect(meta.IsStatusConditionFalse(c.Status.Conditions, string(t))).To(BeTrue(), string(t))
			}
			g.Expect(eventReasons(g, ns, "pub")).To(ContainElement("Normal/Published"))
		}).Should(Succeed())

		By("a published pod that restarts stays listed by name; only the IP list follows it")
		addrBefore := &corev1.ConfigMap{}
		Expect(k8sClient.Get(testCtx, key(ns, "pub-namesrv-addr"), addrBefore)).To(Succeed())
		setPod(ns, "pub", 1, false, podIP(1))
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "pub-namesrv-addr-ips")).To(HaveKeyWithValue("namesrvAddrIPs", podIP(0)+":9876;"+podIP(2)+":9876"))
			c := getCluster(g, ns, "pub")
			g.Expect(v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionDegraded)).To(And(
				HaveField("Reason", string(v1alpha1.ReasonPeersNotReady)), HaveField("Message", ContainSubstring("pub-1"))))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(addressData(g, ns, "pub-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "pub", 3)))
		}).Should(Succeed())
		addrAfter := &corev1.ConfigMap{}
		Expect(k8sClient.Get(testCtx, key(ns, "pub-namesrv-addr"), addrAfter)).To(Succeed())
		Expect(addrAfter.ResourceVersion).To(Equal(addrBefore.ResourceVersion),
			"a restart must not touch the address ConfigMap, or a Reloader-style controller would restart every reader")
		By("a pod recreated elsewhere gets a new IP, which the IP list follows")
		Expect(k8sClient.Delete(testCtx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pub-1"}})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "pub-namesrv-addr-ips")).To(HaveKeyWithValue("namesrvAddrIPs", podIP(0)+":9876;"+podIP(2)+":9876"))
		}).Should(Succeed())
		setPod(ns, "pub", 1, true, "10.9.9.9")
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "pub-namesrv-addr-ips")).To(HaveKeyWithValue("namesrvAddrIPs", podIP(0)+":9876;10.9.9.9:9876;"+podIP(2)+":9876"))
		}).Should(Succeed())
	})

	It("publishes new peers after they are ready and shrinks the StatefulSet only after the drain", func() {
		newCluster(ns, "scale", withDrain(3))
		readyPods(ns, "scale", 0, 1, 2)
		settleStatefulSet(ns, "scale")
		Eventually(func(g Gomega) {
			g.Expect(getCluster(g, ns, "scale").Status.PublishedReplicas).To(BeEquivalentTo(3))
		}).Should(Succeed())

		By("scale-up: the StatefulSet grows at once, the list waits for readiness")
		updateCluster(ns, "scale", func(c *v1alpha1.NameServerCluster) { c.Spec.Replicas = ptr.To[int32](5) })
		Eventually(func(g Gomega) { g.Expect(statefulSetReplicas(g, ns, "scale")).To(BeEquivalentTo(5)) }).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(addressData(g, ns, "scale-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "scale", 3)))
		}).Should(Succeed())
		readyPods(ns, "scale", 3, 4)
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "scale-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "scale", 5)))
			g.Expect(getCluster(g, ns, "scale").Status.PublishedReplicas).To(BeEquivalentTo(5))
		}).Should(Succeed())
		settleStatefulSet(ns, "scale")

		By("scale-down: the list shrinks first and the StatefulSet keeps the peers while they drain")
		start := time.Now()
		updateCluster(ns, "scale", func(c *v1alpha1.NameServerCluster) { c.Spec.Replicas = ptr.To[int32](2) })
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "scale-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "scale", 2)))
			c := getCluster(g, ns, "scale")
			g.Expect(c.Status.PublishedReplicas).To(BeEquivalentTo(2))
			g.Expect(c.Status.DrainStartTime).NotTo(BeNil())
			g.Expect(v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionProgressing)).To(HaveField("Reason", string(v1alpha1.ReasonDraining)))
			g.Expect(eventReasons(g, ns, "scale")).To(ContainElement("Normal/Draining"))
		}).Should(Succeed())
		Expect(statefulSetReplicas(Default, ns, "scale")).To(BeEquivalentTo(5))
		Expect(addressData(Default, ns, "scale-namesrv-addr-ips")).To(HaveKeyWithValue("namesrvAddrIPs", podIP(0)+":9876;"+podIP(1)+":9876"))
		Expect(addressData(Default, ns, "scale-namesrv-addr-brokers")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "scale", 5)),
			"brokers keep registering with draining peers until they go")

		Eventually(func(g Gomega) { g.Expect(statefulSetReplicas(g, ns, "scale")).To(BeEquivalentTo(2)) }, 10*time.Second).Should(Succeed())
		Expect(time.Since(start)).To(BeNumerically(">=", 2*time.Second), "the StatefulSet shrank before the 3s drain was over")
		Eventually(func(g Gomega) {
			g.Expect(getCluster(g, ns, "scale").Status.DrainStartTime).To(BeNil())
		}).Should(Succeed())
	})

	It("rolls the pods when the config changes", func() {
		newCluster(ns, "conf")
		checksum := func(g Gomega) string {
			sts := &appsv1.StatefulSet{}
			g.Expect(k8sClient.Get(testCtx, key(ns, "conf"), sts)).To(Succeed())
			return sts.Spec.Template.Annotations[render.AnnotationConfigChecksum]
		}
		var before string
		Eventually(func(g Gomega) { before = checksum(g); g.Expect(before).NotTo(BeEmpty()) }).Should(Succeed())

		updateCluster(ns, "conf", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"orderMessageEnable": "true"}
		})
		Eventually(func(g Gomega) {
			cm := &corev1.ConfigMap{}
			g.Expect(k8sClient.Get(testCtx, key(ns, configName(g, ns, "conf")), cm)).To(Succeed())
			g.Expect(cm.Data["namesrv.properties"]).To(ContainSubstring("\norderMessageEnable=true\n"))
			g.Expect(checksum(g)).NotTo(Equal(before))
		}).Should(Succeed())

		By("image, resources and scheduling changes roll the pods as well")
		updateCluster(ns, "conf", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Image = "kube-namesrv/kube-namesrv:v0.0.1-test"
			c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}
			c.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		})
		Eventually(func(g Gomega) {
			sts := &appsv1.StatefulSet{}
			g.Expect(k8sClient.Get(testCtx, key(ns, "conf"), sts)).To(Succeed())
			p := sts.Spec.Template.Spec
			g.Expect(p.Containers[0].Image).To(Equal("kube-namesrv/kube-namesrv:v0.0.1-test"))
			g.Expect(p.Containers[0].Resources.Requests.Memory().String()).To(Equal("128Mi"))
			g.Expect(p.NodeSelector).To(HaveKeyWithValue("disk", "ssd"))
		}).Should(Succeed())
	})

	It("restores children edited or deleted by hand", func() {
		newCluster(ns, "heal")
		readyPods(ns, "heal", 0, 1, 2)
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "heal-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "heal", 3)))
		}).Should(Succeed())

		By("an edited StatefulSet")
		Eventually(func(g Gomega) {
			sts := &appsv1.StatefulSet{}
			g.Expect(k8sClient.Get(testCtx, key(ns, "heal"), sts)).To(Succeed())
			sts.Spec.Replicas = ptr.To[int32](1)
			sts.Spec.Template.Spec.Containers[0].Image = "someone/else:latest"
			g.Expect(k8sClient.Update(testCtx, sts, client.FieldOwner("kubectl-edit"))).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			sts := &appsv1.StatefulSet{}
			g.Expect(k8sClient.Get(testCtx, key(ns, "heal"), sts)).To(Succeed())
			g.Expect(sts.Spec.Replicas).To(HaveValue(BeEquivalentTo(3)))
			g.Expect(sts.Spec.Template.Spec.Containers[0].Image).To(Equal(testImage))
			g.Expect(eventNotes(g, ns, "heal")).To(ContainElement("updated StatefulSet " + ns + "/heal"))
		}).Should(Succeed())

		By("an edited address ConfigMap")
		Eventually(func(g Gomega) {
			cm := &corev1.ConfigMap{}
			g.Expect(k8sClient.Get(testCtx, key(ns, "heal-namesrv-addr"), cm)).To(Succeed())
			cm.Data["namesrvAddr"] = "wrong:9876"
			g.Expect(k8sClient.Update(testCtx, cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "heal-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "heal", 3)))
		}).Should(Succeed())

		By("deleted Services, ConfigMaps and PDB")
		for _, o := range []client.Object{
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "heal"}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "heal-headless"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: configName(Default, ns, "heal")}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "heal-namesrv-addr"}},
			&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "heal"}},
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "heal"}},
		} {
			old := o.DeepCopyObject().(client.Object)
			Expect(k8sClient.Get(testCtx, client.ObjectKeyFromObject(o), old)).To(Succeed())
			Expect(k8sClient.Delete(testCtx, o)).To(Succeed())
			Eventually(func(g Gomega) {
				g.Expect(k8sClient.Get(testCtx, client.ObjectKeyFromObject(o), o)).To(Succeed())
				g.Expect(o.GetUID()).NotTo(Equal(old.GetUID()))
			}).Should(Succeed(), "%T %s not restored", o, o.GetName())
		}
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "heal-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "heal", 3)))
		}).Should(Succeed())
	})

	It("deletes the PDB when it is disabled", func() {
		newCluster(ns, "nopdb")
		Eventually(func() error { return k8sClient.Get(testCtx, key(ns, "nopdb"), &policyv1.PodDisruptionBudget{}) }).Should(Succeed())
		updateCluster(ns, "nopdb", func(c *v1alpha1.NameServerCluster) { c.Spec.PodDisruptionBudget.Enabled = ptr.To(false) })
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(testCtx, key(ns, "nopdb"), &policyv1.PodDisruptionBudget{}))
		}).Should(BeTrue())
	})

	It("keeps copies in other namespaces equal and deletes them with the cluster", func() {
		brokers, clients := newNamespace(nil), newNamespace(nil)
		acceptFrom(brokers, ns+"/multi")
		acceptFrom(clients, "someone/else", ns+"/*")
		missing := fmt.Sprintf("later-%d", time.Now().UnixNano())
		newCluster(ns, "multi", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Publish.Targets = []v1alpha1.PublishTarget{{Namespace: brokers}, {Namespace: clients, Name: "rocketmq"}, {Namespace: missing}}
		})
		readyPods(ns, "multi", 0, 1, 2)
		Eventually(func(g Gomega) {
			for _, suffix := range []string{"", "-brokers", "-ips"} {
				local := addressData(g, ns, "multi-namesrv-addr"+suffix)
				g.Expect(local).To(HaveKeyWithValue(Or(Equal("namesrvAddr"), Equal("namesrvAddrIPs")), Not(BeEmpty())))
				g.Expect(addressData(g, brokers, "multi-namesrv-addr"+suffix)).To(Equal(local))
				g.Expect(addressData(g, clients, "rocketmq"+suffix)).To(Equal(local))
			}
			g.Expect(addressData(g, ns, "multi-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "multi", 3)))
		}).Should(Succeed())

		By("a target whose namespace does not exist is refused, then published once it appears")
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "multi")
			cond := v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionAddressesPublished)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(string(v1alpha1.RefusalTarget)))
			g.Expect(cond.Message).To(ContainSubstring(missing))
			g.Expect(eventReasons(g, ns, "multi")).To(ContainElement("Warning/" + string(v1alpha1.RefusalTarget)))
		}).Should(Succeed())
		Expect(k8sClient.Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: missing,
			Annotations: map[string]string{v1alpha1.AnnotationAcceptPublishFrom: ns + "/multi"}}})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, missing, "multi-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "multi", 3)))
			g.Expect(meta.IsStatusConditionTrue(getCluster(g, ns, "multi").Status.Conditions, string(v1alpha1.ConditionAddressesPublished))).To(BeTrue())
		}).Should(Succeed())

		By("a copy deleted by hand comes back")
		Expect(k8sClient.Delete(testCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: brokers, Name: "multi-namesrv-addr"}})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, brokers, "multi-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "multi", 3)))
		}).Should(Succeed())

		By("a target dropped from the spec is deleted")
		updateCluster(ns, "multi", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Publish.Targets = []v1alpha1.PublishTarget{{Namespace: brokers}, {Namespace: clients, Name: "rocketmq"}}
		})
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(testCtx, key(missing, "multi-namesrv-addr"), &corev1.ConfigMap{}))
		}).Should(BeTrue())

		By("deleting the cluster, which has no finalizer, deletes the copies once the operator sees it gone")
		Expect(k8sClient.Delete(testCtx, &v1alpha1.NameServerCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "multi"}})).To(Succeed())
		Eventually(func(g Gomega) {
			for _, suffix := range []string{"", "-brokers", "-ips"} {
				g.Expect(apierrors.IsNotFound(k8sClient.Get(testCtx, key(brokers, "multi-namesrv-addr"+suffix), &corev1.ConfigMap{}))).To(BeTrue())
				g.Expect(apierrors.IsNotFound(k8sClient.Get(testCtx, key(clients, "rocketmq"+suffix), &corev1.ConfigMap{}))).To(BeTrue())
			}
			g.Expect(apierrors.IsNotFound(k8sClient.Get(testCtx, key(ns, "multi"), &v1alpha1.NameServerCluster{}))).To(BeTrue())
		}).Should(Succeed())
	})

	It("refuses targets it cannot honour and leaves foreign ConfigMaps alone", func() {
		other, closed := newNamespace(nil), newNamespace(nil)
		acceptFrom(other, ns+"/refuse")
		foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "theirs"}, Data: map[string]string{"k": "v"}}
		Expect(k8sClient.Create(testCtx, foreign)).To(Succeed())
		newCluster(ns, "refuse", withReplicas(1), func(c *v1alpha1.NameServerCluster) {
			c.Spec.Publish.Targets = []v1alpha1.PublishTarget{{Namespace: ns, Name: "copy"}, {Namespace: other, Name: "theirs"}, {Namespace: closed}}
		})
		readyPods(ns, "refuse", 0)
		settleStatefulSet(ns, "refuse")
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "refuse")
			degraded := v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionDegraded)
			g.Expect(degraded).NotTo(BeNil())
			g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(degraded.Message).To(And(ContainSubstring("is the cluster's own"), ContainSubstring("is not this cluster's"),
				ContainSubstring(fmt.Sprintf("namespace %q does not accept address lists from %s/refuse", closed, ns))))
			g.Expect(v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionProgressing)).To(HaveField("Reason", string(v1alpha1.ReasonBlocked)))
			g.Expect(eventReasons(g, ns, "refuse")).To(ContainElements("Warning/"+string(v1alpha1.RefusalTarget), "Warning/"+string(v1alpha1.RefusalNotOwned)))
		}).Should(Succeed())
		Expect(apierrors.IsNotFound(k8sClient.Get(testCtx, key(closed, "refuse-namesrv-addr"), &corev1.ConfigMap{}))).To(BeTrue(),
			"a namespace that did not opt in received the list")

		By("the namespace opts in: its copies are written")
		acceptFrom(closed, ns+"/refuse")
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, closed, "refuse-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "refuse", 1)))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(addressData(g, other, "theirs")).To(Equal(map[string]string{"k": "v"}))
		}).Should(Succeed())
		Expect(apierrors.IsNotFound(k8sClient.Get(testCtx, key(ns, "copy"), &corev1.ConfigMap{}))).To(BeTrue())
		Expect(k8sClient.Delete(testCtx, &v1alpha1.NameServerCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "refuse"}})).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(testCtx, key(ns, "refuse"), &v1alpha1.NameServerCluster{}))
		}).Should(BeTrue())
		Expect(addressData(Default, other, "theirs")).To(Equal(map[string]string{"k": "v"}))
	})

	It("scales through the scale subresource, like kubectl scale", func() {
		newCluster(ns, "kscale")
		readyPods(ns, "kscale", 0, 1, 2)
		settleStatefulSet(ns, "kscale")
		c := &v1alpha1.NameServerCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kscale"}}
		Eventually(func(g Gomega) {
			scale := &autoscalingv1.Scale{}
			g.Expect(k8sClient.SubResource("scale").Get(testCtx, c, scale)).To(Succeed())
			g.Expect(scale.Status.Replicas).To(BeEquivalentTo(3))
			g.Expect(scale.Status.Selector).To(Equal("app.kubernetes.io/instance=kscale,app.kubernetes.io/name=namesrv"))
		}).Should(Succeed())
		// The scale carries the cluster's resourceVersion, which the
		// operator's status writes move on: like kubectl scale, read it
		// again and retry on a conflict.
		Eventually(func(g Gomega) {
			scale := &autoscalingv1.Scale{}
			g.Expect(k8sClient.SubResource("scale").Get(testCtx, c, scale)).To(Succeed())
			scale.Spec.Replicas = 4
			g.Expect(k8sClient.SubResource("scale").Update(testCtx, c, client.WithSubResourceBody(scale))).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getCluster(g, ns, "kscale").Spec.Replicas).To(HaveValue(BeEquivalentTo(4)))
			g.Expect(statefulSetReplicas(g, ns, "kscale")).To(BeEquivalentTo(4))
		}).Should(Succeed())
	})

	It("runs two clusters side by side without interference", func() {
		other := newNamespace(nil)
		newCluster(ns, "one")
		newCluster(ns, "two", withReplicas(1))
		newCluster(other, "one", withReplicas(2))
		readyPods(ns, "one", 0, 1, 2)
		readyPods(ns, "two", 0)
		setPod(other, "one", 0, true, "10.2.0.1")
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "one-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "one", 3)))
			g.Expect(addressData(g, ns, "two-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "two", 1)))
			g.Expect(addressData(g, ns, "two-namesrv-addr-ips")).To(HaveKeyWithValue("namesrvAddrIPs", podIP(0)+":9876"))
			g.Expect(addressData(g, other, "one-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(other, "one", 1)))
			g.Expect(addressData(g, other, "one-namesrv-addr-ips")).To(HaveKeyWithValue("namesrvAddrIPs", "10.2.0.1:9876"))
		}).Should(Succeed())
		Expect(k8sClient.Delete(testCtx, &v1alpha1.NameServerCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one"}})).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(testCtx, key(ns, "one"), &v1alpha1.NameServerCluster{}))
		}).Should(BeTrue())
		setPod(ns, "two", 0, true, "10.3.0.1")
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "two-namesrv-addr-ips")).To(HaveKeyWithValue("namesrvAddrIPs", "10.3.0.1:9876"))
		}).Should(Succeed())
		Expect(addressData(Default, other, "one-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(other, "one", 1)))
	})

	It("renders pods that the restricted Pod Security Standard admits, with and without TLS", func() {
		restricted := newNamespace(map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
		newCluster(restricted, "pss")
		newCluster(restricted, "pss-tls", withTLS(v1alpha1.TLSSpec{
			SecretName: "pss-tls", Mode: v1alpha1.TLSEnforcing, ClientAuth: v1alpha1.TLSClientAuthRequire,
			ClientCA: &v1alpha1.SecretKey{SecretName: "clients-ca"},
		}))
		var pod *corev1.Pod
		for _, name := range []string{"pss", "pss-tls"} {
			sts := &appsv1.StatefulSet{}
			Eventually(func() error { return k8sClient.Get(testCtx, key(restricted, name), sts) }).Should(Succeed())

			By("a pod made from the StatefulSet's template of " + name + " is admitted")
			pod = &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: restricted, Name: name + "-0", Labels: sts.Spec.Template.Labels},
				Spec:       sts.Spec.Template.Spec,
			}
			Expect(k8sClient.Create(testCtx, pod)).To(Succeed())
		}
		Expect(pod.Spec.Volumes).To(ContainElements(HaveField("Name", "tls"), HaveField("Name", "tls-client-ca")))

		By("and the namespace does enforce the standard")
		bad := pod.DeepCopy()
		bad.ObjectMeta = metav1.ObjectMeta{Namespace: restricted, Name: "bad"}
		bad.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
		err := k8sClient.Create(testCtx, bad)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("restricted"))
	})

	It("serves TLS from whole Secret volumes and never rolls the pods for a renewed certificate", func() {
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sec-tls"},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{"tls.crt": []byte("cert 1"), "tls.key": []byte("key 1")},
		}
		Expect(k8sClient.Create(testCtx, secret)).To(Succeed())
		newCluster(ns, "sec", withTLS(v1alpha1.TLSSpec{
			SecretName: "sec-tls", Mode: v1alpha1.TLSEnforcing, ClientAuth: v1alpha1.TLSClientAuthRequire,
			ClientCA: &v1alpha1.SecretKey{SecretName: "clients-ca", Key: "bundle.pem"},
		}))
		sts := &appsv1.StatefulSet{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(testCtx, key(ns, "sec"), sts)).To(Succeed())
			g.Expect(sts.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--tls-mode=enforcing"))
		}).Should(Succeed())
		ctr := sts.Spec.Template.Spec.Containers[0]
		Expect(ctr.Args).To(ContainElements("--tls-cert=/etc/namesrv-tls/tls.crt", "--tls-key=/etc/namesrv-tls/tls.key",
			"--tls-client-auth=require", "--tls-trust-cert=/etc/namesrv-tls-client-ca/bundle.pem"))
		Expect(ctr.VolumeMounts).To(ContainElements(
			corev1.VolumeMount{Name: "tls", MountPath: "/etc/namesrv-tls", ReadOnly: true},
			corev1.VolumeMount{Name: "tls-client-ca", MountPath: "/etc/namesrv-tls-client-ca", ReadOnly: true}))
		Expect(sts.Spec.Template.Spec.Volumes).To(ContainElements(
			And(HaveField("Name", "tls"), HaveField("Secret.SecretName", "sec-tls"), HaveField("Secret.Items", BeEmpty())),
			And(HaveField("Name", "tls-client-ca"), HaveField("Secret.SecretName", "clients-ca"), HaveField("Secret.Items", BeEmpty()))))

		By("a renewed certificate changes nothing the operator writes")
		generation := sts.Generation
		secret.Data = map[string][]byte{"tls.crt": []byte("cert 2"), "tls.key": []byte("key 2")}
		Expect(k8sClient.Update(testCtx, secret)).To(Succeed())
		updateCluster(ns, "sec", func(c *v1alpha1.NameServerCluster) { c.Annotations = map[string]string{"poke": "1"} })
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "sec")
			g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(testCtx, key(ns, "sec"), sts)).To(Succeed())
			g.Expect(sts.Generation).To(Equal(generation))
		}).Should(Succeed())

		By("turning TLS off removes its flags and volumes")
		updateCluster(ns, "sec", func(c *v1alpha1.NameServerCluster) { c.Spec.TLS = nil })
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(testCtx, key(ns, "sec"), sts)).To(Succeed())
			p := sts.Spec.Template.Spec
			g.Expect(p.Containers[0].Args).NotTo(ContainElement(HavePrefix("--tls")))
			g.Expect(p.Containers[0].VolumeMounts).NotTo(ContainElement(HaveField("MountPath", HavePrefix("/etc/namesrv-tls"))))
			g.Expect(p.Volumes).NotTo(ContainElement(HaveField("Secret", Not(BeNil()))))
		}).Should(Succeed())
	})

	It("leaves nothing for the garbage collector to race with when deleted in the middle of a drain", func() {
		target := newNamespace(nil)
		acceptFrom(target, ns+"/doomed")
		newCluster(ns, "doomed", withDrain(3), func(c *v1alpha1.NameServerCluster) {
			c.Spec.Publish.Targets = []v1alpha1.PublishTarget{{Namespace: target}}
		})
		readyPods(ns, "doomed", 0, 1, 2)
		settleStatefulSet(ns, "doomed")
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, target, "doomed-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "doomed", 3)))
		}).Should(Succeed())
		updateCluster(ns, "doomed", func(c *v1alpha1.NameServerCluster) { c.Spec.Replicas = ptr.To[int32](1) })
		Eventually(func(g Gomega) {
			g.Expect(getCluster(g, ns, "doomed").Status.DrainStartTime).NotTo(BeNil())
			g.Expect(addressData(g, ns, "doomed-namesrv-addr")).To(HaveKeyWithValue("namesrvAddr", peerList(ns, "doomed", 1)))
		}).Should(Succeed())
		Expect(statefulSetReplicas(Default, ns, "doomed")).To(BeEquivalentTo(3))

		children := []client.Object{
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "doomed"}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "doomed"}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "doomed-headless"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: configName(Default, ns, "doomed")}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "doomed-namesrv-addr"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "doomed-namesrv-addr-brokers"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "doomed-namesrv-addr-ips"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "doomed-kv"}},
			&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "doomed"}},
		}
		By("every child in the cluster's namespace is one the garbage collector deletes with it")
		c := getCluster(Default, ns, "doomed")
		for _, o := range children {
			Expect(k8sClient.Get(testCtx, client.ObjectKeyFromObject(o), o)).To(Succeed())
			Expect(o.GetOwnerReferences()).To(ConsistOf(And(
				HaveField("UID", c.UID), HaveField("Controller", HaveValue(BeTrue())), HaveField("BlockOwnerDeletion", HaveValue(BeTrue())))),
				"%T %s", o, o.GetName())
		}

		By("a foreground delete, as `kubectl delete --cascade=foreground` sends, keeps the cluster while its children go")
		Expect(k8sClient.Delete(testCtx, c, client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(k8sClient.Get(testCtx, key(target, "doomed-namesrv-addr"), &corev1.ConfigMap{}))).To(BeTrue())
			c := getCluster(g, ns, "doomed")
			g.Expect(c.DeletionTimestamp).NotTo(BeNil())
			g.Expect(c.Finalizers).To(Equal([]string{metav1.FinalizerDeleteDependents}))
		}).Should(Succeed())

		By("playing the garbage collector: the children and pods go, and nothing comes back, not even when the drain ends")
		for _, o := range children {
			Expect(k8sClient.Delete(testCtx, o)).To(Succeed())
		}
		for i := range 3 {
			Expect(k8sClient.Delete(testCtx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("doomed-%d", i)}})).To(Succeed())
		}
		Consistently(func(g Gomega) {
			for _, o := range append(children, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: "doomed-namesrv-addr"}}) {
				err := k8sClient.Get(testCtx, client.ObjectKeyFromObject(o), o)
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s/%s recreated while its cluster is being deleted", o, o.GetNamespace(), o.GetName())
			}
		}, 5*time.Second).Should(Succeed())

		By("and the cluster goes once the collector releases it")
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "doomed")
			c.Finalizers = nil
			g.Expect(k8sClient.Update(testCtx, c)).To(Succeed())
		}).Should(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(testCtx, key(ns, "doomed"), &v1alpha1.NameServerCluster{}))
		}).Should(BeTrue())
	})
})

var _ = Describe("NameServerCluster validation", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace(nil) })

	It("accepts every sample in config/samples", func() {
		files, err := filepath.Glob(filepath.Join("..", "config", "samples", "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		kinds := map[string]int{}
		for _, f := range files {
			if filepath.Base(f) == "kustomization.yaml" {
				continue
			}
			b, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			for _, doc := range strings.Split(string(b), "\n---\n") {
				u := &unstructured.Unstructured{}
				Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed(), f)
				u.SetNamespace(ns)
				Expect(k8sClient.Create(testCtx, u, client.DryRunAll)).To(Succeed(), "%s: %s %s", f, u.GetKind(), u.GetName())
				kinds[u.GetKind()]++
			}
		}
		Expect(kinds).To(HaveKeyWithValue("NameServerCluster", 2))
		Expect(kinds).To(HaveKeyWithValue("StatefulSet", 2))
	})

	DescribeTable("the API server refuses invalid specs with a message a person understands",
		func(name string, edit func(*v1alpha1.NameServerCluster), want string) {
			c := &v1alpha1.NameServerCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			edit(c)
			err := k8sClient.Create(testCtx, c)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("zero replicas", "a", func(c *v1alpha1.NameServerCluster) { c.Spec.Replicas = ptr.To[int32](0) },
			"spec.replicas in body should be greater than or equal to 1"),
		Entry("the operator's listenPort", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"listenPort": "9877"}
		}, "config.listenPort is set by the operator: use spec.ports.remoting instead"),
		Entry("the operator's kvConfigPath", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"kvConfigPath": "/x"}
		}, "config.kvConfigPath is set by the operator"),
		Entry("the operator's configStorePath", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"configStorePath": "/x"}
		}, "config.configStorePath is set by the operator"),
		Entry("a key that is no Java property name", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"bad key": "x"}
		}, "config keys must be Java property names"),
		Entry("equal ports", "a", func(c *v1alpha1.NameServerCluster) { c.Spec.Ports = v1alpha1.Ports{Remoting: 8080, HTTP: 8080} },
			"ports.remoting and ports.http must differ"),
		Entry("an out-of-range port", "a", func(c *v1alpha1.NameServerCluster) { c.Spec.Ports = v1alpha1.Ports{Remoting: 70000} },
			"spec.ports.remoting: Invalid value: 70000"),
		Entry("a selector label in podLabels", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.PodLabels = map[string]string{"app.kubernetes.io/instance": "b"}
		}, "podLabels cannot set app.kubernetes.io/name, instance, component or managed-by"),
		Entry("a name too long for pod names", strings.Repeat("n", 53), func(*v1alpha1.NameServerCluster) {},
			"metadata.name must be at most 52 characters"),
		Entry("a name that cannot name a Service", "1abc", func(*v1alpha1.NameServerCluster) {},
			"metadata.name must start with a lowercase letter"),
		Entry("an address ConfigMap named like the config ConfigMap", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Publish.ConfigMapName = "a-config"
		}, "spec.publish.configMapName cannot be <name>-config"),
		Entry("an address ConfigMap named like a revision of the config ConfigMap", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Publish.ConfigMapName = "a-config-0123456789"
		}, "spec.publish.configMapName cannot be <name>-config, <name>-config-* or <name>-kv"),
		Entry("a PDB that allows no disruption", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.PodDisruptionBudget.MaxUnavailable = ptr.To(intstr.FromInt32(0))
		}, "podDisruptionBudget.maxUnavailable must be a count of at least 1"),
		Entry("an unknown Service type", "a", func(c *v1alpha1.NameServerCluster) { c.Spec.Service.Type = "ExternalName" },
			`spec.service.type: Unsupported value: "ExternalName"`),
		Entry("a claim template without a size", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Storage = &v1alpha1.Storage{VolumeClaimTemplate: &v1alpha1.VolumeClaimTemplate{}}
		}, "storage.volumeClaimTemplate.spec.resources.requests.storage is required"),
		Entry("the same target namespace twice", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Publish.Targets = []v1alpha1.PublishTarget{{Namespace: "b"}, {Namespace: "b", Name: "x"}}
		}, "Duplicate value"),
		Entry("a negative drain", "a", func(c *v1alpha1.NameServerCluster) { c.Spec.Publish.DrainSeconds = ptr.To[int32](-1) },
			"spec.publish.drainSeconds: Invalid value: -1"),
		Entry("TLS keys in config, which would bypass spec.tls", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"tls.server.mode": "enforcing"}
		}, "config tls.server.* keys are set by the operator: use spec.tls instead"),
		Entry("TLS without a Secret", "a", func(c *v1alpha1.NameServerCluster) { c.Spec.TLS = &v1alpha1.TLSSpec{} },
			"spec.tls.secretName in body should be at least 1 chars long"),
		Entry("a TLS Secret name that names no Secret", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "My_Secret"}
		}, "spec.tls.secretName in body should match"),
		Entry("an unknown TLS mode", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "s", Mode: "Disabled"}
		}, `spec.tls.mode: Unsupported value: "Disabled": supported values: "Permissive", "Enforcing"`),
		Entry("an unknown client authentication", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "s", ClientAuth: "Always"}
		}, `spec.tls.clientAuth: Unsupported value: "Always": supported values: "None", "Optional", "Require"`),
		Entry("a client CA that would verify nothing", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "s", ClientCA: &v1alpha1.SecretKey{SecretName: "ca"}}
		}, "tls.clientCA verifies client certificates: set tls.clientAuth to Optional or Require, or remove tls.clientCA"),
		Entry("a client CA key no Secret can hold", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "s", ClientAuth: v1alpha1.TLSClientAuthRequire, ClientCA: &v1alpha1.SecretKey{Key: "ca/crt"}}
		}, "spec.tls.clientCA.key in body should match"),
		Entry("an address ConfigMap named like the KV ConfigMap", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Publish.ConfigMapName = "a-kv"
		}, "spec.publish.configMapName cannot be <name>-config, <name>-config-* or <name>-kv"),
		Entry("the same KV namespace and key twice", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.KVConfig = []v1alpha1.KVConfigEntry{{Namespace: "ORDER_TOPIC_CONFIG", Key: "T", Value: "a:1"}, {Namespace: "ORDER_TOPIC_CONFIG", Key: "T", Value: "b:1"}}
		}, `spec.kvConfig[1]: Duplicate value: {"key":"T","namespace":"ORDER_TOPIC_CONFIG"}`),
		Entry("a KV entry without a namespace", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.KVConfig = []v1alpha1.KVConfigEntry{{Key: "T", Value: "a:1"}}
		}, "spec.kvConfig[0].namespace in body should be at least 1 chars long"),
		Entry("a KV key with spaces", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.KVConfig = []v1alpha1.KVConfigEntry{{Namespace: "N", Key: "a b", Value: "x"}}
		}, "spec.kvConfig[0].key in body should match"),
		Entry("a KV value over 2048 characters", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.KVConfig = []v1alpha1.KVConfigEntry{{Namespace: "N", Key: "k", Value: strings.Repeat("x", 2049)}}
		}, "spec.kvConfig[0].value: Too long: may not be more than 2048"),
		Entry("more than 256 KV entries", "a", func(c *v1alpha1.NameServerCluster) {
			for i := range 257 {
				c.Spec.KVConfig = append(c.Spec.KVConfig, v1alpha1.KVConfigEntry{Namespace: "N", Key: fmt.Sprint(i), Value: "x"})
			}
		}, "spec.kvConfig: Too many: 257: must have at most 256 items"),
		Entry("an unknown KV policy", "a", func(c *v1alpha1.NameServerCluster) { c.Spec.KVConfigPolicy = "Merge" },
			`spec.kvConfigPolicy: Unsupported value: "Merge": supported values: "Owned", "Exclusive", "Additive"`),
		Entry("GOMEMLIMIT in env", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Env = []corev1.EnvVar{{Name: "GOMEMLIMIT", Value: "1GiB"}}
		}, "env cannot set GOMEMLIMIT: the operator sets it from the container's memory limit"),
		Entry("a volume named like the operator's", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, "volumes cannot use the operator's volume names"),
		Entry("a mount over the operator's paths", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.VolumeMounts = []corev1.VolumeMount{{Name: "x", MountPath: "/var/lib/namesrv"}}
		}, "volumeMounts cannot mount over /etc/namesrv*, /var/lib/namesrv or /tmp"),
		Entry("a broker heartbeat of zero", "a", func(c *v1alpha1.NameServerCluster) { c.Spec.BrokerHeartbeatSeconds = ptr.To[int32](0) },
			"spec.brokerHeartbeatSeconds in body should be greater than or equal to 1"),
		Entry("an unknown external access type", "a", func(c *v1alpha1.NameServerCluster) {
			c.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: "ClusterIP"}
		}, `spec.externalAccess.type: Unsupported value: "ClusterIP"`),
	)

	It("fills in the defaults", func() {
		c := newCluster(ns, "defaults")
		Expect(c.Spec.Replicas).To(HaveValue(BeEquivalentTo(3)))
		Expect(c.Spec.Ports).To(Equal(v1alpha1.Ports{Remoting: 9876, HTTP: 8080}))
		Expect(c.Spec.PodDisruptionBudget.Enabled).To(HaveValue(BeTrue()))
		Expect(c.Spec.PodDisruptionBudget.MaxUnavailable).To(HaveValue(Equal(intstr.FromInt32(1))))
		Expect(c.Spec.Service.Type).To(Equal(corev1.ServiceTypeClusterIP))
		Expect(c.Spec.Publish.DrainSeconds).To(HaveValue(BeEquivalentTo(240)))
		Expect(c.Spec.BrokerHeartbeatSeconds).To(HaveValue(BeEquivalentTo(30)))
		Expect(c.Spec.KVConfigPolicy).To(Equal(v1alpha1.KVConfigOwned))
		Expect(c.Spec.Paused).To(BeFalse())
		Expect(c.Spec.Image).To(BeEmpty())
	})

	It("fills in the TLS defaults: permissive, no client certificates, ca.crt as the client CA key", func() {
		c := newCluster(ns, "tls-defaults", withTLS(v1alpha1.TLSSpec{SecretName: "s"}))
		Expect(*c.Spec.TLS).To(Equal(v1alpha1.TLSSpec{SecretName: "s", Mode: v1alpha1.TLSPermissive, ClientAuth: v1alpha1.TLSClientAuthNone}))
		c = newCluster(ns, "tls-ca", withTLS(v1alpha1.TLSSpec{SecretName: "s", ClientAuth: v1alpha1.TLSClientAuthOptional, ClientCA: &v1alpha1.SecretKey{}}))
		Expect(c.Spec.TLS.ClientCA).To(HaveValue(Equal(v1alpha1.SecretKey{Key: "ca.crt"})))
	})

	It("refuses adding storage after creation", func() {
		newCluster(ns, "store")
		// The operator writes the status meanwhile: an update that lost
		// to it is tried again.
		var err error
		Eventually(func() bool {
			c := getCluster(Default, ns, "store")
			c.Spec.Storage = &v1alpha1.Storage{VolumeClaimTemplate: &v1alpha1.VolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			}}}
			err = k8sClient.Update(testCtx, c)
			return apierrors.IsConflict(err)
		}).Should(BeFalse())
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("spec.storage and spec.storage.volumeClaimTemplate cannot be added or removed after creation"))
	})
})
