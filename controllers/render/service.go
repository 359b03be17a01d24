package render

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// servicePorts are the remoting and HTTP ports, by name, on both Services.
func servicePorts(c *v1alpha1.NameServerCluster) []*corev1ac.ServicePortApplyConfiguration {
	return []*corev1ac.ServicePortApplyConfiguration{
		corev1ac.ServicePort().WithName(RemotingPortName).WithProtocol(corev1.ProtocolTCP).
			WithPort(c.Spec.Ports.Remoting).WithTargetPort(intstr.FromString(RemotingPortName)),
		corev1ac.ServicePort().WithName(HTTPPortName).WithProtocol(corev1.ProtocolTCP).
			WithPort(c.Spec.Ports.HTTP).WithTargetPort(intstr.FromString(HTTPPortName)),
	}
}

// HeadlessService gives each pod its DNS name. It publishes not-ready
// addresses so that a published peer's name keeps resolving while it
// restarts: brokers reconnect to the same name instead of dropping it.
func HeadlessService(c *v1alpha1.NameServerCluster) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(HeadlessServiceName(c), c.Namespace).
		WithLabels(Labels(c)).
		WithOwnerReferences(ownerReference(c)).
		WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithPublishNotReadyAddresses(true).
			WithSelector(SelectorLabels(c)).
			WithPorts(servicePorts(c)...))
}

// ClientService balances over the ready peers: for tools that want any one
// NameServer, and for the address server's HTTP port.
func ClientService(c *v1alpha1.NameServerCluster) *corev1ac.ServiceApplyConfiguration {
	svc := corev1ac.Service(ClientServiceName(c), c.Namespace).
		WithLabels(Labels(c)).
		WithOwnerReferences(ownerReference(c)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(c.Spec.Service.Type).
			WithSelector(SelectorLabels(c)).
			WithPorts(servicePorts(c)...))
	if len(c.Spec.Service.Annotations) > 0 {
		svc.WithAnnotations(c.Spec.Service.Annotations)
	}
	return svc
}
