package namesrv_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/liverecord"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
)

// Issue 21, full outages and one replica: a restarted NameServer shows
// what was live before it stopped (gate.record), and a gate request with
// waitSeconds holds its gate without a serving peer to compare with.

func gatedConfig(t *testing.T, tweak func(*config.Config)) *config.Config {
	t.Helper()
	cfg, hl := testConfig(t, func(c *config.Config) {
		c.RouteGateEnable, c.RouteGateTimeoutSeconds = true, 3600
		if tweak != nil {
			tweak(c)
		}
	})
	hl.Close()
	return cfg
}

func recordPath(cfg *config.Config) string {
	return filepath.Join(filepath.Dir(cfg.KVConfigPath), liverecord.FileName)
}

func readRecord(t *testing.T, path string) *peerstatus.GateRecord {
	t.Helper()
	rec, err := liverecord.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func gateRequestWait(t *testing.T, s *namesrv.Server, wait int, keys ...peerstatus.BrokerKey) peerstatus.Summary {
	t.Helper()
	b, _ := json.Marshal(peerstatus.GateRequest{Expect: keys, WaitSeconds: wait})
	code, text := post(t, s, peerstatus.GatePath, string(b))
	if code != 200 {
		t.Fatalf("gate request %d %s", code, text)
	}
	return decodeJSON[peerstatus.Summary](t, text)
}

// TestGateRecordAcrossARestart: the brokers live at a clean stop are in
// the next process's summary; a gate request naming them with waitSeconds
// keeps clients away until they registered again, and the record is not
// overwritten while the gate is closed.
func TestGateRecordAcrossARestart(t *testing.T) {
	cfg := gatedConfig(t, nil)
	a := startBroker(t, brokersim.Config{Cluster: "c", Name: "broker-a", Topics: []body.TopicConfig{brokersim.Topic("T", 4), brokersim.Topic("U", 4)}})
	b := startBroker(t, brokersim.Config{Cluster: "c", Name: "broker-b", Topics: []body.TopicConfig{brokersim.Topic("T", 4), brokersim.Topic("V", 4)}})
	want := liverecord.SortedKeys([]peerstatus.BrokerKey{key(a, "c"), key(b, "c")})

	first, stop := runServer(t, namesrv.Options{Config: cfg, LiveRecordInterval: 10 * time.Millisecond})
	if g := summary(t, first).Gate; g.Record != nil {
		t.Fatalf("a first start shows a record: %+v", g.Record)
	}
	mustRegister(t, a, first.Addr().String())
	mustRegister(t, b, first.Addr().String())
	gateRequest(t, first)
	eventually(t, "the record of both brokers", func() bool {
		rec := readRecord(t, recordPath(cfg))
		return rec != nil && slices.Equal(rec.Brokers, want)
	})
	beforeStop := time.Now()
	stop()
	rec := readRecord(t, recordPath(cfg))
	if rec == nil || !slices.Equal(rec.Brokers, want) || rec.RecordedAt.Before(beforeStop.Add(-time.Millisecond)) {
		t.Fatalf("record after a clean stop %+v (stopped at %v)", rec, beforeStop)
	}

	// Every peer restarted: nobody can vouch for the list but the record.
	again, _ := runServer(t, namesrv.Options{Config: cfg, LiveRecordInterval: 10 * time.Millisecond})
	g := summary(t, again).Gate
	if g.Record == nil || !slices.Equal(g.Record.Brokers, want) || !g.Record.RecordedAt.Equal(rec.RecordedAt) {
		t.Fatalf("gate.record after the restart %+v, want %v", g.Record, want)
	}
	if _, text := get(t, again, peerstatus.SummaryPath); !strings.Contains(text, `"record":{"recordedAt":"`) ||
		!strings.Contains(text, `"brokers":[{"cluster":"c","addr":"`+want[0].Addr+`"},{"cluster":"c","addr":"`+want[1].Addr+`"}]}`) {
		t.Fatalf("summary JSON without gate.record: %s", text)
	}
	sum := gateRequestWait(t, again, 3600, g.Record.Brokers...)
	if sum.Gate.Open || sum.Gate.Expected != 2 || len(sum.Gate.Missing) != 2 {
		t.Fatalf("gate after the request %+v", sum.Gate)
	}
	mustRegister(t, a, again.Addr().String())
	gated(t, dial(t, again, remotingclient.Options{}), protocol.GetRouteInfoByTopic, "topic", "V")
	if code, text := get(t, again, "/readyz"); code != 503 || !strings.Contains(text, "1 of 2 expected brokers") {
		t.Fatalf("readyz %d %q", code, text)
	}
	mustRegister(t, b, again.Addr().String())
	if g := summary(t, again).Gate; !g.Open || g.OpenedBy != "request" {
		t.Fatalf("gate once both registered %+v", g)
	}
	c := dial(t, again, remotingclient.Options{})
	for _, topic := range []string{"T", "U", "V"} {
		if r := invoke(t, c, protocol.GetRouteInfoByTopic, nil, "topic", topic); r.Code != protocol.Success {
			t.Fatalf("route of %s once open: %+v", topic, r)
		}
	}
	// The set is the recorded one: nothing was written, in particular not
	// the partial set of the closed gate (the record would then be
	// rewritten with both and a later time).
	if rec := readRecord(t, recordPath(cfg)); !slices.Equal(rec.Brokers, want) || !rec.RecordedAt.Equal(g.Record.RecordedAt) {
		t.Fatalf("record rewritten after the restart: %+v", rec)
	}
}

// TestGateRecordFollowsTheLiveSet: while the process runs, the record
// follows the live set (a crash keeps the latest), an empty set included.
func TestGateRecordFollowsTheLiveSet(t *testing.T) {
	cfg := gatedConfig(t, func(c *config.Config) { c.RouteGateEnable = false })
	s, _ := runServer(t, namesrv.Options{Config: cfg, LiveRecordInterval: 10 * time.Millisecond})
	a := startBroker(t, brokersim.Config{Cluster: "c", Name: "broker-a", Topics: []body.TopicConfig{brokersim.Topic("T", 4), brokersim.Topic("U", 4)}})
	mustRegister(t, a, s.Addr().String())
	eventually(t, "the record of the broker", func() bool {
		rec := readRecord(t, recordPath(cfg))
		return rec != nil && slices.Equal(rec.Brokers, []peerstatus.BrokerKey{key(a, "c")})
	})
	a.DropConnections()
	eventually(t, "the record of no broker", func() bool {
		rec := readRecord(t, recordPath(cfg))
		return rec != nil && len(rec.Brokers) == 0
	})
	// Counted just after the file is in place.
	eventually(t, "two writes counted", func() bool {
		return scrapeMetrics(t, s).value("rocketmq_namesrv_live_brokers_record_writes_total", "result", "ok") >= 2
	})
	if v := scrapeMetrics(t, s).value("rocketmq_namesrv_live_brokers_record_writes_total", "result", "error"); v != 0 {
		t.Fatalf("failed record writes %v", v)
	}
}

// TestUnreadableGateRecord: a corrupt record does not stop the start; it
// is ignored and replaced once the gate is open.
func TestUnreadableGateRecord(t *testing.T) {
	custom := filepath.Join(t.TempDir(), "state", "live.json")
	for name, path := range map[string]string{"default path": "", "liveBrokersPath": custom} {
		t.Run(name, func(t *testing.T) {
			cfg := gatedConfig(t, func(c *config.Config) { c.LiveBrokersPath = path })
			file := path
			if file == "" {
				file = recordPath(cfg)
			}
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(`{"recordedAt":"2025-01-01T00:00:00Z","brokers":[{"cluster":`), 0o644); err != nil {
				t.Fatal(err)
			}
			s, _ := runServer(t, namesrv.Options{Config: cfg, LiveRecordInterval: 10 * time.Millisecond})
			if g := summary(t, s).Gate; g.Record != nil || g.Open {
				t.Fatalf("gate %+v", g)
			}
			gateRequest(t, s)
			eventually(t, "a good record", func() bool {
				rec, err := liverecord.Load(file)
				return err == nil && rec != nil && len(rec.Brokers) == 0
			})
		})
	}
}

// TestGateWaitWithoutAReferencePeer: with nothing recorded, a request with
// waitSeconds keeps the gate closed for that long after start, where an
// empty request without it opens at once.
func TestGateWaitWithoutAReferencePeer(t *testing.T) {
	s, _ := runServer(t, namesrv.Options{Config: gatedConfig(t, nil)})
	sum := gateRequestWait(t, s, 2)
	if sum.Gate.Open || sum.Gate.Deadline == nil || !sum.Gate.Deadline.Equal(sum.StartTime.Add(2*time.Second)) {
		t.Fatalf("gate %+v, start %v", sum.Gate, sum.StartTime)
	}
	if code, text := get(t, s, "/readyz"); code != 503 || !strings.Contains(text, "no serving peer") {
		t.Fatalf("readyz %d %q", code, text)
	}
	gated(t, dial(t, s, remotingclient.Options{}), protocol.GetRouteInfoByTopic, "topic", "T")
	eventually(t, "the wait to open the gate", func() bool { return !s.Gate().Closed() })
	if g := summary(t, s).Gate; g.OpenedBy != "wait" {
		t.Fatalf("gate %+v", g)
	}
	if code, text := post(t, s, peerstatus.GatePath, `{"expect":[],"waitSeconds":-1}`); code != 400 || !strings.Contains(text, "waitSeconds") {
		t.Fatalf("negative wait %d %q", code, text)
	}
}

// TestNeedWaitForServiceBehindTheGate: with the gate enabled, the gate
// stays closed through the warm-up, so clients get transport closes and
// never SYSTEM_ERROR "name server not ready"; brokers' own connections
// are answered as in Java.
func TestNeedWaitForServiceBehindTheGate(t *testing.T) {
	s, _ := runServer(t, namesrv.Options{Config: gatedConfig(t, func(c *config.Config) {
		c.NeedWaitForService, c.WaitSecondsForService = true, 2
	})})
	ns := s.Addr().String()
	a := startBroker(t, brokersim.Config{Cluster: "c", Name: "broker-a", Topics: []body.TopicConfig{brokersim.Topic("T", 4), brokersim.Topic("U", 4)}})
	mustRegister(t, a, ns)
	sum := gateRequest(t, s, key(a, "c"))
	g := sum.Gate
	if g.Open || g.WarmUpUntil == nil || !g.WarmUpUntil.Equal(sum.StartTime.Add(2*time.Second)) || g.Deadline == nil || !g.Deadline.Equal(*g.WarmUpUntil) {
		t.Fatalf("gate with its request met during the warm-up: %+v", g)
	}
	if _, text := get(t, s, peerstatus.SummaryPath); !strings.Contains(text, `"warmUpUntil":"`) {
		t.Fatalf("summary JSON without gate.warmUpUntil: %s", text)
	}
	if code, text := get(t, s, "/readyz"); code != 503 || !strings.Contains(text, "needWaitForService") {
		t.Fatalf("readyz %d %q", code, text)
	}
	r, err := a.Invoke(t.Context(), ns, &remotingclient.Request{Code: protocol.GetRouteInfoByTopic, Ext: []remoting.Pair{{Key: "topic", Value: "T"}}})
	if err != nil || r.Code != protocol.SystemError || r.Remark != "name server not ready" {
		t.Fatalf("a broker's route query during the warm-up: %v %+v", err, r)
	}
	// Clients ask until they are answered: each answer is a route.
	for s.Gate().Closed() {
		c := dial(t, s, remotingclient.Options{})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := c.Invoke(ctx, &remotingclient.Request{Code: protocol.GetRouteInfoByTopic, Ext: []remoting.Pair{{Key: "topic", Value: "T"}}})
		cancel()
		c.Close()
		if err == nil && r.Code != protocol.Success {
			t.Fatalf("a client was answered %d %q during the warm-up", r.Code, r.Remark)
		}
		if time.Since(sum.StartTime) > 10*time.Second {
			t.Fatal("the gate did not open after the warm-up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if time.Now().Before(*g.WarmUpUntil) {
		t.Fatalf("the gate opened before the warm-up ended (%v)", g.WarmUpUntil)
	}
	if g := summary(t, s).Gate; g.OpenedBy != "request" {
		t.Fatalf("gate %+v", g)
	}
	if r := invoke(t, dial(t, s, remotingclient.Options{}), protocol.GetRouteInfoByTopic, nil, "topic", "T"); r.Code != protocol.Success {
		t.Fatalf("route after the warm-up %+v", r)
	}
}
