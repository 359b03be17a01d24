package render

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"

	// Accepts the flags of TestSimulation: go test ./controllers/... -seed N.
	_ "github.com/kube-namesrv/kube-namesrv/controllers/internal/testflags"
)

var testOptions = Options{ClusterDomain: "cluster.local", DefaultImage: "kube-namesrv/kube-namesrv:v9.9.9"}

// cluster is a NameServerCluster as the API server returns it: with the
// schema's defaults filled in.
func cluster(edits ...func(*v1alpha1.NameServerCluster)) *v1alpha1.NameServerCluster {
	c := &v1alpha1.NameServerCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "ns1", Namespace: "mq", UID: "uid-1"},
		Spec: v1alpha1.NameServerClusterSpec{
			Replicas: ptr.To[int32](3),
			Ports:    v1alpha1.Ports{Remoting: 9876, HTTP: 8080},
			PodDisruptionBudget: v1alpha1.PodDisruptionBudgetSpec{
				Enabled: ptr.To(true), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			},
			Service:                v1alpha1.ServiceSpec{Type: "ClusterIP"},
			Publish:                v1alpha1.PublishSpec{DrainSeconds: ptr.To[int32](180)},
			KVConfigPolicy:         v1alpha1.KVConfigOwned,
			BrokerHeartbeatSeconds: ptr.To[int32](30),
		},
	}
	for _, e := range edits {
		e(c)
	}
	return c
}

// typed turns an apply configuration into the typed object it describes, so
// tests read plain fields.
func typed[T any](t *testing.T, ac any) *T {
	t.Helper()
	b, err := json.Marshal(ac)
	if err != nil {
		t.Fatalf("marshal %T: %v", ac, err)
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("unmarshal into %T: %v", out, err)
	}
	return out
}

func checkOwner(t *testing.T, refs []metav1.OwnerReference) {
	t.Helper()
	if len(refs) != 1 {
		t.Fatalf("owner references = %v, want the cluster only", refs)
	}
	r := refs[0]
	if r.Kind != "NameServerCluster" || r.Name != "ns1" || r.UID != "uid-1" || r.APIVersion != "rocketmq.kube-namesrv.io/v1alpha1" ||
		!ptr.Deref(r.Controller, false) || !ptr.Deref(r.BlockOwnerDeletion, false) {
		t.Errorf("owner reference = %+v, want the controlling cluster", r)
	}
}
