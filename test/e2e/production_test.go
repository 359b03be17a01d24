//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestProductionTimingConfigRoll is a config roll with production timing:
// brokers registering every 30 s, the operator's defaults for the broker
// heartbeat (30 s) and the drain, the rendered probes and preStop pause. It
// takes minutes, so `make test` leaves it out; `make test-e2e-production`
// runs it and prints how long each step took.
func TestProductionTimingConfigRoll(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	var steps []string
	step := func(what string, since time.Time) {
		steps = append(steps, fmt.Sprintf("%s %v", what, round(time.Since(since))))
	}
	begin := time.Now()
	c := applyCluster(ctx, t, "prod", clusterSpec{replicas: 3, production: true,
		config: map[string]string{"scanNotActiveBrokerInterval": "5000"}})
	step("3 peers ready and published", begin)
	since := time.Now()
	b := startBroker(ctx, t, c)
	b.waitRegistered(t, c.peers(3), since)
	eventuallyRoutes(ctx, t, c.peers(3))
	step("broker registered and routes served", since)
	fleet := startClients(ctx, t, c, 6)
	pods := recordPods(ctx, t, c.ns, c.selector())
	before := processes(t, ctx, c, 3)
	mark := pods.len()

	start := time.Now()
	kubectl(ctx, t, "patch", "-n", c.ns, "nameservercluster/"+c.name, "--type=merge", "-p", `{"spec":{"config":{"scanNotActiveBrokerInterval":"6000"}}}`)
	waitAllReplaced(ctx, t, c, before, 3, 20*time.Minute)
	step("config roll of 3 peers", start)
	// Each peer's turn: from its old pod's deletion to its new pod's
	// readiness.
	for i := range 3 {
		del := pods.first(mark, func(e podEvent) bool {
			return e.pod.Name == c.pod(i) && string(e.pod.UID) == before[i].uid && e.pod.DeletionTimestamp != nil
		})
		ready := pods.first(mark, func(e podEvent) bool {
			return e.pod.Name == c.pod(i) && string(e.pod.UID) != before[i].uid && podReady(e.pod)
		})
		if del >= 0 && ready >= 0 {
			steps = append(steps, fmt.Sprintf("%s deleted -> replaced and ready %v (roll start -> deleted %v)", c.pod(i),
				round(pods.seenAt(ready).Sub(pods.seenAt(del))), round(pods.seenAt(del).Sub(start))))
		}
	}
	assertOneAtATime(t, c, pods, mark, before)
	judgeClients(t, fleet.stop(), c.peers(3)...)
	fmt.Printf("e2e: production timing: %s\n", strings.Join(steps, "; "))
}
