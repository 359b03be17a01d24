// Package httpapi is the NameServer's HTTP side, which the Java NameServer
// lacks: liveness and readiness for Kubernetes probes, Prometheus metrics,
// RocketMQ's address-server endpoint, so that brokers
// (fetchNamesrvAddrByAddressServer) and clients (rocketmq.namesrv.domain)
// follow NameServer list changes without restarts, and the peer-status API
// (namesrv/peerstatus) through which the operator compares NameServers,
// opens their start-up route gate and re-applies their declared KV config.
//
// The endpoints that change state, and optionally those that read it, can
// require a credential (Auth: a bearer token from a file, or a client
// certificate holding the admin or read role), and the port can serve TLS
// next to or instead of plain HTTP (SniffTLS); health and the address
// server always stay open (docs/security.md#http).
package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/filestamp"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
)

// BrokerSubGroup is the address-server subgroup brokers are pointed at
// (/rocketmq/brokers); with a broker address file configured it answers
// that list instead of the clients' one.
const BrokerSubGroup = "brokers"

// DefaultLiveTimeout bounds the liveness check of /healthz.
const DefaultLiveTimeout = 1500 * time.Millisecond

// maxGateRequest bounds the body of POST /routes/gate.
const maxGateRequest = 1 << 20

// Readiness reports whether the NameServer should receive traffic, and if
// not, why.
type Readiness func() (ready bool, reason string)

// Options configure the handler.
type Options struct {
	// AddressFile holds the ';'-joined NameServer list served at
	// /rocketmq/{subgroup}; the operator mounts the address ConfigMap
	// there. Empty disables that path.
	AddressFile func() string
	// BrokerAddressFile, when it returns a path, holds the list served at
	// /rocketmq/brokers instead of AddressFile's.
	BrokerAddressFile func() string
	Ready             Readiness
	// Live checks, within its context's deadline, that the NameServer is
	// not hung; /healthz fails with its error. Nil: always live.
	Live func(context.Context) error
	// LiveTimeout is the deadline of Live; DefaultLiveTimeout when 0.
	LiveTimeout time.Duration
	// Summary, Gate and ApplyKV serve the peer-status endpoints; nil
	// disables them. ApplyKV reports false when no declared-KV file is
	// configured.
	Summary func() peerstatus.Summary
	Gate    func(peerstatus.GateRequest) peerstatus.Summary
	ApplyKV func() (peerstatus.KVStatus, bool)
	// Metrics answers Prometheus scrapes at /metrics.
	Metrics http.Handler
	// Auth checks the credentials of the endpoints its scope covers; nil
	// leaves every endpoint open.
	Auth   *Auth
	Logger *slog.Logger
}

// Handler serves /healthz, /readyz, /metrics, /rocketmq/{subgroup} and the
// peer-status endpoints.
type Handler struct {
	mux         *http.ServeMux
	opts        Options
	addrs       addressFile
	brokerAddrs addressFile
	endpoints   []Endpoint
	refusals    refusalLog
}

// Endpoint is one route of the handler and what it serves.
type Endpoint struct {
	Method, Path string
	Access       Access
}

// New returns the HTTP handler.
func New(o Options) *Handler {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.LiveTimeout <= 0 {
		o.LiveTimeout = DefaultLiveTimeout
	}
	h := &Handler{mux: http.NewServeMux(), opts: o,
		addrs: addressFile{log: o.Logger, what: "NameServer address list"}, brokerAddrs: addressFile{log: o.Logger, what: "broker NameServer address list"}}
	h.handle(http.MethodGet, "/healthz", Open, h.healthz)
	h.handle(http.MethodGet, "/readyz", Open, h.readyz)
	h.handle(http.MethodGet, "/metrics", Read, o.Metrics.ServeHTTP)
	h.handle(http.MethodGet, "/rocketmq/{subgroup}", Open, h.addresses)
	if o.Summary != nil {
		h.handle(http.MethodGet, peerstatus.SummaryPath, Read, func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, o.Summary()) })
	}
	if o.Gate != nil {
		h.handle(http.MethodPost, peerstatus.GatePath, Write, h.gate)
	}
	if o.ApplyKV != nil {
		h.handle(http.MethodPost, peerstatus.KVApplyPath, Write, h.applyKV)
	}
	return h
}

// handle registers an endpoint, guarded by the credential check when its
// access needs one (Auth).
func (h *Handler) handle(method, path string, access Access, f http.HandlerFunc) {
	h.endpoints = append(h.endpoints, Endpoint{Method: method, Path: path, Access: access})
	h.mux.HandleFunc(method+" "+path, h.guard(access, path, f))
}

// Endpoints lists the routes the handler serves.
func (h *Handler) Endpoints() []Endpoint { return h.endpoints }

// GuardedPaths are the paths that may refuse a request for want of a
// credential, for exporters that resolve their series up front.
var GuardedPaths = []string{"/metrics", peerstatus.SummaryPath, peerstatus.GatePath, peerstatus.KVApplyPath}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func text(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write([]byte(body))
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		text(w, http.StatusInternalServerError, fmt.Sprintf("encode answer: %v\n", err))
		return
	}
	w.Header().Set("Content-Type", peerstatus.ContentType)
	w.Header().Set("Cache-Control", "no-store")
	w.Write(append(b, '\n'))
}

// healthz is liveness: it fails when the NameServer is hung (Options.Live),
// so the kubelet restarts it.
func (h *Handler) healthz(w http.ResponseWriter, r *http.Request) {
	if h.opts.Live != nil {
		ctx, cancel := context.WithTimeout(r.Context(), h.opts.LiveTimeout)
		defer cancel()
		if err := h.opts.Live(ctx); err != nil {
			h.opts.Logger.Warn("liveness check failed", "err", err)
			text(w, http.StatusServiceUnavailable, "unhealthy: "+err.Error()+"\n")
			return
		}
	}
	text(w, http.StatusOK, "ok\n")
}

func (h *Handler) readyz(w http.ResponseWriter, _ *http.Request) {
	if ok, reason := h.opts.Ready(); !ok {
		text(w, http.StatusServiceUnavailable, "not ready: "+reason+"\n")
		return
	}
	text(w, http.StatusOK, "ok\n")
}

// gate is POST /routes/gate. It can only open a gate, never close one, so
// even without a credential check (httpAuthScope=none) the port cannot
// take a NameServer out of service.
func (h *Handler) gate(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, maxGateRequest)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			text(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("gate request larger than %d bytes\n", maxGateRequest))
			return
		}
		text(w, http.StatusBadRequest, fmt.Sprintf("read gate request: %v\n", err))
		return
	}
	req, err := decodeGateRequest(body)
	if err != nil {
		text(w, http.StatusBadRequest, err.Error()+"\n")
		return
	}
	h.opts.Logger.Info("route gate request", "remote", r.RemoteAddr, "expect", len(req.Expect), "waitSeconds", req.WaitSeconds)
	writeJSON(w, h.opts.Gate(req))
}

func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	return buf.Bytes(), err
}

// decodeGateRequest parses a GateRequest strictly: unknown fields, trailing
// data and brokers without a cluster or address are refused, so a request
// this NameServer would misread never opens its gate.
func decodeGateRequest(body []byte) (peerstatus.GateRequest, error) {
	var req peerstatus.GateRequest
	if len(bytes.TrimSpace(body)) == 0 {
		return req, errors.New(`empty gate request: want a JSON object {"expect":[{"cluster":...,"addr":...}],"waitSeconds":...}`)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return peerstatus.GateRequest{}, fmt.Errorf("gate request is not a valid JSON GateRequest: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return peerstatus.GateRequest{}, errors.New("gate request has data after its JSON object")
	}
	for i, k := range req.Expect {
		if k.Cluster == "" || k.Addr == "" {
			return peerstatus.GateRequest{}, fmt.Errorf("gate request: expect[%d] needs both cluster and addr", i)
		}
	}
	if req.WaitSeconds < 0 || req.WaitSeconds > peerstatus.MaxGateWaitSeconds {
		return peerstatus.GateRequest{}, fmt.Errorf("gate request: waitSeconds %d out of range, want 0 to %d", req.WaitSeconds, peerstatus.MaxGateWaitSeconds)
	}
	return req, nil
}

// applyKV is POST /kv/declared/apply: re-read the declared-KV file and
// apply it. It can only restore what the mounted file declares.
func (h *Handler) applyKV(w http.ResponseWriter, r *http.Request) {
	st, ok := h.opts.ApplyKV()
	if !ok {
		text(w, http.StatusNotFound, "no declared KV file configured (kvDeclaredFile)\n")
		return
	}
	h.opts.Logger.Info("declared KV config applied on request", "remote", r.RemoteAddr, "inSync", st.InSync)
	writeJSON(w, st)
}

// addresses answers the address server's GET: the brokers subgroup gets
// the broker list when one is configured, every other subgroup (nsaddr, or
// nsaddr-<unit> for unit clients) the clients' list, as plain text with
// nothing after it, which both Java (first line, trimmed) and
// rocketmq-client-go (whole body, trimmed) read.
func (h *Handler) addresses(w http.ResponseWriter, r *http.Request) {
	file, path := &h.addrs, h.opts.AddressFile()
	if r.PathValue("subgroup") == BrokerSubGroup && h.opts.BrokerAddressFile != nil {
		if p := h.opts.BrokerAddressFile(); p != "" {
			file, path = &h.brokerAddrs, p
		}
	}
	if path == "" {
		text(w, http.StatusNotFound, "no address file configured (--address-file)\n")
		return
	}
	list, err := file.read(path)
	switch {
	case err != nil:
		text(w, http.StatusServiceUnavailable, fmt.Sprintf("%s unavailable: %v\n", file.what, err))
	case len(list) == 0:
		text(w, http.StatusServiceUnavailable, file.what+" not published yet\n")
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(list)
	}
}

// addressFile caches the list and re-reads it when the file changes. The
// kubelet updates a mounted ConfigMap by swapping a symlink, so the check
// stats the path (following links) on each request: clients poll every 10 s
// to 2 min, so this is cheap, and it needs no watcher to keep alive.
type addressFile struct {
	log  *slog.Logger
	what string

	mu    sync.Mutex
	path  string
	stamp filestamp.Stamp
	list  []byte
}

func (a *addressFile) read(path string) ([]byte, error) {
	stamp, err := filestamp.Of(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.path == path && stamp.Equal(a.stamp) {
		return a.list, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	list := bytes.TrimSpace(data)
	if !bytes.Equal(list, a.list) {
		a.log.Info(a.what+" changed", "file", path, "list", string(list))
	}
	a.path, a.stamp, a.list = path, stamp, list
	return list, nil
}
