// Package metrics exports the NameServer's Prometheus metrics: requests by
// code and result with latency histograms, connections, hits of the
// connection limits, the TLS certificate in use, the sizes and events of
// the route table and the KV store, the start-up route gate, the record of
// live brokers, the declared KV config, and the requests authorization
// refused (the Java NameServer exports none), plus the Go runtime's and
// the process's series.
//
// It writes the Prometheus text format itself, over counters of its own,
// instead of using the Prometheus Go client: that client and the protobuf
// runtime it brings were a quarter of the binary, and their start-up
// touched more memory than the rest of an idle NameServer uses. The
// exposition is the one that client wrote, name for name, label for label
// and HELP for HELP (testdata/exposition.golden), so dashboards, alerts and
// recording rules read it unchanged.
//
// Per-request counting is on the route-query hot path, so every label
// combination of a known request and response code is resolved once at
// start and counted with plain atomic adds.
package metrics

import (
	"runtime"
	"sort"
	"strconv"
	"sync"
	"time"

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

// results are the response codes the NameServer produces, with their
// names: the result label of requests_total.
var results = [...]struct {
	code int32
	name string
}{
	{protocol.Success, "SUCCESS"},
	{protocol.SystemError, "SYSTEM_ERROR"},
	{protocol.SystemBusy, "SYSTEM_BUSY"},
	{protocol.RequestCodeNotSupported, "REQUEST_CODE_NOT_SUPPORTED"},
	{protocol.NoPermission, "NO_PERMISSION"},
	{protocol.TopicNotExist, "TOPIC_NOT_EXIST"},
	{protocol.QueryNotFound, "QUERY_NOT_FOUND"},
}

const other = "other"

// perCode holds one request code's series.
type perCode struct {
	duration histogram
	results  [len(results)]counter
	other    counter
}

// Metrics is a remoting.Observer that also exports the route table's and
// KV store's state; it serves scrapes as an http.Handler.
type Metrics struct {
	codes       map[int32]*perCode
	unknownCode *perCode

	connsOpen gauge
	closed    map[remoting.CloseReason]*counter
	limits    map[remoting.Limit]*counter

	refusedByCode  map[int32]*counter
	refusedOther   *counter
	ownerByCode    map[int32]*counter
	httpByPathWhy  map[[2]string]*counter
	httpRefusedAny *counter

	// families are the NameServer's own, by name.
	families []*family
	routes   func() route.Stats
	scrape   scrape
}

// scrape is what scrapes keep from one to the next; they take turns.
type scrape struct {
	sync.Mutex
	enc     encoder
	runtime *runtimeStats
	process *processStats
	// routes are the route table's counters, read once per scrape.
	routes route.Stats
	// accept is the last Accept header and contentType its answer.
	accept, contentType string
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

// registry collects families while New builds them; series added under
// one name share a family, whose HELP and type the first one sets.
type registry map[string]*family

func (r registry) family(name, help, typ string) *family {
	name = namespace + "_" + name
	f := r[name]
	if f == nil {
		f = &family{name: name, help: help, typ: typ}
		r[name] = f
	}
	return f
}

// New builds the metrics, every series resolved.
func New(src Sources) *Metrics {
	m := &Metrics{
		codes:         map[int32]*perCode{},
		closed:        map[remoting.CloseReason]*counter{},
		limits:        map[remoting.Limit]*counter{},
		refusedByCode: map[int32]*counter{},
		ownerByCode:   map[int32]*counter{},
		httpByPathWhy: map[[2]string]*counter{},
		routes:        src.Routes.Stats,
		scrape:        scrape{runtime: newRuntimeStats(), process: newProcessStats()},
	}
	r := registry{}
	m.resolveRequests(r)
	m.resolveRefusals(r, src.HTTPPaths)
	opened := r.family("connections_open", "Open remoting connections.", gaugeType)
	opened.add(&m.connsOpen, nil)
	closed := r.family("connections_closed_total", "Remoting connections ended, by reason.", counterType)
	for _, reason := range remoting.CloseReasons {
		m.closed[reason] = &counter{}
		closed.add(m.closed[reason], nil, "reason", string(reason))
	}
	limits := r.family("limit_hits_total", "Connections that ran into a limit, by limit: max_connections refused at accept; frame_max_length, "+
		"read_timeout, write_timeout and handshake_timeout closed; max_inflight made to wait until its answers were written.", counterType)
	for _, l := range remoting.Limits {
		m.limits[l] = &counter{}
		limits.add(m.limits[l], nil, "limit", string(l))
	}

	stats := func(f func(route.Stats) float64) valueFunc {
		return func() float64 { return f(m.scrape.routes) }
	}
	addGauge := func(name, help string, f valueFunc, labels ...string) {
		r.family(name, help, gaugeType).add(f, nil, labels...)
	}
	addCounter := func(name, help string, f valueFunc, labels ...string) {
		r.family(name, help, counterType).add(f, nil, labels...)
	}
	addGauge("authz_enabled", "1 when remoting requests are authorized by role (authzEnable), 0 when every peer may send every request.",
		func() float64 { return bit(src.AuthzEnabled) })
	addGauge("brokers_live", "Broker addresses in the live table.", stats(func(s route.Stats) float64 { return float64(s.LiveBrokers) }))
	addGauge("clusters", "Clusters with at least one broker group.", stats(func(s route.Stats) float64 { return float64(s.Clusters) }))
	addGauge("topics", "Topics with queue data.", stats(func(s route.Stats) float64 { return float64(s.Topics) }))
	addCounter("broker_registrations_total", "REGISTER_BROKER requests applied.",
		stats(func(s route.Stats) float64 { return float64(s.Registrations) }))
	addCounter("broker_registrations_unchanged_total", "REGISTER_BROKER requests that repeated their address's previous one byte for byte, applied without decoding the body.",
		stats(func(s route.Stats) float64 { return float64(s.UnchangedRegistrations) }))
	addCounter("route_views_built_total", "Topic views (queue data and route) built: the per-topic work of registrations and admin changes.",
		stats(func(s route.Stats) float64 { return float64(s.ViewsBuilt) }))
	addGauge("kv_entries", "Keys in the KV store.", func() float64 { return float64(src.KV.Entries()) })
	addGauge("kv_namespaces", "Namespaces in the KV store.", func() float64 { return float64(src.KV.Namespaces()) })
	addGauge("build_info", "Build of this NameServer; always 1.", func() float64 { return 1 },
		"version", version.Version, "goversion", runtime.Version())
	addGauge("route_gate_open", "1 when the start-up route gate is open (or not enabled), 0 while it is closed and client reads get their connection closed.",
		func() float64 { return bit(!src.Gate.Closed()) })
	addCounter("route_gate_refusals_total", "Client route and KV reads whose connection was closed because the route gate was closed.",
		func() float64 { return float64(src.Gate.Refusals()) })
	if d := src.Declared; d != nil {
		kvStats := func(f func(kvdeclared.Stats) int64) valueFunc {
			return func() float64 { return float64(f(d.Stats())) }
		}
		applies, keys := "Reads of the declared-KV file, by result: applied, or not read, parsed or applied.",
			"KV keys written or deleted by applying the declared-KV file."
		addGauge("kv_declared_in_sync", "1 when the KV store holds the declared KV config as its policy asks, else 0.",
			func() float64 { return bit(d.InSync()) })
		addCounter("kv_declared_applies_total", applies, kvStats(func(s kvdeclared.Stats) int64 { return s.Applied }), "result", "ok")
		addCounter("kv_declared_applies_total", applies, kvStats(func(s kvdeclared.Stats) int64 { return s.Failed }), "result", "error")
		addCounter("kv_declared_keys_changed_total", keys, kvStats(func(s kvdeclared.Stats) int64 { return s.Written }), "change", "written")
		addCounter("kv_declared_keys_changed_total", keys, kvStats(func(s kvdeclared.Stats) int64 { return s.Deleted }), "change", "deleted")
	}
	if rec := src.Record; rec != nil {
		help := "Writes of the record of live brokers (liveBrokersPath), by result."
		addCounter("live_brokers_record_writes_total", help, func() float64 { return float64(rec.Stats().Written) }, "result", "ok")
		addCounter("live_brokers_record_writes_total", help, func() float64 { return float64(rec.Stats().Failed) }, "result", "error")
	}
	for _, why := range []route.EvictReason{route.EvictUnregister, route.EvictClosed, route.EvictExpired} {
		addCounter("broker_evictions_total", "Brokers removed from the live table, by reason.",
			stats(func(s route.Stats) float64 { return float64(s.Evictions[why]) }), "reason", string(why))
	}
	if o := src.Owners; o != nil {
		addGauge("authz_broker_names_owned", "Broker names whose owning client-certificate identity is recorded (authzBrokerNameOwnership).",
			func() float64 { return float64(o.Len()) })
	}
	if tc := src.TLS; tc != nil {
		help := "New versions of the TLS certificate files, by result."
		addGauge("tls_certificate_expiry_timestamp_seconds", "Expiry (NotAfter) of the TLS certificate in use, Unix seconds.",
			func() float64 { return float64(tc.NotAfter().Unix()) })
		addCounter("tls_certificate_reloads_total", help, func() float64 { return float64(tc.Reloads()) }, "result", "success")
		addCounter("tls_certificate_reloads_total", help, func() float64 { return float64(tc.Failures()) }, "result", "failure")
	}
	for _, f := range r {
		f.sort()
		m.families = append(m.families, f)
	}
	sort.Slice(m.families, func(i, j int) bool { return m.families[i].name < m.families[j].name })
	return m
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// resolveRequests builds every request code's series: requests_total by
// result and the duration histogram, and those of codes not known.
func (m *Metrics) resolveRequests(r registry) {
	requests := r.family("requests_total", "Requests handled, by request code and response code (oneway requests included).", counterType)
	durations := r.family("request_duration_seconds", "Time from a decoded request to its encoded answer, by request code.", histogramType)
	codes := len(authz.Codes) + 1
	requests.samples, durations.samples = make([]sample, 0, codes*(len(results)+1)), make([]sample, 0, codes)
	resolve := func(name, code string) *perCode {
		pc := &perCode{}
		durations.add(nil, &pc.duration, "request", name, "code", code)
		for i, res := range results {
			requests.add(&pc.results[i], nil, "request", name, "code", code, "result", res.name)
		}
		requests.add(&pc.other, nil, "request", name, "code", code, "result", other)
		return pc
	}
	for _, c := range authz.Codes {
		m.codes[c.Code] = resolve(c.Name, strconv.Itoa(int(c.Code)))
	}
	m.unknownCode = resolve(other, other)
}

// resolveRefusals builds the refusal counters: remoting refusals by code
// and the role it needs, ownership refusals by code, HTTP refusals by path
// and reason.
func (m *Metrics) resolveRefusals(r registry, httpPaths []string) {
	refusals := r.family("authz_refusals_total",
		"Remoting requests refused with NO_PERMISSION because the peer lacked the role their code needs, by request code and role.", counterType)
	owners := r.family("authz_ownership_refusals_total",
		"Registrations, unregistrations and topic registrations refused because another client-certificate identity owns the broker name, by request code.", counterType)
	httpRefusals := r.family("http_auth_refusals_total",
		"HTTP requests refused for want of a credential (missing), with a bearer token not accepted (invalid), or with a client certificate lacking the role (forbidden), by path.", counterType)
	for _, c := range authz.Codes {
		code := strconv.Itoa(int(c.Code))
		m.refusedByCode[c.Code] = &counter{}
		refusals.add(m.refusedByCode[c.Code], nil, "request", c.Name, "code", code, "role", c.Role.String())
		if c.Role == authz.Broker {
			m.ownerByCode[c.Code] = &counter{}
			owners.add(m.ownerByCode[c.Code], nil, "request", c.Name, "code", code)
		}
	}
	m.refusedOther = &counter{}
	refusals.add(m.refusedOther, nil, "request", other, "code", other, "role", authz.Read.String())
	for _, path := range httpPaths {
		for _, why := range []string{HTTPMissing, HTTPInvalid, HTTPForbidden} {
			c := &counter{}
			m.httpByPathWhy[[2]string{path, why}] = c
			httpRefusals.add(c, nil, "path", path, "reason", why)
		}
	}
	m.httpRefusedAny = &counter{}
	httpRefusals.add(m.httpRefusedAny, nil, "path", other, "reason", other)
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
	pc.duration.observe(elapsed.Seconds())
	for i := range results {
		if results[i].code == respCode {
			pc.results[i].Inc()
			return
		}
	}
	pc.other.Inc()
}
