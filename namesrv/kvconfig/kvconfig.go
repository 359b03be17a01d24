// Package kvconfig is the NameServer's namespaced key/value store behind
// PUT_KV_CONFIG (100), GET_KV_CONFIG (101), DELETE_KV_CONFIG (102) and
// GET_KVLIST_BY_NAMESPACE (219), persisted in Java's kvConfig.json format
// (docs/protocol.md#kv-config, docs/protocol.md#kv-store). It is the only
// state the NameServer keeps across restarts, so a write is acknowledged
// only once it is durable.
//
// Readers use an immutable snapshot published through an atomic pointer:
// Get and KVTable never wait, not even behind a writer's fsync, which matters
// because the ORDER_TOPIC_CONFIG table is attached to every broker
// registration answer. Writers are serialized, build the next snapshot
// (copying only the namespace they change), persist it and only then publish
// it, so readers never see a change that could still be lost and a failed
// write leaves nothing to roll back.
package kvconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"sync"
	"sync/atomic"

	"github.com/kube-namesrv/kube-namesrv/namesrv/config/atomicfile"
)

// OrderTopicConfigNamespace is the namespace whose table the NameServer
// returns to brokers and adds to routes (Java's
// NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG).
const OrderTopicConfigNamespace = "ORDER_TOPIC_CONFIG"

// Options configures a Store.
type Options struct {
	// OnChange runs after every successful Put and Delete, and for each
	// change an Apply made, with the key's new value (present false when it
	// has none). Calls arrive in the order the writes were applied. Open
	// does not call it for what it loads: code that derives state from the
	// store must read the store (Get), the callback only says when to read
	// again. It runs after the store's write lock is released,
	// so it may call Get, KVTable, Entries and Namespaces; it must not call
	// Put or Delete (they wait for it), nor should code that holds a lock
	// OnChange takes call Put or Delete.
	OnChange func(namespace, key, value string, present bool)
	// Logger receives load and write events; nil means slog.Default().
	Logger *slog.Logger
}

type namespace struct {
	kv    map[string]string
	table []byte // cached GET_KVLIST_BY_NAMESPACE body
}

type snapshot struct {
	ns      map[string]*namespace
	entries int
}

// Store is a persistent namespaced KV table. It is safe for concurrent use.
type Store struct {
	path     string
	onChange func(namespace, key, value string, present bool)
	log      *slog.Logger

	mu       sync.Mutex // serializes writers, held while persisting
	notifyMu sync.Mutex // keeps OnChange calls in write order
	cur      atomic.Pointer[snapshot]
}

// Open loads the table from path. A missing file is an empty table; a file
// that cannot be read or parsed is an error, as in Java, where bad JSON
// aborts the startup. Temporary files left by a crash during a write are
// removed.
func Open(path string, opts Options) (*Store, error) {
	s := &Store{path: path, onChange: opts.OnChange, log: opts.Logger}
	if s.log == nil {
		s.log = slog.Default()
	}
	table := map[string]map[string]string{}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.log.Info("no kv config file yet, starting empty", "path", path)
	case err != nil:
		return nil, fmt.Errorf("read kv config %s: %w", path, err)
	default:
		if table, err = decodeFile(data); err != nil {
			return nil, fmt.Errorf("parse kv config %s (fix or remove the file; its previous version may be in %s): %w",
				path, atomicfile.BackupPath(path), err)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			s.log.Warn("kv config file is empty, starting with an empty table; a Java NameServer killed while writing leaves such a file",
				"path", path, "backup", atomicfile.BackupPath(path))
		}
	}
	snap := &snapshot{ns: make(map[string]*namespace, len(table))}
	for name, kv := range table {
		snap.ns[name] = &namespace{kv: kv, table: encodeTable(kv)}
		snap.entries += len(kv)
	}
	s.cur.Store(snap)
	if removed, err := atomicfile.CleanTemp(path); err != nil {
		s.log.Warn("cannot remove temporary kv config files", "path", path, "err", err)
	} else if len(removed) > 0 {
		s.log.Info("removed temporary kv config files left by a crash", "files", removed)
	}
	s.log.Info("kv config loaded", "path", path, "namespaces", len(snap.ns), "entries", snap.entries)
	return s, nil
}

// Put sets namespace/key to *value, creating the namespace if needed. A nil
// value creates the namespace but leaves the key absent: Java stores null,
// which GET reports as not found and the list and file omit. Put returns nil
// only once the new table is on disk; on error nothing changed.
func (s *Store) Put(namespace, key string, value *string) error {
	namespace, key = validUTF8(namespace), validUTF8(key)
	var v string
	if value != nil {
		v = validUTF8(*value)
	}
	return s.write(namespace, key, v, value != nil, true)
}

// Delete removes namespace/key. An absent key or namespace is not an error;
// a namespace left empty is kept (Java keeps it and lists it as {}). Delete
// returns nil only once the new table is on disk; on error nothing changed.
func (s *Store) Delete(namespace, key string) error {
	return s.write(validUTF8(namespace), validUTF8(key), "", false, false)
}

// write applies one change. create says whether a missing namespace is
// created (Put) or left missing (Delete).
func (s *Store) write(name, key, value string, present, create bool) error {
	s.mu.Lock()
	if err := s.apply(name, key, value, present, create); err != nil {
		s.mu.Unlock()
		return err
	}
	// Hand over from the write lock to the notify lock: the next writer can
	// persist while this callback runs, yet callbacks stay in write order.
	s.notifyMu.Lock()
	s.mu.Unlock()
	defer s.notifyMu.Unlock()
	if s.onChange != nil {
		s.onChange(name, key, value, present)
	}
	return nil
}

// apply persists and publishes the change; s.mu must be held. A change that
// leaves the table as it is writes nothing: the published table is always
// the one on disk.
func (s *Store) apply(name, key, value string, present, create bool) error {
	next, changed := s.cur.Load().with(name, key, value, present, create)
	if !changed {
		return nil
	}
	if err := s.persist(next); err != nil {
		return err
	}
	s.cur.Store(next)
	if present {
		s.log.Info("kv config put", "namespace", name, "key", key, "value", value)
	} else {
		s.log.Info("kv config removed", "namespace", name, "key", key)
	}
	return nil
}

// with returns the snapshot after the change, sharing every untouched
// namespace with snap, and whether anything differs.
func (snap *snapshot) with(name, key, value string, present, create bool) (*snapshot, bool) {
	cur, exists := snap.ns[name]
	if !exists && !create {
		return snap, false
	}
	if exists {
		prev, had := cur.kv[key]
		if had == present && prev == value {
			return snap, false
		}
	}
	kv := map[string]string{}
	if exists {
		kv = maps.Clone(cur.kv)
	}
	if present {
		kv[key] = value
	} else {
		delete(kv, key)
	}
	next := &snapshot{ns: maps.Clone(snap.ns), entries: snap.entries + len(kv)}
	if exists {
		next.entries -= len(cur.kv)
	}
	next.ns[name] = &namespace{kv: kv, table: encodeTable(kv)}
	return next, true
}

func (s *Store) persist(snap *snapshot) error {
	table := make(map[string]map[string]string, len(snap.ns))
	for name, ns := range snap.ns {
		table[name] = ns.kv
	}
	if err := atomicfile.Backup(s.path); err != nil {
		s.log.Warn("cannot back up kv config", "path", s.path, "err", err)
	}
	if err := atomicfile.Write(s.path, encodeFile(table)); err != nil {
		return fmt.Errorf("persist kv config %s: %w", s.path, err)
	}
	return nil
}

// Op is what a Change does to its key.
type Op uint8

// The operations of a Change.
const (
	// OpSet sets the key to the value, creating the namespace if needed.
	OpSet Op = iota
	// OpSetIfAbsent sets the key only when it has no value.
	OpSetIfAbsent
	// OpDelete removes the key; an emptied namespace is kept, as Delete
	// keeps it.
	OpDelete
)

// Change is one key's change in a batch.
type Change struct {
	Namespace, Key, Value string
	Op                    Op
}

// Apply makes a batch of changes in one durable write: the new table is
// persisted once, after all of them, and only then published, so readers
// see all or none of them. Changes that would alter nothing (setting the
// current value, OpSetIfAbsent of a present key, deleting an absent key)
// are skipped, and a batch that alters nothing writes nothing. OnChange
// runs for every change that took effect, in batch order. Apply returns
// those changes; on error nothing changed.
func (s *Store) Apply(changes []Change) ([]Change, error) {
	s.mu.Lock()
	cur := s.cur.Load()
	next, applied := cur.withAll(changes)
	if len(applied) == 0 {
		s.mu.Unlock()
		return nil, nil
	}
	if err := s.persist(next); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.cur.Store(next)
	for _, ch := range applied {
		if ch.Op == OpDelete {
			s.log.Info("kv config removed", "namespace", ch.Namespace, "key", ch.Key)
		} else {
			s.log.Info("kv config put", "namespace", ch.Namespace, "key", ch.Key, "value", ch.Value)
		}
	}
	s.notifyMu.Lock()
	s.mu.Unlock()
	defer s.notifyMu.Unlock()
	if s.onChange != nil {
		for _, ch := range applied {
			s.onChange(ch.Namespace, ch.Key, ch.Value, ch.Op != OpDelete)
		}
	}
	return applied, nil
}

// withAll returns the snapshot after a batch, copying each namespace it
// touches once and encoding its table once, and the changes that took
// effect (with their names made valid UTF-8, as stored).
func (snap *snapshot) withAll(changes []Change) (*snapshot, []Change) {
	var applied []Change
	touched := map[string]map[string]string{}
	for _, ch := range changes {
		ch.Namespace, ch.Key, ch.Value = validUTF8(ch.Namespace), validUTF8(ch.Key), validUTF8(ch.Value)
		kv, ok := touched[ch.Namespace]
		if !ok {
			cur, exists := snap.ns[ch.Namespace]
			switch {
			case exists:
				kv = maps.Clone(cur.kv)
			case ch.Op == OpDelete:
				continue
			default:
				kv = map[string]string{}
			}
			touched[ch.Namespace] = kv
		}
		prev, had := kv[ch.Key]
		switch ch.Op {
		case OpDelete:
			if !had {
				continue
			}
			ch.Value = ""
			delete(kv, ch.Key)
		case OpSetIfAbsent:
			if had {
				continue
			}
			kv[ch.Key] = ch.Value
		default:
			if had && prev == ch.Value {
				continue
			}
			kv[ch.Key] = ch.Value
		}
		applied = append(applied, ch)
	}
	if len(applied) == 0 {
		return snap, nil
	}
	next := &snapshot{ns: maps.Clone(snap.ns), entries: snap.entries}
	for name, kv := range touched {
		if old, ok := snap.ns[name]; ok {
			if maps.Equal(old.kv, kv) {
				continue
			}
			next.entries -= len(old.kv)
		}
		next.ns[name] = &namespace{kv: kv, table: encodeTable(kv)}
		next.entries += len(kv)
	}
	return next, applied
}

// Namespace returns a copy of a namespace's keys and values, false when
// the namespace does not exist.
func (s *Store) Namespace(name string) (map[string]string, bool) {
	ns, ok := s.cur.Load().ns[validUTF8(name)]
	if !ok {
		return nil, false
	}
	return maps.Clone(ns.kv), true
}

// Get returns the value of namespace/key.
func (s *Store) Get(namespace, key string) (string, bool) {
	ns, ok := s.cur.Load().ns[validUTF8(namespace)]
	if !ok {
		return "", false
	}
	v, ok := ns.kv[validUTF8(key)]
	return v, ok
}

// KVTable returns the GET_KVLIST_BY_NAMESPACE body {"table":{...}} (sorted
// keys, standard JSON, no HTML escaping), false when the namespace does not
// exist. The slice is cached and shared: callers must not modify it.
func (s *Store) KVTable(namespace string) ([]byte, bool) {
	ns, ok := s.cur.Load().ns[validUTF8(namespace)]
	if !ok {
		return nil, false
	}
	return ns.table, true
}

// Entries returns the number of keys in all namespaces.
func (s *Store) Entries() int { return s.cur.Load().entries }

// Namespaces returns the number of namespaces, empty ones included.
func (s *Store) Namespaces() int { return len(s.cur.Load().ns) }
