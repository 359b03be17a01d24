package controllers

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

func TestDroppedFields(t *testing.T) {
	full := v1alpha1.NameServerClusterStatus{
		ObservedGeneration: 3,
		PublishedReplicas:  2,
		Peers: []v1alpha1.PeerStatus{
			{Ordinal: 0, Name: "a-0", Address: "x", Node: "n0", Zone: "z0", Reachable: ptr.To(false)},
			{Ordinal: 1, Name: "a-1", Address: "y", Node: "n1"},
		},
		Lists:      &v1alpha1.PublishedListsStatus{Clients: v1alpha1.PublishedListStatus{Digest: "d"}},
		Conditions: []metav1.Condition{{Type: "Available", Status: metav1.ConditionTrue, Reason: "R", Message: "m"}},
	}
	tests := []struct {
		name string
		got  func(*v1alpha1.NameServerClusterStatus)
		want []string
	}{
		{name: "nothing dropped", got: func(*v1alpha1.NameServerClusterStatus) {}},
		{name: "fields of every peer", got: func(s *v1alpha1.NameServerClusterStatus) {
			for i := range s.Peers {
				s.Peers[i].Node, s.Peers[i].Zone = "", ""
			}
		}, want: []string{"status.peers[].node", "status.peers[].zone"}},
		{name: "a whole list, as a CRD without status.peers", got: func(s *v1alpha1.NameServerClusterStatus) { s.Peers = nil },
			want: []string{"status.peers"}},
		{name: "a nested object", got: func(s *v1alpha1.NameServerClusterStatus) { s.Lists = nil }, want: []string{"status.lists"}},
		{name: "a false pointer is a value, not an absence", got: func(s *v1alpha1.NameServerClusterStatus) { s.Peers[0].Reachable = nil },
			want: []string{"status.peers[].reachable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := *full.DeepCopy()
			tt.got(&got)
			dropped, err := droppedFields(full, got)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(dropped, tt.want) {
				t.Errorf("dropped = %q, want %q", dropped, tt.want)
			}
		})
	}
}

func TestSchemaGapsProblem(t *testing.T) {
	var g schemaGaps
	c := &v1alpha1.NameServerCluster{}
	c.UID = "u1"
	if p := g.problems(c); p != nil {
		t.Fatalf("problems before any write = %+v", p)
	}
	g.record(c.UID, []string{"status.peers[].node", "status.peers[].zone", "status.a", "status.b", "status.c", "status.d"})
	p := g.problems(c)
	if len(p) != 1 || p[0].Reason != v1alpha1.RefusalCRDOutdated || !p[0].Retry {
		t.Fatalf("problems = %+v, want one CRDOutdated to retry", p)
	}
	for _, want := range []string{"status.peers[].node", "and 1 more", "apply the CRD of the operator's release"} {
		if !strings.Contains(p[0].Message, want) {
			t.Errorf("message %q lacks %q", p[0].Message, want)
		}
	}
	g.record(c.UID, nil)
	if p := g.problems(c); p != nil {
		t.Errorf("problems after a write that kept everything = %+v", p)
	}
}
