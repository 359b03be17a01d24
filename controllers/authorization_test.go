package controllers

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// authRound is the broker round of the clusters with spec.authorization
// below.
const authRound = 2 * time.Second

var _ = Describe("Authorization", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace(nil) })

	withAuthorization := func(a v1alpha1.AuthorizationSpec) func(*v1alpha1.NameServerCluster) {
		return func(c *v1alpha1.NameServerCluster) {
			c.Spec.Authorization = &a
			// A short round, so that a deleted token Secret, which the
			// operator does not watch, is replaced within seconds
			// (tokenRereadRounds rounds).
			c.Spec.BrokerHeartbeatSeconds = ptr.To(int32(authRound / time.Second))
		}
	}
	tokenSecret := func(g Gomega, name string) *corev1.Secret {
		s := &corev1.Secret{}
		g.Expect(k8sClient.Get(testCtx, key(ns, name+"-http-token"), s)).To(Succeed())
		return s
	}
	peerReachable := func(g Gomega, name string, ordinal int32) *bool {
		for _, p := range getCluster(g, ns, name).Status.Peers {
			if p.Ordinal == ordinal {
				return p.Reachable
			}
		}
		return nil
	}

	DescribeTable("the API server refuses what cannot be meant, with a message that says what to do",
		func(edit func(*v1alpha1.NameServerCluster), want string) {
			c := &v1alpha1.NameServerCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"}}
			edit(c)
			err := k8sClient.Create(testCtx, c)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("a load balancer open to everyone", func(c *v1alpha1.NameServerCluster) {
			c.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{}
		}, "externalAccess exposes the remoting port outside the cluster, where anyone who reaches it may register brokers and write the KV config: set externalAccess.loadBalancerSourceRanges, or tls.mode Enforcing with tls.clientAuth Require, or externalAccess.allowUnauthenticated true to expose it anyway"),
		Entry("a node port open to everyone", func(c *v1alpha1.NameServerCluster) {
			c.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalNodePort}
		}, "externalAccess exposes the remoting port outside the cluster"),
		Entry("TLS that lets plain peers in does not protect the exposure", func(c *v1alpha1.NameServerCluster) {
			c.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{}
			c.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "s", ClientAuth: v1alpha1.TLSClientAuthRequire}
		}, "externalAccess exposes the remoting port outside the cluster"),
		Entry("source ranges on a node port, which they do not limit", func(c *v1alpha1.NameServerCluster) {
			c.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalNodePort, LoadBalancerSourceRanges: []string{"10.0.0.0/8"}}
		}, "externalAccess.loadBalancerSourceRanges limits load balancers only, not node ports"),
		Entry("a source range that is no CIDR", func(c *v1alpha1.NameServerCluster) {
			c.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{LoadBalancerSourceRanges: []string{"10.0.0.1"}}
		}, "externalAccess.loadBalancerSourceRanges must be CIDR prefixes"),
		Entry("a network that is no CIDR nor address", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Authorization = &v1alpha1.AuthorizationSpec{Read: v1alpha1.RoleGrants{Networks: []string{"10.0.0.0/33"}}}
		}, "authorization networks must be CIDR prefixes (10.0.0.0/8) or IP addresses"),
		Entry("an identity of no known kind", func(c *v1alpha1.NameServerCluster) {
			c.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "s", ClientAuth: v1alpha1.TLSClientAuthOptional}
			c.Spec.Authorization = &v1alpha1.AuthorizationSpec{Admin: v1alpha1.RoleGrants{Identities: []string{"ip:10.0.0.1"}}}
		}, "spec.authorization.admin.identities[0] in body should match"),
		Entry("identities that no verified certificate can match", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Authorization = &v1alpha1.AuthorizationSpec{Broker: v1alpha1.RoleGrants{Identities: []string{"cn:broker-a"}}}
		}, "authorization grants by client certificate, which the NameServer verifies only with tls.clientAuth Optional or Require"),
		Entry("authorization on with nothing granted", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Authorization = &v1alpha1.AuthorizationSpec{Enable: true}
		}, "authorization.enable with no identity or network granted refuses every request of every broker and client"),
		Entry("an unknown HTTP auth scope", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Authorization = &v1alpha1.AuthorizationSpec{HTTPAuthScope: "Reads"}
		}, `spec.authorization.httpAuthScope: Unsupported value: "Reads"`),
		Entry("authz keys in config, which would bypass spec.authorization", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"authzEnable": "false"}
		}, "config authz* and httpAuth* keys are set by the operator: use spec.authorization instead"),
		Entry("httpAuth keys in config", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"httpAuthScope": "none"}
		}, "config authz* and httpAuth* keys are set by the operator"),
		Entry("a volume named like the token's", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Volumes = []corev1.Volume{{Name: "http-token", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, "volumes cannot use the operator's volume names"),
	)

	It("accepts the exposures it can vouch for, and fills in the authorization defaults", func() {
		newCluster(ns, "ranges", withReplicas(1), func(c *v1alpha1.NameServerCluster) {
			c.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{LoadBalancerSourceRanges: []string{"203.0.113.0/24", "2001:db8::/32"}}
		})
		newCluster(ns, "mtls", withReplicas(1), func(c *v1alpha1.NameServerCluster) {
			c.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalNodePort}
			c.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "s", Mode: v1alpha1.TLSEnforcing, ClientAuth: v1alpha1.TLSClientAuthRequire}
		})
		c := newCluster(ns, "defaults", withReplicas(1), func(c *v1alpha1.NameServerCluster) {
			c.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "s", ClientAuth: v1alpha1.TLSClientAuthOptional}
			c.Spec.Authorization = &v1alpha1.AuthorizationSpec{Enable: true,
				Broker: v1alpha1.RoleGrants{Identities: []string{"URI:spiffe://cluster.local/ns/mq/sa/broker-*"}},
				Read:   v1alpha1.RoleGrants{Networks: []string{"10.244.0.0/16", "10.0.0.7", "fd00::/8"}}}
		})
		Expect(c.Spec.Authorization.HTTPAuthScope).To(Equal(v1alpha1.HTTPAuthWrites))
	})

	It("creates the HTTP token Secret, mounts it into the peers, keeps it, and presents its token", func() {
		newCluster(ns, "tok", withReplicas(1), withAuthorization(v1alpha1.AuthorizationSpec{
			Enable: true, Read: v1alpha1.RoleGrants{Networks: []string{"10.0.0.0/8"}}, HTTPAuthScope: v1alpha1.HTTPAuthAll,
		}))
		var secret *corev1.Secret
		Eventually(func(g Gomega) {
			secret = tokenSecret(g, "tok")
			g.Expect(metav1.IsControlledBy(secret, getCluster(g, ns, "tok"))).To(BeTrue(), "owner references %v", secret.OwnerReferences)
			g.Expect(secret.Labels).To(HaveKeyWithValue(render.LabelManagedBy, render.ManagedBy))
			g.Expect(string(secret.Data[render.HTTPTokenKey])).To(MatchRegexp(`^[A-Za-z0-9_-]{43}$`))
		}).Should(Succeed())
		// The event is recorded asynchronously, a moment after the Secret.
		Eventually(func(g Gomega) {
			g.Expect(eventNotes(g, ns, "tok")).To(ContainElement(ContainSubstring("created Secret " + ns + "/tok-http-token")))
		}).Should(Succeed())

		By("the StatefulSet mounts it and the properties name the mounted file")
		Eventually(func(g Gomega) {
			sts := &appsv1.StatefulSet{}
			g.Expect(k8sClient.Get(testCtx, key(ns, "tok"), sts)).To(Succeed())
			pod := sts.Spec.Template.Spec
			g.Expect(pod.Volumes).To(ContainElement(And(HaveField("Name", render.HTTPTokenVolume),
				HaveField("VolumeSource.Secret.SecretName", "tok-http-token"))))
			g.Expect(pod.Containers[0].VolumeMounts).To(ContainElement(And(HaveField("Name", render.HTTPTokenVolume),
				HaveField("MountPath", render.HTTPTokenDir), HaveField("ReadOnly", true))))
			cm := &corev1.ConfigMap{}
			g.Expect(k8sClient.Get(testCtx, key(ns, configName(g, ns, "tok")), cm)).To(Succeed())
			g.Expect(cm.Data[render.ConfigKey]).To(And(
				ContainSubstring("\nhttpAuthTokenFile=/etc/namesrv-http-token/token\n"),
				ContainSubstring("\nhttpAuthScope=all\n"), ContainSubstring("\nauthzEnable=true\n"),
				ContainSubstring("\nauthzReadNetworks=10.0.0.0/8\n")))
		}).Should(Succeed())

		By("a peer that accepts only that token is read")
		token := string(secret.Data[render.HTTPTokenKey])
		testPeers.set(podIP(0), &fakePeer{Token: token})
		readyPods(ns, "tok", 0)
		Eventually(func(g Gomega) {
			g.Expect(peerReachable(g, "tok", 0)).To(HaveValue(BeTrue()))
		}).Should(Succeed())
		Expect(testPeers.get(podIP(0)).Refused).To(BeZero())

		By("the Secret survives reconciles: a spec change leaves it as it was")
		updateCluster(ns, "tok", func(c *v1alpha1.NameServerCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"orderMessageEnable": "true"}
		})
		Consistently(func(g Gomega) {
			s := tokenSecret(g, "tok")
			g.Expect(s.UID).To(Equal(secret.UID))
			g.Expect(s.Data).To(Equal(secret.Data))
			g.Expect(peerReachable(g, "tok", 0)).To(HaveValue(BeTrue()))
		}, 5*time.Second).Should(Succeed())

		By("a peer that wants another token is reported unreachable")
		testPeers.edit(podIP(0), func(p *fakePeer) { p.Token = "not-the-operators" })
		Eventually(func(g Gomega) {
			g.Expect(peerReachable(g, "tok", 0)).To(HaveValue(BeFalse()))
		}).Should(Succeed())
	})

	It("replaces a deleted token Secret with a new token", func() {
		newCluster(ns, "rot", withReplicas(1), withAuthorization(v1alpha1.AuthorizationSpec{HTTPAuthScope: v1alpha1.HTTPAuthAll}))
		var old *corev1.Secret
		Eventually(func(g Gomega) { old = tokenSecret(g, "rot") }).Should(Succeed())
		testPeers.set(podIP(0), &fakePeer{Token: string(old.Data[render.HTTPTokenKey])})
		readyPods(ns, "rot", 0)
		Eventually(func(g Gomega) { g.Expect(peerReachable(g, "rot", 0)).To(HaveValue(BeTrue())) }).Should(Succeed())

		Expect(k8sClient.Delete(testCtx, old)).To(Succeed())
		var renewed *corev1.Secret
		Eventually(func(g Gomega) {
			renewed = tokenSecret(g, "rot")
			g.Expect(renewed.UID).NotTo(Equal(old.UID))
		}).WithTimeout(2 * tokenRereadRounds * authRound).Should(Succeed())
		Expect(renewed.Data[render.HTTPTokenKey]).NotTo(Equal(old.Data[render.HTTPTokenKey]))

		By("until the peer holds the new token it refuses the operator; then it is read again")
		Eventually(func(g Gomega) { g.Expect(peerReachable(g, "rot", 0)).To(HaveValue(BeFalse())) }).Should(Succeed())
		testPeers.edit(podIP(0), func(p *fakePeer) { p.Token = string(renewed.Data[render.HTTPTokenKey]) })
		Eventually(func(g Gomega) { g.Expect(peerReachable(g, "rot", 0)).To(HaveValue(BeTrue())) }).Should(Succeed())
	})

	It("picks up a token rotated by hand in its Secret as soon as a peer refuses the old one", func() {
		newCluster(ns, "hand", withReplicas(1), withAuthorization(v1alpha1.AuthorizationSpec{HTTPAuthScope: v1alpha1.HTTPAuthAll}))
		var s *corev1.Secret
		Eventually(func(g Gomega) { s = tokenSecret(g, "hand") }).Should(Succeed())
		testPeers.set(podIP(0), &fakePeer{Token: string(s.Data[render.HTTPTokenKey])})
		readyPods(ns, "hand", 0)
		Eventually(func(g Gomega) { g.Expect(peerReachable(g, "hand", 0)).To(HaveValue(BeTrue())) }).Should(Succeed())

		By("the Secret's token replaced by hand; the peer wants only the new one and holds a broker only a read with it sees")
		const rotated = "rotated-by-hand-0123456789abcdef"
		Eventually(func(g Gomega) {
			s := tokenSecret(g, "hand")
			s.Data[render.HTTPTokenKey] = []byte(rotated + "\n")
			g.Expect(k8sClient.Update(testCtx, s)).To(Succeed())
		}).Should(Succeed())
		testPeers.edit(podIP(0), func(p *fakePeer) {
			p.Token = rotated
			p.Brokers = []peerstatus.Broker{testBroker("10.7.0.1:10911", time.Now())}
		})
		// Well before the periodic read of the Secret: the refusal has it
		// read again.
		Eventually(func(g Gomega) {
			var peer *v1alpha1.PeerStatus
			for _, p := range getCluster(g, ns, "hand").Status.Peers {
				if p.Ordinal == 0 {
					peer = &p
				}
			}
			g.Expect(peer).NotTo(BeNil())
			g.Expect(peer.Reachable).To(HaveValue(BeTrue()))
			g.Expect(peer.Brokers).To(HaveValue(BeEquivalentTo(1)))
		}).WithTimeout(tokenRereadRounds * authRound / 2).Should(Succeed())
		Expect(testPeers.get(podIP(0)).Refused).To(BeNumerically(">", 0), "the peer never saw the old token: the rotation was not under test")
	})

	It("leaves a same-named Secret it did not create alone, and says so", func() {
		foreign := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "own-http-token"},
			Data:       map[string][]byte{"token": []byte("someone-elses")},
		}
		Expect(k8sClient.Create(testCtx, foreign)).To(Succeed())
		newCluster(ns, "own", withReplicas(1), withAuthorization(v1alpha1.AuthorizationSpec{}))
		Eventually(func(g Gomega) {
			cond := v1alpha1.FindCondition(getCluster(g, ns, "own").Status.Conditions, v1alpha1.ConditionDegraded)
			g.Expect(cond).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", string(v1alpha1.RefusalNotOwned))))
			g.Expect(cond.Message).To(ContainSubstring("Secret " + ns + "/own-http-token exists and is not this cluster's"))
		}).Should(Succeed())
		s := &corev1.Secret{}
		Expect(k8sClient.Get(testCtx, key(ns, "own-http-token"), s)).To(Succeed())
		Expect(s.OwnerReferences).To(BeEmpty())
		Expect(s.Data).To(Equal(foreign.Data))
	})

	It("reports a token Secret whose token the peers would refuse", func() {
		newCluster(ns, "bad", withReplicas(1), withAuthorization(v1alpha1.AuthorizationSpec{}))
		Eventually(func(g Gomega) { tokenSecret(g, "bad") }).Should(Succeed())
		Eventually(func(g Gomega) {
			s := tokenSecret(g, "bad")
			s.Data[render.HTTPTokenKey] = []byte("two words")
			g.Expect(k8sClient.Update(testCtx, s)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			cond := v1alpha1.FindCondition(getCluster(g, ns, "bad").Status.Conditions, v1alpha1.ConditionDegraded)
			g.Expect(cond).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", string(v1alpha1.RefusalHTTPToken))))
			g.Expect(cond.Message).To(ContainSubstring("delete the Secret and the operator creates a new one"))
		}).WithTimeout(2 * tokenRereadRounds * authRound).Should(Succeed()) // no peer refuses: the periodic read finds it
	})

	It("creates no Secret and mounts nothing without spec.authorization or with httpAuthScope None", func() {
		newCluster(ns, "none", withReplicas(1))
		newCluster(ns, "scope-none", withReplicas(1), withAuthorization(v1alpha1.AuthorizationSpec{HTTPAuthScope: v1alpha1.HTTPAuthNone}))
		for _, name := range []string{"none", "scope-none"} {
			Eventually(func(g Gomega) {
				sts := &appsv1.StatefulSet{}
				g.Expect(k8sClient.Get(testCtx, key(ns, name), sts)).To(Succeed())
				g.Expect(sts.Spec.Template.Spec.Volumes).NotTo(ContainElement(HaveField("Name", render.HTTPTokenVolume)))
			}).Should(Succeed())
			err := k8sClient.Get(testCtx, key(ns, name+"-http-token"), &corev1.Secret{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "got %v", err)
		}
	})

	It("warns while the remoting port is exposed with allowUnauthenticated, and stops once it is protected", func() {
		newCluster(ns, "open", withReplicas(1), func(c *v1alpha1.NameServerCluster) {
			c.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{AllowUnauthenticated: true}
		})
		exposed := "Warning/" + string(v1alpha1.EventExposedUnauthenticated)
		Eventually(func(g Gomega) {
			g.Expect(eventReasons(g, ns, "open")).To(ContainElement(exposed))
			g.Expect(eventNotes(g, ns, "open")).To(ContainElement(ContainSubstring("nothing limits who reaches it")))
		}).Should(Succeed())

		By("with source ranges the exposure is limited: no new warning")
		updateCluster(ns, "open", func(c *v1alpha1.NameServerCluster) {
			c.Spec.ExternalAccess.LoadBalancerSourceRanges = []string{"203.0.113.0/24"}
		})
		Eventually(func(g Gomega) {
			svc := &corev1.Service{}
			g.Expect(k8sClient.Get(testCtx, key(ns, "open-0-external"), svc)).To(Succeed())
			g.Expect(svc.Spec.LoadBalancerSourceRanges).To(Equal([]string{"203.0.113.0/24"}))
		}).Should(Succeed())
		warnings := func(g Gomega) int32 { return exposureCount(g, ns, "open") }
		before := warnings(Default)
		updateCluster(ns, "open", func(c *v1alpha1.NameServerCluster) { c.Spec.Paused = true })
		Eventually(func(g Gomega) {
			c := getCluster(g, ns, "open")
			g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
		}).Should(Succeed())
		Consistently(warnings, 2*time.Second).Should(Equal(before))
	})

	It("keeps warning about the exposure once per spec change", func() {
		newCluster(ns, "again", withReplicas(1), func(c *v1alpha1.NameServerCluster) {
			c.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalNodePort, AllowUnauthenticated: true}
		})
		notes := func(g Gomega) []string {
			var out []string
			for _, n := range eventNotes(g, ns, "again") {
				if strings.Contains(n, "allowUnauthenticated") {
					out = append(out, n)
				}
			}
			return out
		}
		Eventually(notes).Should(ContainElement(ContainSubstring("externalAccess type NodePort")))
		updateCluster(ns, "again", func(c *v1alpha1.NameServerCluster) { c.Spec.ExternalAccess.NodePortHost = "nodes.example.com" })
		// The events API folds repeats of one note into a series: the
		// second warning shows as a count.
		Eventually(func(g Gomega) int32 {
			return exposureCount(g, ns, "again")
		}).Should(BeNumerically(">=", 2))
	})
})

// exposureCount is how many times the operator warned about a cluster's
// unauthenticated exposure: the events API keeps repeats of one note as a
// series of one event.
func exposureCount(g Gomega, ns, name string) int32 {
	list := &eventsv1.EventList{}
	g.Expect(k8sClient.List(testCtx, list, client.InNamespace(ns))).To(Succeed())
	var n int32
	for _, e := range list.Items {
		if e.Regarding.Kind != "NameServerCluster" || e.Regarding.Name != name || e.Reason != string(v1alpha1.EventExposedUnauthenticated) {
			continue
		}
		if e.Series != nil {
			n += e.Series.Count
		} else {
			n++
		}
	}
	return n
}
