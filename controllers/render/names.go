// Package render turns a NameServerCluster into the child objects the
// operator applies. Every function here is pure (cluster in, apply
// configuration out, no client, no clock), so what the operator asks of the
// API server is fully covered by table tests.
package render

import (
	"fmt"
	"net"
	"strconv"

	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// Labels and annotations the operator sets on its children.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelComponent = "app.kubernetes.io/component"
	// LabelClusterNamespace marks an address ConfigMap with the namespace of
	// its cluster; copies in other namespaces cannot carry an owner reference,
	// so this label and LabelInstance are how the operator finds them again.
	LabelClusterNamespace = "rocketmq.kube-namesrv.io/cluster-namespace"
	// AnnotationConfigChecksum on the pod template changes with the rendered
	// properties, so a config change rolls the pods.
	AnnotationConfigChecksum = "rocketmq.kube-namesrv.io/config-checksum"
	// AnnotationApplied on every child is the digest of the configuration
	// the operator last applied to it: a pass that would apply the same
	// configuration again, to an object that still holds it, applies
	// nothing.
	AnnotationApplied = "rocketmq.kube-namesrv.io/applied"
	// LabelConfig marks a config ConfigMap with the checksum of the
	// properties it holds: each revision of spec.config has a ConfigMap of
	// its own, which the operator deletes once no pod mounts it.
	LabelConfig = "rocketmq.kube-namesrv.io/config"

	AppName   = "namesrv"
	ManagedBy = "kube-namesrv"
	Component = "nameserver"
)

// Paths and names inside the NameServer pods (the namesrv image contract).
const (
	ContainerName       = "namesrv"
	ConfigDir           = "/etc/namesrv"
	ConfigKey           = "namesrv.properties"
	AddressDir          = "/etc/namesrv-addr"
	BrokerAddressDir    = "/etc/namesrv-broker-addr"
	KVDir               = "/etc/namesrv-kv"
	KVKey               = "kvConfig.json"
	TLSDir              = "/etc/namesrv-tls"
	HTTPTokenDir        = "/etc/namesrv-http-token"
	HTTPTokenKey        = "token"
	HTTPTokenVolume     = "http-token"
	ClientCADir         = "/etc/namesrv-tls-client-ca"
	DataDir             = "/var/lib/namesrv"
	TmpDir              = "/tmp"
	DataVolume          = "data"
	ConfigVolume        = "config"
	AddressVolume       = "namesrv-addr"
	BrokerAddressVolume = "namesrv-broker-addr"
	KVVolume            = "namesrv-kv"
	TmpVolume           = "tmp"
	TLSVolume           = "tls"
	ClientCAVolume      = "tls-client-ca"
	RemotingPortName    = "remoting"
	HTTPPortName        = "http"
	NonRootID           = 65532
	TerminationSeconds  = 30
	// PreStopSeconds is the pause before SIGTERM; TerminationSeconds
	// covers it and the NameServer's drain of requests in flight.
	PreStopSeconds = 5
)

// DefaultClientCAKey is the key of spec.tls.clientCA when unset: where
// cert-manager puts the issuing CA in a kubernetes.io/tls Secret.
const DefaultClientCAKey = "ca.crt"

// Options are the operator-wide settings the render functions need.
type Options struct {
	// ClusterDomain is the DNS suffix of Services (cluster.local by default).
	ClusterDomain string
	// DefaultImage is the NameServer image used when spec.image is empty.
	DefaultImage string
}

// SelectorLabels select the pods of one cluster; they are immutable in the
// StatefulSet, so they hold only what never changes.
func SelectorLabels(c *v1alpha1.NameServerCluster) map[string]string {
	return map[string]string{LabelName: AppName, LabelInstance: c.Name}
}

// Labels are set on every child of a cluster.
func Labels(c *v1alpha1.NameServerCluster) map[string]string {
	l := SelectorLabels(c)
	l[LabelManagedBy] = ManagedBy
	l[LabelComponent] = Component
	return l
}

// StatefulSetName is the name of the StatefulSet, hence the pods' prefix.
func StatefulSetName(c *v1alpha1.NameServerCluster) string { return c.Name }

// HeadlessServiceName gives every pod its stable DNS name.
func HeadlessServiceName(c *v1alpha1.NameServerCluster) string { return c.Name + "-headless" }

// ClientServiceName balances over the ready peers.
func ClientServiceName(c *v1alpha1.NameServerCluster) string { return c.Name }

// ConfigMapName holds namesrv.properties as spec.config renders it now:
// <name>-config-<the checksum's first 10 hex digits>. Pods keep the
// ConfigMap of the template they were created from, so a container restart
// of a pod the roll has not reached yet reads the properties it started
// with, not the new ones.
func ConfigMapName(c *v1alpha1.NameServerCluster) string {
	return LegacyConfigMapName(c) + "-" + ConfigChecksum(c)[:10]
}

// LegacyConfigMapName is the one config ConfigMap of earlier releases,
// which every pod shared; it is deleted once no pod mounts it.
func LegacyConfigMapName(c *v1alpha1.NameServerCluster) string { return c.Name + "-config" }

// KVConfigMapName holds the declared-KV file rendered from spec.kvConfig.
func KVConfigMapName(c *v1alpha1.NameServerCluster) string { return c.Name + "-kv" }

// HTTPTokenSecretName holds the bearer token the operator presents to the
// peers' HTTP port and the peers accept (spec.authorization.httpAuthScope).
func HTTPTokenSecretName(c *v1alpha1.NameServerCluster) string { return c.Name + "-http-token" }

// ExternalServiceName is the per-peer Service of spec.externalAccess.
func ExternalServiceName(c *v1alpha1.NameServerCluster, ordinal int32) string {
	return fmt.Sprintf("%s-%d-external", StatefulSetName(c), ordinal)
}

// PodName is the name of the pod of an ordinal.
func PodName(c *v1alpha1.NameServerCluster, ordinal int32) string {
	return StatefulSetName(c) + "-" + strconv.Itoa(int(ordinal))
}

// PodDisruptionBudgetName is the PDB's name.
func PodDisruptionBudgetName(c *v1alpha1.NameServerCluster) string { return c.Name }

// AddressConfigMapName is the published list's ConfigMap in the cluster's
// namespace.
func AddressConfigMapName(c *v1alpha1.NameServerCluster) string {
	if c.Spec.Publish.ConfigMapName != "" {
		return c.Spec.Publish.ConfigMapName
	}
	return c.Name + "-namesrv-addr"
}

// BrokerAddressConfigMapName is the broker list's ConfigMap in the
// cluster's namespace.
func BrokerAddressConfigMapName(c *v1alpha1.NameServerCluster) string {
	return AddressConfigMapName(c) + v1alpha1.BrokerConfigMapSuffix
}

// IPsConfigMapName is the ConfigMap of the client peers' IPs.
func IPsConfigMapName(c *v1alpha1.NameServerCluster) string {
	return AddressConfigMapName(c) + v1alpha1.IPsConfigMapSuffix
}

// TargetName is the name of a copy of the client address ConfigMap; the
// copies of the other two add their suffixes to it.
func TargetName(c *v1alpha1.NameServerCluster, t v1alpha1.PublishTarget) string {
	if t.Name != "" {
		return t.Name
	}
	return AddressConfigMapName(c)
}

// Image is the NameServer image the pods run.
func Image(c *v1alpha1.NameServerCluster, o Options) string {
	if c.Spec.Image != "" {
		return c.Spec.Image
	}
	return o.DefaultImage
}

// ownerReference makes the cluster the controller of a child in its own
// namespace, so that Owns() watches see it and the garbage collector removes
// it with the cluster.
func ownerReference(c *v1alpha1.NameServerCluster) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(v1alpha1.GroupVersion.String()).
		WithKind("NameServerCluster").
		WithName(c.Name).
		WithUID(c.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

// hostPort joins a host name or IP (v4 or v6) and a port.
func hostPort(host string, port int32) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}
