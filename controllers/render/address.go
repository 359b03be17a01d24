package render

import (
	"fmt"
	"strings"

	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// PeerAddress is the stable DNS name and remoting port of one peer. Pod IPs
// change on every restart and one Service name would hide all peers but one
// from a broker (it registers with each entry of its list), hence per-pod
// names through the headless Service.
func PeerAddress(c *v1alpha1.NameServerCluster, o Options, ordinal int32) string {
	host := fmt.Sprintf("%s-%d.%s.%s.svc.%s", StatefulSetName(c), ordinal, HeadlessServiceName(c), c.Namespace, o.ClusterDomain)
	return hostPort(host, c.Spec.Ports.Remoting)
}

// PeerAddresses are the addresses of ordinals 0..count-1, in order.
func PeerAddresses(c *v1alpha1.NameServerCluster, o Options, count int32) []string {
	out := make([]string, 0, count)
	for i := range count {
		out = append(out, PeerAddress(c, o, i))
	}
	return out
}

// AddressServerDomain is where HTTP readers of the list (brokers with
// fetchNamesrvAddrByAddressServer, clients with rocketmq.namesrv.domain)
// fetch it: the client Service's HTTP port. The port is always written
// because Java appends :8080 only to a domain without one.
func AddressServerDomain(c *v1alpha1.NameServerCluster, o Options) string {
	host := fmt.Sprintf("%s.%s.svc.%s", ClientServiceName(c), c.Namespace, o.ClusterDomain)
	return hostPort(host, c.Spec.Ports.HTTP)
}

// AddressData is the content of every address ConfigMap: the published DNS
// list for each kind of consumer, and the IPs of the ready published peers
// for clients that cannot resolve names. See the key constants in v1alpha1
// for who reads what.
func AddressData(c *v1alpha1.NameServerCluster, o Options, published int32, readyIPs []string) map[string]string {
	list := strings.Join(PeerAddresses(c, o, published), ";")
	ips := make([]string, 0, len(readyIPs))
	for _, ip := range readyIPs {
		ips = append(ips, hostPort(ip, c.Spec.Ports.Remoting))
	}
	domain := AddressServerDomain(c, o)
	return map[string]string{
		v1alpha1.NamesrvAddrKey:               list,
		v1alpha1.NamesrvAddrEnvKey:            list,
		v1alpha1.NamesrvAddrIPsKey:            strings.Join(ips, ";"),
		v1alpha1.AddressServerDomainKey:       domain,
		v1alpha1.ClientAddressServerDomainKey: domain,
		v1alpha1.AddressServerSubGroupKey:     v1alpha1.AddressServerSubGroup,
	}
}

// AddressConfigMap is one published copy of the list. The copy in the
// cluster's namespace is owned by the cluster; copies elsewhere cannot be
// (owner references do not cross namespaces) and are found by their labels.
func AddressConfigMap(c *v1alpha1.NameServerCluster, namespace, name string, data map[string]string) *corev1ac.ConfigMapApplyConfiguration {
	labels := Labels(c)
	labels[LabelClusterNamespace] = c.Namespace
	cm := corev1ac.ConfigMap(name, namespace).WithLabels(labels).WithData(data)
	if namespace == c.Namespace {
		cm.WithOwnerReferences(ownerReference(c))
	}
	return cm
}
