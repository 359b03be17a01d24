package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/kvcheck"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

// actOnPeers asks peers that hold hand-made KV changes under the Owned
// policy to apply their declared-KV file again, then asks each starting
// peer to open its route gate once it holds the brokers the serving peers
// hold. Both answers are recorded as the peers' latest observations. A peer
// that does not answer is reported in its status and tried again at the
// next reconcile; it never stops the reconcile.
func (r *NameServerClusterReconciler) actOnPeers(ctx context.Context, c *v1alpha1.NameServerCluster, o *observed, d *decision) {
	log := logf.FromContext(ctx)
	for _, ordinal := range sortedKeys(d.kv) {
		v := d.kv[ordinal]
		if !v.Apply {
			continue
		}
		p := o.peers[ordinal]
		kv, err := r.Peers.Client.ApplyKV(ctx, target(p))
		pod := peerPod(c, ordinal)
		if err != nil {
			log.Info("could not ask a peer to apply its declared KV config", "peer", pod.Name, "error", err.Error())
			continue
		}
		r.event(c, pod, corev1.EventTypeWarning, v1alpha1.EventKVConfigCorrected, "ApplyKV",
			"%s held KV values that differ from spec.kvConfig (%s); set back under kvConfigPolicy Owned", pod.Name, strings.Join(v.Drift, ", "))
		obs := o.state.Peers[ordinal]
		if obs.Summary != nil {
			s := *obs.Summary
			s.KV = kv
			obs.Summary = &s
			o.state.Peers[ordinal] = obs
		}
		d.kv[ordinal] = kvcheck.Check(d.kvDigest, string(render.KVConfigPolicy(c)), map[int32]kvcheck.Peer{ordinal: {Readable: true, KV: kv}})[ordinal]
	}

	gates := d.gateRequests(o)
	for _, ordinal := range sortedKeys(gates) {
		p, ok := o.peers[ordinal]
		if !ok || p.Terminating {
			continue
		}
		s, err := r.Peers.Client.OpenGate(ctx, target(p), gates[ordinal])
		if err != nil {
			log.Info("could not send a gate request to a starting peer", "peer", peerPod(c, ordinal).Name, "error", err.Error())
			continue
		}
		obs := o.state.Peers[ordinal]
		if s.Gate.Open && (obs.Summary == nil || !obs.Summary.Gate.Open) {
			r.event(c, peerPod(c, ordinal), corev1.EventTypeNormal, v1alpha1.EventRouteGateOpened, "OpenGate",
				"%s holds the %d brokers of the serving peers; it answers clients now", peerPod(c, ordinal).Name, len(gates[ordinal].Expect))
		}
		obs.Summary = s
		o.state.Peers[ordinal] = obs
	}
}

// peerPod names the pod of an ordinal, for events about it.
func peerPod(c *v1alpha1.NameServerCluster, ordinal int32) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: render.PodName(c, ordinal)}}
}

// restartPeer deletes the pod the roll chose; the StatefulSet controller
// recreates it from the current template.
func (r *NameServerClusterReconciler) restartPeer(ctx context.Context, c *v1alpha1.NameServerCluster, o *observed, d *decision) error {
	ordinal := d.roll.Restart
	if ordinal < 0 {
		return nil
	}
	pod := &corev1.Pod{}
	if err := r.Get(ctx, clientKey(c.Namespace, render.PodName(c, ordinal)), pod); err != nil {
		return fmt.Errorf("reading the pod to restart: %w", err)
	}
	why := "it answers no client"
	if ready(o, ordinal) && slices.Contains(d.plan.Published, ordinal) {
		why = "every other listed peer answers clients"
	}
	if err := r.Delete(ctx, pod, preconditionUID(pod)); err != nil {
		return fmt.Errorf("restarting %s/%s for the new pod template: %w", pod.Namespace, pod.Name, err)
	}
	r.event(c, pod, corev1.EventTypeNormal, v1alpha1.EventRollingPeer, "Restart",
		"restarting %s to bring it to the current pod template (%s); %d peers outdated", pod.Name, why, len(d.roll.Outdated))
	return nil
}

func sortedKeys[V any](m map[int32]V) []int32 {
	out := make([]int32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
