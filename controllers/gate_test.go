package controllers

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/peerclient"
	"github.com/kube-namesrv/kube-namesrv/controllers/publish"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/controllers/routecheck"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// gatePeer is one peer of a gate scene.
type gatePeer struct {
	listed, ready, open, unreadable bool
	brokers                         []peerstatus.Broker
	record                          []peerstatus.BrokerKey
}

// gateScene decides on peers as given, with a 30 s broker round and the
// brokers the operator saw live before.
func gateScene(t *testing.T, liveBefore []v1alpha1.BrokerRef, peers ...gatePeer) (*v1alpha1.NameServerCluster, *observed, *decision) {
	t.Helper()
	c := &v1alpha1.NameServerCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "mq", Name: "ns1", Generation: 4},
		Spec: v1alpha1.NameServerClusterSpec{Replicas: ptr.To(int32(len(peers))), Ports: v1alpha1.Ports{Remoting: 9876, HTTP: 8080},
			Publish: v1alpha1.PublishSpec{DrainSeconds: ptr.To[int32](60)}},
		Status: v1alpha1.NameServerClusterStatus{LiveBrokers: liveBefore},
	}
	o := &observed{now: statusNow, round: 30 * time.Second, peers: map[int32]publish.Peer{},
		state: &peerclient.Cluster{Peers: map[int32]routecheck.Observation{}}}
	for i, p := range peers {
		ord := int32(i)
		if p.listed {
			c.Status.Peers = append(c.Status.Peers, v1alpha1.PeerStatus{Ordinal: ord, Name: fmt.Sprint("ns1-", i), Published: true,
				Address: fmt.Sprintf("ns1-%d.ns1-headless.mq.svc.cluster.local:9876", i)})
		}
		o.peers[ord] = publish.Peer{Ready: p.ready, IP: fmt.Sprint("10.0.0.", i+1), RemotingPort: 9876, HTTPPort: 8080}
		if p.unreadable {
			o.state.Peers[ord] = routecheck.Observation{ReadAt: statusNow, Err: "connection refused"}
			continue
		}
		s := &peerstatus.Summary{BootID: fmt.Sprint(i), StartTime: statusNow.Add(-time.Minute), Brokers: p.brokers,
			Gate: peerstatus.Gate{Enabled: true, Open: p.open}}
		if p.record != nil {
			s.Gate.Record = &peerstatus.GateRecord{RecordedAt: statusNow.Add(-time.Hour), Brokers: p.record}
		}
		o.state.Peers[ord] = routecheck.Observation{ReadAt: statusNow, Summary: s}
	}
	r := &NameServerClusterReconciler{Render: render.Options{ClusterDomain: "cluster.local"}}
	d, err := r.decide(c, o)
	if err != nil {
		t.Fatal(err)
	}
	return c, o, d
}

func TestGateRequests(t *testing.T) {
	b1, b2, b3 := testBroker("10.9.0.1:10911", statusNow.Add(-time.Hour)), testBroker("10.9.0.2:10911", statusNow.Add(-time.Hour)),
		testBroker("10.9.0.3:10911", statusNow.Add(-time.Hour))
	ref := func(bs ...peerstatus.Broker) []v1alpha1.BrokerRef {
		var out []v1alpha1.BrokerRef
		for _, b := range bs {
			out = append(out, v1alpha1.BrokerRef{Cluster: b.Cluster, Addr: b.Addr})
		}
		return out
	}
	keys := func(bs ...peerstatus.Broker) []peerstatus.BrokerKey {
		out := []peerstatus.BrokerKey{}
		for _, b := range bs {
			out = append(out, b.BrokerKey)
		}
		return out
	}
	const wait = 38 // a 30 s round and a quarter, rounded up
	tests := []struct {
		name       string
		liveBefore []v1alpha1.BrokerRef
		peers      []gatePeer
		want       map[int32]peerstatus.GateRequest
	}{
		{
			name: "a restarted peer beside a serving one waits for the serving peer's brokers, whatever it recorded",
			peers: []gatePeer{
				{listed: true, ready: true, open: true, brokers: []peerstatus.Broker{b1, b2}},
				{listed: true, record: keys(b3)},
			},
			want: map[int32]peerstatus.GateRequest{1: {Expect: keys(b1, b2)}},
		},
		{
			name:       "every peer restarted: each waits for what it recorded and what the operator saw, or a round and a quarter",
			liveBefore: ref(b1, b2),
			peers:      []gatePeer{{listed: true, record: keys(b1, b3)}, {listed: true}},
			want: map[int32]peerstatus.GateRequest{
				0: {Expect: keys(b1, b2, b3), WaitSeconds: wait},
				1: {Expect: keys(b1, b2), WaitSeconds: wait},
			},
		},
		{
			name:  "a single replica restarted with nothing recorded: never an empty expectation that opens at once",
			peers: []gatePeer{{listed: true}},
			want:  map[int32]peerstatus.GateRequest{0: {Expect: []peerstatus.BrokerKey{}, WaitSeconds: wait}},
		},
		{
			name:       "the serving peer cannot be read: nobody vouches for a complete table",
			liveBefore: ref(b1),
			peers:      []gatePeer{{listed: true, ready: true, unreadable: true}, {listed: true}},
			want:       map[int32]peerstatus.GateRequest{1: {Expect: keys(b1), WaitSeconds: wait}},
		},
		{
			name:  "a peer whose gate is open is asked nothing",
			peers: []gatePeer{{listed: true, ready: true, open: true, brokers: []peerstatus.Broker{b1}}, {listed: true, ready: true, open: true, brokers: []peerstatus.Broker{b1}}},
			want:  map[int32]peerstatus.GateRequest{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, o, d := gateScene(t, tt.liveBefore, tt.peers...)
			if got := d.gateRequests(c, o); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("gate requests %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// status.liveBrokers follows the serving peers, and is kept while none of
// them can be read: that is when it is needed.
func TestLiveBrokersAreKeptThroughAnOutage(t *testing.T) {
	b1, b2 := testBroker("10.9.0.1:10911", statusNow.Add(-time.Hour)), testBroker("10.9.0.2:10911", statusNow.Add(-time.Hour))
	c, o, d := gateScene(t, nil, gatePeer{listed: true, ready: true, open: true, brokers: []peerstatus.Broker{b2, b1}}, gatePeer{listed: true})
	want := []v1alpha1.BrokerRef{{Cluster: b1.Cluster, Addr: b1.Addr}, {Cluster: b2.Cluster, Addr: b2.Addr}}
	if got := liveBrokers(c, o, d); !reflect.DeepEqual(got, want) {
		t.Fatalf("live brokers %v, want %v", got, want)
	}
	c, o, d = gateScene(t, want, gatePeer{listed: true}, gatePeer{listed: true})
	if got := liveBrokers(c, o, d); !reflect.DeepEqual(got, want) {
		t.Errorf("during an outage live brokers %v, want the record kept, %v", got, want)
	}
}

// A peer whose gate stays closed for the warm-up needWaitForService asks for
// is not broken: status says it warms up, and it does not make the cluster
// Degraded.
func TestAWarmingUpPeerIsNotBroken(t *testing.T) {
	c, o, d := gateScene(t, nil, gatePeer{listed: true}, gatePeer{listed: true}, gatePeer{listed: true, ready: true, open: true})
	for _, ord := range []int32{0, 1} {
		o.state.Peers[ord].Summary.Gate.WarmUpUntil = ptr.To(statusNow.Add(30 * time.Second))
	}
	st := computeStatus(statusInput{Cluster: c, Obs: o, Dec: d, Now: statusNow}, render.Options{ClusterDomain: "cluster.local"})
	if cnd := v1alpha1.FindCondition(st.Conditions, v1alpha1.ConditionDegraded); cnd == nil || cnd.Status != metav1.ConditionFalse {
		t.Errorf("Degraded = %+v with two peers warming up", cnd)
	}
	if msg := st.Peers[0].Message; !strings.Contains(msg, "warming up until 2026-12-01T12:00:30Z (needWaitForService)") {
		t.Errorf("peer 0 message %q", msg)
	}
}
