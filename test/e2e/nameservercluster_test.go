//go:build e2e

package e2e

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := applyCluster(ctx, t, "trio", clusterSpec{replicas: 3, drain: 2})

	pods, err := peerPods(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	var ips []string
	for _, p := range pods {
		proc := processOf(t, p)
		assertNamesrvProcess(t, proc.pid)
		if body := mustGet(ctx, t, fmt.Sprintf("http://%s/readyz", net.JoinHostPort(proc.ip, fmt.Sprint(httpPort)))); body != "ok\n" {
			t.Errorf("%s /readyz = %q", p.Name, body)
		}
		ips = append(ips, net.JoinHostPort(proc.ip, fmt.Sprint(remotingPort)))
	}

	d, err := addressData(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		v1alpha1.NamesrvAddrKey:               strings.Join(c.peers(3), ";"),
		v1alpha1.NamesrvAddrEnvKey:            strings.Join(c.peers(3), ";"),
		v1alpha1.NamesrvAddrIPsKey:            strings.Join(ips, ";"),
		v1alpha1.AddressServerDomainKey:       fmt.Sprintf("%s.%s.svc.cluster.local:%d", c.name, c.ns, httpPort),
		v1alpha1.ClientAddressServerDomainKey: fmt.Sprintf("%s.%s.svc.cluster.local:%d", c.name, c.ns, httpPort),
		v1alpha1.AddressServerSubGroupKey:     v1alpha1.AddressServerSubGroup,
	}
	for k, v := range want {
		if d[k] != v {
			t.Errorf("address ConfigMap %s = %q, want %q", k, d[k], v)
		}
	}

	// With the system's resolver, as any process in the box would; Go
	// re-reads the hosts file at most every 5s.
	for i, p := range pods {
		host, _, _ := net.SplitHostPort(c.peer(i))
		eventually(t, 10*time.Second, func() (bool, string) {
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
	for _, cond := range []string{v1alpha1.ConditionAvailable, v1alpha1.ConditionAddressesPublished} {
		if !meta.IsStatusConditionTrue(st.Conditions, cond) {
			t.Errorf("condition %s is not True: %+v", cond, st.Conditions)
		}
	}
}

// TestScale: scaling to 5 publishes each new peer only once it is Ready and
// the broker registers with it; scaling to 2 shrinks the list before the
// pods go. Throughout both, a client reading the published list queries
// every listed peer every 100ms.
//
// What counts as a failed route query. Any error reaching a listed peer (a
// name that does not resolve, a refused or broken connection) fails: new
// peers are published only once Ready, removed ones run on for the drain
// period. A peer that answers TOPIC_NOT_EXIST fails too, with one
// exception: a peer the broker has not registered with yet. A NameServer
// learns routes only from broker heartbeats, so a peer that has just been
// published is empty until the broker's next round (30s in production, 1s
// here); no publication rule can avoid that, and real clients keep their
// cached route when a NameServer answers so. That exception is exact, not
// a time window: a query counts as excused only if it was sent before the
// broker had received that peer's answer to a registration, and the test
// also checks that the broker registered with each new peer within two of
// its rounds.
func TestScale(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const drain = 2
	c := applyCluster(ctx, t, "scale", clusterSpec{replicas: 3, drain: drain})
	since := time.Now()
	b := startBroker(ctx, t, c)
	b.waitRegistered(t, c.peers(3), since)
	pods := recordPods(ctx, t, c.ns, c.selector())
	lists := recordConfigMap(ctx, t, c.ns, c.addressConfigMap())
	stopClient := watchRoutes(ctx, t, c, b)

	ok := t.Run("up", func(t *testing.T) {
		up := time.Now()
		kubectl(ctx, t, "scale", "-n", c.ns, "nameservercluster/"+c.name, "--replicas=5")
		waitPublished(ctx, t, c, 5)
		b.waitRegistered(t, c.peers(5), up)
		for _, i := range []int{3, 4} {
			published := firstListWith(lists.all(), c.peer(i))
			ready := pods.first(0, func(e podEvent) bool { return e.pod.Name == c.pod(i) && podReady(e.pod) })
			if published == nil || ready < 0 {
				t.Fatalf("%s: published %v, Ready event %d", c.pod(i), published != nil, ready)
			}
			if readyRV, pubRV := revision(t, pods.at(ready).ResourceVersion), revision(t, published.rv); readyRV >= pubRV {
				t.Errorf("%s was published (revision %d) before it was Ready (revision %d)", c.peer(i), pubRV, readyRV)
			}
			first, ok := b.firstRegistration(c.peer(i))
			if !ok {
				t.Errorf("the broker never registered with %s", c.peer(i))
			} else if lag := first.Sub(published.at); lag > 2*brokerPeriod {
				t.Errorf("the broker registered with %s %v after it was published, more than two rounds", c.peer(i), round(lag))
			}
		}
		assertListsArePrefixes(t, c, lists.all())
		eventuallyRoutes(ctx, t, c.peers(5))
	})
	if !ok {
		t.FailNow()
	}

	t.Run("down", func(t *testing.T) {
		var pids []int
		for i := 2; i < 5; i++ {
			pids = append(pids, processOf(t, getPeerPod(ctx, t, c, i)).pid)
		}
		mark := pods.len()
		kubectl(ctx, t, "scale", "-n", c.ns, "nameservercluster/"+c.name, "--replicas=2")
		eventually(t, 30*time.Second, func() (bool, string) {
			ps, err := peerPods(ctx, c)
			if err != nil {
				return false, err.Error()
			}
			return len(ps) == 2, fmt.Sprintf("pods %v", podNames(ps))
		})
		waitPublished(ctx, t, c, 2)
		shrunk := firstListOfLength(lists.all(), 2)
		goes := pods.first(mark, func(e podEvent) bool { return ordinal(e.pod.Name) >= 2 && e.pod.DeletionTimestamp != nil })
		if shrunk == nil || goes < 0 {
			t.Fatalf("list of 2 seen: %v; a pod terminating seen: %v", shrunk != nil, goes >= 0)
		}
		first := pods.at(goes)
		if goes, shrank := revision(t, first.ResourceVersion), revision(t, shrunk.rv); goes <= shrank {
			t.Errorf("%s began terminating (revision %d) before the list shrank (revision %d)", first.Name, goes, shrank)
		}
		if gap := pods.seenAt(goes).Sub(shrunk.at); gap < drain*time.Second-100*time.Millisecond {
			t.Errorf("%s began terminating %v after the list shrank; the drain is %ds", first.Name, round(gap), drain)
		}
		for _, pid := range pids {
			assertGone(t, pid)
		}
		assertListsArePrefixes(t, c, lists.all())
	})

	rounds := stopClient()
	judgeScaleRounds(t, c, rounds)
	if u := b.unresolved(); len(u) > 0 {
		t.Errorf("published names that did not resolve for the broker: %v", u)
	}
}

// judgeScaleRounds applies TestScale's definition of a failed route query.
func judgeScaleRounds(t *testing.T, c nsc, rounds []routeRound) {
	t.Helper()
	var failures []string
	excused := map[string]int{}
	queried := map[string]bool{}
	queries := 0
	for _, r := range rounds {
		for _, o := range r.obs {
			queries++
			queried[o.addr] = true
			switch {
			case o.err == nil:
			case isTopicNotExist(o.err) && !o.registered:
				excused[o.addr]++
			default:
				failures = append(failures, fmt.Sprintf("%s %s: %v (broker registered before: %v)", o.at.Format(time.StampMilli), o.addr, o.err, o.registered))
			}
		}
	}
	t.Logf("client: %d rounds, %d route queries, %d peers queried; excused TOPIC_NOT_EXIST before the broker's first registration: %v",
		len(rounds), queries, len(queried), excused)
	if len(queried) != 5 || len(rounds) < 20 {
		t.Errorf("the client queried %d distinct peers in %d rounds; want all 5 peers over at least 20 rounds", len(queried), len(rounds))
	}
	for a := range excused {
		if a != c.peer(3) && a != c.peer(4) {
			t.Errorf("%s, published before the scale, answered TOPIC_NOT_EXIST before the broker's registration was seen", a)
		}
	}
	if len(failures) > 0 {
		t.Errorf("%d failed route queries from listed peers, first ones:\n%s", len(failures), strings.Join(failures[:min(len(failures), 10)], "\n"))
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

func firstListOfLength(vs []configMapVersion, n int) *configMapVersion {
	for i := range vs {
		if len(splitList(vs[i].data[v1alpha1.NamesrvAddrKey])) == n {
			return &vs[i]
		}
	}
	return nil
}

// assertListsArePrefixes checks that every published list was ordinals 0..n-1
// in order: peers join in order and never leave a gap.
func assertListsArePrefixes(t *testing.T, c nsc, vs []configMapVersion) {
	t.Helper()
	for _, v := range vs {
		l := splitList(v.data[v1alpha1.NamesrvAddrKey])
		if !slices.Equal(l, c.peers(len(l))) {
			t.Errorf("published list (revision %s) %v is not ordinals 0..%d", v.rv, l, len(l)-1)
		}
		if v.data[v1alpha1.NamesrvAddrEnvKey] != v.data[v1alpha1.NamesrvAddrKey] {
			t.Errorf("revision %s: NAMESRV_ADDR %q differs from namesrvAddr %q", v.rv, v.data[v1alpha1.NamesrvAddrEnvKey], v.data[v1alpha1.NamesrvAddrKey])
		}
	}
}

// TestAddressServerRefresh: a client that resolves the NameServer list
// through the address server (rocketmq-client-go's HttpResolver, the Go
// twin of Java's rocketmq.namesrv.domain) sees each new list without any
// restart, of the client or of the NameServers, and sees a shrink before
// the removed peer goes.
func TestAddressServerRefresh(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const drain = 4
	c := applyCluster(ctx, t, "addr", clusterSpec{replicas: 2, drain: drain})
	d, err := addressData(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	domain, subgroup := d[v1alpha1.ClientAddressServerDomainKey], d[v1alpha1.AddressServerSubGroupKey]
	if domain != fmt.Sprintf("%s.%s.svc.cluster.local:%d", c.name, c.ns, httpPort) || subgroup != v1alpha1.AddressServerSubGroup {
		t.Fatalf("address server %q, subgroup %q", domain, subgroup)
	}
	b := startBroker(ctx, t, c)
	before := map[string]peerProcess{}
	for i := range 2 {
		before[c.pod(i)] = processOf(t, getPeerPod(ctx, t, c, i))
	}

	// The box has no Service addresses (no kube-proxy), so the client is
	// pointed at each ready endpoint of the domain's Service, which is where
	// kube-proxy would send it; every one must serve the same list.
	resolvers := map[string]*primitive.HttpResolver{}
	addResolvers := func(t *testing.T, n int) {
		t.Helper()
		var eps []string
		eventually(t, 10*time.Second, func() (bool, string) {
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
			eventually(t, 10*time.Second, func() (bool, string) {
				got := r.Resolve()
				return slices.Equal(got, want), fmt.Sprintf("address server at %s: %v, want %v", ep, got, want)
			})
		}
	}
	addResolvers(t, 2)
	expectList(t, c.peers(2))

	kubectl(ctx, t, "scale", "-n", c.ns, "nameservercluster/"+c.name, "--replicas=3")
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

// TestKilledPeerRestarts: a NameServer process killed with SIGKILL is
// restarted in the same pod, the broker registers with it again, and the
// published list stays exactly the same.
func TestKilledPeerRestarts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := applyCluster(ctx, t, "kill", clusterSpec{replicas: 3, drain: 2})
	since := time.Now()
	b := startBroker(ctx, t, c)
	b.waitRegistered(t, c.peers(3), since)
	lists := recordConfigMap(ctx, t, c.ns, c.addressConfigMap())
	statusBefore, err := clusterStatus(ctx, c)
	if err != nil {
		t.Fatal(err)
	}

	before := processOf(t, getPeerPod(ctx, t, c, 1))
	killed := time.Now()
	if err := syscall.Kill(before.pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s (pid %d): %v", c.pod(1), before.pid, err)
	}
	var p corev1.Pod
	eventually(t, 15*time.Second, func() (bool, string) {
		p = getPeerPod(ctx, t, c, 1)
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount == 1 && podReady(&p), fmt.Sprintf("%s: %+v", p.Name, cs)
	})
	after := processOf(t, p)
	if after.uid != before.uid || after.ip != before.ip || after.pid == before.pid {
		t.Errorf("want a new process in the same pod at the same address: %+v -> %+v", before, after)
	}
	if last := p.Status.ContainerStatuses[0].LastTerminationState.Terminated; last == nil || last.ExitCode != 137 {
		t.Errorf("last state %+v, want exit code 137 (SIGKILL)", p.Status.ContainerStatuses[0].LastTerminationState)
	}
	assertGone(t, before.pid)
	assertNamesrvProcess(t, after.pid)

	// The new process started empty; it holds the route again only
	// because the broker registered with it again.
	b.waitRegistered(t, []string{c.peer(1)}, killed)
	ip, err := resolve(c.peer(1))
	if err == nil {
		err = queryRoute(ctx, ip)
	}
	if err != nil {
		t.Errorf("route from the restarted %s: %v", c.peer(1), err)
	}

	want := strings.Join(c.peers(3), ";")
	vs := lists.all()
	if len(vs) == 0 {
		t.Fatal("the address ConfigMap watch saw no version at all")
	}
	for _, v := range vs {
		if v.data[v1alpha1.NamesrvAddrKey] != want || v.data[v1alpha1.NamesrvAddrEnvKey] != want {
			t.Errorf("the published list changed during the restart (revision %s): %q", v.rv, v.data[v1alpha1.NamesrvAddrKey])
		}
	}
	st, err := clusterStatus(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if st.NamesrvAddr != statusBefore.NamesrvAddr || st.PublishedReplicas != statusBefore.PublishedReplicas {
		t.Errorf("status list changed: %q (%d) -> %q (%d)", statusBefore.NamesrvAddr, statusBefore.PublishedReplicas, st.NamesrvAddr, st.PublishedReplicas)
	}
	t.Logf("address ConfigMap versions during the restart: %d (namesrvAddrIPs lists ready peers only)", len(vs))
}

// TestConfigChangeRollsPeers: a change of spec.config rolls the peers one at
// a time, highest ordinal first, each new process runs the new config, and
// a client reading the published list gets the route from all listed peers
// but the one being rolled at every moment of the roll.
//
// A restarted NameServer is empty until the broker's next heartbeat, so a
// roll that moves on as soon as a peer is Ready can stop the last peer that
// still holds the route. Before the operator rendered a warm-up by default
// it did: peers were Ready in well under a second here (all three restarted
// within 0.9 s, less than one 1 s heartbeat), and in about one run in eight
// a client found no listed peer serving the route for 200 ms; with real
// brokers' 30 s heartbeat nearly every roll would have emptied all peers.
// The operator now renders Java's needWaitForService: a restarted peer
// refuses route queries and stays unready for waitSecondsForService, longer
// than a heartbeat, which paces the roll. This scenario keeps that default
// and sets the wait to three of its brokers' heartbeats.
func TestConfigChangeRollsPeers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const (
		key    = "scanNotActiveBrokerInterval"
		warmUp = 3 * brokerPeriod
	)
	c := applyCluster(ctx, t, "roll", clusterSpec{replicas: 3, drain: 2, config: map[string]string{
		key:                     "5000",
		"waitSecondsForService": fmt.Sprint(int(warmUp.Seconds())),
	}})
	since := time.Now()
	b := startBroker(ctx, t, c)
	b.waitRegistered(t, c.peers(3), since)
	pods := recordPods(ctx, t, c.ns, c.selector())
	before := map[int]peerProcess{}
	for i := range 3 {
		before[i] = processOf(t, getPeerPod(ctx, t, c, i))
	}
	stopClient := watchRoutes(ctx, t, c, b)

	mark := pods.len()
	kubectl(ctx, t, "patch", "-n", c.ns, "nameservercluster/"+c.name, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"config":{%q:"6000"}}}`, key))
	eventually(t, 30*time.Second, func() (bool, string) {
		ps, err := peerPods(ctx, c)
		if err != nil {
			return false, err.Error()
		}
		replaced := 0
		for _, p := range ps {
			if string(p.UID) != before[ordinal(p.Name)].uid && podReady(&p) && p.DeletionTimestamp == nil {
				replaced++
			}
		}
		return len(ps) == 3 && replaced == 3, fmt.Sprintf("%d of %d pods replaced and Ready", replaced, len(ps))
	})
	rolled := time.Now()
	rounds := stopClient()

	// Order, read off one watch: pod i begins terminating only after the
	// new pod i+1 is Ready, which the warm-up delays.
	terminating := func(i int) int {
		return pods.first(mark, func(e podEvent) bool {
			return e.pod.Name == c.pod(i) && string(e.pod.UID) == before[i].uid && e.pod.DeletionTimestamp != nil
		})
	}
	newReady := func(i int) int {
		return pods.first(mark, func(e podEvent) bool {
			return e.pod.Name == c.pod(i) && string(e.pod.UID) != before[i].uid && podReady(e.pod)
		})
	}
	for i := 1; i >= 0; i-- {
		term, ready, prev := terminating(i), newReady(i+1), terminating(i+1)
		if term < 0 || ready < 0 || prev < 0 || term < ready {
			t.Errorf("%s began terminating (event %d) before the new %s was Ready (event %d)", c.pod(i), term, c.pod(i+1), ready)
			continue
		}
		if gap := pods.seenAt(term).Sub(pods.seenAt(prev)); gap < warmUp {
			t.Errorf("%s began terminating %v after %s; the warm-up is %v", c.pod(i), round(gap), c.pod(i+1), warmUp)
		}
	}

	want := strings.Join(c.peers(3), ";")
	minServing := 3
	for _, r := range rounds {
		if strings.Join(r.list, ";") != want {
			t.Errorf("%s: the published list changed during the roll: %v", r.at.Format(time.StampMilli), r.list)
		}
		minServing = min(minServing, r.serving())
		if r.serving() < 2 {
			var errs []string
			for _, o := range r.obs {
				errs = append(errs, fmt.Sprintf("%s: %v", o.addr, o.err))
			}
			t.Errorf("%s: %d of 3 listed peers served the route: %s", r.at.Format(time.StampMilli), r.serving(), strings.Join(errs, "; "))
		}
	}
	t.Logf("client: %d rounds during the roll; fewest peers serving the route in a round: %d", len(rounds), minServing)
	if len(rounds) < 5 {
		t.Errorf("only %d client rounds during the roll", len(rounds))
	}

	b.waitRegistered(t, c.peers(3), rolled)
	for i := range 3 {
		p := getPeerPod(ctx, t, c, i)
		proc := processOf(t, p)
		assertNamesrvProcess(t, proc.pid)
		assertGone(t, before[i].pid)
		if v := namesrvConfig(ctx, t, proc.ip)[key]; v != "6000" {
			t.Errorf("%s runs with %s=%q, want 6000", p.Name, key, v)
		}
		ip, err := resolve(c.peer(i))
		if err == nil {
			err = queryRoute(ctx, ip)
		}
		if err != nil {
			t.Errorf("route from %s after the roll: %v", c.peer(i), err)
		}
	}
}

// namesrvConfig asks a NameServer for its effective properties
// (GET_NAMESRV_CONFIG, what `mqadmin getNamesrvConfig` sends).
func namesrvConfig(ctx context.Context, t *testing.T, ip string) map[string]string {
	t.Helper()
	rc, err := remotingclient.Dial(ctx, net.JoinHostPort(ip, fmt.Sprint(remotingPort)), remotingclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	resp, err := rc.Invoke(ctx, &remotingclient.Request{Code: protocol.GetNamesrvConfig})
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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	target := createNamespace(ctx, t, "brokers-")
	c := applyCluster(ctx, t, "gone", clusterSpec{replicas: 3, drain: 2, targets: []string{target}})
	eventually(t, 10*time.Second, func() (bool, string) {
		cm, err := cl.Clientset.CoreV1().ConfigMaps(target).Get(ctx, c.addressConfigMap(), metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cm.Data[v1alpha1.NamesrvAddrKey] == strings.Join(c.peers(3), ";"), fmt.Sprintf("copy in %s: %v", target, cm.Data)
	})
	pids := namesrvProcesses(t, c.ns)
	if len(pids) != 3 {
		t.Fatalf("NameServer processes of the cluster before the delete: %v, want 3", pids)
	}
	dyn, err := dynamic.NewForConfig(cl.Config)
	if err != nil {
		t.Fatal(err)
	}
	if left := objectsOf(ctx, t, dyn, c, c.ns, target); len(left) < 8 {
		t.Fatalf("only %d objects of the cluster found before the delete, the sweep misses some: %v", len(left), left)
	}

	kubectl(ctx, t, "delete", "-n", c.ns, "nameservercluster/"+c.name, "--wait=true", "--timeout=30s")
	assertAllGone(ctx, t, dyn, c, pids, c.ns, target)
}

// TestDeleteWhileScaling: a NameServerCluster deleted in the middle of a
// scale-down, while removed peers drain, or of a scale-up, while new peers
// start and are not yet published, leaves no object and no NameServer
// process behind. The garbage collector deletes the children; the operator
// must not recreate any of them once the delete has begun, nor keep a copy
// of the list in another namespace.
func TestDeleteWhileScaling(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dyn, err := dynamic.NewForConfig(cl.Config)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("down", func(t *testing.T) {
		target := createNamespace(ctx, t, "brokers-")
		// A drain far longer than the test: the removed peers still run
		// when the cluster goes.
		c := applyCluster(ctx, t, "down", clusterSpec{replicas: 3, drain: 600, targets: []string{target}})
		kubectl(ctx, t, "scale", "-n", c.ns, "nameservercluster/"+c.name, "--replicas=1")
		eventually(t, 10*time.Second, func() (bool, string) {
			got, err := published(ctx, c)
			if err != nil {
				return false, err.Error()
			}
			st, err := clusterStatus(ctx, c)
			return err == nil && slices.Equal(got, c.peers(1)) && st.DrainStartTime != nil,
				fmt.Sprintf("published %v, drain started %v (%v)", got, st.DrainStartTime, err)
		})
		pids := namesrvProcesses(t, c.ns)
		if len(pids) != 3 {
			t.Fatalf("NameServer processes while draining: %v, want the kept one and the two draining", pids)
		}
		// Foreground: the cluster stays, being deleted, until the garbage
		// collector has deleted its children, so a reconcile that recreated
		// one would keep it forever.
		kubectl(ctx, t, "delete", "-n", c.ns, "nameservercluster/"+c.name, "--cascade=foreground", "--wait=true", "--timeout=30s")
		assertAllGone(ctx, t, dyn, c, pids, c.ns, target)
	})

	t.Run("up", func(t *testing.T) {
		// New peers stay unready for their warm-up, which is when the
		// cluster is deleted.
		c := applyCluster(ctx, t, "up", clusterSpec{replicas: 2, drain: 2, config: map[string]string{"waitSecondsForService": "3"}})
		kubectl(ctx, t, "scale", "-n", c.ns, "nameservercluster/"+c.name, "--replicas=4")
		var pids []int
		eventually(t, 10*time.Second, func() (bool, string) {
			pids = namesrvProcesses(t, c.ns)
			return len(pids) == 4, fmt.Sprintf("NameServer processes %v, want 4", pids)
		})
		if got, err := published(ctx, c); err != nil || !slices.Equal(got, c.peers(2)) {
			t.Fatalf("published %v (%v) when the new peers started; want the first two only, the scale-up in progress", got, err)
		}
		// Background, kubectl's default: the cluster goes at once and the
		// garbage collector deletes its children afterwards.
		kubectl(ctx, t, "delete", "-n", c.ns, "nameservercluster/"+c.name, "--wait=true", "--timeout=30s")
		assertAllGone(ctx, t, dyn, c, pids, c.ns)
	})
}

// assertAllGone waits until no object of the cluster is left in the given
// namespaces, then checks that none of its NameServer processes runs and
// that its per-pod names no longer resolve.
func assertAllGone(ctx context.Context, t *testing.T, dyn dynamic.Interface, c nsc, pids []int, namespaces ...string) {
	t.Helper()
	eventually(t, 30*time.Second, func() (bool, string) {
		left := objectsOf(ctx, t, dyn, c, namespaces...)
		return len(left) == 0, fmt.Sprintf("objects left: %v", left)
	})
	for _, pid := range pids {
		assertGone(t, pid)
	}
	if left := namesrvProcesses(t, c.ns); len(left) > 0 {
		t.Errorf("NameServer processes of %s still running: %v", c.ns, left)
	}
	hosts, err := os.ReadFile(box.HostsFile)
	if err != nil {
		t.Fatal(err)
	}
	if suffix := fmt.Sprintf(".%s-headless.%s.svc", c.name, c.ns); strings.Contains(string(hosts), suffix) {
		t.Errorf("the hosts file still lists the cluster's names:\n%s", hosts)
	}
}

// namesrvProcesses lists the running processes of the namesrv binary that
// the kubelet started for pods of a namespace, which it runs in per-pod
// directories named <namespace>_<pod>_<uid>. Unlike the pids in pod
// statuses, this also finds processes of pods already deleted from the API.
func namesrvProcesses(t *testing.T, ns string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || exe != namesrvBin {
			continue
		}
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if err != nil {
			continue
		}
		if strings.HasPrefix(filepath.Base(cwd), ns+"_") {
			out = append(out, pid)
		}
	}
	return out
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
