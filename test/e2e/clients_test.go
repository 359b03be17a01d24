//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
)

// A stickyClient behaves like a RocketMQ Java client towards NameServers:
// it takes the client list the way this project tells clients to (the
// client ConfigMap's namesrvAddr, re-read as an address-server client would,
// here every second instead of every two minutes), picks one peer at random
// and stays on it, asking the topic's route every 100 ms. Only a failure at
// the transport level (a refused, closed or silent connection) makes it move
// on, to another peer of its list; an answer with an error code does not,
// exactly as NettyRemotingClient keeps its chosen NameServer until its
// channel breaks. A peer that leaves the list is left too, as Java's
// updateNameServerAddressList closes the channel of a chosen peer that is no
// longer listed.
type stickyClient struct {
	id   int
	list func() []string

	peer string
	conn *remotingclient.Client
	// failedOn is the peer of the last transport failure, not picked next.
	failedOn string
	log      []clientQuery
	// seen is told of every query.
	seen func(clientQuery)
	// want are what every route answer must hold besides the broker.
	want []string
	// tls, when set, connects over TLS with it, presenting its client
	// certificate (a Java client's tls.enable and tls.client.*).
	tls *tls.Config
}

// javaTimeout is a Java client's connect timeout and its route query's
// (NettyClientConfig.connectTimeoutMillis, and the 3 s MQClientInstance
// waits for GET_ROUTEINFO_BY_TOPIC): a peer slower than that fails the
// query at the transport level.
const javaTimeout = 3 * time.Second

// clientQuery is one route query a client made.
type clientQuery struct {
	client int
	at     time.Time
	peer   string
	// code is the answer's code; -1 when the query failed at the transport
	// level (err then says how).
	code int32
	err  error
	// afterFailure tells that the previous query of this client failed at
	// the transport level.
	afterFailure bool
}

func (q clientQuery) String() string {
	what := fmt.Sprintf("code %d", q.code)
	if q.code < 0 {
		what = "transport: " + q.err.Error()
	}
	return fmt.Sprintf("%s client %d on %s: %s", q.at.Format(time.StampMilli), q.client, q.peer, what)
}

// query asks the route once, first choosing a peer if it has none.
func (c *stickyClient) query(ctx context.Context, afterFailure bool) {
	list := c.list()
	if c.peer != "" && !slices.Contains(list, c.peer) {
		c.drop()
	}
	if c.peer == "" {
		candidates := slices.DeleteFunc(slices.Clone(list), func(p string) bool { return p == c.failedOn && len(list) > 1 })
		if len(candidates) == 0 {
			return
		}
		c.peer = candidates[rand.IntN(len(candidates))]
	}
	q := clientQuery{client: c.id, at: time.Now(), peer: c.peer, code: -1, afterFailure: afterFailure}
	defer func() {
		if q.code == -1 && ctx.Err() != nil {
			// The fleet is stopping: the test cut the query short, no
			// peer failed it.
			return
		}
		c.log = append(c.log, q)
		c.seen(q)
	}()
	if c.conn == nil {
		ip, err := resolve(c.peer)
		if err == nil {
			dctx, cancel := context.WithTimeout(ctx, javaTimeout)
			c.conn, err = remotingclient.Dial(dctx, ip, remotingclient.Options{TLS: c.tls})
			cancel()
		}
		if err != nil {
			q.err = err
			c.fail()
			return
		}
	}
	qctx, cancel := context.WithTimeout(ctx, javaTimeout)
	defer cancel()
	resp, err := c.conn.Invoke(qctx, &remotingclient.Request{
		Code: protocol.GetRouteInfoByTopic,
		Ext:  []remoting.Pair{{Key: "topic", Value: topic}},
	})
	if err != nil {
		q.err = err
		c.fail()
		return
	}
	q.code = resp.Code
	if resp.Code != protocol.Success {
		return
	}
	if !strings.Contains(string(resp.Body), brokerName) {
		q.code, q.err = -2, fmt.Errorf("a route without the broker: %s", resp.Body)
		return
	}
	for _, w := range c.want {
		if !strings.Contains(string(resp.Body), w) {
			q.code, q.err = -2, fmt.Errorf("a route without %s: %s", w, resp.Body)
			return
		}
	}
}

func (c *stickyClient) fail() {
	c.failedOn = c.peer
	c.drop()
}

func (c *stickyClient) drop() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
	c.peer = ""
}

// clientFleet runs sticky clients against one cluster: some from the start,
// and one more every 300 ms, so that together they land on every peer,
// including one that is restarting or new; past maxClients, each new client
// retires the oldest running one.
type clientFleet struct {
	cancel func()
	done   chan struct{}

	mu      sync.Mutex
	clients []*stickyClient
	// answered counts the answers each peer gave; lastAnswered is when the
	// last answered query to each peer was sent.
	answered     map[string]int
	lastAnswered map[string]time.Time
}

// answers tells how many answers a peer has given the fleet so far.
func (f *clientFleet) answers(peer string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.answered[peer]
}

// answeredSince tells whether a query sent to peer after since was
// answered.
func (f *clientFleet) answeredSince(peer string, since time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastAnswered[peer].After(since)
}

// startClients starts n clients at once and then a new one every 300 ms,
// keeping at most maxClients running, until the returned fleet is stopped.
func startClients(ctx context.Context, t *testing.T, c nsc, n int) *clientFleet {
	t.Helper()
	return startClientsWanting(ctx, t, c, n)
}

// startClientsWanting is startClients for clients that also count a route
// answer without each of want (say, the topic's orderTopicConf) as a miss.
func startClientsWanting(ctx context.Context, t *testing.T, c nsc, n int, want ...string) *clientFleet {
	t.Helper()
	return startFleet(ctx, t, c, n, fleetOptions{want: want})
}

// fleetOptions vary what a fleet's clients check and how they connect.
type fleetOptions struct {
	// want are what every route answer must hold besides the broker.
	want []string
	// tls, when set, is every client's TLS configuration, client
	// certificate included.
	tls *tls.Config
}

// startFleet is startClients with options.
func startFleet(ctx context.Context, t *testing.T, c nsc, n int, o fleetOptions) *clientFleet {
	t.Helper()
	const maxClients = 60
	lists := recordConfigMap(ctx, t, c.ns, c.addressConfigMap())
	current := func() []string {
		vs := lists.all()
		if len(vs) == 0 {
			return nil
		}
		return splitList(vs[len(vs)-1].data["namesrvAddr"])
	}
	ctx, cancel := context.WithCancel(ctx)
	f := &clientFleet{cancel: cancel, done: make(chan struct{}), answered: map[string]int{}, lastAnswered: map[string]time.Time{}}
	seen := func(q clientQuery) {
		if q.code >= 0 {
			f.mu.Lock()
			f.answered[q.peer]++
			if q.at.After(f.lastAnswered[q.peer]) {
				f.lastAnswered[q.peer] = q.at
			}
			f.mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	run := func(ctx context.Context, cl *stickyClient) {
		defer wg.Done()
		defer cl.drop()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		refresh := time.NewTicker(time.Second)
		defer refresh.Stop()
		list := current()
		cl.list = func() []string { return list }
		failed := false
		for ctx.Err() == nil {
			cl.query(ctx, failed)
			if n := len(cl.log); n > 0 {
				failed = cl.log[n-1].code == -1
			}
			select {
			case <-ctx.Done():
			case <-refresh.C:
				list = current()
			case <-tick.C:
			}
		}
	}
	// retire cancels the running clients, oldest first.
	var retire []context.CancelFunc
	add := func() {
		f.mu.Lock()
		cl := &stickyClient{id: len(f.clients), seen: seen, want: o.want, tls: o.tls}
		f.clients = append(f.clients, cl)
		f.mu.Unlock()
		cctx, cancel := context.WithCancel(ctx)
		retire = append(retire, cancel)
		wg.Add(1)
		go run(cctx, cl)
	}
	for range n {
		add()
	}
	go func() {
		defer close(f.done)
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-tick.C:
				add()
				if len(retire) > maxClients {
					retire[0]()
					retire = retire[1:]
				}
			}
		}
		wg.Wait()
	}()
	t.Cleanup(func() { f.stop() })
	return f
}

// stop ends every client and returns all their queries, by time.
func (f *clientFleet) stop() []clientQuery {
	f.cancel()
	<-f.done
	f.mu.Lock()
	defer f.mu.Unlock()
	var all []clientQuery
	for _, c := range f.clients {
		all = append(all, c.log...)
	}
	slices.SortFunc(all, func(a, b clientQuery) int { return a.at.Compare(b.at) })
	return all
}

// judgeClients applies the rule every continuity scenario ends with: zero
// error answers (TOPIC_NOT_EXIST or any other code) for the topic the live
// broker has registered, and the only failures allowed are transport
// failures that make a client switch peers, each followed by a successful
// query on another peer. It also checks that the clients together asked
// every peer in want.
func judgeClients(t *testing.T, queries []clientQuery, want ...string) {
	t.Helper()
	var bad []string
	switches := 0
	asked := map[string]int{}
	for _, q := range queries {
		if q.code >= 0 {
			asked[q.peer]++
		}
		switch {
		case q.code == protocol.Success && !q.afterFailure:
		case q.code == protocol.Success:
		case q.code == -1 && !q.afterFailure:
			switches++
		case q.code == -1:
			bad = append(bad, q.String()+" (a second transport failure in a row: the first switch did not reach a serving peer)")
		default:
			bad = append(bad, q.String())
		}
	}
	peers := make([]string, 0, len(asked))
	for p := range asked {
		peers = append(peers, p)
	}
	slices.Sort(peers)
	t.Logf("clients: %d route queries, %d transport failures each followed by a success on another peer; answered by %v", len(queries), switches, describeCounts(asked))
	if len(queries) < 50 {
		t.Errorf("only %d route queries were made", len(queries))
	}
	for _, p := range want {
		if asked[p] == 0 {
			t.Errorf("no client got an answer from %s; peers that answered: %v", p, peers)
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d route queries missed, first ones:\n%s", len(bad), strings.Join(bad[:min(len(bad), 15)], "\n"))
	}
}

func describeCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		host, _, _ := net.SplitHostPort(k)
		parts = append(parts, fmt.Sprintf("%s=%d", strings.SplitN(host, ".", 2)[0], m[k]))
	}
	return strings.Join(parts, " ")
}
