package controllers

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/peerclient"
	"github.com/kube-namesrv/kube-namesrv/controllers/publish"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/controllers/routecheck"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// testManager is the identity of the manager of the clusters of the pass
// tests.
const testManager = "test/kube-namesrv"

// recordingActor records what a pass did; its status writes fail with
// statusErr when set, and a gate request opens the gate when opens is set.
type recordingActor struct {
	statusErr error
	opens     bool
	clients   [][]string
	gates     []int32
	restarted []int32
}

func (a *recordingActor) applyKV(*v1alpha1.NameServerCluster, int32, publish.Peer) (*peerstatus.KVStatus, error) {
	return nil, errors.New("not reachable")
}

func (a *recordingActor) openGate(_ *v1alpha1.NameServerCluster, ordinal int32, _ publish.Peer, _ peerstatus.GateRequest) (*peerstatus.Summary, error) {
	a.gates = append(a.gates, ordinal)
	if !a.opens {
		return nil, errors.New("not reachable")
	}
	return &peerstatus.Summary{BootID: fmt.Sprint(ordinal), Gate: peerstatus.Gate{Enabled: true, Open: true}}, nil
}

func (a *recordingActor) writeStatus(c *v1alpha1.NameServerCluster, st v1alpha1.NameServerClusterStatus) error {
	if a.statusErr != nil {
		return a.statusErr
	}
	c.Status = st
	return nil
}

func (a *recordingActor) write(c *v1alpha1.NameServerCluster, d *decision, w write) (outcome, error) {
	if w.kind == writeAddresses && w.list == clientList && w.dest.namespace == c.Namespace {
		a.clients = append(a.clients, slices.Clone(d.lists.Clients))
	}
	return outcome{}, nil
}

func (a *recordingActor) restart(_ *v1alpha1.NameServerCluster, ordinal int32) error {
	a.restarted = append(a.restarted, ordinal)
	return nil
}

func (a *recordingActor) event(*v1alpha1.NameServerCluster, *corev1.Pod, string, v1alpha1.EventReason, string, string, ...any) {
}

// 2 -> 1 with ordinal 0 ready and about to join, ordinal 1 the only listed
// peer. The status write that records 0's join fails: 0 does not join, so
// the scale-down is held by it, and the client list keeps 1 (it is not
// written at all: its change could not be recorded). Dropping the join but
// not the removal it allowed would write an empty list.
func TestAJoinThatCannotBeRecordedHoldsTheScaleDownItAllowed(t *testing.T) {
	c := &v1alpha1.NameServerCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "mq", Name: "ns1", Generation: 4},
		Spec: v1alpha1.NameServerClusterSpec{Replicas: ptr.To[int32](1), Ports: v1alpha1.Ports{Remoting: 9876, HTTP: 8080},
			Publish: v1alpha1.PublishSpec{DrainSeconds: ptr.To[int32](60)}},
		Status: v1alpha1.NameServerClusterStatus{Manager: &v1alpha1.ManagerStatus{Identity: testManager},
			Peers: []v1alpha1.PeerStatus{{Ordinal: 1, Name: "ns1-1", Published: true, Address: "ns1-1.ns1-headless.mq.svc.cluster.local:9876"}}},
	}
	o := &observed{now: statusNow, round: 30 * time.Second, peers: map[int32]publish.Peer{},
		state: &peerclient.Cluster{Peers: map[int32]routecheck.Observation{}}}
	b := testBroker("10.1.0.1:10911", statusNow.Add(-time.Hour))
	for ord := range int32(2) {
		o.peers[ord] = publish.Peer{Ready: true, IP: fmt.Sprintf("10.0.0.%d", ord+1), Revision: "new", RemotingPort: 9876, HTTPPort: 8080}
		o.state.Peers[ord] = routecheck.Observation{ReadAt: statusNow, Summary: &peerstatus.Summary{BootID: fmt.Sprint(ord), Brokers: []peerstatus.Broker{b}}}
	}
	o.sts = &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, UpdateRevision: "new"}}
	a := &recordingActor{statusErr: errors.New("conflict")}
	r := &NameServerClusterReconciler{Render: render.Options{ClusterDomain: "cluster.local"}, Identity: testManager}
	if _, err := r.pass(c, o, a); err == nil {
		t.Fatal("the pass went on after its join record failed")
	}
	want := []string{"ns1-1.ns1-headless.mq.svc.cluster.local:9876"}
	for _, l := range a.clients {
		if !slices.Equal(l, want) {
			t.Errorf("client list written: %v; want none, or %v, the peer that answers", l, want)
		}
	}
	if len(a.restarted) > 0 {
		t.Errorf("restarted %v", a.restarted)
	}
}

// A change of the lists is recorded (status.lists[].changedTime) before any
// ConfigMap changes: a port that the change drops is drained from no earlier
// than the write that dropped it, even when the status write after the
// lists fails. When that record cannot be written, no list is written.
func TestAListChangeIsRecordedBeforeItIsWritten(t *testing.T) {
	c, o := shrinkingCluster()
	r := &NameServerClusterReconciler{Render: render.Options{ClusterDomain: "cluster.local"}, Identity: testManager}
	a := &orderActor{}
	if _, err := r.pass(c, o, a); err != nil {
		t.Fatal(err)
	}
	if len(a.order) < 2 || a.order[0] != "status" || !slices.Contains(a.order, "clients") ||
		slices.Index(a.order, "clients") < slices.Index(a.order, "status") {
		t.Fatalf("acts %v: want the status record before the client list", a.order)
	}
	if ch := a.first.Lists; ch == nil || ch.Clients.ChangedTime == nil || !ch.Clients.ChangedTime.Time.Equal(statusNow) {
		t.Errorf("the record before the lists: %+v; want the client list changing now", ch)
	}

	c, o = shrinkingCluster()
	a = &orderActor{refuseStatus: true}
	if _, err := r.pass(c, o, a); err == nil {
		t.Fatal("the pass went on after its record failed")
	}
	if slices.Contains(a.order, "clients") || slices.Contains(a.order, "restart") {
		t.Errorf("acts %v after the record failed; want no list written and no restart", a.order)
	}
	if a.replicas < 3 {
		t.Errorf("the StatefulSet shrank to %d under lists that were not written", a.replicas)
	}
}

// orderActor records the order of a pass's acts.
type orderActor struct {
	recordingActor
	refuseStatus bool
	order        []string
	first        *v1alpha1.NameServerClusterStatus
	replicas     int32
}

func (a *orderActor) writeStatus(c *v1alpha1.NameServerCluster, st v1alpha1.NameServerClusterStatus) error {
	a.order = append(a.order, "status")
	if a.refuseStatus {
		return errors.New("conflict")
	}
	if a.first == nil {
		a.first = st.DeepCopy()
	}
	c.Status = st
	return nil
}

func (a *orderActor) write(c *v1alpha1.NameServerCluster, d *decision, w write) (outcome, error) {
	switch {
	case w.kind == writeAddresses && w.list == clientList:
		a.order = append(a.order, "clients")
	case w.kind == writeStatefulSet:
		a.replicas = d.plan.Replicas
	}
	return outcome{}, nil
}

func (a *orderActor) restart(*v1alpha1.NameServerCluster, int32) error {
	a.order = append(a.order, "restart")
	return nil
}
