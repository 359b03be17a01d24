package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

var _ = Describe("spec.config", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace(nil) })

	templateConfig := func(g Gomega, name string) string {
		sts := &appsv1.StatefulSet{}
		g.Expect(k8sClient.Get(testCtx, key(ns, name), sts)).To(Succeed())
		for _, v := range sts.Spec.Template.Spec.Volumes {
			if v.Name == render.ConfigVolume {
				return v.ConfigMap.Name
			}
		}
		return ""
	}
	exists := func(g Gomega, name string) bool {
		err := k8sClient.Get(testCtx, key(ns, name), &corev1.ConfigMap{})
		if apierrors.IsNotFound(err) {
			return false
		}
		g.Expect(err).NotTo(HaveOccurred())
		return true
	}

	It("gives each revision a ConfigMap of its own, kept while a pod mounts it", func() {
		newCluster(ns, "rev", withReplicas(1))
		var first string
		Eventually(func(g Gomega) {
			first = templateConfig(g, "rev")
			g.Expect(first).To(Equal(configName(g, ns, "rev")))
			g.Expect(exists(g, first)).To(BeTrue())
		}).Should(Succeed())
		readyPods(ns, "rev", 0)
		settleStatefulSet(ns, "rev")

		By("a new config gets a new ConfigMap; the pod keeps the old one, which stays")
		updateCluster(ns, "rev", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"orderMessageEnable": "true"}
		})
		var second string
		Eventually(func(g Gomega) {
			second = templateConfig(g, "rev")
			g.Expect(second).NotTo(Equal(first))
			cm := &corev1.ConfigMap{}
			g.Expect(k8sClient.Get(testCtx, key(ns, second), cm)).To(Succeed())
			g.Expect(cm.Data[render.ConfigKey]).To(ContainSubstring("\norderMessageEnable=true\n"))
		}).Should(Succeed())
		// The StatefulSet controller has not observed the new template yet:
		// it could still create a pod from the old one.
		Consistently(func(g Gomega) { g.Expect(exists(g, first)).To(BeTrue()) }, time.Second).Should(Succeed())

		By("once the roll replaced the pod, the old revision goes")
		observeRevision(ns, "rev", "r2")
		Eventually(func(g Gomega) { g.Expect(podExists(g, ns, podName("rev", 0))).To(BeFalse()) }).Should(Succeed())
		setPodAt(ns, "rev", 0, true, podIP(0), "r2", 9876)
		Eventually(func(g Gomega) {
			g.Expect(exists(g, first)).To(BeFalse())
			g.Expect(exists(g, second)).To(BeTrue())
			g.Expect(eventNotes(g, ns, "rev")).To(ContainElement(ContainSubstring("deleted ConfigMap " + ns + "/" + first)))
		}).Should(Succeed())
	})

	It("refuses a config the NameServer would refuse, and changes nothing until it is fixed", func() {
		newCluster(ns, "bad", withReplicas(1))
		readyPods(ns, "bad", 0)
		settleStatefulSet(ns, "bad")
		var good string
		Eventually(func(g Gomega) { good = templateConfig(g, "bad"); g.Expect(good).NotTo(BeEmpty()) }).Should(Succeed())

		updateCluster(ns, "bad", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Image = "kube-namesrv/kube-namesrv:v0.0.9-test"
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"scanNotActiveBrokerInterval": "5s"}
		})
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "bad")
			g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
			cond := v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionDegraded)
			g.Expect(cond).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", string(v1alpha1.RefusalConfigInvalid))))
			g.Expect(cond.Message).To(ContainSubstring(`invalid value "5s" for property scanNotActiveBrokerInterval: want a decimal long`))
			g.Expect(eventReasons(g, ns, "bad")).To(ContainElement("Warning/" + string(v1alpha1.RefusalConfigInvalid)))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			sts := &appsv1.StatefulSet{}
			g.Expect(k8sClient.Get(testCtx, key(ns, "bad"), sts)).To(Succeed())
			g.Expect(sts.Spec.Template.Spec.Containers[0].Image).To(Equal(testImage), "the image of the refused generation was applied")
			g.Expect(templateConfig(g, "bad")).To(Equal(good))
			g.Expect(podExists(g, ns, podName("bad", 0))).To(BeTrue())
		}, 2*time.Second).Should(Succeed())

		By("fixing spec.config applies the generation")
		updateCluster(ns, "bad", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"scanNotActiveBrokerInterval": "6000"}
		})
		Eventually(func(g Gomega) {
			g.Expect(templateConfig(g, "bad")).NotTo(Equal(good))
			c := getCluster(g, ns, "bad")
			g.Expect(v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionDegraded)).To(HaveField("Reason", string(v1alpha1.ReasonAsExpected)))
		}).Should(Succeed())
	})
})
