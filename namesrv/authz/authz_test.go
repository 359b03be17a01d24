package authz

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
)

func cert(cn string, dns []string, uris ...string) *x509.Certificate {
	c := &x509.Certificate{Subject: pkix.Name{CommonName: cn}, DNSNames: dns}
	for _, u := range uris {
		parsed, err := url.Parse(u)
		if err != nil {
			panic(err)
		}
		c.URIs = append(c.URIs, parsed)
	}
	return c
}

func TestPatternMatch(t *testing.T) {
	spiffe := "spiffe://cluster.local/ns/rocketmq/sa/broker"
	tests := []struct {
		pattern string
		cert    *x509.Certificate
		want    bool
	}{
		{"cn:broker-a", cert("broker-a", nil), true},
		{"cn:broker-a", cert("broker-ab", nil), false},
		{"cn:broker-a", cert("Broker-A", nil), false}, // CNs compare exactly
		{"CN:broker-a", cert("broker-a", nil), true},  // the prefix ignores case
		{"cn:broker-a", cert("", []string{"broker-a"}), false},
		{"cn:broker-*", cert("broker-a", nil), true},
		{"cn:broker-*", cert("broker-", nil), false}, // '*' is one or more characters
		{"cn:broker-*", cert("broker-a.b/c", nil), true},
		{"cn:*", cert("anything", nil), true},
		{"cn:*", cert("", nil), false},
		{"dns:broker-0.broker.rocketmq.svc", cert("", []string{"x", "broker-0.broker.rocketmq.svc"}), true},
		{"dns:broker-0.broker.rocketmq.svc", cert("", []string{"BROKER-0.broker.rocketmq.svc"}), true},
		{"dns:*.broker.rocketmq.svc", cert("", []string{"broker-0.broker.rocketmq.svc"}), true},
		{"dns:*.broker.rocketmq.svc", cert("", []string{"a.b.broker.rocketmq.svc"}), false}, // one label only
		{"dns:*.broker.rocketmq.svc", cert("", []string{".broker.rocketmq.svc"}), false},
		{"dns:*.broker.rocketmq.svc", cert("x.broker.rocketmq.svc", nil), false}, // a CN is not a DNS SAN
		{"uri:" + spiffe, cert("", nil, spiffe), true},
		{"uri:" + spiffe, cert("", nil, spiffe+"2"), false},
		{"uri:spiffe://cluster.local/ns/rocketmq/sa/*", cert("", nil, "spiffe://other/x", spiffe), true},
		{"uri:spiffe://cluster.local/ns/rocketmq/sa/*", cert("", nil, spiffe+"/extra"), false}, // one segment only
		{"uri:spiffe://cluster.local/ns/rocketmq/sa/*", cert("", nil, "spiffe://cluster.local/ns/rocketmq/sa/"), false},
		{"uri:spiffe://cluster.local/ns/*/sa/broker", cert("", nil, spiffe), true},
		{"uri:SPIFFE://cluster.local/ns/rocketmq/sa/broker", cert("", nil, spiffe), false},
	}
	for _, tt := range tests {
		p, err := ParsePattern(tt.pattern)
		if err != nil {
			t.Fatalf("%s: %v", tt.pattern, err)
		}
		if got := p.MatchCert(tt.cert); got != tt.want {
			t.Errorf("%s on CN %q DNS %q URIs %v = %v, want %v", tt.pattern, tt.cert.Subject.CommonName, tt.cert.DNSNames, tt.cert.URIs, got, tt.want)
		}
	}
}

func TestParsePatternErrors(t *testing.T) {
	for _, s := range []string{"broker-a", "cn:", "dns:", "ip:10.0.0.1", "cn:a*b*", "uri:x\ny", "cn :a", "*"} {
		if _, err := ParsePattern(s); err == nil {
			t.Errorf("ParsePattern(%q) accepted", s)
		}
	}
}

func TestPatternString(t *testing.T) {
	for _, s := range []string{"cn:broker-a", "dns:*.svc", "uri:spiffe://td/ns/x/sa/*", "cn:a*b"} {
		p, err := ParsePattern(s)
		if err != nil {
			t.Fatal(err)
		}
		if p.String() != s {
			t.Errorf("String() = %q, want %q", p.String(), s)
		}
	}
}

func TestParseNetwork(t *testing.T) {
	tests := []struct{ in, want string }{
		{"10.0.0.0/8", "10.0.0.0/8"},
		{"10.1.2.3/8", "10.0.0.0/8"},
		{"192.168.1.7", "192.168.1.7/32"},
		{"fd00::/8", "fd00::/8"},
		{"::1", "::1/128"},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8"},
		{"0.0.0.0/0", "0.0.0.0/0"},
		{"::/0", "::/0"},
	}
	for _, tt := range tests {
		got, err := ParseNetwork(tt.in)
		if err != nil || got.String() != tt.want {
			t.Errorf("ParseNetwork(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "10.0.0", "fe80::1%eth0", "::ffff:10.0.0.0/64", "host.example", "10.0.0.0/", "/8"} {
		if _, err := ParseNetwork(bad); err == nil {
			t.Errorf("ParseNetwork(%q) accepted", bad)
		}
	}
}

func TestPolicyGrants(t *testing.T) {
	p, err := Parse(Config{
		Broker: Lists{Identities: "uri:spiffe://td/ns/mq/sa/broker-*, cn:legacy-broker", Networks: "10.1.0.0/16"},
		Admin:  Lists{Identities: "cn:operator", Networks: "fd00:ad::/32, 192.168.7.7"},
		Read:   Lists{Networks: " 10.0.0.0/8 ,,"},
	})
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.MustParseAddr
	tests := []struct {
		name string
		addr netip.Addr
		cert *x509.Certificate
		want Grants
	}{
		{"nothing", addr("172.16.0.1"), nil, 0},
		{"no address, no cert", netip.Addr{}, nil, 0},
		{"read network", addr("10.9.9.9"), nil, 1 << Read},
		{"read network, mapped", addr("::ffff:10.9.9.9"), nil, 1 << Read},
		{"broker network implies read", addr("10.1.2.3"), nil, 1<<Read | 1<<Broker},
		{"admin v6 network", addr("fd00:ad::5"), nil, 1<<Read | 1<<Admin},
		{"admin single address", addr("192.168.7.7"), nil, 1<<Read | 1<<Admin},
		{"next to the admin address", addr("192.168.7.8"), nil, 0},
		{"broker by SPIFFE ID", addr("172.16.0.1"), cert("", nil, "spiffe://td/ns/mq/sa/broker-a"), 1<<Read | 1<<Broker},
		{"broker by CN", addr("172.16.0.1"), cert("legacy-broker", nil), 1<<Read | 1<<Broker},
		{"operator from the broker network", addr("10.1.0.1"), cert("operator", nil), All},
		{"unknown cert", addr("172.16.0.1"), cert("client", []string{"client.svc"}), 0},
	}
	for _, tt := range tests {
		if got := p.Grants(tt.addr, tt.cert); got != tt.want {
			t.Errorf("%s: Grants = %s, want %s", tt.name, got, tt.want)
		}
	}
	if g := p.CertGrants(cert("operator", nil)); g != 1<<Read|1<<Admin {
		t.Errorf("CertGrants(operator) = %s", g)
	}
	if g := p.CertGrants(nil); g != 0 {
		t.Errorf("CertGrants(nil) = %s", g)
	}
	if d := p.Describe(); d["read"] != "10.0.0.0/8" || d["admin"] != "cn:operator,fd00:ad::/32,192.168.7.7/32" {
		t.Errorf("Describe = %v", d)
	}
}

func TestParseNamesTheBadEntry(t *testing.T) {
	_, err := Parse(Config{Admin: Lists{Networks: "10.0.0.0/8,10.0.0.300"}})
	var le *ListError
	if !errors.As(err, &le) || le.Role != Admin || le.What != "networks" || le.Entry != "10.0.0.300" {
		t.Fatalf("err = %v", err)
	}
	_, err = Parse(Config{Broker: Lists{Identities: "cn:a,broker-b"}})
	if !errors.As(err, &le) || le.Role != Broker || le.What != "identities" || le.Entry != "broker-b" {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), `"broker-b"`) {
		t.Fatalf("message %q does not name the entry", err)
	}
}

func TestIdentity(t *testing.T) {
	tests := []struct {
		cert *x509.Certificate
		want string
	}{
		{nil, ""},
		{cert("broker-a", []string{"b.svc"}, "spiffe://td/x"), "uri:spiffe://td/x"},
		{cert("broker-a", []string{"b.svc"}), "cn:broker-a"},
		{cert("", []string{"B.svc", "c.svc"}), "dns:b.svc"},
		{&x509.Certificate{Subject: pkix.Name{Organization: []string{"acme"}}}, "subject:O=acme"},
	}
	for _, tt := range tests {
		if got := Identity(tt.cert); got != tt.want {
			t.Errorf("Identity = %q, want %q", got, tt.want)
		}
	}
}

func TestRoleTable(t *testing.T) {
	for _, c := range Codes {
		got, ok := Lookup(c.Code)
		if !ok || got.Role != c.Role || RoleOf(c.Code) != c.Role {
			t.Errorf("code %d: Lookup = %v %v, RoleOf = %s", c.Code, got, ok, RoleOf(c.Code))
		}
	}
	for _, code := range []int32{-1, 0, 99, 1023, 1024, 1 << 20} {
		if _, ok := Lookup(code); ok {
			t.Errorf("Lookup(%d) found an entry", code)
		}
		if RoleOf(code) != Read {
			t.Errorf("RoleOf(unknown %d) = %s, want read", code, RoleOf(code))
		}
	}
}

func TestGrantsString(t *testing.T) {
	if s := Grants(0).String(); s != "none" {
		t.Error(s)
	}
	if s := All.String(); s != "read,broker,admin" {
		t.Error(s)
	}
}

// TestOwners runs the ownership rules on a fake route table.
func TestOwners(t *testing.T) {
	live := map[string]bool{}
	var mu sync.Mutex
	o := NewOwners(func(name string) bool {
		mu.Lock()
		defer mu.Unlock()
		return live[name]
	})
	setLive := func(name string, on bool) {
		mu.Lock()
		live[name] = on
		mu.Unlock()
	}
	admit := func(id string, claim bool, names ...string) (string, bool) {
		h := o.Lock(names...)
		defer h.Unlock()
		a := h.Admit(id, claim)
		return a.Owner, a.OK
	}
	// The first registrant claims a free name; its next registration
	// claims nothing new.
	for i, want := range []bool{true, false} {
		h := o.Lock("broker-a")
		a := h.Admit("uri:a", true)
		h.Unlock()
		if !a.OK || a.Claimed != want {
			t.Fatalf("registration %d: %+v", i, a)
		}
	}
	setLive("broker-a", true)
	if _, ok := admit("uri:a", true, "broker-a"); !ok {
		t.Fatal("owner refused")
	}
	if owner, ok := admit("uri:evil", true, "broker-a"); ok || owner != "uri:a" {
		t.Fatalf("other identity: ok=%v owner=%q", ok, owner)
	}
	if _, ok := admit("", true, "broker-a"); ok {
		t.Fatal("a peer without certificate took a certificate holder's name")
	}
	// A topic registration naming an owned and a free name.
	if _, ok := admit("uri:evil", false, "broker-free", "broker-a"); ok {
		t.Fatal("topic registration over an owned name admitted")
	}
	if _, ok := admit("uri:a", false, "broker-free", "broker-a", "broker-a"); !ok {
		t.Fatal("owner's topic registration refused")
	}
	// Not claimed by an admit without claim.
	if _, ok := admit("uri:evil", true, "broker-free"); !ok {
		t.Fatal("free name refused")
	}
	// The group leaves the table: the name is free again.
	setLive("broker-a", false)
	if _, ok := admit("uri:b", true, "broker-a"); !ok {
		t.Fatal("name of a gone group refused")
	}
	setLive("broker-a", true)
	if _, ok := admit("uri:a", true, "broker-a"); ok {
		t.Fatal("old owner got its name back while the new one is live")
	}
	// Peers without certificates share the empty identity.
	if _, ok := admit("", true, "broker-plain"); !ok {
		t.Fatal("plain registration refused")
	}
	setLive("broker-plain", true)
	if _, ok := admit("", true, "broker-plain"); !ok {
		t.Fatal("second plain registration refused")
	}
	if _, ok := admit("cn:x", true, "broker-plain"); ok {
		t.Fatal("certificate holder took a plain broker's live name")
	}
	// Prune forgets the gone groups only.
	if n := o.Len(); n != 3 {
		t.Fatalf("Len = %d", n)
	}
	if n := o.Prune(); n != 1 { // broker-free
		t.Fatalf("Prune = %d", n)
	}
	if _, ok := admit("uri:b", true, "broker-a"); !ok {
		t.Fatal("Prune forgot a live owner")
	}
}

// TestOwnersRace has identities race for one free name: exactly one may
// own it.
func TestOwnersRace(t *testing.T) {
	for range 50 {
		var mu sync.Mutex
		registered := ""
		o := NewOwners(func(string) bool {
			mu.Lock()
			defer mu.Unlock()
			return registered != ""
		})
		var wg sync.WaitGroup
		var admitted []string
		for _, id := range []string{"a", "b", "c", "d"} {
			wg.Go(func() {
				h := o.Lock("broker")
				defer h.Unlock()
				if h.Admit(id, true).OK {
					mu.Lock()
					registered = id
					admitted = append(admitted, id)
					mu.Unlock()
				}
			})
			wg.Go(func() { o.Prune() })
		}
		wg.Wait()
		if len(admitted) != 1 {
			t.Fatalf("admitted %v", admitted)
		}
	}
}
