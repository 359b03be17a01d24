//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
)

// These scenarios are route continuity as clients see it. In each, sticky
// clients (clients_test.go) ask the topic's route every 100 ms while the
// cluster changes, and the scenario ends with judgeClients: zero error
// answers, and only transport failures that a switch to another peer
// repairs at once.

// servingCluster creates a cluster, a broker registered with every peer, and
// waits until every peer serves the route; then it starts the clients.
func servingCluster(ctx context.Context, t *testing.T, name string, spec clusterSpec, clients int) (nsc, *broker, *clientFleet) {
	t.Helper()
	c := applyCluster(ctx, t, name, spec)
	since := time.Now()
	b := startBroker(ctx, t, c)
	b.waitRegistered(t, c.peers(spec.replicas), since)
	eventuallyRoutes(ctx, t, c.peers(spec.replicas))
	return c, b, startClients(ctx, t, c, clients)
}

// waitCondition waits until a condition of the cluster has a status and
// reason, and returns it.
func waitCondition(ctx context.Context, t *testing.T, c nsc, typ v1alpha1.ConditionType, status metav1.ConditionStatus, reason v1alpha1.ConditionReason, timeout time.Duration) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	eventually(t, timeout, func() (bool, string) {
		st, err := clusterStatus(ctx, c)
		if err != nil {
			return false, err.Error()
		}
		cond := v1alpha1.FindCondition(st.Conditions, typ)
		if cond == nil {
			return false, "no " + string(typ) + " condition"
		}
		got = *cond
		return cond.Status == status && cond.Reason == string(reason), fmt.Sprintf("%s = %s/%s: %s", typ, cond.Status, cond.Reason, cond.Message)
	})
	return got
}

// waitAllReplaced waits until every pod of the cluster is a new one, ready.
func waitAllReplaced(ctx context.Context, t *testing.T, c nsc, before map[int]peerProcess, n int, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, func() (bool, string) {
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
		return len(ps) == n && replaced == n, fmt.Sprintf("%d of %d pods replaced and Ready", replaced, len(ps))
	})
}

func processes(t *testing.T, ctx context.Context, c nsc, n int) map[int]peerProcess {
	t.Helper()
	out := map[int]peerProcess{}
	for i := range n {
		out[i] = processOf(t, getPeerPod(ctx, t, c, i))
	}
	return out
}

// TestScaleWithoutMisses: scale 3 → 5 → 2. Brokers learn of the new peers
// at once (broker list); clients only once the peers hold the broker's
// routes (client list); on the way down the client list shrinks first and
// the pods go after the drain. No client ever misses the route.
func TestScaleWithoutMisses(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	c, b, fleet := servingCluster(ctx, t, "scale", clusterSpec{replicas: 3, drain: 2}, 6)
	clientLists := recordConfigMap(ctx, t, c.ns, c.addressConfigMap())
	brokerLists := recordConfigMap(ctx, t, c.ns, c.brokerConfigMap())

	kubectl(ctx, t, "scale", "-n", c.ns, "nameservercluster/"+c.name, "--replicas=5")
	waitPublished(ctx, t, c, 5)
	for _, i := range []int{3, 4} {
		toBrokers := firstListWith(brokerLists.all(), c.peer(i))
		toClients := firstListWith(clientLists.all(), c.peer(i))
		registered, ok := b.firstRegistration(c.peer(i))
		if toBrokers == nil || toClients == nil || !ok {
			t.Fatalf("%s: in the broker list %v, in the client list %v, registered %v", c.peer(i), toBrokers != nil, toClients != nil, ok)
		}
		if revision(t, toBrokers.rv) >= revision(t, toClients.rv) {
			t.Errorf("%s reached clients (revision %s) no later than brokers (revision %s)", c.peer(i), toClients.rv, toBrokers.rv)
		}
		if !registered.Before(toClients.at) {
			t.Errorf("%s was sent to clients at %s, before the broker registered with it at %s", c.peer(i),
				toClients.at.Format(time.StampMilli), registered.Format(time.StampMilli))
		}
	}

	// New clients keep joining; before the scale-down, some have landed on
	// each new peer.
	for _, i := range []int{3, 4} {
		eventually(t, podTimeout, func() (bool, string) {
			return fleet.answers(c.peer(i)) > 0, "no client has been answered by " + c.peer(i) + " yet"
		})
	}
	kubectl(ctx, t, "scale", "-n", c.ns, "nameservercluster/"+c.name, "--replicas=2")
	waitPublished(ctx, t, c, 2)
	eventually(t, podTimeout, func() (bool, string) {
		ps, err := peerPods(ctx, c)
		return err == nil && len(ps) == 2, fmt.Sprintf("pods %v (%v)", podNames(ps), err)
	})
	judgeClients(t, fleet.stop(), c.peers(5)...)
}

// TestConfigRollWithoutMisses: a config change rolls every peer, one at a
// time, each only once the others serve; no client misses the route.
func TestConfigRollWithoutMisses(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	c, b, fleet := servingCluster(ctx, t, "roll", clusterSpec{replicas: 3, drain: 2, config: map[string]string{"scanNotActiveBrokerInterval": "5000"}}, 6)
	pods := recordPods(ctx, t, c.ns, c.selector())
	before := processes(t, ctx, c, 3)
	mark := pods.len()
	kubectl(ctx, t, "patch", "-n", c.ns, "nameservercluster/"+c.name, "--type=merge", "-p", `{"spec":{"config":{"scanNotActiveBrokerInterval":"6000"}}}`)
	waitAllReplaced(ctx, t, c, before, 3, rollTimeout)
	rolled := time.Now()

	assertOneAtATime(t, c, pods, mark, before)
	b.waitRegistered(t, c.peers(3), rolled)
	for i := range 3 {
		if v := namesrvConfig(ctx, t, processOf(t, getPeerPod(ctx, t, c, i)).ip)["scanNotActiveBrokerInterval"]; v != "6000" {
			t.Errorf("%s runs with scanNotActiveBrokerInterval=%q, want 6000", c.pod(i), v)
		}
	}
	judgeClients(t, fleet.stop(), c.peers(3)...)
}

// assertOneAtATime checks a roll read off one watch of the cluster's pods,
// from event mark on: a pod of the old set (before) begins terminating only
// once every other pod is ready.
func assertOneAtATime(t *testing.T, c nsc, pods *podRecorder, mark int, before map[int]peerProcess) {
	t.Helper()
	for i := mark; i < pods.len(); i++ {
		p := pods.at(i)
		if p.DeletionTimestamp == nil || string(p.UID) != before[ordinal(p.Name)].uid {
			continue
		}
		for j := range len(before) {
			if j == ordinal(p.Name) {
				continue
			}
			if last := lastBefore(pods, mark, i, c.pod(j)); last == nil || !podReady(last) {
				t.Errorf("%s began terminating while %s was not ready", p.Name, c.pod(j))
			}
		}
		i = pods.first(i+1, func(e podEvent) bool {
			return e.pod.Name == p.Name && string(e.pod.UID) != before[ordinal(p.Name)].uid && podReady(e.pod)
		})
		if i < 0 {
			break
		}
	}
}

// lastBefore is the last version of a pod recorded before event i.
func lastBefore(r *podRecorder, from, i int, name string) *corev1.Pod {
	var out *corev1.Pod
	for k := from; k < i; k++ {
		if p := r.at(k); p.Name == name {
			out = p
		}
	}
	if out == nil {
		// Not changed since the mark: take its last version before it.
		for k := 0; k < from; k++ {
			if p := r.at(k); p.Name == name {
				out = p
			}
		}
	}
	return out
}

// TestImageChangePausedThenResumed stands in for an operator upgrade: the
// cluster is paused, its image changed; nothing restarts and status says why;
// resumed, the peers roll one at a time with no client missing a route.
func TestImageChangePausedThenResumed(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	c, _, fleet := servingCluster(ctx, t, "upgrade", clusterSpec{replicas: 3, drain: 2}, 6)
	before := processes(t, ctx, c, 3)
	// The other tag of the imported image: the node never pulls.
	next := nextImage
	if getPeerPod(ctx, t, c, 0).Spec.Containers[0].Image == nextImage {
		next = image
	}
	kubectl(ctx, t, "patch", "-n", c.ns, "nameservercluster/"+c.name, "--type=merge", "-p",
		`{"spec":{"paused":true,"image":"`+next+`"}}`)
	cond := waitCondition(ctx, t, c, v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonRolloutPaused, podTimeout)
	if !strings.Contains(cond.Message, "spec.paused holds the roll") {
		t.Errorf("Progressing message %q does not say the roll is paused", cond.Message)
	}
	time.Sleep(2 * brokerPeriod)
	if now := processes(t, ctx, c, 3); !equalProcesses(now, before) {
		t.Fatalf("pods restarted while paused: %v -> %v", before, now)
	}
	kubectl(ctx, t, "patch", "-n", c.ns, "nameservercluster/"+c.name, "--type=merge", "-p", `{"spec":{"paused":false}}`)
	waitAllReplaced(ctx, t, c, before, 3, rollTimeout)
	for _, p := range mustPeerPods(ctx, t, c) {
		if img := p.Spec.Containers[0].Image; img != next {
			t.Errorf("%s runs %s after the roll", p.Name, img)
		}
	}
	judgeClients(t, fleet.stop(), c.peers(3)...)
}

func equalProcesses(a, b map[int]peerProcess) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func mustPeerPods(ctx context.Context, t *testing.T, c nsc) []corev1.Pod {
	t.Helper()
	ps, err := peerPods(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// TestKilledAndWipedPeersWithoutMisses: a peer killed, then a peer whose
// data is wiped and whose process is killed, both staying listed. Their new
// processes start empty; their route gates turn clients away (a transport
// failure, which moves Java clients on) until the broker has registered with
// them again, so no client hears that the topic does not exist.
func TestKilledAndWipedPeersWithoutMisses(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	c, _, fleet := servingCluster(ctx, t, "crash", clusterSpec{replicas: 3, drain: 2}, 8)
	lists := recordConfigMap(ctx, t, c.ns, c.addressConfigMap())

	restart := func(i int, wipe bool) {
		p := getPeerPod(ctx, t, c, i)
		before := processOf(t, p)
		if wipe {
			data, err := cl.VolumeDir(ctx, &p, "data")
			if err != nil {
				t.Fatal(err)
			}
			if err := removeContents(data); err != nil {
				t.Fatalf("wiping %s: %v", data, err)
			}
		}
		killContainer(ctx, t, before.container)
		eventually(t, time.Minute, func() (bool, string) {
			p := getPeerPod(ctx, t, c, i)
			cs := p.Status.ContainerStatuses
			return len(cs) == 1 && cs[0].RestartCount > before.restarts && podReady(&p), fmt.Sprintf("%s: %+v", p.Name, cs)
		})
		time.Sleep(2 * brokerPeriod)
	}
	restart(1, false)
	restart(2, true)
	for _, v := range lists.all() {
		if v.data[v1alpha1.NamesrvAddrKey] != strings.Join(c.peers(3), ";") {
			t.Errorf("the client list changed while peers restarted: %q", v.data[v1alpha1.NamesrvAddrKey])
		}
	}
	judgeClients(t, fleet.stop(), c.peers(3)...)
}

// cutOffConfig is the config of a cluster whose peers a scenario cuts off
// (cutOff): a gate that stays closed as long as the scenario blocks the
// broker. By default a gate opens by itself two broker rounds and 15 s after
// start (17 s here); a scenario on a busy node can keep the broker blocked
// longer, and the peer, still listed, would then answer clients that the
// topic does not exist, as it would in production if its brokers stayed
// away for longer than routeGateTimeoutSeconds.
func cutOffConfig() map[string]string {
	return map[string]string{"routeGateTimeoutSeconds": "600"}
}

// cutOff makes a listed peer unready the way a real one becomes so: the
// broker cannot reach it, and its process restarts, empty; its start-up
// gate stays closed while it lacks the broker (see cutOffConfig).
func cutOff(ctx context.Context, t *testing.T, c nsc, b *broker, i int) {
	t.Helper()
	b.block(c.peer(i), true)
	killContainer(ctx, t, processOf(t, getPeerPod(ctx, t, c, i)).container)
	eventually(t, 30*time.Second, func() (bool, string) {
		pod := getPeerPod(ctx, t, c, i)
		return !podReady(&pod), pod.Name + " is still ready"
	})
}

// TestRollStartsWithTheUnreadyPeer: a roll that starts while one listed peer
// is already down restarts that one first, and no serving peer before it
// serves again (replicas 2 and 3).
func TestRollStartsWithTheUnreadyPeer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ replicas, down int }{{2, 0}, {3, 1}} {
		t.Run(fmt.Sprintf("replicas %d", tc.replicas), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
			defer cancel()
			c, b, fleet := servingCluster(ctx, t, "half", clusterSpec{replicas: tc.replicas, drain: 2, config: cutOffConfig()}, 6)
			cutOff(ctx, t, c, b, tc.down)
			before := processes(t, ctx, c, tc.replicas)
			kubectl(ctx, t, "patch", "-n", c.ns, "nameservercluster/"+c.name, "--type=merge", "-p", `{"spec":{"config":{"orderMessageEnable":"true"}}}`)
			eventually(t, podTimeout, func() (bool, string) {
				// Between the old pod's deletion and the new one's
				// creation there is no pod of that name.
				p, err := cl.Clientset.CoreV1().Pods(c.ns).Get(ctx, c.pod(tc.down), metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				return string(p.UID) != before[tc.down].uid, c.pod(tc.down) + " was not restarted first"
			})
			time.Sleep(3 * brokerPeriod)
			for i := range tc.replicas {
				if i != tc.down && processOf(t, getPeerPod(ctx, t, c, i)) != before[i] {
					t.Fatalf("%s, which served, restarted while %s did not serve", c.pod(i), c.pod(tc.down))
				}
			}
			b.block(c.peer(tc.down), false)
			waitAllReplaced(ctx, t, c, before, tc.replicas, rollTimeout)
			judgeClients(t, fleet.stop(), c.peers(tc.replicas)...)
		})
	}
}

// TestScaleDownHeldWhileSurvivorsDoNotServe: scaling 3 → 1 while the peer
// that would remain does not serve holds, with a condition saying why, and
// goes on once it serves.
func TestScaleDownHeldWhileSurvivorsDoNotServe(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	c, b, fleet := servingCluster(ctx, t, "hold", clusterSpec{replicas: 3, drain: 2, config: cutOffConfig()}, 6)
	cutOff(ctx, t, c, b, 0)
	kubectl(ctx, t, "scale", "-n", c.ns, "nameservercluster/"+c.name, "--replicas=1")
	cond := waitCondition(ctx, t, c, v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonScaleDownHeld, podTimeout)
	if !strings.Contains(cond.Message, c.pod(0)) {
		t.Errorf("ScaleDownHeld message %q does not name %s", cond.Message, c.pod(0))
	}
	time.Sleep(2 * brokerPeriod)
	if got, err := published(ctx, c); err != nil || !slices.Equal(got, c.peers(3)) {
		t.Fatalf("while held, the client list is %v (%v), want all three", got, err)
	}
	if n := len(mustPeerPods(ctx, t, c)); n != 3 {
		t.Fatalf("while held, %d pods run, want 3", n)
	}
	b.block(c.peer(0), false)
	waitPublished(ctx, t, c, 1)
	judgeClients(t, fleet.stop(), c.peers(3)...)
}

// TestRemotingPortChange: a new remoting port reaches brokers as each peer
// restarts on it, and clients only once that peer serves on it.
func TestRemotingPortChange(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	c, b, fleet := servingCluster(ctx, t, "port", clusterSpec{replicas: 3, drain: 2}, 6)
	kubectl(ctx, t, "patch", "-n", c.ns, "nameservercluster/"+c.name, "--type=merge", "-p", `{"spec":{"ports":{"remoting":9877}}}`)
	want := []string{c.peerOn(0, 9877), c.peerOn(1, 9877), c.peerOn(2, 9877)}
	eventually(t, rollTimeout, func() (bool, string) {
		got, err := published(ctx, c)
		return err == nil && slices.Equal(got, want), fmt.Sprintf("client list %v (%v), want %v", got, err, want)
	})
	// The second roll drops the old port once the lists have moved.
	eventually(t, rollTimeout, func() (bool, string) {
		for _, p := range mustPeerPods(ctx, t, c) {
			for _, a := range p.Spec.Containers[0].Args {
				if strings.HasPrefix(a, "--extra-listen-ports") {
					return false, p.Name + " still serves the old port: " + a
				}
			}
			if !podReady(&p) {
				return false, p.Name + " is not ready"
			}
		}
		st, err := clusterStatus(ctx, c)
		return err == nil && st.UpdatedReplicas == 3, fmt.Sprintf("%d pods updated (%v)", st.UpdatedReplicas, err)
	})
	b.waitRegistered(t, want, time.Now())
	judgeClients(t, fleet.stop())
}

// TestRoutesConsistentNamesACutOffBroker: a broker that reaches only some
// peers makes RoutesConsistent=False name it and the peer it misses; the
// condition clears once it gets through. How long the operator took is
// logged (the design's bound is two broker rounds): on a busy node its
// reads of the peers take longer, so the wait allows podTimeout.
func TestRoutesConsistentNamesACutOffBroker(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	// Rounds of 3 s: the logged delay is in rounds, and one-second rounds
	// are shorter than a loaded operator's pass.
	c, _, fleet := servingCluster(ctx, t, "ap", clusterSpec{replicas: 3, drain: 2, brokerPeriod: 3 * time.Second}, 3)
	waitCondition(ctx, t, c, v1alpha1.ConditionRoutesConsistent, metav1.ConditionTrue, v1alpha1.ReasonConsistent, podTimeout)
	started := time.Now()
	other := startBrokerNamed(ctx, t, c, "broker-partial", "PartialTopic", []string{c.peer(2)})
	other.waitRegistered(t, c.peers(2), started)
	registered, _ := other.firstRegistration(c.peer(0))
	cond := waitCondition(ctx, t, c, v1alpha1.ConditionRoutesConsistent, metav1.ConditionFalse, v1alpha1.ReasonBrokerMissing, podTimeout)
	t.Logf("RoutesConsistent turned False %v after the broker registered with some peers (%v broker rounds)",
		round(time.Since(registered)), float64(time.Since(registered))/float64(c.brokerPeriod()))
	if !strings.Contains(cond.Message, "broker-partial") || !strings.Contains(cond.Message, c.pod(2)) {
		t.Errorf("RoutesConsistent message %q does not name broker-partial and %s", cond.Message, c.pod(2))
	}
	other.block(c.peer(2), false)
	waitCondition(ctx, t, c, v1alpha1.ConditionRoutesConsistent, metav1.ConditionTrue, v1alpha1.ReasonConsistent, podTimeout)
	judgeClients(t, fleet.stop(), c.peers(3)...)
}

// removeContents empties a directory, as a wiped disk would be.
func removeContents(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
