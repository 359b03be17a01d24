package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/tools/loadgen"
)

// curveOptions bound the cost-curve sweep (-mode curves): which curves,
// their grids and how long each point runs.
type curveOptions struct {
	out   string
	doc   string
	which string
	quick bool

	compare, compareLabel string

	memBrokers, memEntries intList
	memInterval            time.Duration

	regTopics   intList
	regDuration time.Duration
	regMax      int
	regChanged  int

	routeTables   intList
	routeBrokers  int
	routeSample   int
	routeDuration time.Duration
	routeWarmup   time.Duration

	stormBrokers intList
	stormTopics  int
	stormSpread  time.Duration
	stormTimeout time.Duration
}

// intList is a comma-separated list of positive integers flag.
type intList []int

func (l *intList) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func (l *intList) Set(v string) error {
	var out intList
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	*l = out
	return nil
}

func (c *curveOptions) register(fs *flag.FlagSet) {
	c.memBrokers = intList{10, 100, 1000}
	c.memEntries = intList{1000, 10000, 100000, 1000000}
	c.regTopics = intList{100, 1000, 10000, 100000}
	c.routeTables = intList{1000, 10000, 100000, 1000000}
	c.stormBrokers = intList{100, 1000}
	fs.StringVar(&c.out, "out", "docs/curves", "curves: directory of the CSV and Markdown tables; plot: directory of the CSV files and SVGs")
	fs.StringVar(&c.doc, "doc", "", "plot: Markdown file whose curves:begin/curves:end lines get the report (else it goes to stdout)")
	fs.StringVar(&c.compare, "compare", "", "plot: directory of another NameServer's curve CSVs (as -mode curves wrote them), drawn dashed beside ours and compared point by point")
	fs.StringVar(&c.compareLabel, "compare-label", "", "plot: the name of -compare's server in legends and tables (default: the directory's name)")
	fs.StringVar(&c.which, "curves", "memory,register,route,storm", "curves: which curves to measure")
	fs.BoolVar(&c.quick, "quick", false, "curves: a tiny grid with short points (a smoke test, not figures)")
	fs.Var(&c.memBrokers, "mem-brokers", "memory curve: broker counts")
	fs.Var(&c.memEntries, "mem-entries", "memory curve: total topic entries (sum over brokers)")
	fs.DurationVar(&c.memInterval, "mem-interval", time.Second, "memory curve: time between the two registration rounds")
	fs.Var(&c.regTopics, "reg-topics", "registration curve: topics of the one broker")
	fs.DurationVar(&c.regDuration, "reg-duration", 4*time.Second, "registration curve: measured time per point")
	fs.IntVar(&c.regMax, "reg-max", 20000, "registration curve: at most this many measured registrations per point")
	fs.IntVar(&c.regChanged, "reg-changed", 10, "registration curve: topics changed by the third kind's registrations")
	fs.Var(&c.routeTables, "route-tables", "route curve: topics in the table")
	fs.IntVar(&c.routeBrokers, "route-brokers", 10, "route curve: brokers holding the table (distinct names)")
	fs.IntVar(&c.routeSample, "route-sample", 10000, "route curve and storm: at most this many distinct topics queried")
	fs.DurationVar(&c.routeDuration, "route-duration", 3*time.Second, "route curve: measured time per point")
	fs.DurationVar(&c.routeWarmup, "route-warmup", time.Second, "route curve: unmeasured load before each point")
	fs.Var(&c.stormBrokers, "storm-brokers", "restart storm: broker counts")
	fs.IntVar(&c.stormTopics, "storm-topics", 1000, "restart storm: topics of each broker (distinct names)")
	fs.DurationVar(&c.stormSpread, "storm-spread", time.Second, "restart storm: the brokers' first registrations spread evenly over this time")
	fs.DurationVar(&c.stormTimeout, "storm-timeout", time.Minute, "restart storm: give up when the topics are not all routable by then")
}

// quickGrid is -quick: a tiny grid with short points, for the flags the
// command line did not set.
var quickGrid = map[string]string{
	"mem-brokers": "2", "mem-entries": "40,400", "mem-interval": "50ms",
	"reg-topics": "20,200", "reg-duration": "300ms", "reg-max": "400", "reg-changed": "5",
	"route-tables": "100,1000", "route-brokers": "2", "route-sample": "100", "route-duration": "300ms", "route-warmup": "100ms",
	"storm-brokers": "5", "storm-topics": "50", "storm-spread": "100ms", "storm-timeout": "20s",
}

func applyQuick(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, v := range quickGrid {
		if !set[name] {
			if err := fs.Set(name, v); err != nil {
				return fmt.Errorf("-quick %s=%s: %w", name, v, err)
			}
		}
	}
	return nil
}

// minTopicsPerBroker is the smallest broker the memory curve registers: a
// 5.x broker's first registration with a single topic is refused (it is
// taken for an incremental one), and a few topics per broker measure the
// brokers, not the topics.
const minTopicsPerBroker = 10

// frameBodyLimit is the largest JSON body the sweep sends: the default
// frameMaxLength of Java's NameServer and namesrv (16 MiB) less room for
// the header. Larger brokers send zlib bodies, as a real broker that large
// must (compressedRegister=true) unless both sides raise the limit.
const frameBodyLimit = 16<<20 - 4096

// bodyForm names a storm's body encoding for the tables.
func bodyForm(res *loadgen.RegisterResult) string {
	if res.Compressed {
		return "zlib"
	}
	return "json"
}

// target is the NameServer one curve point runs against.
type target struct {
	addr  string
	pid   int
	idle  int64 // RSS before the point, bytes
	stop  func()
	fresh bool
}

// sweep runs the curves, each point against a freshly spawned server
// (or, without -spawn or -spawn-cmd, against -addr/-pid for the route and
// registration curves), and writes their tables into c.out.
type sweep struct {
	o      *options
	l      *launcher // nil: -addr and -pid
	c      *curveOptions
	out    io.Writer
	broker int // next FirstBroker, so points against one server never collide
}

func (s *sweep) target(ctx context.Context) (*target, error) {
	if s.l == nil {
		t := &target{addr: s.o.addr, pid: s.o.pid, stop: func() {}}
		if t.pid > 0 {
			u, err := loadgen.ReadProc(t.pid)
			if err != nil {
				return nil, err
			}
			t.idle = u.RSS
		}
		return t, nil
	}
	srv, err := spawn(ctx, s.l, s.o.spawnTimeout)
	if err != nil {
		return nil, err
	}
	pid := srv.pid
	u, err := loadgen.ReadProc(pid)
	if err != nil {
		srv.stop()
		return nil, err
	}
	return &target{addr: srv.addr, pid: pid, idle: u.RSS, stop: srv.stop, fresh: true}, nil
}

// usage reads the target's CPU and RSS; without a pid both are zero.
func (t *target) usage() (loadgen.ProcUsage, error) {
	if t.pid <= 0 {
		return loadgen.ProcUsage{}, nil
	}
	return loadgen.ReadProc(t.pid)
}

func (s *sweep) firstBroker(n int) int {
	b := s.broker
	s.broker += n
	return b
}

func curvesMode(ctx context.Context, o *options, l *launcher, out io.Writer) error {
	c := &o.curves
	want := map[string]bool{}
	for name := range strings.SplitSeq(c.which, ",") {
		switch name {
		case "memory", "storm":
			if l == nil {
				return fmt.Errorf("the %s curve needs a fresh server per point: give -spawn or -spawn-cmd", name)
			}
		case "register", "route":
		default:
			return fmt.Errorf("unknown curve %q (memory, register, route, storm)", name)
		}
		want[name] = true
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	s := &sweep{o: o, l: l, c: c, out: out}
	meta := newMeta(o)
	start := time.Now()
	for _, curve := range []struct {
		name string
		run  func(context.Context) (*table, error)
	}{
		{"memory", s.memory}, {"register", s.register}, {"route", s.route}, {"storm", s.storm},
	} {
		if !want[curve.name] {
			continue
		}
		t, err := curve.run(ctx)
		if err != nil {
			return fmt.Errorf("%s curve: %w", curve.name, err)
		}
		if err := t.write(c.out); err != nil {
			return err
		}
	}
	meta.finish(time.Since(start))
	return meta.table().write(c.out)
}

func (s *sweep) logf(format string, args ...any) {
	fmt.Fprintf(s.out, format+"\n", args...)
}

// memory registers every broker twice (buffers reach their steady size),
// keeps the brokers connected, and reads the server's RSS.
func (s *sweep) memory(ctx context.Context) (*table, error) {
	t := newTable("memory", "broker_count", "names", "topics_per_broker", "topic_entries", "body", "idle_rss_mib", "rss_mib", "bytes_per_entry", "register_cpu_s")
	for _, shared := range []bool{false, true} {
		names := "distinct"
		if shared {
			names = "shared"
		}
		for _, brokers := range s.c.memBrokers {
			for _, entries := range s.c.memEntries {
				per := entries / brokers
				if per < minTopicsPerBroker {
					continue
				}
				tg, err := s.target(ctx)
				if err != nil {
					return nil, err
				}
				rss, cpu, form, err := s.memoryPoint(ctx, tg, brokers, per, shared)
				tg.stop()
				if err != nil {
					return nil, fmt.Errorf("%d brokers x %d %s topics: %w", brokers, per, names, err)
				}
				total := brokers * per
				perEntry := float64(rss-tg.idle) / float64(total)
				s.logf("memory: %d brokers x %d %s topics: RSS %.1f MiB (idle %.1f), %.0f bytes per topic entry, registration CPU %v",
					brokers, per, names, mib(rss), mib(tg.idle), perEntry, cpu)
				t.add(itoa(brokers), names, itoa(per), itoa(total), form, fmtf(mib(tg.idle), 1), fmtf(mib(rss), 1), fmtf(perEntry, 0), fmtf(cpu.Seconds(), 2))
			}
		}
	}
	return t, nil
}

func (s *sweep) memoryPoint(ctx context.Context, tg *target, brokers, per int, shared bool) (rss int64, cpu time.Duration, form string, err error) {
	storm := &loadgen.RegisterStorm{Addr: tg.addr, Brokers: brokers, TopicsPerBroker: per, SharedTopics: shared,
		Interval: s.c.memInterval, Rounds: 2, Hold: true, Generation: body.Broker5, FirstBroker: s.firstBroker(brokers), CompressAbove: frameBodyLimit}
	if err := storm.Prepare(); err != nil {
		return 0, 0, "", err
	}
	before, err := tg.usage()
	if err != nil {
		return 0, 0, "", err
	}
	hold, release := context.WithCancel(ctx)
	defer release()
	registered := make(chan struct{})
	storm.OnRoundsDone = func() { close(registered) }
	result := make(chan error, 1)
	var res *loadgen.RegisterResult
	go func() {
		var err error
		res, err = storm.Run(hold)
		result <- err
	}()
	select {
	case <-registered:
	case err := <-result:
		return 0, 0, "", fmt.Errorf("storm ended before its rounds: %w", err)
	case <-ctx.Done():
		release()
		<-result //nolint:errcheck // cancelled: ctx's error says why
		return 0, 0, "", ctx.Err()
	}
	// Let the last answers' buffers return and the scavenger settle.
	time.Sleep(500 * time.Millisecond)
	after, err := tg.usage()
	release()
	if rerr := <-result; err == nil {
		err = rerr
	}
	if err != nil {
		return 0, 0, "", err
	}
	if want := uint64(2 * brokers); res.Registrations != want || res.Errors != 0 {
		return 0, 0, "", fmt.Errorf("%d registrations, %d errors; want %d and none", res.Registrations, res.Errors, want)
	}
	return after.RSS, after.CPU - before.CPU, bodyForm(res), nil
}

// registrationKinds are the registration curve's series.
func (s *sweep) registrationKinds() []struct {
	name       string
	newVersion bool
	changed    int
} {
	return []struct {
		name       string
		newVersion bool
		changed    int
	}{
		{"same version", false, 0},
		{"new version", true, 0},
		{fmt.Sprintf("new version, %d topics changed", s.c.regChanged), true, s.c.regChanged},
	}
}

// register measures one broker re-registering back to back: after a first
// (unmeasured) registration that builds its topics, the server CPU per
// registration of each kind.
func (s *sweep) register(ctx context.Context) (*table, error) {
	t := newTable("register", "kind", "topics", "body", "body_bytes", "registrations", "cpu_ms_per_registration", "latency_p50_ms", "rss_mib")
	for _, kind := range s.registrationKinds() {
		for _, topics := range s.c.regTopics {
			if kind.changed > topics {
				continue
			}
			tg, err := s.target(ctx)
			if err != nil {
				return nil, err
			}
			row, err := s.registerPoint(ctx, tg, topics, kind.newVersion, kind.changed)
			tg.stop()
			if err != nil {
				return nil, fmt.Errorf("%s, %d topics: %w", kind.name, topics, err)
			}
			s.logf("register: %s, %d topics (%s): %s registrations, %s ms CPU each, latency p50 %s ms", kind.name, topics, row[0], row[2], row[3], row[4])
			t.add(append([]string{kind.name, itoa(topics)}, row...)...)
		}
	}
	return t, nil
}

func (s *sweep) registerPoint(ctx context.Context, tg *target, topics int, newVersion bool, changed int) ([]string, error) {
	// The first registration builds the topics; the measured ones follow
	// on the same connection, back to back, until the time or count bound.
	var before, after loadgen.ProcUsage
	var usageErr error
	var deadline time.Time
	measured := 0
	done := make(chan struct{})
	storm := &loadgen.RegisterStorm{Addr: tg.addr, Brokers: 1, TopicsPerBroker: topics, Interval: time.Millisecond,
		Hold: true, Generation: body.Broker5, NewVersion: newVersion, ChangedTopics: changed, FirstBroker: s.firstBroker(1), CompressAbove: frameBodyLimit,
		OnRegistered: func(_, round int) bool {
			if round == 0 {
				before, usageErr = tg.usage()
				deadline = time.Now().Add(s.c.regDuration)
				return usageErr == nil
			}
			if round < s.c.regMax && time.Now().Before(deadline) {
				return true
			}
			after, usageErr = tg.usage()
			measured = round
			close(done)
			return false
		}}
	hold, release := context.WithCancel(ctx)
	defer release()
	held := make(chan error, 1)
	var res *loadgen.RegisterResult
	go func() {
		var err error
		res, err = storm.Run(hold)
		held <- err
	}()
	select {
	case <-done:
	case err := <-held:
		return nil, fmt.Errorf("registrations ended early: %w (usage: %v)", err, usageErr)
	case <-ctx.Done():
		release()
		<-held //nolint:errcheck // cancelled: ctx's error says why
		return nil, ctx.Err()
	}
	release()
	if err := <-held; err != nil {
		return nil, err
	}
	if usageErr != nil {
		return nil, usageErr
	}
	if measured == 0 || res.Errors != 0 {
		return nil, fmt.Errorf("%d registrations measured, %d errors", measured, res.Errors)
	}
	cpuMS := float64((after.CPU - before.CPU).Microseconds()) / 1000 / float64(measured)
	return []string{bodyForm(res), itoa(res.BodyBytes), itoa(measured), fmtf(cpuMS, 3),
		fmtf(float64(res.Latency.Quantile(0.5).Microseconds())/1000, 2), fmtf(mib(after.RSS), 1)}, nil
}

// route preloads a table of T topics and runs the closed-loop route load
// over a sample of them.
func (s *sweep) route(ctx context.Context) (*table, error) {
	t := newTable("route", "table_topics", "sampled_topics", "queries", "queries_per_s", "cpu_us_per_query", "p50_us", "p99_us", "rss_mib")
	for _, size := range s.c.routeTables {
		per := size / s.c.routeBrokers
		if per < minTopicsPerBroker {
			return nil, fmt.Errorf("%d topics over %d brokers: fewer than %d per broker", size, s.c.routeBrokers, minTopicsPerBroker)
		}
		tg, err := s.target(ctx)
		if err != nil {
			return nil, err
		}
		row, err := s.routePoint(ctx, tg, per)
		tg.stop()
		if err != nil {
			return nil, fmt.Errorf("%d topics: %w", size, err)
		}
		s.logf("route: %d topics: %s queries/s, %s us CPU per query, p99 %s us", per*s.c.routeBrokers, row[2], row[3], row[5])
		t.add(append([]string{itoa(per * s.c.routeBrokers)}, row...)...)
	}
	return t, nil
}

// sample picks at most n topics spread over every broker's names, the
// brokers interleaved so the load touches all of them at once.
func sample(firstBroker, brokers, per, n int) []string {
	each := max(1, min(per, n/brokers))
	var out []string
	for k := range each {
		i := k * per / each
		for b := range brokers {
			if len(out) == n {
				return out
			}
			out = append(out, loadgen.TopicName(false, firstBroker+b, i))
		}
	}
	return out
}

func (s *sweep) routePoint(ctx context.Context, tg *target, per int) ([]string, error) {
	first := s.firstBroker(s.c.routeBrokers)
	storm := &loadgen.RegisterStorm{Addr: tg.addr, Brokers: s.c.routeBrokers, TopicsPerBroker: per, Interval: 30 * time.Second,
		Rounds: 1, Hold: true, Generation: body.Broker5, FirstBroker: first, CompressAbove: frameBodyLimit}
	hold, release := context.WithCancel(ctx)
	defer release()
	registered := make(chan struct{})
	storm.OnRoundsDone = func() { close(registered) }
	held := make(chan error, 1)
	go func() {
		_, err := storm.Run(hold)
		held <- err
	}()
	select {
	case <-registered:
	case err := <-held:
		return nil, fmt.Errorf("preload: %w", err)
	}
	topics := sample(first, s.c.routeBrokers, per, s.c.routeSample)
	load := &loadgen.RouteLoad{Addr: tg.addr, Conns: s.o.conns, Inflight: s.o.inflight, Topics: topics,
		Version: int32(s.o.version), Type: remoting.JSON}
	if _, err := timedLoad(ctx, load, s.c.routeWarmup); err != nil {
		return nil, err
	}
	before, err := tg.usage()
	if err != nil {
		return nil, err
	}
	res, err := timedLoad(ctx, load, s.c.routeDuration)
	if err != nil {
		return nil, err
	}
	after, err := tg.usage()
	if err != nil {
		return nil, err
	}
	release()
	if err := <-held; err != nil {
		return nil, err
	}
	if res.Requests == 0 || res.Errors != 0 || res.NotFound != 0 {
		return nil, fmt.Errorf("%d queries, %d errors, %d not found", res.Requests, res.Errors, res.NotFound)
	}
	cpuUS := float64((after.CPU - before.CPU).Nanoseconds()) / 1000 / float64(res.Requests)
	return []string{itoa(len(topics)), strconv.FormatUint(res.Requests, 10), fmtf(res.Throughput(), 0), fmtf(cpuUS, 2),
		fmtf(float64(res.Latency.Quantile(0.5).Nanoseconds())/1000, 0), fmtf(float64(res.Latency.Quantile(0.99).Nanoseconds())/1000, 0),
		fmtf(mib(after.RSS), 1)}, nil
}

// storm is a restarted cluster: N brokers' first registrations spread over
// one second against a fresh server, while a route load asks for their
// topics and a poller waits until every broker's topics are routable.
func (s *sweep) storm(ctx context.Context) (*table, error) {
	t := newTable("storm", "broker_count", "topics_per_broker", "spread_ms", "routable_after_ms", "route_queries", "route_p99_us", "not_found", "rss_mib")
	for _, brokers := range s.c.stormBrokers {
		tg, err := s.target(ctx)
		if err != nil {
			return nil, err
		}
		row, err := s.stormPoint(ctx, tg, brokers)
		tg.stop()
		if err != nil {
			return nil, fmt.Errorf("%d brokers: %w", brokers, err)
		}
		s.logf("storm: %d brokers x %d topics: routable after %s ms, route p99 %s us, %s of %s queries not found",
			brokers, s.c.stormTopics, row[0], row[2], row[3], row[1])
		t.add(append([]string{itoa(brokers), itoa(s.c.stormTopics), itoa(int(s.c.stormSpread.Milliseconds()))}, row...)...)
	}
	return t, nil
}

func (s *sweep) stormPoint(ctx context.Context, tg *target, brokers int) ([]string, error) {
	first := s.firstBroker(brokers)
	storm := &loadgen.RegisterStorm{Addr: tg.addr, Brokers: brokers, TopicsPerBroker: s.c.stormTopics, Rounds: 1, Hold: true,
		Spread: s.c.stormSpread, Generation: body.Broker5, FirstBroker: first, CompressAbove: frameBodyLimit}
	if err := storm.Prepare(); err != nil {
		return nil, err
	}
	poller, err := remotingclient.Dial(ctx, tg.addr, remotingclient.Options{})
	if err != nil {
		return nil, err
	}
	defer poller.Close()
	load := &loadgen.RouteLoad{Addr: tg.addr, Conns: s.o.conns, Inflight: s.o.inflight,
		Topics: sample(first, brokers, s.c.stormTopics, s.c.routeSample), Version: int32(s.o.version), Type: remoting.JSON}

	sctx, cancel := context.WithTimeout(ctx, s.c.stormTimeout)
	defer cancel()
	hold, release := context.WithCancel(sctx)
	defer release()
	// The route load is under way (every connection answered once) before
	// the first broker registers, so that on a busy host it is not still
	// connecting when a short storm is over.
	ready := make(chan struct{})
	load.OnReady = func() { close(ready) }
	loaded := make(chan *loadgen.RouteResult, 1)
	var loadErr error
	go func() {
		var res *loadgen.RouteResult
		res, loadErr = load.Run(hold)
		loaded <- res
	}()
	select {
	case <-ready:
	case <-loaded:
		if loadErr == nil {
			loadErr = sctx.Err()
		}
		return nil, fmt.Errorf("route load ended before its first answers: %w", loadErr)
	}
	held := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := storm.Run(hold)
		held <- err
	}()
	routable, err := waitRoutable(sctx, poller, first, brokers, s.c.stormTopics)
	elapsed := time.Since(start)
	release()
	res := <-loaded
	stormErr := <-held
	if err != nil {
		return nil, err
	}
	if err := errors.Join(stormErr, loadErr); err != nil {
		return nil, err
	}
	if routable != brokers {
		return nil, fmt.Errorf("%d of %d brokers routable", routable, brokers)
	}
	if res.Requests == 0 || res.Errors != 0 {
		return nil, fmt.Errorf("route load: %d queries, %d errors", res.Requests, res.Errors)
	}
	u, err := tg.usage()
	if err != nil {
		return nil, err
	}
	return []string{itoa(int(elapsed.Milliseconds())), strconv.FormatUint(res.Requests, 10),
		fmtf(float64(res.Latency.Quantile(0.99).Nanoseconds())/1000, 0), strconv.FormatUint(res.NotFound, 10), fmtf(mib(u.RSS), 1)}, nil
}

// waitRoutable polls the last topic of every broker, a few queries in
// flight at a time, until each has been found once; it returns how many
// were.
func waitRoutable(ctx context.Context, c *remotingclient.Client, first, brokers, per int) (int, error) {
	const pollers = 16
	var mu sync.Mutex
	found := 0
	var wg sync.WaitGroup
	errs := make([]error, pollers)
	for p := range pollers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var pending []string
			for b := p; b < brokers; b += pollers {
				pending = append(pending, loadgen.TopicName(false, first+b, per-1))
			}
			for len(pending) > 0 {
				if ctx.Err() != nil {
					return
				}
				var left []string
				for _, topic := range pending {
					r, err := c.Invoke(ctx, &remotingclient.Request{Code: protocol.GetRouteInfoByTopic, Ext: []remoting.Pair{{Key: "topic", Value: topic}}})
					if err != nil {
						if ctx.Err() == nil {
							errs[p] = err
						}
						return
					}
					switch r.Code {
					case protocol.Success:
						mu.Lock()
						found++
						mu.Unlock()
					case protocol.TopicNotExist:
						left = append(left, topic)
					default:
						errs[p] = fmt.Errorf("route of %s: code %d", topic, r.Code)
						return
					}
				}
				pending = left
			}
		}()
	}
	wg.Wait()
	return found, errors.Join(errs...)
}

func itoa(n int) string { return strconv.Itoa(n) }

func fmtf(f float64, prec int) string { return strconv.FormatFloat(f, 'f', prec, 64) }

// meta is how and where a sweep ran.
type meta struct {
	command  string
	started  time.Time
	loadFrom string
	loadTo   string
	wall     time.Duration
}

func newMeta(o *options) *meta {
	args := relativeArgs(o.args)
	for i, a := range args {
		args[i] = shellQuote(a)
	}
	return &meta{command: "nsbench " + strings.Join(args, " "), started: time.Now().UTC(), loadFrom: loadAverage()}
}

// plainArg is an argument a shell reads as it is.
var plainArg = regexp.MustCompile(`^[A-Za-z0-9_/.,:=+@%-]+$`)

// shellQuote quotes an argument (a -spawn-cmd command line, say) so that
// the command in the report can be pasted into a shell.
func shellQuote(a string) string {
	if plainArg.MatchString(a) {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}

// relativeArgs shows absolute paths under the working directory (make
// passes bin/ as one) relative to it, so the report names no checkout.
func relativeArgs(args []string) []string {
	wd, err := os.Getwd()
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if err == nil && filepath.IsAbs(a) {
			if rel, err := filepath.Rel(wd, a); err == nil && !strings.HasPrefix(rel, "..") {
				out[i] = rel
			}
		}
	}
	return out
}

func (m *meta) finish(wall time.Duration) {
	m.wall, m.loadTo = wall, loadAverage()
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// machine describes the host from /proc: CPU model, CPUs, memory, kernel.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				mem = fmt.Sprintf(", %.0f GiB", float64(kb)/(1<<20))
			}
		}
	}
	kernel := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = ", Linux " + strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%d CPUs (%s)%s%s", runtime.NumCPU(), model, mem, kernel)
}

func (m *meta) table() *table {
	t := newTable("run", "key", "value")
	t.add("command", m.command)
	t.add("date", m.started.Format("2006-01-02 15:04 MST"))
	t.add("machine", machine())
	t.add("go", runtime.Version())
	t.add("load average at start", m.loadFrom)
	t.add("load average at end", m.loadTo)
	t.add("wall time", m.wall.Round(time.Second).String())
	return t
}
