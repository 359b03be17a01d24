package controllers

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kube-namesrv/kube-namesrv/controllers/peerclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// testPeers stands in for the NameServers of the suite's pods, which do not
// run: a spec registers what the peer at a pod IP reports, and reads what
// the operator asked of it. A pod IP nobody registered refuses connections,
// like a peer the operator cannot reach.
var testPeers = &fakePeers{peers: map[string]*fakePeer{}}

type fakePeers struct {
	mu    sync.Mutex
	peers map[string]*fakePeer
}

// fakePeer is one NameServer: its live brokers, its gate, its KV report.
type fakePeer struct {
	BootID  string
	Started time.Time
	Brokers []peerstatus.Broker
	// Gated peers start with the gate closed; it opens on a gate request
	// whose brokers are all live here, or, for a request without a
	// reference (WaitSeconds), that long after Started.
	Gated, Open bool
	// Record is what the peer's previous process recorded of its brokers.
	Record *peerstatus.GateRecord
	KV     *peerstatus.KVStatus
	// Seen are the gate requests and KV applies the operator sent.
	GateRequests []peerstatus.GateRequest
	KVApplies    int
	// OnApply is what an apply turns the KV report into.
	OnApply *peerstatus.KVStatus
	// Token, when set, is the only bearer token the peer accepts, on
	// every endpoint (httpAuthScope=all); other requests are refused as
	// the NameServer refuses them, and counted in Refused.
	Token   string
	Refused int
}

// unauthorized refuses a request that does not present the peer's token.
func (p *fakePeer) unauthorized(t peerclient.Target) error {
	if p.Token == "" || t.Token == p.Token {
		return nil
	}
	p.Refused++
	return fmt.Errorf("GET http://%s:%d/routes/summary: HTTP 401: invalid token: %w", t.IP, t.Port, peerclient.ErrRefused)
}

// reset forgets every peer.
func (f *fakePeers) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.peers = map[string]*fakePeer{}
}

// set registers or replaces the peer at ip.
func (f *fakePeers) set(ip string, p *fakePeer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p.BootID == "" {
		p.BootID = "boot-" + ip
	}
	if p.Started.IsZero() {
		p.Started = time.Now().Add(-time.Hour)
	}
	f.peers[ip] = p
}

// edit changes the peer at ip under the lock.
func (f *fakePeers) edit(ip string, change func(*fakePeer)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f.peers[ip])
}

// get returns a copy of the peer at ip.
func (f *fakePeers) get(ip string) fakePeer {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := *f.peers[ip]
	p.GateRequests = slices.Clone(p.GateRequests)
	return p
}

func (f *fakePeers) summary(p *fakePeer) *peerstatus.Summary {
	s := &peerstatus.Summary{
		BootID: p.BootID, StartTime: p.Started,
		Gate:    peerstatus.Gate{Enabled: p.Gated, Open: !p.Gated || p.Open, Record: p.Record},
		Brokers: slices.Clone(p.Brokers),
		Counts:  peerstatus.Counts{Brokers: len(p.Brokers)},
	}
	if n := len(p.GateRequests); n > 0 && !s.Gate.Open {
		live := map[peerstatus.BrokerKey]bool{}
		for _, b := range p.Brokers {
			live[b.BrokerKey] = true
		}
		req := p.GateRequests[n-1]
		s.Gate.Expected = len(req.Expect)
		for _, k := range req.Expect {
			if !live[k] {
				s.Gate.Missing = append(s.Gate.Missing, k)
			}
		}
	}
	if p.KV != nil {
		kv := *p.KV
		s.KV = &kv
	}
	return s
}

func (f *fakePeers) Summary(_ context.Context, t peerclient.Target) (*peerstatus.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.peers[t.IP]
	if !ok {
		return nil, fmt.Errorf("dial tcp %s:%d: connection refused", t.IP, t.Port)
	}
	if err := p.unauthorized(t); err != nil {
		return nil, err
	}
	return f.summary(p), nil
}

func (f *fakePeers) OpenGate(_ context.Context, t peerclient.Target, req peerstatus.GateRequest) (*peerstatus.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.peers[t.IP]
	if !ok {
		return nil, fmt.Errorf("dial tcp %s:%d: connection refused", t.IP, t.Port)
	}
	if err := p.unauthorized(t); err != nil {
		return nil, err
	}
	p.GateRequests = append(p.GateRequests, req)
	live := map[peerstatus.BrokerKey]bool{}
	for _, b := range p.Brokers {
		live[b.BrokerKey] = true
	}
	all := true
	for _, k := range req.Expect {
		all = all && live[k]
	}
	// As the NameServer's gate: an empty expectation with a wait does not
	// open it at once.
	waited := req.WaitSeconds > 0 && time.Since(p.Started) >= time.Duration(req.WaitSeconds)*time.Second
	if all && (len(req.Expect) > 0 || req.WaitSeconds == 0) || waited {
		p.Open = true
	}
	return f.summary(p), nil
}

func (f *fakePeers) ApplyKV(_ context.Context, t peerclient.Target) (*peerstatus.KVStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.peers[t.IP]
	if !ok {
		return nil, fmt.Errorf("dial tcp %s:%d: connection refused", t.IP, t.Port)
	}
	if err := p.unauthorized(t); err != nil {
		return nil, err
	}
	p.KVApplies++
	if p.OnApply != nil {
		kv := *p.OnApply
		p.KV = &kv
	}
	kv := *p.KV
	return &kv, nil
}

// testBroker is a live broker as the fake peers report it.
func testBroker(addr string, registered time.Time) peerstatus.Broker {
	return peerstatus.Broker{
		BrokerKey:    peerstatus.BrokerKey{Cluster: "DefaultCluster", Addr: addr},
		BrokerName:   "broker-" + addr,
		DataVersion:  peerstatus.DataVersion{Timestamp: 1, Counter: 1},
		RegisteredAt: registered,
		LastUpdate:   time.Now(),
	}
}
