package namesrv_test

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
)

// The soak runs briefly in every `go test`; `make test-soak` runs it for
// minutes with more brokers.
var (
	soakDuration = flag.Duration("soak.duration", 6*time.Second, "how long brokers churn in TestBrokerChurnSoak")
	soakBrokers  = flag.Int("soak.brokers", 200, "number of simulated brokers in TestBrokerChurnSoak")
	soakSeed     = flag.Uint64("soak.seed", 0, "seed of TestBrokerChurnSoak; 0 picks one (it is printed on failure)")
)

const (
	soakClusters = 3
	soakShared   = 6 // topics any broker may serve
	soakVariable = 4 // private topics a broker adds and drops
	// soakSilenceTimeout is the heartbeatTimeoutMillis a 5.x broker sends
	// in its last registration before it goes silent. Live brokers send
	// none (120 s), so a test process starved of CPU for a few seconds
	// does not see live brokers expire. 4.x brokers cannot shorten their
	// timeout and never go silent.
	soakSilenceTimeout = time.Second
	soakScanInterval   = 100 * time.Millisecond
)

type brokerState int

const (
	absent brokerState = iota
	alive
	silent
)

// soakBroker is one simulated broker with the model of what the NameServer
// must hold about it. Only its actor goroutine touches the model while the
// churn runs.
type soakBroker struct {
	b       *brokersim.Broker
	idx     int
	cluster string
	silence bool // a 5.x broker that may go silent

	state       brokerState
	silentSince time.Time
	// expected are the topics the NameServer must route to this broker
	// while it is alive.
	expected map[string]body.TopicConfig
}

func (sb *soakBroker) name() string { return sb.b.Name() }

// fixedTopic is always registered, so its route tells whether the broker
// is known to the NameServer.
func (sb *soakBroker) fixedTopic() string { return fmt.Sprintf("P%d", sb.idx) }

// soak holds what the actors share.
type soak struct {
	t      *testing.T
	ns     string
	pool   []*remotingclient.Client
	delete bool // deleteTopicWithBrokerRegistration

	ctx    context.Context // ends the churn
	abort  context.CancelFunc
	failMu sync.Mutex
	failed error

	registrations, unregistrations, drops, expiries, queries atomic.Int64
}

func (s *soak) fail(format string, args ...any) {
	s.failMu.Lock()
	if s.failed == nil {
		s.failed = fmt.Errorf(format, args...)
	}
	s.failMu.Unlock()
	s.abort()
}

func (s *soak) err() error {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	return s.failed
}

func (s *soak) client(rng *rand.Rand) *remotingclient.Client { return s.pool[rng.IntN(len(s.pool))] }

// route asks for a topic's route; found is false for TOPIC_NOT_EXIST.
func (s *soak) route(c *remotingclient.Client, topic string) (route fjson.Value, found bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.queries.Add(1)
	r, err := c.Invoke(ctx, &remotingclient.Request{Code: protocol.GetRouteInfoByTopic, Ext: []remoting.Pair{{Key: "topic", Value: topic}}})
	switch {
	case err != nil:
		return fjson.Value{}, false, err
	case r.Code == protocol.TopicNotExist:
		return fjson.Value{}, false, nil
	case r.Code != protocol.Success:
		return fjson.Value{}, false, fmt.Errorf("route %s: code %d %s", topic, r.Code, r.Remark)
	}
	v, err := fjson.NewReader(r.Body).Value()
	if err != nil {
		return fjson.Value{}, false, fmt.Errorf("route %s does not parse: %w: %s", topic, err, r.Body)
	}
	return v, true, nil
}

// member returns the member named key of object v.
func member(v fjson.Value, key string) (fjson.Value, bool) {
	for _, m := range v.Members {
		if m.Key == key {
			return m.Value, true
		}
	}
	return fjson.Value{}, false
}

// routedTo reports whether a topic's route lists the broker with its
// address.
func (s *soak) routedTo(c *remotingclient.Client, topic string, sb *soakBroker) (bool, error) {
	route, found, err := s.route(c, topic)
	if err != nil || !found {
		return false, err
	}
	datas, _ := member(route, "brokerDatas")
	for _, bd := range datas.Items {
		if name, _ := member(bd, "brokerName"); name.Text == sb.name() {
			addrs, _ := member(bd, "brokerAddrs")
			addr, _ := member(addrs, "0")
			return addr.Text == sb.b.Addr(), nil
		}
	}
	return false, nil
}

// randomTopics picks the broker's next topic list: its fixed topic, some of
// its variable ones and one or two shared ones, with random queue counts.
func randomTopics(idx int, rng *rand.Rand) []body.TopicConfig {
	topics := []body.TopicConfig{brokersim.Topic(fmt.Sprintf("P%d", idx), 4)}
	for v := range soakVariable {
		if rng.IntN(2) == 0 {
			topics = append(topics, brokersim.Topic(fmt.Sprintf("V%d-%d", idx, v), int32(1+rng.IntN(8))))
		}
	}
	for _, sh := range rng.Perm(soakShared)[:1+rng.IntN(2)] {
		topics = append(topics, brokersim.Topic(fmt.Sprintf("S%d", sh), int32(1+rng.IntN(8))))
	}
	return topics
}

// register sends a registration and updates the model once it succeeded.
// verify checks that the route then lists the broker, which is racy only for
// the last registration before a silence: it may expire at once.
func (s *soak) register(sb *soakBroker, c *remotingclient.Client, verify bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := sb.b.Register(ctx, []string{s.ns})[0]
	if res.Err != nil || res.Response.Code != protocol.Success {
		s.fail("register %s: %v %+v", sb.name(), res.Err, res.Response)
		return
	}
	s.registrations.Add(1)
	if sb.state != alive || s.delete {
		sb.expected = map[string]body.TopicConfig{}
	}
	for _, tc := range sb.b.Topics() {
		sb.expected[string(tc.Name)] = tc
	}
	sb.state = alive
	if !verify {
		return
	}
	// The registration is applied before it is answered.
	if ok, err := s.routedTo(c, sb.fixedTopic(), sb); err != nil || !ok {
		s.fail("%s registered but its topic %s is not routed to it (%v)", sb.name(), sb.fixedTopic(), err)
	}
}

// gone waits until the NameServer no longer routes the broker's fixed
// topic, up to within.
func (s *soak) gone(sb *soakBroker, c *remotingclient.Client, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		_, found, err := s.route(c, sb.fixedTopic())
		if err != nil {
			s.fail("route query: %v", err)
			return false
		}
		if !found {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leave makes a broker absent in the model once the NameServer forgot it,
// and checks that none of its private topics outlived it.
func (s *soak) leave(sb *soakBroker, c *remotingclient.Client) {
	sb.state, sb.expected = absent, nil
	for v := range soakVariable {
		topic := fmt.Sprintf("V%d-%d", sb.idx, v)
		if _, found, err := s.route(c, topic); err != nil || found {
			s.fail("%s left but its topic %s is still routed (%v)", sb.name(), topic, err)
		}
	}
	// A broker that comes back opens a new connection, so a late close of
	// the old one cannot evict the new registration.
	sb.b.DropConnections()
}

// act is one broker's churn: register, re-register with or without topic
// changes, unregister, drop the connection, go silent, at random.
func (s *soak) act(sb *soakBroker, rng *rand.Rand) {
	for s.ctx.Err() == nil {
		select {
		case <-s.ctx.Done():
		case <-time.After(time.Duration(20+rng.IntN(200)) * time.Millisecond):
		}
		if s.ctx.Err() != nil {
			break
		}
		c := s.client(rng)
		switch sb.state {
		case absent:
			if rng.IntN(2) == 0 {
				sb.b.SetTopics(randomTopics(sb.idx, rng))
			}
			s.register(sb, c, true)
		case silent:
			s.resolveSilence(sb, c, false)
		case alive:
			switch p := rng.IntN(100); {
			case p < 55:
				s.register(sb, c, true)
			case p < 70:
				sb.b.SetTopics(randomTopics(sb.idx, rng))
				s.register(sb, c, true)
			case p < 80:
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				r, err := sb.b.Unregister(ctx, s.ns)
				cancel()
				if err != nil || r.Code != protocol.Success {
					s.fail("unregister %s: %v %+v", sb.name(), err, r)
					return
				}
				s.unregistrations.Add(1)
				// Applied before it is answered.
				if _, found, err := s.route(c, sb.fixedTopic()); err != nil || found {
					s.fail("%s unregistered but still routed (%v)", sb.name(), err)
					return
				}
				s.leave(sb, c)
			case p < 90:
				sb.b.DropConnections()
				s.drops.Add(1)
				if !s.gone(sb, c, 10*time.Second) {
					s.fail("%s dropped its connection but is still routed after 10 s", sb.name())
					return
				}
				s.leave(sb, c)
			case sb.silence:
				sb.b.SetHeartbeatTimeout(soakSilenceTimeout.Milliseconds())
				s.register(sb, c, false)
				sb.b.SetHeartbeatTimeout(0)
				sb.state, sb.silentSince = silent, time.Now()
			default:
				s.register(sb, c, true)
			}
		}
	}
	if sb.state == silent {
		s.resolveSilence(sb, s.pool[0], true)
	}
}

// keepAlive re-registers a live broker every 500 ms until stop closes.
// Registrations are not cancelled by the stop: every one sent is counted.
func (s *soak) keepAlive(sb *soakBroker, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(500 * time.Millisecond):
		}
		// Every live broker keeps one registration outstanding, so one
		// waits behind at most all the others: on a loaded machine, under
		// the race detector, that can pass 10 s without anything being
		// wrong.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r := sb.b.Register(ctx, []string{s.ns})[0]
		cancel()
		if r.Err != nil || r.Response.Code != protocol.Success {
			s.fail("keep-alive registration of %s: %v %+v", sb.name(), r.Err, r.Response)
			return
		}
		s.registrations.Add(1)
	}
}

// resolveSilence turns a silent broker absent once the NameServer expired
// it; wait blocks until then.
func (s *soak) resolveSilence(sb *soakBroker, c *remotingclient.Client, wait bool) {
	limit := soakSilenceTimeout + 10*time.Second
	within := time.Duration(0)
	if wait {
		within = time.Until(sb.silentSince.Add(limit))
	}
	if s.gone(sb, c, within) {
		s.expiries.Add(1)
		s.leave(sb, c)
		return
	}
	if time.Since(sb.silentSince) > limit {
		s.fail("%s silent for %v and still routed", sb.name(), time.Since(sb.silentSince))
	}
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// TestBrokerChurnSoak has a few hundred simulated brokers register,
// re-register, change topics, unregister, drop connections and go silent at
// random while clients query routes. At the end the NameServer's route
// table must be exactly the set of brokers that should be alive, with
// exactly their topics, its metrics must agree with what was done, and once
// everything is closed the goroutines and file descriptors must be back to
// where they started.
func TestBrokerChurnSoak(t *testing.T) {
	seed := *soakSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reproduce with: go test ./namesrv -run '^TestBrokerChurnSoak$' -soak.seed=%d -soak.brokers=%d -soak.duration=%v",
				seed, *soakBrokers, *soakDuration)
		}
	})
	rng := rand.New(rand.NewPCG(seed, 0))
	baseGoroutines, baseFDs := runtime.NumGoroutine(), openFDs(t)

	deleteTopics := rng.IntN(2) == 0
	srv := startLogged(t, func(c *config.Config) {
		c.ScanNotActiveBrokerInterval = soakScanInterval.Milliseconds()
		c.DeleteTopicWithBrokerRegistration = deleteTopics
	})
	t.Logf("seed %d, %d brokers for %v, deleteTopicWithBrokerRegistration=%v", seed, *soakBrokers, *soakDuration, deleteTopics)
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range srv.logs.Lines("level=WARN") {
				t.Log(l)
			}
		}
	})
	ctx, abort := context.WithCancel(context.Background())
	defer abort()
	s := &soak{t: t, ns: srv.Addr().String(), delete: deleteTopics, abort: abort}
	churn, stopChurn := context.WithTimeout(ctx, *soakDuration)
	defer stopChurn()
	s.ctx = churn

	for range 8 {
		c, err := remotingclient.Dial(ctx, s.ns, remotingclient.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.pool = append(s.pool, c)
	}
	brokers := make([]*soakBroker, *soakBrokers)
	for i := range brokers {
		gen := body.Broker4
		if rng.IntN(2) == 0 {
			gen = body.Broker5
		}
		cfg := brokersim.Config{
			Cluster: fmt.Sprintf("soak-c%d", i%soakClusters), Name: fmt.Sprintf("soak-b%d", i),
			Generation: gen, Type: remoting.SerializeType(rng.IntN(2)), Compressed: rng.IntN(2) == 0,
			Topics: randomTopics(i, rng),
		}
		b, err := brokersim.Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		brokers[i] = &soakBroker{b: b, idx: i, cluster: cfg.Cluster, silence: gen == body.Broker5}
	}

	// Once its churn is over, a live broker keeps heartbeating, as real
	// ones do, until the final state has been compared.
	var wg, settled sync.WaitGroup
	stopKeep := make(chan struct{})
	settled.Add(len(brokers))
	for i, sb := range brokers {
		brng := rand.New(rand.NewPCG(seed, uint64(i+1)))
		wg.Go(func() {
			s.act(sb, brng)
			settled.Done()
			if sb.state == alive {
				s.keepAlive(sb, stopKeep)
			}
		})
	}
	// Clients reading routes all along, as producers and consumers do.
	var readers sync.WaitGroup
	for r := range 4 {
		rrng := rand.New(rand.NewPCG(seed, uint64(1_000_000+r)))
		readers.Go(func() {
			for churn.Err() == nil {
				topic := fmt.Sprintf("S%d", rrng.IntN(soakShared))
				if rrng.IntN(2) == 0 {
					topic = fmt.Sprintf("V%d-%d", rrng.IntN(len(brokers)), rrng.IntN(soakVariable))
				}
				if _, _, err := s.route(s.client(rrng), topic); err != nil {
					s.fail("client route query: %v", err)
				}
			}
		})
	}
	settled.Wait()
	readers.Wait()
	if err := s.err(); err != nil {
		close(stopKeep)
		wg.Wait()
		t.Fatal(err)
	}

	live := 0
	for _, sb := range brokers {
		if sb.state == alive {
			live++
		}
	}
	checkFinalState(t, s, brokers)
	close(stopKeep)
	wg.Wait()
	if err := s.err(); err != nil {
		t.Fatal(err)
	}
	checkSoakMetrics(t, s, srv, live)

	for _, c := range s.pool {
		c.Close()
	}
	for _, sb := range brokers {
		sb.b.Close()
	}
	eventually(t, "every connection to close", func() bool {
		return scrapeMetrics(t, srv.Server).value("rocketmq_namesrv_connections_open") == 0
	})
	srv.stop()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > baseGoroutines || openFDs(t) > baseFDs {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines %d (baseline %d), open fds %d (baseline %d) after everything closed:\n%s",
				runtime.NumGoroutine(), baseGoroutines, openFDs(t), baseFDs, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("%d registrations, %d unregistrations, %d dropped connections, %d expiries, %d route queries; %d brokers alive at the end",
		s.registrations.Load(), s.unregistrations.Load(), s.drops.Load(), s.expiries.Load(), s.queries.Load(), live)
}

// checkFinalState compares the cluster info, the topic list and every
// route with the model.
func checkFinalState(t *testing.T, s *soak, brokers []*soakBroker) {
	t.Helper()
	c := s.pool[0]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	wantClusters := map[string][]string{}
	wantTopics := map[string]map[string]body.TopicConfig{} // topic -> broker -> config
	byName := map[string]*soakBroker{}
	for _, sb := range brokers {
		if sb.state != alive {
			continue
		}
		byName[sb.name()] = sb
		wantClusters[sb.cluster] = append(wantClusters[sb.cluster], sb.name())
		for topic, tc := range sb.expected {
			if wantTopics[topic] == nil {
				wantTopics[topic] = map[string]body.TopicConfig{}
			}
			wantTopics[topic][sb.name()] = tc
		}
	}

	r, err := c.Invoke(ctx, &remotingclient.Request{Code: protocol.GetBrokerClusterInfo})
	if err != nil {
		t.Fatal(err)
	}
	ci, err := fjson.NewReader(r.Body).Value()
	if err != nil {
		t.Fatalf("cluster info does not parse: %v", err)
	}
	table, _ := member(ci, "brokerAddrTable")
	gotBrokers := map[string]bool{}
	for _, m := range table.Members {
		sb := byName[m.Key]
		if sb == nil {
			t.Fatalf("cluster info lists broker %s, which should not be alive", m.Key)
		}
		addrs, _ := member(m.Value, "brokerAddrs")
		cluster, _ := member(m.Value, "cluster")
		if len(addrs.Members) != 1 || addrs.Members[0].Key != "0" || addrs.Members[0].Value.Text != sb.b.Addr() || cluster.Text != sb.cluster {
			t.Fatalf("broker %s listed as %+v in cluster %q", m.Key, addrs.Members, cluster.Text)
		}
		gotBrokers[m.Key] = true
	}
	for name := range byName {
		if !gotBrokers[name] {
			t.Fatalf("broker %s should be alive but is not in the cluster info", name)
		}
	}
	clusters, _ := member(ci, "clusterAddrTable")
	gotClusters := map[string][]string{}
	for _, m := range clusters.Members {
		for _, it := range m.Value.Items {
			gotClusters[m.Key] = append(gotClusters[m.Key], it.Text)
		}
		slices.Sort(gotClusters[m.Key])
	}
	for cl := range wantClusters {
		slices.Sort(wantClusters[cl])
	}
	if !maps.EqualFunc(gotClusters, wantClusters, slices.Equal) {
		t.Fatalf("clusterAddrTable %v, want %v", gotClusters, wantClusters)
	}

	r, err = c.Invoke(ctx, &remotingclient.Request{Code: protocol.GetAllTopicListFromNameserver})
	if err != nil {
		t.Fatal(err)
	}
	list, err := fjson.NewReader(r.Body).Value()
	if err != nil {
		t.Fatal(err)
	}
	topicList, _ := member(list, "topicList")
	var gotTopics []string
	for _, it := range topicList.Items {
		gotTopics = append(gotTopics, it.Text)
	}
	slices.Sort(gotTopics)
	if want := slices.Sorted(maps.Keys(wantTopics)); !slices.Equal(gotTopics, want) {
		t.Fatalf("topic list %v, want %v", gotTopics, want)
	}

	// Every topic any broker ever had: routed exactly as expected, or not
	// at all.
	var all []string
	for i := range brokers {
		all = append(all, fmt.Sprintf("P%d", i))
		for v := range soakVariable {
			all = append(all, fmt.Sprintf("V%d-%d", i, v))
		}
	}
	for sh := range soakShared {
		all = append(all, "S"+strconv.Itoa(sh))
	}
	for _, topic := range all {
		route, found, err := s.route(c, topic)
		if err != nil {
			t.Fatal(err)
		}
		want := wantTopics[topic]
		if !found {
			if len(want) > 0 {
				t.Fatalf("topic %s not routed, want brokers %v", topic, slices.Sorted(maps.Keys(want)))
			}
			continue
		}
		if len(want) == 0 {
			t.Fatalf("topic %s routed, but no live broker has it", topic)
		}
		queues, _ := member(route, "queueDatas")
		got := map[string]bool{}
		for _, q := range queues.Items {
			name, _ := member(q, "brokerName")
			tc, ok := want[name.Text]
			if !ok {
				t.Fatalf("topic %s has queue data of broker %s, which should not serve it", topic, name.Text)
			}
			read, _ := member(q, "readQueueNums")
			write, _ := member(q, "writeQueueNums")
			perm, _ := member(q, "perm")
			if read.Text != strconv.Itoa(int(tc.ReadQueueNums)) || write.Text != strconv.Itoa(int(tc.WriteQueueNums)) ||
				perm.Text != strconv.Itoa(int(tc.Perm)) {
				t.Fatalf("topic %s on %s: queues %s/%s perm %s, want %+v", topic, name.Text, read.Text, write.Text, perm.Text, tc)
			}
			got[name.Text] = true
		}
		datas, _ := member(route, "brokerDatas")
		for _, bd := range datas.Items {
			name, _ := member(bd, "brokerName")
			if !got[name.Text] {
				t.Fatalf("topic %s lists broker data of %s without its queues", topic, name.Text)
			}
		}
		if len(got) != len(want) || len(datas.Items) != len(want) {
			t.Fatalf("topic %s routed to %v (%d broker datas), want %v", topic, slices.Sorted(maps.Keys(got)), len(datas.Items),
				slices.Sorted(maps.Keys(want)))
		}
	}
}

// checkSoakMetrics compares the route table's counters and the exported
// metrics with what the brokers and clients did.
func checkSoakMetrics(t *testing.T, s *soak, srv *runningServer, live int) {
	t.Helper()
	st := srv.Routes().Stats()
	if st.LiveBrokers != int64(live) || st.Registrations != s.registrations.Load() ||
		st.Evictions["unregister"] != s.unregistrations.Load() || st.Evictions["connection_closed"] != s.drops.Load() ||
		st.Evictions["expired"] != s.expiries.Load() {
		t.Fatalf("route stats %+v; want %d live, %d registrations, evictions: %d unregister, %d closed, %d expired",
			st, live, s.registrations.Load(), s.unregistrations.Load(), s.drops.Load(), s.expiries.Load())
	}
	m := scrapeMetrics(t, srv.Server)
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"rocketmq_namesrv_brokers_live", nil, float64(live)},
		{"rocketmq_namesrv_broker_registrations_total", nil, float64(s.registrations.Load())},
		{"rocketmq_namesrv_requests_total", []string{"request", "REGISTER_BROKER", "result", "SUCCESS"}, float64(s.registrations.Load())},
		{"rocketmq_namesrv_requests_total", []string{"request", "UNREGISTER_BROKER", "result", "SUCCESS"}, float64(s.unregistrations.Load())},
		{"rocketmq_namesrv_broker_evictions_total", []string{"reason", "expired"}, float64(s.expiries.Load())},
		{"rocketmq_namesrv_broker_evictions_total", []string{"reason", "connection_closed"}, float64(s.drops.Load())},
	}
	for _, c := range checks {
		if got := m.value(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	routes := m.value("rocketmq_namesrv_requests_total", "request", "GET_ROUTEINFO_BY_TOPIC", "result", "SUCCESS") +
		m.value("rocketmq_namesrv_requests_total", "request", "GET_ROUTEINFO_BY_TOPIC", "result", "TOPIC_NOT_EXIST")
	if routes != float64(s.queries.Load()) {
		t.Errorf("route queries counted %v, sent %d", routes, s.queries.Load())
	}
	for _, l := range remoting.Limits {
		if v := m.value("rocketmq_namesrv_limit_hits_total", "limit", string(l)); v != 0 {
			t.Errorf("limit %s hit %v times by well-behaved brokers", l, v)
		}
	}
	if l := srv.logs.Lines("level=WARN", "remote="); len(l) != 0 {
		t.Errorf("connection warnings during the soak: %q", l[:min(len(l), 5)])
	}
}
