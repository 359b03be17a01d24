package httpapi

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/kube-namesrv/kube-namesrv/namesrv/authz"
	"github.com/kube-namesrv/kube-namesrv/namesrv/filestamp"
)

// Access is what an endpoint serves: open to anyone, a read of the
// NameServer's state, or a change of it.
type Access uint8

// The accesses of the endpoints (see Handler's endpoint table).
const (
	// Open endpoints never need a credential: the kubelet's probes and the
	// address server, which brokers and clients read without one.
	Open Access = iota
	// Read endpoints (/metrics, /routes/summary) need one under ScopeAll.
	Read
	// Write endpoints (every POST) need one under ScopeWrites and ScopeAll.
	Write
)

// Scope is which accesses need a credential (the httpAuthScope property).
type Scope uint8

// The scopes.
const (
	ScopeNone Scope = iota
	ScopeWrites
	ScopeAll
)

// ParseScope reads httpAuthScope.
func ParseScope(s string) (Scope, error) {
	switch s {
	case "none":
		return ScopeNone, nil
	case "writes":
		return ScopeWrites, nil
	case "all":
		return ScopeAll, nil
	}
	return 0, fmt.Errorf("unknown HTTP auth scope %q (want none, writes or all)", s)
}

func (s Scope) covers(a Access) bool {
	switch a {
	case Write:
		return s >= ScopeWrites
	case Read:
		return s == ScopeAll
	}
	return false
}

// Auth is how the HTTP side checks credentials (docs/security.md#http):
// a bearer token from the token file, or a client certificate verified
// by the TLS handshake whose identity holds the admin role (writes) or the
// read role (reads) under the remoting port's authz*Identities lists.
// Source networks grant nothing here.
type Auth struct {
	Scope Scope
	// Tokens are the accepted bearer tokens; nil accepts none.
	Tokens *TokenFile
	// CertGrants gives a verified client certificate's roles; nil: client
	// certificates grant nothing.
	CertGrants func(*x509.Certificate) authz.Grants
	// Refused hears of each refused request, for metrics (path is the
	// endpoint's path, reason one of the metrics package's HTTP reasons).
	Refused func(path, reason string)
}

// Reasons a request is refused; the metrics' reason label.
const (
	reasonMissing   = "missing"
	reasonInvalid   = "invalid"
	reasonForbidden = "forbidden"
)

// check returns "" when r carries a credential good for access a, else
// why not.
func (a *Auth) check(r *http.Request, access Access) string {
	need := authz.Read
	if access == Write {
		need = authz.Admin
	}
	why := reasonMissing
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && a.CertGrants != nil {
		if a.CertGrants(r.TLS.PeerCertificates[0]).Has(need) {
			return ""
		}
		why = reasonForbidden
	}
	if h, ok := r.Header["Authorization"]; ok {
		// Two Authorization headers are one too many to guess from.
		if len(h) == 1 && a.Tokens != nil {
			if token, err := ParseBearer(h[0]); err == nil && a.Tokens.Accept(token) {
				return ""
			}
		}
		why = reasonInvalid
	}
	return why
}

// guard wraps an endpoint of the given access with the credential check
// when the scope covers it.
func (h *Handler) guard(access Access, path string, next http.HandlerFunc) http.HandlerFunc {
	a := h.opts.Auth
	if a == nil || !a.Scope.covers(access) {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		why := a.check(r, access)
		if why == "" {
			next(w, r)
			return
		}
		if a.Refused != nil {
			a.Refused(path, why)
		}
		h.refusals.log(h.opts.Logger, path, why, r.RemoteAddr)
		switch why {
		case reasonForbidden:
			text(w, http.StatusForbidden, "forbidden: the client certificate does not hold the role this endpoint needs\n")
		case reasonInvalid:
			w.Header().Set("WWW-Authenticate", `Bearer realm="namesrv", error="invalid_token"`)
			text(w, http.StatusUnauthorized, "unauthorized: bearer token not accepted\n")
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="namesrv"`)
			text(w, http.StatusUnauthorized, "unauthorized: this endpoint needs a bearer token or a client certificate\n")
		}
	}
}

// refusalLog logs refused HTTP requests at Warn at most once a minute per
// path and reason, so a scraper with a stale token cannot flood the log.
type refusalLog struct {
	mu   sync.Mutex
	last map[[2]string]time.Time
	// suppressed counts refusals not logged since the last one that was.
	suppressed map[[2]string]int
}

func (l *refusalLog) log(log *slog.Logger, path, why, remote string) {
	key := [2]string{path, why}
	l.mu.Lock()
	if l.last == nil {
		l.last, l.suppressed = map[[2]string]time.Time{}, map[[2]string]int{}
	}
	now := time.Now()
	if now.Sub(l.last[key]) < time.Minute {
		l.suppressed[key]++
		l.mu.Unlock()
		return
	}
	suppressed := l.suppressed[key]
	l.last[key], l.suppressed[key] = now, 0
	l.mu.Unlock()
	log.Warn("HTTP request refused", "path", path, "reason", why, "remote", remote, "suppressedSinceLast", suppressed)
}

// maxTokenLength bounds a bearer token; tokens are random strings of a
// few dozen characters.
const maxTokenLength = 4096

// ParseBearer reads an Authorization header of the bearer scheme
// (RFC 6750): "Bearer", case ignored, one or more spaces, then the token,
// a run of visible ASCII characters.
func ParseBearer(h string) (string, error) {
	const scheme = "bearer"
	if len(h) < len(scheme) || !strings.EqualFold(h[:len(scheme)], scheme) {
		return "", errors.New("not a bearer credential")
	}
	rest := h[len(scheme):]
	token := strings.TrimLeft(rest, " ")
	if len(token) == len(rest) {
		return "", errors.New("no space after the bearer scheme")
	}
	token = strings.TrimRight(token, " ")
	if err := checkToken(token); err != nil {
		return "", err
	}
	return token, nil
}

func checkToken(token string) error {
	switch {
	case token == "":
		return errors.New("empty token")
	case len(token) > maxTokenLength:
		return fmt.Errorf("token longer than %d bytes", maxTokenLength)
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c <= ' ' || c >= 0x7f {
			return fmt.Errorf("token has a character that is not visible ASCII at byte %d", i)
		}
	}
	return nil
}

// ParseTokens reads a token file: one token per line, blank lines and
// surrounding white space ignored, so a Secret's trailing newline does not
// matter and a rotation can list the new token next to the old one.
func ParseTokens(data []byte) ([]string, error) {
	var out []string
	for i, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if err := checkToken(string(line)); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		out = append(out, string(line))
	}
	if len(out) == 0 {
		return nil, errors.New("no token in the file")
	}
	return out, nil
}

// TokenFile is the set of accepted bearer tokens, read from a file (a
// mounted Secret) and re-read when the file changes. Only SHA-256 digests
// are kept, and a presented token is compared with every one of them in
// constant time, so neither the comparison's duration nor the tokens'
// lengths tell an attacker anything. A file that becomes unreadable or
// invalid accepts no token until it is fixed.
type TokenFile struct {
	path string
	log  *slog.Logger

	mu      sync.Mutex
	stamp   filestamp.Stamp
	digests [][sha256.Size]byte
	broken  string // why the current version is not used; "" when fine
}

// NewTokenFile reads path; a file that does not read or holds no valid
// token is an error, so a missing Secret stops the start.
func NewTokenFile(path string, log *slog.Logger) (*TokenFile, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &TokenFile{path: path, log: log}
	stamp, err := filestamp.Of(path)
	if err != nil {
		return nil, fmt.Errorf("HTTP token file: %w", err)
	}
	if err := f.load(stamp); err != nil {
		return nil, fmt.Errorf("HTTP token file %s: %w", path, err)
	}
	return f, nil
}

func (f *TokenFile) load(stamp filestamp.Stamp) error {
	f.stamp = stamp
	data, err := os.ReadFile(f.path)
	if err == nil {
		var tokens []string
		if tokens, err = ParseTokens(data); err == nil {
			f.digests = f.digests[:0]
			for _, t := range tokens {
				f.digests = append(f.digests, sha256.Sum256([]byte(t)))
			}
			f.broken = ""
			return nil
		}
	}
	f.digests = nil
	f.broken = err.Error()
	return err
}

// Accept reports whether token is one of the file's tokens.
func (f *TokenFile) Accept(token string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	stamp, err := filestamp.Of(f.path)
	switch {
	case err != nil:
		if !f.stamp.Equal(filestamp.Stamp{}) {
			f.log.Error("HTTP token file unreadable: no bearer token is accepted until it is back", "file", f.path, "err", err)
		}
		f.stamp, f.digests, f.broken = filestamp.Stamp{}, nil, err.Error()
	case !stamp.Equal(f.stamp):
		if err := f.load(stamp); err != nil {
			f.log.Error("HTTP token file invalid: no bearer token is accepted until it is fixed", "file", f.path, "err", err)
		} else {
			f.log.Info("HTTP token file reloaded", "file", f.path, "tokens", len(f.digests))
		}
	}
	given := sha256.Sum256([]byte(token))
	match := 0
	for i := range f.digests {
		match |= subtle.ConstantTimeCompare(given[:], f.digests[i][:])
	}
	return match == 1
}
