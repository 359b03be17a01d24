package render

import (
	"errors"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
)

func TestAuthorizationProperties(t *testing.T) {
	tokenFile := "httpAuthTokenFile=/etc/namesrv-http-token/token\n"
	tests := []struct {
		name string
		auth *v1alpha1.AuthorizationSpec
		// want are the lines Properties adds to those of a cluster
		// without spec.authorization.
		want string
	}{
		{name: "no authorization renders nothing", auth: nil, want: ""},
		{
			name: "empty authorization: off, the HTTP writes behind the token",
			auth: &v1alpha1.AuthorizationSpec{},
			want: "authzEnable=false\nhttpAuthScope=writes\n" + tokenFile,
		},
		{
			name: "every list, comma-joined in spec order, ownership on, every endpoint",
			auth: &v1alpha1.AuthorizationSpec{
				Enable:              true,
				Broker:              v1alpha1.RoleGrants{Identities: []string{"uri:spiffe://cluster.local/ns/mq/sa/broker-*", "cn:broker-a"}, Networks: []string{"10.244.0.0/16"}},
				Admin:               v1alpha1.RoleGrants{Identities: []string{"cn:mqadmin"}, Networks: []string{"10.0.0.7", "fd00::/8"}},
				Read:                v1alpha1.RoleGrants{Identities: []string{"dns:*.clients.mq.svc"}, Networks: []string{"0.0.0.0/0", "::/0"}},
				BrokerNameOwnership: true,
				HTTPAuthScope:       v1alpha1.HTTPAuthAll,
			},
			want: "authzAdminIdentities=cn:mqadmin\n" +
				"authzAdminNetworks=10.0.0.7,fd00::/8\n" +
				"authzBrokerIdentities=uri:spiffe://cluster.local/ns/mq/sa/broker-*,cn:broker-a\n" +
				"authzBrokerNameOwnership=true\n" +
				"authzBrokerNetworks=10.244.0.0/16\n" +
				"authzEnable=true\n" +
				"authzReadIdentities=dns:*.clients.mq.svc\n" +
				"authzReadNetworks=0.0.0.0/0,::/0\n" +
				"httpAuthScope=all\n" + tokenFile,
		},
		{
			name: "scope None: no token file, empty lists left out",
			auth: &v1alpha1.AuthorizationSpec{Enable: true, Read: v1alpha1.RoleGrants{Networks: []string{"10.0.0.0/8"}}, HTTPAuthScope: v1alpha1.HTTPAuthNone},
			want: "authzEnable=true\nauthzReadNetworks=10.0.0.0/8\nhttpAuthScope=none\n",
		},
	}
	base := lines(Properties(cluster()))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.Authorization = tt.auth })
			got := lines(Properties(c))
			for l := range base {
				if !got[l] {
					t.Errorf("line %q of the properties without authorization is gone", l)
				}
				delete(got, l)
			}
			if want := lines(tt.want); !maps.Equal(got, want) {
				t.Errorf("added lines = %v, want %v", got, want)
			}
			// The properties are one sorted file, so they stay one
			// revision whatever the map order.
			if Properties(c) != Properties(c.DeepCopy()) {
				t.Error("rendering twice differs")
			}
			if err := ValidateConfig(c); err != nil {
				t.Errorf("ValidateConfig: %v", err)
			}
		})
	}
}

func lines(s string) map[string]bool {
	out := map[string]bool{}
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out[l] = true
		}
	}
	return out
}

// TestAuthorizationValidate: what the API server's schema cannot check,
// the NameServer's own parser refuses before anything is applied.
func TestAuthorizationValidate(t *testing.T) {
	tests := []struct {
		name string
		auth v1alpha1.AuthorizationSpec
		key  string
	}{
		{"two stars in a pattern", v1alpha1.AuthorizationSpec{Broker: v1alpha1.RoleGrants{Identities: []string{"cn:a*b*"}}}, "authzBrokerIdentities"},
		{"a network with a zone", v1alpha1.AuthorizationSpec{Read: v1alpha1.RoleGrants{Networks: []string{"fe80::1%eth0"}}}, "authzReadNetworks"},
		{"an IPv4-mapped prefix too short", v1alpha1.AuthorizationSpec{Admin: v1alpha1.RoleGrants{Networks: []string{"::ffff:0:0/8"}}}, "authzAdminNetworks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.Authorization = &tt.auth })
			err := ValidateConfig(c)
			var ve *config.ValueError
			if !errors.As(err, &ve) || ve.Key != tt.key {
				t.Fatalf("ValidateConfig = %v, want a ValueError naming %s", err, tt.key)
			}
		})
	}
}

func TestHTTPTokenMount(t *testing.T) {
	plain := renderStatefulSet(t, cluster(), 3)
	tests := []struct {
		name  string
		auth  *v1alpha1.AuthorizationSpec
		mount bool
	}{
		{"no authorization", nil, false},
		{"scope None", &v1alpha1.AuthorizationSpec{HTTPAuthScope: v1alpha1.HTTPAuthNone}, false},
		{"scope unset means Writes", &v1alpha1.AuthorizationSpec{}, true},
		{"scope Writes", &v1alpha1.AuthorizationSpec{HTTPAuthScope: v1alpha1.HTTPAuthWrites}, true},
		{"scope All", &v1alpha1.AuthorizationSpec{HTTPAuthScope: v1alpha1.HTTPAuthAll}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.Authorization = tt.auth })
			pod := renderStatefulSet(t, c, 3).Spec.Template.Spec
			var vol *corev1.Volume
			for i := range pod.Volumes {
				if pod.Volumes[i].Name == HTTPTokenVolume {
					vol = &pod.Volumes[i]
				}
			}
			var mount *corev1.VolumeMount
			for i, m := range pod.Containers[0].VolumeMounts {
				if m.Name == HTTPTokenVolume {
					mount = &pod.Containers[0].VolumeMounts[i]
				}
			}
			if !tt.mount {
				if vol != nil || mount != nil {
					t.Fatalf("token volume %+v, mount %+v; want none", vol, mount)
				}
				if tt.auth == nil && !equality.Semantic.DeepEqual(pod, plain.Spec.Template.Spec) {
					t.Error("a cluster without authorization renders another pod than before")
				}
				return
			}
			// The whole Secret, required (a peer must not start without
			// the token it is to accept), never a subPath (the kubelet
			// would not refresh a rotated token).
			if vol == nil || vol.Secret == nil || vol.Secret.SecretName != "ns1-http-token" || vol.Secret.Optional != nil || vol.Secret.Items != nil {
				t.Fatalf("token volume = %+v, want the whole Secret ns1-http-token", vol)
			}
			if mount == nil || mount.MountPath != "/etc/namesrv-http-token" || !mount.ReadOnly || mount.SubPath != "" {
				t.Fatalf("token mount = %+v, want /etc/namesrv-http-token read-only", mount)
			}
			if got := Properties(c); !strings.Contains(got, "\nhttpAuthTokenFile="+mount.MountPath+"/"+HTTPTokenKey+"\n") {
				t.Errorf("properties do not name the mounted token file:\n%s", got)
			}
		})
	}
}

func TestHTTPTokenSecret(t *testing.T) {
	c := cluster()
	s := HTTPTokenSecret(c, "tok")
	if s.Name != "ns1-http-token" || s.Namespace != "mq" || s.Type != corev1.SecretTypeOpaque {
		t.Errorf("secret %s/%s of type %s, want mq/ns1-http-token Opaque", s.Namespace, s.Name, s.Type)
	}
	if string(s.Data[HTTPTokenKey]) != "tok" || len(s.Data) != 1 {
		t.Errorf("data = %v, want the token under %q only", s.Data, HTTPTokenKey)
	}
	if s.Immutable != nil {
		t.Error("an immutable Secret is not refreshed by the kubelet: a rotated token would not reach running peers")
	}
	if !maps.Equal(s.Labels, Labels(c)) {
		t.Errorf("labels = %v, want %v", s.Labels, Labels(c))
	}
	checkOwner(t, s.OwnerReferences)
	if !metav1.IsControlledBy(s, c) {
		t.Error("the Secret is not controlled by its cluster")
	}
}
