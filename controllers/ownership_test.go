package controllers

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

func TestOwnership(t *testing.T) {
	moving := []metav1.Condition{{Type: string(v1alpha1.ConditionProgressing), Status: metav1.ConditionTrue, Reason: string(v1alpha1.ReasonRollingOut)}}
	still := []metav1.Condition{{Type: string(v1alpha1.ConditionProgressing), Status: metav1.ConditionFalse, Reason: string(v1alpha1.ReasonStable)}}
	other := func(heartbeat time.Duration) *v1alpha1.ManagerStatus {
		m := &v1alpha1.ManagerStatus{Identity: "other/kube-namesrv"}
		if heartbeat > 0 {
			m.HeartbeatTime = ptr.To(metav1.NewTime(statusNow.Add(-heartbeat)))
		}
		return m
	}
	tests := []struct {
		name       string
		manager    *v1alpha1.ManagerStatus
		observed   int64
		conditions []metav1.Condition
		// seenFor is how long this manager has seen the generation
		// unobserved before now.
		seenFor          time.Duration
		act, claim, told bool
	}{
		{name: "nobody manages it: claim, then act", act: true, claim: true, observed: 4},
		{name: "it is this one's", manager: &v1alpha1.ManagerStatus{Identity: testManager}, observed: 4, act: true},
		{name: "another's, at rest: defer", manager: other(0), observed: 4, conditions: still, told: true},
		{name: "another's, a spec change just made: defer", manager: other(0), observed: 3, conditions: still, told: true},
		{name: "another's, a spec change it left unobserved for 5 minutes: take over", manager: other(0), observed: 3, seenFor: defaultTakeoverAfter,
			conditions: still, act: true, claim: true, told: true},
		{name: "another's, moving, heartbeat a minute old: defer", manager: other(time.Minute), observed: 4, conditions: moving, told: true},
		{name: "another's, moving, no heartbeat for 5 minutes: take over", manager: other(defaultTakeoverAfter), observed: 4, conditions: moving,
			act: true, claim: true, told: true},
		{name: "another's, at rest with an old heartbeat: defer", manager: other(time.Hour), observed: 4, conditions: still, told: true},
		{name: "another's, held by a refusal, no heartbeat for 5 minutes: take over", manager: other(defaultTakeoverAfter), observed: 4,
			conditions: []metav1.Condition{{Type: string(v1alpha1.ConditionProgressing), Status: metav1.ConditionFalse, Reason: string(v1alpha1.ReasonBlocked)}},
			act:        true, claim: true, told: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &NameServerClusterReconciler{Identity: testManager}
			c := &v1alpha1.NameServerCluster{ObjectMeta: metav1.ObjectMeta{UID: "u", Generation: 4},
				Status: v1alpha1.NameServerClusterStatus{Manager: tt.manager, ObservedGeneration: tt.observed, Conditions: tt.conditions}}
			if tt.seenFor > 0 {
				r.ownership(c, statusNow.Add(-tt.seenFor))
			}
			act, claim, why := r.ownership(c, statusNow)
			if act != tt.act || claim != tt.claim || (why != "") != tt.told {
				t.Errorf("ownership() = %v, %v, %q; want act %v, claim %v, a reason %v", act, claim, why, tt.act, tt.claim, tt.told)
			}
		})
	}
}

// The manager names itself in every status it writes, and renews its
// heartbeat every minute while the cluster is not at rest, never while it
// is.
func TestStamp(t *testing.T) {
	r := &NameServerClusterReconciler{Identity: testManager}
	st := &v1alpha1.NameServerClusterStatus{}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: string(v1alpha1.ConditionProgressing), Status: metav1.ConditionTrue, Reason: "RollingOut"})
	r.stamp(v1alpha1.NameServerClusterStatus{Manager: &v1alpha1.ManagerStatus{Identity: "other"}}, st, statusNow)
	if st.Manager == nil || st.Manager.Identity != testManager || !st.Manager.HeartbeatTime.Time.Equal(statusNow) {
		t.Fatalf("a claim while moving: %+v", st.Manager)
	}
	old := *st
	r.stamp(old, st, statusNow.Add(30*time.Second))
	if !st.Manager.HeartbeatTime.Time.Equal(statusNow) {
		t.Errorf("heartbeat renewed after 30 s: %v", st.Manager.HeartbeatTime)
	}
	r.stamp(old, st, statusNow.Add(heartbeatEvery))
	if !st.Manager.HeartbeatTime.Time.Equal(statusNow.Add(heartbeatEvery)) {
		t.Errorf("heartbeat not renewed after a minute: %v", st.Manager.HeartbeatTime)
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: string(v1alpha1.ConditionProgressing), Status: metav1.ConditionFalse, Reason: "Stable"})
	old = *st
	r.stamp(old, st, statusNow.Add(time.Hour))
	if !st.Manager.HeartbeatTime.Time.Equal(statusNow.Add(heartbeatEvery)) {
		t.Errorf("heartbeat renewed while the cluster is at rest: %v", st.Manager.HeartbeatTime)
	}
}
