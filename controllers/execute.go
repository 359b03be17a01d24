package controllers

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/peerclient"
	"github.com/kube-namesrv/kube-namesrv/controllers/publish"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// apiActor carries out a pass against the API server and the peers.
type apiActor struct {
	r   *NameServerClusterReconciler
	ctx context.Context
	// peerCtx bounds the requests to the peers.
	peerCtx context.Context
	// token is presented to the peers (observed.httpToken).
	token string
}

var _ actor = apiActor{}

func (a apiActor) applyKV(c *v1alpha1.NameServerCluster, ordinal int32, p publish.Peer) (*peerstatus.KVStatus, error) {
	t := target(p)
	t.Token = a.token
	kv, err := a.r.Peers.Client.ApplyKV(a.peerCtx, t)
	if err != nil {
		a.refused(c, err)
		logf.FromContext(a.ctx).Info("could not ask a peer to apply its declared KV config", "peer", render.PodName(c, ordinal), "error", err.Error())
	}
	return kv, err
}

func (a apiActor) openGate(c *v1alpha1.NameServerCluster, ordinal int32, p publish.Peer, req peerstatus.GateRequest) (*peerstatus.Summary, error) {
	t := target(p)
	t.Token = a.token
	s, err := a.r.Peers.Client.OpenGate(a.peerCtx, t, req)
	if err != nil {
		a.refused(c, err)
		logf.FromContext(a.ctx).Info("could not send a gate request to a starting peer", "peer", render.PodName(c, ordinal), "error", err.Error())
	}
	return s, err
}

// refused has the next reconcile read the token again when a peer refused
// it.
func (a apiActor) refused(c *v1alpha1.NameServerCluster, err error) {
	if errors.Is(err, peerclient.ErrRefused) {
		a.r.tokens.forget(client.ObjectKeyFromObject(c))
	}
}

func (a apiActor) writeStatus(c *v1alpha1.NameServerCluster, st v1alpha1.NameServerClusterStatus) error {
	return a.r.writeStatus(a.ctx, c, st)
}

func (a apiActor) event(c *v1alpha1.NameServerCluster, related *corev1.Pod, eventType string, reason v1alpha1.EventReason, action, note string, args ...any) {
	if related == nil {
		a.r.event(c, nil, eventType, reason, action, note, args...)
		return
	}
	a.r.event(c, related, eventType, reason, action, note, args...)
}

// restart deletes exactly the pod that was read, never a successor of the
// same name.
func (a apiActor) restart(c *v1alpha1.NameServerCluster, ordinal int32) error {
	pod := &corev1.Pod{}
	if err := a.r.Get(a.ctx, clientKey(c.Namespace, render.PodName(c, ordinal)), pod); err != nil {
		return fmt.Errorf("reading the pod to restart: %w", err)
	}
	if err := a.r.Delete(a.ctx, pod, preconditionUID(pod)); err != nil {
		return fmt.Errorf("restarting %s/%s for the new pod template: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func (a apiActor) write(c *v1alpha1.NameServerCluster, d *decision, w write) (outcome, error) {
	ctx, r := a.ctx, a.r
	var ch child
	switch w.kind {
	case writeConfig:
		ch = configMapChild(render.ConfigConfigMap(c))
	case writeKVConfig:
		ch = configMapChild(render.KVConfigMap(c, d.kvFile))
	case writeHeadlessService:
		ch = serviceChild(render.HeadlessService(c))
	case writeClientService:
		ch = serviceChild(render.ClientService(c, render.OldPorts{Remoting: d.oldPorts, HTTP: d.oldHTTPPorts}))
	case writeExternalService:
		ch = serviceChild(render.ExternalService(c, w.ordinal, d.oldPorts))
	case deleteExternalService:
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: render.ExternalServiceName(c, w.ordinal)}}
		return outcome{}, r.deleteChild(ctx, c, "Service", svc, "its peer no longer runs or spec.externalAccess is unset")
	case writeAddresses:
		ch = configMapChild(render.AddressConfigMap(c, w.dest.namespace, w.dest.configMapName(w.list), d.listData[w.list]))
	case deleteAddressCopy:
		return outcome{}, r.deleteAddressConfigMap(ctx, c, w.copy)
	case writePDB:
		ch = pdbChild(render.PodDisruptionBudget(c))
	case deletePDB:
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: render.PodDisruptionBudgetName(c)}}
		return outcome{}, r.deleteChild(ctx, c, "PodDisruptionBudget", pdb, "spec.podDisruptionBudget.enabled is false")
	case deleteConfig:
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: w.name}}
		return outcome{}, r.deleteChild(ctx, c, "ConfigMap", cm, "no pod mounts this revision of spec.config any more")
	case writeStatefulSet:
		ac, err := render.StatefulSet(c, r.Render, d.plan.Replicas, d.oldPorts...)
		if err != nil {
			return outcome{}, err
		}
		if err := r.keepClaimTemplateSize(ctx, c, ac); err != nil {
			return outcome{}, err
		}
		ch = statefulSetChild(ac)
	}
	p, applied, err := r.applyChild(ctx, c, ch)
	if err != nil {
		return outcome{}, err
	}
	if p != nil {
		if w.kind == writeAddresses {
			p.Addresses = true
			if w.dest.namespace != c.Namespace && p.Reason != v1alpha1.RefusalNotOwned {
				p.Reason = v1alpha1.RefusalTarget
			}
		}
		return outcome{problem: p}, nil
	}
	if w.kind == writeStatefulSet {
		// Not applied: the StatefulSet is as the cache holds it.
		sts := ch.existing.(*appsv1.StatefulSet)
		if applied {
			if sts, err = r.readStatefulSet(ctx, c); err != nil {
				return outcome{}, err
			}
		}
		p, err := r.expandClaims(ctx, c, sts)
		return outcome{sts: sts, problem: p}, err
	}
	return outcome{}, nil
}

// readStatefulSet reads the StatefulSet after the apply, so that status
// describes the template just applied and not the one read before: an
// apply that changed it bumps its generation, which its controller has not
// observed yet.
func (r *NameServerClusterReconciler) readStatefulSet(ctx context.Context, c *v1alpha1.NameServerCluster) (*appsv1.StatefulSet, error) {
	sts := &appsv1.StatefulSet{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: render.StatefulSetName(c)}, sts); err != nil {
		return nil, fmt.Errorf("reading the StatefulSet of %s/%s after applying it: %w", c.Namespace, c.Name, err)
	}
	return sts, nil
}

// deleteAddressConfigMap deletes an address ConfigMap of the cluster that
// no destination uses any more.
func (r *NameServerClusterReconciler) deleteAddressConfigMap(ctx context.Context, c *v1alpha1.NameServerCluster, key client.ObjectKey) error {
	cm := &corev1.ConfigMap{}
	found, err := r.getCached(ctx, key, cm)
	if err != nil || !found {
		if err != nil {
			return fmt.Errorf("reading ConfigMap %s: %w", key, err)
		}
		return nil
	}
	if err := r.Delete(ctx, cm, client.Preconditions{UID: ptr.To(cm.UID)}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting ConfigMap %s: %w", key, err)
	}
	r.event(c, cm, corev1.EventTypeNormal, v1alpha1.EventDeleted, "Delete", "deleted address ConfigMap %s", key)
	return nil
}

// deleteCopies deletes the copies of a deleted cluster's address
// ConfigMaps in other namespaces; the owned ones in its own namespace go
// with it, through the garbage collector. Events are about the cluster
// while it exists (c), else about the deleted copy.
func (r *NameServerClusterReconciler) deleteCopies(ctx context.Context, namespace, name string, c *v1alpha1.NameServerCluster) error {
	list := &corev1.ConfigMapList{}
	if err := r.List(ctx, list, client.MatchingLabels(addressLabels(namespace, name))); err != nil {
		return fmt.Errorf("listing the address ConfigMaps of %s/%s: %w", namespace, name, err)
	}
	for i := range list.Items {
		cm := &list.Items[i]
		key := client.ObjectKeyFromObject(cm)
		if cm.Namespace == namespace {
			continue
		}
		if err := r.Delete(ctx, cm, client.Preconditions{UID: ptr.To(cm.UID)}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting ConfigMap %s: %w", key, err)
		}
		if c != nil {
			r.event(c, cm, corev1.EventTypeNormal, v1alpha1.EventDeleted, "Delete", "deleted address ConfigMap %s", key)
		} else {
			r.event(cm, nil, corev1.EventTypeNormal, v1alpha1.EventDeleted, "Delete", "deleted address ConfigMap %s of the deleted NameServerCluster %s/%s", key, namespace, name)
		}
	}
	return nil
}

// peerPod names the pod of an ordinal, for events about it.
func peerPod(c *v1alpha1.NameServerCluster, ordinal int32) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: render.PodName(c, ordinal)}}
}
