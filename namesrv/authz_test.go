package namesrv_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv"
	"github.com/kube-namesrv/kube-namesrv/namesrv/authz"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
	"github.com/kube-namesrv/kube-namesrv/namesrv/fjson"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting/tlstest"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
)

// pki is a CA, the NameServer's certificate issued by it, and the files a
// NameServer reads them from.
type pki struct {
	ca                        *tlstest.CA
	certPath, keyPath, caPath string
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{ca: tlstest.NewCA(t, "zero-trust-ca")}
	dir := t.TempDir()
	p.certPath, p.keyPath = p.ca.Server(t).Write(t, dir)
	p.caPath = filepath.Join(dir, "ca.crt")
	tlstest.WriteFile(t, p.caPath, p.ca.PEM)
	return p
}

// clientTLS is what a Java client with tls.enable=true and tls.client.*
// set presents: the CA it trusts and its own certificate (none when nil).
func (p *pki) clientTLS(cert *tlstest.Cert) *tls.Config {
	cfg := &tls.Config{RootCAs: p.ca.Pool(), ServerName: "127.0.0.1"}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{cert.TLS}
	}
	return cfg
}

// withTLS makes a NameServer serve TLS and plain on one port (as Java's
// permissive mode), verifying client certificates when given.
func (p *pki) withTLS(c *config.Config) {
	c.TLSServerMode, c.TLSServerCertPath, c.TLSServerKeyPath = "permissive", p.certPath, p.keyPath
	c.TLSServerTrustCertPath, c.TLSServerNeedClientAuth = p.caPath, "optional"
}

// dialAs connects to s over TLS with cert, or plain when tlsCfg is nil.
func dialAs(t *testing.T, s *namesrv.Server, tlsCfg *tls.Config, typ remoting.SerializeType) *remotingclient.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := remotingclient.Dial(ctx, s.Addr().String(), remotingclient.Options{TLS: tlsCfg, Type: typ})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// refused reports whether an answer is an authorization refusal.
func refused(r *remotingclient.Response) bool {
	return r.Code == protocol.NoPermission && strings.HasPrefix(r.Remark, "no permission: ")
}

const (
	brokerSPIFFE = "spiffe://cluster.local/ns/rocketmq/sa/broker-a"
	otherSPIFFE  = "spiffe://cluster.local/ns/rocketmq/sa/broker-b"
)

// zeroTrust grants broker to the brokers' service accounts, admin to the
// operator's CN and read to the clients' DNS names; no network is
// trusted.
func zeroTrust(p *pki) func(*config.Config) {
	return func(c *config.Config) {
		p.withTLS(c)
		c.AuthzEnable = true
		c.AuthzBrokerIdentities = "uri:spiffe://cluster.local/ns/rocketmq/sa/broker-*"
		c.AuthzAdminIdentities = "cn:operator"
		c.AuthzReadIdentities = "dns:*.clients.svc"
	}
}

// TestAuthzEveryRoleAndCodeOverTheWire sends every request code the
// NameServer answers, and one it does not, from a peer of each role and
// from peers of none, as Java clients do over TLS with client
// certificates: each is refused with NO_PERMISSION exactly when the peer
// lacks the code's role, the connection stays open, and each refusal is
// counted by code and role.
func TestAuthzEveryRoleAndCodeOverTheWire(t *testing.T) {
	p := newPKI(t)
	s := startLogged(t, zeroTrust(p)).Server
	peers := []struct {
		name  string
		cert  *tlstest.Cert
		plain bool
		roles []authz.Role
		typ   remoting.SerializeType
	}{
		{"broker", p.ca.ClientNamed(t, tlstest.Names{URIs: []string{brokerSPIFFE}}), false, []authz.Role{authz.Read, authz.Broker}, remoting.JSON},
		{"admin", p.ca.ClientNamed(t, tlstest.Names{CN: "operator"}), false, []authz.Role{authz.Read, authz.Admin}, remoting.RocketMQ},
		{"reader", p.ca.ClientNamed(t, tlstest.Names{DNS: []string{"app-0.clients.svc"}}), false, []authz.Role{authz.Read}, remoting.JSON},
		{"stranger", p.ca.ClientNamed(t, tlstest.Names{CN: "stranger", DNS: []string{"a.b.clients.svc"}}), false, nil, remoting.RocketMQ},
		{"TLS without certificate", nil, false, nil, remoting.JSON},
		{"plain", nil, true, nil, remoting.JSON},
	}
	codes := append([]authz.Code{}, authz.Codes...)
	codes = append(codes, authz.Code{Code: 4242, Name: "an unknown code", Role: authz.Read})
	lacking := map[int32]int{}
	for _, peer := range peers {
		t.Run(peer.name, func(t *testing.T) {
			var tlsCfg *tls.Config
			if !peer.plain {
				tlsCfg = p.clientTLS(peer.cert)
			}
			c := dialAs(t, s, tlsCfg, peer.typ)
			for _, code := range codes {
				holds := false
				for _, r := range peer.roles {
					holds = holds || r == code.Role
				}
				if !holds {
					lacking[code.Code]++
				}
				r, err := tryInvoke(c, code.Code)
				if err != nil {
					t.Fatalf("%s: %v (the connection must stay open)", code.Name, err)
				}
				if refused(r) == holds {
					t.Fatalf("%s: code %d %q; the peer holds the %s role: %v", code.Name, r.Code, r.Remark, code.Role, holds)
				}
				if !holds && !strings.Contains(r.Remark, "needs the "+code.Role.String()+" role") {
					t.Fatalf("%s: remark %q does not name the role", code.Name, r.Remark)
				}
			}
			// A refused oneway request gets no answer and leaves the
			// connection as it was.
			if err := c.Oneway(&remotingclient.Request{Code: protocol.BrokerHeartbeat}); err != nil {
				t.Fatal(err)
			}
			if _, err := tryInvoke(c, protocol.GetNamesrvConfig); err != nil {
				t.Fatalf("after a oneway request: %v", err)
			}
		})
	}
	m := scrapeMetrics(t, s)
	for _, code := range codes {
		want := float64(lacking[code.Code])
		if code.Code == protocol.BrokerHeartbeat {
			want += 5 // the oneway heartbeats of the peers without the broker role
		}
		if code.Code == protocol.GetNamesrvConfig {
			want += 3 // the check after the oneway, from the peers without a role
		}
		request, label := code.Name, fmt.Sprint(code.Code)
		if code.Code == 4242 {
			request, label = "other", "other"
		}
		if got := m.value("rocketmq_namesrv_authz_refusals_total", "request", request, "code", label, "role", code.Role.String()); got != want {
			t.Errorf("refusals of %s: %v, want %v", code.Name, got, want)
		}
	}
	if got := m.value("rocketmq_namesrv_authz_enabled"); got != 1 {
		t.Errorf("authz_enabled = %v", got)
	}
	// The liveness probe goes through the processor on an internal
	// connection, which holds every role.
	if code, body := get(t, s, "/healthz"); code != 200 {
		t.Fatalf("healthz %d %s", code, body)
	}
}

// TestOpenByDefault: without authzEnable every peer may do everything,
// as with Java, and the NameServer says so once at start.
func TestOpenByDefault(t *testing.T) {
	r := startLogged(t, nil)
	s, logs := r.Server, r.logs
	c := dial(t, s, remotingclient.Options{})
	for _, code := range authz.Codes {
		r, err := tryInvoke(c, code.Code)
		if err != nil || refused(r) {
			t.Fatalf("%s: %+v %v", code.Name, r, err)
		}
	}
	if r := invoke(t, c, protocol.PutKVConfig, nil, "namespace", "ns", "key", "k", "value", "v"); r.Code != protocol.Success {
		t.Fatalf("PUT_KV_CONFIG: %d %s", r.Code, r.Remark)
	}
	if lines := logs.Lines("authorization is off (authzEnable=false)"); len(lines) != 1 {
		t.Fatalf("%d start-up lines saying authorization is off, want 1:\n%s", len(lines), logs.String())
	}
	if lines := logs.Lines("httpAuthScope=none"); len(lines) != 1 {
		t.Fatalf("%d start-up lines saying the HTTP port is open, want 1", len(lines))
	}
	m := scrapeMetrics(t, s)
	if got := m.value("rocketmq_namesrv_authz_enabled"); got != 0 {
		t.Fatalf("authz_enabled = %v", got)
	}
	if got := m.value("rocketmq_namesrv_authz_refusals_total", "request", "PUT_KV_CONFIG"); got != 0 {
		t.Fatalf("refusals counted with authorization off: %v", got)
	}
}

// TestClientRoleCannotWrite: a client holding only the read role tries
// every admin write: each is refused and nothing changes; the admin then
// does the same, and each applies, so the refusals were the roles'.
func TestClientRoleCannotWrite(t *testing.T) {
	p := newPKI(t)
	s := startServer(t, zeroTrust(p))
	broker := startBroker(t, brokersim.Config{Cluster: "c", Name: "broker-a", Generation: body.Broker5,
		Topics: []body.TopicConfig{brokersim.Topic("Orders", 4), brokersim.Topic("Audit", 4)},
		TLS:    p.clientTLS(p.ca.ClientNamed(t, tlstest.Names{URIs: []string{brokerSPIFFE}}))})
	mustRegister(t, broker, s.Addr().String())
	admin := dialAs(t, s, p.clientTLS(p.ca.ClientNamed(t, tlstest.Names{CN: "operator"})), remoting.JSON)
	reader := dialAs(t, s, p.clientTLS(p.ca.ClientNamed(t, tlstest.Names{DNS: []string{"app-0.clients.svc"}})), remoting.JSON)
	if r := invoke(t, admin, protocol.PutKVConfig, nil, "namespace", "ns", "key", "k", "value", "admin"); r.Code != protocol.Success {
		t.Fatalf("admin PUT_KV_CONFIG: %d %s", r.Code, r.Remark)
	}
	writes := []struct {
		name string
		code int32
		body []byte
		ext  []string
	}{
		{"put KV", protocol.PutKVConfig, nil, []string{"namespace", "ns", "key", "k", "value", "hijacked"}},
		{"delete KV", protocol.DeleteKVConfig, nil, []string{"namespace", "ns", "key", "k"}},
		{"wipe write permission", protocol.WipeWritePermOfBroker, nil, []string{"brokerName", "broker-a"}},
		{"delete topic", protocol.DeleteTopicInNamesrv, nil, []string{"topic", "Orders", "clusterName", "c"}},
		{"update config", protocol.UpdateNamesrvConfig, []byte("orderMessageEnable=true\n"), nil},
	}
	perm := func() int32 {
		rd, ok := s.Routes().RouteData("Orders")
		if !ok {
			return -1
		}
		return rd.QueueDatas[0].Perm
	}
	for _, w := range writes {
		r := invoke(t, reader, w.code, w.body, w.ext...)
		if !refused(r) || !strings.Contains(r.Remark, "needs the admin role") {
			t.Fatalf("reader's %s: %d %q", w.name, r.Code, r.Remark)
		}
		if v, _ := s.KV().Get("ns", "k"); v != "admin" {
			t.Fatalf("after the reader's %s the KV value is %q", w.name, v)
		}
		if got := perm(); got != protocol.PermRead|protocol.PermWrite {
			t.Fatalf("after the reader's %s the topic's perm is %d", w.name, got)
		}
		if s.Config().Load().OrderMessageEnable {
			t.Fatalf("after the reader's %s the config changed", w.name)
		}
	}
	// The reader still reads, on the same connection.
	if r := invoke(t, reader, protocol.GetKVConfig, nil, "namespace", "ns", "key", "k"); r.Code != protocol.Success || r.Ext["value"] != "admin" {
		t.Fatalf("reader's GET_KV_CONFIG: %d %q %v", r.Code, r.Remark, r.Ext)
	}
	for _, w := range writes {
		if w.code == protocol.PutKVConfig {
			continue
		}
		if r := invoke(t, admin, w.code, w.body, w.ext...); r.Code != protocol.Success {
			t.Fatalf("admin's %s: %d %q", w.name, r.Code, r.Remark)
		}
	}
	if _, ok := s.KV().Get("ns", "k"); ok {
		t.Fatal("admin's delete did not apply")
	}
	if _, ok := s.Routes().RouteData("Orders"); ok {
		t.Fatal("admin's topic deletion did not apply")
	}
	if !s.Config().Load().OrderMessageEnable {
		t.Fatal("admin's config update did not apply")
	}
}

// TestBrokerNameHijackRefused: with ownership on, a fake broker holding
// the broker role under another identity tries to take a real broker's
// name: registration, unregistration of the real address and a topic
// registration are refused, the route is unchanged, and once the real
// broker is gone the name is free again.
func TestBrokerNameHijackRefused(t *testing.T) {
	p := newPKI(t)
	rs := startLogged(t, func(c *config.Config) {
		zeroTrust(p)(c)
		c.AuthzBrokerNameOwnership = true
		c.AuthzBrokerNetworks = "127.0.0.1/32" // plain peers from here hold the broker role too
	})
	s, logs := rs.Server, rs.logs
	ns := s.Addr().String()
	topics := []body.TopicConfig{brokersim.Topic("Orders", 4), brokersim.Topic("Audit", 4)}
	real := startBroker(t, brokersim.Config{Cluster: "c", Name: "broker-a", Generation: body.Broker5, Topics: topics,
		TLS: p.clientTLS(p.ca.ClientNamed(t, tlstest.Names{URIs: []string{brokerSPIFFE}}))})
	mustRegister(t, real, ns)
	// Its slave presents the same identity and joins the group.
	slave := startBroker(t, brokersim.Config{Cluster: "c", Name: "broker-a", ID: 1, Generation: body.Broker5, Topics: topics,
		TLS: p.clientTLS(p.ca.ClientNamed(t, tlstest.Names{URIs: []string{brokerSPIFFE}, DNS: []string{"broker-a-1.svc"}}))})
	mustRegister(t, slave, ns)
	route := func() string {
		rd, ok := s.Routes().RouteData("Orders")
		if !ok {
			return "no route"
		}
		var out []string
		for _, bd := range rd.BrokerDatas {
			for _, a := range bd.Addrs {
				out = append(out, fmt.Sprintf("%s/%d=%s", bd.BrokerName, a.ID, a.Addr))
			}
		}
		return strings.Join(out, ",")
	}
	want := fmt.Sprintf("broker-a/0=%s,broker-a/1=%s", real.Addr(), slave.Addr())
	if got := route(); got != want {
		t.Fatalf("route %s, want %s", got, want)
	}
	fakes := map[string]*tls.Config{
		"another broker identity": p.clientTLS(p.ca.ClientNamed(t, tlstest.Names{URIs: []string{otherSPIFFE}})),
		"a plain broker":          nil,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for name, tlsCfg := range fakes {
		fake := startBroker(t, brokersim.Config{Cluster: "c", Name: "broker-a", Generation: body.Broker5, Topics: topics, TLS: tlsCfg})
		res := fake.Register(ctx, []string{ns})[0]
		if res.Err != nil || !refused(res.Response) || !strings.Contains(res.Response.Remark, "broker name broker-a is registered by another identity") {
			t.Fatalf("%s registering broker-a: %v %+v", name, res.Err, res.Response)
		}
		r, err := fake.Invoke(ctx, ns, &remotingclient.Request{Code: protocol.UnregisterBroker, Ext: []remoting.Pair{
			{Key: "clusterName", Value: "c"}, {Key: "brokerAddr", Value: real.Addr()}, {Key: "brokerName", Value: "broker-a"}, {Key: "brokerId", Value: "0"}}})
		if err != nil || !refused(r) {
			t.Fatalf("%s unregistering the real broker: %v %+v", name, err, r)
		}
		rd := body.TopicRouteData{QueueDatas: []body.QueueData{{BrokerName: "broker-a", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}}}
		r, err = fake.Invoke(ctx, ns, &remotingclient.Request{Code: protocol.RegisterTopicInNamesrv,
			Ext: []remoting.Pair{{Key: "topic", Value: "Hijacked"}}, Body: body.AppendTopicRouteData(nil, &rd, fjson.Standard)})
		if err != nil || !refused(r) {
			t.Fatalf("%s registering a topic on broker-a: %v %+v", name, err, r)
		}
		if got := route(); got != want {
			t.Fatalf("after %s: route %s, want %s", name, got, want)
		}
		if _, ok := s.Routes().RouteData("Hijacked"); ok {
			t.Fatalf("after %s: topic Hijacked exists", name)
		}
	}
	if lines := logs.Lines("broker name owned by another identity", "owner=uri:"+brokerSPIFFE); len(lines) != 6 {
		t.Fatalf("%d refusals logged with the owner, want 6:\n%s", len(lines), logs.String())
	}
	m := scrapeMetrics(t, s)
	for code, want := range map[string]float64{"103": 2, "104": 2, "217": 2} {
		if got := m.value("rocketmq_namesrv_authz_ownership_refusals_total", "code", code); got != want {
			t.Errorf("ownership refusals of %s: %v, want %v", code, got, want)
		}
	}
	// The owner's own requests still apply: it registers a topic for its
	// group and its routes follow.
	rd := body.TopicRouteData{QueueDatas: []body.QueueData{{BrokerName: "broker-a", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}}}
	if r, err := real.Invoke(ctx, ns, &remotingclient.Request{Code: protocol.RegisterTopicInNamesrv,
		Ext: []remoting.Pair{{Key: "topic", Value: "Owned"}}, Body: body.AppendTopicRouteData(nil, &rd, fjson.Standard)}); err != nil || r.Code != protocol.Success {
		t.Fatalf("owner's topic registration: %v %+v", err, r)
	}
	if _, ok := s.Routes().RouteData("Owned"); !ok {
		t.Fatal("owner's topic registration did not apply")
	}
	// The real group goes away (its connections close, as when its pods
	// die): the name is free, and another identity may take it.
	real.DropConnections()
	slave.DropConnections()
	eventually(t, "broker-a to be evicted", func() bool { return route() == "no route" })
	next := startBroker(t, brokersim.Config{Cluster: "c", Name: "broker-a", Generation: body.Broker5, Topics: topics, TLS: fakes["another broker identity"]})
	mustRegister(t, next, ns)
	if got := route(); got != "broker-a/0="+next.Addr() {
		t.Fatalf("route after the name was freed: %s", got)
	}
}

// TestSourceNetworkGrants: roles granted by source network, IPv4 and IPv6,
// to peers without certificates.
func TestSourceNetworkGrants(t *testing.T) {
	tests := []struct {
		name                      string
		bind                      string
		broker, admin, read       string
		wantRead, wantBroker, adm bool
	}{
		{"broker from 127.0.0.0/8", "127.0.0.1", "127.0.0.0/8", "", "", true, true, false},
		{"admin from 127.0.0.1", "127.0.0.1", "", "127.0.0.1", "", true, false, true},
		{"read from another network only", "127.0.0.1", "", "", "10.0.0.0/8,::1/128", false, false, false},
		{"read from ::1", "::1", "", "", "10.0.0.0/8,::1/128", true, false, false},
		{"admin from ::/0", "::1", "", "::/0", "", true, false, true},
		{"broker from an IPv4 network on IPv6", "::1", "0.0.0.0/0", "", "", false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, func(c *config.Config) {
				c.BindAddress = tt.bind
				c.AuthzEnable = true
				c.AuthzBrokerNetworks, c.AuthzAdminNetworks, c.AuthzReadNetworks = tt.broker, tt.admin, tt.read
			})
			c := dial(t, s, remotingclient.Options{})
			for code, want := range map[int32]bool{
				protocol.GetRouteInfoByTopic: tt.wantRead, protocol.QueryDataVersion: tt.wantBroker, protocol.DeleteKVConfig: tt.adm,
			} {
				r, err := tryInvoke(c, code, "topic", "T")
				if err != nil {
					t.Fatal(err)
				}
				if refused(r) == want {
					t.Fatalf("code %d from %s: %d %q, want served %v", code, c.LocalAddr(), r.Code, r.Remark, want)
				}
			}
		})
	}
}
