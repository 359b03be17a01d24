package render

import (
	"net"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// ExternalService is the Service of one peer for clients and brokers outside
// the Kubernetes cluster (spec.externalAccess): it selects that peer's pod
// alone, by the pod-name label the StatefulSet controller sets, so each
// external address reaches exactly one NameServer, as RocketMQ expects.
// Not-ready pods are published: a broker must reach a starting peer to
// register with it before it can serve. During a remoting port change it
// keeps the old ports (oldRemoting) as well.
func ExternalService(c *v1alpha1.NameServerCluster, ordinal int32, oldRemoting []int32) *corev1ac.ServiceApplyConfiguration {
	ea := c.Spec.ExternalAccess
	typ := corev1.ServiceTypeLoadBalancer
	if ea.Type == v1alpha1.ExternalNodePort {
		typ = corev1.ServiceTypeNodePort
	}
	selector := SelectorLabels(c)
	selector[appsv1.StatefulSetPodNameLabel] = PodName(c, ordinal)
	// Local keeps the client's address visible to the NameServer, which
	// logs and limits by it, and saves a hop through another node; but a
	// node port reached through a configured host may land on any node, so
	// that one keeps the default, Cluster.
	policy := corev1.ServiceExternalTrafficPolicyLocal
	if typ == corev1.ServiceTypeNodePort && ea.NodePortHost != "" {
		policy = corev1.ServiceExternalTrafficPolicyCluster
	}
	spec := corev1ac.ServiceSpec().
		WithType(typ).
		WithSelector(selector).
		WithPublishNotReadyAddresses(true).
		WithExternalTrafficPolicy(policy).
		WithPorts(corev1ac.ServicePort().WithName(RemotingPortName).WithProtocol(corev1.ProtocolTCP).
			WithPort(c.Spec.Ports.Remoting).WithTargetPort(intstr.FromString(RemotingPortName))).
		WithPorts(oldRemotingPorts(oldRemoting)...)
	if typ == corev1.ServiceTypeLoadBalancer && ea.LoadBalancerClass != nil {
		spec.WithLoadBalancerClass(*ea.LoadBalancerClass)
	}
	if typ == corev1.ServiceTypeLoadBalancer && len(ea.LoadBalancerSourceRanges) > 0 {
		spec.WithLoadBalancerSourceRanges(ea.LoadBalancerSourceRanges...)
	}
	svc := corev1ac.Service(ExternalServiceName(c, ordinal), c.Namespace).
		WithLabels(Labels(c)).
		WithOwnerReferences(ownerReference(c)).
		WithSpec(spec)
	if len(ea.Annotations) > 0 {
		svc.WithAnnotations(ea.Annotations)
	}
	return svc
}

// ExternalAddress is where a peer's external Service is reached, "" while
// it is not known yet: the load balancer's first ingress address and the
// Service's remoting port, or for a node port the configured host (else the
// node the peer runs on) and the node port.
func ExternalAddress(c *v1alpha1.NameServerCluster, svc *corev1.Service, hostIP string) string {
	if c.Spec.ExternalAccess == nil || svc == nil {
		return ""
	}
	i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == RemotingPortName })
	if i < 0 {
		return ""
	}
	port := svc.Spec.Ports[i]
	switch svc.Spec.Type {
	case corev1.ServiceTypeLoadBalancer:
		for _, in := range svc.Status.LoadBalancer.Ingress {
			host := in.IP
			if host == "" {
				host = in.Hostname
			}
			if host != "" {
				return net.JoinHostPort(host, strconv.Itoa(int(port.Port)))
			}
		}
	case corev1.ServiceTypeNodePort:
		host := c.Spec.ExternalAccess.NodePortHost
		if host == "" {
			host = hostIP
		}
		if host != "" && port.NodePort != 0 {
			return net.JoinHostPort(host, strconv.Itoa(int(port.NodePort)))
		}
	}
	return ""
}

// ExposedUnauthenticated tells whether spec.externalAccess exposes the
// remoting port outside the cluster with nothing limiting who reaches it
// and what they may do: no source ranges on a load balancer, and no TLS
// that enforces client certificates. The API server accepts that only with
// allowUnauthenticated, and the operator warns about it.
func ExposedUnauthenticated(c *v1alpha1.NameServerCluster) bool {
	ea := c.Spec.ExternalAccess
	if ea == nil {
		return false
	}
	ranges := len(ea.LoadBalancerSourceRanges) > 0 && ea.Type != v1alpha1.ExternalNodePort
	t := c.Spec.TLS
	mTLS := t != nil && t.Mode == v1alpha1.TLSEnforcing && t.ClientAuth == v1alpha1.TLSClientAuthRequire
	return !ranges && !mTLS
}
