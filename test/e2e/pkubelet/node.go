package pkubelet

import (
	"context"
	"fmt"
	"runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// notReadyTaint is put on every new Node by the TaintNodesByCondition
// admission plugin; only the node-lifecycle controller (deliberately not run:
// it would evict Pods whenever heartbeats lag) would lift it.
const notReadyTaint = "node.kubernetes.io/not-ready"

func (k *Kubelet) registerNode(ctx context.Context) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: k.cfg.NodeName,
			Labels: map[string]string{
				"kubernetes.io/hostname": k.cfg.NodeName,
				"kubernetes.io/os":       runtime.GOOS,
				"kubernetes.io/arch":     runtime.GOARCH,
			},
		},
	}
	if _, err := k.cfg.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("pkubelet: create node: %w", err)
	}
	if err := k.removeNotReadyTaint(ctx); err != nil {
		return err
	}
	return k.postNodeStatus(ctx)
}

func (k *Kubelet) removeNotReadyTaint(ctx context.Context) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := k.cfg.Client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		kept := n.Spec.Taints[:0]
		for _, t := range n.Spec.Taints {
			if t.Key != notReadyTaint {
				kept = append(kept, t)
			}
		}
		if len(kept) == len(n.Spec.Taints) {
			return nil
		}
		n.Spec.Taints = kept
		_, err = k.cfg.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("pkubelet: remove not-ready taint: %w", err)
	}
	return nil
}

func (k *Kubelet) postNodeStatus(ctx context.Context) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := k.cfg.Client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason string) corev1.NodeCondition {
			c := corev1.NodeCondition{Type: t, Status: s, Reason: reason, LastHeartbeatTime: now, LastTransitionTime: now}
			for _, old := range n.Status.Conditions {
				if old.Type == t && old.Status == s {
					c.LastTransitionTime = old.LastTransitionTime
				}
			}
			return c
		}
		n.Status.Capacity = k.allocatable.DeepCopy()
		n.Status.Allocatable = k.allocatable.DeepCopy()
		n.Status.Conditions = []corev1.NodeCondition{
			cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory"),
			cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure"),
			cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID"),
			cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady"),
		}
		n.Status.Addresses = []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: k.nodeIP},
			{Type: corev1.NodeHostName, Address: k.cfg.NodeName},
		}
		n.Status.NodeInfo.KubeletVersion = "pkubelet"
		n.Status.NodeInfo.OperatingSystem = runtime.GOOS
		n.Status.NodeInfo.Architecture = runtime.GOARCH
		_, err = k.cfg.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("pkubelet: post node status: %w", err)
	}
	return nil
}

// heartbeat re-posts the Node status, and re-lifts the taint should anything
// put it back, until ctx is done.
func (k *Kubelet) heartbeat(ctx context.Context) {
	t := time.NewTicker(k.cfg.NodeStatusPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := k.removeNotReadyTaint(ctx); err != nil && ctx.Err() == nil {
			k.log.Error("heartbeat", "err", err)
		}
		if err := k.postNodeStatus(ctx); err != nil && ctx.Err() == nil {
			k.log.Error("heartbeat", "err", err)
		}
	}
}
