package controllers

import (
	"fmt"
	"slices"
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

// These tests pin the split between "answers clients" and "joinable": a peer
// whose declared KV file lags (the kubelet refreshes a mounted ConfigMap
// 60-90 s after a kvConfig edit) still answers clients, so a kvConfig edit
// applied together with a roll or a scale-down must neither restart it
// first nor lift a hold that keeps it.

// lagPeer is one listed peer: its pod's readiness and revision, and whether
// it read the current declared-KV file.
type lagPeer struct {
	ready   bool
	rev     string
	kvFresh bool
}

// decideWithKVLag builds a cluster of desired peers that declares kvConfig,
// whose StatefulSet's controller observed revision "new", with the given
// pods (all listed, all readable, all holding the same broker), and decides.
func decideWithKVLag(t *testing.T, desired int32, peers []lagPeer) *decision {
	t.Helper()
	c := &v1alpha1.NameServerCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "mq", Name: "ns1", Generation: 4},
		Spec: v1alpha1.NameServerClusterSpec{
			Replicas: ptr.To(desired), Ports: v1alpha1.Ports{Remoting: 9876, HTTP: 8080},
			Publish:  v1alpha1.PublishSpec{DrainSeconds: ptr.To[int32](60)},
			KVConfig: []v1alpha1.KVConfigEntry{{Namespace: "ORDER_TOPIC_CONFIG", Key: "T", Value: "broker-a:4"}},
		},
	}
	file, err := render.KVFile(c)
	if err != nil {
		t.Fatal(err)
	}
	current := peerstatus.Digest(file)
	o := &observed{now: statusNow, round: 30 * time.Second, peers: map[int32]publish.Peer{},
		state: &peerclient.Cluster{Peers: map[int32]routecheck.Observation{}}}
	b := testBroker("10.1.0.1:10911", statusNow.Add(-time.Hour))
	for i, p := range peers {
		ord := int32(i)
		c.Status.Peers = append(c.Status.Peers, v1alpha1.PeerStatus{Ordinal: ord, Name: fmt.Sprintf("ns1-%d", i), Published: true,
			Address: fmt.Sprintf("ns1-%d.ns1-headless.mq.svc.cluster.local:9876", i)})
		o.peers[ord] = publish.Peer{Ready: p.ready, IP: fmt.Sprintf("10.0.0.%d", i+1), Revision: p.rev, RemotingPort: 9876, HTTPPort: 8080}
		digest := "digest-of-the-previous-declaration"
		if p.kvFresh {
			digest = current
		}
		o.state.Peers[ord] = routecheck.Observation{ReadAt: statusNow, Summary: &peerstatus.Summary{
			BootID: fmt.Sprint(i), StartTime: statusNow.Add(-time.Hour), Brokers: []peerstatus.Broker{b},
			KV: &peerstatus.KVStatus{Digest: digest, InSync: true}}}
	}
	o.sts = &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(len(peers)))},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 3, UpdateRevision: "new"}}
	r := &NameServerClusterReconciler{Render: render.Options{ClusterDomain: "cluster.local"}}
	d, err := r.decide(c, o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Replicas 2, ordinal 0 down, a roll and a kvConfig edit at once: ordinal 1
// is the only peer that answers; the roll restarts ordinal 0 first.
func TestKVLagNeverMakesTheRollRestartTheOnlyAnsweringPeer(t *testing.T) {
	d := decideWithKVLag(t, 2, []lagPeer{
		{ready: false, rev: "old", kvFresh: false},
		{ready: true, rev: "old", kvFresh: false},
	})
	if d.roll.Restart != 0 {
		t.Errorf("roll restarts ordinal %d (waiting %q); want 0, the peer that is down: ordinal 1 is the only ready peer", d.roll.Restart, d.roll.Waiting)
	}
}

// Replicas 3: ordinal 2 was just restarted (updated, listed, gate closed).
// The other two answer clients, though their KV digest lags: the roll waits.
func TestKVLagNeverMakesTheRollRestartPeersBackToBack(t *testing.T) {
	d := decideWithKVLag(t, 3, []lagPeer{
		{ready: true, rev: "old", kvFresh: false},
		{ready: true, rev: "old", kvFresh: false},
		{ready: false, rev: "new", kvFresh: true},
	})
	if d.roll.Restart != -1 {
		t.Errorf("roll restarts ordinal %d while listed ordinal 2 is still warming up; want -1 (wait)", d.roll.Restart)
	}
}

// 3 -> 1 with ordinal 0 down, ordinals 1 and 2 ready but reporting the
// previous KV digest: the scale-down is held with the list unchanged.
func TestKVLagNeverLiftsAScaleDownHold(t *testing.T) {
	d := decideWithKVLag(t, 1, []lagPeer{
		{ready: false, rev: "new", kvFresh: true},
		{ready: true, rev: "new", kvFresh: false},
		{ready: true, rev: "new", kvFresh: false},
	})
	if !d.plan.Held || !slices.Equal(d.plan.Published, []int32{0, 1, 2}) {
		t.Errorf("plan = held %v, published %v, drain %v: want held with [0 1 2] (ordinal 0 is down, 1 and 2 answer clients)", d.plan.Held, d.plan.Published, d.plan.DrainStart)
	}
}

// A listed peer whose container restarted holds the brokers again; the pass
// asks it to open its gate, and it answers clients from then on, although
// its pod's readiness follows only at the next probe. The roll of that same
// pass must not take it for a silent peer to restart first.
func TestAPeerWhoseGateThePassOpensIsNotTakenForSilent(t *testing.T) {
	c, o := shrinkingCluster()
	c.Spec.Replicas = ptr.To[int32](3)
	b := testBroker("10.1.0.1:10911", statusNow.Add(-time.Hour))
	for ord := range int32(3) {
		p := o.peers[ord]
		p.Revision = "old"
		o.peers[ord] = p
		o.state.Peers[ord] = routecheck.Observation{ReadAt: statusNow, Summary: &peerstatus.Summary{BootID: fmt.Sprint(ord),
			Gate: peerstatus.Gate{Enabled: true, Open: true}, Brokers: []peerstatus.Broker{b}}}
	}
	restarted := o.peers[2]
	restarted.Ready = false
	o.peers[2] = restarted
	o.state.Peers[2].Summary.Gate.Open = false
	a := &recordingActor{opens: true}
	r := &NameServerClusterReconciler{Render: render.Options{ClusterDomain: "cluster.local"}, Identity: testManager}
	if _, err := r.pass(c, o, a); err != nil {
		t.Fatal(err)
	}
	if len(a.gates) != 1 || a.gates[0] != 2 {
		t.Fatalf("gate requests to %v, want to ordinal 2", a.gates)
	}
	if len(a.restarted) > 0 {
		t.Errorf("restarted %v right after opening the gate of ordinal 2", a.restarted)
	}
}

// While a client list may not hold the listed peers (its write is pending or
// was refused), the roll restarts no peer that answers: the floor counts
// listed peers, and an unwritten list does not name them.
func TestTheRollWaitsForTheListsToSettle(t *testing.T) {
	d := decideWithKVLag(t, 3, []lagPeer{{ready: true, rev: "old", kvFresh: true}, {ready: true, rev: "old", kvFresh: true}, {ready: true, rev: "old", kvFresh: true}})
	if d.roll.Restart != -1 || !strings.Contains(d.roll.Waiting, "every address ConfigMap") {
		t.Errorf("without a record of the lists, the roll restarts %d (waiting %q)", d.roll.Restart, d.roll.Waiting)
	}
}
