package namesrv_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
)

// publishFile writes name in dir the way the kubelet updates a mounted
// ConfigMap: a new timestamped directory, then an atomic swap of the
// ..data symlink that the key's own symlink points through.
func publishFile(t *testing.T, dir, name, content string) {
	t.Helper()
	ts := filepath.Join(dir, fmt.Sprintf("..%d", time.Now().UnixNano()))
	if err := os.Mkdir(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ts, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "..data_tmp")
	os.Remove(tmp)
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, name)
	if _, err := os.Lstat(key); err != nil {
		if err := os.Symlink("..data/"+name, key); err != nil {
			t.Fatal(err)
		}
	}
}

func kvFile(t *testing.T, f peerstatus.KVFile) string {
	t.Helper()
	b, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func kvStatus(t *testing.T, s *namesrv.Server) peerstatus.KVStatus {
	t.Helper()
	sum := summary(t, s)
	if sum.KV == nil {
		t.Fatal("summary without kv")
	}
	return *sum.KV
}

func TestDeclaredKV(t *testing.T) {
	dir := t.TempDir()
	cm := filepath.Join(dir, "kv")
	if err := os.Mkdir(cm, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(cm, "kvConfig.json")
	first := kvFile(t, peerstatus.KVFile{Policy: peerstatus.PolicyExclusive,
		ConfigTable: map[string]map[string]string{protocol.NamespaceOrderTopicConfig: {"T": "broker-a:4"}, "APP": {"a": "1"}}})
	publishFile(t, cm, "kvConfig.json", first)
	s := startServer(t, func(c *config.Config) { c.KVDeclaredFile = file; c.OrderMessageEnable = true })

	// Applied before Start returned: the first requests see it.
	if v, ok := s.KV().Get(protocol.NamespaceOrderTopicConfig, "T"); !ok || v != "broker-a:4" {
		t.Fatalf("ORDER_TOPIC_CONFIG/T = %q, %v right after Start", v, ok)
	}
	if code, _ := get(t, s, "/readyz"); code != 200 {
		t.Fatalf("readyz %d", code)
	}
	mustRegister(t, startBroker(t, brokersim.Config{Cluster: "c", Name: "broker-a", Topics: []body.TopicConfig{brokersim.Topic("T", 4), brokersim.Topic("U", 4)}}), s.Addr().String())
	c := dial(t, s, remotingclient.Options{})
	if r := invoke(t, c, protocol.GetRouteInfoByTopic, nil, "topic", "T"); !strings.Contains(string(r.Body), `"orderTopicConf":"broker-a:4"`) {
		t.Fatalf("route without the declared order config: %s", r.Body)
	}
	st := kvStatus(t, s)
	if !st.InSync || st.Digest != peerstatus.Digest([]byte(first)) || st.Policy != peerstatus.PolicyExclusive || st.File != file || st.Error != "" {
		t.Fatalf("status %+v", st)
	}
	m := scrapeMetrics(t, s)
	if m.value("rocketmq_namesrv_kv_declared_in_sync") != 1 || m.value("rocketmq_namesrv_kv_declared_applies_total", "result", "ok") != 1 ||
		m.value("rocketmq_namesrv_kv_declared_keys_changed_total", "change", "written") != 2 {
		t.Fatalf("metrics: in sync %v applies %v written %v", m.value("rocketmq_namesrv_kv_declared_in_sync"),
			m.value("rocketmq_namesrv_kv_declared_applies_total", "result", "ok"), m.value("rocketmq_namesrv_kv_declared_keys_changed_total", "change", "written"))
	}

	// Hand writes work as in Java and show as drift until an apply.
	invoke(t, c, protocol.PutKVConfig, nil, "namespace", "APP", "key", "a", "value", "hand")
	invoke(t, c, protocol.PutKVConfig, nil, "namespace", "APP", "key", "extra", "value", "x")
	invoke(t, c, protocol.PutKVConfig, nil, "namespace", "MINE", "key", "k", "value", "v")
	if r := invoke(t, c, protocol.GetKVConfig, nil, "namespace", "APP", "key", "a"); r.Ext["value"] != "hand" {
		t.Fatalf("hand write %+v", r)
	}
	st = kvStatus(t, s)
	if st.InSync || len(st.Drift) != 2 || st.Drift[0] != (peerstatus.KVDrift{Namespace: "APP", Key: "a", Reason: peerstatus.DriftDiffers}) ||
		st.Drift[1] != (peerstatus.KVDrift{Namespace: "APP", Key: "extra", Reason: peerstatus.DriftUndeclared}) {
		t.Fatalf("drift %+v", st)
	}
	if v := scrapeMetrics(t, s).value("rocketmq_namesrv_kv_declared_in_sync"); v != 0 {
		t.Fatalf("kv_declared_in_sync %v with drift", v)
	}
	code, text := post(t, s, peerstatus.KVApplyPath, "")
	if code != 200 {
		t.Fatalf("apply %d %s", code, text)
	}
	if st := decodeJSON[peerstatus.KVStatus](t, text); !st.InSync || len(st.Drift) != 0 {
		t.Fatalf("after the apply %+v", st)
	}
	if r := invoke(t, c, protocol.GetKVConfig, nil, "namespace", "APP", "key", "a"); r.Ext["value"] != "1" {
		t.Fatalf("APP/a after the apply %+v", r)
	}
	if r := invoke(t, c, protocol.GetKVConfig, nil, "namespace", "APP", "key", "extra"); r.Code != protocol.QueryNotFound {
		t.Fatalf("APP/extra after the apply %+v", r)
	}
	if r := invoke(t, c, protocol.GetKVConfig, nil, "namespace", "MINE", "key", "k"); r.Ext["value"] != "v" {
		t.Fatalf("an undeclared namespace was touched: %+v", r)
	}

	// A new version of the file is picked up through the symlink swap:
	// removed keys go, the order config reaches routes.
	second := kvFile(t, peerstatus.KVFile{Policy: peerstatus.PolicyExclusive,
		ConfigTable: map[string]map[string]string{protocol.NamespaceOrderTopicConfig: {"T": "broker-a:8"}},
		Removed:     map[string][]string{"APP": {"a"}}})
	publishFile(t, cm, "kvConfig.json", second)
	eventually(t, "the new file to be applied", func() bool { return kvStatus(t, s).Digest == peerstatus.Digest([]byte(second)) })
	if _, ok := s.KV().Get("APP", "a"); ok {
		t.Fatal("a removed key is still there")
	}
	if r := invoke(t, c, protocol.GetRouteInfoByTopic, nil, "topic", "T"); !strings.Contains(string(r.Body), `"orderTopicConf":"broker-a:8"`) {
		t.Fatalf("route after the change: %s", r.Body)
	}
	if st := kvStatus(t, s); !st.InSync {
		t.Fatalf("after the change %+v", st)
	}
}

func TestDeclaredKVFileCorruptAtStart(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "kv.json")
	if err := os.WriteFile(file, []byte(`{"policy":"Owned","configTable":{`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(c *config.Config) { c.KVDeclaredFile = file })
	if code, _ := get(t, s, "/readyz"); code != 200 {
		t.Fatalf("a corrupt declared-KV file kept the server unready: %d", code)
	}
	st := kvStatus(t, s)
	if st.InSync || !strings.Contains(st.Error, "not valid JSON") || st.Digest != peerstatus.Digest([]byte(`{"policy":"Owned","configTable":{`)) {
		t.Fatalf("status %+v", st)
	}
	m := scrapeMetrics(t, s)
	if m.value("rocketmq_namesrv_kv_declared_in_sync") != 0 || m.value("rocketmq_namesrv_kv_declared_applies_total", "result", "error") != 1 {
		t.Fatalf("metrics: in sync %v errors %v", m.value("rocketmq_namesrv_kv_declared_in_sync"), m.value("rocketmq_namesrv_kv_declared_applies_total", "result", "error"))
	}
}

func TestDeclaredKVFileMissingOrNotConfigured(t *testing.T) {
	missing := startServer(t, func(c *config.Config) { c.KVDeclaredFile = filepath.Join(t.TempDir(), "none.json") })
	if st := kvStatus(t, missing); !st.InSync || st.Digest != "" || st.Error != "" {
		t.Fatalf("missing file %+v", st)
	}
	if code, text := post(t, missing, peerstatus.KVApplyPath, ""); code != 200 || !strings.Contains(text, `"inSync":true`) {
		t.Fatalf("apply of a missing file %d %s", code, text)
	}

	off := startServer(t, nil)
	if sum := summary(t, off); sum.KV != nil {
		t.Fatalf("kv without a file: %+v", sum.KV)
	}
	if code, text := post(t, off, peerstatus.KVApplyPath, ""); code != 404 || !strings.Contains(text, "kvDeclaredFile") {
		t.Fatalf("apply without a file %d %s", code, text)
	}
	if v := scrapeMetrics(t, off).value("rocketmq_namesrv_kv_declared_in_sync"); v != -1 {
		t.Fatalf("kv_declared_in_sync exported without a file: %v", v)
	}
}
