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
	"reflect"
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
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%s %s: HTTP %d: %s: %w", method, url, resp.StatusCode, bytes.TrimSpace(data[:min(len(data), 200)]), ErrRefused)
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

// ErrRefused is returned by a peer that refused the request's bearer token
// (HTTP 401 or 403): the token was rotated or its Secret replaced.
var ErrRefused = errors.New("the peer refused the operator's token")

// Observer keeps, per cluster, the latest observation of every peer and
// the route check's memory. Started (Start: a manager Runnable), it reads
// each watched cluster's peers on a goroutine of its own, so that a
// reconcile never waits for a peer: at once when the reconciler wants
// peers it has not read (a pod changed), then once per broker round, and
// at the time the route check wants a confirming read. It tells Changed
// when a read saw something new.
type Observer struct {
	Client Client
	// Changed is told about a cluster whose observation changed: its first
	// read of the peers as they are, a read that saw other answers than the
	// one before, or a confirming read. It may block until ctx is done.
	Changed func(ctx context.Context, name types.NamespacedName)

	mu       sync.Mutex
	clusters map[types.UID]*Cluster
	// uids finds a cluster's state by name, for a cluster seen gone.
	uids map[types.NamespacedName]types.UID
	// ctx is Start's, nil before: watches wait for it to read.
	ctx context.Context
	wg  sync.WaitGroup
}

// Cluster is the observer's state of one cluster. The reconciler holds it
// between Lock and Unlock for a pass; the observer takes the lock only to
// store a read, never while it waits for a peer. Reconciles of one cluster
// never run at once.
type Cluster struct {
	mu          sync.Mutex
	LastRead    time.Time
	Fingerprint string
	// ConfirmAt is when the route check wants a confirming read.
	ConfirmAt time.Time
	Peers     map[int32]routecheck.Observation
	Memory    routecheck.Memory
	// TokenRefused tells that a peer refused the token at the latest read:
	// the reconciler reads the token again rather than trust its copy.
	TokenRefused bool

	// The observer's side, under Observer.mu.
	name     types.NamespacedName
	want     *Want
	wake     chan struct{}
	stop     context.CancelFunc
	watching bool
}

// Want is what the reconciler wants read: the peers that may answer, with
// the fingerprint of the pods they were found in.
type Want struct {
	Targets     map[int32]Target
	Fingerprint string
	Round       time.Duration
}

// Lock takes the state for a pass.
func (c *Cluster) Lock() { c.mu.Lock() }

// Unlock releases it.
func (c *Cluster) Unlock() { c.mu.Unlock() }

// Current tells whether the peers were read at the given fingerprint: the
// observations are those of the pods as they are. Call it under Lock.
func (c *Cluster) Current(fingerprint string) bool {
	return !c.LastRead.IsZero() && c.Fingerprint == fingerprint
}

// State returns the state of a cluster, created empty on first use. A
// cluster recreated under the same name is a new cluster: its UID differs.
func (o *Observer) State(name types.NamespacedName, uid types.UID) *Cluster {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.state(name, uid)
}

func (o *Observer) state(name types.NamespacedName, uid types.UID) *Cluster {
	if o.clusters == nil {
		o.clusters = map[types.UID]*Cluster{}
		o.uids = map[types.NamespacedName]types.UID{}
	}
	if old, ok := o.uids[name]; ok && old != uid {
		o.drop(old)
	}
	o.uids[name] = uid
	c := o.clusters[uid]
	if c == nil {
		c = &Cluster{Peers: map[int32]routecheck.Observation{}, name: name, wake: make(chan struct{}, 1)}
		o.clusters[uid] = c
	}
	return c
}

// Watch returns the state of a cluster and has the observer read w from
// now on: at once when its fingerprint is not the one last read.
func (o *Observer) Watch(name types.NamespacedName, uid types.UID, w Want) *Cluster {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.state(name, uid)
	c.want = &w
	c.watching = true
	if o.ctx != nil && c.stop == nil {
		o.start(c)
	}
	c.Wake()
	return c
}

// Wake has the observer look again at when the cluster's peers are due,
// after the reconciler changed ConfirmAt.
func (c *Cluster) Wake() {
	if c.wake == nil {
		return
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Start runs the reads of the watched clusters until ctx is done.
func (o *Observer) Start(ctx context.Context) error {
	o.mu.Lock()
	o.ctx = ctx
	for _, c := range o.clusters {
		if c.watching && c.stop == nil {
			o.start(c)
		}
	}
	o.mu.Unlock()
	<-ctx.Done()
	o.wg.Wait()
	return nil
}

// NeedLeaderElection is true: the observer reads the peers of the clusters
// the controller reconciles, which only the leader does.
func (o *Observer) NeedLeaderElection() bool { return true }

// start runs a cluster's reads, under o.mu.
func (o *Observer) start(c *Cluster) {
	ctx, stop := context.WithCancel(o.ctx)
	c.stop = stop
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		o.run(ctx, c)
	}()
}

// run reads a cluster's peers whenever they are due, until ctx is done.
func (o *Observer) run(ctx context.Context, c *Cluster) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		o.mu.Lock()
		w := c.want
		o.mu.Unlock()
		now := time.Now()
		c.mu.Lock()
		due, next := c.Due(now, w.Round, w.Fingerprint)
		confirming := !c.ConfirmAt.IsZero() && !now.Before(c.ConfirmAt)
		c.mu.Unlock()
		if due {
			if o.Read(ctx, c, w.Targets, now, w.Fingerprint) || confirming {
				if ctx.Err() != nil {
					return
				}
				if o.Changed != nil {
					o.Changed(ctx, c.name)
				}
			}
			continue
		}
		timer.Reset(next.Sub(now))
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-timer.C:
		}
	}
}

// Forget drops the state of a cluster that is gone, going, or left to
// another manager, and stops its reads.
func (o *Observer) Forget(name types.NamespacedName) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if uid, ok := o.uids[name]; ok {
		o.drop(uid)
		delete(o.uids, name)
	}
}

// drop forgets a cluster's state and stops its reads, under o.mu.
func (o *Observer) drop(uid types.UID) {
	if c := o.clusters[uid]; c != nil && c.stop != nil {
		c.stop()
	}
	delete(o.clusters, uid)
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

// Read reads every target in parallel, without the lock, then records the
// observations under it; peers not among the targets are forgotten. A peer
// that does not answer is observed too, as unreachable. It tells whether
// the observations changed: another fingerprint, or other answers.
func (o *Observer) Read(ctx context.Context, c *Cluster, targets map[int32]Target, now time.Time, fingerprint string) bool {
	type result struct {
		ordinal int32
		obs     routecheck.Observation
		refused bool
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
			ch <- result{ordinal, obs, errors.Is(err, ErrRefused)}
		}()
	}
	peers := map[int32]routecheck.Observation{}
	refused := false
	for range targets {
		r := <-ch
		peers[r.ordinal] = r.obs
		refused = refused || r.refused
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := c.LastRead.IsZero() || c.Fingerprint != fingerprint || !sameAnswers(c.Peers, peers)
	c.Peers = peers
	c.TokenRefused = refused
	c.LastRead = now
	c.Fingerprint = fingerprint
	c.ConfirmAt = time.Time{}
	return changed
}

// sameAnswers tells whether two reads of the peers got the same answers,
// whenever they were read.
func sameAnswers(a, b map[int32]routecheck.Observation) bool {
	if len(a) != len(b) {
		return false
	}
	for ordinal, x := range a {
		y, ok := b[ordinal]
		if !ok || x.Err != y.Err || !reflect.DeepEqual(x.Summary, y.Summary) {
			return false
		}
	}
	return true
}
