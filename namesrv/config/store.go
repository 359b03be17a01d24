package config

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kube-namesrv/kube-namesrv/namesrv/config/atomicfile"
)

// ErrParse wraps an UPDATE_NAMESRV_CONFIG body that is not a properties
// text. Its message is the remark Java answers (code SYSTEM_ERROR); the
// wrapping error adds the line for the log.
var ErrParse = errors.New("string2Properties error")

// ErrBlackListed is returned, unwrapped, when UPDATE_NAMESRV_CONFIG names a
// black-listed key; its message is Java's remark for code NO_PERMISSION (16).
var ErrBlackListed = errors.New("Can not update config in black list.") //nolint:staticcheck // Java's exact remark.

// alwaysBlackListed are refused whatever configBlackList says: the first
// four because Java's DefaultRequestProcessor adds them unconditionally,
// liveBrokersPath because, like kvConfigPath, it names a file the
// NameServer writes, which an unauthenticated request must not choose, the
// TLS keys because Java reads them from system properties, out of reach of
// UPDATE_NAMESRV_CONFIG, and an unauthenticated request must not be able to
// turn TLS off for the next restart. The authorization keys likewise: a
// request must not be able to widen its own grants for the next restart.
var alwaysBlackListed = []string{"configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome", "liveBrokersPath",
	"tls.server.mode", "tls.server.certPath", "tls.server.keyPath", "tls.server.trustCertPath", "tls.server.need.client.auth",
	"authzEnable", "authzBrokerIdentities", "authzBrokerNetworks", "authzAdminIdentities", "authzAdminNetworks",
	"authzReadIdentities", "authzReadNetworks", "authzBrokerNameOwnership",
	"httpAuthScope", "httpAuthTokenFile", "httpTLSMode"}

// state is one immutable version of the live configuration.
type state struct {
	cfg   *Config
	extra []Property // unknown keys from the -c file, sorted by key
	text  []byte
}

// Store is the live configuration behind GET_NAMESRV_CONFIG and
// UPDATE_NAMESRV_CONFIG. Readers load an immutable snapshot through an atomic
// pointer and never block; updates are serialized and publish a new snapshot
// only after it is persisted.
type Store struct {
	log *slog.Logger

	mu  sync.Mutex // serializes Update, including persisting and notifying
	cur atomic.Pointer[state]

	subMu sync.Mutex
	subs  []func(old, cur *Config)
}

// NewStore starts a store from the resolved startup configuration and the
// unknown properties of the -c file. cfg is copied. A nil log discards.
func NewStore(cfg *Config, extra []Property, log *slog.Logger) *Store {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{log: log}
	own := *cfg
	var kept []Property
	for _, p := range extra {
		if _, known := byName[p.Key]; !known {
			kept = append(kept, p)
		}
	}
	kept = sortedUnique(kept)
	s.cur.Store(&state{cfg: &own, extra: kept, text: Text(&own, kept)})
	if removed, err := atomicfile.CleanTemp(own.ConfigStorePath); err != nil {
		log.Warn("cannot remove temporary files of the persisted config", "path", own.ConfigStorePath, "err", err)
	} else if len(removed) > 0 {
		log.Info("removed temporary files left by a crash", "files", removed)
	}
	return s
}

// sortedUnique sorts by key, keeping the last value of a repeated key.
func sortedUnique(props []Property) []Property {
	out := slices.Clone(props)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	for i := len(out) - 1; i > 0; i-- {
		if out[i-1].Key == out[i].Key {
			out = slices.Delete(out, i-1, i)
		}
	}
	return out
}

// Load returns the current configuration. It is shared: do not modify it.
func (s *Store) Load() *Config { return s.cur.Load().cfg }

// Text returns the GET_NAMESRV_CONFIG body: every registry property and every
// extra key, sorted, one escaped "key=value\n" line each.
func (s *Store) Text() []byte { return slices.Clone(s.cur.Load().text) }

// Subscribe registers fn to run after each successful Update with the
// previous and the new configuration, in update order. fn runs while updates
// are serialized, so it must not call Update; Load and Text are fine.
func (s *Store) Subscribe(fn func(old, cur *Config)) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	s.subs = append(s.subs, fn)
}

// blackList is the set of keys Update refuses given the current config.
func blackList(cfg *Config) []string {
	list := slices.Clone(alwaysBlackListed)
	for _, k := range strings.Split(cfg.ConfigBlackList, ";") {
		if k = strings.TrimSpace(k); k != "" {
			list = append(list, k)
		}
	}
	return list
}

// Update applies an UPDATE_NAMESRV_CONFIG body.
//
//   - An empty body, or one without properties, changes nothing.
//   - A body that does not parse returns an error wrapping ErrParse.
//   - Any black-listed key returns ErrBlackListed and applies nothing.
//   - An invalid value of a known key, or a combination Validate refuses,
//     returns a *ValueError and applies nothing (Java would skip that key
//     and apply the rest).
//   - Known keys set the configuration. Unknown keys update extra keys that
//     already exist (from the -c file) and are otherwise ignored with a
//     warning, as Java's Configuration.update (mergeIfExist) does.
//   - The full text is written to configStorePath (previous content kept as
//     .bak) before the new configuration is published; if that fails the
//     error is returned and nothing changes. Java logs such a failure and
//     answers success.
//
// Then the subscribers run.
func (s *Store) Update(body []byte) error {
	if len(body) == 0 {
		return nil
	}
	props, err := ParseProperties(body)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrParse, err)
	}
	if len(props) == 0 {
		return nil
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.cur.Load()
	black := blackList(old.cfg)
	for _, p := range props {
		if slices.Contains(black, p.Key) {
			s.log.Warn("refused config update of a black-listed key", "key", p.Key)
			return ErrBlackListed
		}
	}
	cfg := *old.cfg
	unknown, err := cfg.Apply(props)
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	extra := slices.Clone(old.extra)
	for _, p := range unknown {
		i := slices.IndexFunc(extra, func(e Property) bool { return e.Key == p.Key })
		if i < 0 {
			s.log.Warn("ignored unknown property in config update", "key", p.Key)
			continue
		}
		extra[i].Value = p.Value
	}
	next := &state{cfg: &cfg, extra: extra, text: Text(&cfg, extra)}
	if err := s.persist(next); err != nil {
		return err
	}
	s.cur.Store(next)
	for _, p := range props {
		if k, known := byName[p.Key]; known {
			// effect tells the operator whether a restart is still needed.
			s.log.Info("config updated", "key", p.Key, "value", k.get(&cfg), "effect", k.Effect)
		}
	}

	s.subMu.Lock()
	subs := slices.Clone(s.subs)
	s.subMu.Unlock()
	for _, fn := range subs {
		fn(old.cfg, next.cfg)
	}
	return nil
}

func (s *Store) persist(st *state) error {
	path := st.cfg.ConfigStorePath
	if err := atomicfile.Backup(path); err != nil {
		s.log.Warn("cannot back up the persisted config", "path", path, "err", err)
	}
	if err := atomicfile.Write(path, st.text); err != nil {
		return fmt.Errorf("persist namesrv config %s: %w", path, err)
	}
	return nil
}
