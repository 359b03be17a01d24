// Package controllers holds the NameServerCluster reconciler. Each reconcile
// observes the cluster's pods and children and the latest route summaries
// of its NameServers, which the observer reads off the worker (observe.go,
// peerclient), then runs a pass (pass.go): it decides with pure
// planners what the client and broker lists hold, which peer to restart next
// and what each starting peer must wait for (decide.go and the packages
// publish, rollout, routecheck and kvcheck), and acts through an actor:
// requests to the peers, writes of the rendered children, a pod to restart,
// status writes. The reconciler's actor carries them out against the API
// server (execute.go, children.go, addresses.go); TestSimulation's carries
// out the same acts against a model of the world. The status, conditions,
// events and metrics report what was done (status.go). One install manages a
// cluster; another defers to it (manager.go). Reconciles follow watch
// events and the observer's news of the peers, plus three timers: the end
// of a drain, the next broker round, and a back-off after a refusal. A
// child is written only when the cache shows it does not hold what the
// pass would write (unchanged.go).
package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/metrics"
	"github.com/kube-namesrv/kube-namesrv/controllers/peerclient"
	"github.com/kube-namesrv/kube-namesrv/controllers/publish"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

const (
	// FieldOwner is the server-side apply field manager of every child.
	FieldOwner = "kube-namesrv"
	// LegacyFinalizer is the finalizer of earlier releases, which deleted
	// the copies of the address ConfigMap in other namespaces. The operator
	// now deletes them when it sees the cluster gone, without a finalizer,
	// so that uninstalling the operator before its clusters cannot leave
	// them undeletable; it removes this finalizer from older clusters.
	LegacyFinalizer = "rocketmq.kube-namesrv.io/published-targets"
	// peerTimeout bounds one HTTP request to a NameServer peer.
	peerTimeout = 2 * time.Second
)

// NameServerClusterReconciler turns NameServerClusters into running peers
// and published address lists. Its memory across calls is an optimisation:
// everything a decision needs is in the cluster's spec and status, its
// children and what the peers report.
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
	// Peers reads the NameServers; SetupWithManager creates one over HTTP
	// when it is nil.
	Peers *peerclient.Observer
	// Identity names this operator install in status.manager: another
	// install defers to the one named there (see manager.go).
	Identity string
	// TakeoverAfter is how long the manager named in status.manager must
	// look gone before this one takes a cluster over; 5 minutes when zero.
	TakeoverAfter time.Duration
	// StuckAfter is how long past its grace period a terminating peer pod
	// is reported stuck (status.peers[].stuckTerminatingSince); a minute
	// when zero.
	StuckAfter time.Duration

	retries     backoffs
	published   publishTimes
	generations generations
	exposure    exposureWarnings
	gaps        schemaGaps
	zones       nodeZones
	tokens      httpTokens
}

// RBAC, least privilege. Children are written by server-side apply (patch;
// create for the first apply) and never updated otherwise.
//
// The clusters themselves: read, and patch to remove the finalizer of older
// releases.
// +kubebuilder:rbac:groups=rocketmq.kube-namesrv.io,resources=nameserverclusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=rocketmq.kube-namesrv.io,resources=nameserverclusters/status,verbs=get;patch
// +kubebuilder:rbac:groups=rocketmq.kube-namesrv.io,resources=nameserverclusters/finalizers,verbs=update
// Children in the cluster's namespace; the garbage collector deletes them.
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;patch
// The per-peer external Services are deleted when externalAccess is removed
// or the cluster scales down.
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch;delete
// The PDB is deleted when spec.podDisruptionBudget.enabled turns false.
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch;delete
// Config and address ConfigMaps; copies in other namespaces are deleted by hand.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch;delete
// Pods are read (readiness, revision, ports) and deleted one at a time to
// roll them to a new template (the StatefulSet's strategy is OnDelete).
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// Namespaces are only read, for the publish opt-in annotation and to
// publish into a target namespace created later.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// Peers' claims are expanded in place when spec.storage grows (a
// StatefulSet's claim templates are immutable), and their StorageClass is
// read to tell whether it allows that.
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get
// Nodes are only read, one at a time and never watched: the zone label of
// the peers' nodes for status.peers[].zone (their metadata, about every ten
// minutes), and the Ready condition of the node of a pod stuck terminating,
// to say why. Namespaced installs have no ClusterRole and read none.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get
// Events about what the operator did.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// Secrets: get and create only, for the HTTP token Secret of
// spec.authorization (httptoken.go), read by name around the cache. No
// list or watch, so the operator cannot enumerate Secrets or receive their
// contents; no update, patch or delete, so it cannot change a Secret it did
// not create either (nor its own token: rotating it is deleting it). The
// spec.tls Secrets are mounted by the kubelet; the operator only names them.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create

// Reconcile brings one cluster's children and published lists towards its
// spec.
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
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		// Gone: its children in its namespace are owned and garbage
		// collected; the copies elsewhere are found by their labels.
		metrics.Forget(req.Namespace, req.Name)
		r.retries.forget(req.NamespacedName)
		r.tokens.forget(req.NamespacedName)
		r.Peers.Forget(req.NamespacedName)
		return ctrl.Result{}, r.deleteCopies(ctx, req.Namespace, req.Name, nil)
	}
	if !c.DeletionTimestamp.IsZero() {
		// Being deleted (a foreground delete keeps it while the garbage
		// collector works): nothing is applied any more, and the copies it
		// published elsewhere go now.
		r.Peers.Forget(req.NamespacedName)
		if err := r.deleteCopies(ctx, c.Namespace, c.Name, c); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.releaseLegacyFinalizer(ctx, c)
	}
	if err := r.releaseLegacyFinalizer(ctx, c); err != nil {
		return ctrl.Result{}, err
	}
	return r.reconcile(ctx, c)
}

// releaseLegacyFinalizer removes the finalizer older releases added.
func (r *NameServerClusterReconciler) releaseLegacyFinalizer(ctx context.Context, c *v1alpha1.NameServerCluster) error {
	if !controllerutil.ContainsFinalizer(c, LegacyFinalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(c.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(c, LegacyFinalizer)
	if err := r.Patch(ctx, c, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing the finalizer of %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}

// SetupWithManager registers the controller and its watches. Children in the
// cluster's namespace are owned; pods (owned by the StatefulSet), copies of
// the address ConfigMaps in other namespaces, and namespaces that targets
// wait for are mapped back to their clusters by labels and names.
func (r *NameServerClusterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Peers == nil {
		r.Peers = &peerclient.Observer{Client: peerclient.NewHTTP(peerTimeout)}
	}
	// The observer wakes a cluster whose peers answered something new.
	observed := make(chan event.GenericEvent)
	r.Peers.Changed = func(ctx context.Context, name types.NamespacedName) {
		c := &v1alpha1.NameServerCluster{}
		c.Namespace, c.Name = name.Namespace, name.Name
		select {
		case observed <- event.GenericEvent{Object: c}:
		case <-ctx.Done():
		}
	}
	if err := mgr.Add(r.Peers); err != nil {
		return fmt.Errorf("adding the observer of the peers: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.NameServerCluster{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToCluster), builder.WithPredicates(peerChanged())).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(targetToCluster)).
		WatchesRawSource(source.Channel(observed, &handler.EnqueueRequestForObject{}))
	// Namespaces are cluster-scoped: watching them needs a ClusterRole, which
	// an operator restricted to some namespaces runs without. It needs no such
	// watch either: it may publish only into those namespaces, which exist
	// because its Roles live there.
	if len(r.Namespaces) == 0 {
		b = b.Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceToClusters), builder.WithPredicates(namespaceOptIn()))
	}
	if err := mgr.Add(manager.RunnableFunc(r.sweepOrphans)); err != nil {
		return fmt.Errorf("adding the sweep of orphaned address ConfigMaps: %w", err)
	}
	return b.Named("nameservercluster").Complete(r)
}

// sweepOrphans deletes, once the manager leads, the copies of address
// ConfigMaps whose cluster was deleted while no manager ran.
func (r *NameServerClusterReconciler) sweepOrphans(ctx context.Context) error {
	list := &corev1.ConfigMapList{}
	if err := r.List(ctx, list, client.HasLabels{render.LabelClusterNamespace}, client.MatchingLabels{render.LabelManagedBy: render.ManagedBy}); err != nil {
		return fmt.Errorf("listing address ConfigMaps: %w", err)
	}
	seen := map[types.NamespacedName]bool{}
	for i := range list.Items {
		cm := &list.Items[i]
		owner := types.NamespacedName{Namespace: cm.Labels[render.LabelClusterNamespace], Name: cm.Labels[render.LabelInstance]}
		if owner.Name == "" || cm.Namespace == owner.Namespace || seen[owner] {
			continue
		}
		seen[owner] = true
		err := r.Get(ctx, owner, &v1alpha1.NameServerCluster{})
		switch {
		case apierrors.IsNotFound(err):
			if err := r.deleteCopies(ctx, owner.Namespace, owner.Name, nil); err != nil {
				logf.FromContext(ctx).Error(err, "deleting orphaned address ConfigMaps", "cluster", owner)
			}
		case err != nil:
			logf.FromContext(ctx).Error(err, "reading the cluster of an address ConfigMap", "cluster", owner)
		}
	}
	return nil
}

// podToCluster maps a peer pod to its cluster through the selector labels.
func podToCluster(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if l[render.LabelName] != render.AppName || l[render.LabelInstance] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: l[render.LabelInstance]}}}
}

// peerChanged lets through only the pod changes the operator acts on:
// readiness, IP, restarts, revision, termination, and pods appearing or
// going.
func peerChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		oldPod, okOld := e.ObjectOld.(*corev1.Pod)
		newPod, okNew := e.ObjectNew.(*corev1.Pod)
		if !okOld || !okNew {
			return true
		}
		peers := func(p *corev1.Pod) string {
			return publish.Fingerprint(publish.Peers(podStatefulSet(p), []corev1.Pod{*p}))
		}
		return peers(oldPod) != peers(newPod) || oldPod.Status.HostIP != newPod.Status.HostIP
	}}
}

// podStatefulSet is the StatefulSet name a peer pod belongs to.
func podStatefulSet(p *corev1.Pod) string {
	if i := strings.LastIndexByte(p.Name, '-'); i > 0 {
		return p.Name[:i]
	}
	return p.Name
}

// targetToCluster maps a copy of an address ConfigMap in another namespace
// to its cluster, so a copy edited or deleted by hand is restored.
func targetToCluster(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	ns, name := l[render.LabelClusterNamespace], l[render.LabelInstance]
	if ns == "" || name == "" || ns == o.GetNamespace() {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

// namespaceToClusters wakes the clusters that publish into a namespace that
// has just been created or whose opt-in annotation changed.
func (r *NameServerClusterReconciler) namespaceToClusters(ctx context.Context, o client.Object) []reconcile.Request {
	list := &v1alpha1.NameServerClusterList{}
	if err := r.List(ctx, list); err != nil {
		logf.FromContext(ctx).Error(err, "listing clusters for a namespace", "namespace", o.GetName())
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if slices.ContainsFunc(list.Items[i].Spec.Publish.Targets, func(t v1alpha1.PublishTarget) bool { return t.Namespace == o.GetName() }) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// namespaceOptIn lets through namespaces created, and changes of their
// opt-in annotation.
func namespaceOptIn() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetAnnotations()[v1alpha1.AnnotationAcceptPublishFrom] != e.ObjectNew.GetAnnotations()[v1alpha1.AnnotationAcceptPublishFrom]
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// backoffs spaces the retries of refused writes, per cluster: a quota or
// a webhook that refuses once may accept later, and nothing else would
// wake the cluster up.
type backoffs struct {
	mu       sync.Mutex
	attempts map[types.NamespacedName]int
}

const (
	backoffBase = 2 * time.Second
	backoffMax  = 5 * time.Minute
)

// next records a failed attempt and returns how long to wait.
func (b *backoffs) next(key types.NamespacedName) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.attempts == nil {
		b.attempts = map[types.NamespacedName]int{}
	}
	n := b.attempts[key]
	b.attempts[key] = n + 1
	d := backoffBase << min(n, 16)
	return min(d, backoffMax)
}

// forget resets a cluster's back-off once nothing is refused.
func (b *backoffs) forget(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.attempts, key)
}

// event records an event about a cluster: the one place where a typed
// reason becomes the recorder's string.
func (r *NameServerClusterReconciler) event(regarding, related runtime.Object, eventType string, reason v1alpha1.EventReason, action, note string, args ...any) {
	r.Recorder.Eventf(regarding, related, eventType, string(reason), action, note, args...)
}
