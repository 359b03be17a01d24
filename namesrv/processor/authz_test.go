package processor

import (
	"bytes"
	"crypto/x509"
	"crypto/x509/pkix"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/kube-namesrv/kube-namesrv/namesrv/authz"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/test/logcapture"
)

// TestEveryAnsweredCodeHasARole sends every request code to a processor
// without authorization: each code it answers (anything but
// REQUEST_CODE_NOT_SUPPORTED) must have a role in authz.Codes, and each
// code there must be answered. A new case in serve without an entry in
// authz.Codes fails here.
func TestEveryAnsweredCodeHasARole(t *testing.T) {
	p := newProcessor(t)
	answered := map[int32]bool{}
	var resp remoting.Response
	for code := int32(-1); code <= 1<<16; code++ {
		resp.Reset()
		p.serve(&benchConn{}, &remoting.Command{Code: code, Version: protocol.V5_3_3}, &resp)
		if resp.Code != protocol.RequestCodeNotSupported {
			answered[code] = true
		}
	}
	for code := range answered {
		if _, ok := authz.Lookup(code); !ok {
			t.Errorf("the processor answers code %d, which has no role in authz.Codes", code)
		}
	}
	for _, c := range authz.Codes {
		if !answered[c.Code] {
			t.Errorf("authz.Codes lists %s (%d), which the processor does not answer", c.Name, c.Code)
		}
	}
}

type countedRefusals struct {
	mu     sync.Mutex
	authz  map[int32]authz.Role
	counts map[int32]int
	owned  map[int32]int
}

func (r *countedRefusals) AuthzRefused(code int32, role authz.Role) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.authz[code] = role
	r.counts[code]++
}

func (r *countedRefusals) OwnershipRefused(code int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.owned[code]++
}

func newRefusals() *countedRefusals {
	return &countedRefusals{authz: map[int32]authz.Role{}, counts: map[int32]int{}, owned: map[int32]int{}}
}

// TestAuthorizeEveryRoleAndCode serves every answered code to peers holding
// each set of roles: a request is refused with NO_PERMISSION exactly when
// the peer lacks the code's role, the refusal names the role, and the
// refusal is counted.
func TestAuthorizeEveryRoleAndCode(t *testing.T) {
	policy, err := authz.Parse(authz.Config{
		Broker: authz.Lists{Identities: "cn:broker"},
		Admin:  authz.Lists{Identities: "cn:admin"},
		Read:   authz.Lists{Networks: "10.0.0.0/8"},
	})
	if err != nil {
		t.Fatal(err)
	}
	peers := []struct {
		name  string
		conn  func() *benchConn
		roles []authz.Role
	}{
		{"nobody", func() *benchConn { return &benchConn{addr: netip.MustParseAddrPort("192.0.2.1:5")} }, nil},
		{"reader", func() *benchConn { return &benchConn{addr: netip.MustParseAddrPort("10.1.1.1:5")} }, []authz.Role{authz.Read}},
		{"broker", func() *benchConn {
			return &benchConn{addr: netip.MustParseAddrPort("192.0.2.1:5"), cert: &x509.Certificate{Subject: pkix.Name{CommonName: "broker"}}}
		}, []authz.Role{authz.Read, authz.Broker}},
		{"admin", func() *benchConn {
			return &benchConn{addr: netip.MustParseAddrPort("192.0.2.1:5"), cert: &x509.Certificate{Subject: pkix.Name{CommonName: "admin"}}}
		}, []authz.Role{authz.Read, authz.Admin}},
		{"probe", func() *benchConn { return &benchConn{internal: true} }, authz.Roles},
	}
	for _, peer := range peers {
		t.Run(peer.name, func(t *testing.T) {
			refusals := newRefusals()
			p := newProcessor(t)
			p.policy, p.refused = policy, refusals
			for _, code := range append(authz.Codes, authz.Code{Code: 4242, Name: "unknown", Role: authz.Read}) {
				c := peer.conn()
				var resp remoting.Response
				resp.Reset()
				p.serve(c, &remoting.Command{Code: code.Code, Version: protocol.V5_3_3}, &resp)
				holds := false
				for _, r := range peer.roles {
					holds = holds || r == code.Role
				}
				refused := resp.Code == protocol.NoPermission && bytes.HasPrefix(resp.Remark, []byte("no permission: "))
				if refused == holds {
					t.Fatalf("%s: code %d, remark %q; holds the %s role: %v", code.Name, resp.Code, resp.Remark, code.Role, holds)
				}
				if refused {
					if want := "needs the " + code.Role.String() + " role"; !strings.Contains(string(resp.Remark), want) {
						t.Fatalf("%s: remark %q does not say %q", code.Name, resp.Remark, want)
					}
					if refusals.authz[code.Code] != code.Role || refusals.counts[code.Code] != 1 {
						t.Fatalf("%s: refusal counted as %v x%d", code.Name, refusals.authz[code.Code], refusals.counts[code.Code])
					}
					if c.marked {
						t.Fatalf("%s: a refused request marked its connection as a broker's", code.Name)
					}
				}
			}
		})
	}
}

// TestAuthorizeCachesGrantsAndLogsOnce: the grants are worked out once
// per connection, and only the first refusal is logged at Warn.
func TestAuthorizeCachesGrantsAndLogsOnce(t *testing.T) {
	policy, err := authz.Parse(authz.Config{Read: authz.Lists{Networks: "127.0.0.0/8"}})
	if err != nil {
		t.Fatal(err)
	}
	var logs logcapture.Buffer
	p := newProcessor(t)
	p.policy, p.log = policy, logs.Logger(slog.LevelInfo)
	c := &benchConn{}
	var resp remoting.Response
	for range 3 {
		resp.Reset()
		p.serve(c, &remoting.Command{Code: protocol.PutKVConfig}, &resp)
		if resp.Code != protocol.NoPermission {
			t.Fatalf("PUT_KV_CONFIG from a reader: %d %q", resp.Code, resp.Remark)
		}
	}
	want := "no permission: PUT_KV_CONFIG (100) needs the admin role, which a peer without a client certificate at 127.0.0.1 does not hold (it holds: read)"
	if string(resp.Remark) != want {
		t.Fatalf("remark %q\nwant   %q", resp.Remark, want)
	}
	if n := strings.Count(logs.String(), "request refused"); n != 1 {
		t.Fatalf("%d refusals logged at Info or above, want 1:\n%s", n, logs.String())
	}
	// The cached grants stand even if the policy would now say otherwise:
	// they are the connection's.
	p.policy, err = authz.Parse(authz.Config{})
	if err != nil {
		t.Fatal(err)
	}
	resp.Reset()
	p.serve(c, &remoting.Command{Code: protocol.GetNamesrvConfig}, &resp)
	if resp.Code != protocol.Success {
		t.Fatalf("cached read grant lost: %d %q", resp.Code, resp.Remark)
	}
	resp.Reset()
	p.serve(&benchConn{}, &remoting.Command{Code: protocol.GetNamesrvConfig}, &resp)
	if resp.Code != protocol.NoPermission {
		t.Fatalf("new connection under the empty policy: %d", resp.Code)
	}
}
