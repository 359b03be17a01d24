package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

var _ = Describe("Operator safety", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace(nil) })

	It("never takes over a same-named object it did not create, and says which", func() {
		helm := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mig", Labels: map[string]string{"app.kubernetes.io/managed-by": "Helm"}},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "old-namesrv"},
				Ports: []corev1.ServicePort{{Name: "main", Port: 9876, TargetPort: intstr.FromInt32(9876)}}},
		}
		Expect(k8sClient.Create(testCtx, helm)).To(Succeed())
		newCluster(ns, "mig", withReplicas(1))
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "mig")
			cond := v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionDegraded)
			g.Expect(cond).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", string(v1alpha1.RefusalNotOwned))))
			g.Expect(cond.Message).To(ContainSubstring("Service " + ns + "/mig exists and is not this cluster's (managed by Helm)"))
			g.Expect(eventReasons(g, ns, "mig")).To(ContainElement("Warning/" + string(v1alpha1.RefusalNotOwned)))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			svc := &corev1.Service{}
			g.Expect(k8sClient.Get(testCtx, key(ns, "mig"), svc)).To(Succeed())
			g.Expect(svc.Spec.Selector).To(Equal(map[string]string{"app": "old-namesrv"}))
			g.Expect(svc.OwnerReferences).To(BeEmpty())
		}, 2*time.Second).Should(Succeed())
		Expect(eventNotes(Default, ns, "mig")).NotTo(ContainElement("created Service " + ns + "/mig"))

		By("once the old Service is gone, the operator creates its own without any other change")
		Expect(k8sClient.Delete(testCtx, helm)).To(Succeed())
		Eventually(func(g Gomega) {
			svc := &corev1.Service{}
			g.Expect(k8sClient.Get(testCtx, key(ns, "mig"), svc)).To(Succeed())
			g.Expect(svc.OwnerReferences).To(ConsistOf(HaveField("Name", "mig")))
		}, 15*time.Second).Should(Succeed())
	})

	It("does not let one cluster overwrite another's ConfigMap", func() {
		newCluster(ns, "b", withReplicas(1))
		var before *corev1.ConfigMap
		bConfig := configName(Default, ns, "b")
		Eventually(func(g Gomega) {
			before = &corev1.ConfigMap{}
			g.Expect(k8sClient.Get(testCtx, key(ns, bConfig), before)).To(Succeed())
		}).Should(Succeed())
		newCluster(ns, "a", withReplicas(1), func(c *v1alpha1.NameServerCluster) { c.Spec.Publish.ConfigMapName = bConfig })
		Eventually(func(g Gomega) {
			cond := v1alpha1.FindCondition(getCluster(g, ns, "a").Status.Conditions, v1alpha1.ConditionAddressesPublished)
			g.Expect(cond).To(HaveField("Reason", string(v1alpha1.RefusalNotOwned)))
			g.Expect(cond.Message).To(ContainSubstring("ConfigMap " + ns + "/" + bConfig + " exists and is not this cluster's (controlled by NameServerCluster b)"))
		}).Should(Succeed())
		after := &corev1.ConfigMap{}
		Expect(k8sClient.Get(testCtx, key(ns, bConfig), after)).To(Succeed())
		Expect(after.Data).To(Equal(before.Data))
	})

	It("retries a write a ResourceQuota refused, with back-off, and keeps the reason in the condition", func() {
		quota := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cms"},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/configmaps": resource.MustParse("1")}},
		}
		Expect(k8sClient.Create(testCtx, quota)).To(Succeed())
		// envtest runs no quota controller: play it, with the namespace full.
		setQuota := func(hard, used string) {
			Eventually(func(g Gomega) {
				g.Expect(k8sClient.Get(testCtx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
				quota.Spec.Hard["count/configmaps"] = resource.MustParse(hard)
				g.Expect(k8sClient.Update(testCtx, quota)).To(Succeed())
				quota.Status = corev1.ResourceQuotaStatus{
					Hard: corev1.ResourceList{"count/configmaps": resource.MustParse(hard)},
					Used: corev1.ResourceList{"count/configmaps": resource.MustParse(used)},
				}
				g.Expect(k8sClient.Status().Update(testCtx, quota)).To(Succeed())
			}).Should(Succeed())
		}
		setQuota("1", "1")
		newCluster(ns, "quota", withReplicas(1))
		Eventually(func(g Gomega) {
			cond := v1alpha1.FindCondition(getCluster(g, ns, "quota").Status.Conditions, v1alpha1.ConditionDegraded)
			g.Expect(cond).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", string(v1alpha1.RefusalAPIServer))))
			g.Expect(cond.Message).To(And(ContainSubstring("exceeded quota"), ContainSubstring("retrying with back-off")))
		}).Should(Succeed())
		Eventually(func() float64 {
			return metricValue("kube_namesrv_cluster_refusals_total", map[string]string{"namespace": ns, "name": "quota", "reason": string(v1alpha1.RefusalAPIServer)})
		}).
			Should(BeNumerically(">=", 1))

		By("raising the quota is enough: no event on the cluster is needed")
		setQuota("50", "1")
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(testCtx, key(ns, configName(g, ns, "quota")), &corev1.ConfigMap{})).To(Succeed())
			g.Expect(k8sClient.Get(testCtx, key(ns, "quota-namesrv-addr-brokers"), &corev1.ConfigMap{})).To(Succeed())
			g.Expect(v1alpha1.FindCondition(getCluster(g, ns, "quota").Status.Conditions, v1alpha1.ConditionDegraded)).
				To(HaveField("Status", metav1.ConditionFalse))
		}, 30*time.Second).Should(Succeed())
	})

	It("gives every peer an external Service and publishes the addresses once they are known", func() {
		newCluster(ns, "ext", withReplicas(2), func(c *v1alpha1.NameServerCluster) {
			c.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalLoadBalancer,
				Annotations:              map[string]string{"service.beta.kubernetes.io/aws-load-balancer-internal": "true"},
				LoadBalancerSourceRanges: []string{"10.0.0.0/8"}}
		})
		readyPods(ns, "ext", 0, 1)
		settleStatefulSet(ns, "ext")
		for o := range 2 {
			svc := &corev1.Service{}
			Eventually(func() error { return k8sClient.Get(testCtx, key(ns, podName("ext", o)+"-external"), svc) }).Should(Succeed())
			Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeLoadBalancer))
			Expect(svc.Spec.Selector).To(HaveKeyWithValue(appsv1.StatefulSetPodNameLabel, podName("ext", o)))
			Expect(svc.Annotations).To(HaveKeyWithValue("service.beta.kubernetes.io/aws-load-balancer-internal", "true"))
		}
		By("a load balancer writes its address: it is published and shown")
		Eventually(func(g Gomega) {
			svc := &corev1.Service{}
			g.Expect(k8sClient.Get(testCtx, key(ns, "ext-0-external"), svc)).To(Succeed())
			svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}}
			g.Expect(k8sClient.Status().Update(testCtx, svc)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(addressData(g, ns, "ext-namesrv-addr")).To(HaveKeyWithValue("namesrvAddrExternal", "203.0.113.7:9876"))
			g.Expect(addressData(g, ns, "ext-namesrv-addr-brokers")).To(HaveKeyWithValue("namesrvAddrExternal", "203.0.113.7:9876"))
			c := getCluster(g, ns, "ext")
			g.Expect(c.Status.Peers).To(ContainElement(And(HaveField("Name", "ext-0"), HaveField("ExternalAddress", "203.0.113.7:9876"))))
		}).Should(Succeed())
		By("turning it off deletes the Services")
		updateCluster(ns, "ext", func(c *v1alpha1.NameServerCluster) { c.Spec.ExternalAccess = nil })
		Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(k8sClient.Get(testCtx, key(ns, "ext-0-external"), &corev1.Service{}))).To(BeTrue())
			g.Expect(apierrors.IsNotFound(k8sClient.Get(testCtx, key(ns, "ext-1-external"), &corev1.Service{}))).To(BeTrue())
			g.Expect(addressData(g, ns, "ext-namesrv-addr")).NotTo(HaveKey("namesrvAddrExternal"))
		}).Should(Succeed())
	})

	It("renders the pod extras a production user sets", func() {
		newCluster(ns, "extra", withReplicas(1), func(c *v1alpha1.NameServerCluster) {
			c.Spec.Env = []corev1.EnvVar{{Name: "NAMESRV_LOG_LEVEL", Value: "debug"}}
			c.Spec.ServiceAccountName = "namesrv"
			c.Spec.Volumes = []corev1.Volume{{Name: "extra", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			c.Spec.VolumeMounts = []corev1.VolumeMount{{Name: "extra", MountPath: "/opt/extra"}}
			c.Spec.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
			c.Spec.Storage = &v1alpha1.Storage{PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}}
		})
		sts := &appsv1.StatefulSet{}
		Eventually(func() error { return k8sClient.Get(testCtx, key(ns, "extra"), sts) }).Should(Succeed())
		p := sts.Spec.Template.Spec
		Expect(p.ServiceAccountName).To(Equal("namesrv"))
		Expect(p.Volumes).To(ContainElement(HaveField("Name", "extra")))
		Expect(p.Containers[0].VolumeMounts).To(ContainElement(HaveField("MountPath", "/opt/extra")))
		Expect(p.Containers[0].Env).To(ContainElements(HaveField("Name", "GOMEMLIMIT"), HaveField("Name", "NAMESRV_LOG_LEVEL")))
		Expect(p.Containers[0].Resources.Limits).To(HaveKeyWithValue(corev1.ResourceMemory, resource.MustParse("1Gi")))
		Expect(p.Containers[0].Resources.Requests).To(BeEmpty(), "a user's resources replace the defaults entirely")
		Expect(sts.Spec.PersistentVolumeClaimRetentionPolicy).To(HaveValue(Equal(appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenScaled: appsv1.DeletePersistentVolumeClaimRetentionPolicyType, WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType})))
	})

	It("removes the finalizer of an older release from clusters it finds with one", func() {
		newCluster(ns, "legacy", withReplicas(1), func(c *v1alpha1.NameServerCluster) { c.Finalizers = []string{LegacyFinalizer} })
		Eventually(func(g Gomega) {
			g.Expect(getCluster(g, ns, "legacy").Finalizers).To(BeEmpty())
		}).Should(Succeed())
		Expect(k8sClient.Delete(testCtx, &v1alpha1.NameServerCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "legacy"}})).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(testCtx, key(ns, "legacy"), &v1alpha1.NameServerCluster{}))
		}).Should(BeTrue())
	})
})
