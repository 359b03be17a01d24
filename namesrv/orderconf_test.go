package namesrv_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/kvconfig"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
	"github.com/kube-namesrv/kube-namesrv/test/nstest"
)

// Every path that changes the KV store's ORDER_TOPIC_CONFIG namespace must
// reach the routes clients get (issue 21): loading the file at start,
// PUT/DELETE_KV_CONFIG, the declared-KV apply (at start, on a file change,
// on POST /kv/declared/apply) and a batch Apply. One test per path, each
// over the wire.

// runServer starts a NameServer with o (on a loopback HTTP port) and
// returns it with a stop function that may be called before the test ends
// (the cleanup stops it otherwise).
func runServer(t *testing.T, o namesrv.Options) (*namesrv.Server, func()) {
	t.Helper()
	o.HTTPListener = httpListener(t)
	s := nstest.Run(t, o)
	return s.Server, s.Stop
}

func httpListener(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// orderBroker is a broker serving the ordered topic T and an unordered U.
func orderBroker(t *testing.T) *brokersim.Broker {
	return startBroker(t, brokersim.Config{Cluster: "c", Name: "b", Topics: []body.TopicConfig{brokersim.Topic("T", 4), brokersim.Topic("U", 4)}})
}

// orderConf returns the orderTopicConf of topic's route as the server
// answers it over the wire, "" when the route carries none.
func orderConf(t *testing.T, c *remotingclient.Client, topic string) string {
	t.Helper()
	r := invoke(t, c, protocol.GetRouteInfoByTopic, nil, "topic", topic)
	if r.Code != protocol.Success {
		t.Fatalf("route of %s: %+v", topic, r)
	}
	const field = `"orderTopicConf":"`
	b := string(r.Body)
	i := strings.Index(b, field)
	if i < 0 {
		return ""
	}
	rest := b[i+len(field):]
	return rest[:strings.IndexByte(rest, '"')]
}

func putKV(t *testing.T, c *remotingclient.Client, ns, key, value string) {
	t.Helper()
	if r := invoke(t, c, protocol.PutKVConfig, nil, "namespace", ns, "key", key, "value", value); r.Code != protocol.Success {
		t.Fatalf("put %s/%s: %+v", ns, key, r)
	}
}

// TestOrderConfAfterARestart is the case: the order config written
// over the wire is still in routes after a restart on the same kvConfig.json
// and a new registration of the broker.
func TestOrderConfAfterARestart(t *testing.T) {
	cfg, hl := testConfig(t, func(c *config.Config) { c.OrderMessageEnable = true })
	hl.Close()
	b := orderBroker(t)

	first, stop := runServer(t, namesrv.Options{Config: cfg})
	mustRegister(t, b, first.Addr().String())
	c := dial(t, first, remotingclient.Options{})
	putKV(t, c, protocol.NamespaceOrderTopicConfig, "T", "b:4")
	if got := orderConf(t, c, "T"); got != "b:4" {
		t.Fatalf("before the restart: orderTopicConf %q", got)
	}
	stop()

	again, _ := runServer(t, namesrv.Options{Config: cfg})
	mustRegister(t, b, again.Addr().String())
	c = dial(t, again, remotingclient.Options{})
	if r := invoke(t, c, protocol.GetKVConfig, nil, "namespace", protocol.NamespaceOrderTopicConfig, "key", "T"); r.Ext["value"] != "b:4" {
		t.Fatalf("GET_KV_CONFIG after the restart: %+v", r)
	}
	if got := orderConf(t, c, "T"); got != "b:4" {
		t.Fatalf("after the restart: orderTopicConf %q, want b:4", got)
	}
	if got := orderConf(t, c, "U"); got != "" {
		t.Fatalf("orderTopicConf %q on a topic without one", got)
	}
}

// TestOrderConfOfAFileWrittenBeforeStart: a kvConfig.json the server did
// not write (a Java NameServer's) reaches routes, and so does switching
// orderMessageEnable on after start.
func TestOrderConfOfAFileWrittenBeforeStart(t *testing.T) {
	for _, enableLater := range []bool{false, true} {
		name := map[bool]string{false: "enabled at start", true: "enabled by UPDATE_NAMESRV_CONFIG"}[enableLater]
		t.Run(name, func(t *testing.T) {
			cfg, hl := testConfig(t, func(c *config.Config) { c.OrderMessageEnable = !enableLater })
			hl.Close()
			if err := os.WriteFile(cfg.KVConfigPath, []byte(`{"configTable":{"ORDER_TOPIC_CONFIG":{"T":"b:8"}}}`), 0o644); err != nil {
				t.Fatal(err)
			}
			s, _ := runServer(t, namesrv.Options{Config: cfg})
			mustRegister(t, orderBroker(t), s.Addr().String())
			c := dial(t, s, remotingclient.Options{})
			if enableLater {
				if got := orderConf(t, c, "T"); got != "" {
					t.Fatalf("orderTopicConf %q with orderMessageEnable off", got)
				}
				if r := invoke(t, c, protocol.UpdateNamesrvConfig, []byte("orderMessageEnable=true\n")); r.Code != protocol.Success {
					t.Fatalf("update %+v", r)
				}
			}
			if got := orderConf(t, c, "T"); got != "b:8" {
				t.Fatalf("orderTopicConf %q, want b:8", got)
			}
		})
	}
}

func TestOrderConfFollowsRemotePutAndDelete(t *testing.T) {
	s := startServer(t, func(c *config.Config) { c.OrderMessageEnable = true })
	mustRegister(t, orderBroker(t), s.Addr().String())
	c := dial(t, s, remotingclient.Options{})
	putKV(t, c, protocol.NamespaceOrderTopicConfig, "T", "b:4")
	if got := orderConf(t, c, "T"); got != "b:4" {
		t.Fatalf("after PUT_KV_CONFIG: orderTopicConf %q", got)
	}
	putKV(t, c, protocol.NamespaceOrderTopicConfig, "T", "b:2")
	if got := orderConf(t, c, "T"); got != "b:2" {
		t.Fatalf("after a second PUT_KV_CONFIG: orderTopicConf %q", got)
	}
	if r := invoke(t, c, protocol.DeleteKVConfig, nil, "namespace", protocol.NamespaceOrderTopicConfig, "key", "T"); r.Code != protocol.Success {
		t.Fatalf("delete %+v", r)
	}
	if got := orderConf(t, c, "T"); got != "" {
		t.Fatalf("after DELETE_KV_CONFIG: orderTopicConf %q", got)
	}
	// Another namespace's key of the same name is not order config.
	putKV(t, c, "APP", "T", "b:9")
	if got := orderConf(t, c, "T"); got != "" {
		t.Fatalf("a key of another namespace: orderTopicConf %q", got)
	}
}

// TestOrderConfOfABatchApply: Store.Apply, the declared-KV apply's write
// path, reaches routes for each key it changes.
func TestOrderConfOfABatchApply(t *testing.T) {
	s := startServer(t, func(c *config.Config) { c.OrderMessageEnable = true })
	mustRegister(t, orderBroker(t), s.Addr().String())
	c := dial(t, s, remotingclient.Options{})
	putKV(t, c, protocol.NamespaceOrderTopicConfig, "U", "b:1")
	if _, err := s.KV().Apply([]kvconfig.Change{
		{Namespace: protocol.NamespaceOrderTopicConfig, Key: "T", Value: "b:4"},
		{Namespace: protocol.NamespaceOrderTopicConfig, Key: "U", Op: kvconfig.OpDelete},
	}); err != nil {
		t.Fatal(err)
	}
	if got := orderConf(t, c, "T"); got != "b:4" {
		t.Fatalf("T after the batch: orderTopicConf %q", got)
	}
	if got := orderConf(t, c, "U"); got != "" {
		t.Fatalf("U after the batch: orderTopicConf %q", got)
	}
}

// declaredOrderServer starts a server with a declared-KV file declaring
// ORDER_TOPIC_CONFIG/T=decl, its kvConfig.json already holding stored
// (none when ""), and registers the broker.
func declaredOrderServer(t *testing.T, decl, stored string) (*namesrv.Server, *remotingclient.Client, string) {
	t.Helper()
	cm := filepath.Join(t.TempDir(), "kv")
	if err := os.Mkdir(cm, 0o755); err != nil {
		t.Fatal(err)
	}
	publishFile(t, cm, "kvConfig.json", kvFile(t, peerstatus.KVFile{Policy: peerstatus.PolicyOwned,
		ConfigTable: map[string]map[string]string{protocol.NamespaceOrderTopicConfig: {"T": decl}}}))
	cfg, hl := testConfig(t, func(c *config.Config) {
		c.OrderMessageEnable = true
		c.KVDeclaredFile = filepath.Join(cm, "kvConfig.json")
	})
	hl.Close()
	if stored != "" {
		if err := os.WriteFile(cfg.KVConfigPath, []byte(`{"configTable":{"ORDER_TOPIC_CONFIG":{"T":"`+stored+`"}}}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := runServer(t, namesrv.Options{Config: cfg})
	mustRegister(t, orderBroker(t), s.Addr().String())
	return s, dial(t, s, remotingclient.Options{}), cm
}

// TestOrderConfOfTheDeclaredApplyAtStart: the declaration applied at
// start reaches routes, also when the store already held it, so that the
// apply changed nothing (a restart of a peer whose declaration did not
// change: the operator then sees it in sync).
func TestOrderConfOfTheDeclaredApplyAtStart(t *testing.T) {
	for name, stored := range map[string]string{"store empty": "", "store in sync": "b:4", "store differs": "b:1"} {
		t.Run(name, func(t *testing.T) {
			s, c, _ := declaredOrderServer(t, "b:4", stored)
			if st := kvStatus(t, s); !st.InSync {
				t.Fatalf("declared KV %+v", st)
			}
			if got := orderConf(t, c, "T"); got != "b:4" {
				t.Fatalf("orderTopicConf %q, want the declared b:4", got)
			}
		})
	}
}

func TestOrderConfOfADeclaredFileChange(t *testing.T) {
	s, c, cm := declaredOrderServer(t, "b:4", "")
	next := kvFile(t, peerstatus.KVFile{Policy: peerstatus.PolicyOwned,
		ConfigTable: map[string]map[string]string{protocol.NamespaceOrderTopicConfig: {"T": "b:8"}}})
	publishFile(t, cm, "kvConfig.json", next)
	eventually(t, "the changed file to be applied", func() bool { return kvStatus(t, s).Digest == peerstatus.Digest([]byte(next)) })
	// The store changes first, the route answers right after it: poll.
	eventually(t, "the route to carry the new order config", func() bool { return orderConf(t, c, "T") == "b:8" })
	// Owned deletes only what the declaration lists as removed: keys an
	// earlier declaration held (the operator records them).
	publishFile(t, cm, "kvConfig.json", kvFile(t, peerstatus.KVFile{Policy: peerstatus.PolicyOwned,
		ConfigTable: map[string]map[string]string{protocol.NamespaceOrderTopicConfig: {}},
		Removed:     map[string][]string{protocol.NamespaceOrderTopicConfig: {"T"}}}))
	eventually(t, "the key to be deleted", func() bool { _, ok := s.KV().Get(protocol.NamespaceOrderTopicConfig, "T"); return !ok })
	eventually(t, "the route to drop the order config", func() bool { return orderConf(t, c, "T") == "" })
}

func TestOrderConfOfTheApplyRequest(t *testing.T) {
	s, c, _ := declaredOrderServer(t, "b:4", "")
	putKV(t, c, protocol.NamespaceOrderTopicConfig, "T", "b:1")
	if got := orderConf(t, c, "T"); got != "b:1" {
		t.Fatalf("after a hand write: orderTopicConf %q", got)
	}
	if code, text := post(t, s, peerstatus.KVApplyPath, ""); code != 200 {
		t.Fatalf("apply %d %s", code, text)
	}
	if got := orderConf(t, c, "T"); got != "b:4" {
		t.Fatalf("after POST %s: orderTopicConf %q, want the declared b:4", peerstatus.KVApplyPath, got)
	}
}
