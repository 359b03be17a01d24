package render

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// Args are the namesrv command-line arguments (the image contract): ports
// and paths are flags, which override the properties file, so the file
// carries only what the user configured.
//
// extraPorts are remoting ports the NameServer serves besides
// spec.ports.remoting while it moves to that port: the ports brokers and
// clients may still use (see OldRemotingPorts).
func Args(c *v1alpha1.NameServerCluster, extraPorts ...int32) []string {
	args := []string{
		"-c", ConfigDir + "/" + ConfigKey,
		fmt.Sprintf("--listen-port=%d", c.Spec.Ports.Remoting),
		fmt.Sprintf("--http-port=%d", c.Spec.Ports.HTTP),
		"--kv-config-path=" + DataDir + "/kvConfig.json",
		"--config-store-path=" + DataDir + "/namesrv.properties",
		"--address-file=" + AddressDir + "/" + v1alpha1.NamesrvAddrKey,
		"--broker-address-file=" + BrokerAddressDir + "/" + v1alpha1.NamesrvAddrKey,
		"--kv-declared-file=" + KVDir + "/" + KVKey,
	}
	if len(extraPorts) > 0 {
		ports := make([]string, 0, len(extraPorts))
		for _, p := range extraPorts {
			ports = append(ports, strconv.Itoa(int(p)))
		}
		args = append(args, "--extra-listen-ports="+strings.Join(ports, ","))
	}
	// Without spec.tls no TLS flag is rendered: namesrv's default without
	// a certificate is plain only, and an operator upgrade must not change
	// the pod template of clusters that do not use TLS, which would roll them.
	t := c.Spec.TLS
	if t == nil {
		return args
	}
	args = append(args,
		"--tls-mode="+strings.ToLower(string(t.Mode)),
		"--tls-cert="+TLSDir+"/"+corev1.TLSCertKey,
		"--tls-key="+TLSDir+"/"+corev1.TLSPrivateKeyKey,
	)
	if clientAuth(t) {
		args = append(args,
			"--tls-client-auth="+strings.ToLower(string(t.ClientAuth)),
			"--tls-trust-cert="+clientCAPath(t),
		)
	}
	return args
}

func clientAuth(t *v1alpha1.TLSSpec) bool {
	return t.ClientAuth != "" && t.ClientAuth != v1alpha1.TLSClientAuthNone
}

// clientCA is the Secret and key holding the CA that verifies client
// certificates: by default ca.crt of the server certificate's Secret.
func clientCA(t *v1alpha1.TLSSpec) (secret, key string) {
	secret, key = t.SecretName, DefaultClientCAKey
	if t.ClientCA != nil {
		if t.ClientCA.SecretName != "" {
			secret = t.ClientCA.SecretName
		}
		if t.ClientCA.Key != "" {
			key = t.ClientCA.Key
		}
	}
	return secret, key
}

// separateClientCA tells whether the client CA needs a volume of its own.
func separateClientCA(t *v1alpha1.TLSSpec) bool {
	secret, _ := clientCA(t)
	return clientAuth(t) && secret != t.SecretName
}

func clientCAPath(t *v1alpha1.TLSSpec) string {
	_, key := clientCA(t)
	if separateClientCA(t) {
		return ClientCADir + "/" + key
	}
	return TLSDir + "/" + key
}

// DefaultPodSecurityContext passes the restricted Pod Security Standard.
// fsGroup makes a persistent volume writable by the non-root user.
func DefaultPodSecurityContext() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:        ptr.To(true),
		RunAsUser:           ptr.To[int64](NonRootID),
		RunAsGroup:          ptr.To[int64](NonRootID),
		FSGroup:             ptr.To[int64](NonRootID),
		FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
		SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// DefaultContainerSecurityContext passes the restricted Pod Security
// Standard; the root filesystem is read-only because namesrv writes only to
// /var/lib/namesrv and /tmp.
func DefaultContainerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// DefaultResources are the NameServer container's resources when
// spec.resources is empty (Resources fills in each one it leaves out), sized from the cost curves of docs/benchmarks.md
// for a cluster of up to 250,000 topic entries (topics times the broker
// groups serving them; 100 groups of 1,000 topics measured 81-86 MiB). A
// peer's steady memory is about 10 MiB plus 0.8 KiB per entry, about
// 210 MiB there: the request holds it, and the limit (from which GOMEMLIMIT
// is set) leaves twice that for a restart storm's registrations in flight.
// CPU is mostly route queries at up to 2.6 µs each: 200m serves about
// 80,000 a second. There is no CPU limit, so a restart storm (1,000 brokers
// of 1,000 topics: about 6 s of one core) bursts instead of being
// throttled. docs/operator.md, "Size a NameServerCluster", has the larger sizes.
func DefaultResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("200m"),
			corev1.ResourceMemory: resource.MustParse("256Mi"),
		},
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
	}
}

// Resources are the NameServer container's resources: spec.resources, with
// each default of DefaultResources filling in what it leaves out, one
// resource at a time, so that a spec setting only a CPU request keeps the
// memory request and limit. A default request never exceeds a limit the
// spec sets (the API server would refuse the pod), and the default memory
// limit is twice the memory request, the headroom DefaultResources gives.
func Resources(c *v1alpha1.NameServerCluster) corev1.ResourceRequirements {
	r := *c.Spec.Resources.DeepCopy()
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	if r.Limits == nil {
		r.Limits = corev1.ResourceList{}
	}
	def := DefaultResources()
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := r.Requests[name]; ok {
			continue
		}
		q := def.Requests[name]
		if l, ok := r.Limits[name]; ok && l.Cmp(q) < 0 {
			q = l
		}
		r.Requests[name] = q
	}
	if _, ok := r.Limits[corev1.ResourceMemory]; !ok {
		q := r.Requests[corev1.ResourceMemory]
		q.Add(q)
		r.Limits[corev1.ResourceMemory] = q
	}
	return r
}

// GoMemLimit is the container's GOMEMLIMIT, in bytes: 90% of its memory
// limit. The Go runtime's limit counts only the memory it manages; the rest
// (goroutine stacks outside the heap's accounting, the binary, page
// fragmentation) needs headroom below the cgroup's limit, or the kernel
// kills the container before the collector has worked harder.
func GoMemLimit(r corev1.ResourceRequirements) string {
	l := r.Limits[corev1.ResourceMemory]
	return strconv.FormatInt(l.Value()/10*9, 10)
}

// ZoneLabel is the well-known label of a node's zone.
const ZoneLabel = corev1.LabelTopologyZone

// DefaultTopologySpreadConstraints spread the peers across zones when the
// scheduler can: ScheduleAnyway, so that a cluster with one zone, or with
// fewer zones than peers, still schedules every peer.
func DefaultTopologySpreadConstraints(c *v1alpha1.NameServerCluster) []corev1.TopologySpreadConstraint {
	return []corev1.TopologySpreadConstraint{{
		MaxSkew:           1,
		TopologyKey:       ZoneLabel,
		WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector:     &metav1.LabelSelector{MatchLabels: SelectorLabels(c)},
	}}
}

// Affinity is spec.affinity with the default pod anti-affinity beside it,
// unless the spec sets a pod anti-affinity of its own: a node affinity (to
// keep the peers on some nodes) says nothing about spreading them.
func Affinity(c *v1alpha1.NameServerCluster) *corev1.Affinity {
	if c.Spec.Affinity == nil {
		return DefaultAffinity(c)
	}
	a := c.Spec.Affinity.DeepCopy()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = DefaultAffinity(c).PodAntiAffinity
	}
	return a
}

// DNSPolicy is the pods' DNS policy, "" for the API server's default
// (ClusterFirst): spec.dnsPolicy, else ClusterFirstWithHostNet on the host
// network, where ClusterFirst would resolve with the node's resolver.
func DNSPolicy(c *v1alpha1.NameServerCluster) corev1.DNSPolicy {
	switch {
	case c.Spec.DNSPolicy != "":
		return c.Spec.DNSPolicy
	case c.Spec.HostNetwork:
		return corev1.DNSClusterFirstWithHostNet
	}
	return ""
}

// DefaultAffinity prefers one peer per node: a soft rule, so a cluster with
// fewer nodes than peers still schedules.
func DefaultAffinity(c *v1alpha1.NameServerCluster) *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: SelectorLabels(c)},
				TopologyKey:   corev1.LabelHostname,
			},
		}},
	}}
}

// StatefulSet runs the peers: one namesrv container per pod, no sidecars.
// replicas comes from the publication plan, not straight from the spec,
// because a scale-down keeps removed peers running while they drain.
//
// extraPorts are passed to Args: the pods also listen on them.
func StatefulSet(c *v1alpha1.NameServerCluster, o Options, replicas int32, extraPorts ...int32) (*appsv1ac.StatefulSetApplyConfiguration, error) {
	pod, err := podTemplate(c, o, extraPorts)
	if err != nil {
		return nil, fmt.Errorf("rendering the pod template of %s/%s: %w", c.Namespace, c.Name, err)
	}
	spec := appsv1ac.StatefulSetSpec().
		WithReplicas(replicas).
		WithServiceName(HeadlessServiceName(c)).
		// Peers are independent, so they start and stop together; the
		// publication plan, not the pod order, decides who is in the list.
		WithPodManagementPolicy(appsv1.ParallelPodManagement).
		// The operator restarts pods for a new template itself, one at a
		// time and only while the other peers serve (package rollout): the
		// StatefulSet controller's rolling update would delete a pod while
		// lower ordinals are down and knows nothing of routes.
		WithUpdateStrategy(appsv1ac.StatefulSetUpdateStrategy().WithType(appsv1.OnDeleteStatefulSetStrategyType)).
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(c))).
		WithTemplate(pod)
	if vct := volumeClaimTemplate(c); vct != nil {
		pvc := corev1ac.PersistentVolumeClaim(DataVolume, "").WithLabels(SelectorLabels(c))
		if err := convert(vct.Spec, &pvc.Spec); err != nil {
			return nil, fmt.Errorf("rendering the volume claim template of %s/%s: %w", c.Namespace, c.Name, err)
		}
		spec.WithVolumeClaimTemplates(pvc)
	}
	retention := appsv1ac.StatefulSetPersistentVolumeClaimRetentionPolicy().
		WithWhenScaled(appsv1.DeletePersistentVolumeClaimRetentionPolicyType).
		WithWhenDeleted(appsv1.RetainPersistentVolumeClaimRetentionPolicyType)
	if st := c.Spec.Storage; st != nil && st.PersistentVolumeClaimRetentionPolicy != nil {
		if p := st.PersistentVolumeClaimRetentionPolicy; p.WhenScaled != "" {
			retention.WithWhenScaled(p.WhenScaled)
		}
		if p := st.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted != "" {
			retention.WithWhenDeleted(p.WhenDeleted)
		}
	}
	spec.WithPersistentVolumeClaimRetentionPolicy(retention)
	return appsv1ac.StatefulSet(StatefulSetName(c), c.Namespace).
		WithLabels(Labels(c)).
		WithOwnerReferences(ownerReference(c)).
		WithSpec(spec), nil
}

func volumeClaimTemplate(c *v1alpha1.NameServerCluster) *v1alpha1.VolumeClaimTemplate {
	if c.Spec.Storage == nil {
		return nil
	}
	return c.Spec.Storage.VolumeClaimTemplate
}

func podTemplate(c *v1alpha1.NameServerCluster, o Options, extraPorts []int32) (*corev1ac.PodTemplateSpecApplyConfiguration, error) {
	labels := maps.Clone(c.Spec.PodLabels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, Labels(c))
	annotations := maps.Clone(c.Spec.PodAnnotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	// The TLS Secrets are not in the checksum: namesrv re-reads renewed
	// certificates itself, and rolling every peer at each renewal would
	// only cost availability.
	annotations[AnnotationConfigChecksum] = ConfigChecksum(c)

	container, err := namesrvContainer(c, o, extraPorts)
	if err != nil {
		return nil, err
	}
	vols := volumes(c)
	for _, v := range c.Spec.Volumes {
		ac := &corev1ac.VolumeApplyConfiguration{}
		if err := convert(v, ac); err != nil {
			return nil, fmt.Errorf("volumes: %w", err)
		}
		vols = append(vols, ac)
	}
	spec := corev1ac.PodSpec().
		WithContainers(container).
		WithVolumes(vols...).
		// namesrv never calls the Kubernetes API.
		WithAutomountServiceAccountToken(false).
		WithEnableServiceLinks(false).
		WithTerminationGracePeriodSeconds(TerminationSeconds)

	podSC := &corev1ac.PodSecurityContextApplyConfiguration{}
	if err := overlay(DefaultPodSecurityContext(), c.Spec.PodSecurityContext, podSC); err != nil {
		return nil, fmt.Errorf("pod security context: %w", err)
	}
	spec.WithSecurityContext(podSC)

	spec.Affinity = &corev1ac.AffinityApplyConfiguration{}
	if err := convert(Affinity(c), spec.Affinity); err != nil {
		return nil, fmt.Errorf("affinity: %w", err)
	}
	// Rendered only when set: an operator upgrade must not change the pod
	// template of clusters that do not use them, which would roll them.
	if c.Spec.HostNetwork {
		spec.WithHostNetwork(true)
	}
	if p := DNSPolicy(c); p != "" {
		spec.WithDNSPolicy(p)
	}
	for _, t := range c.Spec.Tolerations {
		ac := &corev1ac.TolerationApplyConfiguration{}
		if err := convert(t, ac); err != nil {
			return nil, fmt.Errorf("tolerations: %w", err)
		}
		spec.WithTolerations(ac)
	}
	spread := c.Spec.TopologySpreadConstraints
	if len(spread) == 0 {
		spread = DefaultTopologySpreadConstraints(c)
	}
	for _, t := range spread {
		ac := &corev1ac.TopologySpreadConstraintApplyConfiguration{}
		if err := convert(t, ac); err != nil {
			return nil, fmt.Errorf("topology spread constraints: %w", err)
		}
		spec.WithTopologySpreadConstraints(ac)
	}
	for _, s := range c.Spec.ImagePullSecrets {
		spec.WithImagePullSecrets(corev1ac.LocalObjectReference().WithName(s.Name))
	}
	if len(c.Spec.NodeSelector) > 0 {
		spec.WithNodeSelector(c.Spec.NodeSelector)
	}
	if c.Spec.PriorityClassName != "" {
		spec.WithPriorityClassName(c.Spec.PriorityClassName)
	}
	if c.Spec.ServiceAccountName != "" {
		spec.WithServiceAccountName(c.Spec.ServiceAccountName)
	}
	return corev1ac.PodTemplateSpec().
		WithLabels(labels).
		WithAnnotations(annotations).
		WithSpec(spec), nil
}

func namesrvContainer(c *v1alpha1.NameServerCluster, o Options, extraPorts []int32) (*corev1ac.ContainerApplyConfiguration, error) {
	ctr := corev1ac.Container().
		WithName(ContainerName).
		WithImage(Image(c, o)).
		WithCommand("/namesrv").
		WithArgs(Args(c, extraPorts...)...).
		WithPorts(containerPorts(c, extraPorts)...).
		// /readyz is unready while the start-up route gate is closed, so
		// readiness means "serves clients"; /healthz fails when the
		// remoting server or the route table is stuck, not only HTTP.
		WithReadinessProbe(httpProbe("/readyz", 5, 3)).
		WithLivenessProbe(httpProbe("/healthz", 10, 6)).
		// Endpoints drop a terminating pod at once, but kube-proxy and
		// clients' connection pools take a moment to follow: the listener
		// stays open that long before the SIGTERM that closes it.
		WithLifecycle(corev1ac.Lifecycle().WithPreStop(corev1ac.LifecycleHandler().
			WithSleep(corev1ac.SleepAction().WithSeconds(PreStopSeconds)))).
		WithEnv(corev1ac.EnvVar().WithName("GOMEMLIMIT").WithValue(GoMemLimit(Resources(c)))).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(ConfigVolume).WithMountPath(ConfigDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(AddressVolume).WithMountPath(AddressDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(BrokerAddressVolume).WithMountPath(BrokerAddressDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(KVVolume).WithMountPath(KVDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(DataVolume).WithMountPath(DataDir),
			corev1ac.VolumeMount().WithName(TmpVolume).WithMountPath(TmpDir),
		)
	for _, e := range c.Spec.Env {
		ac := &corev1ac.EnvVarApplyConfiguration{}
		if err := convert(e, ac); err != nil {
			return nil, fmt.Errorf("env: %w", err)
		}
		ctr.WithEnv(ac)
	}
	for _, m := range c.Spec.VolumeMounts {
		ac := &corev1ac.VolumeMountApplyConfiguration{}
		if err := convert(m, ac); err != nil {
			return nil, fmt.Errorf("volumeMounts: %w", err)
		}
		ctr.WithVolumeMounts(ac)
	}
	// Whole volumes, never subPath: the kubelet does not refresh a subPath
	// mount, so a renewed certificate would never reach namesrv.
	if t := c.Spec.TLS; t != nil {
		ctr.WithVolumeMounts(corev1ac.VolumeMount().WithName(TLSVolume).WithMountPath(TLSDir).WithReadOnly(true))
		if separateClientCA(t) {
			ctr.WithVolumeMounts(corev1ac.VolumeMount().WithName(ClientCAVolume).WithMountPath(ClientCADir).WithReadOnly(true))
		}
	}
	if HTTPTokenEnabled(c) {
		ctr.WithVolumeMounts(corev1ac.VolumeMount().WithName(HTTPTokenVolume).WithMountPath(HTTPTokenDir).WithReadOnly(true))
	}
	if c.Spec.ImagePullPolicy != "" {
		ctr.WithImagePullPolicy(c.Spec.ImagePullPolicy)
	}
	ctr.Resources = &corev1ac.ResourceRequirementsApplyConfiguration{}
	if err := convert(Resources(c), ctr.Resources); err != nil {
		return nil, fmt.Errorf("resources: %w", err)
	}
	sc := &corev1ac.SecurityContextApplyConfiguration{}
	if err := overlay(DefaultContainerSecurityContext(), c.Spec.ContainerSecurityContext, sc); err != nil {
		return nil, fmt.Errorf("container security context: %w", err)
	}
	return ctr.WithSecurityContext(sc), nil
}

// httpProbe probes the HTTP side port by name, so a port change in the spec
// needs no probe change.
func httpProbe(path string, period, failures int32) *corev1ac.ProbeApplyConfiguration {
	return corev1ac.Probe().
		WithHTTPGet(corev1ac.HTTPGetAction().WithPath(path).WithPort(intstr.FromString(HTTPPortName))).
		WithPeriodSeconds(period).
		WithTimeoutSeconds(2).
		WithFailureThreshold(failures)
}

func volumes(c *v1alpha1.NameServerCluster) []*corev1ac.VolumeApplyConfiguration {
	vols := []*corev1ac.VolumeApplyConfiguration{
		corev1ac.Volume().WithName(ConfigVolume).
			WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(ConfigMapName(c))),
		// Optional: a pod starts before the first list is published, and the
		// kubelet refreshes the file as the list changes, so namesrv's
		// address server follows it without a restart.
		corev1ac.Volume().WithName(AddressVolume).
			WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(AddressConfigMapName(c)).WithOptional(true)),
		corev1ac.Volume().WithName(BrokerAddressVolume).
			WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(BrokerAddressConfigMapName(c)).WithOptional(true)),
		// Optional too, and never in the checksum: a kvConfig change
		// reaches the running peers through the kubelet's refresh.
		corev1ac.Volume().WithName(KVVolume).
			WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(KVConfigMapName(c)).WithOptional(true)),
		corev1ac.Volume().WithName(TmpVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
	}
	if volumeClaimTemplate(c) == nil {
		vols = append(vols, corev1ac.Volume().WithName(DataVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()))
	}
	if t := c.Spec.TLS; t != nil {
		vols = append(vols, corev1ac.Volume().WithName(TLSVolume).
			WithSecret(corev1ac.SecretVolumeSource().WithSecretName(t.SecretName)))
		if separateClientCA(t) {
			secret, _ := clientCA(t)
			vols = append(vols, corev1ac.Volume().WithName(ClientCAVolume).
				WithSecret(corev1ac.SecretVolumeSource().WithSecretName(secret)))
		}
	}
	// Not in the checksum either: a new token reaches the running peers
	// through the kubelet's refresh of the volume, and namesrv re-reads it.
	if HTTPTokenEnabled(c) {
		vols = append(vols, corev1ac.Volume().WithName(HTTPTokenVolume).
			WithSecret(corev1ac.SecretVolumeSource().WithSecretName(HTTPTokenSecretName(c))))
	}
	return vols
}

// containerPorts are the remoting and HTTP ports, then those a NameServer
// serves while it moves to a new remoting port (remoting-<port>), named for
// NetworkPolicies and readers of the pod spec; the operator's own
// "remoting" port is always the new one. On the host network each is also
// a host port, as the API server would default it: written out, so that
// the scheduler's free-port check is visible in the template.
func containerPorts(c *v1alpha1.NameServerCluster, extra []int32) []*corev1ac.ContainerPortApplyConfiguration {
	port := func(name string, p int32) *corev1ac.ContainerPortApplyConfiguration {
		ac := corev1ac.ContainerPort().WithName(name).WithContainerPort(p).WithProtocol(corev1.ProtocolTCP)
		if c.Spec.HostNetwork {
			ac.WithHostPort(p)
		}
		return ac
	}
	out := []*corev1ac.ContainerPortApplyConfiguration{
		port(RemotingPortName, c.Spec.Ports.Remoting),
		port(HTTPPortName, c.Spec.Ports.HTTP),
	}
	for _, p := range extra {
		out = append(out, port(fmt.Sprintf("%s-%d", RemotingPortName, p), p))
	}
	return out
}

// ListenPortsOf reads the remoting ports a rendered pod template serves:
// its --listen-port and its --extra-listen-ports.
func ListenPortsOf(args []string) []int32 {
	var out []int32
	for _, a := range args {
		v, ok := strings.CutPrefix(a, "--extra-listen-ports=")
		if !ok {
			v, ok = strings.CutPrefix(a, "--listen-port=")
		}
		if !ok {
			continue
		}
		for _, f := range strings.Split(v, ",") {
			if p, err := strconv.Atoi(f); err == nil {
				out = append(out, int32(p))
			}
		}
	}
	return out
}
