// Package kvdeclared keeps the KV store in line with a declared-KV file
// (peerstatus.KVFile) that the operator renders from a NameServerCluster's
// spec.kvConfig into a mounted ConfigMap.
//
// The file is applied at start, before the NameServer serves, whenever its
// bytes change (it is re-stat'ed every 2 s, following the kubelet's symlink
// swaps), and on request (POST /kv/declared/apply). Applying goes through
// the KV store's normal write path, so it is durable and reaches route
// answers (ORDER_TOPIC_CONFIG), and writes only what differs:
//
//   - Owned: every declared key gets its value; other keys are left alone.
//   - Exclusive: every declared key gets its value, and every other key of a
//     declared namespace is deleted.
//   - Additive: declared keys absent from the store are written; a key that
//     holds another value is left alone and reported; nothing undeclared is
//     deleted.
//   - Both: the keys listed as removed are deleted.
//
// Between those moments PUT_KV_CONFIG and DELETE_KV_CONFIG work exactly as
// in Java; drift from the declaration is reported (KVStatus), not undone.
// A missing file declares nothing. A file that cannot be read or parsed
// changes nothing: the last declaration stays in force and the error is
// reported until a good version arrives.
package kvdeclared

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/filestamp"
	"github.com/kube-namesrv/kube-namesrv/namesrv/kvconfig"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// DefaultInterval is how often the watcher re-stats the file.
const DefaultInterval = 2 * time.Second

// Options configure a Declared.
type Options struct {
	// Path is the declared-KV file.
	Path  string
	Store *kvconfig.Store
	// Interval between re-stats of the file; DefaultInterval when 0.
	Interval time.Duration
	Logger   *slog.Logger
}

// Declared applies a declared-KV file to a KV store and reports how the
// store compares with it.
type Declared struct {
	path     string
	store    *kvconfig.Store
	interval time.Duration
	log      *slog.Logger

	// mu serializes reading and applying the file.
	mu     sync.Mutex
	stamp  filestamp.Stamp
	raw    []byte
	digest string
	// decl is the declaration in force: the last version of the file that
	// parsed, nil when none did or the file is gone.
	decl *peerstatus.KVFile
	// err is why the latest read or apply failed.
	err error

	applied, failed  atomic.Int64
	written, deleted atomic.Int64

	watching atomic.Bool
	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
}

// New returns a Declared for the file; nothing is read yet.
func New(o Options) *Declared {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Declared{path: o.Path, store: o.Store, interval: o.Interval, log: o.Logger,
		stop: make(chan struct{}), done: make(chan struct{})}
}

// Apply reads the file and applies it now, whether it changed or not (at
// start, and for POST /kv/declared/apply, which corrects drift made by
// hand), and returns the status after it.
func (d *Declared) Apply() peerstatus.KVStatus {
	d.mu.Lock()
	d.refresh(true)
	st := d.statusLocked()
	d.mu.Unlock()
	return st
}

// Watch re-stats the file every interval and applies it when its bytes
// change, until Stop.
func (d *Declared) Watch() {
	d.watching.Store(true)
	go func() {
		defer close(d.done)
		t := time.NewTicker(d.interval)
		defer t.Stop()
		for {
			select {
			case <-d.stop:
				return
			case <-t.C:
				d.mu.Lock()
				d.refresh(false)
				d.mu.Unlock()
			}
		}
	}()
}

// Stop ends Watch and waits for it to return.
func (d *Declared) Stop() {
	d.stopOnce.Do(func() { close(d.stop) })
	if d.watching.Load() {
		<-d.done
	}
}

// refresh reads the file when force is set or its stamp changed, and
// applies it when force is set or its bytes changed. d.mu is held.
func (d *Declared) refresh(force bool) {
	stamp, err := filestamp.Of(d.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.vanished(force)
		return
	case err != nil:
		d.fail(fmt.Errorf("stat %s: %w", d.path, err), force)
		return
	case !force && stamp.Equal(d.stamp):
		return
	}
	data, err := readFile(d.path)
	if err != nil {
		// The stamp is not kept: the next round reads again.
		d.fail(err, force)
		return
	}
	d.stamp = stamp
	if !force && d.raw != nil && bytes.Equal(data, d.raw) {
		return
	}
	d.raw, d.digest = data, peerstatus.Digest(data)
	decl, err := Decode(data)
	if err != nil {
		d.fail(fmt.Errorf("%s: %w", d.path, err), true)
		return
	}
	d.decl = decl
	if err := d.apply(decl); err != nil {
		d.fail(err, true)
		return
	}
	d.err = nil
	d.applied.Add(1)
}

// vanished is a missing file: nothing is declared, and nothing is deleted
// for it (the ConfigMap volume is optional).
func (d *Declared) vanished(force bool) {
	switch {
	case d.decl != nil:
		d.log.Warn("declared KV file is gone: nothing is declared any more; the store keeps its keys", "file", d.path)
	case force:
		d.log.Info("no declared KV file (yet): nothing declared", "file", d.path)
	}
	d.stamp, d.raw, d.digest, d.decl, d.err = filestamp.Stamp{}, nil, "", nil, nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// fail records why the file was not applied. The same error again, from
// the watcher, is neither counted nor logged again.
func (d *Declared) fail(err error, always bool) {
	if !always && d.err != nil && d.err.Error() == err.Error() {
		return
	}
	d.err = err
	d.failed.Add(1)
	d.log.Error("declared KV config not applied; the last declaration stays in force", "file", d.path, "err", err)
}

// apply writes what differs between the store and decl, in one batch.
func (d *Declared) apply(decl *peerstatus.KVFile) error {
	var changes []kvconfig.Change
	op := kvconfig.OpSet
	if decl.Policy == peerstatus.PolicyAdditive {
		op = kvconfig.OpSetIfAbsent
	}
	for _, ns := range slices.Sorted(maps.Keys(decl.ConfigTable)) {
		kv := decl.ConfigTable[ns]
		for _, k := range slices.Sorted(maps.Keys(kv)) {
			changes = append(changes, kvconfig.Change{Namespace: ns, Key: k, Value: kv[k], Op: op})
		}
		if decl.Policy != peerstatus.PolicyExclusive {
			continue
		}
		cur, _ := d.store.Namespace(ns)
		for _, k := range slices.Sorted(maps.Keys(cur)) {
			if _, declared := kv[k]; !declared {
				changes = append(changes, kvconfig.Change{Namespace: ns, Key: k, Op: kvconfig.OpDelete})
			}
		}
	}
	for _, ns := range slices.Sorted(maps.Keys(decl.Removed)) {
		for _, k := range decl.Removed[ns] {
			changes = append(changes, kvconfig.Change{Namespace: ns, Key: k, Op: kvconfig.OpDelete})
		}
	}
	applied, err := d.store.Apply(changes)
	if err != nil {
		return fmt.Errorf("apply declared KV config: %w", err)
	}
	var written, deleted int
	for _, ch := range applied {
		if ch.Op == kvconfig.OpDelete {
			deleted++
		} else {
			written++
		}
	}
	d.written.Add(int64(written))
	d.deleted.Add(int64(deleted))
	d.log.Info("declared KV config applied", "file", d.path, "policy", decl.Policy, "digest", d.digest,
		"written", written, "deleted", deleted)
	return nil
}

// Status compares the store with the declaration in force, now.
func (d *Declared) Status() peerstatus.KVStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.statusLocked()
}

func (d *Declared) statusLocked() peerstatus.KVStatus {
	st := peerstatus.KVStatus{File: d.path, Digest: d.digest}
	if d.err != nil {
		st.Error = d.err.Error()
	}
	if d.decl == nil {
		st.InSync = d.err == nil
		return st
	}
	st.Policy = d.decl.Policy
	drift := d.drift(d.decl)
	st.InSync = d.err == nil && inSync(d.decl.Policy, drift)
	st.Drift = drift[:min(len(drift), peerstatus.MaxListed)]
	return st
}

// InSync is Status().InSync.
func (d *Declared) InSync() bool { return d.Status().InSync }

// inSync: Owned and Exclusive ask for no drift at all; Additive only that
// declared keys exist and removed keys do not, so a key set by hand to
// another value ("differs") is reported but does not count.
func inSync(policy string, drift []peerstatus.KVDrift) bool {
	for _, dr := range drift {
		if policy != peerstatus.PolicyAdditive || dr.Reason != peerstatus.DriftDiffers {
			return false
		}
	}
	return true
}

// drift lists every key where the store departs from decl, sorted by
// namespace and key.
func (d *Declared) drift(decl *peerstatus.KVFile) []peerstatus.KVDrift {
	var out []peerstatus.KVDrift
	add := func(ns, k, reason string) {
		out = append(out, peerstatus.KVDrift{Namespace: ns, Key: k, Reason: reason})
	}
	for ns, kv := range decl.ConfigTable {
		cur, _ := d.store.Namespace(ns)
		for k, want := range kv {
			switch v, ok := cur[k]; {
			case !ok:
				add(ns, k, peerstatus.DriftMissing)
			case v != want:
				add(ns, k, peerstatus.DriftDiffers)
			}
		}
		if decl.Policy == peerstatus.PolicyExclusive {
			for k := range cur {
				if _, declared := kv[k]; !declared {
					add(ns, k, peerstatus.DriftUndeclared)
				}
			}
		}
	}
	for ns, keys := range decl.Removed {
		for _, k := range keys {
			if _, ok := d.store.Get(ns, k); ok {
				add(ns, k, peerstatus.DriftRemoved)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return cmp.Or(strings.Compare(out[i].Namespace, out[j].Namespace), strings.Compare(out[i].Key, out[j].Key)) < 0
	})
	return slices.CompactFunc(out, func(a, b peerstatus.KVDrift) bool { return a == b })
}

// Stats are the counters of the applies so far.
type Stats struct {
	// Applied and Failed count reads of the file that were applied, and
	// those that could not be read, parsed or applied.
	Applied, Failed int64
	// Written and Deleted count the keys the applies changed.
	Written, Deleted int64
}

// Stats returns the counters.
func (d *Declared) Stats() Stats {
	return Stats{Applied: d.applied.Load(), Failed: d.failed.Load(), Written: d.written.Load(), Deleted: d.deleted.Load()}
}
