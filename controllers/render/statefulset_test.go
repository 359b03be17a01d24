package render

import (
	"maps"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

func renderStatefulSet(t *testing.T, c *v1alpha1.NameServerCluster, replicas int32) *appsv1.StatefulSet {
	t.Helper()
	ac, err := StatefulSet(c, testOptions, replicas)
	if err != nil {
		t.Fatalf("StatefulSet(): %v", err)
	}
	return typed[appsv1.StatefulSet](t, ac)
}

func TestStatefulSetDefaults(t *testing.T) {
	c := cluster()
	sts := renderStatefulSet(t, c, 4)
	checkLabels(t, sts.Labels)
	checkOwner(t, sts.OwnerReferences)
	s := sts.Spec
	if sts.Name != "ns1" || sts.Namespace != "mq" || ptr.Deref(s.Replicas, 0) != 4 || s.ServiceName != "ns1-headless" {
		t.Errorf("name=%s/%s replicas=%v serviceName=%q", sts.Namespace, sts.Name, s.Replicas, s.ServiceName)
	}
	// The operator paces rolls itself: the StatefulSet controller must not
	// restart pods on a template change.
	if s.PodManagementPolicy != appsv1.ParallelPodManagement || s.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType || s.UpdateStrategy.RollingUpdate != nil {
		t.Errorf("policy=%q strategy=%+v, want Parallel and OnDelete", s.PodManagementPolicy, s.UpdateStrategy)
	}
	wantRetention := &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenScaled: appsv1.DeletePersistentVolumeClaimRetentionPolicyType, WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
	if !equality.Semantic.DeepEqual(s.PersistentVolumeClaimRetentionPolicy, wantRetention) {
		t.Errorf("claim retention = %+v, want %+v", s.PersistentVolumeClaimRetentionPolicy, wantRetention)
	}
	selector := map[string]string{"app.kubernetes.io/name": "namesrv", "app.kubernetes.io/instance": "ns1"}
	if s.Selector == nil || !maps.Equal(s.Selector.MatchLabels, selector) {
		t.Errorf("selector = %v, want %v", s.Selector, selector)
	}
	if len(s.VolumeClaimTemplates) != 0 {
		t.Errorf("volume claim templates without spec.storage: %v", s.VolumeClaimTemplates)
	}
	checkLabels(t, s.Template.Labels)
	if got := s.Template.Annotations[AnnotationConfigChecksum]; got != ConfigChecksum(c) {
		t.Errorf("checksum annotation = %q, want %q", got, ConfigChecksum(c))
	}

	pod := s.Template.Spec
	if ptr.Deref(pod.TerminationGracePeriodSeconds, 0) != 30 || ptr.Deref(pod.AutomountServiceAccountToken, true) || ptr.Deref(pod.EnableServiceLinks, true) {
		t.Errorf("grace=%v automount=%v serviceLinks=%v", pod.TerminationGracePeriodSeconds, pod.AutomountServiceAccountToken, pod.EnableServiceLinks)
	}
	if pod.ServiceAccountName != "" || pod.PriorityClassName != "" || len(pod.NodeSelector)+len(pod.Tolerations)+len(pod.TopologySpreadConstraints)+len(pod.ImagePullSecrets) != 0 {
		t.Errorf("serviceAccount=%q priority=%q nodeSelector=%v tolerations=%v spread=%v pullSecrets=%v without the spec asking",
			pod.ServiceAccountName, pod.PriorityClassName, pod.NodeSelector, pod.Tolerations, pod.TopologySpreadConstraints, pod.ImagePullSecrets)
	}
	if !equality.Semantic.DeepEqual(pod.SecurityContext, DefaultPodSecurityContext()) {
		t.Errorf("pod security context = %+v", pod.SecurityContext)
	}
	if !equality.Semantic.DeepEqual(pod.Affinity, DefaultAffinity(c)) {
		t.Errorf("affinity = %+v, want the soft anti-affinity", pod.Affinity)
	}
	if pod.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		t.Errorf("default anti-affinity must be soft")
	}
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 {
		t.Fatalf("containers = %d, init containers = %d: want exactly one namesrv container", len(pod.Containers), len(pod.InitContainers))
	}
	ctr := pod.Containers[0]
	if ctr.Name != "namesrv" || ctr.Image != "kube-namesrv/kube-namesrv:v9.9.9" || ctr.ImagePullPolicy != "" {
		t.Errorf("container %q image %q pull policy %q", ctr.Name, ctr.Image, ctr.ImagePullPolicy)
	}
	wantArgs := []string{
		"-c", "/etc/namesrv/namesrv.properties", "--listen-port=9876", "--http-port=8080",
		"--kv-config-path=/var/lib/namesrv/kvConfig.json", "--config-store-path=/var/lib/namesrv/namesrv.properties",
		"--address-file=/etc/namesrv-addr/namesrvAddr",
		"--broker-address-file=/etc/namesrv-broker-addr/namesrvAddr",
		"--kv-declared-file=/etc/namesrv-kv/kvConfig.json",
	}
	if !slices.Equal(ctr.Command, []string{"/namesrv"}) || !slices.Equal(ctr.Args, wantArgs) {
		t.Errorf("command %v args %v, want /namesrv %v", ctr.Command, ctr.Args, wantArgs)
	}
	wantPorts := []corev1.ContainerPort{
		{Name: "remoting", ContainerPort: 9876, Protocol: corev1.ProtocolTCP},
		{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
	}
	if !slices.Equal(ctr.Ports, wantPorts) {
		t.Errorf("ports = %+v, want %+v", ctr.Ports, wantPorts)
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"readiness", ctr.ReadinessProbe, "/readyz"}, {"liveness", ctr.LivenessProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.StrVal != "http" {
			t.Errorf("%s probe = %+v, want GET %s on port http", p.name, p.probe, p.path)
		}
	}
	if !equality.Semantic.DeepEqual(ctr.SecurityContext, DefaultContainerSecurityContext()) {
		t.Errorf("container security context = %+v", ctr.SecurityContext)
	}
	if !equality.Semantic.DeepEqual(ctr.Resources, DefaultResources()) {
		t.Errorf("resources = %+v, want the defaults without spec.resources", ctr.Resources)
	}
	wantEnv := []corev1.EnvVar{{Name: "GOMEMLIMIT", ValueFrom: &corev1.EnvVarSource{
		ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "namesrv", Resource: "limits.memory"},
	}}}
	if !equality.Semantic.DeepEqual(ctr.Env, wantEnv) || len(ctr.EnvFrom) != 0 {
		t.Errorf("env = %+v envFrom = %+v, want GOMEMLIMIT from the memory limit only", ctr.Env, ctr.EnvFrom)
	}
	wantLifecycle := &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: PreStopSeconds}}}
	if !equality.Semantic.DeepEqual(ctr.Lifecycle, wantLifecycle) {
		t.Errorf("lifecycle = %+v, want a preStop sleep of %d s", ctr.Lifecycle, PreStopSeconds)
	}
	if PreStopSeconds <= 0 || PreStopSeconds >= TerminationSeconds {
		t.Errorf("preStop %d s must be positive and leave part of the %d s grace period to the drain", PreStopSeconds, TerminationSeconds)
	}
	wantMounts := []corev1.VolumeMount{
		{Name: "config", MountPath: "/etc/namesrv", ReadOnly: true},
		{Name: "namesrv-addr", MountPath: "/etc/namesrv-addr", ReadOnly: true},
		{Name: "namesrv-broker-addr", MountPath: "/etc/namesrv-broker-addr", ReadOnly: true},
		{Name: "namesrv-kv", MountPath: "/etc/namesrv-kv", ReadOnly: true},
		{Name: "data", MountPath: "/var/lib/namesrv"},
		{Name: "tmp", MountPath: "/tmp"},
	}
	if !equality.Semantic.DeepEqual(ctr.VolumeMounts, wantMounts) {
		t.Errorf("mounts = %+v, want %+v", ctr.VolumeMounts, wantMounts)
	}
	vols := map[string]corev1.VolumeSource{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v.VolumeSource
	}
	if cm := vols["config"].ConfigMap; cm == nil || cm.Name != ConfigMapName(cluster()) || cm.Optional != nil {
		t.Errorf("config volume = %+v", vols["config"])
	}
	for _, v := range []struct{ volume, configMap string }{
		{"namesrv-addr", "ns1-namesrv-addr"},
		{"namesrv-broker-addr", "ns1-namesrv-addr-brokers"},
		{"namesrv-kv", "ns1-kv"},
	} {
		cm := vols[v.volume].ConfigMap
		if cm == nil || cm.Name != v.configMap || !ptr.Deref(cm.Optional, false) || cm.Items != nil {
			t.Errorf("volume %s = %+v, want the whole optional ConfigMap %s", v.volume, vols[v.volume], v.configMap)
		}
	}
	if vols["data"].EmptyDir == nil || vols["tmp"].EmptyDir == nil || len(vols) != 6 || len(pod.Volumes) != 6 {
		t.Errorf("volumes = %+v, want config, namesrv-addr, namesrv-broker-addr, namesrv-kv and emptyDir data and tmp", pod.Volumes)
	}
}

func TestStatefulSetSpecKnobs(t *testing.T) {
	extraVolumes := []corev1.Volume{
		{Name: "extra", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "extra-cm"}}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
	}
	extraMounts := []corev1.VolumeMount{
		{Name: "extra", MountPath: "/opt/extra", ReadOnly: true},
		{Name: "scratch", MountPath: "/scratch"},
	}
	base := renderStatefulSet(t, cluster(), 3).Spec.Template.Spec
	tests := []struct {
		name  string
		edit  func(*v1alpha1.NameServerCluster)
		check func(*testing.T, *appsv1.StatefulSet)
	}{
		{
			name: "image, pull policy and pull secrets",
			edit: func(c *v1alpha1.NameServerCluster) {
				c.Spec.Image = "mirror.example/namesrv:dev"
				c.Spec.ImagePullPolicy = corev1.PullAlways
				c.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
			},
			check: func(t *testing.T, s *appsv1.StatefulSet) {
				ctr := s.Spec.Template.Spec.Containers[0]
				if ctr.Image != "mirror.example/namesrv:dev" || ctr.ImagePullPolicy != corev1.PullAlways {
					t.Errorf("image %q policy %q", ctr.Image, ctr.ImagePullPolicy)
				}
				if !slices.Equal(s.Spec.Template.Spec.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "pull"}}) {
					t.Errorf("pull secrets = %v", s.Spec.Template.Spec.ImagePullSecrets)
				}
			},
		},
		{
			name: "ports move args, container ports and nothing else",
			edit: func(c *v1alpha1.NameServerCluster) { c.Spec.Ports = v1alpha1.Ports{Remoting: 19876, HTTP: 18080} },
			check: func(t *testing.T, s *appsv1.StatefulSet) {
				ctr := s.Spec.Template.Spec.Containers[0]
				if ctr.Args[2] != "--listen-port=19876" || ctr.Args[3] != "--http-port=18080" ||
					ctr.Ports[0].ContainerPort != 19876 || ctr.Ports[1].ContainerPort != 18080 {
					t.Errorf("args %v ports %+v", ctr.Args, ctr.Ports)
				}
			},
		},
		{
			name: "pod labels and annotations cannot replace the operator's",
			edit: func(c *v1alpha1.NameServerCluster) {
				c.Spec.PodLabels = map[string]string{"team": "mq", "app.kubernetes.io/instance": "other"}
				c.Spec.PodAnnotations = map[string]string{"scrape": "true", AnnotationConfigChecksum: "stale"}
			},
			check: func(t *testing.T, s *appsv1.StatefulSet) {
				l, a := s.Spec.Template.Labels, s.Spec.Template.Annotations
				if l["team"] != "mq" || l["app.kubernetes.io/instance"] != "ns1" {
					t.Errorf("labels = %v", l)
				}
				if a["scrape"] != "true" || a[AnnotationConfigChecksum] == "stale" {
					t.Errorf("annotations = %v", a)
				}
			},
		},
		{
			name: "security contexts are overridden field by field",
			edit: func(c *v1alpha1.NameServerCluster) {
				c.Spec.PodSecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000)}
				c.Spec.ContainerSecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(false)}
			},
			check: func(t *testing.T, s *appsv1.StatefulSet) {
				psc := s.Spec.Template.Spec.SecurityContext
				if *psc.RunAsUser != 1000 || *psc.FSGroup != 2000 || *psc.RunAsGroup != NonRootID || !*psc.RunAsNonRoot ||
					psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("pod security context = %+v", psc)
				}
				csc := s.Spec.Template.Spec.Containers[0].SecurityContext
				if *csc.ReadOnlyRootFilesystem || *csc.AllowPrivilegeEscalation || !slices.Equal(csc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
					t.Errorf("container security context = %+v", csc)
				}
			},
		},
		{
			name: "scheduling knobs pass through and affinity replaces the default",
			edit: func(c *v1alpha1.NameServerCluster) {
				c.Spec.NodeSelector = map[string]string{"disk": "ssd"}
				c.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "mq", Effect: corev1.TaintEffectNoSchedule}}
				c.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}},
				}}}
				c.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway}}
				c.Spec.PriorityClassName = "mq-critical"
				c.Spec.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}
			},
			check: func(t *testing.T, s *appsv1.StatefulSet) {
				p := s.Spec.Template.Spec
				if p.NodeSelector["disk"] != "ssd" || len(p.Tolerations) != 1 || p.Tolerations[0].Value != "mq" || p.PriorityClassName != "mq-critical" {
					t.Errorf("nodeSelector %v tolerations %v priority %q", p.NodeSelector, p.Tolerations, p.PriorityClassName)
				}
				if p.Affinity.PodAntiAffinity != nil || p.Affinity.NodeAffinity == nil {
					t.Errorf("affinity = %+v, want the user's only", p.Affinity)
				}
				if len(p.TopologySpreadConstraints) != 1 || p.TopologySpreadConstraints[0].TopologyKey != "zone" {
					t.Errorf("topology spread = %+v", p.TopologySpreadConstraints)
				}
				if q := p.Containers[0].Resources.Requests[corev1.ResourceMemory]; q.Cmp(resource.MustParse("256Mi")) != 0 {
					t.Errorf("memory request = %v", q.String())
				}
			},
		},
		{
			name: "a service account",
			edit: func(c *v1alpha1.NameServerCluster) { c.Spec.ServiceAccountName = "mq-sa" },
			check: func(t *testing.T, s *appsv1.StatefulSet) {
				p := s.Spec.Template.Spec
				if p.ServiceAccountName != "mq-sa" || ptr.Deref(p.AutomountServiceAccountToken, true) {
					t.Errorf("serviceAccountName=%q automount=%v, want mq-sa without a token", p.ServiceAccountName, p.AutomountServiceAccountToken)
				}
			},
		},
		{
			name: "env follows the operator's",
			edit: func(c *v1alpha1.NameServerCluster) {
				c.Spec.Env = []corev1.EnvVar{
					{Name: "NAMESRV_ORDER_MESSAGE_ENABLE", Value: "true"},
					{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k",
					}}},
				}
			},
			check: func(t *testing.T, s *appsv1.StatefulSet) {
				env := s.Spec.Template.Spec.Containers[0].Env
				want := []corev1.EnvVar{
					{Name: "GOMEMLIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "namesrv", Resource: "limits.memory"}}},
					{Name: "NAMESRV_ORDER_MESSAGE_ENABLE", Value: "true"},
					{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k",
					}}},
				}
				if !equality.Semantic.DeepEqual(env, want) {
					t.Errorf("env = %+v, want %+v", env, want)
				}
			},
		},
		{
			name: "volumes and mounts follow the operator's",
			edit: func(c *v1alpha1.NameServerCluster) {
				c.Spec.Volumes = extraVolumes
				c.Spec.VolumeMounts = extraMounts
			},
			check: func(t *testing.T, s *appsv1.StatefulSet) {
				p := s.Spec.Template.Spec
				if wantVols := append(slices.Clone(base.Volumes), extraVolumes...); !equality.Semantic.DeepEqual(p.Volumes, wantVols) {
					t.Errorf("volumes = %+v\nwant %+v", p.Volumes, wantVols)
				}
				wantMounts := append(slices.Clone(base.Containers[0].VolumeMounts), extraMounts...)
				if !equality.Semantic.DeepEqual(p.Containers[0].VolumeMounts, wantMounts) {
					t.Errorf("mounts = %+v\nwant %+v", p.Containers[0].VolumeMounts, wantMounts)
				}
			},
		},
		{
			name: "a configured address ConfigMap name moves both list volumes, not the paths",
			edit: func(c *v1alpha1.NameServerCluster) { c.Spec.Publish.ConfigMapName = "addr" },
			check: func(t *testing.T, s *appsv1.StatefulSet) {
				p := s.Spec.Template.Spec
				names := map[string]string{}
				for _, v := range p.Volumes {
					if v.ConfigMap != nil {
						names[v.Name] = v.ConfigMap.Name
					}
				}
				want := map[string]string{"config": ConfigMapName(cluster()), "namesrv-addr": "addr", "namesrv-broker-addr": "addr-brokers", "namesrv-kv": "ns1-kv"}
				if !maps.Equal(names, want) {
					t.Errorf("ConfigMap volumes = %v, want %v", names, want)
				}
				if !slices.Equal(p.Containers[0].Args, Args(cluster())) {
					t.Errorf("args = %v, want the default ones", p.Containers[0].Args)
				}
			},
		},
		{
			name: "a changed broker heartbeat changes the gate timeout, hence the pod template",
			edit: func(c *v1alpha1.NameServerCluster) { c.Spec.BrokerHeartbeatSeconds = ptr.To[int32](10) },
			check: func(t *testing.T, s *appsv1.StatefulSet) {
				if s.Spec.Template.Annotations[AnnotationConfigChecksum] == ConfigChecksum(cluster()) {
					t.Errorf("checksum did not change with the heartbeat")
				}
			},
		},
		{
			name: "a volume claim template replaces the data emptyDir",
			edit: func(c *v1alpha1.NameServerCluster) {
				c.Spec.Storage = &v1alpha1.Storage{VolumeClaimTemplate: &v1alpha1.VolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				}}}
			},
			check: func(t *testing.T, s *appsv1.StatefulSet) {
				if len(s.Spec.VolumeClaimTemplates) != 1 {
					t.Fatalf("claims = %v", s.Spec.VolumeClaimTemplates)
				}
				pvc := s.Spec.VolumeClaimTemplates[0]
				if pvc.Name != "data" || pvc.Spec.AccessModes[0] != corev1.ReadWriteOnce || pvc.Spec.Resources.Requests.Storage().String() != "1Gi" {
					t.Errorf("claim = %+v", pvc)
				}
				for _, v := range s.Spec.Template.Spec.Volumes {
					if v.Name == "data" {
						t.Errorf("data volume %+v next to a claim template", v)
					}
				}
			},
		},
		{
			name: "a config change changes the pod template",
			edit: func(c *v1alpha1.NameServerCluster) {
				c.Spec.Config = map[string]v1alpha1.ConfigValue{"orderMessageEnable": "true"}
			},
			check: func(t *testing.T, s *appsv1.StatefulSet) {
				if s.Spec.Template.Annotations[AnnotationConfigChecksum] == ConfigChecksum(cluster()) {
					t.Errorf("checksum did not change with the config")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, renderStatefulSet(t, cluster(tt.edit), 3))
		})
	}
}

func TestDefaultResources(t *testing.T) {
	r := DefaultResources()
	want := map[string]map[corev1.ResourceName]string{
		"requests": {corev1.ResourceCPU: "200m", corev1.ResourceMemory: "256Mi"},
		"limits":   {corev1.ResourceMemory: "512Mi"},
	}
	for kind, list := range map[string]corev1.ResourceList{"requests": r.Requests, "limits": r.Limits} {
		if len(list) != len(want[kind]) {
			t.Errorf("%s = %v, want %v (no CPU limit: bursts after a broker restart storm must not throttle)", kind, list, want[kind])
		}
		for name, q := range want[kind] {
			if got := list[name]; got.Cmp(resource.MustParse(q)) != 0 {
				t.Errorf("%s %s = %s, want %s", kind, name, got.String(), q)
			}
		}
	}
	if len(r.Claims) != 0 {
		t.Errorf("claims = %v", r.Claims)
	}
}

// The defaults apply only when spec.resources is entirely empty: a user who
// sets any part of it gets exactly what they set.
func TestStatefulSetResources(t *testing.T) {
	requestsOnly := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
	limitsOnly := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}}
	claimsOnly := corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}
	both := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
	tests := []struct {
		name string
		in   corev1.ResourceRequirements
		want corev1.ResourceRequirements
	}{
		{name: "empty gets the defaults", want: DefaultResources()},
		{name: "empty lists get the defaults", in: corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}, want: DefaultResources()},
		{name: "requests only, no default limit", in: requestsOnly, want: requestsOnly},
		{name: "limits only, no default requests", in: limitsOnly, want: limitsOnly},
		{name: "claims only", in: claimsOnly, want: claimsOnly},
		{name: "requests and limits", in: both, want: both},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sts := renderStatefulSet(t, cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.Resources = tt.in }), 3)
			ctr := sts.Spec.Template.Spec.Containers[0]
			if !equality.Semantic.DeepEqual(ctr.Resources, tt.want) {
				t.Errorf("resources = %+v, want %+v", ctr.Resources, tt.want)
			}
			// GOMEMLIMIT follows whatever memory limit there is.
			if len(ctr.Env) == 0 || ctr.Env[0].Name != "GOMEMLIMIT" || ctr.Env[0].ValueFrom == nil || ctr.Env[0].ValueFrom.ResourceFieldRef == nil ||
				ctr.Env[0].ValueFrom.ResourceFieldRef.Resource != "limits.memory" {
				t.Errorf("env = %+v, want GOMEMLIMIT from limits.memory first", ctr.Env)
			}
		})
	}
}

func TestStatefulSetClaimRetention(t *testing.T) {
	const del, keep = appsv1.DeletePersistentVolumeClaimRetentionPolicyType, appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	tests := []struct {
		name                      string
		storage                   *v1alpha1.Storage
		wantWhenScaled, wantWhenD appsv1.PersistentVolumeClaimRetentionPolicyType
	}{
		{name: "no storage", wantWhenScaled: del, wantWhenD: keep},
		{name: "storage without a policy", storage: &v1alpha1.Storage{}, wantWhenScaled: del, wantWhenD: keep},
		{
			name:           "whenScaled only",
			storage:        &v1alpha1.Storage{PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenScaled: keep}},
			wantWhenScaled: keep, wantWhenD: keep,
		},
		{
			name:           "whenDeleted only",
			storage:        &v1alpha1.Storage{PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: del}},
			wantWhenScaled: del, wantWhenD: del,
		},
		{
			name:           "both",
			storage:        &v1alpha1.Storage{PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenScaled: keep, WhenDeleted: del}},
			wantWhenScaled: keep, wantWhenD: del,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sts := renderStatefulSet(t, cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.Storage = tt.storage }), 3)
			p := sts.Spec.PersistentVolumeClaimRetentionPolicy
			if p == nil || p.WhenScaled != tt.wantWhenScaled || p.WhenDeleted != tt.wantWhenD {
				t.Errorf("claim retention = %+v, want whenScaled %s, whenDeleted %s", p, tt.wantWhenScaled, tt.wantWhenD)
			}
		})
	}
}

func TestStatefulSetTLS(t *testing.T) {
	base := Args(cluster())
	userMount := corev1.VolumeMount{Name: "extra", MountPath: "/opt/extra", ReadOnly: true}
	// The operator's own mounts come first, then the user's, then TLS.
	ownMounts := len(renderStatefulSet(t, cluster(), 3).Spec.Template.Spec.Containers[0].VolumeMounts)
	tests := []struct {
		name string
		tls  v1alpha1.TLSSpec
		// args follow the ones every pod gets.
		args []string
		// secrets are the Secret volumes by volume name.
		secrets map[string]string
		mounts  []corev1.VolumeMount
	}{
		{
			name:    "a server certificate, permissive",
			tls:     v1alpha1.TLSSpec{SecretName: "ns1-tls", Mode: v1alpha1.TLSPermissive, ClientAuth: v1alpha1.TLSClientAuthNone},
			args:    []string{"--tls-mode=permissive", "--tls-cert=/etc/namesrv-tls/tls.crt", "--tls-key=/etc/namesrv-tls/tls.key"},
			secrets: map[string]string{"tls": "ns1-tls"},
			mounts:  []corev1.VolumeMount{{Name: "tls", MountPath: "/etc/namesrv-tls", ReadOnly: true}},
		},
		{
			name: "enforcing, client certificates required, verified by ca.crt of the same Secret",
			tls:  v1alpha1.TLSSpec{SecretName: "ns1-tls", Mode: v1alpha1.TLSEnforcing, ClientAuth: v1alpha1.TLSClientAuthRequire},
			args: []string{"--tls-mode=enforcing", "--tls-cert=/etc/namesrv-tls/tls.crt", "--tls-key=/etc/namesrv-tls/tls.key",
				"--tls-client-auth=require", "--tls-trust-cert=/etc/namesrv-tls/ca.crt"},
			secrets: map[string]string{"tls": "ns1-tls"},
			mounts:  []corev1.VolumeMount{{Name: "tls", MountPath: "/etc/namesrv-tls", ReadOnly: true}},
		},
		{
			name: "optional client certificates, another key of the same Secret",
			tls: v1alpha1.TLSSpec{SecretName: "ns1-tls", Mode: v1alpha1.TLSPermissive, ClientAuth: v1alpha1.TLSClientAuthOptional,
				ClientCA: &v1alpha1.SecretKey{SecretName: "ns1-tls", Key: "clients.pem"}},
			args: []string{"--tls-mode=permissive", "--tls-cert=/etc/namesrv-tls/tls.crt", "--tls-key=/etc/namesrv-tls/tls.key",
				"--tls-client-auth=optional", "--tls-trust-cert=/etc/namesrv-tls/clients.pem"},
			secrets: map[string]string{"tls": "ns1-tls"},
			mounts:  []corev1.VolumeMount{{Name: "tls", MountPath: "/etc/namesrv-tls", ReadOnly: true}},
		},
		{
			name: "client CA in a Secret of its own",
			tls: v1alpha1.TLSSpec{SecretName: "ns1-tls", Mode: v1alpha1.TLSEnforcing, ClientAuth: v1alpha1.TLSClientAuthRequire,
				ClientCA: &v1alpha1.SecretKey{SecretName: "clients-ca", Key: "ca.crt"}},
			args: []string{"--tls-mode=enforcing", "--tls-cert=/etc/namesrv-tls/tls.crt", "--tls-key=/etc/namesrv-tls/tls.key",
				"--tls-client-auth=require", "--tls-trust-cert=/etc/namesrv-tls-client-ca/ca.crt"},
			secrets: map[string]string{"tls": "ns1-tls", "tls-client-ca": "clients-ca"},
			mounts: []corev1.VolumeMount{
				{Name: "tls", MountPath: "/etc/namesrv-tls", ReadOnly: true},
				{Name: "tls-client-ca", MountPath: "/etc/namesrv-tls-client-ca", ReadOnly: true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(func(c *v1alpha1.NameServerCluster) {
				c.Spec.TLS = &tt.tls
				c.Spec.Volumes = []corev1.Volume{{Name: "extra", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
				c.Spec.VolumeMounts = []corev1.VolumeMount{userMount}
			})
			sts := renderStatefulSet(t, c, 3)
			pod := sts.Spec.Template.Spec
			ctr := pod.Containers[0]
			if want := append(slices.Clone(base), tt.args...); !slices.Equal(ctr.Args, want) {
				t.Errorf("args = %v\nwant %v", ctr.Args, want)
			}
			secrets := map[string]string{}
			for _, v := range pod.Volumes {
				if s := v.Secret; s != nil {
					if s.Items != nil || s.Optional != nil || s.DefaultMode != nil {
						t.Errorf("secret volume %s = %+v, want the whole Secret, required, default modes", v.Name, s)
					}
					secrets[v.Name] = s.SecretName
				}
			}
			if !maps.Equal(secrets, tt.secrets) {
				t.Errorf("secret volumes = %v, want %v", secrets, tt.secrets)
			}
			// A TLS mount with a subPath would never see a renewed
			// certificate.
			if got, want := ctr.VolumeMounts[ownMounts:], append([]corev1.VolumeMount{userMount}, tt.mounts...); !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("mounts after the operator's = %+v, want %+v", got, want)
			}
			// A renewed certificate must not roll the pods: nothing about
			// the Secrets reaches the pod template's annotations.
			if a := sts.Spec.Template.Annotations; len(a) != 1 || a[AnnotationConfigChecksum] != ConfigChecksum(cluster()) {
				t.Errorf("pod annotations = %v, want only the checksum of the config without TLS", a)
			}
		})
	}
}

func TestListenPortsOf(t *testing.T) {
	c := cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.Ports.Remoting = 9877 })
	for _, tt := range []struct {
		extra []int32
		want  []int32
	}{
		{nil, []int32{9877}},
		{[]int32{9876}, []int32{9877, 9876}},
		{[]int32{9876, 9878}, []int32{9877, 9876, 9878}},
	} {
		if got := ListenPortsOf(Args(c, tt.extra...)); !slices.Equal(got, tt.want) {
			t.Errorf("ListenPortsOf(Args(%v)) = %v, want %v", tt.extra, got, tt.want)
		}
	}
}
