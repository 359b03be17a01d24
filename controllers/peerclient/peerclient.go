// Package peerclient is how the operator talks to NameServer peers: it reads
// their route summaries, asks a starting peer to open its route gate once it
// holds the brokers the others hold, and asks a peer to apply its declared-KV
// file again, all over the peers' HTTP port (namesrv/peerstatus). It never
// carries routes or broker requests: the operator is not on the data path.
//
// Reads are paced: a cluster's peers are read once per broker round, since
// their tables change only when brokers heartbeat, and also whenever a peer
// pod changes (it restarted, became ready, moved) and when a suspected
// disagreement is due for confirmation.
package peerclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-namesrv/kube-namesrv/controllers/routecheck"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// Client speaks to one peer's HTTP port.
type Client interface {
	Summary(ctx context.Context, target Target) (*peerstatus.Summary, error)
	OpenGate(ctx context.Context, target Target, req peerstatus.GateRequest) (*peerstatus.Summary, error)
	ApplyKV(ctx context.Context, target Target) (*peerstatus.KVStatus, error)
}

// Target is where a peer's HTTP side listens, and the credential it wants.
type Target struct {
	IP   string
	Port int32
	// Token, when set, is sent as "Authorization: Bearer <token>": the
	// cluster's spec.authorization puts endpoints behind it.
	Token string
}

func (t Target) base() string {
	return "http://" + net.JoinHostPort(t.IP, strconv.Itoa(int(t.Port)))
}

// maxBody bounds what the operator reads from a peer: a summary lists every
// live broker, about 300 bytes each.
const maxBody = 8 << 20

// HTTP is the Client over plain HTTP.
type HTTP struct {
	client *http.Client
}

// NewHTTP returns a Client whose requests time out after timeout.
func NewHTTP(timeout time.Duration) *HTTP {
	return &HTTP{client: &http.Client{
		Timeout: timeout,
		// Never through a proxy from the environment: peers are pods.
		Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1, IdleConnTimeout: 90 * time.Second},
	}}
}

// Summary implements Client.
func (h *HTTP) Summary(ctx context.Context, t Target) (*peerstatus.Summary, error) {
	out := &peerstatus.Summary{}
	return out, h.do(ctx, http.MethodGet, t, peerstatus.SummaryPath, nil, out)
}

// OpenGate implements Client.
func (h *HTTP) OpenGate(ctx context.Context, t Target, req peerstatus.GateRequest) (*peerstatus.Summary, error) {
	out := &peerstatus.Summary{}
	return out, h.do(ctx, http.MethodPost, t, peerstatus.GatePath, req, out)
}

// ApplyKV implements Client.
func (h *HTTP) ApplyKV(ctx context.Context, t Target) (*peerstatus.KVStatus, error) {
	out := &peerstatus.KVStatus{}
	return out, h.do(ctx, http.MethodPost, t, peerstatus.KVApplyPath, nil, out)
}

func (h *HTTP) do(ctx context.Context, method string, t Target, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encoding the request for %s: %w", path, err)
		}
		body = bytes.NewReader(b)
	}
	url := t.base() + path
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", peerstatus.ContentType)
	}
	if t.Token != "" {
		req.Header.Set("Authorization", "Bearer "+t.Token)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, url, err)
	}
	switch {
	case len(data) > maxBody:
		return fmt.Errorf("%s %s: answer larger than %d bytes", method, url, maxBody)
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%s %s: %w (a NameServer older than the operator?)", method, url, ErrUnsupported)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("%s %s: HTTP %d: %s", method, url, resp.StatusCode, bytes.TrimSpace(data[:min(len(data), 200)]))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decoding the answer: %w", method, url, err)
	}
	return nil
}

// ErrUnsupported is returned by a peer without the endpoint.
var ErrUnsupported = errors.New("endpoint not served")

// Observer keeps, per cluster, the latest observation of every peer and
// the route check's memory, and decides when to read the peers again.
type Observer struct {
	Client Client

	mu       sync.Mutex
	clusters map[types.UID]*Cluster
	// uids finds a cluster's state by name, for a cluster seen gone.
	uids map[types.NamespacedName]types.UID
}

// Cluster is the observer's state of one cluster. The reconciler holds it
// between Lock and Unlock; reconciles of one cluster never run at once.
type Cluster struct {
	LastRead    time.Time
	Fingerprint string
	// ConfirmAt is when the route check wants a confirming read.
	ConfirmAt time.Time
	Peers     map[int32]routecheck.Observation
	Memory    routecheck.Memory
}

// State returns the state of a cluster, created empty on first use. A
// cluster recreated under the same name is a new cluster: its UID differs.
func (o *Observer) State(name types.NamespacedName, uid types.UID) *Cluster {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.clusters == nil {
		o.clusters = map[types.UID]*Cluster{}
		o.uids = map[types.NamespacedName]types.UID{}
	}
	if old, ok := o.uids[name]; ok && old != uid {
		delete(o.clusters, old)
	}
	o.uids[name] = uid
	c := o.clusters[uid]
	if c == nil {
		c = &Cluster{Peers: map[int32]routecheck.Observation{}}
		o.clusters[uid] = c
	}
	return c
}

// Forget drops the state of a cluster that is gone or going.
func (o *Observer) Forget(name types.NamespacedName) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if uid, ok := o.uids[name]; ok {
		delete(o.clusters, uid)
		delete(o.uids, name)
	}
}

// Clusters counts the clusters the observer holds state for.
func (o *Observer) Clusters() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.clusters)
}

// Due tells whether the peers should be read now, and otherwise when next.
func (c *Cluster) Due(now time.Time, round time.Duration, fingerprint string) (bool, time.Time) {
	next := c.LastRead.Add(round)
	if !c.ConfirmAt.IsZero() && c.ConfirmAt.Before(next) {
		next = c.ConfirmAt
	}
	due := c.LastRead.IsZero() || fingerprint != c.Fingerprint || !now.Before(next)
	return due, next
}

// Read reads every target in parallel and records the observations; peers
// not among the targets are forgotten.
func (o *Observer) Read(ctx context.Context, c *Cluster, targets map[int32]Target, now time.Time, fingerprint string) {
	type result struct {
		ordinal int32
		obs     routecheck.Observation
	}
	ch := make(chan result, len(targets))
	for ordinal, t := range targets {
		go func() {
			s, err := o.Client.Summary(ctx, t)
			obs := routecheck.Observation{ReadAt: now}
			if err != nil {
				obs.Err = err.Error()
			} else {
				obs.Summary = s
			}
			ch <- result{ordinal, obs}
		}()
	}
	peers := map[int32]routecheck.Observation{}
	for range targets {
		r := <-ch
		peers[r.ordinal] = r.obs
	}
	c.Peers = peers
	c.LastRead = now
	c.Fingerprint = fingerprint
	c.ConfirmAt = time.Time{}
}
