package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Keys of the address ConfigMap. Each consumer reads the one it understands:
//
//   - NamesrvAddrKey: Java brokers and admin tools (namesrvAddr in broker.conf,
//     or -n), mounted as a file or copied into a config.
//   - NamesrvAddrEnvKey: anything started with envFrom; RocketMQ's Java
//     processes read NAMESRV_ADDR from the environment at start-up.
//   - AddressServerDomainKey and ClientAddressServerDomainKey: brokers with
//     fetchNamesrvAddrByAddressServer=true and Java clients with the
//     rocketmq.namesrv.domain system property; they fetch the list over HTTP
//     from the NameServers' address server and follow changes without restarts.
//   - AddressServerSubGroupKey: the path element those HTTP readers ask for.
//   - NamesrvAddrIPsKey: clients that refuse host names (rocketmq-client-go);
//     it changes whenever a pod moves, so those clients must re-read it.
const (
	NamesrvAddrKey               = "namesrvAddr"
	NamesrvAddrEnvKey            = "NAMESRV_ADDR"
	NamesrvAddrIPsKey            = "namesrvAddrIPs"
	AddressServerDomainKey       = "rmqAddressServerDomain"
	ClientAddressServerDomainKey = "rocketmq.namesrv.domain"
	AddressServerSubGroupKey     = "rmqAddressServerSubGroup"
)

// AddressServerSubGroup is the address-server path element (/rocketmq/nsaddr)
// under which every NameServer serves the published list.
const AddressServerSubGroup = "nsaddr"

// NameServerClusterSpec is the desired state of a group of NameServer peers.
// Peers never talk to each other: every broker registers with each published
// address, so the operator only has to run N pods and publish their names.
//
// +kubebuilder:validation:XValidation:rule="has(self.storage) == has(oldSelf.storage) && (!has(self.storage) || self.storage == oldSelf.storage)",message="spec.storage cannot be changed after creation: a StatefulSet's volume claim templates are immutable; create a new NameServerCluster instead"
type NameServerClusterSpec struct {
	// Replicas is the number of NameServer peers.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Image of the NameServer. Empty means this project's image at the
	// operator's own version (the manager's --namesrv-image flag).
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`

	// ImagePullPolicy of the NameServer container; empty lets Kubernetes choose.
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// ImagePullSecrets for the NameServer pods.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// Ports the NameServer listens on.
	// +kubebuilder:default={remoting:9876,http:8080}
	// +optional
	Ports Ports `json:"ports,omitempty"`

	// Config holds NameServer properties by their Java names (for example
	// scanNotActiveBrokerInterval or orderMessageEnable). They are rendered
	// into the namesrv.properties file the pods read; any change rolls the pods.
	// Unless set here, needWaitForService=true and waitSecondsForService=45
	// are rendered: a (re)started peer refuses route queries and stays
	// unready until brokers have had a heartbeat (30 s) to register with it
	// again, which also paces rolling updates.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="!('listenPort' in self)",message="config.listenPort is set by the operator: use spec.ports.remoting instead"
	// +kubebuilder:validation:XValidation:rule="!('kvConfigPath' in self)",message="config.kvConfigPath is set by the operator: the KV store lives on the data volume, see spec.storage"
	// +kubebuilder:validation:XValidation:rule="!('configStorePath' in self)",message="config.configStorePath is set by the operator: the stored config lives on the data volume, see spec.storage"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[A-Za-z][A-Za-z0-9_.-]{0,127}$'))",message="config keys must be Java property names: a letter, then up to 127 letters, digits, '.', '_' or '-'"
	// +kubebuilder:validation:XValidation:rule="!self.exists(k, k.startsWith('tls.server.'))",message="config tls.server.* keys are set by the operator: use spec.tls instead"
	// +optional
	Config map[string]ConfigValue `json:"config,omitempty"`

	// Resources of the NameServer container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// NodeSelector constrains the nodes the pods may run on.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations of the pods.
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Affinity of the pods. When unset, the operator asks the scheduler to
	// prefer spreading peers across nodes (a soft anti-affinity), so a node
	// failure takes at most one peer when the cluster has room for it.
	// Setting it replaces that default entirely.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// TopologySpreadConstraints of the pods; label selectors in them usually
	// match app.kubernetes.io/instance=<name>.
	// +listType=atomic
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// PriorityClassName of the pods.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// PodLabels are added to the pods. The operator's own selector labels
	// cannot be overridden.
	// +kubebuilder:validation:XValidation:rule="!['app.kubernetes.io/name', 'app.kubernetes.io/instance', 'app.kubernetes.io/component', 'app.kubernetes.io/managed-by'].exists(k, k in self)",message="podLabels cannot set app.kubernetes.io/name, instance, component or managed-by: the operator selects its pods with them"
	// +optional
	PodLabels map[string]string `json:"podLabels,omitempty"`

	// PodAnnotations are added to the pods.
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// PodSecurityContext overrides, field by field, the operator's pod
	// security context (runAsNonRoot, runAsUser/runAsGroup/fsGroup 65532,
	// seccomp RuntimeDefault), which passes the restricted Pod Security Standard.
	// +optional
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`

	// ContainerSecurityContext overrides, field by field, the operator's
	// container security context (no privilege escalation, all capabilities
	// dropped, read-only root filesystem, non-root).
	// +optional
	ContainerSecurityContext *corev1.SecurityContext `json:"containerSecurityContext,omitempty"`

	// Storage of the KV config (kvConfig.json). Without it an emptyDir is used
	// and the KV store lives as long as the pod; admin tools write it again to
	// every peer. It cannot be changed after creation.
	// +optional
	Storage *Storage `json:"storage,omitempty"`

	// PodDisruptionBudget of the peers.
	// +kubebuilder:default={}
	// +optional
	PodDisruptionBudget PodDisruptionBudgetSpec `json:"podDisruptionBudget,omitempty"`

	// Service is the client Service <name>, which exposes the remoting and
	// HTTP ports of all ready peers.
	// +kubebuilder:default={}
	// +optional
	Service ServiceSpec `json:"service,omitempty"`

	// Publish says where the address list goes and how scale-down drains.
	// +kubebuilder:default={}
	// +optional
	Publish PublishSpec `json:"publish,omitempty"`

	// TLS serves TLS on the remoting port with the certificate of a Secret.
	// The Secrets are mounted whole, so the kubelet refreshes their files
	// and a renewed certificate is served on the next connection without
	// restarting any pod. The operator never reads them (it has no access
	// to Secrets): a missing Secret or key keeps the pods from starting, and
	// their events say why. Without tls the remoting port is plain only;
	// the HTTP port (probes, metrics, address server) is plain either way.
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`
}

// TLSMode says which connections the remoting port accepts once it has a
// certificate.
// +kubebuilder:validation:Enum=Permissive;Enforcing
type TLSMode string

const (
	// TLSPermissive serves TLS and plain connections on the same port, so
	// brokers and clients can move to TLS one at a time.
	TLSPermissive TLSMode = "Permissive"
	// TLSEnforcing serves TLS connections only.
	TLSEnforcing TLSMode = "Enforcing"
)

// TLSClientAuth says whether TLS clients must present a certificate.
// +kubebuilder:validation:Enum=None;Optional;Require
type TLSClientAuth string

const (
	// TLSClientAuthNone asks no client certificate.
	TLSClientAuthNone TLSClientAuth = "None"
	// TLSClientAuthOptional verifies a client certificate when one is sent.
	TLSClientAuthOptional TLSClientAuth = "Optional"
	// TLSClientAuthRequire refuses TLS clients without a valid certificate.
	TLSClientAuthRequire TLSClientAuth = "Require"
)

// TLSSpec configures TLS on the remoting port.
//
// +kubebuilder:validation:XValidation:rule="!has(self.clientCA) || (has(self.clientAuth) && self.clientAuth != 'None')",message="tls.clientCA verifies client certificates: set tls.clientAuth to Optional or Require, or remove tls.clientCA"
type TLSSpec struct {
	// SecretName of a kubernetes.io/tls Secret in the cluster's namespace:
	// tls.crt (the certificate chain, PEM) and tls.key (its unencrypted
	// private key, PEM).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SecretName string `json:"secretName"`

	// Mode: Permissive serves TLS and plain connections on the remoting
	// port (told apart by their first byte), Enforcing serves TLS only.
	// RocketMQ brokers and clients connect in plain unless configured for
	// TLS, so start with Permissive and enforce once they all use TLS.
	// Changing it rolls the pods.
	// +kubebuilder:default=Permissive
	// +optional
	Mode TLSMode `json:"mode,omitempty"`

	// ClientAuth: None asks no client certificate; Optional verifies one
	// when it is sent; Require refuses TLS clients without a valid one.
	// Client certificates are verified against clientCA.
	// +kubebuilder:default=None
	// +optional
	ClientAuth TLSClientAuth `json:"clientAuth,omitempty"`

	// ClientCA holds the CA certificates that verify client certificates.
	// Defaults to the key ca.crt of secretName (where cert-manager puts
	// the issuing CA).
	// +optional
	ClientCA *SecretKey `json:"clientCA,omitempty"`
}

// SecretKey names one key of a Secret in the cluster's namespace.
type SecretKey struct {
	// SecretName of the Secret; defaults to spec.tls.secretName.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	SecretName string `json:"secretName,omitempty"`

	// Key of the PEM file in that Secret.
	// +kubebuilder:default=ca.crt
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +optional
	Key string `json:"key,omitempty"`
}

// ConfigValue is one NameServer property value; it is written escaped, so any
// text is safe.
// +kubebuilder:validation:MaxLength=4096
type ConfigValue string

// Ports of the NameServer container.
// +kubebuilder:validation:XValidation:rule="self.remoting != self.http",message="ports.remoting and ports.http must differ"
type Ports struct {
	// Remoting is the RocketMQ protocol port brokers and clients connect to.
	// +kubebuilder:default=9876
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Remoting int32 `json:"remoting,omitempty"`

	// HTTP serves /healthz, /readyz, /metrics and the address server
	// (/rocketmq/nsaddr).
	// +kubebuilder:default=8080
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	HTTP int32 `json:"http,omitempty"`
}

// Storage configures the volume mounted at /var/lib/namesrv.
type Storage struct {
	// VolumeClaimTemplate, when set, gives every peer its own
	// PersistentVolumeClaim (data-<name>-<ordinal>) instead of an emptyDir.
	// +optional
	VolumeClaimTemplate *VolumeClaimTemplate `json:"volumeClaimTemplate,omitempty"`
}

// VolumeClaimTemplate describes the PersistentVolumeClaim of each peer.
type VolumeClaimTemplate struct {
	// Spec of the claims; at least resources.requests.storage must be set.
	// +kubebuilder:validation:XValidation:rule="has(self.resources) && has(self.resources.requests) && 'storage' in self.resources.requests",message="storage.volumeClaimTemplate.spec.resources.requests.storage is required"
	Spec corev1.PersistentVolumeClaimSpec `json:"spec"`
}

// PodDisruptionBudgetSpec configures the PodDisruptionBudget <name>.
type PodDisruptionBudgetSpec struct {
	// Enabled creates the PodDisruptionBudget; disabling it deletes it.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// MaxUnavailable peers during voluntary disruptions (a count or a
	// percentage).
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^([1-9][0-9]?|100)%$')",message="podDisruptionBudget.maxUnavailable must be a count of at least 1 or a percentage from 1% to 100%"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// ServiceSpec configures the client Service.
type ServiceSpec struct {
	// Type of the client Service.
	// +kubebuilder:default=ClusterIP
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	// +optional
	Type corev1.ServiceType `json:"type,omitempty"`

	// Annotations of the client Service (for example a cloud load balancer's).
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PublishSpec configures the address ConfigMap and its copies.
type PublishSpec struct {
	// ConfigMapName of the address ConfigMap in the cluster's namespace.
	// Defaults to <name>-namesrv-addr. Its keys, by reader: namesrvAddr
	// (brokers' broker.conf, admin tools' -n), NAMESRV_ADDR (envFrom; read
	// once at start-up), rmqAddressServerDomain and rocketmq.namesrv.domain
	// with rmqAddressServerSubGroup (brokers and Java clients that fetch the
	// list over HTTP and follow changes without restarts), namesrvAddrIPs
	// (pod IPs of the ready published peers, for clients that refuse host
	// names, such as rocketmq-client-go; they must re-read it as pods move).
	// The NameServer pods mount it at /etc/namesrv-addr to serve the list.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	ConfigMapName string `json:"configMapName,omitempty"`

	// Targets are copies of the address ConfigMap in other namespaces (where
	// brokers and clients run), kept equal to it and deleted with the cluster.
	// +listType=map
	// +listMapKey=namespace
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Targets []PublishTarget `json:"targets,omitempty"`

	// DrainSeconds is how long a peer removed from the list keeps running
	// before the StatefulSet shrinks, so that readers of the list (the
	// kubelet's ConfigMap refresh, then brokers and clients polling the
	// address server every two minutes) stop using it first.
	// +kubebuilder:default=180
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	// +optional
	DrainSeconds *int32 `json:"drainSeconds,omitempty"`
}

// PublishTarget is a ConfigMap in another namespace that receives the list.
type PublishTarget struct {
	// Namespace of the copy; it must differ from the cluster's own.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace"`

	// Name of the copy; defaults to the address ConfigMap's name.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	Name string `json:"name,omitempty"`
}

// Condition types of a NameServerCluster.
const (
	// ConditionAvailable is True when at least one published peer is ready,
	// so brokers and clients can reach a NameServer.
	ConditionAvailable = "Available"
	// ConditionProgressing is True while the operator is moving towards the
	// spec (rolling pods, scaling, publishing, draining).
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when the spec cannot be honoured or a
	// published peer is not ready.
	ConditionDegraded = "Degraded"
	// ConditionAddressesPublished is True when every address ConfigMap holds
	// the list of all spec.replicas peers.
	ConditionAddressesPublished = "AddressesPublished"
)

// NameServerClusterStatus is the observed state of the peers and of the list.
type NameServerClusterStatus struct {
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Replicas is the number of peer pods that exist.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// ReadyReplicas is the number of ready peer pods.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// PublishedReplicas is the length of the published list: ordinals
	// 0..publishedReplicas-1 are in it. It only grows once a new peer has been
	// ready, and shrinks before the StatefulSet does.
	// +optional
	PublishedReplicas int32 `json:"publishedReplicas,omitempty"`

	// DrainStartTime is when the list last shrank while the removed peers
	// still run; the StatefulSet shrinks at drainStartTime + drainSeconds.
	// +optional
	DrainStartTime *metav1.Time `json:"drainStartTime,omitempty"`

	// Addresses are the published peers' host:port, by ordinal.
	// +listType=atomic
	// +optional
	Addresses []string `json:"addresses,omitempty"`

	// NamesrvAddr is the published list joined by ';' (the value of the
	// namesrvAddr key).
	// +optional
	NamesrvAddr string `json:"namesrvAddr,omitempty"`

	// Selector of the peer pods, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// Conditions: Available, Progressing, Degraded and AddressesPublished.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NameServerCluster runs N independent RocketMQ NameServer peers and
// publishes their stable DNS addresses to brokers and clients.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=nsc,categories=rocketmq
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Addresses",type=string,JSONPath=`.status.namesrvAddr`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must start with a lowercase letter and hold only lowercase letters, digits and '-': it names the Services"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 52",message="metadata.name must be at most 52 characters: pod names and their StatefulSet revision labels must fit in 63"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.publish) || !has(self.spec.publish.configMapName) || self.spec.publish.configMapName != self.metadata.name + '-config'",message="spec.publish.configMapName cannot be <name>-config: that is the NameServer config ConfigMap"
type NameServerCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:default={}
	// +optional
	Spec NameServerClusterSpec `json:"spec,omitempty"`
	// +optional
	Status NameServerClusterStatus `json:"status,omitempty"`
}

// NameServerClusterList is a list of NameServerClusters.
//
// +kubebuilder:object:root=true
type NameServerClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NameServerCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NameServerCluster{}, &NameServerClusterList{})
}
