package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/metrics"
	"github.com/kube-namesrv/kube-namesrv/controllers/publish"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

// reasonBlocked marks Progressing=False when part of the spec is refused.
const reasonBlocked = "Blocked"

// statusInput is everything the status is derived from.
type statusInput struct {
	Cluster *v1alpha1.NameServerCluster
	Plan    publish.Plan
	// StatefulSet as last observed, nil when it did not exist yet.
	StatefulSet *appsv1.StatefulSet
	Peers       map[int32]publish.Peer
	Addresses   []string
	Problems    []problem
	Now         time.Time
}

// computeStatus derives the new status, conditions included, from what the
// reconcile observed and decided. Conditions keep their transition times
// unless their status changes (meta.SetStatusCondition).
func computeStatus(in statusInput) v1alpha1.NameServerClusterStatus {
	c := in.Cluster
	desired := ptr.Deref(c.Spec.Replicas, 1)
	st := v1alpha1.NameServerClusterStatus{
		ObservedGeneration: c.Generation,
		PublishedReplicas:  in.Plan.Published,
		Addresses:          in.Addresses,
		NamesrvAddr:        strings.Join(in.Addresses, ";"),
		Selector:           labels.SelectorFromSet(render.SelectorLabels(c)).String(),
		Conditions:         append([]metav1.Condition(nil), c.Status.Conditions...),
	}
	if in.Plan.DrainStart != nil {
		st.DrainStartTime = ptr.To(metav1.NewTime(*in.Plan.DrainStart))
	}
	if s := in.StatefulSet; s != nil {
		st.Replicas = s.Status.Replicas
		st.ReadyReplicas = s.Status.ReadyReplicas
	}
	var readyPublished int32
	for o := range in.Plan.Published {
		if in.Peers[o].Ready {
			readyPublished++
		}
	}

	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: c.Generation,
			LastTransitionTime: metav1.NewTime(in.Now),
		})
	}

	problems := problemMessage(in.Problems)
	targetProblems := problemMessage(filterProblems(in.Problems, "TargetRefused"))
	switch {
	case targetProblems != "":
		set(v1alpha1.ConditionAddressesPublished, metav1.ConditionFalse, "TargetRefused", targetProblems)
	case in.Plan.Published < desired:
		set(v1alpha1.ConditionAddressesPublished, metav1.ConditionFalse, "WaitingForReadiness",
			fmt.Sprintf("%d of %d peers published; ordinal %d joins the list once its pod is ready", in.Plan.Published, desired, in.Plan.Published))
	default:
		set(v1alpha1.ConditionAddressesPublished, metav1.ConditionTrue, "Published", fmt.Sprintf("all %d peers published", desired))
	}

	if readyPublished > 0 {
		set(v1alpha1.ConditionAvailable, metav1.ConditionTrue, "PeersReady", fmt.Sprintf("%d of %d published peers ready", readyPublished, in.Plan.Published))
	} else {
		set(v1alpha1.ConditionAvailable, metav1.ConditionFalse, "NoPublishedPeerReady", fmt.Sprintf("none of %d published peers is ready", in.Plan.Published))
	}

	switch {
	case problems != "":
		set(v1alpha1.ConditionDegraded, metav1.ConditionTrue, in.Problems[0].Reason, problems)
	case readyPublished < in.Plan.Published:
		set(v1alpha1.ConditionDegraded, metav1.ConditionTrue, "PublishedPeersNotReady",
			fmt.Sprintf("%d of %d published peers are not ready", in.Plan.Published-readyPublished, in.Plan.Published))
	default:
		set(v1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected", "every published peer is ready")
	}

	reason, msg := progress(in, desired)
	switch {
	case problems != "":
		set(v1alpha1.ConditionProgressing, metav1.ConditionFalse, reasonBlocked, "cannot reach the spec: "+problems)
	case reason != "":
		set(v1alpha1.ConditionProgressing, metav1.ConditionTrue, reason, msg)
	default:
		set(v1alpha1.ConditionProgressing, metav1.ConditionFalse, "Stable", fmt.Sprintf("%d peers run the current spec and are published", desired))
	}
	return st
}

// progress says what is still moving, or "" when nothing is.
func progress(in statusInput, desired int32) (reason, msg string) {
	s := in.StatefulSet
	switch {
	case in.Plan.Draining():
		return "Draining", fmt.Sprintf("the list has %d peers; the StatefulSet keeps %d until %s so readers stop using the removed ones",
			in.Plan.Published, in.Plan.Replicas, in.Now.Add(in.Plan.RequeueAfter).UTC().Format(time.RFC3339))
	case s == nil || ptr.Deref(s.Spec.Replicas, 0) != desired || s.Status.Replicas != desired:
		return "Scaling", fmt.Sprintf("scaling to %d peers", desired)
	case s.Status.ObservedGeneration < s.Generation || s.Status.UpdatedReplicas < desired ||
		s.Status.CurrentRevision != s.Status.UpdateRevision || s.Status.ReadyReplicas < desired:
		return "RollingOut", fmt.Sprintf("%d of %d pods updated and %d ready", s.Status.UpdatedReplicas, desired, s.Status.ReadyReplicas)
	case in.Plan.Published < desired:
		return "Publishing", fmt.Sprintf("%d of %d peers published", in.Plan.Published, desired)
	}
	return "", ""
}

func filterProblems(ps []problem, reason string) []problem {
	var out []problem
	for _, p := range ps {
		if p.Reason == reason {
			out = append(out, p)
		}
	}
	return out
}

func problemMessage(ps []problem) string {
	msgs := make([]string, 0, len(ps))
	for _, p := range ps {
		msgs = append(msgs, p.Message)
	}
	return strings.Join(msgs, "; ")
}

// writeStatus persists the new status (with an optimistic lock: a status
// computed from a stale read must not overwrite the publication state) and
// records events for what changed: the list, a drain, a refusal.
func (r *NameServerClusterReconciler) writeStatus(ctx context.Context, c *v1alpha1.NameServerCluster, st v1alpha1.NameServerClusterStatus) error {
	old := c.Status
	if equality.Semantic.DeepEqual(old, st) {
		return nil
	}
	patch := client.MergeFromWithOptions(c.DeepCopy(), client.MergeFromWithOptimisticLock{})
	next := c.DeepCopy()
	next.Status = st
	if err := r.Status().Patch(ctx, next, patch); err != nil {
		return fmt.Errorf("writing the status of %s/%s: %w", c.Namespace, c.Name, err)
	}
	// Only a written status becomes the cluster's: callers go on from it.
	*c = *next

	// Each event names the pod at the edge of the list as related object:
	// events.k8s.io folds events with the same reason, action and related
	// object into a series that keeps the first note, so only identical
	// publications may share one.
	switch {
	case st.PublishedReplicas > old.PublishedReplicas:
		r.Recorder.Eventf(c, peerPod(c, st.PublishedReplicas-1), corev1.EventTypeNormal, "Published", "Publish",
			"published %d addresses: %s", st.PublishedReplicas, st.NamesrvAddr)
	case st.PublishedReplicas < old.PublishedReplicas:
		r.Recorder.Eventf(c, peerPod(c, st.PublishedReplicas), corev1.EventTypeNormal, "Published", "Unpublish",
			"published %d addresses, ordinals %d and up removed: %s", st.PublishedReplicas, st.PublishedReplicas, st.NamesrvAddr)
	case old.NamesrvAddr != st.NamesrvAddr:
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "Published", "Rename", "published %d addresses: %s", st.PublishedReplicas, st.NamesrvAddr)
	}
	if st.DrainStartTime != nil && (old.DrainStartTime == nil || !old.DrainStartTime.Equal(st.DrainStartTime)) {
		r.Recorder.Eventf(c, peerPod(c, st.PublishedReplicas), corev1.EventTypeNormal, "Draining", "Drain",
			"removed ordinals %d and up from the list; the StatefulSet keeps them for %ds", st.PublishedReplicas, ptr.Deref(c.Spec.Publish.DrainSeconds, 0))
	}
	return nil
}

// peerPod names the pod of an ordinal, for events about it.
func peerPod(c *v1alpha1.NameServerCluster, ordinal int32) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: fmt.Sprintf("%s-%d", render.StatefulSetName(c), ordinal)}}
}

// warnRefusals records one Warning event per refused part of the spec when
// the set of refusals changed, so a standing refusal is not repeated on
// every reconcile.
func (r *NameServerClusterReconciler) warnRefusals(c *v1alpha1.NameServerCluster, old, st v1alpha1.NameServerClusterStatus, problems []problem) {
	was := meta.FindStatusCondition(old.Conditions, v1alpha1.ConditionDegraded)
	now := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded)
	if len(problems) == 0 || (was != nil && now != nil && was.Message == now.Message) {
		return
	}
	for _, p := range problems {
		r.Recorder.Eventf(c, p.Related, corev1.EventTypeWarning, p.Reason, "Refuse", "%s", p.Message)
		metrics.Refused(c.Namespace, c.Name, p.Reason)
	}
}
