package pkubelet

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// startBinder binds every unscheduled Pod to this Node. With one Node there
// is nothing to decide, and skipping kube-scheduler avoids its taint and
// unbound-PVC checks (no volume provisioner runs here).
func (k *Kubelet) startBinder() error {
	factory := informers.NewSharedInformerFactoryWithOptions(k.cfg.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", "").String()
		}))
	inf := factory.Core().V1().Pods().Informer()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](50*time.Millisecond, 2*time.Second))
	enqueue := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && p.DeletionTimestamp == nil && p.Spec.NodeName == "" {
			queue.Add(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return fmt.Errorf("pkubelet: binder handler: %w", err)
	}
	factory.Start(k.ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(k.ctx.Done()) {
		if !ok {
			return fmt.Errorf("pkubelet: binder cache for %v did not sync", typ)
		}
	}
	k.wg.Add(2)
	go func() {
		defer k.wg.Done()
		<-k.ctx.Done()
		queue.ShutDown()
		factory.Shutdown()
	}()
	go func() {
		defer k.wg.Done()
		for {
			key, quit := queue.Get()
			if quit {
				return
			}
			if err := k.bind(k.ctx, key); err != nil && k.ctx.Err() == nil {
				k.log.Warn("bind", "pod", key, "err", err)
				queue.AddRateLimited(key)
			} else {
				queue.Forget(key)
			}
			queue.Done(key)
		}
	}()
	return nil
}

func (k *Kubelet) bind(ctx context.Context, key types.NamespacedName) error {
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Target:     corev1.ObjectReference{Kind: "Node", Name: k.cfg.NodeName},
	}
	err := k.cfg.Client.CoreV1().Pods(key.Namespace).Bind(ctx, b, metav1.CreateOptions{})
	// NotFound: deleted meanwhile; Conflict: bound meanwhile (a stale event).
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}
