package publish

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Peer is what the operator observes of one pod.
type Peer struct {
	Ready bool
	IP    string
}

// Peers indexes the pods of a StatefulSet by ordinal. Pods whose name is not
// <statefulSet>-<ordinal> are ignored; a terminating pod is not ready, since
// its IP is about to go away.
func Peers(statefulSet string, pods []corev1.Pod) map[int32]Peer {
	out := map[int32]Peer{}
	for i := range pods {
		p := &pods[i]
		ordinal, ok := Ordinal(statefulSet, p.Name)
		if !ok {
			continue
		}
		out[ordinal] = Peer{
			Ready: p.DeletionTimestamp == nil && PodReady(p),
			IP:    p.Status.PodIP,
		}
	}
	return out
}

// Ordinal parses a StatefulSet pod name.
func Ordinal(statefulSet, pod string) (int32, bool) {
	rest, ok := strings.CutPrefix(pod, statefulSet+"-")
	if !ok || rest == "" || (len(rest) > 1 && rest[0] == '0') {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 32)
	if err != nil || n < 0 {
		return 0, false
	}
	return int32(n), true
}

// PodReady tells whether a pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ReadyIPs are the IPs of the ready peers among ordinals 0..published-1, by
// ordinal: the list for clients that cannot use host names.
func ReadyIPs(peers map[int32]Peer, published int32) []string {
	ordinals := make([]int32, 0, len(peers))
	for o, p := range peers {
		if o < published && p.Ready && p.IP != "" {
			ordinals = append(ordinals, o)
		}
	}
	slices.Sort(ordinals)
	ips := make([]string, 0, len(ordinals))
	for _, o := range ordinals {
		ips = append(ips, peers[o].IP)
	}
	return ips
}
