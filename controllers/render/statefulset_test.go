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
	if s.PodManagementPolicy != appsv1.ParallelPodManagement || s.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		t.Errorf("policy=%q strategy=%q", s.PodManagementPolicy, s.UpdateStrategy.Type)
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
	if len(ctr.Resources.Limits)+len(ctr.Resources.Requests) != 0 {
		t.Errorf("resources = %+v without spec.resources", ctr.Resources)
	}
	wantMounts := []corev1.VolumeMount{
		{Name: "config", MountPath: "/etc/namesrv", ReadOnly: true},
		{Name: "namesrv-addr", MountPath: "/etc/namesrv-addr", ReadOnly: true},
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
	if cm := vols["config"].ConfigMap; cm == nil || cm.Name != "ns1-config" || cm.Optional != nil {
		t.Errorf("config volume = %+v", vols["config"])
	}
	if cm := vols["namesrv-addr"].ConfigMap; cm == nil || cm.Name != "ns1-namesrv-addr" || !ptr.Deref(cm.Optional, false) {
		t.Errorf("address volume = %+v, want the optional address ConfigMap", vols["namesrv-addr"])
	}
	if vols["data"].EmptyDir == nil || vols["tmp"].EmptyDir == nil || len(vols) != 4 {
		t.Errorf("volumes = %+v, want config, namesrv-addr and emptyDir data and tmp", pod.Volumes)
	}
}

func TestStatefulSetSpecKnobs(t *testing.T) {
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

func TestStatefulSetTLS(t *testing.T) {
	base := Args(cluster())
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
			c := cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.TLS = &tt.tls })
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
			// The pod's own mounts come first; a TLS mount with a subPath
			// would never see a renewed certificate.
			if got := ctr.VolumeMounts[4:]; !equality.Semantic.DeepEqual(got, tt.mounts) {
				t.Errorf("TLS mounts = %+v, want %+v", got, tt.mounts)
			}
			// A renewed certificate must not roll the pods: nothing about
			// the Secrets reaches the pod template's annotations.
			if a := sts.Spec.Template.Annotations; len(a) != 1 || a[AnnotationConfigChecksum] != ConfigChecksum(cluster()) {
				t.Errorf("pod annotations = %v, want only the checksum of the config without TLS", a)
			}
		})
	}
}
