// Package namesrv assembles a RocketMQ NameServer: the route table, the KV
// store and the live configuration behind a remoting server (plain, TLS or
// both, with its connection limits), authorization of requests by role
// and broker-name ownership, the periodic scan that expires silent
// brokers, the start-up route gate with its record of live brokers, the
// declared KV config, and the HTTP side (health, metrics, address server,
// peer status, with optional credentials and TLS). cmd/namesrv runs one;
// tests and the end-to-end suite start them in-process.
package namesrv

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/authz"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/gate"
	"github.com/kube-namesrv/kube-namesrv/namesrv/httpapi"
	"github.com/kube-namesrv/kube-namesrv/namesrv/kvconfig"
	"github.com/kube-namesrv/kube-namesrv/namesrv/kvdeclared"
	"github.com/kube-namesrv/kube-namesrv/namesrv/liverecord"
	"github.com/kube-namesrv/kube-namesrv/namesrv/metrics"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
	"github.com/kube-namesrv/kube-namesrv/namesrv/processor"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/namesrv/route"
)

// Options configure a Server.
type Options struct {
	Config *config.Config
	// Extra are the unknown keys of the -c file, kept for GET_NAMESRV_CONFIG.
	Extra  []config.Property
	Logger *slog.Logger
	// HTTPListener, when set, serves the HTTP side instead of a listener
	// on bindAddress:httpPort (tests use it to get a free port).
	HTTPListener net.Listener
	// LiveTimeout bounds the liveness check of /healthz;
	// httpapi.DefaultLiveTimeout when 0.
	LiveTimeout time.Duration
	// LiveRecordInterval is the least time between two writes of the
	// record of live brokers; liverecord.DefaultInterval when 0. Tests
	// shorten it.
	LiveRecordInterval time.Duration

	// wrapHandler lets this package's tests wrap the request processor.
	wrapHandler func(remoting.Handler) remoting.Handler
}

// Server is a running NameServer.
type Server struct {
	log     *slog.Logger
	cfg     *config.Store
	kv      *kvconfig.Store
	routes  *route.Table
	remote  *remoting.Server
	proc    *processor.Processor
	started time.Time
	bootID  string
	gate    *gate.Gate
	// declared applies the declared-KV file; nil without one.
	declared *kvdeclared.Declared
	// recorder keeps the record of live brokers the gate shows after a
	// restart.
	recorder    *liverecord.Recorder
	liveTimeout time.Duration
	// owners records broker-name ownership; nil when it is off.
	owners *authz.Owners
	// httpAuth checks the HTTP port's credentials; httpTLS serves it TLS
	// (nil: plain only).
	httpAuth *httpapi.Auth
	httpTLS  *remoting.CertFiles

	listener net.Listener
	// extra are the listeners of extraListenPorts.
	extra    []net.Listener
	stop     chan struct{}
	wg       sync.WaitGroup
	serveErr chan error

	metrics      *metrics.Metrics
	http         *http.Server
	httpListener net.Listener
	httpErr      chan error
	serving      atomic.Bool
	stopping     atomic.Bool
}

// New builds a NameServer from its configuration: it loads the KV store
// (an unreadable or corrupt file is an error, as in Java) but does not
// listen yet.
func New(o Options) (*Server, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	cfg := o.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	bootID, err := newBootID()
	if err != nil {
		return nil, err
	}
	s := &Server{
		log:      o.Logger,
		cfg:      config.NewStore(cfg, o.Extra, o.Logger),
		stop:     make(chan struct{}),
		serveErr: make(chan error, 1),
		httpErr:  make(chan error, 1),
		started:  time.Now(),
		bootID:   bootID,

		httpListener: o.HTTPListener,
		liveTimeout:  o.LiveTimeout,
	}
	// Routes read the order config from the store whenever they are built,
	// so what the store holds reaches them however it got there (loaded
	// from the file here, a KV write, a declared-KV apply); the change
	// callback rebuilds routes built before a change.
	kv, err := kvconfig.Open(cfg.KVConfigPath, kvconfig.Options{
		Logger: o.Logger.With("component", "kvconfig"),
		OnChange: func(ns, key, _ string, _ bool) {
			if ns == protocol.NamespaceOrderTopicConfig {
				s.routes.OrderConfChanged(key)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("open kv config: %w", err)
	}
	s.kv = kv
	s.routes = route.New(route.Options{
		View:                              viewOptions(cfg),
		DeleteTopicWithBrokerRegistration: cfg.DeleteTopicWithBrokerRegistration,
		OrderConf: func(topic string) (string, bool) {
			return kv.Get(protocol.NamespaceOrderTopicConfig, topic)
		},
		OnRegister: func(cluster, addr string) { s.gate.Registered(cluster, addr) },
		Logger:     o.Logger.With("component", "route"),
	})
	if cfg.KVDeclaredFile != "" {
		s.declared = kvdeclared.New(kvdeclared.Options{Path: cfg.KVDeclaredFile, Store: kv, Logger: o.Logger.With("component", "kvdeclared")})
	}
	tlsMode, certs, err := setupTLS(cfg, o.Logger)
	if err != nil {
		return nil, fmt.Errorf("TLS: %w", err)
	}
	var tlsConfig *tls.Config
	if certs != nil {
		tlsConfig = certs.Config()
	}
	recordPath := liverecord.Path(cfg.LiveBrokersPath, cfg.KVConfigPath)
	record := loadRecord(recordPath, o.Logger)
	// The gate's settings are read here, once: an UPDATE_NAMESRV_CONFIG of
	// them is persisted for the next start but neither opens nor closes
	// this process's gate. The warm-up is read live, as the processor
	// reads it.
	s.gate = gate.New(gate.Options{
		Enabled:     cfg.RouteGateEnable,
		Start:       s.started,
		Timeout:     time.Duration(cfg.RouteGateTimeoutSeconds) * time.Second,
		WarmUpUntil: s.warmUpUntil,
		Record:      record,
		NotLive:     s.notLive,
		Logger:      o.Logger.With("component", "gate"),
	})
	// Recorded once the gate is open: until then the table of a restarted
	// NameServer is still filling, and the previous record is what the
	// operator needs.
	s.recorder = liverecord.New(liverecord.Options{
		Path:     recordPath,
		Live:     s.liveKeys,
		Complete: func() bool { return !s.gate.Closed() },
		Previous: record,
		Interval: o.LiveRecordInterval,
		Logger:   o.Logger.With("component", "liverecord"),
	})
	policy, err := setupAuthz(cfg, o.Logger)
	if err != nil {
		s.gate.Stop()
		return nil, err
	}
	if cfg.AuthzBrokerNameOwnership {
		s.owners = authz.NewOwners(func(name string) bool { return len(s.routes.MemberGroup(name)) > 0 })
	}
	s.metrics = metrics.New(metrics.Sources{Routes: s.routes, KV: kv, TLS: certs, Gate: s.gate, Declared: s.declared, Record: s.recorder,
		AuthzEnabled: cfg.AuthzEnable, Owners: s.owners, HTTPPaths: httpapi.GuardedPaths})
	if s.httpAuth, s.httpTLS, err = setupHTTPAuth(cfg, policy, s.metrics, o.Logger); err != nil {
		s.gate.Stop()
		return nil, err
	}
	s.cfg.Subscribe(func(_, cur *config.Config) {
		s.routes.SetViewOptions(viewOptions(cur))
		s.routes.SetDeleteTopicWithBrokerRegistration(cur.DeleteTopicWithBrokerRegistration)
		s.gate.Recheck()
	})
	var remotingPolicy *authz.Policy
	if cfg.AuthzEnable {
		remotingPolicy = policy
	}
	s.proc = processor.New(processor.Options{
		Routes:   s.routes,
		KV:       s.kv,
		Config:   s.cfg,
		Logger:   o.Logger.With("component", "processor"),
		Started:  s.started,
		Gate:     s.gate,
		Policy:   remotingPolicy,
		Owners:   s.owners,
		Refusals: s.metrics,
	})
	var handler remoting.Handler = s.proc
	if o.wrapHandler != nil {
		handler = o.wrapHandler(handler)
	}
	s.remote = remoting.NewServer(handler, remoting.Config{
		FrameMaxLength:      cfg.FrameMaxLength,
		IdleTimeout:         timeout(cfg.ServerChannelMaxIdleTimeSeconds, time.Second),
		ReadTimeout:         timeout(cfg.FrameReadTimeoutMillis, time.Millisecond),
		WriteTimeout:        timeout(cfg.WriteTimeoutMillis, time.Millisecond),
		MaxConnections:      cfg.MaxConnections,
		MaxInflight:         cfg.MaxInflightPerConnection,
		SocketSendBuffer:    cfg.ServerSocketSndBufSize,
		SocketReceiveBuffer: cfg.ServerSocketRcvBufSize,
		TLSMode:             tlsMode,
		TLSConfig:           tlsConfig,
		HandshakeTimeout:    time.Duration(cfg.TLSHandshakeTimeoutMillis) * time.Millisecond,
		Logger:              o.Logger.With("component", "remoting"),
		Observer:            s.metrics,
	})
	return s, nil
}

// setupTLS reads the tls.server.* keys. Like Java, permissive is the
// default; unlike Java, which then serves a self-signed certificate
// (tls.test.mode.enable), a server without a certificate serves plain
// only, and enforcing without one is a configuration error.
func setupTLS(cfg *config.Config, log *slog.Logger) (remoting.TLSMode, *remoting.CertFiles, error) {
	modes := map[string]remoting.TLSMode{
		"disabled": remoting.TLSDisabled, "permissive": remoting.TLSPermissive, "enforcing": remoting.TLSEnforcing,
	}
	mode, ok := modes[cfg.TLSServerMode]
	if !ok {
		return 0, nil, fmt.Errorf("unknown tls.server.mode %q", cfg.TLSServerMode)
	}
	auths := map[string]tls.ClientAuthType{
		"none": tls.NoClientCert, "optional": tls.VerifyClientCertIfGiven, "require": tls.RequireAndVerifyClientCert,
	}
	auth, ok := auths[cfg.TLSServerNeedClientAuth]
	if !ok {
		return 0, nil, fmt.Errorf("unknown tls.server.need.client.auth %q", cfg.TLSServerNeedClientAuth)
	}
	haveFiles := cfg.TLSServerCertPath != "" || cfg.TLSServerKeyPath != ""
	switch {
	case mode == remoting.TLSDisabled:
		if haveFiles {
			log.Warn("tls.server.mode=disabled: the configured TLS certificate is not used")
		}
		return mode, nil, nil
	case !haveFiles && mode == remoting.TLSEnforcing:
		return 0, nil, errors.New("tls.server.mode=enforcing needs tls.server.certPath and tls.server.keyPath")
	case !haveFiles:
		log.Info("no TLS certificate configured: serving plain connections only", "tls.server.mode", cfg.TLSServerMode)
		return mode, nil, nil
	}
	certs, err := remoting.NewCertFiles(remoting.CertFilesOptions{
		CertPath:     cfg.TLSServerCertPath,
		KeyPath:      cfg.TLSServerKeyPath,
		ClientCAPath: cfg.TLSServerTrustCertPath,
		ClientAuth:   auth,
		Logger:       log.With("component", "tls"),
	})
	if err != nil {
		return 0, nil, err
	}
	log.Info("TLS on the remoting port", "tls.server.mode", cfg.TLSServerMode, "cert", cfg.TLSServerCertPath,
		"clientAuth", cfg.TLSServerNeedClientAuth, "notAfter", certs.NotAfter())
	return mode, certs, nil
}

// setupAuthz reads the authorization lists and says, once, whether the
// remoting port is open to every peer. The lists also serve the HTTP
// port's client certificates, whether or not authzEnable is set.
func setupAuthz(cfg *config.Config, log *slog.Logger) (*authz.Policy, error) {
	policy, err := cfg.AuthzPolicy()
	if err != nil {
		return nil, err
	}
	if !cfg.AuthzEnable {
		log.Warn("authorization is off (authzEnable=false): every peer of the remoting port may register brokers, " +
			"write and delete KV config, wipe write permissions, delete topics and update the configuration")
	} else {
		roles := policy.Describe()
		log.Info("authorization by role on the remoting port", "broker", roles["broker"], "admin", roles["admin"], "read", roles["read"])
	}
	if cfg.AuthzBrokerNameOwnership {
		if cfg.TLSServerNeedClientAuth == "none" || cfg.TLSServerTrustCertPath == "" {
			log.Warn("authzBrokerNameOwnership is on but client certificates are not verified (tls.server.need.client.auth, " +
				"tls.server.trustCertPath): every broker has the same empty identity, so no name is protected")
		} else {
			log.Info("broker names are owned by the client-certificate identity that registers them first")
		}
	}
	return policy, nil
}

// setupHTTPAuth builds the HTTP port's credential check and, with
// httpTLSMode, its TLS certificate: the remoting port's files, with client
// certificates verified when given and never required, so probes that
// cannot present one still get through.
func setupHTTPAuth(cfg *config.Config, policy *authz.Policy, m *metrics.Metrics, log *slog.Logger) (*httpapi.Auth, *remoting.CertFiles, error) {
	scope, err := httpapi.ParseScope(cfg.HTTPAuthScope)
	if err != nil {
		return nil, nil, err
	}
	auth := &httpapi.Auth{Scope: scope, CertGrants: policy.CertGrants, Refused: m.HTTPRefused}
	if cfg.HTTPAuthTokenFile != "" {
		if auth.Tokens, err = httpapi.NewTokenFile(cfg.HTTPAuthTokenFile, log.With("component", "http")); err != nil {
			return nil, nil, err
		}
	}
	if scope == httpapi.ScopeNone {
		log.Warn("the HTTP port's endpoints need no credential (httpAuthScope=none): anyone who reaches it may open the route gate and re-apply the declared KV config")
	}
	if cfg.HTTPTLSMode == "disabled" {
		return auth, nil, nil
	}
	clientAuth := tls.NoClientCert
	if cfg.TLSServerTrustCertPath != "" {
		clientAuth = tls.VerifyClientCertIfGiven
	}
	certs, err := remoting.NewCertFiles(remoting.CertFilesOptions{
		CertPath:     cfg.TLSServerCertPath,
		KeyPath:      cfg.TLSServerKeyPath,
		ClientCAPath: cfg.TLSServerTrustCertPath,
		ClientAuth:   clientAuth,
		Logger:       log.With("component", "http-tls"),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("HTTP TLS: %w", err)
	}
	log.Info("TLS on the HTTP port", "httpTLSMode", cfg.HTTPTLSMode, "clientCertificates", clientAuth != tls.NoClientCert)
	return auth, certs, nil
}

func viewOptions(c *config.Config) route.ViewOptions {
	return route.ViewOptions{OrderMessageEnable: c.OrderMessageEnable, SupportActingMaster: c.SupportActingMaster}
}

// timeout maps a timeout key to the remoting server's setting, where a
// negative duration disables what 0 disables in the key.
func timeout(n int, unit time.Duration) time.Duration {
	if n <= 0 {
		return -1
	}
	return time.Duration(n) * unit
}

// Routes is the route table, for tests and the metrics exporter.
func (s *Server) Routes() *route.Table { return s.routes }

// KV is the KV store, for tests and the metrics exporter.
func (s *Server) KV() *kvconfig.Store { return s.kv }

// Config is the live configuration.
func (s *Server) Config() *config.Store { return s.cfg }

func newBootID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("boot id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// loadRecord reads the previous process's record of live brokers. One that
// cannot be read is logged and ignored: it only helps the gate, and a
// NameServer must start without it.
func loadRecord(path string, log *slog.Logger) *peerstatus.GateRecord {
	rec, err := liverecord.Load(path)
	switch {
	case err != nil:
		log.Warn("ignoring the record of live brokers; it is rewritten once the route gate is open", "err", err)
		return nil
	case rec == nil:
		log.Info("no record of live brokers yet", "path", path)
	default:
		log.Info("record of live brokers before this start", "path", path, "brokers", len(rec.Brokers), "recordedAt", rec.RecordedAt)
	}
	return rec
}

// warmUpUntil is when the warm-up needWaitForService asks for ends, as the
// live configuration says; zero without one.
func (s *Server) warmUpUntil() time.Time {
	cfg := s.cfg.Load()
	if !cfg.NeedWaitForService || cfg.WaitSecondsForService <= 0 {
		return time.Time{}
	}
	return s.started.Add(time.Duration(cfg.WaitSecondsForService) * time.Second)
}

// liveKeys are the live broker addresses, for the record.
func (s *Server) liveKeys() []peerstatus.BrokerKey {
	live := s.routes.LiveBrokers()
	keys := make([]peerstatus.BrokerKey, len(live))
	for i, b := range live {
		keys[i] = peerstatus.BrokerKey(b.AddrKey)
	}
	return keys
}

// stopWatching stops the gate's timeout, the declared-KV watcher and the
// recorder, which writes the record a last time if it ran.
func (s *Server) stopWatching() {
	s.gate.Stop()
	if s.declared != nil {
		s.declared.Stop()
	}
	s.recorder.Stop()
}

// notLive adapts the route table's liveness check to the gate.
func (s *Server) notLive(keys []peerstatus.BrokerKey) []peerstatus.BrokerKey {
	addrs := make([]route.AddrKey, len(keys))
	for i, k := range keys {
		addrs[i] = route.AddrKey(k)
	}
	var out []peerstatus.BrokerKey
	for _, k := range s.routes.NotLive(addrs) {
		out = append(out, peerstatus.BrokerKey(k))
	}
	return out
}

// Start applies the declared-KV file, if any, then listens on
// bindAddress:listenPort and serves in the background.
func (s *Server) Start() error {
	cfg := s.cfg.Load()
	if s.declared != nil {
		// Before anything is served: clients and brokers see the declared
		// values from their first request.
		st := s.declared.Apply()
		s.log.Info("declared KV config at start", "file", st.File, "digest", st.Digest, "inSync", st.InSync, "err", st.Error)
		s.declared.Watch()
	}
	addr := net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.ListenPort))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		s.stopWatching()
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	s.listener = l
	if err := s.startHTTP(cfg); err != nil {
		l.Close()
		s.stopWatching()
		return err
	}
	extra, err := cfg.ExtraPorts()
	if err != nil {
		l.Close()
		s.stopWatching()
		return err
	}
	for _, p := range extra {
		addr := net.JoinHostPort(cfg.BindAddress, strconv.Itoa(p))
		el, err := net.Listen("tcp", addr)
		if err != nil {
			l.Close()
			for _, o := range s.extra {
				o.Close()
			}
			s.stopWatching()
			return fmt.Errorf("listen on %s (extraListenPorts): %w", addr, err)
		}
		s.extra = append(s.extra, el)
	}
	s.serveErr = make(chan error, 1+len(s.extra))
	for _, el := range append([]net.Listener{l}, s.extra...) {
		go func() { s.serveErr <- s.remote.Serve(el) }()
	}
	s.serving.Store(true)
	s.recorder.Run()
	s.wg.Add(1)
	go s.scanLoop()
	s.log.Info("The Name Server boot success.", "address", l.Addr().String(), "serializeType", "JSON")
	return nil
}

// startHTTP serves health, readiness, metrics and the address server.
func (s *Server) startHTTP(cfg *config.Config) error {
	l := s.httpListener
	if l == nil {
		if cfg.HTTPPort == 0 {
			return nil
		}
		addr := net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.HTTPPort))
		var err error
		if l, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("listen on %s: %w", addr, err)
		}
		s.httpListener = l
	}
	if s.httpTLS != nil {
		l = httpapi.SniffTLS(l, s.httpTLS.Config(), cfg.HTTPTLSMode == "enforcing",
			time.Duration(cfg.TLSHandshakeTimeoutMillis)*time.Millisecond, s.log.With("component", "http"))
	}
	s.http = &http.Server{
		Handler: httpapi.New(httpapi.Options{
			AddressFile:       func() string { return s.cfg.Load().AddressFile },
			BrokerAddressFile: func() string { return s.cfg.Load().BrokerAddressFile },
			Ready:             s.ready,
			Live:              s.live,
			LiveTimeout:       s.liveTimeout,
			Summary:           s.Summary,
			Gate: func(req peerstatus.GateRequest) peerstatus.Summary {
				s.gate.Expect(req)
				return s.Summary()
			},
			ApplyKV: func() (peerstatus.KVStatus, bool) {
				if s.declared == nil {
					return peerstatus.KVStatus{}, false
				}
				return s.declared.Apply(), true
			},
			Metrics: s.metrics,
			Auth:    s.httpAuth,
			Logger:  s.log.With("component", "http"),
		}),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	go func() { s.httpErr <- s.http.Serve(l) }()
	s.log.Info("HTTP side listening", "address", l.Addr().String())
	return nil
}

// ready is the readiness of /readyz: serving remoting (the KV store loaded
// and the declared KV config applied before that), not shutting down, past
// the warm-up that needWaitForService asks for, and with the route gate
// open.
func (s *Server) ready() (bool, string) {
	switch {
	case s.stopping.Load():
		return false, "shutting down"
	case !s.serving.Load():
		return false, "starting"
	}
	if left := time.Until(s.warmUpUntil()); left > 0 {
		return false, fmt.Sprintf("warming up for %s (needWaitForService)", left.Round(time.Second))
	}
	if why, waiting := s.gate.Waiting(); waiting {
		return false, why
	}
	return true, ""
}

// live is the liveness check of /healthz: a request round trip through the
// remoting server's own loop and the processor, and the route table's
// writers' lock, both within ctx. A NameServer shutting down is not hung.
func (s *Server) live(ctx context.Context) error {
	if s.stopping.Load() {
		return nil
	}
	remote, table := make(chan error, 1), make(chan error, 1)
	go func() {
		if err := s.remote.Probe(ctx, protocol.GetNamesrvConfig); err != nil {
			remote <- fmt.Errorf("remoting server: %w", err)
			return
		}
		remote <- nil
	}()
	go func() { table <- s.routes.ProbeLock(ctx) }()
	return errors.Join(<-remote, <-table)
}

// Summary is GET /routes/summary: the live brokers with their versions,
// the table's sizes, the gate and the declared KV config.
func (s *Server) Summary() peerstatus.Summary {
	live := s.routes.LiveBrokers()
	stats := s.routes.Stats()
	sum := peerstatus.Summary{
		BootID:    s.bootID,
		StartTime: s.started,
		Gate:      s.gate.Status(),
		Counts:    peerstatus.Counts{Brokers: len(live), Clusters: int(stats.Clusters), Topics: int(stats.Topics)},
		Brokers:   make([]peerstatus.Broker, len(live)),
	}
	for i, b := range live {
		sum.Brokers[i] = peerstatus.Broker{
			BrokerKey:  peerstatus.BrokerKey(b.AddrKey),
			BrokerName: b.BrokerName,
			BrokerID:   b.BrokerID,
			DataVersion: peerstatus.DataVersion{
				StateVersion: b.DataVersion.StateVersion, Timestamp: b.DataVersion.Timestamp, Counter: b.DataVersion.Counter,
			},
			RegisteredAt: b.RegisteredAt,
			LastUpdate:   b.LastUpdate,
		}
	}
	sum.Digest = peerstatus.BrokersDigest(sum.Brokers)
	if s.declared != nil {
		kv := s.declared.Status()
		sum.KV = &kv
	}
	return sum
}

// Gate is the start-up route gate, for tests.
func (s *Server) Gate() *gate.Gate { return s.gate }

// HTTPAddr is the HTTP side's address, if it runs.
func (s *Server) HTTPAddr() net.Addr {
	if s.httpListener == nil {
		return nil
	}
	return s.httpListener.Addr()
}

// Addr is the remoting listener's address (useful with listenPort 0).
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

// scanLoop expires silent brokers every scanNotActiveBrokerInterval,
// re-reading the interval each round so a live update takes effect.
func (s *Server) scanLoop() {
	defer s.wg.Done()
	for {
		interval := time.Duration(s.cfg.Load().ScanNotActiveBrokerInterval) * time.Millisecond
		t := time.NewTimer(interval)
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-t.C:
			s.routes.ScanExpired()
			if s.owners != nil {
				s.owners.Prune()
			}
		}
	}
}

// Shutdown stops accepting, answers every request already received, and
// waits for the connections to close (or ctx to end). KV writes are durable
// when acknowledged, so nothing is left to flush.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopping.Store(true)
	s.proc.Drain()
	close(s.stop)
	s.stopWatching()
	err := s.remote.Shutdown(ctx)
	s.wg.Wait()
	if s.listener != nil {
		for range 1 + len(s.extra) {
			if serr := <-s.serveErr; serr != nil && !errors.Is(serr, remoting.ErrServerClosed) {
				err = errors.Join(err, serr)
			}
		}
	}
	if s.http != nil {
		err = errors.Join(err, s.http.Shutdown(ctx))
		if herr := <-s.httpErr; herr != nil && !errors.Is(herr, http.ErrServerClosed) {
			err = errors.Join(err, herr)
		}
	}
	return err
}
