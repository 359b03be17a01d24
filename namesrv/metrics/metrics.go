// Package metrics exports the NameServer's Prometheus metrics: requests by
// code and result with latency histograms, connections, hits of the
// connection limits, the TLS certificate in use, the sizes and events of
// the route table and the KV store, the start-up route gate, the record of
// live brokers, the declared KV config, and the requests authorization
// refused (the Java NameServer exports none).
//
// Per-request counting is on the route-query hot path, so every label
// combination of a known request and response code is resolved once at
// start and counted with plain atomic increments.
package metrics

import (
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/kube-namesrv/kube-namesrv/internal/version"
	"github.com/kube-namesrv/kube-namesrv/namesrv/authz"
	"github.com/kube-namesrv/kube-namesrv/namesrv/gate"
	"github.com/kube-namesrv/kube-namesrv/namesrv/kvconfig"
	"github.com/kube-namesrv/kube-namesrv/namesrv/kvdeclared"
	"github.com/kube-namesrv/kube-namesrv/namesrv/liverecord"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/namesrv/route"
)

const namespace = "rocketmq_namesrv"

// requestNames are the request codes the NameServer answers (authz.Codes);
// anything else is counted as "other".
var requestNames = func() map[int32]string {
	m := make(map[int32]string, len(authz.Codes))
	for _, c := range authz.Codes {
		m[c.Code] = c.Name
	}
	return m
}()

// resultNames are the response codes the NameServer produces.
var resultNames = map[int32]string{
	protocol.Success:                 "SUCCESS",
	protocol.SystemError:             "SYSTEM_ERROR",
	protocol.SystemBusy:              "SYSTEM_BUSY",
	protocol.RequestCodeNotSupported: "REQUEST_CODE_NOT_SUPPORTED",
	protocol.NoPermission:            "NO_PERMISSION",
	protocol.TopicNotExist:           "TOPIC_NOT_EXIST",
	protocol.QueryNotFound:           "QUERY_NOT_FOUND",
}

const other = "other"

// perCode holds one request code's pre-resolved series.
type perCode struct {
	duration prometheus.Observer
	results  map[int32]prometheus.Counter
	other    prometheus.Counter
}

// Metrics is a remoting.Observer that also exports the route table's and
// KV store's state. Register it with a Prometheus registry.
type Metrics struct {
	requests    *prometheus.CounterVec
	durations   *prometheus.HistogramVec
	codes       map[int32]*perCode
	unknownCode *perCode

	connsOpen   prometheus.Gauge
	connsClosed *prometheus.CounterVec
	closed      map[remoting.CloseReason]prometheus.Counter
	limitHits   *prometheus.CounterVec
	limits      map[remoting.Limit]prometheus.Counter

	authzRefusals  *prometheus.CounterVec
	refusedByCode  map[int32]prometheus.Counter
	refusedOther   prometheus.Counter
	ownerRefusals  *prometheus.CounterVec
	ownerByCode    map[int32]prometheus.Counter
	httpRefusals   *prometheus.CounterVec
	httpByPathWhy  map[[2]string]prometheus.Counter
	httpRefusedAny prometheus.Counter

	collectors []prometheus.Collector
}

// HTTP refusal reasons, the reason label of http_auth_refusals_total.
const (
	// HTTPMissing: no credential was presented.
	HTTPMissing = "missing"
	// HTTPInvalid: a bearer token that is not accepted.
	HTTPInvalid = "invalid"
	// HTTPForbidden: a verified client certificate without the role.
	HTTPForbidden = "forbidden"
)

// Sources are the state the gauges read at scrape time.
type Sources struct {
	Routes *route.Table
	KV     *kvconfig.Store
	// TLS is the certificate of the remoting port, nil without TLS.
	TLS *remoting.CertFiles
	// Gate is the start-up route gate (nil: none, always open).
	Gate *gate.Gate
	// Declared applies the declared-KV file; nil when none is configured,
	// and then its series are absent.
	Declared *kvdeclared.Declared
	// Record keeps the record of live brokers; nil: none.
	Record *liverecord.Recorder
	// AuthzEnabled says whether remoting requests are authorized by role.
	AuthzEnabled bool
	// Owners records broker-name ownership; nil when it is off.
	Owners *authz.Owners
	// HTTPPaths are the HTTP paths that may refuse requests, whose refusal
	// series are resolved up front.
	HTTPPaths []string
}

// New builds the metrics; register them with Register.
func New(src Sources) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "requests_total",
			Help: "Requests handled, by request code and response code (oneway requests included).",
		}, []string{"request", "code", "result"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "request_duration_seconds",
			Help:    "Time from a decoded request to its encoded answer, by request code.",
			Buckets: []float64{1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 1e-3, 5e-3, 0.025, 0.1, 0.5},
		}, []string{"request", "code"}),
		codes: map[int32]*perCode{},
		connsOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "connections_open", Help: "Open remoting connections.",
		}),
		connsClosed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "connections_closed_total", Help: "Remoting connections ended, by reason.",
		}, []string{"reason"}),
		closed: map[remoting.CloseReason]prometheus.Counter{},
		limitHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "limit_hits_total",
			Help: "Connections that ran into a limit, by limit: max_connections refused at accept; frame_max_length, " +
				"read_timeout, write_timeout and handshake_timeout closed; max_inflight made to wait until its answers were written.",
		}, []string{"limit"}),
		limits: map[remoting.Limit]prometheus.Counter{},
	}
	for code, name := range requestNames {
		m.codes[code] = m.resolve(name, strconv.Itoa(int(code)))
	}
	m.resolveRefusals(src.HTTPPaths)
	m.unknownCode = m.resolve(other, other)
	for _, r := range remoting.CloseReasons {
		m.closed[r] = m.connsClosed.WithLabelValues(string(r))
	}
	for _, l := range remoting.Limits {
		m.limits[l] = m.limitHits.WithLabelValues(string(l))
	}

	stats := func(f func(route.Stats) float64) func() float64 {
		return func() float64 { return f(src.Routes.Stats()) }
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, f)
	}
	counter := func(name, help string, labels prometheus.Labels, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help, ConstLabels: labels}, f)
	}
	m.collectors = []prometheus.Collector{
		m.requests, m.durations, m.connsOpen, m.connsClosed, m.limitHits, m.authzRefusals, m.ownerRefusals, m.httpRefusals,
		gauge("authz_enabled", "1 when remoting requests are authorized by role (authzEnable), 0 when every peer may send every request.",
			func() float64 {
				if src.AuthzEnabled {
					return 1
				}
				return 0
			}),
		gauge("brokers_live", "Broker addresses in the live table.", stats(func(s route.Stats) float64 { return float64(s.LiveBrokers) })),
		gauge("clusters", "Clusters with at least one broker group.", stats(func(s route.Stats) float64 { return float64(s.Clusters) })),
		gauge("topics", "Topics with queue data.", stats(func(s route.Stats) float64 { return float64(s.Topics) })),
		counter("broker_registrations_total", "REGISTER_BROKER requests applied.", nil,
			stats(func(s route.Stats) float64 { return float64(s.Registrations) })),
		counter("broker_registrations_unchanged_total", "REGISTER_BROKER requests that repeated their address's previous one byte for byte, applied without decoding the body.", nil,
			stats(func(s route.Stats) float64 { return float64(s.UnchangedRegistrations) })),
		counter("route_views_built_total", "Topic views (queue data and route) built: the per-topic work of registrations and admin changes.", nil,
			stats(func(s route.Stats) float64 { return float64(s.ViewsBuilt) })),
		gauge("kv_entries", "Keys in the KV store.", func() float64 { return float64(src.KV.Entries()) }),
		gauge("kv_namespaces", "Namespaces in the KV store.", func() float64 { return float64(src.KV.Namespaces()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "build_info", Help: "Build of this NameServer; always 1.",
			ConstLabels: prometheus.Labels{"version": version.Version, "goversion": runtime.Version()},
		}, func() float64 { return 1 }),
	}
	m.collectors = append(m.collectors,
		gauge("route_gate_open", "1 when the start-up route gate is open (or not enabled), 0 while it is closed and client reads get their connection closed.",
			func() float64 {
				if src.Gate.Closed() {
					return 0
				}
				return 1
			}),
		counter("route_gate_refusals_total", "Client route and KV reads whose connection was closed because the route gate was closed.", nil,
			func() float64 { return float64(src.Gate.Refusals()) }),
	)
	if d := src.Declared; d != nil {
		kvStats := func(f func(kvdeclared.Stats) int64) func() float64 {
			return func() float64 { return float64(f(d.Stats())) }
		}
		applies, keys := "Reads of the declared-KV file, by result: applied, or not read, parsed or applied.",
			"KV keys written or deleted by applying the declared-KV file."
		m.collectors = append(m.collectors,
			gauge("kv_declared_in_sync", "1 when the KV store holds the declared KV config as its policy asks, else 0.", func() float64 {
				if d.InSync() {
					return 1
				}
				return 0
			}),
			counter("kv_declared_applies_total", applies, prometheus.Labels{"result": "ok"}, kvStats(func(s kvdeclared.Stats) int64 { return s.Applied })),
			counter("kv_declared_applies_total", applies, prometheus.Labels{"result": "error"}, kvStats(func(s kvdeclared.Stats) int64 { return s.Failed })),
			counter("kv_declared_keys_changed_total", keys, prometheus.Labels{"change": "written"}, kvStats(func(s kvdeclared.Stats) int64 { return s.Written })),
			counter("kv_declared_keys_changed_total", keys, prometheus.Labels{"change": "deleted"}, kvStats(func(s kvdeclared.Stats) int64 { return s.Deleted })),
		)
	}
	if r := src.Record; r != nil {
		help := "Writes of the record of live brokers (liveBrokersPath), by result."
		m.collectors = append(m.collectors,
			counter("live_brokers_record_writes_total", help, prometheus.Labels{"result": "ok"}, func() float64 { return float64(r.Stats().Written) }),
			counter("live_brokers_record_writes_total", help, prometheus.Labels{"result": "error"}, func() float64 { return float64(r.Stats().Failed) }),
		)
	}
	for _, why := range []route.EvictReason{route.EvictUnregister, route.EvictClosed, route.EvictExpired} {
		m.collectors = append(m.collectors, counter("broker_evictions_total",
			"Brokers removed from the live table, by reason.", prometheus.Labels{"reason": string(why)},
			stats(func(s route.Stats) float64 { return float64(s.Evictions[why]) })))
	}
	if o := src.Owners; o != nil {
		m.collectors = append(m.collectors, gauge("authz_broker_names_owned",
			"Broker names whose owning client-certificate identity is recorded (authzBrokerNameOwnership).",
			func() float64 { return float64(o.Len()) }))
	}
	if tc := src.TLS; tc != nil {
		m.collectors = append(m.collectors,
			gauge("tls_certificate_expiry_timestamp_seconds", "Expiry (NotAfter) of the TLS certificate in use, Unix seconds.",
				func() float64 { return float64(tc.NotAfter().Unix()) }),
			counter("tls_certificate_reloads_total", "New versions of the TLS certificate files, by result.",
				prometheus.Labels{"result": "success"}, func() float64 { return float64(tc.Reloads()) }),
			counter("tls_certificate_reloads_total", "New versions of the TLS certificate files, by result.",
				prometheus.Labels{"result": "failure"}, func() float64 { return float64(tc.Failures()) }),
		)
	}
	return m
}

// resolveRefusals builds the refusal counters: remoting refusals by code
// and the role it needs, ownership refusals by code, HTTP refusals by path
// and reason.
func (m *Metrics) resolveRefusals(httpPaths []string) {
	m.authzRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "authz_refusals_total",
		Help: "Remoting requests refused with NO_PERMISSION because the peer lacked the role their code needs, by request code and role.",
	}, []string{"request", "code", "role"})
	m.ownerRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "authz_ownership_refusals_total",
		Help: "Registrations, unregistrations and topic registrations refused because another client-certificate identity owns the broker name, by request code.",
	}, []string{"request", "code"})
	m.httpRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "http_auth_refusals_total",
		Help: "HTTP requests refused for want of a credential (missing), with a bearer token not accepted (invalid), or with a client certificate lacking the role (forbidden), by path.",
	}, []string{"path", "reason"})
	m.refusedByCode, m.ownerByCode, m.httpByPathWhy = map[int32]prometheus.Counter{}, map[int32]prometheus.Counter{}, map[[2]string]prometheus.Counter{}
	for _, c := range authz.Codes {
		code := strconv.Itoa(int(c.Code))
		m.refusedByCode[c.Code] = m.authzRefusals.WithLabelValues(c.Name, code, c.Role.String())
		if c.Role == authz.Broker {
			m.ownerByCode[c.Code] = m.ownerRefusals.WithLabelValues(c.Name, code)
		}
	}
	m.refusedOther = m.authzRefusals.WithLabelValues(other, other, authz.Read.String())
	for _, path := range httpPaths {
		for _, why := range []string{HTTPMissing, HTTPInvalid, HTTPForbidden} {
			m.httpByPathWhy[[2]string{path, why}] = m.httpRefusals.WithLabelValues(path, why)
		}
	}
	m.httpRefusedAny = m.httpRefusals.WithLabelValues(other, other)
}

// AuthzRefused implements processor.Refusals.
func (m *Metrics) AuthzRefused(code int32, _ authz.Role) {
	if c, ok := m.refusedByCode[code]; ok {
		c.Inc()
		return
	}
	m.refusedOther.Inc()
}

// OwnershipRefused implements processor.Refusals.
func (m *Metrics) OwnershipRefused(code int32) {
	if c, ok := m.ownerByCode[code]; ok {
		c.Inc()
	}
}

// HTTPRefused counts an HTTP request refused for reason (HTTPMissing,
// HTTPInvalid or HTTPForbidden).
func (m *Metrics) HTTPRefused(path, reason string) {
	if c, ok := m.httpByPathWhy[[2]string{path, reason}]; ok {
		c.Inc()
		return
	}
	m.httpRefusedAny.Inc()
}

func (m *Metrics) resolve(name, code string) *perCode {
	pc := &perCode{
		duration: m.durations.WithLabelValues(name, code),
		results:  map[int32]prometheus.Counter{},
		other:    m.requests.WithLabelValues(name, code, other),
	}
	for rc, rn := range resultNames {
		pc.results[rc] = m.requests.WithLabelValues(name, code, rn)
	}
	return pc
}

// Register adds the metrics, plus Go runtime and process collectors, to r.
func (m *Metrics) Register(r prometheus.Registerer) error {
	all := append([]prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}, m.collectors...)
	for _, c := range all {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// ConnOpened implements remoting.Observer.
func (m *Metrics) ConnOpened() { m.connsOpen.Inc() }

// ConnClosed implements remoting.Observer.
func (m *Metrics) ConnClosed(reason remoting.CloseReason) {
	m.connsOpen.Dec()
	if c, ok := m.closed[reason]; ok {
		c.Inc()
	}
}

// LimitHit implements remoting.Observer.
func (m *Metrics) LimitHit(l remoting.Limit) {
	if c, ok := m.limits[l]; ok {
		c.Inc()
	}
}

// Request implements remoting.Observer.
func (m *Metrics) Request(code, respCode int32, _ bool, elapsed time.Duration) {
	pc := m.codes[code]
	if pc == nil {
		pc = m.unknownCode
	}
	pc.duration.Observe(elapsed.Seconds())
	if c, ok := pc.results[respCode]; ok {
		c.Inc()
		return
	}
	pc.other.Inc()
}
