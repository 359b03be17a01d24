package controllers

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/publish"
)

func TestComputeStatus(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	settled := func(n int32) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Generation: 2},
			Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To(n)},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: n, ReadyReplicas: n, UpdatedReplicas: n,
				CurrentRevision: "a", UpdateRevision: "a"},
		}
	}
	ready := func(ordinals ...int32) map[int32]publish.Peer {
		m := map[int32]publish.Peer{}
		for _, o := range ordinals {
			m[o] = publish.Peer{Ready: true}
		}
		return m
	}
	type conds map[string]string // type -> "True/Reason" or "False/Reason"
	tests := []struct {
		name string
		in   statusInput
		want conds
	}{
		{
			name: "new cluster, nothing yet",
			in:   statusInput{Plan: publish.Plan{Replicas: 3}, Peers: ready()},
			want: conds{
				v1alpha1.ConditionAvailable: "False/NoPublishedPeerReady", v1alpha1.ConditionAddressesPublished: "False/WaitingForReadiness",
				v1alpha1.ConditionDegraded: "False/AsExpected", v1alpha1.ConditionProgressing: "True/Scaling",
			},
		},
		{
			name: "everything settled",
			in:   statusInput{Plan: publish.Plan{Published: 3, Replicas: 3}, StatefulSet: settled(3), Peers: ready(0, 1, 2)},
			want: conds{
				v1alpha1.ConditionAvailable: "True/PeersReady", v1alpha1.ConditionAddressesPublished: "True/Published",
				v1alpha1.ConditionDegraded: "False/AsExpected", v1alpha1.ConditionProgressing: "False/Stable",
			},
		},
		{
			name: "a published peer restarts",
			in:   statusInput{Plan: publish.Plan{Published: 3, Replicas: 3}, StatefulSet: settled(3), Peers: ready(0, 2)},
			want: conds{
				v1alpha1.ConditionAvailable: "True/PeersReady", v1alpha1.ConditionAddressesPublished: "True/Published",
				v1alpha1.ConditionDegraded: "True/PublishedPeersNotReady",
			},
		},
		{
			name: "rolling out a new revision",
			in: statusInput{Plan: publish.Plan{Published: 3, Replicas: 3}, Peers: ready(0, 1, 2), StatefulSet: func() *appsv1.StatefulSet {
				s := settled(3)
				s.Status.UpdateRevision, s.Status.UpdatedReplicas = "b", 1
				return s
			}()},
			want: conds{v1alpha1.ConditionProgressing: "True/RollingOut", v1alpha1.ConditionDegraded: "False/AsExpected"},
		},
		{
			name: "draining after a scale-down",
			in: statusInput{Plan: publish.Plan{Published: 3, Replicas: 4, DrainStart: &now, RequeueAfter: time.Minute},
				StatefulSet: settled(4), Peers: ready(0, 1, 2, 3), Now: now},
			want: conds{v1alpha1.ConditionProgressing: "True/Draining", v1alpha1.ConditionAddressesPublished: "True/Published"},
		},
		{
			name: "a refused target blocks progress and publication",
			in: statusInput{Plan: publish.Plan{Published: 3, Replicas: 3}, StatefulSet: settled(3), Peers: ready(0, 1, 2),
				Problems: []problem{{Reason: "TargetRefused", Message: "no"}}},
			want: conds{
				v1alpha1.ConditionAvailable: "True/PeersReady", v1alpha1.ConditionAddressesPublished: "False/TargetRefused",
				v1alpha1.ConditionDegraded: "True/TargetRefused", v1alpha1.ConditionProgressing: "False/Blocked",
			},
		},
		{
			name: "a refused StatefulSet blocks progress, publication stays true",
			in: statusInput{Plan: publish.Plan{Published: 3, Replicas: 3}, StatefulSet: settled(3), Peers: ready(0, 1, 2),
				Problems: []problem{{Reason: "ApplyRefused", Message: "immutable"}}},
			want: conds{
				v1alpha1.ConditionAddressesPublished: "True/Published", v1alpha1.ConditionDegraded: "True/ApplyRefused",
				v1alpha1.ConditionProgressing: "False/Blocked",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &v1alpha1.NameServerCluster{ObjectMeta: metav1.ObjectMeta{Name: "ns1", Namespace: "mq", Generation: 7}}
			c.Spec.Replicas = ptr.To[int32](3)
			tt.in.Cluster = c
			if tt.in.Now.IsZero() {
				tt.in.Now = now
			}
			st := computeStatus(tt.in)
			if st.ObservedGeneration != 7 || st.PublishedReplicas != tt.in.Plan.Published {
				t.Errorf("observedGeneration %d published %d", st.ObservedGeneration, st.PublishedReplicas)
			}
			if (st.DrainStartTime != nil) != tt.in.Plan.Draining() {
				t.Errorf("drainStartTime = %v, plan draining %v", st.DrainStartTime, tt.in.Plan.Draining())
			}
			for typ, want := range tt.want {
				got := meta.FindStatusCondition(st.Conditions, typ)
				if got == nil || string(got.Status)+"/"+got.Reason != want {
					t.Errorf("condition %s = %+v, want %s", typ, got, want)
				}
				if got != nil && got.ObservedGeneration != 7 {
					t.Errorf("condition %s observedGeneration %d", typ, got.ObservedGeneration)
				}
			}
		})
	}
}

func TestComputeStatusKeepsTransitionTimes(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := &v1alpha1.NameServerCluster{ObjectMeta: metav1.ObjectMeta{Name: "ns1", Namespace: "mq"}}
	c.Spec.Replicas = ptr.To[int32](1)
	c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "PeersReady", LastTransitionTime: then}}
	st := computeStatus(statusInput{
		Cluster: c, Plan: publish.Plan{Published: 1, Replicas: 1},
		Peers: map[int32]publish.Peer{0: {Ready: true}}, Now: then.Add(time.Hour),
	})
	if got := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionAvailable); !got.LastTransitionTime.Equal(&then) {
		t.Errorf("lastTransitionTime moved to %v without a status change", got.LastTransitionTime)
	}
	if c.Status.Conditions[0].Message != "" {
		t.Errorf("computeStatus changed the input's conditions")
	}
	addr := computeStatus(statusInput{Cluster: c, Plan: publish.Plan{Published: 1, Replicas: 1}, Addresses: []string{"a:1"}, Now: then.Time})
	if addr.NamesrvAddr != "a:1" || addr.Selector != "app.kubernetes.io/instance=ns1,app.kubernetes.io/name=namesrv" {
		t.Errorf("namesrvAddr %q selector %q", addr.NamesrvAddr, addr.Selector)
	}
}
