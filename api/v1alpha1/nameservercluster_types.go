package v1alpha1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The operator publishes two address lists, because brokers and clients need
// different ones. A broker must learn of a new peer before that peer can hold
// any route (a NameServer learns routes only from broker heartbeats); a client
// must not be sent to a peer before it holds them, or it hears that its topic
// does not exist. So:
//
//   - the broker list names every peer that runs or is about to run;
//   - the client list names only the peers that were checked to hold every
//     broker the other serving peers hold (route-complete), plus listed peers
//     while they restart, which then refuse clients until they are complete
//     again (their start-up route gate).
//
// Each list is published in a ConfigMap of its own, so that envFrom imports
// exactly one NAMESRV_ADDR, and under an address-server subgroup of its own.
//
// Keys of the client ConfigMap (<configMapName>, by default
// <name>-namesrv-addr):
//
//   - NamesrvAddrKey and NamesrvAddrEnvKey: the client list, for Java and Go
//     producers, consumers and admin tools (-n, setNamesrvAddr, envFrom).
//   - ClientAddressServerDomainKey and ClientAddressServerSubGroupKey: Java
//     clients that fetch the client list over HTTP and follow changes
//     without restarts (-Drocketmq.namesrv.domain, the subgroup nsaddr).
//   - NamesrvAddrExternalKey: the client list by the peers' external
//     addresses, when spec.externalAccess is set and they are known.
//
// Keys of the broker ConfigMap (<configMapName>-brokers):
//
//   - NamesrvAddrKey and NamesrvAddrEnvKey: the broker list, for broker.conf
//     or envFrom.
//   - AddressServerDomainKey and AddressServerSubGroupKey: brokers with
//     fetchNamesrvAddrByAddressServer=true (rmqAddressServerDomain and
//     rmqAddressServerSubGroup=brokers).
//   - NamesrvAddrExternalKey: the broker list by external addresses.
//
// Keys of the IP ConfigMap (<configMapName>-ips):
//
//   - NamesrvAddrIPsKey: the pod IPs of the ready peers of the client list,
//     for clients that refuse host names (rocketmq-client-go). It changes
//     whenever a pod restarts, which is why it has a ConfigMap of its own:
//     a controller that restarts workloads when a ConfigMap they read changes
//     (Reloader and the like) must not restart brokers on every NameServer
//     restart.
const (
	NamesrvAddrKey                 = "namesrvAddr"
	NamesrvAddrEnvKey              = "NAMESRV_ADDR"
	NamesrvAddrIPsKey              = "namesrvAddrIPs"
	NamesrvAddrExternalKey         = "namesrvAddrExternal"
	AddressServerDomainKey         = "rmqAddressServerDomain"
	AddressServerSubGroupKey       = "rmqAddressServerSubGroup"
	ClientAddressServerDomainKey   = "rocketmq.namesrv.domain"
	ClientAddressServerSubGroupKey = "rocketmq.namesrv.domain.subgroup"
)

// Address-server subgroups every NameServer serves: /rocketmq/nsaddr (and
// any nsaddr-<unit>) answers the client list, /rocketmq/brokers the broker
// list.
const (
	AddressServerSubGroup       = "nsaddr"
	BrokerAddressServerSubGroup = "brokers"
)

// Suffixes of the broker and IP ConfigMaps, after the client ConfigMap's
// name (spec.publish.configMapName or a target's name).
const (
	BrokerConfigMapSuffix = "-brokers"
	IPsConfigMapSuffix    = "-ips"
)

// AnnotationAcceptPublishFrom is the annotation of a Namespace that lists
// the NameServerClusters allowed to publish their address ConfigMaps into it through
// spec.publish.targets, as comma-separated <namespace>/<name> entries;
// <namespace>/* allows every cluster of that namespace. Without it, the
// operator refuses to write into another namespace: publishing there lets a
// cluster decide which NameServers the brokers and clients of that namespace
// use, so the namespace has to agree.
const AnnotationAcceptPublishFrom = "rocketmq.kube-namesrv.io/accept-publish-from"

// NameServerClusterSpec is the desired state of a group of NameServer peers.
// Peers never talk to each other: every broker registers with each published
// address, so the operator only has to run N pods and publish their names.
//
// +kubebuilder:validation:XValidation:rule="!has(self.hostNetwork) || !self.hostNetwork || !has(self.dnsPolicy) || self.dnsPolicy != 'ClusterFirst'",message="dnsPolicy ClusterFirst with hostNetwork resolves names with the node's DNS, not the cluster's: use ClusterFirstWithHostNet (or leave dnsPolicy unset), or Default to mean the node's"
//
// +kubebuilder:validation:XValidation:rule="has(self.storage) == has(oldSelf.storage) && (!has(self.storage) || has(self.storage.volumeClaimTemplate) == has(oldSelf.storage.volumeClaimTemplate))",message="spec.storage and spec.storage.volumeClaimTemplate cannot be added or removed after creation: a StatefulSet's volume claim templates are immutable; create a new NameServerCluster instead"
//
// +kubebuilder:validation:XValidation:rule="!has(self.externalAccess) || (has(self.externalAccess.allowUnauthenticated) && self.externalAccess.allowUnauthenticated) || (has(self.externalAccess.loadBalancerSourceRanges) && size(self.externalAccess.loadBalancerSourceRanges) > 0) || (has(self.tls) && has(self.tls.mode) && self.tls.mode == 'Enforcing' && has(self.tls.clientAuth) && self.tls.clientAuth == 'Require')",message="externalAccess exposes the remoting port outside the cluster, where anyone who reaches it may register brokers and write the KV config: set externalAccess.loadBalancerSourceRanges, or tls.mode Enforcing with tls.clientAuth Require, or externalAccess.allowUnauthenticated true to expose it anyway"
//
// +kubebuilder:validation:XValidation:rule="!has(self.authorization) || !((has(self.authorization.broker) && has(self.authorization.broker.identities) && size(self.authorization.broker.identities) > 0) || (has(self.authorization.admin) && has(self.authorization.admin.identities) && size(self.authorization.admin.identities) > 0) || (has(self.authorization.read) && has(self.authorization.read.identities) && size(self.authorization.read.identities) > 0)) || (has(self.tls) && has(self.tls.clientAuth) && self.tls.clientAuth != 'None')",message="authorization grants by client certificate, which the NameServer verifies only with tls.clientAuth Optional or Require: set spec.tls.clientAuth, or grant by networks only"
type NameServerClusterSpec struct {
	// Replicas is the number of NameServer peers.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Image of the NameServer. Empty means this project's image at the
	// operator's own version (the manager's --namesrv-image flag). A Java
	// RocketMQ image (a repository path that names rocketmq but not
	// kube-namesrv, such as apache/rocketmq) is refused: it has no
	// /namesrv, so its pods would only crash-loop.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([^@/]*/)*[^@/:]*rocketmq') || self.matches('^([^@/]*/)*[^@/:]*kube-namesrv')",message="spec.image names a Java RocketMQ image: NameServerCluster pods run /namesrv of the kube-namesrv image, which a Java image lacks (its pods would crash-loop); leave spec.image empty for the operator's own image, or name a copy of the kube-namesrv image"
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
	// into the namesrv.properties file the pods read, in a ConfigMap of each
	// revision (<name>-config-<checksum>), so a change reaches a pod only
	// when the roll restarts it, one at a time (see spec.paused); a pod the
	// roll has not reached keeps its properties, even when its container
	// restarts. Old revisions are deleted once no pod mounts them.
	//
	// The operator reads the file with the NameServer's own parser before it
	// applies anything: a value the NameServer would refuse (one that does
	// not parse as its property's type, is out of range, or a combination
	// that would stop it) is refused with Degraded=True, reason
	// ConfigInvalid, and nothing of that generation is applied.
	//
	// The operator also renders routeGateEnable=true and
	// routeGateTimeoutSeconds (two broker rounds plus 15 s) unless set here:
	// a (re)started peer refuses clients' route queries, by closing their
	// connection so that they move to another peer, until it holds every
	// broker the other serving peers hold. The operator opens the gate as
	// soon as that is true; the timeout only bounds the wait when the
	// operator is not running.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="!('listenPort' in self)",message="config.listenPort is set by the operator: use spec.ports.remoting instead"
	// +kubebuilder:validation:XValidation:rule="!('kvConfigPath' in self)",message="config.kvConfigPath is set by the operator: the KV store lives on the data volume, see spec.storage"
	// +kubebuilder:validation:XValidation:rule="!('configStorePath' in self)",message="config.configStorePath is set by the operator: the stored config lives on the data volume, see spec.storage"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[A-Za-z][A-Za-z0-9_.-]{0,127}$'))",message="config keys must be Java property names: a letter, then up to 127 letters, digits, '.', '_' or '-'"
	// +kubebuilder:validation:XValidation:rule="!self.exists(k, k.startsWith('tls.server.'))",message="config tls.server.* keys are set by the operator: use spec.tls instead"
	// +kubebuilder:validation:XValidation:rule="!self.exists(k, k.startsWith('authz') || k.startsWith('httpAuth'))",message="config authz* and httpAuth* keys are set by the operator: use spec.authorization instead"
	// +optional
	Config map[string]ConfigValue `json:"config,omitempty"`

	// Resources of the NameServer container. The operator requests 200m
	// CPU and 256Mi of memory and limits memory to twice the memory
	// request (512Mi by default), which holds about 100 brokers with 2,000
	// distinct topics each (docs/benchmarks.md has the cost curves). Each
	// of those is a default of its own: a spec that sets only a CPU
	// request keeps the memory request and limit. A default request never
	// exceeds a limit set here. The container's GOMEMLIMIT is 90% of its
	// memory limit, leaving the rest for what the Go runtime does not
	// count (stacks, the binary, fragmentation), so that the garbage
	// collector works harder before the kernel kills the container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Env adds environment variables to the NameServer container (NAMESRV_*
	// variables set NameServer properties). GOMEMLIMIT and the variables the
	// operator sets cannot be overridden.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="!self.exists(e, e.name == 'GOMEMLIMIT')",message="env cannot set GOMEMLIMIT: the operator sets it from the container's memory limit"
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// ServiceAccountName the pods run as. namesrv never calls the
	// Kubernetes API, so the token is not mounted either way.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// HostNetwork runs the pods in their node's network namespace, as the
	// hostNetwork of an apache/rocketmq-operator NameService does: brokers
	// and clients outside the pod network reach a peer at its node's IP.
	// The remoting and HTTP ports (spec.ports) are then opened on the node
	// itself (as host ports), so they must be free on every node a peer may
	// run on: the scheduler places a peer only on a node where they are
	// free, so no two peers share a node, and a peer that finds no such
	// node stays Pending (its event says "didn't have free ports"). The
	// published addresses (the lists, status.peers[].address) become each
	// peer's node IP and remoting port instead of its DNS name; a peer not
	// scheduled yet is left out of the broker list until it has a node.
	// Changing it rolls the pods.
	// +optional
	HostNetwork bool `json:"hostNetwork,omitempty"`

	// DNSPolicy of the pods: ClusterFirst, ClusterFirstWithHostNet or
	// Default (the node's resolver). Unset means ClusterFirst, or
	// ClusterFirstWithHostNet when hostNetwork is true, so that a peer on
	// the node's network still resolves cluster names; ClusterFirst with
	// hostNetwork is refused, since Kubernetes would silently use the
	// node's resolver. None is not offered: it needs a dnsConfig, which
	// this spec does not have.
	// +kubebuilder:validation:Enum=ClusterFirst;ClusterFirstWithHostNet;Default
	// +optional
	DNSPolicy corev1.DNSPolicy `json:"dnsPolicy,omitempty"`

	// Volumes are added to the pods, for VolumeMounts.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="!self.exists(v, v.name in ['config', 'namesrv-addr', 'namesrv-broker-addr', 'namesrv-kv', 'data', 'tmp', 'tls', 'tls-client-ca', 'http-token'])",message="volumes cannot use the operator's volume names: config, namesrv-addr, namesrv-broker-addr, namesrv-kv, data, tmp, tls, tls-client-ca, http-token"
	// +optional
	Volumes []corev1.Volume `json:"volumes,omitempty"`

	// VolumeMounts are added to the NameServer container.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="!self.exists(m, m.mountPath.startsWith('/etc/namesrv') || m.mountPath.startsWith('/var/lib/namesrv') || m.mountPath == '/tmp')",message="volumeMounts cannot mount over /etc/namesrv*, /var/lib/namesrv or /tmp, which the operator uses"
	// +optional
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`

	// NodeSelector constrains the nodes the pods may run on.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations of the pods.
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Affinity of the pods. The operator asks the scheduler to prefer
	// spreading peers across nodes (a soft pod anti-affinity by
	// kubernetes.io/hostname), so a node failure takes at most one peer
	// when the cluster has room for it. That default stays beside a node
	// affinity or pod affinity set here; setting podAntiAffinity replaces
	// it.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// TopologySpreadConstraints of the pods; label selectors in them usually
	// match app.kubernetes.io/instance=<name>. When empty, the operator
	// asks the scheduler to spread the peers across zones
	// (topology.kubernetes.io/zone, maxSkew 1, ScheduleAnyway: a soft rule,
	// so a single-zone cluster still schedules), so a zone outage leaves
	// peers in the other zones. Setting any constraint replaces that
	// default.
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
	// and the KV store lives as long as the pod; spec.kvConfig declares the
	// values every peer holds, whatever its storage. It cannot be added or
	// removed after creation; the claims' size can grow (see
	// VolumeClaimTemplate) and the retention policy can change.
	// +optional
	Storage *Storage `json:"storage,omitempty"`

	// KVConfig declares NameServer KV entries (what mqadmin updateKvConfig
	// and updateOrderConf write) that every peer holds, new and restarted
	// ones included, before clients are sent to it. The most common is the
	// order-message configuration: namespace ORDER_TOPIC_CONFIG, key the
	// topic, value "brokerName:queues;brokerName:queues", which route
	// answers carry when config orderMessageEnable is true.
	//
	// The entries are rendered into the ConfigMap <name>-kv, which every pod
	// mounts; the NameServer applies it when it starts, before it reports
	// ready, and again when the kubelet refreshes the file (within about a
	// minute of a change, the kubelet's sync period). A change restarts no
	// pod.
	//
	// Each namespace/key pair may appear once; the API server refuses a
	// duplicate, naming it ("Duplicate value").
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=key
	// +kubebuilder:validation:MaxItems=256
	// +optional
	KVConfig []KVConfigEntry `json:"kvConfig,omitempty"`

	// KVConfigPolicy says what the operator does with values changed by
	// hand and with KV entries it does not declare:
	//
	//   - Owned (the default): a declared key changed or deleted by hand
	//     (mqadmin updateKvConfig, deleteKvConfig) is set back on every
	//     peer. Keys the spec never declared are left alone, in the declared
	//     namespaces too: an updateOrderConf entry made by hand beside the
	//     declared ones stays.
	//   - Exclusive: as Owned, and the namespaces named in kvConfig belong
	//     to the spec: every key in them that the spec does not declare is
	//     deleted, on every peer. Choose it only when nothing else writes
	//     into those namespaces.
	//   - Additive: declared keys are written where they are missing (a
	//     declared key deleted by hand is written again); a key that holds
	//     another value is reported (KVConfigInSync=False), not overwritten;
	//     nothing undeclared is deleted.
	//
	// Under every policy, an entry removed from kvConfig is deleted from
	// every peer (status.kvConfig.removed keeps it until they all have),
	// and keys outside the declared namespaces keep working exactly as with
	// the Java NameServer.
	// +kubebuilder:default=Owned
	// +optional
	KVConfigPolicy KVConfigPolicy `json:"kvConfigPolicy,omitempty"`

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

	// ExternalAccess gives every peer a Service of its own, of type
	// LoadBalancer or NodePort, so that brokers and clients outside the
	// Kubernetes cluster can reach each NameServer: they register with, or
	// query, each peer by its own address, which one Service for all peers
	// cannot give. The external addresses are published under the key
	// namesrvAddrExternal once known, and shown in status.peers.
	// +optional
	ExternalAccess *ExternalAccessSpec `json:"externalAccess,omitempty"`

	// Paused holds rolls: while true, the operator restarts no pod to bring
	// it to a changed pod template (a config or image change, or an operator
	// upgrade that renders pods differently). Scaling, publication and
	// drains go on, and a pod the cluster recreates for any other reason
	// gets the current template. Set it before upgrading the operator to
	// choose when each cluster rolls; status shows the outdated peers.
	// Rolls are otherwise paced by the operator, one peer at a time: it
	// restarts the next peer only when every other listed peer is ready and
	// route-complete, never while fewer than replicas - maxUnavailable peers
	// serve, and a peer that does not serve anyway goes first.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// BrokerHeartbeatSeconds is how often the brokers register with every
	// NameServer (their registerNameServerPeriod, 30 s by default). The
	// operator reads each peer's route summary once per round, and reports
	// RoutesConsistent=False when a broker has been missing from a serving
	// peer for longer than a round and a quarter.
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=600
	// +optional
	BrokerHeartbeatSeconds *int32 `json:"brokerHeartbeatSeconds,omitempty"`

	// TLS serves TLS on the remoting port with the certificate of a Secret.
	// The Secrets are mounted whole, so the kubelet refreshes their files
	// and a renewed certificate is served on the next connection without
	// restarting any pod. The operator never reads them (it may read only
	// Secrets it knows the name of, and reads only its own token Secret):
	// a missing Secret or key keeps the pods from starting, and
	// their events say why. Without tls the remoting port is plain only;
	// the HTTP port (probes, metrics, address server) is plain either way.
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`

	// Authorization narrows down who may do what on the NameServers
	// (docs/security.md). Without it the peers serve every request of
	// everyone who reaches them, as the Java NameServer does. Setting or
	// changing it rolls the pods: the NameServer reads these properties at
	// start.
	// +optional
	Authorization *AuthorizationSpec `json:"authorization,omitempty"`
}

// HTTPAuthScope says which endpoints of the HTTP port need a credential.
// +kubebuilder:validation:Enum=None;Writes;All
type HTTPAuthScope string

// The HTTP auth scopes.
const (
	// HTTPAuthNone: every endpoint is open, as without spec.authorization.
	HTTPAuthNone HTTPAuthScope = "None"
	// HTTPAuthWrites: POST /routes/gate and POST /kv/declared/apply need a
	// credential.
	HTTPAuthWrites HTTPAuthScope = "Writes"
	// HTTPAuthAll: /metrics and /routes/summary need one too. Health and
	// the address server stay open.
	HTTPAuthAll HTTPAuthScope = "All"
)

// AuthorizationSpec is rendered into the NameServer's authz* and httpAuth*
// properties. Each request code belongs to one role (broker, admin or
// read); a peer holds a role when its verified client certificate matches
// one of the role's identities or its source address is in one of the
// role's networks.
//
// +kubebuilder:validation:XValidation:rule="!has(self.enable) || !self.enable || (has(self.broker) && ((has(self.broker.identities) && size(self.broker.identities) > 0) || (has(self.broker.networks) && size(self.broker.networks) > 0))) || (has(self.admin) && ((has(self.admin.identities) && size(self.admin.identities) > 0) || (has(self.admin.networks) && size(self.admin.networks) > 0))) || (has(self.read) && ((has(self.read.identities) && size(self.read.identities) > 0) || (has(self.read.networks) && size(self.read.networks) > 0)))",message="authorization.enable with no identity or network granted refuses every request of every broker and client: grant at least one role"
type AuthorizationSpec struct {
	// Enable authorizes every remoting request by role (authzEnable);
	// false serves every peer everything, as Java does, while the HTTP
	// port still follows httpAuthScope.
	// +optional
	Enable bool `json:"enable,omitempty"`

	// Broker is granted to brokers: register, unregister, heartbeats.
	// +kubebuilder:default={}
	// +optional
	Broker RoleGrants `json:"broker,omitempty"`

	// Admin is granted to admin tools: KV writes and deletes, config
	// updates, write permissions, topic deletion.
	// +kubebuilder:default={}
	// +optional
	Admin RoleGrants `json:"admin,omitempty"`

	// Read is granted to producers and consumers: routes, cluster info, KV
	// and config reads. Broker and admin include it.
	// +kubebuilder:default={}
	// +optional
	Read RoleGrants `json:"read,omitempty"`

	// BrokerNameOwnership: the first certificate identity to register a
	// broker name owns it while its group is live; registrations of that
	// name by other identities are refused (authzBrokerNameOwnership).
	// +optional
	BrokerNameOwnership bool `json:"brokerNameOwnership,omitempty"`

	// HTTPAuthScope says which endpoints of the HTTP port need a bearer
	// token or a client certificate. With Writes or All the operator
	// creates the Secret <name>-http-token with a random token, mounts it
	// into the peers and presents it itself.
	// +kubebuilder:default=Writes
	// +optional
	HTTPAuthScope HTTPAuthScope `json:"httpAuthScope,omitempty"`
}

// RoleGrants are the identities and networks granted one role.
type RoleGrants struct {
	// Identities are client-certificate patterns: cn:NAME (subject common
	// name), dns:NAME (DNS SAN) or uri:NAME (URI SAN, e.g. a SPIFFE ID),
	// each with at most one '*'. They count only when spec.tls.clientAuth
	// is Optional or Require.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:items:Pattern=`^(?i:cn|dns|uri):[^\s,]+$`
	// +optional
	Identities []string `json:"identities,omitempty"`

	// Networks are source networks, as CIDR prefixes (10.244.0.0/16,
	// fd00::/8) or single addresses. A peer behind a Service that does not
	// keep the client's address shows the node's or the load balancer's.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.all(n, isCIDR(n) || isIP(n))",message="authorization networks must be CIDR prefixes (10.0.0.0/8) or IP addresses"
	// +optional
	Networks []string `json:"networks,omitempty"`
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

	// PersistentVolumeClaimRetentionPolicy of the StatefulSet. By default a
	// claim is deleted when its peer is scaled away (whenScaled: Delete),
	// so a peer scaled back later starts empty instead of with a stale KV
	// store, and kept when the cluster is deleted (whenDeleted: Retain).
	// +optional
	PersistentVolumeClaimRetentionPolicy *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
}

// KVConfigEntry is one declared NameServer KV entry.
type KVConfigEntry struct {
	// Namespace of the entry, for example ORDER_TOPIC_CONFIG; no spaces and
	// no '/'.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[^\s/]+$`
	Namespace string `json:"namespace"`

	// Key of the entry, for example a topic name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[^\s]+$`
	Key string `json:"key"`

	// Value of the entry, for example "broker-a:4;broker-b:4". With at most
	// 256 entries of up to 2,048 characters, the rendered file stays well
	// under a ConfigMap's 1 MiB.
	// +kubebuilder:validation:MaxLength=2048
	Value string `json:"value"`
}

// KVConfigPolicy is Owned, Exclusive or Additive; see spec.kvConfigPolicy.
// +kubebuilder:validation:Enum=Owned;Exclusive;Additive
type KVConfigPolicy string

// The KV config policies.
const (
	KVConfigOwned     KVConfigPolicy = "Owned"
	KVConfigExclusive KVConfigPolicy = "Exclusive"
	KVConfigAdditive  KVConfigPolicy = "Additive"
)

// ExternalAccessType is the type of the per-peer Services.
// +kubebuilder:validation:Enum=LoadBalancer;NodePort
type ExternalAccessType string

// The external access types.
const (
	ExternalLoadBalancer ExternalAccessType = "LoadBalancer"
	ExternalNodePort     ExternalAccessType = "NodePort"
)

// ExternalAccessSpec configures one Service per peer, <name>-<ordinal>-external.
//
// +kubebuilder:validation:XValidation:rule="!has(self.loadBalancerSourceRanges) || size(self.loadBalancerSourceRanges) == 0 || !has(self.type) || self.type == 'LoadBalancer'",message="externalAccess.loadBalancerSourceRanges limits load balancers only, not node ports: use type LoadBalancer, or remove the ranges"
type ExternalAccessSpec struct {
	// Type of the per-peer Services.
	// +kubebuilder:default=LoadBalancer
	// +optional
	Type ExternalAccessType `json:"type,omitempty"`

	// Annotations of the per-peer Services (a cloud load balancer's, for
	// example to make it internal).
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// LoadBalancerClass of the per-peer Services of type LoadBalancer.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	LoadBalancerClass *string `json:"loadBalancerClass,omitempty"`

	// NodePortHost is the host published with each node port, for type
	// NodePort: a name or address that reaches the nodes from outside.
	// Without it, the address of the node the peer runs on (the pod's
	// hostIP) is published, which is only right where node addresses route.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	NodePortHost string `json:"nodePortHost,omitempty"`

	// LoadBalancerSourceRanges limit which client networks may reach the
	// per-peer Services of type LoadBalancer (the Service field of that
	// name, enforced by the cloud's balancer or kube-proxy). Node ports
	// are not limited by it, so type NodePort refuses it.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.all(n, isCIDR(n))",message="externalAccess.loadBalancerSourceRanges must be CIDR prefixes, such as 203.0.113.0/24"
	// +optional
	LoadBalancerSourceRanges []string `json:"loadBalancerSourceRanges,omitempty"`

	// AllowUnauthenticated exposes the remoting port outside the cluster
	// although nothing limits who reaches it: no loadBalancerSourceRanges
	// and no enforced client-certificate TLS. Anyone who reaches it can
	// then register brokers under real names and write the KV config. The
	// operator records a Warning event while it is set and needed.
	// +optional
	AllowUnauthenticated bool `json:"allowUnauthenticated,omitempty"`
}

// VolumeClaimTemplate describes the PersistentVolumeClaim of each peer.
// After creation only its size, spec.resources.requests.storage, may
// change, and only grow: the operator then expands every peer's claim in
// place when their StorageClass has allowVolumeExpansion, and reports
// Degraded (reason VolumeExpansionRefused) when it does not. The
// StatefulSet keeps the size it was created with, since its claim
// templates are immutable: a claim it creates later is expanded the same
// way.
//
// +kubebuilder:validation:XValidation:rule="(has(self.spec.accessModes) == has(oldSelf.spec.accessModes) && (!has(self.spec.accessModes) || self.spec.accessModes == oldSelf.spec.accessModes)) && (has(self.spec.storageClassName) == has(oldSelf.spec.storageClassName) && (!has(self.spec.storageClassName) || self.spec.storageClassName == oldSelf.spec.storageClassName)) && (has(self.spec.selector) == has(oldSelf.spec.selector) && (!has(self.spec.selector) || self.spec.selector == oldSelf.spec.selector)) && (has(self.spec.volumeMode) == has(oldSelf.spec.volumeMode) && (!has(self.spec.volumeMode) || self.spec.volumeMode == oldSelf.spec.volumeMode)) && (has(self.spec.dataSource) == has(oldSelf.spec.dataSource) && (!has(self.spec.dataSource) || self.spec.dataSource == oldSelf.spec.dataSource)) && (has(self.spec.dataSourceRef) == has(oldSelf.spec.dataSourceRef) && (!has(self.spec.dataSourceRef) || self.spec.dataSourceRef == oldSelf.spec.dataSourceRef)) && (has(self.spec.volumeName) == has(oldSelf.spec.volumeName) && (!has(self.spec.volumeName) || self.spec.volumeName == oldSelf.spec.volumeName)) && (has(self.spec.volumeAttributesClassName) == has(oldSelf.spec.volumeAttributesClassName) && (!has(self.spec.volumeAttributesClassName) || self.spec.volumeAttributesClassName == oldSelf.spec.volumeAttributesClassName)) && (has(self.spec.resources.limits) == has(oldSelf.spec.resources.limits) && (!has(self.spec.resources.limits) || self.spec.resources.limits == oldSelf.spec.resources.limits))",message="storage.volumeClaimTemplate can change only in spec.resources.requests.storage after creation: a StatefulSet's claim templates are immutable; create a new NameServerCluster for another class, access mode or source"
// +kubebuilder:validation:XValidation:rule="quantity(string(self.spec.resources.requests['storage'])).compareTo(quantity(string(oldSelf.spec.resources.requests['storage']))) >= 0",message="storage.volumeClaimTemplate.spec.resources.requests.storage cannot shrink: Kubernetes expands volumes, it never shrinks them"
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
	// ConfigMapName of the client address ConfigMap in the cluster's
	// namespace; defaults to <name>-namesrv-addr. The broker list goes to
	// <configMapName>-brokers and the client peers' IPs to
	// <configMapName>-ips. Which consumer reads which key is described with
	// the key constants of this API (NamesrvAddrKey and the others); in
	// short, clients read namesrvAddr or NAMESRV_ADDR of <configMapName>,
	// brokers the same keys of <configMapName>-brokers. The NameServer pods
	// mount both lists at /etc/namesrv-addr to serve them over HTTP.
	// +kubebuilder:validation:MaxLength=245
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	ConfigMapName string `json:"configMapName,omitempty"`

	// Targets are copies of the three address ConfigMaps in other
	// namespaces (where brokers and clients run), kept equal to them and
	// deleted with the cluster. A target namespace must agree to receive
	// them: its annotation rocketmq.kube-namesrv.io/accept-publish-from lists
	// <namespace>/<name> of the clusters it accepts (or <namespace>/*).
	// Without that, an editor of any namespace could point the brokers and
	// clients of another namespace at NameServers of their choosing. An
	// operator restricted to some namespaces (--namespaces) cannot read
	// Namespace objects; it publishes only into the namespaces it manages,
	// which its installer declared one trust domain, and checks no
	// annotation.
	// +listType=map
	// +listMapKey=namespace
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Targets []PublishTarget `json:"targets,omitempty"`

	// DrainSeconds is how long a peer removed from the list keeps running
	// before the StatefulSet shrinks, so that readers of the list stop using
	// it first. The default of 240 s is the kubelet's refresh of a mounted
	// ConfigMap (its sync period, 60 s, plus up to half again of jitter and
	// cache, so 90 s), then the two minutes after which brokers and Java
	// clients poll the address server again (120 s), plus 30 s of margin.
	// Readers that took the list from the environment (envFrom) only see a
	// change when they restart: no drain covers them.
	// +kubebuilder:default=240
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

	// Name of the client list's copy; defaults to the address ConfigMap's
	// name. The other two copies add -brokers and -ips to it.
	// +kubebuilder:validation:MaxLength=245
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	Name string `json:"name,omitempty"`
}

// NameServerClusterStatus is the observed state of the peers and of the lists.
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

	// UpdatedReplicas is the number of peer pods that run the current pod
	// template.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// PublishedReplicas is the length of the client list.
	// +optional
	PublishedReplicas int32 `json:"publishedReplicas,omitempty"`

	// DrainStartTime is when the client list last lost peers that still
	// run; the StatefulSet shrinks at drainStartTime + drainSeconds.
	// +optional
	DrainStartTime *metav1.Time `json:"drainStartTime,omitempty"`

	// LastPublishTime is when the address ConfigMaps were last written.
	// +optional
	LastPublishTime *metav1.Time `json:"lastPublishTime,omitempty"`

	// Lists records, for each of the three address lists, what every
	// address ConfigMap that holds it (the cluster's own and the accepted
	// targets') was last confirmed to hold, and since when. A write the API
	// server refused leaves the record as it was: the old content may still
	// be there. A remoting or HTTP port the lists no longer name is kept
	// open for spec.publish.drainSeconds after the last change recorded
	// here, so that the lists' readers have followed.
	// +optional
	Lists *PublishedListsStatus `json:"lists,omitempty"`

	// Addresses are the client list's host:port entries, by ordinal. The
	// list may have gaps: a new peer joins it as soon as it is ready and
	// route-complete, whatever the ordinals below it do.
	// +listType=atomic
	// +optional
	Addresses []string `json:"addresses,omitempty"`

	// NamesrvAddr is the client list joined by ';' (namesrvAddr of the
	// client ConfigMap).
	// +optional
	NamesrvAddr string `json:"namesrvAddr,omitempty"`

	// BrokerNamesrvAddr is the broker list joined by ';' (namesrvAddr of the
	// broker ConfigMap): every peer that runs or is about to.
	// +optional
	BrokerNamesrvAddr string `json:"brokerNamesrvAddr,omitempty"`

	// Peers is what the operator knows of each peer, by ordinal.
	// +listType=map
	// +listMapKey=ordinal
	// +optional
	Peers []PeerStatus `json:"peers,omitempty"`

	// KVConfig is the state of spec.kvConfig across peers.
	// +optional
	KVConfig *KVConfigStatus `json:"kvConfig,omitempty"`

	// LiveBrokers are the brokers the operator last saw live on the serving
	// peers (at most 256, sorted). When every peer restarts at once, or the
	// cluster has one replica, no serving peer can say which brokers a
	// restarted peer must hold before it answers clients: the operator then
	// asks its start-up gate to wait for these and for those the peer itself
	// recorded, or for one broker round and a quarter, whichever comes
	// first. Kept while no serving peer can be read.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	// +optional
	LiveBrokers []BrokerRef `json:"liveBrokers,omitempty"`

	// Selector of the peer pods, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// Manager is the operator install that manages this cluster. Another
	// install (a second operator, cluster-wide beside namespaced, or of
	// another version) defers to it and changes nothing, so that two
	// managers never both restart pods or apply their templates. It takes
	// over only when this one is gone: a spec change it has not observed
	// for five minutes, or a cluster that is moving (Progressing=True)
	// without a heartbeat for five minutes. To hand the cluster over at
	// once, uninstall this one and remove status.manager.
	// +optional
	Manager *ManagerStatus `json:"manager,omitempty"`

	// Conditions: Available, Progressing, Degraded, AddressesPublished,
	// RoutesConsistent and KVConfigInSync (see the Condition* constants).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PeerStatus is one peer as the operator last saw it.
type PeerStatus struct {
	// Ordinal of the peer's pod.
	Ordinal int32 `json:"ordinal"`

	// Name of the peer's pod.
	Name string `json:"name"`

	// Address is the peer's stable host:port; for a peer in the client list,
	// the address published there.
	Address string `json:"address"`

	// PodIP of the peer's pod, when it has one.
	// +optional
	PodIP string `json:"podIP,omitempty"`

	// Node the peer's pod is scheduled to, when it is.
	// +optional
	Node string `json:"node,omitempty"`

	// Zone of that node (its topology.kubernetes.io/zone label), when the
	// operator can read Nodes and the label is set.
	// +optional
	Zone string `json:"zone,omitempty"`

	// StuckTerminatingSince is set while the peer's pod is stuck
	// terminating: it was deleted, its grace period is over, and it is
	// still there, typically because its node is down and no kubelet
	// confirms the deletion. It is when the grace period ended. The
	// StatefulSet does not recreate the pod until it is gone; see the
	// NamesrvPodStuckTerminating runbook for when to force-delete it.
	// +optional
	StuckTerminatingSince *metav1.Time `json:"stuckTerminatingSince,omitempty"`

	// ExternalAddress is the host:port of the peer's external Service, once
	// known (spec.externalAccess).
	// +optional
	ExternalAddress string `json:"externalAddress,omitempty"`

	// Ready is the pod's readiness.
	Ready bool `json:"ready"`

	// Published tells whether the peer is in the client list.
	Published bool `json:"published"`

	// Updated tells whether the pod runs the current pod template.
	Updated bool `json:"updated"`

	// Reachable tells whether the operator could read the peer's route
	// summary at its last check; unset before any check. An unreachable
	// peer is reported, never taken for an empty one.
	// +optional
	Reachable *bool `json:"reachable,omitempty"`

	// RouteComplete tells whether the peer held, at the last check, every
	// broker that is live on the other serving peers; unset when unknown.
	// +optional
	RouteComplete *bool `json:"routeComplete,omitempty"`

	// Brokers is the number of live brokers the peer held at the last check.
	// +optional
	Brokers *int32 `json:"brokers,omitempty"`

	// MissingBrokers are live brokers of the other serving peers that this
	// peer lacks, as <cluster>/<brokerName>@<address> (at most 10).
	// +listType=atomic
	// +optional
	MissingBrokers []string `json:"missingBrokers,omitempty"`

	// KVConfigInSync tells whether the peer holds spec.kvConfig as the
	// policy asks; unset when unknown.
	// +optional
	KVConfigInSync *bool `json:"kvConfigInSync,omitempty"`

	// KVConfigDrift are the declared keys that differ on this peer, as
	// <namespace>/<key>: <reason> (at most 10).
	// +listType=atomic
	// +optional
	KVConfigDrift []string `json:"kvConfigDrift,omitempty"`

	// Message says what the peer waits for, or why it cannot be checked.
	// +optional
	Message string `json:"message,omitempty"`
}

// BrokerRef names one live broker address, as a NameServer's route table
// keys it.
type BrokerRef struct {
	// Cluster is the broker's cluster name.
	// +kubebuilder:validation:MaxLength=255
	Cluster string `json:"cluster"`
	// Addr is the broker's host:port.
	// +kubebuilder:validation:MaxLength=255
	Addr string `json:"addr"`
}

// ManagerStatus names the operator install that manages a cluster.
type ManagerStatus struct {
	// Identity of the install (the manager's --manager-identity, by default
	// <its namespace>/kube-namesrv).
	// +kubebuilder:validation:MaxLength=253
	Identity string `json:"identity"`
	// HeartbeatTime is when it last wrote the status while the cluster was
	// moving; renewed every minute while it moves, never while it is still.
	// +optional
	HeartbeatTime *metav1.Time `json:"heartbeatTime,omitempty"`
}

// PublishedListsStatus is the record of the three address lists.
type PublishedListsStatus struct {
	// Clients is the client list's ConfigMap (<configMapName>).
	// +optional
	Clients PublishedListStatus `json:"clients,omitempty"`
	// Brokers is the broker list's ConfigMap (<configMapName>-brokers).
	// +optional
	Brokers PublishedListStatus `json:"brokers,omitempty"`
	// IPs is the IP list's ConfigMap (<configMapName>-ips).
	// +optional
	IPs PublishedListStatus `json:"ips,omitempty"`
}

// PublishedListStatus is what every ConfigMap of one list holds.
type PublishedListStatus struct {
	// Digest identifies the data every ConfigMap of the list holds.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Digest string `json:"digest,omitempty"`
	// ChangedTime is when every ConfigMap of the list came to hold it.
	// +optional
	ChangedTime *metav1.Time `json:"changedTime,omitempty"`
}

// KVConfigStatus remembers what spec.kvConfig declared, so that an entry
// removed from it is removed from every peer too.
type KVConfigStatus struct {
	// Declared are the <namespace>/<key> pairs of the last applied spec.
	// +listType=atomic
	// +optional
	Declared []string `json:"declared,omitempty"`

	// Removed are pairs that an earlier spec declared and the current one
	// does not; the operator asks every peer to delete them, and forgets
	// them once every peer holds the current declaration.
	// +listType=atomic
	// +optional
	Removed []string `json:"removed,omitempty"`
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
// +kubebuilder:printcolumn:name="Published",type=integer,JSONPath=`.status.publishedReplicas`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="Paused",type=boolean,JSONPath=`.spec.paused`,priority=1
// +kubebuilder:printcolumn:name="Routes",type=string,JSONPath=`.status.conditions[?(@.type=="RoutesConsistent")].status`,priority=1
// +kubebuilder:printcolumn:name="Addresses",type=string,JSONPath=`.status.namesrvAddr`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must start with a lowercase letter and hold only lowercase letters, digits and '-': it names the Services"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 52",message="metadata.name must be at most 52 characters: pod names and their StatefulSet revision labels must fit in 63"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.publish) || !has(self.spec.publish.configMapName) || !(self.spec.publish.configMapName in [self.metadata.name + '-config', self.metadata.name + '-kv'] || self.spec.publish.configMapName.startsWith(self.metadata.name + '-config-'))",message="spec.publish.configMapName cannot be <name>-config, <name>-config-* or <name>-kv: those are the NameServer config and KV ConfigMaps"
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
