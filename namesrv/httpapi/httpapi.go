// Package httpapi is the NameServer's HTTP side, which the Java NameServer
// lacks: liveness and readiness for Kubernetes probes, Prometheus metrics,
// and RocketMQ's address-server endpoint, so that brokers
// (fetchNamesrvAddrByAddressServer) and clients (rocketmq.namesrv.domain)
// follow NameServer list changes without restarts (namesrv-protocol.md §5.2).
package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Readiness reports whether the NameServer should receive traffic, and if
// not, why.
type Readiness func() (ready bool, reason string)

// Options configure the handler.
type Options struct {
	// AddressFile holds the ';'-joined NameServer list served at
	// /rocketmq/{subgroup}; the operator mounts the address ConfigMap
	// there. Empty disables that path.
	AddressFile func() string
	Ready       Readiness
	Gatherer    prometheus.Gatherer
	Logger      *slog.Logger
}

// Handler serves /healthz, /readyz, /metrics and /rocketmq/{subgroup}.
type Handler struct {
	mux   *http.ServeMux
	opts  Options
	addrs addressFile
}

// New returns the HTTP handler.
func New(o Options) *Handler {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{mux: http.NewServeMux(), opts: o, addrs: addressFile{log: o.Logger}}
	h.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { text(w, http.StatusOK, "ok\n") })
	h.mux.HandleFunc("GET /readyz", h.readyz)
	h.mux.Handle("GET /metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(o.Logger.Handler(), slog.LevelWarn)}))
	h.mux.HandleFunc("GET /rocketmq/{subgroup}", h.addresses)
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func text(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write([]byte(body))
}

func (h *Handler) readyz(w http.ResponseWriter, _ *http.Request) {
	if ok, reason := h.opts.Ready(); !ok {
		text(w, http.StatusServiceUnavailable, "not ready: "+reason+"\n")
		return
	}
	text(w, http.StatusOK, "ok\n")
}

// addresses answers the address server's GET: every subgroup (nsaddr, or
// nsaddr-<unit> for unit clients) gets the same list, as plain text with
// nothing after it, which both Java (first line, trimmed) and
// rocketmq-client-go (whole body, trimmed) read.
func (h *Handler) addresses(w http.ResponseWriter, _ *http.Request) {
	path := h.opts.AddressFile()
	if path == "" {
		text(w, http.StatusNotFound, "no address file configured (--address-file)\n")
		return
	}
	list, err := h.addrs.read(path)
	switch {
	case err != nil:
		text(w, http.StatusServiceUnavailable, fmt.Sprintf("NameServer address list unavailable: %v\n", err))
	case len(list) == 0:
		text(w, http.StatusServiceUnavailable, "NameServer address list not published yet\n")
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
	log *slog.Logger

	mu      sync.Mutex
	path    string
	modTime time.Time
	size    int64
	ino     uint64
	list    []byte
}

func (a *addressFile) read(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	ino := inode(fi)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.path == path && fi.ModTime().Equal(a.modTime) && fi.Size() == a.size && ino == a.ino {
		return a.list, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	list := bytes.TrimSpace(data)
	if !bytes.Equal(list, a.list) {
		a.log.Info("NameServer address list changed", "file", path, "list", string(list))
	}
	a.path, a.modTime, a.size, a.ino, a.list = path, fi.ModTime(), fi.Size(), ino, list
	return list, nil
}
