package controllers

import (
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
)

// shrinkingCluster is a 3 -> 2 scale-down: three ready peers at the current
// revision, all published, the StatefulSet at 3.
func shrinkingCluster() (*v1alpha1.NameServerCluster, *observed) {
	c := &v1alpha1.NameServerCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "mq", Name: "ns1", Generation: 4},
		Spec: v1alpha1.NameServerClusterSpec{Replicas: ptr.To[int32](2), Ports: v1alpha1.Ports{Remoting: 9876, HTTP: 8080},
			Publish: v1alpha1.PublishSpec{DrainSeconds: ptr.To[int32](60)}},
		Status: v1alpha1.NameServerClusterStatus{Manager: &v1alpha1.ManagerStatus{Identity: testManager}},
	}
	for ord := range int32(3) {
		c.Status.Peers = append(c.Status.Peers, v1alpha1.PeerStatus{Ordinal: ord, Name: fmt.Sprintf("ns1-%d", ord), Published: true,
			Address: fmt.Sprintf("ns1-%d.ns1-headless.mq.svc.cluster.local:9876", ord)})
	}
	o := &observed{now: statusNow, round: 30 * time.Second, peers: map[int32]publish.Peer{}, state: &peerclient.Cluster{Peers: map[int32]routecheck.Observation{}}}
	for i := range 3 {
		o.peers[int32(i)] = publish.Peer{Ready: true, IP: fmt.Sprintf("10.0.0.%d", i+1), Revision: "new", RemotingPort: 9876, HTTPPort: 8080}
	}
	o.sts = &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, UpdateRevision: "new"}}
	return c, o
}

// The client ConfigMap write is refused (webhook, RBAC, terminating
// namespace) during a 3 -> 2 scale-down. The ConfigMap still lists ordinal
// 2: status keeps it published, starts no drain, and AddressesPublished is
// not True.
func TestARefusedListWriteLeavesThePeerPublished(t *testing.T) {
	c, o := shrinkingCluster()
	r := &NameServerClusterReconciler{Render: render.Options{ClusterDomain: "cluster.local"}}
	d, err := r.decide(c, o)
	if err != nil {
		t.Fatal(err)
	}
	refused := problem{Reason: v1alpha1.RefusalAPIServer, Message: "the API server refused ConfigMap mq/ns1-namesrv-addr: admission webhook denied (retrying with back-off)",
		Related: &corev1.ConfigMap{}, Retry: true, Addresses: true}
	st := computeStatus(statusInput{Cluster: c, Obs: o, Dec: d, StatefulSet: o.sts, Problems: []problem{refused},
		Refused: [3]bool{clientList: true}, Now: statusNow}, r.Render)
	if i := slices.IndexFunc(st.Peers, func(p v1alpha1.PeerStatus) bool { return p.Ordinal == 2 }); i < 0 || !st.Peers[i].Published {
		t.Errorf("status records ordinal 2 as unpublished although the ConfigMap write was refused: peers %+v", st.Peers)
	}
	if st.DrainStartTime != nil {
		t.Errorf("drain started at %v for a list that was never written", st.DrainStartTime)
	}
	if cnd := v1alpha1.FindCondition(st.Conditions, v1alpha1.ConditionAddressesPublished); cnd == nil || cnd.Status == metav1.ConditionTrue {
		t.Errorf("AddressesPublished = %+v although the client ConfigMap write was refused", cnd)
	}
}

// Port move 9876 -> 9877, every peer already on 9877, and the lists moved
// ten seconds ago. One publish target is refused (its namespace has not
// opted in), so status.lastPublishTime, the last fully successful publish,
// is an hour old. The old port stays for a drain after the lists moved.
func TestTheOldPortDrainCountsFromTheLastListChange(t *testing.T) {
	c := &v1alpha1.NameServerCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "mq", Name: "ns1", Generation: 5},
		Spec: v1alpha1.NameServerClusterSpec{Replicas: ptr.To[int32](2), Ports: v1alpha1.Ports{Remoting: 9877, HTTP: 8080},
			Publish: v1alpha1.PublishSpec{DrainSeconds: ptr.To[int32](240)}},
	}
	o := &observed{now: statusNow, peers: map[int32]publish.Peer{
		0: {Ready: true, RemotingPort: 9877, HTTPPort: 8080}, 1: {Ready: true, RemotingPort: 9877, HTTPPort: 8080}}}
	o.sts = &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Args: []string{"--listen-port=9877", "--extra-listen-ports=9876"}}}}}}}
	d := &decision{lists: render.Lists{Clients: []string{"ns1-0.ns1-headless.mq.svc.cluster.local:9877", "ns1-1.ns1-headless.mq.svc.cluster.local:9877"}}}
	d.listData = listData(c, render.Options{ClusterDomain: "cluster.local"}, d.lists)
	for l, data := range d.listData {
		d.listDigest[l] = render.DataDigest(data)
	}
	moved := ptr.To(metav1.NewTime(statusNow.Add(-10 * time.Second)))
	c.Status.Lists = &v1alpha1.PublishedListsStatus{
		Clients: v1alpha1.PublishedListStatus{Digest: d.listDigest[clientList], ChangedTime: moved},
		Brokers: v1alpha1.PublishedListStatus{Digest: d.listDigest[brokerList], ChangedTime: moved},
		IPs:     v1alpha1.PublishedListStatus{Digest: d.listDigest[ipList], ChangedTime: moved},
	}
	c.Status.LastPublishTime = ptr.To(metav1.NewTime(statusNow.Add(-time.Hour)))
	ports, until := oldPorts(c, o, d)
	if !slices.Contains(ports, 9876) || !until.Equal(moved.Add(240*time.Second)) {
		t.Errorf("old ports %v until %v; want 9876 kept until 240 s after the lists moved (%v)", ports, until, moved.Add(240*time.Second))
	}

	o.now = moved.Add(240 * time.Second)
	if ports, _ := oldPorts(c, o, d); len(ports) > 0 {
		t.Errorf("old ports %v kept after the drain", ports)
	}
}

// The cluster moved 9876 -> 9877 -> back to 9876 -> 9878 while its own
// client ConfigMap refused every write: it still names the peer at :9876,
// the port of the template two moves ago, which no pod and no planned list
// uses any more. Every port the current template serves stays until the
// lists are written and drained.
func TestATemplatePortStaysWhileAListWriteIsRefused(t *testing.T) {
	c := &v1alpha1.NameServerCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "mq", Name: "ns1", Generation: 9},
		Spec: v1alpha1.NameServerClusterSpec{Replicas: ptr.To[int32](1), Ports: v1alpha1.Ports{Remoting: 9878, HTTP: 8080},
			Publish: v1alpha1.PublishSpec{DrainSeconds: ptr.To[int32](60)}},
	}
	o := &observed{now: statusNow, peers: map[int32]publish.Peer{0: {Ready: true, RemotingPort: 9877, HTTPPort: 8080}}}
	o.sts = &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Args: []string{"--listen-port=9876", "--extra-listen-ports=9877"}}}}}}}
	d := &decision{lists: render.Lists{Clients: []string{"ns1-0.ns1-headless.mq.svc.cluster.local:9877"}}}
	d.listData = listData(c, render.Options{ClusterDomain: "cluster.local"}, d.lists)
	for l, data := range d.listData {
		d.listDigest[l] = render.DataDigest(data)
	}
	long := ptr.To(metav1.NewTime(statusNow.Add(-time.Hour)))
	c.Status.Lists = &v1alpha1.PublishedListsStatus{
		Clients: v1alpha1.PublishedListStatus{Digest: "the list of an hour ago", ChangedTime: long},
		Brokers: v1alpha1.PublishedListStatus{Digest: d.listDigest[brokerList], ChangedTime: long},
		IPs:     v1alpha1.PublishedListStatus{Digest: d.listDigest[ipList], ChangedTime: long},
	}
	if ports, _ := oldPorts(c, o, d); !slices.Equal(ports, []int32{9876, 9877}) {
		t.Errorf("old ports %v; want 9876 (the template's, which the refused list names) and 9877 (the pod's)", ports)
	}
}

// spec.ports.http moved 8080 -> 8081. The client Service keeps 8080 while a
// pod still serves it, and while the lists that named the address server at
// :8080 drain; then it goes.
func TestTheClientServiceKeepsTheOldHTTPPortForTheDrain(t *testing.T) {
	c := &v1alpha1.NameServerCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "mq", Name: "ns1", Generation: 5},
		Spec: v1alpha1.NameServerClusterSpec{Replicas: ptr.To[int32](2), Ports: v1alpha1.Ports{Remoting: 9876, HTTP: 8081},
			Publish: v1alpha1.PublishSpec{DrainSeconds: ptr.To[int32](60)}},
	}
	o := &observed{now: statusNow, peers: map[int32]publish.Peer{
		0: {Ready: true, RemotingPort: 9876, HTTPPort: 8080}, 1: {Ready: true, RemotingPort: 9876, HTTPPort: 8081}}}
	o.clientService = &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: "remoting", Port: 9876}, {Name: "http", Port: 8081}, {Name: "http-8080", Port: 8080}}}}
	d := &decision{}
	d.listData = listData(c, render.Options{ClusterDomain: "cluster.local"}, d.lists)
	for l, data := range d.listData {
		d.listDigest[l] = render.DataDigest(data)
	}
	moved := ptr.To(metav1.NewTime(statusNow.Add(-10 * time.Second)))
	c.Status.Lists = &v1alpha1.PublishedListsStatus{
		Clients: v1alpha1.PublishedListStatus{Digest: d.listDigest[clientList], ChangedTime: moved},
		Brokers: v1alpha1.PublishedListStatus{Digest: d.listDigest[brokerList], ChangedTime: moved},
		IPs:     v1alpha1.PublishedListStatus{Digest: d.listDigest[ipList], ChangedTime: moved},
	}
	if ports, _ := oldHTTPPorts(c, o, d); !slices.Equal(ports, []int32{8080}) {
		t.Errorf("old HTTP ports %v while pod 0 serves 8080", ports)
	}
	o.peers[0] = publish.Peer{Ready: true, RemotingPort: 9876, HTTPPort: 8081}
	if ports, until := oldHTTPPorts(c, o, d); !slices.Equal(ports, []int32{8080}) || !until.Equal(moved.Add(time.Minute)) {
		t.Errorf("old HTTP ports %v until %v, 10 s after the lists moved; want 8080 until a drain after", ports, until)
	}
	o.now = moved.Add(time.Minute)
	if ports, _ := oldHTTPPorts(c, o, d); len(ports) > 0 {
		t.Errorf("old HTTP ports %v kept after the drain", ports)
	}
}
