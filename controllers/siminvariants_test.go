package controllers

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
)

// The invariants TestSimulation checks, each named as it is reported.
const (
	invAnswering  = "the client list names a peer that answers"
	invDrain      = "no pod a list names goes before its drain"
	invFloor      = "a roll keeps the floor"
	invClaims     = "status claims only what was written"
	invConverges  = "every history converges"
	invNoOperator = "the operator never fails"
	invConfig     = "a pod always finds its config"
	invRefusal    = "a refused spec changes nothing"
	invOneManager = "one manager acts on a cluster"
	invGate       = "a gate never opens for nothing"
)

// ownClientList is the client ConfigMap of the cluster's own namespace.
func (w *simWorld) ownClientList() []string {
	data := w.cms[types.NamespacedName{Namespace: w.c.Namespace, Name: render.AddressConfigMapName(w.c)}]
	if data[v1alpha1.NamesrvAddrKey] == "" {
		return nil
	}
	return strings.Split(data[v1alpha1.NamesrvAddrKey], ";")
}

// ordinalOf is the ordinal an address of the cluster names, -1 for none.
func (w *simWorld) ordinalOf(addr string) int32 {
	prefix := w.c.Name + "-"
	rest, ok := strings.CutPrefix(addr, prefix)
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(rest[:strings.IndexByte(rest, '.')])
	if err != nil {
		return -1
	}
	return int32(n)
}

// answering are the ordinals the client list names whose pod answers;
// pods in also count as answering (a restart is the floor's business).
func (w *simWorld) answering(also []int32) []int32 {
	var out []int32
	for _, addr := range w.ownClientList() {
		o := w.ordinalOf(addr)
		if w.pods[o].ready() || slices.Contains(also, o) {
			out = append(out, o)
		}
	}
	return out
}

// checkAnswering: the client list names at least one peer that answers
// clients, whenever one did before the pass. Restarts are judged by the
// floor (checkFloor).
func (w *simWorld) checkAnswering(before []int32, restarted []int32) {
	if len(before) > 0 && len(w.answering(restarted)) == 0 {
		w.violate(invAnswering, "before the pass %v answered; after it the client list %v names none that does", before, w.ownClientList())
	}
}

// checkFloor, at a restart of the roll: restarting a peer that answers
// never leaves fewer than replicas - maxUnavailable answering peers.
func (w *simWorld) checkFloor(ordinal int32) {
	desired := desired(w.c)
	answering := slices.DeleteFunc(w.answering(nil), func(o int32) bool { return o >= desired })
	if !slices.Contains(answering, ordinal) {
		return
	}
	if floor := desired - render.MaxUnavailable(w.c); int32(len(answering))-1 < floor {
		w.violate(invFloor, "restarting %d leaves %d answering of %v, below the floor %d", ordinal, len(answering)-1, answering, floor)
	}
}

// listedAddresses are the client-list addresses of an ordinal that a list
// names now or named within the drain, with when each left the last list
// (zero while one still names it).
func (w *simWorld) listedAddresses(ordinal int32) map[string]time.Time {
	out := map[string]time.Time{}
	for addr := range w.namedAddresses() {
		if w.ordinalOf(addr) == ordinal {
			out[addr] = time.Time{}
		}
	}
	for addr, at := range w.dropped {
		if _, named := out[addr]; !named && w.ordinalOf(addr) == ordinal && w.now.Sub(at) < w.drain() {
			out[addr] = at
		}
	}
	return out
}

// checkRemoval, when the StatefulSet controller deletes a pod for good: no
// client list names it, and the last one that did was written a drain ago.
func (w *simWorld) checkRemoval(ordinal int32, p *simPod) {
	for addr, at := range w.listedAddresses(ordinal) {
		if at.IsZero() {
			w.violate(invDrain, "pod %d deleted for good while a client list names %s", ordinal, addr)
		} else {
			w.violate(invDrain, "pod %d deleted %s after %s left the client lists, before the drain of %s", ordinal, w.now.Sub(at), addr, w.drain())
		}
	}
}

// checkPorts, when a pod is (re)created: it listens on every port its
// addresses in the client lists use, and on those dropped within the drain.
func (w *simWorld) checkPorts(ordinal int32, p *simPod) {
	for addr, at := range w.listedAddresses(ordinal) {
		port := portOf(addr)
		if port == p.remoting || slices.Contains(p.extra, port) {
			continue
		}
		if at.IsZero() {
			w.violate(invDrain, "pod %d restarted without port %d, which a client list names (%s)", ordinal, port, addr)
		} else {
			w.violate(invDrain, "pod %d restarted without port %d %s after %s left the client lists, before the drain", ordinal, port, w.now.Sub(at), addr)
		}
	}
}

// checkRecorded: the status records as published every peer a client list
// names, so that a restarted operator drains them.
func (w *simWorld) checkRecorded() {
	published := map[int32]bool{}
	for _, o := range publishedOrdinals(w.c) {
		published[o] = true
	}
	for addr := range w.namedAddresses() {
		if o := w.ordinalOf(addr); !published[o] {
			w.violate(invClaims, "a client list names %s, status records ordinal %d as unpublished (%v)", addr, o, publishedOrdinals(w.c))
		}
	}
}

// checkServicePorts, when the client Service's ports change: a port it
// drops is neither a remoting port a client list names nor the HTTP port of
// an address server domain a list names, now or within the drain.
func (w *simWorld) checkServicePorts(remoting, http map[int32]bool) {
	named := w.named()
	for name, at := range w.dropped {
		if w.now.Sub(at) < w.drain() {
			named[name] = true
		}
	}
	for name := range named {
		port := portOf(strings.TrimPrefix(name, domainPrefix))
		switch {
		case strings.HasPrefix(name, domainPrefix) && w.svcHTTP[port] && !http[port]:
			w.violate(invDrain, "the client Service drops HTTP port %d, which the address server domain %s in a list uses", port, name)
		case !strings.HasPrefix(name, domainPrefix) && w.svcRemoting[port] && !remoting[port]:
			w.violate(invDrain, "the client Service drops remoting port %d, which a client list names (%s)", port, name)
		}
	}
}

// checkClaim, once a pass wrote its status: AddressesPublished is True only
// when every destination of the spec the pass read holds the lists the
// status records.
func (w *simWorld) checkClaim(c *v1alpha1.NameServerCluster, st v1alpha1.NameServerClusterStatus) {
	cond := v1alpha1.FindCondition(st.Conditions, v1alpha1.ConditionAddressesPublished)
	if cond == nil || cond.Status != "True" || cond.ObservedGeneration != c.Generation {
		// A condition an earlier generation set claims nothing of this one.
		return
	}
	dests := []string{c.Namespace}
	for _, t := range c.Spec.Publish.Targets {
		dests = append(dests, t.Namespace)
	}
	name := render.AddressConfigMapName(c)
	for _, ns := range dests {
		clients := w.cms[types.NamespacedName{Namespace: ns, Name: name}][v1alpha1.NamesrvAddrKey]
		brokers := w.cms[types.NamespacedName{Namespace: ns, Name: name + v1alpha1.BrokerConfigMapSuffix}][v1alpha1.NamesrvAddrKey]
		if clients != st.NamesrvAddr || brokers != st.BrokerNamesrvAddr {
			w.violate(invClaims, "AddressesPublished is written True, but %s holds clients %q brokers %q, status %q %q", ns, clients, brokers, st.NamesrvAddr, st.BrokerNamesrvAddr)
		}
	}
}

// checkGate, when a gate request opens a gate without a wait: some other
// peer answers, whose brokers the request stood for; or the peer already
// holds every live broker. A gate opened for nothing after every peer
// restarted answers "topic does not exist" until the brokers register.
func (w *simWorld) checkGate(p *simPod) {
	if len(w.holds(p)) == len(w.brokers) {
		return
	}
	for _, q := range w.pods {
		if q != p && q.gateOpen && !q.terminating && !q.stuck {
			return
		}
	}
	w.violate(invGate, "a gate opened on a request that expects %v, with no other peer answering, while the peer lacks live brokers", p.gateReq.Expect)
}

// checkConfig, when a pod (re)starts: the config ConfigMap it mounts
// exists and holds the properties of its own template, not those of a
// revision the roll has yet to bring it.
func (w *simWorld) checkConfig(ordinal int32, p *simPod) {
	switch sum, ok := w.configs[p.configMap]; {
	case !ok:
		w.violate(invConfig, "pod %d starts, its config ConfigMap %q does not exist", ordinal, p.configMap)
	case sum != p.config:
		w.violate(invConfig, "pod %d starts with the properties of another revision than its template's (%s)", ordinal, p.configMap)
	}
}

// checkConfigDeletion, when a config ConfigMap is deleted: no pod mounts
// it, and the StatefulSet controller will create none that does.
func (w *simWorld) checkConfigDeletion(name string) {
	for o, p := range w.pods {
		if p.configMap == name {
			w.violate(invConfig, "config ConfigMap %s deleted while pod %d mounts it", name, o)
		}
	}
	if s := w.sts; s != nil && s.observedConfigMap == name {
		w.violate(invConfig, "config ConfigMap %s deleted while the StatefulSet controller creates pods with it", name)
	}
}

// checkOneManager, when a manager acts: the status names it as the
// cluster's manager; it claimed the cluster before acting.
func (w *simWorld) checkOneManager(m *simManager, act string, what any) {
	if owner := w.c.Status.Manager; owner == nil || owner.Identity != m.r.Identity {
		w.violate(invOneManager, "%s %s %+v while the status names %+v", m.r.Identity, act, what, owner)
	}
}

// converged tells whether the cluster is at its spec, and if not why.
func (w *simWorld) converged(opts render.Options) string {
	c, s := w.c, w.sts
	n := desired(c)
	switch {
	case s == nil || s.replicas != n || s.observed != s.generation:
		return "the StatefulSet is not at its spec"
	case s.template != simTemplate(c, opts, nil):
		return "the pod template is not the spec's: " + s.template
	case len(w.pods) != int(n):
		return fmt.Sprintf("%d pods run, %d wanted", len(w.pods), n)
	case len(w.configs) != 1:
		return fmt.Sprintf("config ConfigMaps %v remain", w.configs)
	case len(w.svcRemoting) != 1 || len(w.svcHTTP) != 1:
		return fmt.Sprintf("the client Service keeps ports %v %v", w.svcRemoting, w.svcHTTP)
	case c.Status.ObservedGeneration != c.Generation:
		return "status describes an older generation"
	case c.Status.PublishedReplicas != n || c.Status.DrainStartTime != nil:
		return fmt.Sprintf("%d peers published, drain %v", c.Status.PublishedReplicas, c.Status.DrainStartTime)
	}
	for o := range n {
		p := w.pods[o]
		switch {
		case p == nil || !p.ready():
			return fmt.Sprintf("pod %d is not ready", o)
		case p.revision != s.updateRevision:
			return fmt.Sprintf("pod %d runs an old template", o)
		case p.kv != digestOf(w.kvFile) || p.kvMissing:
			return fmt.Sprintf("pod %d lacks the declared KV config", o)
		}
	}
	var want []string
	for o := range n {
		want = append(want, render.PeerAddress(c, opts, o, c.Spec.Ports.Remoting))
	}
	if got := w.ownClientList(); !slices.Equal(got, want) {
		return fmt.Sprintf("the client list is %v", got)
	}
	for _, t := range []v1alpha1.ConditionType{v1alpha1.ConditionAddressesPublished} {
		if !meta.IsStatusConditionTrue(c.Status.Conditions, string(t)) {
			return string(t) + " is not True"
		}
	}
	if cnd := v1alpha1.FindCondition(c.Status.Conditions, v1alpha1.ConditionProgressing); cnd == nil || cnd.Reason != string(v1alpha1.ReasonStable) {
		return fmt.Sprintf("Progressing is %+v", cnd)
	}
	return ""
}
