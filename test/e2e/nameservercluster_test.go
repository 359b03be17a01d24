//go:build e2e

package e2e

import (
	"context"
	"crypto/md5"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"maps"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/test/e2e/box"
)

func init() {
	// Expected refusals (a peer not yet registered with, a peer restarting)
	// are judged by the tests; the client's own log would only repeat them.
	rlog.SetLogLevel("fatal")
}

// TestThreePeers: a 3-peer NameServerCluster applied with kubectl runs three
// real NameServers, publishes three names that resolve, and a broker and a
// client configured from that list work with every peer.
func TestThreePeers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	c := applyCluster(ctx, t, "trio", clusterSpec{replicas: 3, drain: 2})

	pods, err := peerPods(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	var ips []string
	for _, p := range pods {
		proc := processOf(t, p)
		assertNamesrvProcess(ctx, t, proc)
		if body := mustGet(ctx, t, fmt.Sprintf("http://%s/readyz", net.JoinHostPort(proc.ip, fmt.Sprint(httpPort)))); body != "ok\n" {
			t.Errorf("%s /readyz = %q", p.Name, body)
		}
		ips = append(ips, net.JoinHostPort(proc.ip, fmt.Sprint(remotingPort)))
	}

	domain := fmt.Sprintf("%s.%s.svc.cluster.local:%d", c.name, c.ns, httpPort)
	list := strings.Join(c.peers(3), ";")
	for name, want := range map[string]map[string]string{
		c.addressConfigMap(): {
			v1alpha1.NamesrvAddrKey: list, v1alpha1.NamesrvAddrEnvKey: list,
			v1alpha1.ClientAddressServerDomainKey: domain, v1alpha1.ClientAddressServerSubGroupKey: v1alpha1.AddressServerSubGroup,
		},
		c.brokerConfigMap(): {
			v1alpha1.NamesrvAddrKey: list, v1alpha1.NamesrvAddrEnvKey: list,
			v1alpha1.AddressServerDomainKey: domain, v1alpha1.AddressServerSubGroupKey: v1alpha1.BrokerAddressServerSubGroup,
		},
		c.addressConfigMap() + "-ips": {v1alpha1.NamesrvAddrIPsKey: strings.Join(ips, ";")},
	} {
		cm, err := cl.Clientset.CoreV1().ConfigMaps(c.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(cm.Data, want) {
			t.Errorf("ConfigMap %s = %v, want %v", name, cm.Data, want)
		}
	}
	ipsCM, err := cl.Clientset.CoreV1().ConfigMaps(c.ns).Get(ctx, c.addressConfigMap()+"-ips", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := ipsCM.Data

	// With the system's resolver, as any process on the node would: cluster
	// DNS.
	for i, p := range pods {
		host, _, _ := net.SplitHostPort(c.peer(i))
		eventually(t, answerTimeout, func() (bool, string) {
			addrs, err := net.DefaultResolver.LookupHost(ctx, host)
			return err == nil && slices.Equal(addrs, []string{p.Status.PodIP}), fmt.Sprintf("%s resolves to %v, %v; want %s", host, addrs, err, p.Status.PodIP)
		})
	}

	since := time.Now()
	b := startBroker(ctx, t, c)
	b.waitRegistered(t, c.peers(3), since)
	// The broker has had its answer, so each peer holds the route now.
	for _, a := range c.peers(3) {
		ip, err := resolve(a)
		if err == nil {
			err = queryRoute(ctx, ip)
		}
		if err != nil {
			t.Errorf("rocketmq-client-go route of %s from %s: %v", topic, a, err)
		}
	}
	if u := b.unresolved(); len(u) > 0 {
		t.Errorf("published names that did not resolve for the broker: %v", u)
	}
	// A client that cannot use host names takes namesrvAddrIPs instead,
	// as one list.
	if err := queryRouteFrom(ctx, splitList(d[v1alpha1.NamesrvAddrIPsKey])); err != nil {
		t.Errorf("rocketmq-client-go with namesrvAddrIPs: %v", err)
	}

	st, err := clusterStatus(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range []v1alpha1.ConditionType{v1alpha1.ConditionAvailable, v1alpha1.ConditionAddressesPublished} {
		if !meta.IsStatusConditionTrue(st.Conditions, string(cond)) {
			t.Errorf("condition %s is not True: %+v", cond, st.Conditions)
		}
	}
}

func firstListWith(vs []configMapVersion, addr string) *configMapVersion {
	for i := range vs {
		if slices.Contains(splitList(vs[i].data[v1alpha1.NamesrvAddrKey]), addr) {
			return &vs[i]
		}
	}
	return nil
}

// TestAddressServerRefresh: a client that resolves the NameServer list
// through the address server (rocketmq-client-go's HttpResolver, the Go
// twin of Java's rocketmq.namesrv.domain) sees each new list without any
// restart, of the client or of the NameServers, and sees a shrink before
// the removed peer goes. A broker reading the brokers subgroup learns of a
// new peer before clients are sent to it.
func TestAddressServerRefresh(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	// Longer than the kubelet takes to refresh a mounted ConfigMap (its
	// sync period, 10 s on the box's node, and up to half again), so that
	// every address server serves the shrunk list while the removed peer
	// still runs.
	const drain = 45
	c := applyCluster(ctx, t, "addr", clusterSpec{replicas: 2, drain: drain})
	d, err := addressData(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	domain, subgroup := d[v1alpha1.ClientAddressServerDomainKey], d[v1alpha1.ClientAddressServerSubGroupKey]
	if domain != fmt.Sprintf("%s.%s.svc.cluster.local:%d", c.name, c.ns, httpPort) || subgroup != v1alpha1.AddressServerSubGroup {
		t.Fatalf("address server %q, subgroup %q", domain, subgroup)
	}
	b := startBroker(ctx, t, c)
	before := map[string]peerProcess{}
	for i := range 2 {
		before[c.pod(i)] = processOf(t, getPeerPod(ctx, t, c, i))
	}

	// The client is pointed at each ready endpoint of the domain's Service
	// rather than at the Service, which kube-proxy balances over them:
	// every one must serve the same list.
	resolvers := map[string]*primitive.HttpResolver{}
	addResolvers := func(t *testing.T, n int) {
		t.Helper()
		var eps []string
		eventually(t, podTimeout, func() (bool, string) {
			eps = serviceEndpoints(ctx, t, c.ns, c.name, "http")
			return len(eps) == n, fmt.Sprintf("ready endpoints of Service %s: %v, want %d", c.name, eps, n)
		})
		for _, ep := range eps {
			if resolvers[ep] == nil {
				url := fmt.Sprintf("http://%s/rocketmq/%s", ep, subgroup)
				resolvers[ep] = primitive.NewHttpResolver(subgroup, url)
				t.Cleanup(func() { removeSnapshot(t, url) })
			}
		}
	}
	expectList := func(t *testing.T, want []string) {
		t.Helper()
		for ep, r := range resolvers {
			eventually(t, refreshTimeout, func() (bool, string) {
				got := r.Resolve()
				return slices.Equal(got, want), fmt.Sprintf("address server at %s: %v, want %v", ep, got, want)
			})
		}
	}
	addResolvers(t, 2)
	expectList(t, c.peers(2))

	brokers := map[string]*primitive.HttpResolver{}
	for ep := range resolvers {
		url := fmt.Sprintf("http://%s/rocketmq/%s", ep, v1alpha1.BrokerAddressServerSubGroup)
		brokers[ep] = primitive.NewHttpResolver(v1alpha1.BrokerAddressServerSubGroup, url)
		t.Cleanup(func() { removeSnapshot(t, url) })
	}
	kubectl(ctx, t, "scale", "-n", c.ns, "nameservercluster/"+c.name, "--replicas=3")
	for ep, r := range brokers {
		eventually(t, refreshTimeout, func() (bool, string) {
			got := r.Resolve()
			return slices.Equal(got, c.peers(3)), fmt.Sprintf("brokers subgroup at %s: %v, want %v", ep, got, c.peers(3))
		})
	}
	expectList(t, c.peers(3))
	waitPublished(ctx, t, c, 3)
	addResolvers(t, 3)
	expectList(t, c.peers(3))
	// What the client does with its new list: it gets routes from each peer.
	b.waitRegistered(t, c.peers(3), time.Time{})
	eventuallyRoutes(ctx, t, c.peers(3))

	kubectl(ctx, t, "scale", "-n", c.ns, "nameservercluster/"+c.name, "--replicas=2")
	expectList(t, c.peers(2))
	if p := getPeerPod(ctx, t, c, 2); p.DeletionTimestamp != nil || !podReady(&p) {
		t.Errorf("%s was already going when every address server served the shrunk list; the drain is %ds", p.Name, drain)
	}

	for i := range 2 {
		now := processOf(t, getPeerPod(ctx, t, c, i))
		if was := before[c.pod(i)]; now != was {
			t.Errorf("%s restarted while the list changed: %+v -> %+v", c.pod(i), was, now)
		}
	}
}

// serviceEndpoints are the ready ip:port endpoints of a Service's named port.
func serviceEndpoints(ctx context.Context, t *testing.T, ns, svc, port string) []string {
	t.Helper()
	l, err := cl.Clientset.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range l.Items {
		for _, p := range s.Ports {
			if p.Name == nil || *p.Name != port || p.Port == nil {
				continue
			}
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					for _, a := range e.Addresses {
						out = append(out, net.JoinHostPort(a, fmt.Sprint(*p.Port)))
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// removeSnapshot deletes the file where rocketmq-client-go's HttpResolver
// keeps the last list it fetched from url (its fallback when the address
// server is unreachable), so that the run leaves nothing behind.
func removeSnapshot(t *testing.T, url string) {
	u, err := user.Current()
	if err != nil {
		t.Errorf("locating rocketmq-client-go's snapshot: %v", err)
		return
	}
	sum := md5.Sum([]byte(url))
	dir := filepath.Join(u.HomeDir, "logs", "rocketmq-go", "snapshot")
	if err := os.Remove(filepath.Join(dir, "nameserver_addr-"+hex.EncodeToString(sum[:]))); err != nil && !os.IsNotExist(err) {
		t.Errorf("removing rocketmq-client-go's snapshot: %v", err)
	}
	// The directories too, if the client created them and nothing else
	// lives there.
	for d := dir; d != u.HomeDir; d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			break
		}
	}
}

// namesrvConfig asks a NameServer for its effective properties
// (GET_NAMESRV_CONFIG, what `mqadmin getNamesrvConfig` sends).
func namesrvConfig(ctx context.Context, t *testing.T, ip string) map[string]string {
	t.Helper()
	return namesrvConfigOver(ctx, t, ip, nil)
}

// namesrvConfigOver is namesrvConfig over TLS with cfg when it is set.
func namesrvConfigOver(ctx context.Context, t *testing.T, ip string, cfg *tls.Config) map[string]string {
	t.Helper()
	resp, err := invoke(ctx, net.JoinHostPort(ip, fmt.Sprint(remotingPort)), cfg, protocol.GetNamesrvConfig)
	if err != nil || resp.Code != 0 {
		t.Fatalf("GET_NAMESRV_CONFIG from %s: %v %+v", ip, err, resp)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(resp.Body), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			out[k] = v
		}
	}
	return out
}

// TestDeleteRemovesEverything: deleting a NameServerCluster with kubectl
// removes every object it created, in its namespace and in a target
// namespace, every NameServer process and every published DNS name.
func TestDeleteRemovesEverything(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	home := createNamespace(ctx, t, "nsc-")
	target := acceptingNamespace(ctx, t, "brokers-", home+"/gone")
	c := applyClusterIn(ctx, t, home, "gone", clusterSpec{replicas: 3, drain: 2, targets: []string{target}})
	eventually(t, answerTimeout, func() (bool, string) {
		cm, err := cl.Clientset.CoreV1().ConfigMaps(target).Get(ctx, c.addressConfigMap(), metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cm.Data[v1alpha1.NamesrvAddrKey] == strings.Join(c.peers(3), ";"), fmt.Sprintf("copy in %s: %v", target, cm.Data)
	})
	running := namesrvContainers(ctx, t, c.ns)
	if len(running) != 3 {
		t.Fatalf("NameServer containers of the cluster before the delete: %+v, want 3", running)
	}
	dyn, err := dynamic.NewForConfig(cl.Config)
	if err != nil {
		t.Fatal(err)
	}
	if left := objectsOf(ctx, t, dyn, c, c.ns, target); len(left) < 8 {
		t.Fatalf("only %d objects of the cluster found before the delete, the sweep misses some: %v", len(left), left)
	}

	kubectl(ctx, t, "delete", "-n", c.ns, "nameservercluster/"+c.name, "--wait=true", "--timeout=90s")
	assertAllGone(ctx, t, dyn, c, running, c.ns, target)
}

// TestDeleteWhileScaling: a NameServerCluster deleted in the middle of a
// scale-down, while removed peers drain, or of a scale-up, while new peers
// start and are not yet published, leaves no object and no NameServer
// process behind. The garbage collector deletes the children; the operator
// must not recreate any of them once the delete has begun, nor keep a copy
// of the list in another namespace.
func TestDeleteWhileScaling(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	dyn, err := dynamic.NewForConfig(cl.Config)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("down", func(t *testing.T) {
		home := createNamespace(ctx, t, "nsc-")
		target := acceptingNamespace(ctx, t, "brokers-", home+"/down")
		// A drain far longer than the test: the removed peers still run
		// when the cluster goes.
		c := applyClusterIn(ctx, t, home, "down", clusterSpec{replicas: 3, drain: 600, targets: []string{target}})
		kubectl(ctx, t, "scale", "-n", c.ns, "nameservercluster/"+c.name, "--replicas=1")
		eventually(t, answerTimeout, func() (bool, string) {
			got, err := published(ctx, c)
			if err != nil {
				return false, err.Error()
			}
			st, err := clusterStatus(ctx, c)
			return err == nil && slices.Equal(got, c.peers(1)) && st.DrainStartTime != nil,
				fmt.Sprintf("published %v, drain started %v (%v)", got, st.DrainStartTime, err)
		})
		running := namesrvContainers(ctx, t, c.ns)
		if len(running) != 3 {
			t.Fatalf("NameServer containers while draining: %+v, want the kept one and the two draining", running)
		}
		// Foreground: the cluster stays, being deleted, until the garbage
		// collector has deleted its children, so a reconcile that recreated
		// one would keep it forever.
		kubectl(ctx, t, "delete", "-n", c.ns, "nameservercluster/"+c.name, "--cascade=foreground", "--wait=true", "--timeout=90s")
		assertAllGone(ctx, t, dyn, c, running, c.ns, target)
	})

	t.Run("up", func(t *testing.T) {
		// New peers stay unready for their warm-up, which is when the
		// cluster is deleted.
		c := applyCluster(ctx, t, "up", clusterSpec{replicas: 2, drain: 2, config: map[string]string{"waitSecondsForService": "3"}})
		kubectl(ctx, t, "scale", "-n", c.ns, "nameservercluster/"+c.name, "--replicas=4")
		var running []box.Container
		eventually(t, podTimeout, func() (bool, string) {
			running = namesrvContainers(ctx, t, c.ns)
			return len(running) == 4, fmt.Sprintf("NameServer containers %+v, want 4", running)
		})
		if got, err := published(ctx, c); err != nil || !slices.Equal(got, c.peers(2)) {
			t.Fatalf("published %v (%v) when the new peers started; want the first two only, the scale-up in progress", got, err)
		}
		// Background, kubectl's default: the cluster goes at once and the
		// garbage collector deletes its children afterwards.
		kubectl(ctx, t, "delete", "-n", c.ns, "nameservercluster/"+c.name, "--wait=true", "--timeout=90s")
		assertAllGone(ctx, t, dyn, c, running, c.ns)
	})
}

// assertAllGone waits until no object of the cluster is left in the given
// namespaces, then checks that none of its NameServer containers runs (those
// seen before, and any other of its namespace) and that its per-pod names no
// longer resolve.
func assertAllGone(ctx context.Context, t *testing.T, dyn dynamic.Interface, c nsc, seen []box.Container, namespaces ...string) {
	t.Helper()
	eventually(t, podTimeout, func() (bool, string) {
		left := objectsOf(ctx, t, dyn, c, namespaces...)
		return len(left) == 0, fmt.Sprintf("objects left: %v", left)
	})
	eventually(t, podTimeout, func() (bool, string) {
		left := namesrvContainers(ctx, t, c.ns)
		return len(left) == 0, fmt.Sprintf("NameServer containers of %s still running: %+v", c.ns, left)
	})
	for _, ct := range seen {
		assertGone(t, ct.PID)
	}
	for i := range len(seen) + 1 {
		if addr, err := resolve(c.peer(i)); err == nil {
			t.Errorf("%s still resolves, to %s", c.peer(i), addr)
		}
	}
}

// objectsOf lists every object, of every namespaced kind the API server
// serves, in the given namespaces that belongs to the cluster: labelled
// with its instance or owned by it. Events are not swept: they are records
// about objects, which Kubernetes expires by age.
func objectsOf(ctx context.Context, t *testing.T, dyn dynamic.Interface, c nsc, namespaces ...string) []string {
	t.Helper()
	lists, err := cl.Clientset.Discovery().ServerPreferredNamespacedResources()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			if !slices.Contains(r.Verbs, "list") || r.Name == "events" {
				continue
			}
			for _, ns := range namespaces {
				items, err := dyn.Resource(gv.WithResource(r.Name)).Namespace(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatalf("listing %s in %s: %v", r.Name, ns, err)
				}
				for _, o := range items.Items {
					owned := slices.ContainsFunc(o.GetOwnerReferences(), func(ref metav1.OwnerReference) bool {
						return ref.Kind == "NameServerCluster" && ref.Name == c.name
					})
					isCluster := r.Kind == "NameServerCluster" && o.GetName() == c.name
					if owned || isCluster || o.GetLabels()["app.kubernetes.io/instance"] == c.name {
						out = append(out, fmt.Sprintf("%s %s/%s", r.Kind, ns, o.GetName()))
					}
				}
			}
		}
	}
	return out
}
