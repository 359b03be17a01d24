package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/peerclient"
	"github.com/kube-namesrv/kube-namesrv/controllers/publish"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/controllers/routecheck"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// scene is a cluster as one reconcile finds it, for the status table.
type scene struct {
	replicas int32
	// pods: one letter per ordinal: R ready at the current revision, r
	// ready at an old one, U unready at the current revision, u unready at
	// an old one, - no pod.
	pods string
	// published are the ordinals of the client list in status before.
	published []int32
	// stsGeneration and observed: the StatefulSet's generation and the one
	// its controller observed; stsReplicas its spec.replicas.
	stsGeneration, observed int64
	stsReplicas             int32
	paused                  bool
	// brokers per ordinal, as their summaries report; an ordinal absent
	// from reads was not read, one mapped to nil could not be read.
	reads    map[int32][]peerstatus.Broker
	kvConfig []v1alpha1.KVConfigEntry
	kv       map[int32]*peerstatus.KVStatus
	problems []problem
	drain    bool
}

var statusNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func (s scene) run(t *testing.T) v1alpha1.NameServerClusterStatus {
	t.Helper()
	c := &v1alpha1.NameServerCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "mq", Name: "ns1", Generation: 4},
		Spec: v1alpha1.NameServerClusterSpec{
			Replicas: ptr.To(s.replicas), Ports: v1alpha1.Ports{Remoting: 9876, HTTP: 8080},
			Paused: s.paused, KVConfig: s.kvConfig,
			Publish: v1alpha1.PublishSpec{DrainSeconds: ptr.To[int32](60)},
		},
	}
	for _, o := range s.published {
		c.Status.Peers = append(c.Status.Peers, v1alpha1.PeerStatus{Ordinal: o, Name: fmt.Sprintf("ns1-%d", o), Published: true,
			Address: fmt.Sprintf("ns1-%d.ns1-headless.mq.svc.cluster.local:9876", o)})
	}
	if s.drain {
		c.Status.DrainStartTime = ptr.To(metav1.NewTime(statusNow.Add(-10 * time.Second)))
	}
	o := &observed{now: statusNow, round: 30 * time.Second, peers: map[int32]publish.Peer{}, state: &peerclient.Cluster{Peers: map[int32]routecheck.Observation{}}}
	for i, l := range s.pods {
		ordinal := int32(i)
		if l == '-' {
			continue
		}
		rev := "new"
		if l == 'r' || l == 'u' {
			rev = "old"
		}
		o.peers[ordinal] = publish.Peer{Ready: l == 'R' || l == 'r', IP: fmt.Sprintf("10.0.0.%d", i+1), Revision: rev, RemotingPort: 9876, HTTPPort: 8080}
	}
	for ordinal, brokers := range s.reads {
		if brokers == nil && s.kv[ordinal] == nil {
			o.state.Peers[ordinal] = routecheck.Observation{Err: "connection refused", ReadAt: statusNow}
			continue
		}
		o.state.Peers[ordinal] = routecheck.Observation{ReadAt: statusNow, Summary: &peerstatus.Summary{
			BootID: fmt.Sprint(ordinal), StartTime: statusNow.Add(-time.Hour), Brokers: brokers, KV: s.kv[ordinal]}}
	}
	stsReplicas := s.stsReplicas
	if stsReplicas == 0 {
		stsReplicas = s.replicas
	}
	if s.stsGeneration > 0 {
		o.sts = &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: s.stsGeneration}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(stsReplicas)},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: s.observed, UpdateRevision: "new"}}
	}
	r := &NameServerClusterReconciler{Render: render.Options{ClusterDomain: "cluster.local"}}
	d, err := r.decide(c, o)
	if err != nil {
		t.Fatal(err)
	}
	return computeStatus(statusInput{Cluster: c, Obs: o, Dec: d, StatefulSet: o.sts, Problems: s.problems, Now: statusNow}, r.Render)
}

func TestComputeStatusConditions(t *testing.T) {
	old := statusNow.Add(-time.Hour)
	b1, b2 := testBroker("10.1.0.1:10911", old), testBroker("10.1.0.2:10911", old)
	both := []peerstatus.Broker{b1, b2}
	refusedTarget := problem{Reason: v1alpha1.RefusalTarget, Message: `spec.publish.targets: namespace "later" does not exist`, Addresses: true}
	type conds map[v1alpha1.ConditionType]string // type -> condTrue(reason) etc. (message checked separately)
	tests := []struct {
		name  string
		scene scene
		want  conds
		// like: condition type -> a substring its message must hold.
		like map[v1alpha1.ConditionType]string
	}{
		{
			name:  "a new cluster: nothing serves yet",
			scene: scene{replicas: 3, pods: "UUU"},
			want: conds{
				v1alpha1.ConditionAvailable: condFalse(v1alpha1.ReasonNoPeerServing), v1alpha1.ConditionAddressesPublished: condFalse(v1alpha1.ReasonWaitingForPeers),
				v1alpha1.ConditionDegraded: condFalse(v1alpha1.ReasonAsExpected), v1alpha1.ConditionProgressing: condTrue(v1alpha1.ReasonScaling),
				v1alpha1.ConditionRoutesConsistent: condUnknown(v1alpha1.ReasonNotChecked), v1alpha1.ConditionKVConfigInSync: condTrue(v1alpha1.ReasonNothingDeclared),
			},
		},
		{
			name:  "settled: every peer serves and agrees",
			scene: scene{replicas: 3, pods: "RRR", published: []int32{0, 1, 2}, stsGeneration: 2, observed: 2, reads: map[int32][]peerstatus.Broker{0: both, 1: both, 2: both}},
			want: conds{
				v1alpha1.ConditionAvailable: condTrue(v1alpha1.ReasonPeersServing), v1alpha1.ConditionAddressesPublished: condTrue(v1alpha1.ReasonPublished),
				v1alpha1.ConditionDegraded: condFalse(v1alpha1.ReasonAsExpected), v1alpha1.ConditionProgressing: condFalse(v1alpha1.ReasonStable),
				v1alpha1.ConditionRoutesConsistent: condTrue(v1alpha1.ReasonConsistent),
			},
		},
		{
			name:  "the first reconcile of a new template is not Stable: its controller has not seen it",
			scene: scene{replicas: 3, pods: "RRR", published: []int32{0, 1, 2}, stsGeneration: 3, observed: 2},
			want:  conds{v1alpha1.ConditionProgressing: condTrue(v1alpha1.ReasonRollingOut), v1alpha1.ConditionDegraded: condFalse(v1alpha1.ReasonAsExpected)},
			like:  map[v1alpha1.ConditionType]string{v1alpha1.ConditionProgressing: "has not observed"},
		},
		{
			name:  "a listed peer down outside a roll is degraded",
			scene: scene{replicas: 3, pods: "RUR", published: []int32{0, 1, 2}, stsGeneration: 2, observed: 2},
			want:  conds{v1alpha1.ConditionAvailable: condTrue(v1alpha1.ReasonPeersServing), v1alpha1.ConditionDegraded: condTrue(v1alpha1.ReasonPeersNotReady)},
			like:  map[v1alpha1.ConditionType]string{v1alpha1.ConditionDegraded: "ns1-1"},
		},
		{
			name:  "a routine roll, one peer restarting, is not degraded",
			scene: scene{replicas: 3, pods: "rrU", published: []int32{0, 1, 2}, stsGeneration: 3, observed: 3},
			want:  conds{v1alpha1.ConditionProgressing: condTrue(v1alpha1.ReasonRollingOut), v1alpha1.ConditionDegraded: condFalse(v1alpha1.ReasonAsExpected)},
			like:  map[v1alpha1.ConditionType]string{v1alpha1.ConditionProgressing: "waiting for listed ordinal 2"},
		},
		{
			name:  "two peers down during a roll is degraded",
			scene: scene{replicas: 3, pods: "rUU", published: []int32{0, 1, 2}, stsGeneration: 3, observed: 3},
			want:  conds{v1alpha1.ConditionProgressing: condTrue(v1alpha1.ReasonRollingOut), v1alpha1.ConditionDegraded: condTrue(v1alpha1.ReasonPeersNotReady)},
		},
		{
			name:  "paused with outdated peers",
			scene: scene{replicas: 3, pods: "rrr", published: []int32{0, 1, 2}, stsGeneration: 3, observed: 3, paused: true},
			want:  conds{v1alpha1.ConditionProgressing: condFalse(v1alpha1.ReasonRolloutPaused), v1alpha1.ConditionDegraded: condFalse(v1alpha1.ReasonAsExpected)},
			like:  map[v1alpha1.ConditionType]string{v1alpha1.ConditionProgressing: "ns1-0, ns1-1, ns1-2 run an outdated pod template"},
		},
		{
			name:  "draining after a scale-down",
			scene: scene{replicas: 2, pods: "RRR", published: []int32{0, 1}, stsGeneration: 2, observed: 2, stsReplicas: 3, drain: true},
			want:  conds{v1alpha1.ConditionProgressing: condTrue(v1alpha1.ReasonDraining), v1alpha1.ConditionAddressesPublished: condTrue(v1alpha1.ReasonPublished)},
		},
		{
			name:  "a scale-down held by a peer that would remain and does not serve",
			scene: scene{replicas: 1, pods: "URR", published: []int32{0, 1, 2}, stsGeneration: 2, observed: 2, stsReplicas: 3},
			want:  conds{v1alpha1.ConditionProgressing: condFalse(v1alpha1.ReasonScaleDownHeld), v1alpha1.ConditionDegraded: condTrue(v1alpha1.ReasonPeersNotReady)},
			like:  map[v1alpha1.ConditionType]string{v1alpha1.ConditionProgressing: "ns1-0, which would remain, does not serve"},
		},
		{
			name: "a missing optional target does not hide a roll",
			scene: scene{replicas: 3, pods: "rrR", published: []int32{0, 1, 2}, stsGeneration: 3, observed: 3,
				problems: []problem{refusedTarget}},
			want: conds{
				v1alpha1.ConditionProgressing: condTrue(v1alpha1.ReasonRollingOut), v1alpha1.ConditionAddressesPublished: condFalse(v1alpha1.RefusalTarget),
				v1alpha1.ConditionDegraded: condTrue(v1alpha1.RefusalTarget),
			},
		},
		{
			name:  "a refusal with nothing else moving blocks",
			scene: scene{replicas: 3, pods: "RRR", published: []int32{0, 1, 2}, stsGeneration: 2, observed: 2, problems: []problem{refusedTarget}},
			want:  conds{v1alpha1.ConditionProgressing: condFalse(v1alpha1.ReasonBlocked)},
		},
		{
			name: "a broker cut off from one serving peer",
			scene: scene{replicas: 3, pods: "RRR", published: []int32{0, 1, 2}, stsGeneration: 2, observed: 2,
				reads: map[int32][]peerstatus.Broker{0: both, 1: {b1}, 2: both}},
			want: conds{v1alpha1.ConditionRoutesConsistent: condFalse(v1alpha1.ReasonBrokerMissing)},
			like: map[v1alpha1.ConditionType]string{v1alpha1.ConditionRoutesConsistent: "broker DefaultCluster/broker-10.1.0.2:10911@10.1.0.2:10911 is missing from peer ns1-1"},
		},
		{
			name: "a serving peer the operator cannot read",
			scene: scene{replicas: 3, pods: "RRR", published: []int32{0, 1, 2}, stsGeneration: 2, observed: 2,
				reads: map[int32][]peerstatus.Broker{0: both, 1: nil, 2: both}},
			want: conds{v1alpha1.ConditionRoutesConsistent: condUnknown(v1alpha1.ReasonPeerUnreachable)},
			like: map[v1alpha1.ConditionType]string{v1alpha1.ConditionRoutesConsistent: "ns1-1"},
		},
		{
			name: "a declared KV value changed by hand on one peer",
			scene: scene{replicas: 2, pods: "RR", published: []int32{0, 1}, stsGeneration: 2, observed: 2,
				kvConfig: []v1alpha1.KVConfigEntry{{Namespace: "ORDER_TOPIC_CONFIG", Key: "TopicA", Value: "broker-a:4"}},
				kv: map[int32]*peerstatus.KVStatus{0: {Digest: "current", InSync: true}, 1: {Digest: "current", Drift: []peerstatus.KVDrift{
					{Namespace: "ORDER_TOPIC_CONFIG", Key: "TopicA", Reason: peerstatus.DriftDiffers}}}},
				reads: map[int32][]peerstatus.Broker{0: nil, 1: nil}},
			want: conds{v1alpha1.ConditionKVConfigInSync: condFalse(v1alpha1.ReasonKVNotDelivered)},
			like: map[v1alpha1.ConditionType]string{v1alpha1.ConditionKVConfigInSync: "peer ns1-0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.scene.run(t)
			for typ, want := range tt.want {
				c := v1alpha1.FindCondition(st.Conditions, typ)
				if c == nil {
					t.Errorf("no %s condition", typ)
					continue
				}
				if got := string(c.Status) + "/" + c.Reason; got != want {
					t.Errorf("%s = %s (%s), want %s", typ, got, c.Message, want)
				}
			}
			for typ, like := range tt.like {
				if c := v1alpha1.FindCondition(st.Conditions, typ); c == nil || !strings.Contains(c.Message, like) {
					t.Errorf("%s message = %+v, want one containing %q", typ, c, like)
				}
			}
			for _, c := range st.Conditions {
				if c.ObservedGeneration != 4 {
					t.Errorf("%s observedGeneration = %d, want the cluster's 4", c.Type, c.ObservedGeneration)
				}
			}
		})
	}
}

// TestKVInSyncNamesPeerAndKey: with the current declaration delivered, a
// hand-made change is named by peer and key.
func TestKVInSyncNamesPeerAndKey(t *testing.T) {
	s := scene{replicas: 2, pods: "RR", published: []int32{0, 1}, stsGeneration: 2, observed: 2,
		kvConfig: []v1alpha1.KVConfigEntry{{Namespace: "ORDER_TOPIC_CONFIG", Key: "TopicA", Value: "broker-a:4"}}}
	c := &v1alpha1.NameServerCluster{Spec: v1alpha1.NameServerClusterSpec{KVConfig: s.kvConfig}}
	file, err := render.KVFile(c)
	if err != nil {
		t.Fatal(err)
	}
	digest := peerstatus.Digest(file)
	s.kv = map[int32]*peerstatus.KVStatus{0: {Digest: digest, InSync: true}, 1: {Digest: digest, Drift: []peerstatus.KVDrift{
		{Namespace: "ORDER_TOPIC_CONFIG", Key: "TopicA", Reason: peerstatus.DriftDiffers}}}}
	s.reads = map[int32][]peerstatus.Broker{0: nil, 1: nil}
	st := s.run(t)
	cond := v1alpha1.FindCondition(st.Conditions, v1alpha1.ConditionKVConfigInSync)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != string(v1alpha1.ReasonKVDrift) || !strings.Contains(cond.Message, "peer ns1-1: ORDER_TOPIC_CONFIG/TopicA: differs") {
		t.Fatalf("KVConfigInSync = %+v", cond)
	}
	for _, p := range st.Peers {
		if p.Ordinal == 1 && (p.KVConfigInSync == nil || *p.KVConfigInSync || len(p.KVConfigDrift) != 1) {
			t.Errorf("peer 1 status = %+v", p)
		}
	}
}

// condTrue, condFalse and condUnknown spell a condition's status and
// reason as the table compares them, from the API's reason constants.
func condTrue(reason v1alpha1.ConditionReason) string {
	return string(metav1.ConditionTrue) + "/" + string(reason)
}
func condFalse(reason v1alpha1.ConditionReason) string {
	return string(metav1.ConditionFalse) + "/" + string(reason)
}
func condUnknown(reason v1alpha1.ConditionReason) string {
	return string(metav1.ConditionUnknown) + "/" + string(reason)
}
