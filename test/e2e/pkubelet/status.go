package pkubelet

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statusRetry is how soon a failed status write is tried again.
const statusRetry = 200 * time.Millisecond

// statusLoop writes the Pod status whenever something changed, coalescing
// bursts of changes into one write.
func (w *podWorker) statusLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.dirty:
		}
		if err := w.syncStatus(ctx); err != nil && ctx.Err() == nil {
			if apierrors.IsNotFound(err) {
				return
			}
			w.log.Warn("write pod status", "err", err)
			time.AfterFunc(statusRetry, w.markDirty)
		}
	}
}

// syncStatus writes the status if it differs from what the API has. It
// starts from the latest Pod seen, and on a conflict re-reads it, so that
// fields owned by others (conditions, qosClass, ...) are kept.
func (w *podWorker) syncStatus(ctx context.Context) error {
	pod := w.latest()
	for attempt := 0; ; attempt++ {
		desired := w.desiredStatus(pod)
		if equality.Semantic.DeepEqual(desired, pod.Status) {
			return nil
		}
		next := pod.DeepCopy()
		next.Status = desired
		updated, err := w.k.cfg.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err == nil {
			w.update(updated)
			return nil
		}
		if !apierrors.IsConflict(err) || attempt >= 5 {
			return err
		}
		fresh, err := w.k.cfg.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if fresh.UID != w.uid {
			return apierrors.NewNotFound(corev1.Resource("pods"), pod.Name)
		}
		w.update(fresh)
		pod = fresh
	}
}

// desiredStatus is pod.Status with the fields the kubelet owns recomputed.
func (w *podWorker) desiredStatus(pod *corev1.Pod) corev1.PodStatus {
	st := *pod.Status.DeepCopy()
	w.mu.Lock()
	sandboxReady, sandboxErr := w.sandboxReady, w.sandboxErr
	reportedIP, startTime := w.reportedIP, w.startTime
	w.mu.Unlock()

	hostIP := w.k.nodeIP
	st.HostIP = hostIP
	st.HostIPs = []corev1.HostIP{{IP: hostIP}}
	if reportedIP != "" && st.StartTime == nil {
		st.StartTime = &startTime
	}
	if reportedIP != "" {
		st.PodIP = reportedIP
		st.PodIPs = []corev1.PodIP{{IP: reportedIP}}
	}

	statuses := make([]corev1.ContainerStatus, 0, len(w.containers))
	allReady := len(w.containers) > 0
	anyStarted, allFinished, anyFailed := false, true, false
	for _, c := range w.containers {
		cs := c.status()
		if !sandboxReady && cs.State.Waiting != nil && cs.State.Waiting.Reason == "ContainerCreating" && sandboxErr != "" {
			cs.State.Waiting.Message = sandboxErr
		}
		statuses = append(statuses, cs)
		allReady = allReady && cs.Ready
		anyStarted = anyStarted || c.everStarted()
		done, code := c.finished(pod.Spec.RestartPolicy)
		allFinished = allFinished && done
		anyFailed = anyFailed || (done && code != 0)
	}
	st.ContainerStatuses = statuses

	switch {
	case allFinished && len(w.containers) > 0 && anyFailed:
		st.Phase = corev1.PodFailed
	case allFinished && len(w.containers) > 0:
		st.Phase = corev1.PodSucceeded
	case anyStarted:
		st.Phase = corev1.PodRunning
	default:
		st.Phase = corev1.PodPending
	}

	ready := allReady
	for _, g := range pod.Spec.ReadinessGates {
		ready = ready && conditionTrue(pod.Status.Conditions, g.ConditionType)
	}
	setCondition(&st, corev1.PodScheduled, true, "")
	setCondition(&st, corev1.PodReadyToStartContainers, sandboxReady, "")
	setCondition(&st, corev1.PodInitialized, true, "")
	setCondition(&st, corev1.ContainersReady, allReady, "ContainersNotReady")
	setCondition(&st, corev1.PodReady, ready, "ContainersNotReady")
	return st
}

func conditionTrue(conds []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setCondition sets a condition, keeping its transition time while its
// status does not change.
func setCondition(st *corev1.PodStatus, t corev1.PodConditionType, ok bool, falseReason string) {
	c := corev1.PodCondition{Type: t, Status: corev1.ConditionTrue}
	if !ok {
		c.Status, c.Reason = corev1.ConditionFalse, falseReason
	}
	for i := range st.Conditions {
		old := &st.Conditions[i]
		if old.Type != t {
			continue
		}
		if old.Status == c.Status && old.Reason == c.Reason {
			return
		}
		c.LastTransitionTime = metaTime(time.Now())
		*old = c
		return
	}
	c.LastTransitionTime = metaTime(time.Now())
	st.Conditions = append(st.Conditions, c)
}
