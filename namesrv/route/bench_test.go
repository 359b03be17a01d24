package route

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
	"github.com/kube-namesrv/kube-namesrv/namesrv/kvconfig"
)

// clusterOf registers brokers groups of a master and a slave, each serving
// topics topics of its own plus one topic every group serves.
func clusterOf(tb testing.TB, groups, topicsPer int) (*Table, *clock) {
	tb.Helper()
	c := &clock{}
	c.now.Store(1_700_000_000_000)
	t := New(Options{Now: c.Now})
	for g := range groups {
		name := fmt.Sprintf("broker-%04d", g)
		specs := []string{"Shared:8:8:6"}
		for i := range topicsPer {
			specs = append(specs, fmt.Sprintf("%s-t%04d:8:8:6", name, i))
		}
		t.Register(reg("c", name, 0, fmt.Sprintf("10.0.%d.%d:10911", g/250, g%250), 1, nil, topics(specs...)...))
		t.Register(reg("c", name, 1, fmt.Sprintf("10.1.%d.%d:10911", g/250, g%250), 1, nil))
	}
	return t, c
}

// BenchmarkRouteEncode measures building a route body, what the first
// query after a change pays; later queries reuse it.
func BenchmarkRouteEncode(b *testing.B) {
	for _, groups := range []int{1, 16} {
		t, _ := clusterOf(b, groups, 1)
		rd, ok := t.RouteData("Shared")
		if !ok {
			b.Fatal("no route")
		}
		for _, d := range []fjson.Dialect{fjson.Legacy, fjson.Standard} {
			b.Run(fmt.Sprintf("groups-%d/dialect-%d", groups, d), func(b *testing.B) {
				var out []byte
				b.ReportAllocs()
				for b.Loop() {
					out = body.AppendTopicRouteData(out[:0], rd, d)
				}
				b.SetBytes(int64(len(out)))
			})
		}
	}
}

// BenchmarkRouteLookup is the cached route query of the table alone.
func BenchmarkRouteLookup(b *testing.B) {
	t, _ := clusterOf(b, 100, 100)
	name := []byte("broker-0042-t0042")
	t.Route(name, fjson.Standard)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := t.Route(name, fjson.Standard); !ok {
			b.Fatal("no route")
		}
	}
}

// BenchmarkScanExpired is the periodic expiry scan over 1,000 broker
// addresses (500 groups of master and slave, 10 topics each): a scan that
// finds everyone alive, as every 5 s, and one that evicts them all.
func BenchmarkScanExpired(b *testing.B) {
	b.Run("none-expired", func(b *testing.B) {
		t, _ := clusterOf(b, 500, 10)
		b.ReportAllocs()
		for b.Loop() {
			if n := t.ScanExpired(); n != 0 {
				b.Fatalf("evicted %d", n)
			}
		}
	})
	b.Run("all-expired", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			t, c := clusterOf(b, 500, 10)
			c.advance(3 * time.Minute)
			b.StartTimer()
			if n := t.ScanExpired(); n != 1000 {
				b.Fatalf("evicted %d", n)
			}
		}
	})
}

// BenchmarkLiveBrokers is the export behind GET /routes/summary over 1,000
// broker addresses; the writers' lock is held only for the copy.
func BenchmarkLiveBrokers(b *testing.B) {
	t, _ := clusterOf(b, 500, 10)
	b.ReportAllocs()
	for b.Loop() {
		if n := len(t.LiveBrokers()); n != 1000 {
			b.Fatalf("%d brokers", n)
		}
	}
}

// BenchmarkRebuildWithOrderConf switches orderMessageEnable on and off over
// 10,000 topics, a quarter of them with an ORDER_TOPIC_CONFIG entry: each
// switch rebuilds every view, and "on" reads every topic's entry from the
// KV store's snapshot, as any registration building views does.
func BenchmarkRebuildWithOrderConf(b *testing.B) {
	kv, err := kvconfig.Open(filepath.Join(b.TempDir(), "kv.json"), kvconfig.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	var changes []kvconfig.Change
	specs := make([]string, 0, 10000)
	for i := range 10000 {
		name := fmt.Sprintf("topic-%05d", i)
		specs = append(specs, name+":8:8:6")
		if i%4 == 0 {
			changes = append(changes, kvconfig.Change{Namespace: kvconfig.OrderTopicConfigNamespace, Key: name, Value: "broker-a:8"})
		}
	}
	if _, err := kv.Apply(changes); err != nil {
		b.Fatal(err)
	}
	t := New(Options{OrderConf: func(topic string) (string, bool) { return kv.Get(kvconfig.OrderTopicConfigNamespace, topic) }})
	t.Register(reg("c", "broker-a", 0, "10.0.0.1:10911", 1, nil, topics(specs...)...))
	b.ReportAllocs()
	for b.Loop() {
		t.SetViewOptions(ViewOptions{OrderMessageEnable: true})
		t.SetViewOptions(ViewOptions{})
	}
}
