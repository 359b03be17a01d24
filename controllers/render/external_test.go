package render

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

func TestExternalService(t *testing.T) {
	tests := []struct {
		name            string
		access          v1alpha1.ExternalAccessSpec
		remoting        int32
		old             []int32
		ordinal         int32
		wantType        corev1.ServiceType
		wantPolicy      corev1.ServiceExternalTrafficPolicy
		wantClass       *string
		wantAnnotations map[string]string
		wantRanges      []string
	}{
		{
			name: "load balancer by default", remoting: 9876, ordinal: 0,
			wantType: corev1.ServiceTypeLoadBalancer, wantPolicy: corev1.ServiceExternalTrafficPolicyLocal,
		},
		{
			name:     "load balancer with a class and annotations, on another port",
			access:   v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalLoadBalancer, LoadBalancerClass: ptr.To("lb.example/internal"), Annotations: map[string]string{"lb.example/scheme": "internal"}},
			remoting: 10911, ordinal: 2,
			wantType: corev1.ServiceTypeLoadBalancer, wantPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			wantClass: ptr.To("lb.example/internal"), wantAnnotations: map[string]string{"lb.example/scheme": "internal"},
		},
		{
			name: "during a move from 9876 and 9877, the old ports stay, forwarded to the same pod ports", remoting: 9878, old: []int32{9876, 9877}, ordinal: 0,
			wantType: corev1.ServiceTypeLoadBalancer, wantPolicy: corev1.ServiceExternalTrafficPolicyLocal,
		},
		{
			name:   "node port on the peer's node keeps the traffic local",
			access: v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalNodePort}, remoting: 9876, ordinal: 1,
			wantType: corev1.ServiceTypeNodePort, wantPolicy: corev1.ServiceExternalTrafficPolicyLocal,
		},
		{
			name:     "node port through a configured host may land on any node; no class on a node port",
			access:   v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalNodePort, NodePortHost: "nodes.example.com", LoadBalancerClass: ptr.To("lb.example/internal")},
			remoting: 9876, ordinal: 1,
			wantType: corev1.ServiceTypeNodePort, wantPolicy: corev1.ServiceExternalTrafficPolicyCluster,
		},
		{
			name:     "load balancer limited to source ranges",
			access:   v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalLoadBalancer, LoadBalancerSourceRanges: []string{"203.0.113.0/24", "2001:db8::/32"}},
			remoting: 9876, ordinal: 0,
			wantType: corev1.ServiceTypeLoadBalancer, wantPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			wantRanges: []string{"203.0.113.0/24", "2001:db8::/32"},
		},
		{
			name:     "no source ranges on a node port, which they would not limit",
			access:   v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalNodePort, LoadBalancerSourceRanges: []string{"203.0.113.0/24"}},
			remoting: 9876, ordinal: 0,
			wantType: corev1.ServiceTypeNodePort, wantPolicy: corev1.ServiceExternalTrafficPolicyLocal,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(func(c *v1alpha1.NameServerCluster) {
				c.Spec.ExternalAccess = &tt.access
				c.Spec.Ports.Remoting = tt.remoting
			})
			svc := typed[corev1.Service](t, ExternalService(c, tt.ordinal, tt.old))
			if want := ExternalServiceName(c, tt.ordinal); svc.Name != want || svc.Namespace != "mq" {
				t.Errorf("name = %s/%s, want mq/%s", svc.Namespace, svc.Name, want)
			}
			s := svc.Spec
			if s.Type != tt.wantType || s.ExternalTrafficPolicy != tt.wantPolicy {
				t.Errorf("type=%q externalTrafficPolicy=%q, want %q and %q", s.Type, s.ExternalTrafficPolicy, tt.wantType, tt.wantPolicy)
			}
			if !s.PublishNotReadyAddresses {
				t.Errorf("publishNotReadyAddresses = false: brokers could not register with a starting peer")
			}
			if ptr.Deref(s.LoadBalancerClass, "") != ptr.Deref(tt.wantClass, "") || (s.LoadBalancerClass == nil) != (tt.wantClass == nil) {
				t.Errorf("loadBalancerClass = %v, want %v", s.LoadBalancerClass, tt.wantClass)
			}
			wantSelector := map[string]string{
				"app.kubernetes.io/name": "namesrv", "app.kubernetes.io/instance": "ns1",
				"statefulset.kubernetes.io/pod-name": PodName(c, tt.ordinal),
			}
			if !maps.Equal(s.Selector, wantSelector) {
				t.Errorf("selector = %v, want %v", s.Selector, wantSelector)
			}
			wantPorts := []corev1.ServicePort{{Name: "remoting", Protocol: corev1.ProtocolTCP, Port: tt.remoting, TargetPort: intstr.FromString("remoting")}}
			for _, p := range tt.old {
				wantPorts = append(wantPorts, corev1.ServicePort{Name: fmt.Sprint("remoting-", p), Protocol: corev1.ProtocolTCP, Port: p, TargetPort: intstr.FromInt32(p)})
			}
			if !slices.Equal(s.Ports, wantPorts) {
				t.Errorf("ports = %+v, want %+v", s.Ports, wantPorts)
			}
			if s.ClusterIP != "" || len(s.ExternalIPs) != 0 || s.HealthCheckNodePort != 0 {
				t.Errorf("clusterIP=%q externalIPs=%v healthCheckNodePort=%d: fields the API server owns were set", s.ClusterIP, s.ExternalIPs, s.HealthCheckNodePort)
			}
			if !slices.Equal(s.LoadBalancerSourceRanges, tt.wantRanges) {
				t.Errorf("loadBalancerSourceRanges = %v, want %v", s.LoadBalancerSourceRanges, tt.wantRanges)
			}
			if !maps.Equal(svc.Annotations, tt.wantAnnotations) {
				t.Errorf("annotations = %v, want %v", svc.Annotations, tt.wantAnnotations)
			}
			checkLabels(t, svc.Labels)
			checkOwner(t, svc.OwnerReferences)
		})
	}
}

func TestExternalAddress(t *testing.T) {
	lb := func(ingress ...corev1.LoadBalancerIngress) *corev1.Service {
		return &corev1.Service{
			Spec: corev1.ServiceSpec{
				Type:  corev1.ServiceTypeLoadBalancer,
				Ports: []corev1.ServicePort{{Name: "remoting", Port: 9876, NodePort: 31111}},
			},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: ingress}},
		}
	}
	nodePort := func(port int32) *corev1.Service {
		return &corev1.Service{Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeNodePort,
			Ports: []corev1.ServicePort{{Name: "remoting", Port: 9876, NodePort: port}},
		}}
	}
	lbAccess := &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalLoadBalancer}
	npAccess := &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalNodePort}
	npHostAccess := &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalNodePort, NodePortHost: "nodes.example.com"}
	tests := []struct {
		name   string
		access *v1alpha1.ExternalAccessSpec
		svc    *corev1.Service
		hostIP string
		want   string
	}{
		{name: "load balancer IP and the Service port", access: lbAccess, svc: lb(corev1.LoadBalancerIngress{IP: "192.0.2.10"}), want: "192.0.2.10:9876"},
		{name: "load balancer IPv6", access: lbAccess, svc: lb(corev1.LoadBalancerIngress{IP: "2001:db8::10"}), want: "[2001:db8::10]:9876"},
		{name: "load balancer hostname", access: lbAccess, svc: lb(corev1.LoadBalancerIngress{Hostname: "lb-0.example.com"}), want: "lb-0.example.com:9876"},
		{
			name: "the IP wins over the hostname", access: lbAccess,
			svc: lb(corev1.LoadBalancerIngress{IP: "192.0.2.10", Hostname: "lb-0.example.com"}), want: "192.0.2.10:9876",
		},
		{
			name: "the first ingress with an address", access: lbAccess,
			svc:  lb(corev1.LoadBalancerIngress{}, corev1.LoadBalancerIngress{Hostname: "lb-1.example.com"}, corev1.LoadBalancerIngress{IP: "192.0.2.11"}),
			want: "lb-1.example.com:9876",
		},
		{name: "load balancer not assigned yet", access: lbAccess, svc: lb(), hostIP: "10.0.0.5", want: ""},
		{name: "node port on the configured host", access: npHostAccess, svc: nodePort(30123), hostIP: "10.0.0.5", want: "nodes.example.com:30123"},
		{name: "node port on the peer's node", access: npAccess, svc: nodePort(30123), hostIP: "10.0.0.5", want: "10.0.0.5:30123"},
		{name: "node port on an IPv6 node", access: npAccess, svc: nodePort(30123), hostIP: "fd00::7", want: "[fd00::7]:30123"},
		{name: "node port while the pod has no node", access: npAccess, svc: nodePort(30123), want: ""},
		{name: "node port not allocated yet", access: npHostAccess, svc: nodePort(0), hostIP: "10.0.0.5", want: ""},
		{name: "no externalAccess", svc: lb(corev1.LoadBalancerIngress{IP: "192.0.2.10"}), hostIP: "10.0.0.5", want: ""},
		{name: "no Service yet", access: lbAccess, hostIP: "10.0.0.5", want: ""},
		{
			name: "a Service without ports", access: npAccess, hostIP: "10.0.0.5",
			svc: &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort}}, want: "",
		},
		{
			name: "during a port move the remoting port is the one named so, not the first", access: lbAccess,
			svc: &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
				{Name: "remoting-9876", Port: 9876}, {Name: "remoting", Port: 9877}}},
				Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}}}}},
			want: "192.0.2.10:9877",
		},
		{
			name: "a Service of another type", access: npAccess, hostIP: "10.0.0.5",
			svc: &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{Name: "remoting", Port: 9876}}}}, want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.ExternalAccess = tt.access })
			if got := ExternalAddress(c, tt.svc, tt.hostIP); got != tt.want {
				t.Errorf("ExternalAddress() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestExposedUnauthenticated(t *testing.T) {
	lb := &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalLoadBalancer}
	lbRanges := &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalLoadBalancer, LoadBalancerSourceRanges: []string{"10.0.0.0/8"}}
	np := &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalNodePort}
	npRanges := &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalNodePort, LoadBalancerSourceRanges: []string{"10.0.0.0/8"}}
	mTLS := &v1alpha1.TLSSpec{SecretName: "s", Mode: v1alpha1.TLSEnforcing, ClientAuth: v1alpha1.TLSClientAuthRequire}
	tests := []struct {
		name   string
		access *v1alpha1.ExternalAccessSpec
		tls    *v1alpha1.TLSSpec
		want   bool
	}{
		{"no external access", nil, nil, false},
		{"a load balancer open to all", lb, nil, true},
		{"a load balancer with source ranges", lbRanges, nil, false},
		{"a node port: nothing limits it", np, nil, true},
		{"a node port's ranges limit nothing", npRanges, nil, true},
		{"a node port with enforced client certificates", np, mTLS, false},
		{"permissive TLS lets plain peers in", lb, &v1alpha1.TLSSpec{SecretName: "s", Mode: v1alpha1.TLSPermissive, ClientAuth: v1alpha1.TLSClientAuthRequire}, true},
		{"optional client certificates let anyone in", lb, &v1alpha1.TLSSpec{SecretName: "s", Mode: v1alpha1.TLSEnforcing, ClientAuth: v1alpha1.TLSClientAuthOptional}, true},
		{"enforced client certificates", lb, mTLS, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.ExternalAccess, c.Spec.TLS = tt.access, tt.tls })
			if got := ExposedUnauthenticated(c); got != tt.want {
				t.Errorf("ExposedUnauthenticated = %v, want %v", got, tt.want)
			}
		})
	}
}
