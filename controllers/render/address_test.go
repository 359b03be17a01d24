package render

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

func TestPeerAddresses(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*v1alpha1.NameServerCluster)
		opts  Options
		count int32
		want  []string
	}{
		{name: "none published", opts: testOptions, count: 0, want: []string{}},
		{
			name: "ordered by ordinal", opts: testOptions, count: 3,
			want: []string{
				"ns1-0.ns1-headless.mq.svc.cluster.local:9876",
				"ns1-1.ns1-headless.mq.svc.cluster.local:9876",
				"ns1-2.ns1-headless.mq.svc.cluster.local:9876",
			},
		},
		{
			name: "cluster domain and remoting port follow settings",
			edit: func(c *v1alpha1.NameServerCluster) { c.Spec.Ports.Remoting = 10911 },
			opts: Options{ClusterDomain: "corp.example"}, count: 1,
			want: []string{"ns1-0.ns1-headless.mq.svc.corp.example:10911"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster()
			if tt.edit != nil {
				tt.edit(c)
			}
			if got := PeerAddresses(c, tt.opts, tt.count); !slices.Equal(got, tt.want) {
				t.Errorf("PeerAddresses() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAddressData(t *testing.T) {
	domain := "ns1.mq.svc.cluster.local:8080"
	tests := []struct {
		name      string
		published int32
		ips       []string
		want      map[string]string
	}{
		{
			name: "nothing published yet",
			want: map[string]string{
				"namesrvAddr": "", "NAMESRV_ADDR": "", "namesrvAddrIPs": "",
				"rmqAddressServerDomain": domain, "rocketmq.namesrv.domain": domain, "rmqAddressServerSubGroup": "nsaddr",
			},
		},
		{
			name: "two published, IPv4 and IPv6 ready peers", published: 2, ips: []string{"10.0.0.7", "fd00::5"},
			want: map[string]string{
				"namesrvAddr":              "ns1-0.ns1-headless.mq.svc.cluster.local:9876;ns1-1.ns1-headless.mq.svc.cluster.local:9876",
				"NAMESRV_ADDR":             "ns1-0.ns1-headless.mq.svc.cluster.local:9876;ns1-1.ns1-headless.mq.svc.cluster.local:9876",
				"namesrvAddrIPs":           "10.0.0.7:9876;[fd00::5]:9876",
				"rmqAddressServerDomain":   domain,
				"rocketmq.namesrv.domain":  domain,
				"rmqAddressServerSubGroup": "nsaddr",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AddressData(cluster(), testOptions, tt.published, tt.ips); !maps.Equal(got, tt.want) {
				t.Errorf("AddressData() =\n%v\nwant\n%v", got, tt.want)
			}
		})
	}
}

func TestAddressConfigMap(t *testing.T) {
	data := map[string]string{"namesrvAddr": "x"}
	tests := []struct {
		name      string
		edit      func(*v1alpha1.NameServerCluster)
		namespace string
		cmName    string
		wantOwned bool
	}{
		{name: "own namespace is owned", namespace: "mq", cmName: "ns1-namesrv-addr", wantOwned: true},
		{name: "other namespace carries labels only", namespace: "brokers", cmName: "addr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster()
			cm := typed[corev1.ConfigMap](t, AddressConfigMap(c, tt.namespace, tt.cmName, data))
			if cm.Namespace != tt.namespace || cm.Name != tt.cmName {
				t.Errorf("object = %s/%s, want %s/%s", cm.Namespace, cm.Name, tt.namespace, tt.cmName)
			}
			if !maps.Equal(cm.Data, data) {
				t.Errorf("data = %v, want %v", cm.Data, data)
			}
			checkLabels(t, cm.Labels)
			if cm.Labels[LabelClusterNamespace] != "mq" {
				t.Errorf("cluster-namespace label = %q, want mq", cm.Labels[LabelClusterNamespace])
			}
			if tt.wantOwned {
				checkOwner(t, cm.OwnerReferences)
			} else if len(cm.OwnerReferences) != 0 {
				t.Errorf("owner references %v across namespaces", cm.OwnerReferences)
			}
		})
	}
}

func TestAddressConfigMapNames(t *testing.T) {
	tests := []struct {
		name       string
		publish    v1alpha1.PublishSpec
		target     v1alpha1.PublishTarget
		wantLocal  string
		wantTarget string
	}{
		{name: "defaults", target: v1alpha1.PublishTarget{Namespace: "b"}, wantLocal: "ns1-namesrv-addr", wantTarget: "ns1-namesrv-addr"},
		{
			name: "configured name is the default of targets", publish: v1alpha1.PublishSpec{ConfigMapName: "addr"},
			target: v1alpha1.PublishTarget{Namespace: "b"}, wantLocal: "addr", wantTarget: "addr",
		},
		{
			name: "target name wins", publish: v1alpha1.PublishSpec{ConfigMapName: "addr"},
			target: v1alpha1.PublishTarget{Namespace: "b", Name: "mine"}, wantLocal: "addr", wantTarget: "mine",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.Publish = tt.publish })
			if got := AddressConfigMapName(c); got != tt.wantLocal {
				t.Errorf("AddressConfigMapName() = %q, want %q", got, tt.wantLocal)
			}
			if got := TargetName(c, tt.target); got != tt.wantTarget {
				t.Errorf("TargetName() = %q, want %q", got, tt.wantTarget)
			}
		})
	}
}
