// Package liverecord persists a NameServer's record of its live brokers
// (peerstatus.GateRecord): which broker addresses, by cluster, were live in
// its own route table, and when that was written.
//
// Routes live only in memory and are learnt from registrations, so after a
// restart of every peer at once, or of a one-replica cluster, no serving
// peer can say which brokers a restarted one must wait for. The record can:
// the next process loads it at start and shows it in its route summary
// (gate.record), and the operator names those brokers in its gate request.
//
// The record sits in a small JSON file next to the KV store, on the same
// volume, so it survives what the KV store survives. It is rewritten
// atomically and durably (config/atomicfile), only when the set of live
// addresses changed and at most once per interval (not at every
// registration), and once more at a clean shutdown. An empty set is
// recorded too: "no broker was live" is knowledge. Recording starts only
// once the caller says the table is complete (the route gate is open):
// before that, the table of a restarted process is still filling, and
// writing it would overwrite the previous record with a partial one.
//
// A record that cannot be read or parsed is logged and ignored; it never
// stops start-up.
package liverecord

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/config/atomicfile"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// FileName is the record's name beside the KV store when liveBrokersPath
// is not set.
const FileName = "liveBrokers.json"

// DefaultInterval is the least time between two writes of a changed set.
const DefaultInterval = 5 * time.Second

// MaxFileSize bounds the record a NameServer reads: a hundred thousand
// brokers fit in a quarter of it.
const MaxFileSize = 16 << 20

// Path is the record's file: path when set, else FileName in the directory
// of the KV store's file.
func Path(path, kvConfigPath string) string {
	if path != "" {
		return path
	}
	return filepath.Join(filepath.Dir(kvConfigPath), FileName)
}

// Decode parses a record: one JSON object with a recordedAt time and the
// brokers, each with a cluster and an address. Unknown fields are ignored,
// so a record written by a later version still reads; trailing data, a
// missing time and incomplete brokers are errors. The brokers come back
// sorted by cluster and address without duplicates, never nil.
func Decode(data []byte) (peerstatus.GateRecord, error) {
	var rec peerstatus.GateRecord
	if len(data) > MaxFileSize {
		return rec, fmt.Errorf("record of %d bytes, more than %d", len(data), MaxFileSize)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return rec, errors.New("empty record")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&rec); err != nil {
		return peerstatus.GateRecord{}, fmt.Errorf("record is not valid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return peerstatus.GateRecord{}, errors.New("record has data after its JSON object")
	}
	if rec.RecordedAt.IsZero() {
		return peerstatus.GateRecord{}, errors.New("record without recordedAt")
	}
	for i, k := range rec.Brokers {
		if k.Cluster == "" || k.Addr == "" {
			return peerstatus.GateRecord{}, fmt.Errorf("record: brokers[%d] needs both cluster and addr", i)
		}
	}
	rec.Brokers = SortedKeys(rec.Brokers)
	return rec, nil
}

// Encode renders a record as Decode reads it, brokers sorted.
func Encode(rec peerstatus.GateRecord) ([]byte, error) {
	rec.Brokers = SortedKeys(rec.Brokers)
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode live brokers record: %w", err)
	}
	return append(b, '\n'), nil
}

// Load reads the record at path; nil and no error when there is none.
func Load(path string) (*peerstatus.GateRecord, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open live brokers record: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read live brokers record %s: %w", path, err)
	}
	rec, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("live brokers record %s: %w", path, err)
	}
	return &rec, nil
}

// SortedKeys returns keys sorted by cluster and address without
// duplicates, never nil.
func SortedKeys(keys []peerstatus.BrokerKey) []peerstatus.BrokerKey {
	out := make([]peerstatus.BrokerKey, len(keys))
	copy(out, keys)
	sort.Slice(out, func(i, j int) bool {
		return cmp.Or(strings.Compare(out[i].Cluster, out[j].Cluster), strings.Compare(out[i].Addr, out[j].Addr)) < 0
	})
	return slices.Compact(out)
}

// Options configure a Recorder.
type Options struct {
	Path string
	// Live returns the live broker addresses now.
	Live func() []peerstatus.BrokerKey
	// Complete reports whether the live table may be recorded: false while
	// a restarted NameServer is still hearing from its brokers. Once it
	// returned true it is not asked again.
	Complete func() bool
	// Previous is the record loaded at start (nil: none): the same set is
	// not written again.
	Previous *peerstatus.GateRecord
	// Interval between checks of the live set; DefaultInterval when 0.
	Interval time.Duration
	Logger   *slog.Logger
}

// Stats count the recorder's checks of the live set and its writes.
type Stats struct {
	Checks, Written, Failed int64
}

// Recorder keeps the record in line with the live table.
type Recorder struct {
	path     string
	live     func() []peerstatus.BrokerKey
	complete func() bool
	interval time.Duration
	log      *slog.Logger

	// mu serializes checks and writes.
	mu        sync.Mutex
	recording bool
	// last is the set in the file, nil when none was read or written.
	last []peerstatus.BrokerKey

	checks, written, failed atomic.Int64

	started  atomic.Bool
	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
}

// New returns a recorder; nothing is written until Run. It removes
// temporary files a crash during a write left beside the record.
func New(o Options) *Recorder {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Recorder{path: o.Path, live: o.Live, complete: o.Complete, interval: o.Interval, log: o.Logger,
		stop: make(chan struct{}), done: make(chan struct{})}
	if o.Previous != nil {
		r.last = SortedKeys(o.Previous.Brokers)
	}
	if removed, err := atomicfile.CleanTemp(o.Path); err != nil {
		r.log.Warn("cannot remove temporary files of the live brokers record", "path", o.Path, "err", err)
	} else if len(removed) > 0 {
		r.log.Info("removed temporary files of the live brokers record left by a crash", "files", removed)
	}
	return r
}

// Run checks the live set every interval, in the background, until Stop.
func (r *Recorder) Run() {
	r.started.Store(true)
	go func() {
		defer close(r.done)
		t := time.NewTicker(r.interval)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				r.record(false)
			}
		}
	}()
}

// Stop ends Run and, when it ran and recording has begun (or may begin
// now), writes the live set a last time, whether it changed or not, so
// recordedAt is the shutdown. A recorder that never ran writes nothing: a
// NameServer that failed to start keeps the previous record.
func (r *Recorder) Stop() {
	r.stopOnce.Do(func() {
		close(r.stop)
		if r.started.Load() {
			<-r.done
			r.record(true)
		}
	})
}

// Stats are the writes so far.
func (r *Recorder) Stats() Stats {
	return Stats{Checks: r.checks.Load(), Written: r.written.Load(), Failed: r.failed.Load()}
}

// record writes the live set when recording has begun and the set differs
// from the file's, or always when force is set. A failed write is retried
// at the next check.
func (r *Recorder) record(force bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.checks.Add(1)
	if !r.recording {
		if !r.complete() {
			return
		}
		r.recording = true
		r.log.Info("recording the live brokers", "path", r.path, "interval", r.interval)
	}
	live := SortedKeys(r.live())
	if !force && r.last != nil && slices.Equal(live, r.last) {
		return
	}
	data, err := Encode(peerstatus.GateRecord{RecordedAt: time.Now().UTC(), Brokers: live})
	if err == nil {
		err = atomicfile.Write(r.path, data)
	}
	if err != nil {
		r.failed.Add(1)
		r.log.Warn("cannot write the live brokers record; retrying at the next check", "path", r.path, "err", err)
		return
	}
	r.written.Add(1)
	r.log.Debug("live brokers recorded", "path", r.path, "brokers", len(live))
	r.last = live
}
