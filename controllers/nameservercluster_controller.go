// Package controllers holds the NameServerCluster reconciler: it applies the
// objects rendered by package render, decides the published list with
// package publish, and reports what it did in status, conditions and events.
// It reacts to watch events only; the one timer it sets is the end of a
// scale-down drain.
package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/metrics"
	"github.com/kube-namesrv/kube-namesrv/controllers/publish"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

const (
	// FieldOwner is the server-side apply field manager of every child.
	FieldOwner = "kube-namesrv"
	// Finalizer lets the operator delete the address ConfigMaps it copied
	// into other namespaces, which owner references cannot reach.
	Finalizer = "rocketmq.kube-namesrv.io/published-targets"
)

// NameServerClusterReconciler turns NameServerClusters into running peers
// and a published address list. It keeps no state between calls: everything
// it needs is in the cluster's spec and status and in its children.
type NameServerClusterReconciler struct {
	client.Client
	// APIReader reads around the cache, to tell a missing object from one
	// the cache does not hold because it is not the operator's.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Render    render.Options
	// Namespaces the manager watches; empty means all.
	Namespaces []string
	Clock      clock.PassiveClock
}

// RBAC, least privilege. Children are written by server-side apply (patch;
// create for the first apply) and never updated otherwise.
//
// The clusters themselves: read, and patch to add or remove the finalizer.
// +kubebuilder:rbac:groups=rocketmq.kube-namesrv.io,resources=nameserverclusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=rocketmq.kube-namesrv.io,resources=nameserverclusters/status,verbs=get;patch
// +kubebuilder:rbac:groups=rocketmq.kube-namesrv.io,resources=nameserverclusters/finalizers,verbs=update
// Children in the cluster's namespace; the garbage collector deletes them.
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch
// The PDB is deleted when spec.podDisruptionBudget.enabled turns false.
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch;delete
// Config and address ConfigMaps; copies in other namespaces are deleted by hand.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch;delete
// Pods are only read: their readiness drives publication, their IPs the IP list.
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// Namespaces are only watched, to publish into a target namespace created later.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// Events about what the operator did.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// No access to Secrets: the kubelet mounts the spec.tls Secrets into the
// pods; the operator only names them.

// Reconcile brings one cluster's children and published list towards its spec.
func (r *NameServerClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.reconcileRequest(ctx, req)
	if apierrors.IsConflict(err) {
		// The cluster changed since it was read; its watch event brings the
		// newer version here, so retrying this stale one would only repeat it.
		logf.FromContext(ctx).V(1).Info("stale read; waiting for the newer version", "reason", err.Error())
		return ctrl.Result{}, nil
	}
	return res, err
}

func (r *NameServerClusterReconciler) reconcileRequest(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &v1alpha1.NameServerCluster{}
	if err := r.Get(ctx, req.NamespacedName, c); err != nil {
		if apierrors.IsNotFound(err) {
			metrics.Forget(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !c.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, c)
	}
	if !controllerutil.ContainsFinalizer(c, Finalizer) {
		patch := client.MergeFromWithOptions(c.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(c, Finalizer)
		if err := r.Patch(ctx, c, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding the finalizer to %s: %w", req, err)
		}
	}
	return r.reconcile(ctx, c)
}

func (r *NameServerClusterReconciler) reconcile(ctx context.Context, c *v1alpha1.NameServerCluster) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	now := r.Clock.Now()

	sts := &appsv1.StatefulSet{}
	var current *int32
	switch err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: render.StatefulSetName(c)}, sts); {
	case err == nil:
		current = ptr.To(ptr.Deref(sts.Spec.Replicas, 1))
	case apierrors.IsNotFound(err):
		sts = nil
	default:
		return ctrl.Result{}, fmt.Errorf("reading the StatefulSet of %s/%s: %w", c.Namespace, c.Name, err)
	}
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(render.SelectorLabels(c))); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the pods of %s/%s: %w", c.Namespace, c.Name, err)
	}
	peers := publish.Peers(render.StatefulSetName(c), pods.Items)

	var drainStart *time.Time
	if c.Status.DrainStartTime != nil {
		drainStart = ptr.To(c.Status.DrainStartTime.Time)
	}
	plan := publish.Decide(publish.Input{
		Desired:    ptr.Deref(c.Spec.Replicas, 1),
		Published:  c.Status.PublishedReplicas,
		DrainStart: drainStart,
		Drain:      time.Duration(ptr.Deref(c.Spec.Publish.DrainSeconds, 0)) * time.Second,
		Current:    current,
		Ready:      func(o int32) bool { return peers[o].Ready },
		Now:        now,
	})

	// Order matters for a manager stopped half-way, or a status write lost
	// to a conflict. status.publishedReplicas must never be shorter than a
	// list some ConfigMap holds: otherwise a scale-down right after would
	// take those peers for never-published ones and remove them without a
	// drain. So a longer list is recorded before it is published, and a
	// shorter one is published before it is recorded, which also keeps a
	// recorded drain start no earlier than the shrink it times. The
	// StatefulSet, which shrinks only once a recorded drain is over, comes
	// after the list.
	var recordErr error
	if plan.Published > c.Status.PublishedReplicas {
		growing := c.Status.DeepCopy()
		growing.PublishedReplicas = plan.Published
		growing.Addresses = render.PeerAddresses(c, r.Render, plan.Published)
		growing.NamesrvAddr = strings.Join(growing.Addresses, ";")
		if recordErr = r.writeStatus(ctx, c, *growing); recordErr != nil {
			// Unrecorded, the longer list is not published; the rest of
			// the cluster is still brought to spec.
			plan.Published = c.Status.PublishedReplicas
		}
	}
	addresses := render.PeerAddresses(c, r.Render, plan.Published)
	var problems []problem
	data := render.AddressData(c, r.Render, plan.Published, publish.ReadyIPs(peers, plan.Published))
	steps := []func() ([]problem, error){
		func() ([]problem, error) { return r.applyChild(ctx, c, configMapChild(render.ConfigConfigMap(c))) },
		func() ([]problem, error) { return r.applyChild(ctx, c, serviceChild(render.HeadlessService(c))) },
		func() ([]problem, error) { return r.applyChild(ctx, c, serviceChild(render.ClientService(c))) },
		func() ([]problem, error) { return r.publishAddresses(ctx, c, data) },
		func() ([]problem, error) { return r.reconcilePDB(ctx, c) },
		func() ([]problem, error) {
			ac, err := render.StatefulSet(c, r.Render, plan.Replicas)
			if err != nil {
				return nil, err
			}
			return r.applyChild(ctx, c, statefulSetChild(ac))
		},
	}
	for _, step := range steps {
		p, err := step()
		if err != nil {
			return ctrl.Result{}, err
		}
		problems = append(problems, p...)
	}

	if recordErr != nil {
		return ctrl.Result{}, recordErr
	}
	status := computeStatus(statusInput{
		Cluster:     c,
		Plan:        plan,
		StatefulSet: sts,
		Peers:       peers,
		Addresses:   addresses,
		Problems:    problems,
		Now:         now,
	})
	old := c.Status
	if err := r.writeStatus(ctx, c, status); err != nil {
		return ctrl.Result{}, err
	}
	r.warnRefusals(c, old, status, problems)
	recordMetrics(c, plan, peers)
	if plan.Draining() {
		log.V(1).Info("draining removed peers", "until", plan.DrainStart.Add(time.Duration(ptr.Deref(c.Spec.Publish.DrainSeconds, 0))*time.Second))
	}
	return ctrl.Result{RequeueAfter: plan.RequeueAfter}, nil
}

// finalize deletes the copies of the address ConfigMap in other namespaces,
// then lets the cluster go; everything else is owned and garbage collected.
func (r *NameServerClusterReconciler) finalize(ctx context.Context, c *v1alpha1.NameServerCluster) error {
	if !controllerutil.ContainsFinalizer(c, Finalizer) {
		return nil
	}
	if err := r.deleteTargets(ctx, c, nil); err != nil {
		return err
	}
	patch := client.MergeFromWithOptions(c.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(c, Finalizer)
	if err := r.Patch(ctx, c, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing the finalizer of %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}

// SetupWithManager registers the controller and its watches. Children in the
// cluster's namespace are owned; pods (owned by the StatefulSet), copies of
// the address ConfigMap in other namespaces, and namespaces that targets
// wait for are mapped back to their clusters by labels and names.
func (r *NameServerClusterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.NameServerCluster{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToCluster), builder.WithPredicates(peerChanged())).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(targetToCluster))
	// Namespaces are cluster-scoped: watching them needs a ClusterRole, which
	// an operator restricted to some namespaces runs without. It needs no such
	// watch either: it may publish only into those namespaces, which exist
	// because its Roles live there.
	if len(r.Namespaces) == 0 {
		b = b.Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceToClusters), builder.WithPredicates(createdOnly()))
	}
	return b.Named("nameservercluster").Complete(r)
}

// podToCluster maps a peer pod to its cluster through the selector labels.
func podToCluster(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if l[render.LabelName] != render.AppName || l[render.LabelInstance] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: l[render.LabelInstance]}}}
}

// peerChanged lets through only the pod changes publication depends on:
// readiness, IP, termination, and pods appearing or going.
func peerChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		oldPod, okOld := e.ObjectOld.(*corev1.Pod)
		newPod, okNew := e.ObjectNew.(*corev1.Pod)
		if !okOld || !okNew {
			return true
		}
		return publish.PodReady(oldPod) != publish.PodReady(newPod) ||
			oldPod.Status.PodIP != newPod.Status.PodIP ||
			oldPod.DeletionTimestamp.IsZero() != newPod.DeletionTimestamp.IsZero()
	}}
}

// targetToCluster maps a copy of the address ConfigMap in another namespace
// to its cluster, so a copy edited or deleted by hand is restored.
func targetToCluster(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	ns, name := l[render.LabelClusterNamespace], l[render.LabelInstance]
	if ns == "" || name == "" || ns == o.GetNamespace() {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

// namespaceToClusters wakes the clusters waiting to publish into a namespace
// that has just been created.
func (r *NameServerClusterReconciler) namespaceToClusters(ctx context.Context, o client.Object) []reconcile.Request {
	list := &v1alpha1.NameServerClusterList{}
	if err := r.List(ctx, list); err != nil {
		logf.FromContext(ctx).Error(err, "listing clusters for a new namespace", "namespace", o.GetName())
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		for _, t := range list.Items[i].Spec.Publish.Targets {
			if t.Namespace == o.GetName() {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
				break
			}
		}
	}
	return out
}

func createdOnly() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// recordMetrics exports the cluster's state as just written to its status.
func recordMetrics(c *v1alpha1.NameServerCluster, plan publish.Plan, peers map[int32]publish.Peer) {
	m := metrics.Cluster{
		Namespace: c.Namespace, Name: c.Name,
		Desired:          ptr.Deref(c.Spec.Replicas, 1),
		Ready:            c.Status.ReadyReplicas,
		Published:        c.Status.PublishedReplicas,
		RoutesConsistent: -1,
		KVConfigInSync:   -1,
		Draining:         plan.Draining(),
	}
	for o := range plan.Published {
		if peers[o].Ready {
			m.Serving++
		}
	}
	metrics.Record(m)
}
