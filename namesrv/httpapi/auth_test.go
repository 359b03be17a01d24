package httpapi

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kube-namesrv/kube-namesrv/namesrv/authz"
	"github.com/kube-namesrv/kube-namesrv/namesrv/peerstatus"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting/tlstest"
)

func TestParseBearer(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Bearer abc", "abc"},
		{"bearer abc", "abc"},
		{"BEARER   a.b-c_d~e+f/g==  ", "a.b-c_d~e+f/g=="},
		{"Bearer !#$%&'*:;<>?@[]^`{|}", "!#$%&'*:;<>?@[]^`{|}"},
	}
	for _, tt := range tests {
		if got, err := ParseBearer(tt.in); err != nil || got != tt.want {
			t.Errorf("ParseBearer(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "Bearer", "Bearer ", "Bearerabc", "Basic YTpi", "Bearer a b", "Bearer a\tb",
		"Bearer a\x00", "Bearer ä", "Bearer\tabc", " Bearer abc", "Bearer " + strings.Repeat("a", maxTokenLength+1)} {
		if got, err := ParseBearer(bad); err == nil {
			t.Errorf("ParseBearer(%q) accepted: %q", bad, got)
		}
	}
}

// FuzzParseBearer: the header decoder never panics, what it accepts is a
// valid token, and every valid token survives the round trip.
func FuzzParseBearer(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer  x ", "Basic YTpi", "Bearer", "Bearer a b", "Bearer \x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		token, err := ParseBearer(h)
		if err != nil {
			return
		}
		if checkToken(token) != nil {
			t.Fatalf("accepted invalid token %q from %q", token, h)
		}
		if again, err := ParseBearer("Bearer " + token); err != nil || again != token {
			t.Fatalf("round trip of %q: %q, %v", token, again, err)
		}
	})
}

func TestParseTokens(t *testing.T) {
	got, err := ParseTokens([]byte("\n  new-token \r\nold-token\n\n"))
	if err != nil || len(got) != 2 || got[0] != "new-token" || got[1] != "old-token" {
		t.Fatalf("%q, %v", got, err)
	}
	for _, bad := range []string{"", "\n \n", "a b\n", "ok\nbad\x01token\n"} {
		if got, err := ParseTokens([]byte(bad)); err == nil {
			t.Errorf("ParseTokens(%q) = %q", bad, got)
		}
	}
	if _, err := ParseTokens([]byte("ok\nbad token\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("error %v does not name line 2", err)
	}
}

// FuzzParseTokens: the token-file decoder never panics, and each token it
// accepts can be presented as a bearer token.
func FuzzParseTokens(f *testing.F) {
	for _, s := range []string{"tok\n", "a\r\nb\n", "", "a b", "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tokens, err := ParseTokens(data)
		if err != nil {
			return
		}
		if len(tokens) == 0 {
			t.Fatal("no error and no token")
		}
		for _, tok := range tokens {
			if got, err := ParseBearer("Bearer " + tok); err != nil || got != tok {
				t.Fatalf("token %q cannot be presented: %q, %v", tok, got, err)
			}
		}
	})
}

func writeTokens(t *testing.T, path, content string) {
	t.Helper()
	tlstest.WriteFile(t, path, []byte(content))
}

func TestTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	writeTokens(t, path, "first\n")
	f, err := NewTokenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	check := func(step string, want map[string]bool) {
		t.Helper()
		for tok, ok := range want {
			if f.Accept(tok) != ok {
				t.Fatalf("%s: Accept(%q) = %v", step, tok, !ok)
			}
		}
	}
	check("start", map[string]bool{"first": true, "firs": false, "first2": false, "": false})
	// A rotation lists the new token beside the old one, then drops it.
	writeTokens(t, path, "second\nfirst\n")
	check("rotating", map[string]bool{"first": true, "second": true})
	writeTokens(t, path, "second\n")
	check("rotated", map[string]bool{"first": false, "second": true})
	// Unreadable or invalid: nothing is accepted until it is fixed.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	check("removed", map[string]bool{"second": false})
	writeTokens(t, path, "third\n")
	check("back", map[string]bool{"third": true, "second": false})
	writeTokens(t, path, "bad token\n")
	check("invalid", map[string]bool{"third": false, "bad": false})
	writeTokens(t, path, "fourth")
	check("fixed", map[string]bool{"fourth": true})
}

func TestNewTokenFileErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	writeTokens(t, empty, "\n")
	for path, want := range map[string]string{filepath.Join(dir, "none"): "no such file", empty: "no token"} {
		if _, err := NewTokenFile(path, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewTokenFile(%s) = %v, want %q", path, err, want)
		}
	}
}

// authHandler is a handler with every endpoint, under scope, accepting the
// token "secret", admin certificates with CN "operator" and read
// certificates with CN "prometheus"; refusals are recorded.
func authHandler(t *testing.T, scope Scope) (*Handler, *refusalRecorder) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "token")
	writeTokens(t, path, "secret\n")
	tokens, err := NewTokenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	policy, err := authz.Parse(authz.Config{
		Admin: authz.Lists{Identities: "cn:operator", Networks: "0.0.0.0/0"},
		Read:  authz.Lists{Identities: "cn:prometheus"},
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := &refusalRecorder{}
	return newHandler(Options{
		Summary: func() peerstatus.Summary { return peerstatus.Summary{BootID: "b"} },
		Gate:    func(peerstatus.GateRequest) peerstatus.Summary { return peerstatus.Summary{} },
		ApplyKV: func() (peerstatus.KVStatus, bool) { return peerstatus.KVStatus{}, true },
		Auth:    &Auth{Scope: scope, Tokens: tokens, CertGrants: policy.CertGrants, Refused: rec.add},
	}), rec
}

type refusalRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *refusalRecorder) add(path, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, path+" "+why)
}

func (r *refusalRecorder) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seen) == 0 {
		return ""
	}
	return r.seen[len(r.seen)-1]
}

// verified is a TLS state whose client certificate the handshake
// verified.
func verified(cn string) *tls.ConnectionState {
	c := &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
	return &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}, VerifiedChains: [][]*x509.Certificate{{c}}}
}

// TestAuthEveryEndpointScopeAndCredential: each endpoint under each scope
// with each kind of credential gets served, 401 or 403; health and the
// address server are never guarded, and network grants count for nothing.
func TestAuthEveryEndpointScopeAndCredential(t *testing.T) {
	type cred struct {
		name   string
		header []string
		tls    *tls.ConnectionState
	}
	creds := []cred{
		{"none", nil, nil},
		{"token", []string{"Bearer secret"}, nil},
		{"wrong token", []string{"Bearer secreT"}, nil},
		{"two headers", []string{"Bearer secret", "Bearer secret"}, nil},
		{"basic", []string{"Basic c2VjcmV0"}, nil},
		{"admin cert", nil, verified("operator")},
		{"read cert", nil, verified("prometheus")},
		{"other cert", nil, verified("someone")},
		{"unverified admin cert", nil, &tls.ConnectionState{PeerCertificates: verified("operator").PeerCertificates}},
		{"other cert and token", []string{"Bearer secret"}, verified("someone")},
	}
	for _, scope := range []Scope{ScopeNone, ScopeWrites, ScopeAll} {
		h, rec := authHandler(t, scope)
		for _, ep := range h.Endpoints() {
			for _, c := range creds {
				path := strings.Replace(ep.Path, "{subgroup}", "nsaddr", 1)
				body := ""
				if ep.Path == peerstatus.GatePath {
					body = `{"expect":[]}`
				}
				req := httptest.NewRequest(ep.Method, path, strings.NewReader(body))
				if c.header != nil {
					req.Header["Authorization"] = c.header
				}
				req.TLS = c.tls
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				guarded := scope.covers(ep.Access)
				ok := !guarded || c.name == "token" || c.name == "other cert and token" || c.name == "admin cert" ||
					c.name == "read cert" && ep.Access == Read
				want := "served"
				if !ok {
					want = "401"
					if c.name == "other cert" || c.name == "read cert" {
						want = "403"
					}
				}
				got := "served"
				if w.Code == http.StatusUnauthorized || w.Code == http.StatusForbidden {
					got = map[int]string{401: "401", 403: "403"}[w.Code]
				}
				if got != want {
					b, _ := io.ReadAll(w.Result().Body)
					t.Fatalf("scope %d %s %s with %s: %d %q, want %s", scope, ep.Method, path, c.name, w.Code, b, want)
				}
				if got == "401" && w.Header().Get("WWW-Authenticate") == "" {
					t.Fatalf("%s %s with %s: 401 without WWW-Authenticate", ep.Method, path, c.name)
				}
				if got != "served" {
					why := map[string]string{"none": "missing", "other cert": "forbidden", "read cert": "forbidden", "unverified admin cert": "missing"}[c.name]
					if why == "" {
						why = "invalid"
					}
					if rec.last() != ep.Path+" "+why {
						t.Fatalf("%s %s with %s: refusal recorded as %q, want %q", ep.Method, path, c.name, rec.last(), ep.Path+" "+why)
					}
				}
			}
		}
	}
}

// TestEveryMutatingEndpointIsWrite: a new POST (or other non-GET)
// endpoint must be declared Write, so that it is guarded.
func TestEveryMutatingEndpointIsWrite(t *testing.T) {
	h, _ := authHandler(t, ScopeAll)
	seen := map[string]Access{}
	for _, ep := range h.Endpoints() {
		seen[ep.Method+" "+ep.Path] = ep.Access
		if ep.Method != http.MethodGet && ep.Access != Write {
			t.Errorf("%s %s changes state but is not Write", ep.Method, ep.Path)
		}
	}
	for ep, want := range map[string]Access{"GET /healthz": Open, "GET /readyz": Open, "GET /rocketmq/{subgroup}": Open,
		"GET /metrics": Read, "GET /routes/summary": Read, "POST /routes/gate": Write, "POST /kv/declared/apply": Write} {
		if got, ok := seen[ep]; !ok || got != want {
			t.Errorf("%s: access %v (present %v), want %v", ep, got, ok, want)
		}
	}
	for _, p := range GuardedPaths {
		found := false
		for ep, a := range seen {
			found = found || strings.HasSuffix(ep, " "+p) && a != Open
		}
		if !found {
			t.Errorf("GuardedPaths lists %s, which no guarded endpoint serves", p)
		}
	}
}

func TestParseScope(t *testing.T) {
	for s, want := range map[string]Scope{"none": ScopeNone, "writes": ScopeWrites, "all": ScopeAll} {
		if got, err := ParseScope(s); err != nil || got != want {
			t.Errorf("ParseScope(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseScope("mutations"); err == nil {
		t.Error("unknown scope accepted")
	}
}
