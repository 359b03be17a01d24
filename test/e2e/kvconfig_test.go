//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
)

const orderNamespace = "ORDER_TOPIC_CONFIG"

// kvCall sends one request to the NameServer at ip:port, and waits for its
// answer as long as a Java client would.
func kvCall(ctx context.Context, ipPort string, code int32, ext ...remoting.Pair) (*remotingclient.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, javaTimeout)
	defer cancel()
	rc, err := remotingclient.Dial(ctx, ipPort, remotingclient.Options{})
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return rc.Invoke(ctx, &remotingclient.Request{Code: code, Ext: ext})
}

// orderConfOf reads ORDER_TOPIC_CONFIG from one NameServer with
// GET_KVLIST_BY_NAMESPACE, what mqadmin getKVListByNamespace sends.
func orderConfOf(ctx context.Context, ipPort string) (map[string]string, error) {
	resp, err := kvCall(ctx, ipPort, protocol.GetKVListByNamespace, remoting.Pair{Key: "namespace", Value: orderNamespace})
	if err != nil {
		return nil, err
	}
	switch resp.Code {
	case protocol.Success:
	case protocol.QueryNotFound:
		return map[string]string{}, nil
	default:
		return nil, fmt.Errorf("GET_KVLIST_BY_NAMESPACE: code %d %s", resp.Code, resp.Remark)
	}
	var table struct {
		Table map[string]string `json:"table"`
	}
	if err := json.Unmarshal(resp.Body, &table); err != nil {
		return nil, fmt.Errorf("GET_KVLIST_BY_NAMESPACE body %q: %w", resp.Body, err)
	}
	return table.Table, nil
}

// routeBody asks one NameServer for the topic's route and returns its body.
func routeBody(ctx context.Context, ipPort string) (string, error) {
	resp, err := kvCall(ctx, ipPort, protocol.GetRouteInfoByTopic, remoting.Pair{Key: "topic", Value: topic})
	if err != nil {
		return "", err
	}
	if resp.Code != protocol.Success {
		return "", fmt.Errorf("route: code %d %s", resp.Code, resp.Remark)
	}
	return string(resp.Body), nil
}

func podAddr(ctx context.Context, t *testing.T, c nsc, i int) string {
	t.Helper()
	return net.JoinHostPort(processOf(t, getPeerPod(ctx, t, c, i)).ip, fmt.Sprint(remotingPort))
}

// waitOrderConf waits until every peer holds exactly want.
func waitOrderConf(ctx context.Context, t *testing.T, c nsc, n int, want map[string]string, timeout time.Duration) {
	t.Helper()
	for i := range n {
		eventually(t, timeout, func() (bool, string) {
			got, err := orderConfOf(ctx, podAddr(ctx, t, c, i))
			return err == nil && maps.Equal(got, want), fmt.Sprintf("%s holds %v (%v), want %v", c.pod(i), got, err, want)
		})
	}
}

// watchOrderConf polls a peer's KV from its first answer on, and reports
// every answer that lacked want: a peer must hold the declared values from
// the first request it serves.
func watchOrderConf(ctx context.Context, c nsc, i int, want map[string]string) (stop func() (answers int, wrong []string)) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var answers int
	var wrong []string
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			ip, err := resolve(c.peer(i))
			if err == nil {
				if got, err := orderConfOf(ctx, ip); err == nil {
					answers++
					for k, v := range want {
						if got[k] != v {
							wrong = append(wrong, fmt.Sprintf("%s: %s has %v", time.Now().Format(time.StampMilli), c.pod(i), got))
							break
						}
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(30 * time.Millisecond):
			}
		}
	}()
	return func() (int, []string) {
		cancel()
		<-done
		return answers, wrong
	}
}

// TestDeclaredOrderTopicConfig: spec.kvConfig reaches every peer, new and
// restarted ones before they serve, follows changes without restarts, is
// set back when changed by hand, and leaves when removed.
func TestDeclaredOrderTopicConfig(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	declared := []v1alpha1.KVConfigEntry{
		{Namespace: orderNamespace, Key: topic, Value: brokerName + ":4"},
		{Namespace: orderNamespace, Key: "OrderTopicB", Value: "broker-b:8"},
	}
	want := map[string]string{topic: brokerName + ":4", "OrderTopicB": "broker-b:8"}
	c := applyCluster(ctx, t, "kv", clusterSpec{replicas: 3, drain: 2, config: map[string]string{"orderMessageEnable": "true"}, kvConfig: declared})
	since := time.Now()
	b := startBroker(ctx, t, c)
	b.waitRegistered(t, c.peers(3), since)

	t.Run("every peer", func(t *testing.T) {
		waitOrderConf(ctx, t, c, 3, want, podTimeout)
		for i := range 3 {
			eventually(t, podTimeout, func() (bool, string) {
				body, err := routeBody(ctx, podAddr(ctx, t, c, i))
				return err == nil && strings.Contains(body, `"orderTopicConf":"`+brokerName+`:4"`), fmt.Sprintf("%s route %s (%v)", c.pod(i), body, err)
			})
		}
	})

	t.Run("a new peer has them before clients are sent to it", func(t *testing.T) {
		stop := watchOrderConf(ctx, c, 3, want)
		kubectl(ctx, t, "scale", "-n", c.ns, "nameservercluster/"+c.name, "--replicas=4")
		waitPublished(ctx, t, c, 4)
		answers, wrong := stop()
		if answers == 0 || len(wrong) > 0 {
			t.Errorf("%s answered %d KV reads, %d without the declared values: %v", c.pod(3), answers, len(wrong), wrong[:min(len(wrong), 3)])
		}
	})

	t.Run("a restarted peer on emptyDir has them again before it serves", func(t *testing.T) {
		p := processOf(t, getPeerPod(ctx, t, c, 1))
		stop := watchOrderConf(ctx, c, 1, want)
		killContainer(ctx, t, p.container)
		eventually(t, podTimeout, func() (bool, string) {
			pod := getPeerPod(ctx, t, c, 1)
			return processOf(t, pod).container != p.container && podReady(&pod), pod.Name + " not restarted and ready yet"
		})
		answers, wrong := stop()
		if answers == 0 || len(wrong) > 0 {
			t.Errorf("%s answered %d KV reads, %d without the declared values: %v", c.pod(1), answers, len(wrong), wrong[:min(len(wrong), 3)])
		}
	})

	before := processes(t, ctx, c, 4)
	t.Run("a changed value reaches every peer without a restart", func(t *testing.T) {
		kubectl(ctx, t, "patch", "-n", c.ns, "nameservercluster/"+c.name, "--type=json", "-p",
			`[{"op":"replace","path":"/spec/kvConfig/1/value","value":"broker-b:16"}]`)
		want["OrderTopicB"] = "broker-b:16"
		waitOrderConf(ctx, t, c, 4, want, refreshTimeout)
		if now := processes(t, ctx, c, 4); !equalProcesses(now, before) {
			t.Errorf("a kvConfig change restarted pods: %v -> %v", before, now)
		}
	})

	t.Run("a value changed by hand on one peer is set back", func(t *testing.T) {
		resp, err := kvCall(ctx, podAddr(ctx, t, c, 2), protocol.PutKVConfig,
			remoting.Pair{Key: "namespace", Value: orderNamespace}, remoting.Pair{Key: "key", Value: topic}, remoting.Pair{Key: "value", Value: "broker-rogue:1"})
		if err != nil || resp.Code != protocol.Success {
			t.Fatalf("PUT_KV_CONFIG by hand: %+v %v", resp, err)
		}
		waitOrderConf(ctx, t, c, 4, want, podTimeout)
		eventually(t, podTimeout, func() (bool, string) {
			return slices.Contains(clusterEventReasons(ctx, t, c), "KVConfigCorrected"), "no KVConfigCorrected event"
		})
	})

	t.Run("a removed entry leaves every peer", func(t *testing.T) {
		kubectl(ctx, t, "patch", "-n", c.ns, "nameservercluster/"+c.name, "--type=json", "-p", `[{"op":"remove","path":"/spec/kvConfig/1"}]`)
		delete(want, "OrderTopicB")
		waitOrderConf(ctx, t, c, 4, want, refreshTimeout)
		waitCondition(ctx, t, c, v1alpha1.ConditionKVConfigInSync, metav1.ConditionTrue, v1alpha1.ReasonInSync, refreshTimeout)
	})
}

// clusterEventReasons lists the reasons of the events about a cluster.
func clusterEventReasons(ctx context.Context, t *testing.T, c nsc) []string {
	t.Helper()
	l, err := cl.Clientset.EventsV1().Events(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range l.Items {
		if e.Regarding.Kind == "NameServerCluster" && e.Regarding.Name == c.name {
			out = append(out, e.Reason)
		}
	}
	return out
}
