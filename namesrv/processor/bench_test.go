package processor

import (
	"crypto/x509"
	"fmt"
	"hash/crc32"
	"log/slog"
	"net/netip"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/authz"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/kvconfig"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/namesrv/route"
)

func newProcessor(tb testing.TB) *Processor {
	tb.Helper()
	return newProcessorAt(tb, time.Now)
}

// newProcessorAt is newProcessor with the route table's clock.
func newProcessorAt(tb testing.TB, now func() time.Time) *Processor {
	tb.Helper()
	kv, err := kvconfig.Open(filepath.Join(tb.TempDir(), "kv.json"), kvconfig.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	cfg := config.Default()
	return New(Options{
		Routes: route.New(route.Options{Now: now}),
		KV:     kv,
		Config: config.NewStore(cfg, nil, slog.New(slog.DiscardHandler)),
	})
}

// benchConn stands in for a peer's connection: by default a plain one
// from 127.0.0.1.
type benchConn struct {
	marked   bool
	addr     netip.AddrPort
	cert     *x509.Certificate
	internal bool
	tag      uint64
}

func (*benchConn) Close() error       { return nil }
func (*benchConn) RemoteAddr() string { return "127.0.0.1:1" }
func (c *benchConn) Mark()            { c.marked = true }
func (c *benchConn) Marked() bool     { return c.marked }
func (c *benchConn) PeerAddr() netip.AddrPort {
	if !c.addr.IsValid() {
		return netip.MustParseAddrPort("127.0.0.1:1")
	}
	return c.addr
}
func (c *benchConn) PeerCertificate() *x509.Certificate { return c.cert }
func (c *benchConn) Internal() bool                     { return c.internal }
func (c *benchConn) Tag() uint64                        { return c.tag }
func (c *benchConn) SetTag(v uint64)                    { c.tag = v }

// registration builds a REGISTER_BROKER request of a broker with n topics,
// the first changed of which have 16 write queues instead of 8.
func registration(tb testing.TB, broker string, n int, counter int64, compressed bool, changed ...int) *remoting.Command {
	tb.Helper()
	rb := &body.RegisterBody{DataVersion: body.DataVersion{Counter: counter, Timestamp: 1700000000000}, FilterServers: []string{}}
	for i := range n {
		writeQueues := int32(8)
		if len(changed) > 0 && i < changed[0] {
			writeQueues = 16
		}
		rb.Topics = append(rb.Topics, body.TopicConfig{Name: fmt.Appendf(nil, "%s-topic-%05d", broker, i), ReadQueueNums: 8, WriteQueueNums: writeQueues, Perm: 6})
	}
	data, err := body.EncodeRegisterBody(rb, body.Broker5, compressed)
	if err != nil {
		tb.Fatal(err)
	}
	ext := func(k, v string) remoting.ExtField { return remoting.ExtField{Key: []byte(k), Value: []byte(v)} }
	return &remoting.Command{
		Code: protocol.RegisterBroker, Version: protocol.V5_3_3, Body: data,
		Ext: []remoting.ExtField{
			ext("brokerName", broker), ext("brokerAddr", "10.0.0.1:10911"), ext("clusterName", "DefaultCluster"),
			ext("brokerId", "0"), ext("haServerAddr", "10.0.0.1:10912"), ext("compressed", "false"),
			ext("enableActingMaster", "false"),
			ext("bodyCrc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(data)&0x7FFFFFFF), 10)),
		},
	}
}

// BenchmarkRegister measures a whole REGISTER_BROKER (CRC, decode, apply):
// the first registration; a 30 s re-registration repeating the previous
// one byte for byte (heartbeat: recognised, not decoded); the same
// DataVersion in other bytes (sameversion: decoded, no view rebuilt); a new
// DataVersion with the same topics (newversion); and a new DataVersion
// with 10 topics changed (changed10: 10 views rebuilt).
func BenchmarkRegister(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, compressed := range []bool{false, true} {
			form := "json"
			if compressed {
				form = "zlib"
			}
			for _, kind := range []string{"first", "heartbeat", "sameversion", "newversion", "changed10"} {
				b.Run(fmt.Sprintf("%s/%d/%s", form, n, kind), func(b *testing.B) {
					p := newProcessor(b)
					c := &benchConn{}
					var resp remoting.Response
					reqs := []*remoting.Command{registration(b, "broker-a", n, 1, compressed), registration(b, "broker-a", n, 2, compressed)}
					switch kind {
					case "sameversion":
						// The same body and DataVersion under another
						// checksum field: not a byte-for-byte repeat.
						reqs[1] = registration(b, "broker-a", n, 1, compressed)
						reqs[1].Ext[len(reqs[1].Ext)-1] = remoting.ExtField{Key: []byte("bodyCrc32"), Value: []byte("0")}
					case "changed10":
						reqs[1] = registration(b, "broker-a", n, 2, compressed, 10)
					}
					b.SetBytes(int64(len(reqs[0].Body)))
					b.ReportAllocs()
					var cpu time.Duration
					i := 0
					for b.Loop() {
						switch kind {
						case "first":
							b.StopTimer()
							p = newProcessor(b)
							b.StartTimer()
						case "heartbeat", "sameversion":
							if i == 0 {
								b.StopTimer()
								p.serve(c, reqs[0], &resp)
								b.StartTimer()
							}
						}
						req := reqs[0]
						switch kind {
						case "sameversion", "newversion", "changed10":
							// Alternating, so that no request repeats the
							// one before it.
							req = reqs[i%2]
						}
						resp.Reset()
						start := processCPU(b)
						p.serve(c, req, &resp)
						cpu += processCPU(b) - start
						if resp.Code != protocol.Success {
							b.Fatalf("%d %s", resp.Code, resp.Remark)
						}
						i++
					}
					b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
				})
			}
		}
	}
}

// BenchmarkServeRoute is the steady-state route query: header fields
// already decoded, body cached; with authorization off (authz=off) and on
// (authz=on: the peer's grants worked out on its first request, then read
// from its connection's tag).
func BenchmarkServeRoute(b *testing.B) {
	// The broker registers, then again a minute later, by which time the
	// table has settled its new topics into its main map, as a table that
	// stopped growing does.
	now := time.Unix(1_700_000_000, 0)
	p := newProcessorAt(b, func() time.Time { return now })
	var resp remoting.Response
	reg := registration(b, "broker-a", 100, 1, false)
	p.serve(&benchConn{}, reg, &resp)
	now = now.Add(time.Minute)
	p.serve(&benchConn{}, reg, &resp)
	policy, err := authz.Parse(authz.Config{
		Broker: authz.Lists{Identities: "uri:spiffe://cluster.local/ns/rocketmq/sa/broker-*", Networks: "10.1.0.0/16"},
		Admin:  authz.Lists{Identities: "cn:operator,uri:spiffe://cluster.local/ns/ops/sa/mqadmin"},
		Read:   authz.Lists{Identities: "dns:*.clients.svc.cluster.local", Networks: "10.0.0.0/8,fd00::/8"},
	})
	if err != nil {
		b.Fatal(err)
	}
	// Each case runs without and then with authorization, back to back,
	// so that the pair sees the same load on a shared machine.
	for _, tt := range []struct {
		name    string
		topic   string
		version int32
	}{{"found-legacy", "broker-a-topic-00042", protocol.V4_5_2}, {"found-standard", "broker-a-topic-00042", protocol.V5_3_3}, {"missing", "%RETRY%group", protocol.V5_3_3}} {
		for _, az := range []string{"off", "on"} {
			b.Run("authz="+az+"/"+tt.name, func(b *testing.B) {
				p.policy = nil
				c := &benchConn{}
				if az == "on" {
					p.policy = policy
					c.addr = netip.MustParseAddrPort("10.2.3.4:40000")
					c.cert = &x509.Certificate{DNSNames: []string{"app-0.clients.svc.cluster.local"}}
				}
				req := &remoting.Command{Code: protocol.GetRouteInfoByTopic, Version: tt.version,
					Ext: []remoting.ExtField{{Key: []byte("topic"), Value: []byte(tt.topic)}}}
				resp.Reset()
				p.serve(c, req, &resp)
				if resp.Code == protocol.NoPermission {
					b.Fatalf("refused: %s", resp.Remark)
				}
				b.ReportAllocs()
				cpu := processCPU(b)
				for b.Loop() {
					resp.Reset()
					p.serve(c, req, &resp)
				}
				b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// processCPU is the CPU time (user and system) the process has used: what
// a request costs the NameServer, which wall time on a machine shared with
// other work overstates by the time the benchmark waited for a core.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRestartStorm is the registration side of a restart storm: a
// fresh NameServer receives the first registrations of 1,000 brokers with
// 1,000 topics each (distinct names), one after another, as nsbench's
// storm curve sends them over a second. One op is the whole storm.
func BenchmarkRestartStorm(b *testing.B) {
	const brokers, topicsPer = 1000, 1000
	reqs := make([]*remoting.Command, brokers)
	for i := range reqs {
		reqs[i] = registration(b, fmt.Sprintf("broker-%03d", i), topicsPer, 1, false)
		reqs[i].Ext[1].Value = fmt.Appendf(nil, "10.0.%d.%d:10911", i/250, i%250)
	}
	b.ReportAllocs()
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		p := newProcessor(b)
		c := &benchConn{}
		var resp remoting.Response
		runtime.GC()
		b.StartTimer()
		start := processCPU(b)
		for _, req := range reqs {
			resp.Reset()
			p.serve(c, req, &resp)
			if resp.Code != protocol.Success {
				b.Fatalf("%d %s", resp.Code, resp.Remark)
			}
		}
		cpu += processCPU(b) - start
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}
