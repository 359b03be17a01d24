package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// PeerHost is the stable DNS name of one peer. Pod IPs change on every
// restart and one Service name would hide all peers but one from a broker
// (it registers with each entry of its list), hence per-pod names through
// the headless Service.
func PeerHost(c *v1alpha1.NameServerCluster, o Options, ordinal int32) string {
	return PodName(c, ordinal) + "." + HeadlessServiceName(c) + "." + c.Namespace + ".svc." + o.ClusterDomain
}

// PeerAddress is a peer's stable name with a remoting port: the port its pod
// listens on, which during a port change is not always spec.ports.remoting.
func PeerAddress(c *v1alpha1.NameServerCluster, o Options, ordinal, port int32) string {
	return hostPort(PeerHost(c, o, ordinal), port)
}

// AddressServerDomain is where HTTP readers of the lists (brokers with
// fetchNamesrvAddrByAddressServer, clients with rocketmq.namesrv.domain)
// fetch them: the client Service's HTTP port. The port is always written
// because Java appends :8080 only to a domain without one.
func AddressServerDomain(c *v1alpha1.NameServerCluster, o Options) string {
	host := fmt.Sprintf("%s.%s.svc.%s", ClientServiceName(c), c.Namespace, o.ClusterDomain)
	return hostPort(host, c.Spec.Ports.HTTP)
}

// Lists are the published lists, as host:port entries.
type Lists struct {
	// Clients are the peers clients may use; Brokers every peer that runs.
	Clients, Brokers []string
	// ClientsExternal and BrokersExternal are the same peers by their
	// external addresses, those that are known.
	ClientsExternal, BrokersExternal []string
	// IPs are ip:port of the ready client peers.
	IPs []string
}

// ClientAddressData is the content of the client ConfigMap; see the key
// constants of v1alpha1 for who reads what.
func ClientAddressData(c *v1alpha1.NameServerCluster, o Options, l Lists) map[string]string {
	list := strings.Join(l.Clients, ";")
	d := map[string]string{
		v1alpha1.NamesrvAddrKey:                 list,
		v1alpha1.NamesrvAddrEnvKey:              list,
		v1alpha1.ClientAddressServerDomainKey:   AddressServerDomain(c, o),
		v1alpha1.ClientAddressServerSubGroupKey: v1alpha1.AddressServerSubGroup,
	}
	if c.Spec.ExternalAccess != nil {
		d[v1alpha1.NamesrvAddrExternalKey] = strings.Join(l.ClientsExternal, ";")
	}
	return d
}

// BrokerAddressData is the content of the broker ConfigMap.
func BrokerAddressData(c *v1alpha1.NameServerCluster, o Options, l Lists) map[string]string {
	list := strings.Join(l.Brokers, ";")
	d := map[string]string{
		v1alpha1.NamesrvAddrKey:           list,
		v1alpha1.NamesrvAddrEnvKey:        list,
		v1alpha1.AddressServerDomainKey:   AddressServerDomain(c, o),
		v1alpha1.AddressServerSubGroupKey: v1alpha1.BrokerAddressServerSubGroup,
	}
	if c.Spec.ExternalAccess != nil {
		d[v1alpha1.NamesrvAddrExternalKey] = strings.Join(l.BrokersExternal, ";")
	}
	return d
}

// IPsData is the content of the IP ConfigMap.
func IPsData(l Lists) map[string]string {
	return map[string]string{v1alpha1.NamesrvAddrIPsKey: strings.Join(l.IPs, ";")}
}

// AddressConfigMap is one published ConfigMap. The ones in the cluster's
// namespace are owned by the cluster; copies elsewhere cannot be (owner
// references do not cross namespaces) and are found by their labels.
func AddressConfigMap(c *v1alpha1.NameServerCluster, namespace, name string, data map[string]string) *corev1ac.ConfigMapApplyConfiguration {
	labels := Labels(c)
	labels[LabelClusterNamespace] = c.Namespace
	cm := corev1ac.ConfigMap(name, namespace).WithLabels(labels).WithData(data)
	if namespace == c.Namespace {
		cm.WithOwnerReferences(ownerReference(c))
	}
	return cm
}

// DataDigest identifies a ConfigMap's data: equal data, equal digest.
func DataDigest(data map[string]string) string {
	h := sha256.New()
	var b []byte
	for _, k := range slices.Sorted(maps.Keys(data)) {
		b = strconv.AppendInt(b[:0], int64(len(k)), 10)
		b = append(append(append(b, ':'), k...), ' ')
		b = strconv.AppendInt(b, int64(len(data[k])), 10)
		b = append(append(b, ':'), data[k]...)
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
