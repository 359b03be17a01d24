package publish

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(name, ip string, ready bool, terminating bool) corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.PodStatus{PodIP: ip, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: status},
		}},
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
		published int32
		wantPeers map[int32]Peer
		wantIPs   []string
	}{
		{name: "no pods", published: 3, wantPeers: map[int32]Peer{}, wantIPs: []string{}},
		{
			name:      "ordered by ordinal, not by listing order",
			pods:      []corev1.Pod{pod("ns1-2", "10.0.0.3", true, false), pod("ns1-0", "10.0.0.1", true, false), pod("ns1-1", "10.0.0.2", true, false)},
			published: 3,
			wantPeers: map[int32]Peer{0: {true, "10.0.0.1"}, 1: {true, "10.0.0.2"}, 2: {true, "10.0.0.3"}},
			wantIPs:   []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"},
		},
		{
			name: "unready, terminating and IP-less pods are left out",
			pods: []corev1.Pod{
				pod("ns1-0", "10.0.0.1", false, false), pod("ns1-1", "10.0.0.2", true, true),
				pod("ns1-2", "", true, false), pod("ns1-3", "10.0.0.4", true, false),
			},
			published: 4,
			wantPeers: map[int32]Peer{0: {false, "10.0.0.1"}, 1: {false, "10.0.0.2"}, 2: {true, ""}, 3: {true, "10.0.0.4"}},
			wantIPs:   []string{"10.0.0.4"},
		},
		{
			name:      "ready but unpublished ordinals are left out, foreign pods ignored",
			pods:      []corev1.Pod{pod("ns1-0", "10.0.0.1", true, false), pod("ns1-1", "10.0.0.2", true, false), pod("other-0", "10.0.0.9", true, false)},
			published: 1,
			wantPeers: map[int32]Peer{0: {true, "10.0.0.1"}, 1: {true, "10.0.0.2"}},
			wantIPs:   []string{"10.0.0.1"},
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
