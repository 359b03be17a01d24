package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// peers answers for every simulated NameServer of the fleet from one HTTP
// server: each pod has a loopback address of its own (Linux routes all of
// 127/8 to lo), and the address a connection arrived at tells which peer
// it asks.
type peers struct {
	srv  *http.Server
	ln   net.Listener
	port int32

	mu      sync.Mutex
	answers map[string][]byte // GET /routes/summary by peer IP

	summaries atomic.Int64 // summaries answered
	others    atomic.Int64 // gate and KV requests answered
	unknown   atomic.Int64 // requests to an address no pod has
}

type localAddrKey struct{}

// startPeers listens on every address at a free port, the cluster's HTTP
// port: the operator reads each pod at its IP and that port.
func startPeers() (*peers, error) {
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the simulated peers: %w", err)
	}
	p := &peers{ln: ln, port: int32(ln.Addr().(*net.TCPAddr).Port), answers: map[string][]byte{}}
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(p.serve),
		ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, localAddrKey{}, c.LocalAddr().(*net.TCPAddr).IP.String())
		},
	}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// add makes ip a NameServer holding the brokers of its cluster, its route
// gate open, started an hour ago: a peer in steady state.
func (p *peers) add(ip, cluster string, brokers int) error {
	started := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	s := peerstatus.Summary{
		BootID:    "boot-" + ip,
		StartTime: started,
		Gate:      peerstatus.Gate{Enabled: true, Open: true, OpenedBy: "request"},
	}
	for i := range brokers {
		s.Brokers = append(s.Brokers, peerstatus.Broker{
			BrokerKey:    peerstatus.BrokerKey{Cluster: "DefaultCluster", Addr: fmt.Sprintf("%s-broker-%d:10911", cluster, i)},
			BrokerName:   fmt.Sprintf("%s-broker-%d", cluster, i),
			DataVersion:  peerstatus.DataVersion{Timestamp: 1, Counter: 1},
			RegisteredAt: started,
			LastUpdate:   started,
		})
	}
	s.Counts = peerstatus.Counts{Brokers: brokers, Clusters: 1, Topics: 10}
	s.Digest = peerstatus.BrokersDigest(s.Brokers)
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encoding the summary of %s: %w", ip, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answers[ip] = b
	return nil
}

func (p *peers) serve(w http.ResponseWriter, r *http.Request) {
	ip, _ := r.Context().Value(localAddrKey{}).(string)
	p.mu.Lock()
	answer, ok := p.answers[ip]
	p.mu.Unlock()
	if !ok {
		// No pod has this address: as a peer that is not there.
		p.unknown.Add(1)
		http.Error(w, "no simulated peer at "+ip, http.StatusServiceUnavailable)
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == peerstatus.SummaryPath:
		p.summaries.Add(1)
	case r.Method == http.MethodPost && r.URL.Path == peerstatus.GatePath:
		// The gate is open already; the answer is the summary.
		p.others.Add(1)
	default:
		// No declared-KV file, as a NameServer without one.
		p.others.Add(1)
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", peerstatus.ContentType)
	_, _ = w.Write(answer)
}

// stop closes the server and its connections.
func (p *peers) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = p.srv.Close()
	}
}

// podIP is the loopback address of a fleet's pod: 127.10.0.1 upwards, so
// that no pod has 127.0.0.1.
func podIP(cluster, ordinal, replicas int) string {
	n := cluster*replicas + ordinal + 1
	return fmt.Sprintf("127.%d.%d.%d", 10+n>>16, n>>8&0xff, n&0xff)
}
