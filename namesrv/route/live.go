package route

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
)

// AddrKey names a live broker address the way the live table keys it.
type AddrKey struct {
	Cluster, Addr string
}

// LiveBroker is one entry of the live table.
type LiveBroker struct {
	AddrKey
	BrokerName  string
	BrokerID    int64
	DataVersion body.DataVersion
	// RegisteredAt is the first registration since the address was last
	// absent; LastUpdate the latest registration or heartbeat.
	RegisteredAt, LastUpdate time.Time
}

// LiveBrokers exports the live table, sorted by cluster and address. It
// copies the entries under the writers' lock (a few microseconds for a
// thousand brokers) and sorts them after releasing it.
func (t *Table) LiveBrokers() []LiveBroker {
	t.mu.Lock()
	out := make([]LiveBroker, 0, len(t.live))
	for key, li := range t.live {
		out = append(out, LiveBroker{
			AddrKey:      key,
			BrokerName:   li.brokerName,
			BrokerID:     li.brokerID,
			DataVersion:  li.dataVersion,
			RegisteredAt: time.UnixMilli(li.registeredAt),
			LastUpdate:   time.UnixMilli(li.lastUpdate),
		})
	}
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if c := strings.Compare(out[i].Cluster, out[j].Cluster); c != 0 {
			return c < 0
		}
		return out[i].Addr < out[j].Addr
	})
	return out
}

// NotLive returns those of keys that are not in the live table, in order.
func (t *Table) NotLive(keys []AddrKey) []AddrKey {
	var out []AddrKey
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		if _, ok := t.live[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// lockProbe is the one goroutine, at most, that waits for the writers'
// lock on behalf of ProbeLock.
type lockProbe struct {
	mu    sync.Mutex
	taken chan struct{} // closed once the waiting goroutine got the lock
	since time.Time
}

// ProbeLock reports whether the writers' lock can be taken before ctx
// ends: a writer stuck while holding it would block every registration
// forever. The wait queues like any writer. However often it is called,
// at most one goroutine waits for the lock; a probe that finds one still
// waiting waits on it too.
func (t *Table) ProbeLock(ctx context.Context) error {
	p := &t.lockProbe
	p.mu.Lock()
	taken := p.taken
	if taken == nil {
		taken = make(chan struct{})
		p.taken, p.since = taken, time.Now()
		go func() {
			t.mu.Lock()
			t.mu.Unlock() //nolint:staticcheck // SA2001: taking the lock is the probe
			p.mu.Lock()
			close(taken)
			p.taken = nil
			p.mu.Unlock()
		}()
	}
	since := p.since
	p.mu.Unlock()
	select {
	case <-taken:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("route table: writers' lock not available for %s", time.Since(since).Round(time.Millisecond))
	}
}
