package render

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

func checkPorts(t *testing.T, got []corev1.ServicePort, remoting, http int32) {
	t.Helper()
	want := []corev1.ServicePort{
		{Name: "remoting", Protocol: corev1.ProtocolTCP, Port: remoting, TargetPort: intstr.FromString("remoting")},
		{Name: "http", Protocol: corev1.ProtocolTCP, Port: http, TargetPort: intstr.FromString("http")},
	}
	if len(got) != len(want) {
		t.Fatalf("ports = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("port %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestHeadlessService(t *testing.T) {
	svc := typed[corev1.Service](t, HeadlessService(cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.Ports.HTTP = 8081 })))
	if svc.Name != "ns1-headless" || svc.Namespace != "mq" {
		t.Errorf("name = %s/%s", svc.Namespace, svc.Name)
	}
	if svc.Spec.ClusterIP != "None" || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("clusterIP=%q publishNotReadyAddresses=%v, want None and true", svc.Spec.ClusterIP, svc.Spec.PublishNotReadyAddresses)
	}
	if want := map[string]string{"app.kubernetes.io/name": "namesrv", "app.kubernetes.io/instance": "ns1"}; !maps.Equal(svc.Spec.Selector, want) {
		t.Errorf("selector = %v, want %v", svc.Spec.Selector, want)
	}
	checkPorts(t, svc.Spec.Ports, 9876, 8081)
	checkLabels(t, svc.Labels)
	checkOwner(t, svc.OwnerReferences)
}

func TestClientService(t *testing.T) {
	tests := []struct {
		name            string
		spec            v1alpha1.ServiceSpec
		wantType        corev1.ServiceType
		wantAnnotations map[string]string
	}{
		{name: "cluster IP", spec: v1alpha1.ServiceSpec{Type: "ClusterIP"}, wantType: corev1.ServiceTypeClusterIP},
		{
			name:     "load balancer with annotations",
			spec:     v1alpha1.ServiceSpec{Type: "LoadBalancer", Annotations: map[string]string{"lb.example/internal": "true"}},
			wantType: corev1.ServiceTypeLoadBalancer, wantAnnotations: map[string]string{"lb.example/internal": "true"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := typed[corev1.Service](t, ClientService(cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.Service = tt.spec }), OldPorts{}))
			if svc.Name != "ns1" || svc.Spec.Type != tt.wantType || svc.Spec.ClusterIP != "" || svc.Spec.PublishNotReadyAddresses {
				t.Errorf("service %s: type=%q clusterIP=%q publishNotReady=%v", svc.Name, svc.Spec.Type, svc.Spec.ClusterIP, svc.Spec.PublishNotReadyAddresses)
			}
			if !maps.Equal(svc.Annotations, tt.wantAnnotations) {
				t.Errorf("annotations = %v, want %v", svc.Annotations, tt.wantAnnotations)
			}
			checkPorts(t, svc.Spec.Ports, 9876, 8080)
			checkLabels(t, svc.Labels)
			checkOwner(t, svc.OwnerReferences)
		})
	}
}

// While a port change drains, the client Service keeps the old ports: an
// old remoting port forwards to the same port of the pods (the main port of
// those not restarted yet, an extra port of the others), an old HTTP port
// to each pod's own HTTP port.
func TestClientServiceKeepsOldPorts(t *testing.T) {
	c := cluster(func(c *v1alpha1.NameServerCluster) { c.Spec.Ports = v1alpha1.Ports{Remoting: 9877, HTTP: 8081} })
	svc := typed[corev1.Service](t, ClientService(c, OldPorts{Remoting: []int32{9876}, HTTP: []int32{8080}}))
	want := []corev1.ServicePort{
		{Name: "remoting", Protocol: corev1.ProtocolTCP, Port: 9877, TargetPort: intstr.FromString("remoting")},
		{Name: "http", Protocol: corev1.ProtocolTCP, Port: 8081, TargetPort: intstr.FromString("http")},
		{Name: "remoting-9876", Protocol: corev1.ProtocolTCP, Port: 9876, TargetPort: intstr.FromInt32(9876)},
		{Name: "http-8080", Protocol: corev1.ProtocolTCP, Port: 8080, TargetPort: intstr.FromString("http")},
	}
	if !slices.Equal(svc.Spec.Ports, want) {
		t.Errorf("ports = %+v\nwant %+v", svc.Spec.Ports, want)
	}
}
