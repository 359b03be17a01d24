package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/peerclient"
	"github.com/kube-namesrv/kube-namesrv/controllers/publish"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

// observed is what one reconcile saw of the cluster's objects and peers.
type observed struct {
	now   time.Time
	round time.Duration
	// sts is the StatefulSet as last read, nil when it does not exist.
	sts *appsv1.StatefulSet
	// peers are the pods, by ordinal.
	peers map[int32]publish.Peer
	// external are the per-peer external Services, by ordinal.
	external map[int32]*corev1.Service
	// clientService is the client Service, nil when it does not exist.
	clientService *corev1.Service
	// addressConfigMaps are the address ConfigMaps of the cluster that
	// exist, in any namespace, found by their labels; listDigests the
	// digests of their data.
	addressConfigMaps []types.NamespacedName
	listDigests       map[types.NamespacedName]string
	// configMaps are the config ConfigMaps of the cluster that exist, one
	// per revision of spec.config, the shared one of earlier releases
	// included.
	configMaps []string
	// namespaces are the target namespaces of spec.publish.targets that
	// exist, when the operator may read them (it manages every namespace).
	namespaces map[string]*corev1.Namespace
	// state is the observer's memory of this cluster, with the latest
	// reads of its peers.
	state *peerclient.Cluster
	// fingerprint identifies the pods as observed: the observer's reads
	// are of them when its fingerprint is this one.
	fingerprint string
	// opened are the peers whose start-up gate this reconcile opened
	// (actOnPeers).
	opened map[int32]bool
	// httpToken is the bearer token the peers' HTTP port wants, "" when
	// none; httpTokenProblem why there is none although one is wanted.
	httpToken        string
	httpTokenProblem *problem
	// stuckAfter is how long past its grace period a terminating pod is
	// taken for stuck; stuckAt when the next terminating pod will be, zero
	// when none will.
	stuckAfter time.Duration
	stuckAt    time.Time
	// zones are the zones of the peers' nodes, by node name, for the nodes
	// the operator could read; nodeTrouble says what is wrong with the
	// node of a stuck pod (NotReady, gone), by node name.
	zones       map[string]string
	nodeTrouble map[string]string
}

// stuck tells whether a peer's pod is stuck terminating: its grace period
// ended more than stuckAfter ago and it is still there, which on a live
// node the kubelet never lets happen.
func (o *observed) stuck(ordinal int32) bool {
	p, ok := o.peers[ordinal]
	return ok && p.Terminating && !p.GraceEnds.IsZero() && !o.now.Before(p.GraceEnds.Add(o.stuckAfter))
}

// observe reads the StatefulSet, the pods and the external Services, and
// the peers' route summaries when they are due.
func (r *NameServerClusterReconciler) observe(ctx context.Context, c *v1alpha1.NameServerCluster) (*observed, error) {
	o := &observed{now: r.Clock.Now(), round: render.BrokerRound(c)}
	// The one write before the pass: the token Secret must exist before
	// the pods that mount it, and the reads below present its token.
	// A peer that refused the token at the latest read has it read again.
	state := r.Peers.State(client.ObjectKeyFromObject(c), c.UID)
	state.Lock()
	refused := state.TokenRefused
	state.Unlock()
	var err error
	if o.httpToken, o.httpTokenProblem, err = r.httpToken(ctx, c, refused); err != nil {
		return nil, err
	}
	sts := &appsv1.StatefulSet{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: render.StatefulSetName(c)}, sts); {
	case err == nil:
		o.sts = sts
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading the StatefulSet of %s/%s: %w", c.Namespace, c.Name, err)
	}
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(render.SelectorLabels(c))); err != nil {
		return nil, fmt.Errorf("listing the pods of %s/%s: %w", c.Namespace, c.Name, err)
	}
	o.peers = publish.Peers(render.StatefulSetName(c), pods.Items)
	r.observeNodes(ctx, o)

	o.external = map[int32]*corev1.Service{}
	svcs := &corev1.ServiceList{}
	if err := r.List(ctx, svcs, client.InNamespace(c.Namespace), client.MatchingLabels(render.SelectorLabels(c))); err != nil {
		return nil, fmt.Errorf("listing the Services of %s/%s: %w", c.Namespace, c.Name, err)
	}
	for i := range svcs.Items {
		if svcs.Items[i].Name == render.ClientServiceName(c) {
			o.clientService = &svcs.Items[i]
		}
		for ordinal := range int32(maxOrdinal(c, o)) {
			if svcs.Items[i].Name == render.ExternalServiceName(c, ordinal) {
				o.external[ordinal] = &svcs.Items[i]
			}
		}
	}

	configs := &corev1.ConfigMapList{}
	if err := r.List(ctx, configs, client.InNamespace(c.Namespace), client.MatchingLabels(render.SelectorLabels(c)), client.HasLabels{render.LabelConfig}); err != nil {
		return nil, fmt.Errorf("listing the config ConfigMaps of %s/%s: %w", c.Namespace, c.Name, err)
	}
	for i := range configs.Items {
		if metav1.IsControlledBy(&configs.Items[i], c) {
			o.configMaps = append(o.configMaps, configs.Items[i].Name)
		}
	}
	legacy := &corev1.ConfigMap{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: render.LegacyConfigMapName(c)}, legacy); {
	case err == nil && metav1.IsControlledBy(legacy, c):
		o.configMaps = append(o.configMaps, legacy.Name)
	case err != nil && !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading the config ConfigMap of an earlier release of %s/%s: %w", c.Namespace, c.Name, err)
	}

	cms := &corev1.ConfigMapList{}
	if err := r.List(ctx, cms, client.MatchingLabels(addressLabels(c.Namespace, c.Name))); err != nil {
		return nil, fmt.Errorf("listing the address ConfigMaps of %s/%s: %w", c.Namespace, c.Name, err)
	}
	o.listDigests = map[types.NamespacedName]string{}
	for i := range cms.Items {
		key := client.ObjectKeyFromObject(&cms.Items[i])
		o.addressConfigMaps = append(o.addressConfigMaps, key)
		o.listDigests[key] = render.DataDigest(cms.Items[i].Data)
	}
	o.namespaces = map[string]*corev1.Namespace{}
	for _, t := range c.Spec.Publish.Targets {
		if len(r.Namespaces) > 0 || t.Namespace == c.Namespace {
			continue
		}
		// Namespaces are watched when the operator may read them, and a
		// namespace created later wakes the clusters that publish there.
		ns := &corev1.Namespace{}
		found, err := r.getCached(ctx, client.ObjectKey{Name: t.Namespace}, ns)
		if err != nil {
			return nil, fmt.Errorf("reading namespace %s: %w", t.Namespace, err)
		}
		if found {
			o.namespaces[t.Namespace] = ns
		}
	}

	// The observer reads the peers off the worker; the pass goes on from
	// its latest observations, once they are those of the pods as they are.
	// Reads presenting another token are not of the peers as they are:
	// a new token is tried at once.
	want := peerclient.Want{Targets: map[int32]peerclient.Target{}, Fingerprint: publish.Fingerprint(o.peers) + tokenMark(o.httpToken), Round: o.round}
	for ordinal, p := range o.peers {
		if !p.Terminating && p.IP != "" && p.HTTPPort > 0 {
			want.Targets[ordinal] = peerclient.Target{IP: p.IP, Port: p.HTTPPort, Token: o.httpToken}
		}
	}
	o.fingerprint = want.Fingerprint
	o.state = r.Peers.Watch(client.ObjectKeyFromObject(c), c.UID, want)
	return o, nil
}

// defaultStuckAfter is how long past its grace period a terminating pod is
// taken for stuck: the kubelet of a live node kills the container at the
// end of the grace period and confirms within seconds.
const defaultStuckAfter = time.Minute

// observeNodes finds the zones of the peers' nodes and, for a pod stuck
// terminating, what is wrong with its node. Both are read around the cache:
// no Node is watched. Nodes are cluster-scoped, so an
// operator restricted to some namespaces (which runs without a ClusterRole)
// reads none: status then shows each peer's node without its zone. A node
// that cannot be read leaves its zone unknown; it never fails the reconcile.
func (r *NameServerClusterReconciler) observeNodes(ctx context.Context, o *observed) {
	o.stuckAfter = r.StuckAfter
	if o.stuckAfter <= 0 {
		o.stuckAfter = defaultStuckAfter
	}
	o.zones, o.nodeTrouble = map[string]string{}, map[string]string{}
	for ordinal, p := range o.peers {
		if p.Terminating && !p.GraceEnds.IsZero() && !o.stuck(ordinal) {
			if at := p.GraceEnds.Add(o.stuckAfter); o.stuckAt.IsZero() || at.Before(o.stuckAt) {
				o.stuckAt = at
			}
		}
	}
	if len(r.Namespaces) > 0 {
		return
	}
	log := logf.FromContext(ctx)
	for ordinal, p := range o.peers {
		if p.Node == "" {
			continue
		}
		if _, seen := o.zones[p.Node]; !seen {
			if zone, ok := r.zones.get(p.Node, o.now); ok {
				o.zones[p.Node] = zone
			} else {
				// Metadata only, around the cache: the labels are all it
				// needs, and a watch of every Node would hold them all.
				node := &metav1.PartialObjectMetadata{}
				node.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
				switch err := r.APIReader.Get(ctx, client.ObjectKey{Name: p.Node}, node); {
				case err == nil:
					o.zones[p.Node] = node.Labels[render.ZoneLabel]
					r.zones.put(p.Node, o.zones[p.Node], o.now)
				case apierrors.IsNotFound(err):
					o.zones[p.Node] = ""
				default:
					log.V(1).Info("cannot read the node of a peer", "node", p.Node, "error", err.Error())
				}
			}
		}
		if !o.stuck(ordinal) {
			continue
		}
		// Only for a stuck pod, around the cache: its conditions say why.
		node := &corev1.Node{}
		switch err := r.APIReader.Get(ctx, client.ObjectKey{Name: p.Node}, node); {
		case apierrors.IsNotFound(err):
			o.nodeTrouble[p.Node] = "node " + p.Node + " no longer exists"
		case err != nil:
			log.V(1).Info("cannot read the node of a stuck peer", "node", p.Node, "error", err.Error())
		default:
			o.nodeTrouble[p.Node] = nodeTrouble(node)
		}
	}
}

// zoneTTL is how long a node's zone is remembered. A zone label is set when
// a node joins and practically never changes: the operator reads each node
// of its peers about once per TTL instead of at every reconcile.
const zoneTTL = 10 * time.Minute

// nodeZones remembers the zones of nodes, by node name.
type nodeZones struct {
	mu sync.Mutex
	at map[string]zoneEntry
}

type zoneEntry struct {
	zone string
	read time.Time
}

// get is a node's zone, if read less than zoneTTL before now.
func (z *nodeZones) get(node string, now time.Time) (string, bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	e, ok := z.at[node]
	if !ok || now.Sub(e.read) >= zoneTTL {
		return "", false
	}
	return e.zone, true
}

// put remembers a node's zone, read at now, and forgets the entries past
// their TTL, so that nodes gone from the cluster do not pile up.
func (z *nodeZones) put(node, zone string, now time.Time) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.at == nil {
		z.at = map[string]zoneEntry{}
	}
	for n, e := range z.at {
		if now.Sub(e.read) >= zoneTTL {
			delete(z.at, n)
		}
	}
	z.at[node] = zoneEntry{zone: zone, read: now}
}

// nodeTrouble says what its Ready condition says of a node, "" when it is
// ready.
func nodeTrouble(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			return ""
		}
		return fmt.Sprintf("node %s is not ready (Ready=%s since %s: %s)", n.Name, c.Status, c.LastTransitionTime.UTC().Format(time.RFC3339), c.Reason)
	}
	return fmt.Sprintf("node %s reports no Ready condition", n.Name)
}

// maxOrdinal is one past the highest ordinal that may have objects: the
// larger of the desired peers, the StatefulSet's, the pods' and the
// published ones.
func maxOrdinal(c *v1alpha1.NameServerCluster, o *observed) int {
	n := int(desired(c))
	if o.sts != nil && o.sts.Spec.Replicas != nil {
		n = max(n, int(*o.sts.Spec.Replicas))
	}
	for ordinal := range o.peers {
		n = max(n, int(ordinal)+1)
	}
	for _, p := range c.Status.Peers {
		n = max(n, int(p.Ordinal)+1)
	}
	return n
}

// desired is spec.replicas.
func desired(c *v1alpha1.NameServerCluster) int32 {
	if c.Spec.Replicas == nil {
		return 1
	}
	return *c.Spec.Replicas
}

// publishedOrdinals are the ordinals of the client list recorded in status.
// A status written by a release without per-peer status lists ordinals
// 0..publishedReplicas-1.
func publishedOrdinals(c *v1alpha1.NameServerCluster) []int32 {
	var out []int32
	if len(c.Status.Peers) == 0 {
		for o := range c.Status.PublishedReplicas {
			out = append(out, o)
		}
		return out
	}
	for _, p := range c.Status.Peers {
		if p.Published {
			out = append(out, p.Ordinal)
		}
	}
	slices.Sort(out)
	return out
}

// statusPeer is the status entry of an ordinal, nil when there is none.
func statusPeer(c *v1alpha1.NameServerCluster, ordinal int32) *v1alpha1.PeerStatus {
	for i := range c.Status.Peers {
		if c.Status.Peers[i].Ordinal == ordinal {
			return &c.Status.Peers[i]
		}
	}
	return nil
}

// addressLabels select the address ConfigMaps of a cluster, in its own
// namespace and in the targets.
func addressLabels(namespace, name string) map[string]string {
	return map[string]string{render.LabelManagedBy: render.ManagedBy, render.LabelInstance: name, render.LabelClusterNamespace: namespace}
}

// tokenMark tells tokens apart in a fingerprint without carrying them.
func tokenMark(token string) string {
	if token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(token))
	return " token " + hex.EncodeToString(sum[:4])
}
