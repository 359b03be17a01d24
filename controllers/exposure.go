package controllers

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

// exposureReminder is how often the Warning about an unauthenticated
// external exposure is repeated while nothing about the cluster changes:
// often enough to be seen in any recent event list (events expire after an
// hour by default), rarely enough not to flood it.
const exposureReminder = 30 * time.Minute

// exposureWarnings remembers, per cluster, the generation and time of the
// last Warning about its unauthenticated external exposure.
type exposureWarnings struct {
	mu   sync.Mutex
	last map[types.UID]exposureWarning
}

type exposureWarning struct {
	generation int64
	at         time.Time
}

// warnExposure records a Warning event while spec.externalAccess exposes
// the remoting port with nothing limiting who reaches it, which the API
// server accepts only with allowUnauthenticated: once per generation and
// again every exposureReminder, so it stays visible for as long as it is
// set.
func (r *NameServerClusterReconciler) warnExposure(c *v1alpha1.NameServerCluster, now time.Time) {
	w := &r.exposure
	w.mu.Lock()
	defer w.mu.Unlock()
	if !render.ExposedUnauthenticated(c) {
		delete(w.last, c.UID)
		return
	}
	if last, ok := w.last[c.UID]; ok && last.generation == c.Generation && now.Sub(last.at) < exposureReminder {
		return
	}
	if w.last == nil {
		w.last = map[types.UID]exposureWarning{}
	}
	w.last[c.UID] = exposureWarning{generation: c.Generation, at: now}
	r.event(c, nil, corev1.EventTypeWarning, v1alpha1.EventExposedUnauthenticated, "Expose",
		"the remoting port is exposed outside the cluster (externalAccess type %s) with allowUnauthenticated: nothing limits who reaches it, and anyone who does may register brokers under real names and write the KV config; set externalAccess.loadBalancerSourceRanges or tls.mode Enforcing with tls.clientAuth Require",
		externalType(c))
}

func externalType(c *v1alpha1.NameServerCluster) v1alpha1.ExternalAccessType {
	if t := c.Spec.ExternalAccess.Type; t != "" {
		return t
	}
	return v1alpha1.ExternalLoadBalancer
}
