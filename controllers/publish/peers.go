package publish

import (
	"fmt"
	"hash/fnv"
	"net"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Peer is what the operator observes of one pod.
type Peer struct {
	// Terminating pods are on their way out: never ready, never serving.
	Terminating bool
	Ready       bool
	IP          string
	// HostIP is the node's address, for node-port external access.
	HostIP string
	// Revision is the pod's controller-revision-hash: the pod template it
	// was created from.
	Revision string
	// RemotingPort and HTTPPort are the ports its container listens on
	// (its own spec, which may differ from the cluster's spec during a
	// port change).
	RemotingPort int32
	HTTPPort     int32
	// Restarts counts its container restarts; a change means the process
	// restarted with an empty route table.
	Restarts int32
	// ConfigMap is the ConfigMap its config volume mounts: the properties
	// a restart of its container reads.
	ConfigMap string
}

// Port and volume names of the NameServer pods, which the render package
// also uses; repeated here so this package needs no other.
const (
	remotingPortName = "remoting"
	httpPortName     = "http"
	configVolumeName = "config"
)

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
		peer := Peer{
			Terminating: p.DeletionTimestamp != nil,
			Ready:       p.DeletionTimestamp == nil && PodReady(p),
			IP:          p.Status.PodIP,
			HostIP:      p.Status.HostIP,
			Revision:    p.Labels[appsv1.ControllerRevisionHashLabelKey],
		}
		for _, c := range p.Spec.Containers {
			for _, port := range c.Ports {
				switch port.Name {
				case remotingPortName:
					peer.RemotingPort = port.ContainerPort
				case httpPortName:
					peer.HTTPPort = port.ContainerPort
				}
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			peer.Restarts += cs.RestartCount
		}
		for _, v := range p.Spec.Volumes {
			if v.Name == configVolumeName && v.ConfigMap != nil {
				peer.ConfigMap = v.ConfigMap.Name
			}
		}
		out[ordinal] = peer
	}
	return out
}

// Fingerprint changes whenever a peer appears, goes, restarts, changes
// readiness, address or port: the events after which the operator reads the
// peers again instead of waiting for the next broker round.
func Fingerprint(peers map[int32]Peer) string {
	ordinals := make([]int32, 0, len(peers))
	for o := range peers {
		ordinals = append(ordinals, o)
	}
	slices.Sort(ordinals)
	h := fnv.New64a()
	for _, o := range ordinals {
		p := peers[o]
		fmt.Fprintf(h, "%d|%v|%v|%s|%s|%d|%d|%d\n", o, p.Terminating, p.Ready, p.IP, p.Revision, p.RemotingPort, p.HTTPPort, p.Restarts)
	}
	return strconv.FormatUint(h.Sum64(), 16)
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

// ReadyIPs are ip:port of the ready peers among the published ordinals
// (sorted), each with the port its pod listens on: the list for clients that
// cannot use host names.
func ReadyIPs(peers map[int32]Peer, published []int32) []string {
	ips := make([]string, 0, len(published))
	for _, o := range published {
		if p, ok := peers[o]; ok && p.Ready && p.IP != "" && p.RemotingPort > 0 {
			ips = append(ips, net.JoinHostPort(p.IP, strconv.Itoa(int(p.RemotingPort))))
		}
	}
	return ips
}
