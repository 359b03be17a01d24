package render

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

func TestPeerAddress(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(*v1alpha1.NameServerCluster)
		opts     Options
		ordinal  int32
		port     int32
		wantHost string
		wantAddr string
	}{
		{
			name: "first peer", opts: testOptions, ordinal: 0, port: 9876,
			wantHost: "ns1-0.ns1-headless.mq.svc.cluster.local",
			wantAddr: "ns1-0.ns1-headless.mq.svc.cluster.local:9876",
		},
		{
			name: "the peer's own port, not spec.ports.remoting", opts: testOptions, ordinal: 2, port: 19876,
			wantHost: "ns1-2.ns1-headless.mq.svc.cluster.local",
			wantAddr: "ns1-2.ns1-headless.mq.svc.cluster.local:19876",
		},
		{
			name: "name, namespace and cluster domain follow the cluster and settings",
			edit: func(c *v1alpha1.NameServerCluster) { c.Name, c.Namespace = "rmq", "prod" },
			opts: Options{ClusterDomain: "corp.example"}, ordinal: 11, port: 10911,
			wantHost: "rmq-11.rmq-headless.prod.svc.corp.example",
			wantAddr: "rmq-11.rmq-headless.prod.svc.corp.example:10911",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster()
			if tt.edit != nil {
				tt.edit(c)
			}
			if got := PeerHost(c, tt.opts, tt.ordinal); got != tt.wantHost {
				t.Errorf("PeerHost() = %q, want %q", got, tt.wantHost)
			}
			if got := PeerAddress(c, tt.opts, tt.ordinal, tt.port); got != tt.wantAddr {
				t.Errorf("PeerAddress() = %q, want %q", got, tt.wantAddr)
			}
		})
	}
}

func TestAddressServerDomain(t *testing.T) {
	tests := []struct {
		name string
		edit func(*v1alpha1.NameServerCluster)
		opts Options
		want string
	}{
		{name: "client Service with the HTTP port written out", opts: testOptions, want: "ns1.mq.svc.cluster.local:8080"},
		{
			name: "HTTP port and cluster domain follow the spec and settings",
			edit: func(c *v1alpha1.NameServerCluster) { c.Spec.Ports.HTTP = 18080 },
			opts: Options{ClusterDomain: "corp.example"}, want: "ns1.mq.svc.corp.example:18080",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster()
			if tt.edit != nil {
				tt.edit(c)
			}
			if got := AddressServerDomain(c, tt.opts); got != tt.want {
				t.Errorf("AddressServerDomain() = %q, want %q", got, tt.want)
			}
		})
	}
}

// Peer addresses for the list tests, with gaps (ordinal 1 missing from the
// client list) and a peer on another port, as the caller hands them over.
const (
	peer0  = "ns1-0.ns1-headless.mq.svc.cluster.local:9876"
	peer1  = "ns1-1.ns1-headless.mq.svc.cluster.local:9876"
	peer2  = "ns1-2.ns1-headless.mq.svc.cluster.local:19876"
	domain = "ns1.mq.svc.cluster.local:8080"
)

var gappedLists = Lists{
	Clients:         []string{peer0, peer2},
	Brokers:         []string{peer0, peer1, peer2},
	ClientsExternal: []string{"203.0.113.10:9876"},
	BrokersExternal: []string{"203.0.113.10:9876", "lb-1.example.com:9876"},
	IPs:             []string{"10.0.0.7:9876", "[fd00::5]:19876"},
}

func TestClientAddressData(t *testing.T) {
	external := func(c *v1alpha1.NameServerCluster) {
		c.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalLoadBalancer}
	}
	tests := []struct {
		name  string
		edit  func(*v1alpha1.NameServerCluster)
		lists Lists
		want  map[string]string
	}{
		{
			name: "nothing published yet",
			want: map[string]string{
				"namesrvAddr": "", "NAMESRV_ADDR": "",
				"rocketmq.namesrv.domain": domain, "rocketmq.namesrv.domain.subgroup": "nsaddr",
			},
		},
		{
			name: "the client list as given, gaps and ports included; other lists unused", lists: gappedLists,
			want: map[string]string{
				"namesrvAddr": peer0 + ";" + peer2, "NAMESRV_ADDR": peer0 + ";" + peer2,
				"rocketmq.namesrv.domain": domain, "rocketmq.namesrv.domain.subgroup": "nsaddr",
			},
		},
		{
			name: "external addresses with externalAccess", edit: external, lists: gappedLists,
			want: map[string]string{
				"namesrvAddr": peer0 + ";" + peer2, "NAMESRV_ADDR": peer0 + ";" + peer2,
				"rocketmq.namesrv.domain": domain, "rocketmq.namesrv.domain.subgroup": "nsaddr",
				"namesrvAddrExternal": "203.0.113.10:9876",
			},
		},
		{
			name: "the external key is there, empty, while no external address is known", edit: external,
			lists: Lists{Clients: []string{peer0}},
			want: map[string]string{
				"namesrvAddr": peer0, "NAMESRV_ADDR": peer0,
				"rocketmq.namesrv.domain": domain, "rocketmq.namesrv.domain.subgroup": "nsaddr",
				"namesrvAddrExternal": "",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster()
			if tt.edit != nil {
				tt.edit(c)
			}
			if got := ClientAddressData(c, testOptions, tt.lists); !maps.Equal(got, tt.want) {
				t.Errorf("ClientAddressData() =\n%v\nwant\n%v", got, tt.want)
			}
		})
	}
}

func TestBrokerAddressData(t *testing.T) {
	external := func(c *v1alpha1.NameServerCluster) {
		c.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalNodePort}
	}
	brokers := peer0 + ";" + peer1 + ";" + peer2
	tests := []struct {
		name  string
		edit  func(*v1alpha1.NameServerCluster)
		lists Lists
		want  map[string]string
	}{
		{
			name: "nothing running yet",
			want: map[string]string{
				"namesrvAddr": "", "NAMESRV_ADDR": "",
				"rmqAddressServerDomain": domain, "rmqAddressServerSubGroup": "brokers",
			},
		},
		{
			name: "the broker list as given; other lists unused", lists: gappedLists,
			want: map[string]string{
				"namesrvAddr": brokers, "NAMESRV_ADDR": brokers,
				"rmqAddressServerDomain": domain, "rmqAddressServerSubGroup": "brokers",
			},
		},
		{
			name: "external addresses with externalAccess", edit: external, lists: gappedLists,
			want: map[string]string{
				"namesrvAddr": brokers, "NAMESRV_ADDR": brokers,
				"rmqAddressServerDomain": domain, "rmqAddressServerSubGroup": "brokers",
				"namesrvAddrExternal": "203.0.113.10:9876;lb-1.example.com:9876",
			},
		},
		{
			name: "the external key is there, empty, while no external address is known", edit: external,
			lists: Lists{Brokers: []string{peer1}},
			want: map[string]string{
				"namesrvAddr": peer1, "NAMESRV_ADDR": peer1,
				"rmqAddressServerDomain": domain, "rmqAddressServerSubGroup": "brokers",
				"namesrvAddrExternal": "",
			},
		},
		{
			name: "the address server follows the HTTP port",
			edit: func(c *v1alpha1.NameServerCluster) { c.Spec.Ports.HTTP = 18080 },
			want: map[string]string{
				"namesrvAddr": "", "NAMESRV_ADDR": "",
				"rmqAddressServerDomain": "ns1.mq.svc.cluster.local:18080", "rmqAddressServerSubGroup": "brokers",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster()
			if tt.edit != nil {
				tt.edit(c)
			}
			if got := BrokerAddressData(c, testOptions, tt.lists); !maps.Equal(got, tt.want) {
				t.Errorf("BrokerAddressData() =\n%v\nwant\n%v", got, tt.want)
			}
		})
	}
}

func TestIPsData(t *testing.T) {
	tests := []struct {
		name  string
		lists Lists
		want  map[string]string
	}{
		{name: "no ready client peer", want: map[string]string{"namesrvAddrIPs": ""}},
		{
			name: "IPv4 and IPv6 peers on their own ports; other lists unused", lists: gappedLists,
			want: map[string]string{"namesrvAddrIPs": "10.0.0.7:9876;[fd00::5]:19876"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IPsData(tt.lists); !maps.Equal(got, tt.want) {
				t.Errorf("IPsData() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHostPort(t *testing.T) {
	tests := []struct {
		host string
		port int32
		want string
	}{
		{"10.0.0.7", 9876, "10.0.0.7:9876"},
		{"fd00::5", 19876, "[fd00::5]:19876"},
		{"ns1-0.ns1-headless.mq.svc.cluster.local", 9876, "ns1-0.ns1-headless.mq.svc.cluster.local:9876"},
	}
	for _, tt := range tests {
		if got := hostPort(tt.host, tt.port); got != tt.want {
			t.Errorf("hostPort(%q, %d) = %q, want %q", tt.host, tt.port, got, tt.want)
		}
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
		{name: "own namespace, broker list, is owned", namespace: "mq", cmName: "ns1-namesrv-addr-brokers", wantOwned: true},
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
		name        string
		publish     v1alpha1.PublishSpec
		target      v1alpha1.PublishTarget
		wantClients string
		wantBrokers string
		wantIPs     string
		wantTarget  string
	}{
		{
			name: "defaults", target: v1alpha1.PublishTarget{Namespace: "b"},
			wantClients: "ns1-namesrv-addr", wantBrokers: "ns1-namesrv-addr-brokers", wantIPs: "ns1-namesrv-addr-ips",
			wantTarget: "ns1-namesrv-addr",
		},
		{
			name: "configured name is the base of all three and the default of targets", publish: v1alpha1.PublishSpec{ConfigMapName: "addr"},
			target:      v1alpha1.PublishTarget{Namespace: "b"},
			wantClients: "addr", wantBrokers: "addr-brokers", wantIPs: "addr-ips", wantTarget: "addr",
		},
		{
			name: "target name wins", publish: v1alpha1.PublishSpec{ConfigMapName: "addr"},
			target:      v1alpha1.PublishTarget{Namespace: "b", Name: "mine"},
			wantClients: "addr", wantBrokers: "addr-brokers", wantIPs: "addr-ips", wantTarget: "mine",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.Publish = tt.publish })
			if got := AddressConfigMapName(c); got != tt.wantClients {
				t.Errorf("AddressConfigMapName() = %q, want %q", got, tt.wantClients)
			}
			if got := BrokerAddressConfigMapName(c); got != tt.wantBrokers {
				t.Errorf("BrokerAddressConfigMapName() = %q, want %q", got, tt.wantBrokers)
			}
			if got := IPsConfigMapName(c); got != tt.wantIPs {
				t.Errorf("IPsConfigMapName() = %q, want %q", got, tt.wantIPs)
			}
			if got := TargetName(c, tt.target); got != tt.wantTarget {
				t.Errorf("TargetName() = %q, want %q", got, tt.wantTarget)
			}
		})
	}
}

func TestDataDigest(t *testing.T) {
	a := map[string]string{"namesrvAddr": "a:1;b:1", "NAMESRV_ADDR": "a:1;b:1"}
	same := map[string]string{"NAMESRV_ADDR": "a:1;b:1", "namesrvAddr": "a:1;b:1"}
	if DataDigest(a) != DataDigest(same) {
		t.Error("the same data in another order gives another digest")
	}
	for name, other := range map[string]map[string]string{
		"a value":                 {"namesrvAddr": "a:1;b:2", "NAMESRV_ADDR": "a:1;b:1"},
		"a key":                   {"namesrvAddr": "a:1;b:1", "NAMESRV_ADDRS": "a:1;b:1"},
		"key and value run along": {"namesrvAddr": "a:1;b:1", "NAMESRV_ADDR": "a:1;b:1", "": ""},
		"one key fewer":           {"namesrvAddr": "a:1;b:1"},
	} {
		if DataDigest(a) == DataDigest(other) {
			t.Errorf("%s changed and the digest did not", name)
		}
	}
}
