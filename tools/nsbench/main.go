// Command nsbench is the NameServer load generator: pipelined route queries,
// broker registration storms, or both, over the real protocol, bounded in
// time and count, against a NameServer on loopback. It reports throughput,
// latency percentiles, and the server's CPU per request and resident memory
// read from /proc (give -pid, or let -spawn start the server and also time
// its start; -spawn-cmd starts any NameServer, Java's included, by a
// command line). -mode curves sweeps sizes (memory, registration CPU, route
// CPU and p99, a restart storm) into CSV and Markdown tables, and -mode
// plot draws them as SVG into docs/benchmarks.md. docs/benchmarks.md lists
// the figures and the commands.
//
//	nsbench -spawn bin/namesrv -mode route -conns 4 -inflight 64 -topics 100 -duration 20s
//	nsbench -addr 127.0.0.1:9876 -pid $(pidof namesrv) -mode register -brokers 100 -topics-per-broker 1000
//	nsbench -spawn bin/namesrv -mode curves -out docs/curves
//	nsbench -spawn-cmd 'exec bin/namesrv --listen-port {port} --kv-config-path {kv}' -mode start
//	nsbench -mode plot -out docs/curves -doc docs/benchmarks.md
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/tools/loadgen"
)

type options struct {
	args     []string
	addr     string
	pid      int
	spawn    string
	spawnCmd string
	mode     string
	duration time.Duration
	warmup   time.Duration

	spawnTimeout time.Duration

	conns, inflight, topics int
	version                 int
	binary                  bool
	maxRequests             int64

	brokers, topicsPerBroker int
	interval                 time.Duration
	compressed               bool
	shared                   bool
	newVersion               bool
	changedTopics            int
	setupBrokers             int
	windows                  int

	curves curveOptions
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "nsbench:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	var o options
	fs := flag.NewFlagSet("nsbench", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:9876", "NameServer remoting address (ignored with -spawn or -spawn-cmd)")
	fs.IntVar(&o.pid, "pid", 0, "NameServer process id, for its CPU time and RSS (set by -spawn or -spawn-cmd)")
	fs.StringVar(&o.spawn, "spawn", "", "start this namesrv binary on a free loopback port, time its start, and stop it at the end")
	fs.StringVar(&o.spawnCmd, "spawn-cmd", "", "like -spawn, for any NameServer: run this command line with sh -c, {port}, {dir}, {kv} and {config} replaced "+
		"(also in the environment as NSBENCH_PORT, NSBENCH_DIR, NSBENCH_KV_CONFIG_PATH, NSBENCH_CONFIG_PATH); "+
		"the process of its process group that listens on the port is measured")
	fs.DurationVar(&o.spawnTimeout, "spawn-timeout", 30*time.Second, "how long a spawned server may take to answer its first request")
	fs.StringVar(&o.mode, "mode", "route", "route, register, mixed (route load quiet, then during a registration storm), start (start-up only), curves (the cost-curve sweep into -out) or plot (SVGs and the report from -out's CSV files)")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "measured time (each phase in mixed mode)")
	fs.IntVar(&o.windows, "windows", 1, "mixed mode: alternate quiet and storm windows this many times, each -duration/windows long, so a shared host's drift falls on both phases")
	fs.DurationVar(&o.warmup, "warmup", 5*time.Second, "unmeasured route load before measuring")
	fs.IntVar(&o.conns, "conns", 4, "route-query connections")
	fs.IntVar(&o.inflight, "inflight", 64, "route queries in flight per connection")
	fs.IntVar(&o.topics, "topics", 100, "topics queried (registered by -setup-brokers brokers)")
	fs.IntVar(&o.version, "version", int(protocol.V5_3_3), "request version: 317 (rocketmq-client-go) gets the legacy route dialect, >= 401 the standard one")
	fs.BoolVar(&o.binary, "binary", false, "send ROCKETMQ binary headers instead of JSON")
	fs.Int64Var(&o.maxRequests, "max-requests", 0, "stop after this many route queries (0: duration only)")
	fs.IntVar(&o.brokers, "brokers", 10, "brokers in the registration storm")
	fs.IntVar(&o.topicsPerBroker, "topics-per-broker", 1000, "topics of each storm broker")
	fs.DurationVar(&o.interval, "interval", time.Second, "registration period of each storm broker (real brokers: 30s)")
	fs.BoolVar(&o.compressed, "compressed", false, "storm brokers send zlib bodies")
	fs.BoolVar(&o.shared, "shared-topics", false, "storm brokers all serve the same topic names (else each has its own)")
	fs.BoolVar(&o.newVersion, "new-version", false, "every registration carries a new DataVersion (else the same one: heartbeats)")
	fs.IntVar(&o.changedTopics, "changed-topics", 0, "alternate registrations also differ in this many topics' write queue counts (implies -new-version)")
	fs.IntVar(&o.setupBrokers, "setup-brokers", 2, "brokers that register the queried topics (route and mixed modes)")
	o.curves.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.args = args
	if o.curves.quick {
		if err := applyQuick(fs); err != nil {
			return err
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	l, err := o.launcher()
	if err != nil {
		return err
	}
	switch o.mode {
	case "route", "register", "mixed":
	case "start":
		if l == nil {
			return errors.New("-mode start needs -spawn or -spawn-cmd")
		}
	case "curves":
		return curvesMode(ctx, &o, l, out)
	case "plot":
		return plotMode(&o, out)
	default:
		return fmt.Errorf("unknown mode %q", o.mode)
	}
	if l != nil {
		srv, err := spawn(ctx, l, o.spawnTimeout)
		if err != nil {
			return err
		}
		defer srv.stop()
		o.addr, o.pid = srv.addr, srv.pid
		fmt.Fprintf(out, "server: %s, pid %d (%s), start to first answer %v\n", o.addr, o.pid, srv.name, srv.startup.Round(100*time.Microsecond))
		if u, err := loadgen.ReadProc(o.pid); err == nil {
			fmt.Fprintf(out, "server: idle RSS %.1f MiB\n", mib(u.RSS))
		}
	}

	switch o.mode {
	case "route":
		return routeMode(ctx, &o, out)
	case "register":
		return registerMode(ctx, &o, out)
	case "mixed":
		return mixedMode(ctx, &o, out)
	}
	return nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// setup registers the topics route queries ask for, and keeps their brokers
// registered (heartbeats every 30 s) until ctx ends.
func setup(ctx context.Context, o *options) (topics []string, wait func(), err error) {
	storm := &loadgen.RegisterStorm{Addr: o.addr, Brokers: o.setupBrokers, TopicsPerBroker: o.topics, SharedTopics: true,
		Interval: 30 * time.Second, Generation: body.Broker5}
	done := make(chan error, 1)
	go func() {
		_, err := storm.Run(ctx)
		done <- err
	}()
	c, err := remotingclient.Dial(ctx, o.addr, remotingclient.Options{})
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	for i := range o.topics {
		topics = append(topics, loadgen.TopicName(true, 0, i))
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := c.Invoke(ctx, &remotingclient.Request{Code: protocol.GetRouteInfoByTopic, Ext: []remoting.Pair{{Key: "topic", Value: topics[len(topics)-1]}}})
		if err != nil {
			return nil, nil, err
		}
		if r.Code == protocol.Success && strings.Count(string(r.Body), `"brokerName"`) >= 2*o.setupBrokers {
			break
		}
		if time.Now().After(deadline) {
			return nil, nil, errors.New("setup brokers did not register")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return topics, func() { <-done }, nil //nolint:errcheck // the setup brokers are only stopped: how they end is no finding
}

func (o *options) routeLoad(topics []string) *loadgen.RouteLoad {
	t := remoting.JSON
	if o.binary {
		t = remoting.RocketMQ
	}
	return &loadgen.RouteLoad{Addr: o.addr, Conns: o.conns, Inflight: o.inflight, Topics: topics,
		Version: int32(o.version), Type: t, MaxRequests: o.maxRequests}
}

// measure runs f, reading the server's CPU and RSS around it.
func measure(o *options, f func() error) (cpu time.Duration, rss int64, err error) {
	var before loadgen.ProcUsage
	if o.pid > 0 {
		if before, err = loadgen.ReadProc(o.pid); err != nil {
			return 0, 0, err
		}
	}
	if err := f(); err != nil {
		return 0, 0, err
	}
	if o.pid > 0 {
		after, err := loadgen.ReadProc(o.pid)
		if err != nil {
			return 0, 0, err
		}
		return after.CPU - before.CPU, after.RSS, nil
	}
	return 0, 0, nil
}

// connectGrace bounds a timed load's connecting beyond its duration: the
// duration starts once its connections are established, so that a dial
// waiting for a CPU on a busy host does not eat a short window.
const connectGrace = 30 * time.Second

// timedLoad runs load for d from when its connections are established.
func timedLoad(ctx context.Context, load *loadgen.RouteLoad, d time.Duration) (*loadgen.RouteResult, error) {
	ctx, cancel := context.WithTimeout(ctx, d+connectGrace)
	defer cancel()
	load.Duration = d
	return load.Run(ctx)
}

func runRoute(ctx context.Context, o *options, topics []string, d time.Duration) (*loadgen.RouteResult, time.Duration, int64, error) {
	var res *loadgen.RouteResult
	cpu, rss, err := measure(o, func() error {
		var err error
		res, err = timedLoad(ctx, o.routeLoad(topics), d)
		return err
	})
	return res, cpu, rss, err
}

func reportRoute(out io.Writer, label string, o *options, res *loadgen.RouteResult, cpu time.Duration, rss int64) {
	fmt.Fprintf(out, "%s: %d route queries in %v over %d conns x %d in flight, %d topics, version %d: %.0f/s, errors %d\n",
		label, res.Requests, res.Elapsed.Round(time.Millisecond), o.conns, o.inflight, o.topics, o.version, res.Throughput(), res.Errors)
	fmt.Fprintf(out, "%s: latency p50 %v p99 %v p999 %v max %v\n", label,
		res.Latency.Quantile(0.5), res.Latency.Quantile(0.99), res.Latency.Quantile(0.999), res.Latency.Max())
	if o.pid > 0 && res.Requests > 0 {
		fmt.Fprintf(out, "%s: server CPU %v = %.2f us per query; server RSS %.1f MiB\n", label,
			cpu.Round(time.Millisecond), float64(cpu.Microseconds())/float64(res.Requests), mib(rss))
	}
}

// prepared registers the queried topics and warms the server up; stop
// ends the setup brokers' heartbeats and waits for them.
func prepared(ctx context.Context, o *options) (topics []string, stop func(), err error) {
	sctx, cancel := context.WithCancel(ctx)
	topics, wait, err := setup(sctx, o)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	stop = func() { cancel(); wait() }
	if o.warmup > 0 {
		if _, _, _, err := runRoute(ctx, o, topics, o.warmup); err != nil {
			stop()
			return nil, nil, err
		}
	}
	return topics, stop, nil
}

func routeMode(ctx context.Context, o *options, out io.Writer) error {
	topics, stop, err := prepared(ctx, o)
	if err != nil {
		return err
	}
	defer stop()
	res, cpu, rss, err := runRoute(ctx, o, topics, o.duration)
	if err != nil {
		return err
	}
	reportRoute(out, "route", o, res, cpu, rss)
	return nil
}

func (o *options) storm() *loadgen.RegisterStorm {
	return &loadgen.RegisterStorm{Addr: o.addr, Brokers: o.brokers, TopicsPerBroker: o.topicsPerBroker, SharedTopics: o.shared,
		Interval: o.interval, Compressed: o.compressed, Generation: body.Broker5,
		NewVersion: o.newVersion, ChangedTopics: o.changedTopics}
}

func reportStorm(out io.Writer, o *options, res *loadgen.RegisterResult, cpu time.Duration, rss int64) {
	form := "JSON"
	if o.compressed {
		form = "zlib"
	}
	names := "distinct"
	if o.shared {
		names = "shared"
	}
	kind := "same DataVersion"
	switch {
	case o.changedTopics > 0:
		kind = fmt.Sprintf("new DataVersion, %d topics changed", o.changedTopics)
	case o.newVersion:
		kind = "new DataVersion"
	}
	fmt.Fprintf(out, "register: %d registrations (%d brokers x %d %s topics, %s body of %d bytes, %s, every %v) in %v, errors %d\n",
		res.Registrations, o.brokers, o.topicsPerBroker, names, form, res.BodyBytes, kind, o.interval, res.Elapsed.Round(time.Millisecond), res.Errors)
	fmt.Fprintf(out, "register: latency p50 %v p99 %v max %v\n", res.Latency.Quantile(0.5), res.Latency.Quantile(0.99), res.Latency.Max())
	if o.pid > 0 && res.Registrations > 0 {
		fmt.Fprintf(out, "register: server CPU %v = %.2f ms per registration; server RSS %.1f MiB\n",
			cpu.Round(time.Millisecond), float64(cpu.Microseconds())/1000/float64(res.Registrations), mib(rss))
	}
}

func registerMode(ctx context.Context, o *options, out io.Writer) error {
	var res *loadgen.RegisterResult
	cpu, rss, err := measure(o, func() error {
		sctx, cancel := context.WithTimeout(ctx, o.duration)
		defer cancel()
		var err error
		res, err = o.storm().Run(sctx)
		return err
	})
	if err != nil {
		return err
	}
	reportStorm(out, o, res, cpu, rss)
	return nil
}
