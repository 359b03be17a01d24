package render

import (
	"fmt"

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

// OldPorts are ports a Service keeps besides spec.ports while a port change
// drains: the remoting ports brokers and clients may still use, and the HTTP
// ports readers of the address server may still poll (the lists carry its
// domain with the port).
type OldPorts struct {
	Remoting, HTTP []int32
}

// oldRemotingPorts forward each old remoting port to the same port of the
// pods: a peer not restarted yet serves it as its main port, a restarted one
// as an extra port (--extra-listen-ports).
func oldRemotingPorts(ports []int32) []*corev1ac.ServicePortApplyConfiguration {
	out := make([]*corev1ac.ServicePortApplyConfiguration, 0, len(ports))
	for _, p := range ports {
		out = append(out, corev1ac.ServicePort().WithName(fmt.Sprintf("%s-%d", RemotingPortName, p)).WithProtocol(corev1.ProtocolTCP).
			WithPort(p).WithTargetPort(intstr.FromInt32(p)))
	}
	return out
}

// ClientService balances over the ready peers: for tools that want any one
// NameServer, and for the address server's HTTP port. During a port change
// it keeps the old ports: an old HTTP port forwards to each peer's own HTTP
// port, whichever it is.
func ClientService(c *v1alpha1.NameServerCluster, old OldPorts) *corev1ac.ServiceApplyConfiguration {
	ports := append(servicePorts(c), oldRemotingPorts(old.Remoting)...)
	for _, p := range old.HTTP {
		ports = append(ports, corev1ac.ServicePort().WithName(fmt.Sprintf("%s-%d", HTTPPortName, p)).WithProtocol(corev1.ProtocolTCP).
			WithPort(p).WithTargetPort(intstr.FromString(HTTPPortName)))
	}
	svc := corev1ac.Service(ClientServiceName(c), c.Namespace).
		WithLabels(Labels(c)).
		WithOwnerReferences(ownerReference(c)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(c.Spec.Service.Type).
			WithSelector(SelectorLabels(c)).
			WithPorts(ports...))
	if len(c.Spec.Service.Annotations) > 0 {
		svc.WithAnnotations(c.Spec.Service.Annotations)
	}
	return svc
}
