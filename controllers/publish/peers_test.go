package publish

import (
	"maps"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(name, ip string, ready bool, terminating bool) corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: "rev-1"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "namesrv", Ports: []corev1.ContainerPort{
			{Name: "remoting", ContainerPort: 9876}, {Name: "http", ContainerPort: 8080},
		}}}, Volumes: []corev1.Volume{
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "ns1-config-0123456789"}}}},
		}},
		Status: corev1.PodStatus{PodIP: ip, HostIP: "192.168.0.1", Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: status},
		}, ContainerStatuses: []corev1.ContainerStatus{{Name: "namesrv", RestartCount: 2}}},
	}
	if terminating {
		p.DeletionTimestamp = &metav1.Time{}
	}
	return p
}

func TestOrdinal(t *testing.T) {
	tests := []struct {
		pod    string
		want   int32
		wantOK bool
	}{
		{"ns1-0", 0, true},
		{"ns1-12", 12, true},
		{"ns1-", 0, false},
		{"ns1-01", 0, false},
		{"ns1-x", 0, false},
		{"ns1--1", 0, false},
		{"ns1-headless-0", 0, false},
		{"ns10-1", 0, false},
		{"ns1-99999999999", 0, false},
	}
	for _, tt := range tests {
		got, ok := Ordinal("ns1", tt.pod)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("Ordinal(ns1, %q) = %d, %v; want %d, %v", tt.pod, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestPeersAndReadyIPs(t *testing.T) {
	tests := []struct {
		name      string
		pods      []corev1.Pod
		published []int32
		wantPeers map[int32]Peer
		wantIPs   []string
	}{
		{name: "no pods", published: ords(0, 1, 2), wantPeers: map[int32]Peer{}, wantIPs: []string{}},
		{
			name:      "ordered by ordinal, not by listing order",
			pods:      []corev1.Pod{pod("ns1-2", "10.0.0.3", true, false), pod("ns1-0", "10.0.0.1", true, false), pod("ns1-1", "10.0.0.2", true, false)},
			published: ords(0, 1, 2),
			wantPeers: map[int32]Peer{0: peer(true, false, "10.0.0.1"), 1: peer(true, false, "10.0.0.2"), 2: peer(true, false, "10.0.0.3")},
			wantIPs:   []string{"10.0.0.1:9876", "10.0.0.2:9876", "10.0.0.3:9876"},
		},
		{
			name: "unready, terminating and IP-less pods are left out",
			pods: []corev1.Pod{
				pod("ns1-0", "10.0.0.1", false, false), pod("ns1-1", "10.0.0.2", true, true),
				pod("ns1-2", "", true, false), pod("ns1-3", "10.0.0.4", true, false),
			},
			published: ords(0, 1, 2, 3),
			wantPeers: map[int32]Peer{0: peer(false, false, "10.0.0.1"), 1: peer(false, true, "10.0.0.2"), 2: peer(true, false, ""), 3: peer(true, false, "10.0.0.4")},
			wantIPs:   []string{"10.0.0.4:9876"},
		},
		{
			name:      "ready but unpublished ordinals are left out, foreign pods ignored",
			pods:      []corev1.Pod{pod("ns1-0", "10.0.0.1", true, false), pod("ns1-1", "10.0.0.2", true, false), pod("other-0", "10.0.0.9", true, false)},
			published: ords(0),
			wantPeers: map[int32]Peer{0: peer(true, false, "10.0.0.1"), 1: peer(true, false, "10.0.0.2")},
			wantIPs:   []string{"10.0.0.1:9876"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			peers := Peers("ns1", tt.pods)
			if !maps.Equal(peers, tt.wantPeers) {
				t.Errorf("Peers() = %v, want %v", peers, tt.wantPeers)
			}
			if got := ReadyIPs(peers, tt.published); !slices.Equal(got, tt.wantIPs) {
				t.Errorf("ReadyIPs() = %v, want %v", got, tt.wantIPs)
			}
		})
	}
}

func peer(ready, terminating bool, ip string) Peer {
	return Peer{Ready: ready, Terminating: terminating, IP: ip, HostIP: "192.168.0.1", Revision: "rev-1", RemotingPort: 9876, HTTPPort: 8080, Restarts: 2,
		ConfigMap: "ns1-config-0123456789"}
}

func TestFingerprint(t *testing.T) {
	base := map[int32]Peer{0: peer(true, false, "10.0.0.1"), 1: peer(true, false, "10.0.0.2")}
	same := maps.Clone(base)
	if Fingerprint(base) != Fingerprint(same) {
		t.Fatal("equal peers give different fingerprints")
	}
	changes := map[string]func(map[int32]Peer){
		"readiness":  func(m map[int32]Peer) { p := m[1]; p.Ready = false; m[1] = p },
		"restart":    func(m map[int32]Peer) { p := m[1]; p.Restarts++; m[1] = p },
		"address":    func(m map[int32]Peer) { p := m[0]; p.IP = "10.0.0.9"; m[0] = p },
		"port":       func(m map[int32]Peer) { p := m[0]; p.RemotingPort = 9877; m[0] = p },
		"revision":   func(m map[int32]Peer) { p := m[0]; p.Revision = "rev-2"; m[0] = p },
		"new peer":   func(m map[int32]Peer) { m[2] = peer(false, false, "") },
		"peer gone":  func(m map[int32]Peer) { delete(m, 1) },
		"terminates": func(m map[int32]Peer) { p := m[0]; p.Terminating = true; m[0] = p },
	}
	for name, change := range changes {
		m := maps.Clone(base)
		change(m)
		if Fingerprint(m) == Fingerprint(base) {
			t.Errorf("%s: fingerprint unchanged", name)
		}
	}
}
