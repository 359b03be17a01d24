//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
)

// The scenarios of this file restart NameServers where a restarted one
// could answer without what it answered before: every peer at once, a
// cluster of one, a roll and a kill of clusters whose topic has an order
// config. Their brokers register every restartPeriod, so that a peer that
// answered before its brokers had registered again would be caught doing so
// for seconds, not hidden inside a one-second round.

// restartPeriod is these scenarios' broker round (a real broker's is 30 s).
// A peer with no serving peer to compare with waits for the brokers live
// before, or a round and a quarter at most.
const restartPeriod = 10 * time.Second

// orderConf is the order config of the topic, and orderConfInRoute what
// every route answer of the topic carries when orderMessageEnable is true.
const (
	orderConf        = brokerName + ":4"
	orderConfInRoute = `"orderTopicConf":"` + orderConf + `"`
)

// TestEveryPeerKilledAtOnce: the NameServer of every peer of a cluster of
// three is killed at once. No peer serves to compare with, so each
// restarted one's gate waits for the brokers that were live before (its own
// record and the operator's status.liveBrokers): until they register again,
// clients meet closed connections, never TOPIC_NOT_EXIST. It logs how long
// the clients waited.
func TestEveryPeerKilledAtOnce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	c, _, fleet := servingCluster(ctx, t, "outage", clusterSpec{replicas: 3, drain: 2, brokerPeriod: restartPeriod}, 6)
	waitLiveBrokers(ctx, t, c)
	before := processes(t, ctx, c, 3)
	killed := killAtOnce(ctx, t, before[0].container, before[1].container, before[2].container)
	waitRestarted(ctx, t, c, before)
	waitAnsweredSince(t, c, fleet, killed, 3)
	logGates(ctx, t, c, 3)
	judgeOutage(t, fleet.stop(), killed, c.peers(3)...)
}

// TestOneReplicaRestarted: a cluster of one peer, its NameServer killed,
// then its pod deleted (emptyDir storage: the new pod starts without the
// peer's record, and waits for the brokers of status.liveBrokers). Clients
// meet closed connections, never TOPIC_NOT_EXIST.
func TestOneReplicaRestarted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	c := applyCluster(ctx, t, "single", clusterSpec{replicas: 1, drain: 2, brokerPeriod: restartPeriod})
	since := time.Now()
	b := startBroker(ctx, t, c)
	b.waitRegistered(t, c.peers(1), since)
	eventuallyRoutes(ctx, t, c.peers(1))
	waitLiveBrokers(ctx, t, c)

	t.Run("killed", func(t *testing.T) {
		fleet := startClients(ctx, t, c, 6)
		waitAnsweredSince(t, c, fleet, time.Now(), 1)
		before := processes(t, ctx, c, 1)
		killed := killAtOnce(ctx, t, before[0].container)
		waitRestarted(ctx, t, c, before)
		waitAnsweredSince(t, c, fleet, killed, 1)
		logGates(ctx, t, c, 1)
		judgeOutage(t, fleet.stop(), killed, c.peers(1)...)
	})

	t.Run("pod deleted", func(t *testing.T) {
		fleet := startClients(ctx, t, c, 6)
		waitAnsweredSince(t, c, fleet, time.Now(), 1)
		before := processes(t, ctx, c, 1)
		deleted := time.Now()
		kubectl(ctx, t, "delete", "pod", "-n", c.ns, c.pod(0), "--wait=false")
		waitRestarted(ctx, t, c, before)
		waitAnsweredSince(t, c, fleet, deleted, 1)
		logGates(ctx, t, c, 1)
		judgeOutage(t, fleet.stop(), deleted, c.peers(1)...)
	})
}

// TestConfigRollKeepsOrderTopicConf: a config roll of a cluster that
// declares the topic's ORDER_TOPIC_CONFIG, with orderMessageEnable: every
// route answer any client gets carries orderTopicConf, before, during and
// after the roll, and so does every new peer's.
func TestConfigRollKeepsOrderTopicConf(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	c := applyCluster(ctx, t, "order", clusterSpec{replicas: 3, drain: 2, brokerPeriod: restartPeriod,
		config:   map[string]string{"orderMessageEnable": "true", "scanNotActiveBrokerInterval": "5000"},
		kvConfig: []v1alpha1.KVConfigEntry{{Namespace: orderNamespace, Key: topic, Value: orderConf}}})
	since := time.Now()
	b := startBroker(ctx, t, c)
	b.waitRegistered(t, c.peers(3), since)
	for i := range 3 {
		eventuallyOrderConfInRoute(ctx, t, c, i, podTimeout)
	}
	fleet := startClientsWanting(ctx, t, c, 6, orderConfInRoute)
	pods := recordPods(ctx, t, c.ns, c.selector())
	before := processes(t, ctx, c, 3)
	mark := pods.len()
	kubectl(ctx, t, "patch", "-n", c.ns, "nameservercluster/"+c.name, "--type=merge", "-p", `{"spec":{"config":{"scanNotActiveBrokerInterval":"6000"}}}`)
	waitAllReplaced(ctx, t, c, before, 3, 2*rollTimeout)
	assertOneAtATime(t, c, pods, mark, before)
	// A new peer is Ready once its gate is open: its first answer already
	// carries the order config.
	for i := range 3 {
		assertOrderConfInRoute(ctx, t, c, i)
	}
	judgeClients(t, fleet.stop(), c.peers(3)...)
}

// TestKilledPeerOnPVCKeepsOrderConf: a topic's order config written by hand
// on every peer (as mqadmin updateOrderConf does), not declared, so that
// only each peer's KV store keeps it; the peers store it on their
// PersistentVolumeClaims. A peer's NameServer killed, then its pod deleted:
// the new process loads the store, and its route answers carry
// orderTopicConf from the first one on.
func TestKilledPeerOnPVCKeepsOrderConf(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	c := applyCluster(ctx, t, "pvc", clusterSpec{replicas: 2, drain: 2, brokerPeriod: restartPeriod, storage: "16Mi",
		config: map[string]string{"orderMessageEnable": "true"}})
	since := time.Now()
	b := startBroker(ctx, t, c)
	b.waitRegistered(t, c.peers(2), since)
	for i := range 2 {
		// Sent again while it fails at the transport level, as mqadmin's
		// user would: writing the same value twice is harmless.
		var resp *remotingclient.Response
		eventually(t, answerTimeout, func() (bool, string) {
			var err error
			resp, err = kvCall(ctx, podAddr(ctx, t, c, i), protocol.PutKVConfig,
				remoting.Pair{Key: "namespace", Value: orderNamespace}, remoting.Pair{Key: "key", Value: topic}, remoting.Pair{Key: "value", Value: orderConf})
			return err == nil, fmt.Sprintf("PUT_KV_CONFIG on %s: %v", c.pod(i), err)
		})
		if resp.Code != protocol.Success {
			t.Fatalf("PUT_KV_CONFIG on %s: code %d %s", c.pod(i), resp.Code, resp.Remark)
		}
		eventuallyOrderConfInRoute(ctx, t, c, i, answerTimeout)
	}
	fleet := startClientsWanting(ctx, t, c, 6, orderConfInRoute)

	t.Run("killed", func(t *testing.T) {
		before := processes(t, ctx, c, 2)
		killContainer(ctx, t, before[1].container)
		waitRestarted(ctx, t, c, map[int]peerProcess{1: before[1]})
		assertOrderConfInRoute(ctx, t, c, 1)
	})

	t.Run("pod deleted", func(t *testing.T) {
		before := processes(t, ctx, c, 2)
		kubectl(ctx, t, "delete", "pod", "-n", c.ns, c.pod(1), "--wait=false")
		waitRestarted(ctx, t, c, map[int]peerProcess{1: before[1]})
		assertOrderConfInRoute(ctx, t, c, 1)
		got, err := orderConfOf(ctx, podAddr(ctx, t, c, 1))
		if err != nil || got[topic] != orderConf {
			t.Errorf("the KV store of the new %s holds %v (%v), want %s=%s", c.pod(1), got, err, topic, orderConf)
		}
	})
	judgeClients(t, fleet.stop(), c.peers(2)...)
}

// waitLiveBrokers waits until the operator has recorded the broker as live
// (status.liveBrokers): what it tells a restarted peer to wait for when no
// peer serves.
func waitLiveBrokers(ctx context.Context, t *testing.T, c nsc) {
	t.Helper()
	eventually(t, podTimeout, func() (bool, string) {
		st, err := clusterStatus(ctx, c)
		if err != nil {
			return false, err.Error()
		}
		return len(st.LiveBrokers) > 0, fmt.Sprintf("status.liveBrokers is %v", st.LiveBrokers)
	})
}

// killAtOnce kills the main processes of containers with SIGKILL, one
// right after the other (their PIDs are read first), and returns when the
// last was killed.
func killAtOnce(ctx context.Context, t *testing.T, ids ...string) time.Time {
	t.Helper()
	cs, err := cl.Containers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pids := map[string]int{}
	for _, c := range cs {
		if c.Running && c.PID > 0 {
			pids[c.ID] = c.PID
		}
	}
	for _, id := range ids {
		if pids[id] == 0 {
			t.Fatalf("container %s is not running", id)
		}
	}
	for _, id := range ids {
		if err := syscall.Kill(pids[id], syscall.SIGKILL); err != nil {
			t.Fatalf("kill container %s (pid %d): %v", id, pids[id], err)
		}
	}
	return time.Now()
}

// waitRestarted waits until each peer of before (by ordinal) runs a new
// container, restarted in its pod or in a new pod, and is Ready.
func waitRestarted(ctx context.Context, t *testing.T, c nsc, before map[int]peerProcess) {
	t.Helper()
	for i, p := range before {
		eventually(t, podTimeout+3*c.brokerPeriod(), func() (bool, string) {
			pod, err := cl.Clientset.CoreV1().Pods(c.ns).Get(ctx, c.pod(i), metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			cs := pod.Status.ContainerStatuses
			if len(cs) != 1 || pod.DeletionTimestamp != nil || !podReady(pod) {
				return false, fmt.Sprintf("%s is not Ready: %+v", pod.Name, cs)
			}
			restarted := string(pod.UID) != p.uid || cs[0].RestartCount > p.restarts
			return restarted, pod.Name + " has not restarted"
		})
	}
}

// waitAnsweredSince waits until each of the first n peers has answered a
// query of the fleet sent after since.
func waitAnsweredSince(t *testing.T, c nsc, fleet *clientFleet, since time.Time, n int) {
	t.Helper()
	eventually(t, podTimeout+3*c.brokerPeriod(), func() (bool, string) {
		var waiting []string
		for i := range n {
			if !fleet.answeredSince(c.peer(i), since) {
				waiting = append(waiting, c.pod(i))
			}
		}
		return len(waiting) == 0, fmt.Sprintf("no client has been answered by %v since %s", waiting, since.Format(time.StampMilli))
	})
}

// eventuallyOrderConfInRoute waits until a peer's route of the topic
// carries the order config.
func eventuallyOrderConfInRoute(ctx context.Context, t *testing.T, c nsc, i int, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, func() (bool, string) {
		body, err := routeBody(ctx, podAddr(ctx, t, c, i))
		return err == nil && strings.Contains(body, orderConfInRoute), fmt.Sprintf("%s route %s (%v), want %s", c.pod(i), body, err, orderConfInRoute)
	})
}

// assertOrderConfInRoute asks a serving peer for the topic's route, again
// only while the query fails at the transport level: its answer must be the
// route, with the order config.
func assertOrderConfInRoute(ctx context.Context, t *testing.T, c nsc, i int) {
	t.Helper()
	var resp *remotingclient.Response
	eventually(t, answerTimeout, func() (bool, string) {
		r, err := kvCall(ctx, podAddr(ctx, t, c, i), protocol.GetRouteInfoByTopic, remoting.Pair{Key: "topic", Value: topic})
		resp = r
		return err == nil, fmt.Sprintf("route query to %s: %v", c.pod(i), err)
	})
	if resp.Code != protocol.Success || !strings.Contains(string(resp.Body), orderConfInRoute) {
		t.Errorf("%s answers the route of %s with code %d %q, body %s; want the route with %s", c.pod(i), topic, resp.Code, resp.Remark, resp.Body, orderConfInRoute)
	}
}

// logGates logs, for each of the first n peers, what opened its start-up
// gate and the record of live brokers it started with (its route summary).
func logGates(ctx context.Context, t *testing.T, c nsc, n int) {
	t.Helper()
	for i := range n {
		url := fmt.Sprintf("http://%s/routes/summary", net.JoinHostPort(podIP(ctx, t, c, i), fmt.Sprint(httpPort)))
		text, err := get(ctx, url)
		if err != nil {
			t.Logf("%s: route summary: %v", c.pod(i), err)
			continue
		}
		var s struct {
			Gate struct {
				OpenedBy string `json:"openedBy"`
				Record   *struct {
					Brokers []json.RawMessage `json:"brokers"`
				} `json:"record"`
			} `json:"gate"`
		}
		if err := json.Unmarshal([]byte(text), &s); err != nil {
			t.Logf("%s: route summary %q: %v", c.pod(i), text, err)
			continue
		}
		recorded := "no record"
		if s.Gate.Record != nil {
			recorded = fmt.Sprintf("a record of %d brokers", len(s.Gate.Record.Brokers))
		}
		t.Logf("%s: gate opened by %q; started with %s", c.pod(i), s.Gate.OpenedBy, recorded)
	}
}

func podIP(ctx context.Context, t *testing.T, c nsc, i int) string {
	t.Helper()
	return getPeerPod(ctx, t, c, i).Status.PodIP
}

// judgeOutage is judgeClients for a restart during which no peer may
// serve: transport failures are what clients must meet then, any number in
// a row; but an answer must be the route, never an error code such as
// TOPIC_NOT_EXIST. It logs, from the first transport failure after since
// (the outage began), how long until a client was answered again, until
// every peer had answered, and until the last transport failure.
func judgeOutage(t *testing.T, queries []clientQuery, since time.Time, peers ...string) {
	t.Helper()
	var bad []string
	failures := 0
	var began, firstAnswer, lastFailure time.Time
	peerAnswered := map[string]time.Time{}
	for _, q := range queries {
		switch q.code {
		case protocol.Success:
			if !began.IsZero() {
				if firstAnswer.IsZero() {
					firstAnswer = q.at
				}
				if _, ok := peerAnswered[q.peer]; !ok {
					peerAnswered[q.peer] = q.at
				}
			}
		case -1:
			failures++
			if q.at.After(since) {
				lastFailure = q.at
				if began.IsZero() {
					began = q.at
				}
			}
		default:
			bad = append(bad, q.String())
		}
	}
	if len(queries) < 50 {
		t.Errorf("only %d route queries were made", len(queries))
	}
	if len(bad) > 0 {
		t.Errorf("%d route queries answered with an error or without the route, first ones:\n%s", len(bad), strings.Join(bad[:min(len(bad), 15)], "\n"))
	}
	if began.IsZero() {
		t.Logf("outage: %d route queries, none failed after %s", len(queries), since.Format(time.StampMilli))
		return
	}
	var everyPeer time.Duration
	for _, p := range peers {
		at, ok := peerAnswered[p]
		if !ok {
			t.Errorf("no client was answered by %s after the outage began", p)
			continue
		}
		everyPeer = max(everyPeer, at.Sub(began))
	}
	if firstAnswer.IsZero() {
		t.Errorf("no client was answered after the outage began at %s", began.Format(time.StampMilli))
		return
	}
	t.Logf("outage: %d route queries, %d transport failures, no error answer; from the first failure (%v after the restart began): first route answered after %v, every peer answering after %v, last transport failure after %v",
		len(queries), failures, round(began.Sub(since)), round(firstAnswer.Sub(began)), round(everyPeer), round(lastFailure.Sub(began)))
}
