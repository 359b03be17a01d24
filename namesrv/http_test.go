package namesrv_test

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/httpapi"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
)

func get(t *testing.T, s *namesrv.Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + s.HTTPAddr().String() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestHealthAndReadiness(t *testing.T) {
	s := startServer(t, nil)
	if code, body := get(t, s, "/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("healthz %d %q", code, body)
	}
	if code, body := get(t, s, "/readyz"); code != 200 {
		t.Fatalf("readyz %d %q", code, body)
	}
	warm := startServer(t, func(c *config.Config) { c.NeedWaitForService = true; c.WaitSecondsForService = 60 })
	if code, body := get(t, warm, "/readyz"); code != 503 || !strings.Contains(body, "warming up") {
		t.Fatalf("readyz during warm-up %d %q", code, body)
	}
	if code, _ := get(t, s, "/nope"); code != 404 {
		t.Fatalf("unknown path %d", code)
	}
}

// publish writes the address file the way the kubelet updates a mounted
// ConfigMap: a new timestamped directory, then an atomic swap of the
// ..data symlink that the key's own symlink points through.
func publish(t *testing.T, dir, list string) {
	t.Helper()
	ts := filepath.Join(dir, fmt.Sprintf("..%d", time.Now().UnixNano()))
	if err := os.Mkdir(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ts, "namesrvAddr"), []byte(list+"\n"), 0o644); err != nil {
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
	key := filepath.Join(dir, "namesrvAddr")
	if _, err := os.Lstat(key); err != nil {
		if err := os.Symlink("..data/namesrvAddr", key); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAddressServer(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "namesrvAddr")
	s := startServer(t, func(c *config.Config) { c.AddressFile = file })
	if code, body := get(t, s, "/rocketmq/nsaddr"); code != 503 || !strings.Contains(body, "not published") {
		t.Fatalf("before publication %d %q", code, body)
	}
	publish(t, dir, "ns-0.ns.default.svc.cluster.local:9876;ns-1.ns.default.svc.cluster.local:9876")
	for _, path := range []string{"/rocketmq/nsaddr", "/rocketmq/nsaddr-unit1?nofix=1"} {
		if code, body := get(t, s, path); code != 200 || body != "ns-0.ns.default.svc.cluster.local:9876;ns-1.ns.default.svc.cluster.local:9876" {
			t.Fatalf("%s: %d %q", path, code, body)
		}
	}
	publish(t, dir, "10.0.0.1:9876")
	if code, body := get(t, s, "/rocketmq/nsaddr"); code != 200 || body != "10.0.0.1:9876" {
		t.Fatalf("after the swap %d %q", code, body)
	}
	noFile := startServer(t, nil)
	if code, _ := get(t, noFile, "/rocketmq/nsaddr"); code != 404 {
		t.Fatalf("without an address file %d", code)
	}
}

// TestClientGoHTTPResolver points rocketmq-client-go's address-server
// resolver at the HTTP side and changes the list under it.
func TestClientGoHTTPResolver(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, func(c *config.Config) { c.AddressFile = filepath.Join(dir, "namesrvAddr") })
	url := "http://" + s.HTTPAddr().String() + "/rocketmq/nsaddr"
	// The resolver keeps a snapshot of every answer under the user's home;
	// remove ours afterwards.
	if u, err := user.Current(); err == nil {
		sum := md5.Sum([]byte(url))
		t.Cleanup(func() {
			os.Remove(filepath.Join(u.HomeDir, "logs/rocketmq-go/snapshot", "nameserver_addr-"+hex.EncodeToString(sum[:])))
		})
	}
	publish(t, dir, s.Addr().String()+";127.0.0.1:1")
	r := primitive.NewHttpResolver("it", url)
	if got := r.Resolve(); !slices.Equal(got, []string{s.Addr().String(), "127.0.0.1:1"}) {
		t.Fatalf("resolved %v", got)
	}
	publish(t, dir, "127.0.0.1:2")
	if got := r.Resolve(); !slices.Equal(got, []string{"127.0.0.1:2"}) {
		t.Fatalf("after the change resolved %v", got)
	}
}

// TestBrokerAddressSubgroup: with a broker list configured, the brokers
// subgroup answers it, to rocketmq-client-go's resolver too, and every other
// subgroup the clients' list.
func TestBrokerAddressSubgroup(t *testing.T) {
	clients, brokers := t.TempDir(), t.TempDir()
	s := startServer(t, func(c *config.Config) {
		c.AddressFile = filepath.Join(clients, "namesrvAddr")
		c.BrokerAddressFile = filepath.Join(brokers, "namesrvAddr")
	})
	publish(t, clients, "127.0.0.1:1;127.0.0.1:2")
	if code, body := get(t, s, "/rocketmq/brokers"); code != 503 || !strings.Contains(body, "broker NameServer address list not published") {
		t.Fatalf("brokers before publication %d %q", code, body)
	}
	publish(t, brokers, "127.0.0.1:1;127.0.0.1:2;127.0.0.1:3")
	url := "http://" + s.HTTPAddr().String() + "/rocketmq/" + httpapi.BrokerSubGroup
	if u, err := user.Current(); err == nil {
		sum := md5.Sum([]byte(url))
		t.Cleanup(func() {
			os.Remove(filepath.Join(u.HomeDir, "logs/rocketmq-go/snapshot", "nameserver_addr-"+hex.EncodeToString(sum[:])))
		})
	}
	r := primitive.NewHttpResolver("it", url)
	if got := r.Resolve(); !slices.Equal(got, []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}) {
		t.Fatalf("brokers resolved %v", got)
	}
	publish(t, brokers, "127.0.0.1:4")
	if got := r.Resolve(); !slices.Equal(got, []string{"127.0.0.1:4"}) {
		t.Fatalf("after the change brokers resolved %v", got)
	}
	for _, path := range []string{"/rocketmq/nsaddr", "/rocketmq/nsaddr-unit1"} {
		if code, body := get(t, s, path); code != 200 || body != "127.0.0.1:1;127.0.0.1:2" {
			t.Fatalf("%s: %d %q", path, code, body)
		}
	}
}

type scrape map[string]*dto.MetricFamily

func scrapeMetrics(t *testing.T, s *namesrv.Server) scrape {
	t.Helper()
	code, text := get(t, s, "/metrics")
	if code != 200 {
		t.Fatalf("metrics %d", code)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value is the sample of family name whose labels include want.
func (sc scrape) value(name string, want ...string) float64 {
	f := sc[name]
	if f == nil {
		return -1
	}
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for i := 0; i+1 < len(want); i += 2 {
			match = match && labels[want[i]] == want[i+1]
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

func TestMetricsFollowTheServer(t *testing.T) {
	s := startServer(t, nil)
	before := scrapeMetrics(t, s)
	if v := before.value("rocketmq_namesrv_build_info"); v != 1 {
		t.Fatalf("build_info %v", v)
	}
	if v := before.value("rocketmq_namesrv_brokers_live"); v != 0 {
		t.Fatalf("brokers_live %v", v)
	}
	b := startBroker(t, brokersim.Config{Cluster: "c", Name: "b", Topics: []body.TopicConfig{brokersim.Topic("T", 4), brokersim.Topic("U", 4)}})
	mustRegister(t, b, s.Addr().String())
	c := dial(t, s, remotingclient.Options{})
	invoke(t, c, protocol.GetRouteInfoByTopic, nil, "topic", "T")
	invoke(t, c, protocol.GetRouteInfoByTopic, nil, "topic", "missing")
	invoke(t, c, protocol.PutKVConfig, nil, "namespace", "ns", "key", "k", "value", "v")
	invoke(t, c, 4242, nil)

	m := scrapeMetrics(t, s)
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"rocketmq_namesrv_broker_registrations_total", nil, 1},
		{"rocketmq_namesrv_broker_registrations_unchanged_total", nil, 0},
		{"rocketmq_namesrv_route_views_built_total", nil, 2},
		{"rocketmq_namesrv_brokers_live", nil, 1},
		{"rocketmq_namesrv_clusters", nil, 1},
		{"rocketmq_namesrv_topics", nil, 2},
		{"rocketmq_namesrv_requests_total", []string{"request", "GET_ROUTEINFO_BY_TOPIC", "code", "105", "result", "SUCCESS"}, 1},
		{"rocketmq_namesrv_requests_total", []string{"request", "GET_ROUTEINFO_BY_TOPIC", "result", "TOPIC_NOT_EXIST"}, 1},
		{"rocketmq_namesrv_requests_total", []string{"request", "REGISTER_BROKER", "result", "SUCCESS"}, 1},
		{"rocketmq_namesrv_requests_total", []string{"request", "other", "result", "REQUEST_CODE_NOT_SUPPORTED"}, 1},
		{"rocketmq_namesrv_request_duration_seconds", []string{"request", "GET_ROUTEINFO_BY_TOPIC"}, 2},
		{"rocketmq_namesrv_connections_open", nil, 2},
		{"rocketmq_namesrv_kv_entries", nil, 1},
		{"rocketmq_namesrv_kv_namespaces", nil, 1},
	}
	for _, c := range checks {
		if got := m.value(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	b.DropConnections()
	eventually(t, "eviction", func() bool { return s.Routes().Stats().LiveBrokers == 0 })
	after := scrapeMetrics(t, s)
	if v := after.value("rocketmq_namesrv_broker_evictions_total", "reason", "connection_closed"); v != 1 {
		t.Fatalf("evictions %v", v)
	}
	if v := after.value("rocketmq_namesrv_brokers_live"); v != 0 {
		t.Fatalf("brokers_live after eviction %v", v)
	}
	if v := after.value("rocketmq_namesrv_connections_closed_total", "reason", "peer"); v != 1 {
		t.Fatalf("connections closed %v", v)
	}
	if after["process_resident_memory_bytes"] == nil || after["go_goroutines"] == nil {
		t.Fatal("runtime and process collectors missing")
	}
}
