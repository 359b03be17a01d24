package authz

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// FuzzParsePolicy feeds arbitrary identity and network lists to the
// decoder: it must refuse them with a ListError or accept them, and what it
// accepted must print back into lists that parse to the same policy.
func FuzzParsePolicy(f *testing.F) {
	f.Add("cn:broker-a, uri:spiffe://td/ns/mq/sa/*", "10.0.0.0/8,fd00::/8")
	f.Add("dns:*.broker.svc", "192.168.1.1, ::1")
	f.Add("cn:*", "::ffff:10.0.0.0/104")
	f.Add("broker", "10.0.0.0/33")
	f.Add("cn:a*b*c", "fe80::1%eth0")
	f.Add(",,, ,", " , ")
	f.Fuzz(func(t *testing.T, identities, networks string) {
		p, err := Parse(Config{Broker: Lists{Identities: identities, Networks: networks}})
		if err != nil {
			var le *ListError
			if !errors.As(err, &le) || le.Role != Broker {
				t.Fatalf("error %v is not a broker ListError", err)
			}
			return
		}
		printed := p.Describe()["broker"]
		var ids, nets []string
		for _, e := range splitList(printed) {
			// Patterns print with their kind's prefix, networks as prefixes.
			if strings.HasPrefix(e, "cn:") || strings.HasPrefix(e, "dns:") || strings.HasPrefix(e, "uri:") {
				ids = append(ids, e)
			} else {
				nets = append(nets, e)
			}
		}
		again, err := Parse(Config{Broker: Lists{Identities: strings.Join(ids, ","), Networks: strings.Join(nets, ",")}})
		if err != nil {
			t.Fatalf("printed policy %q does not parse: %v", printed, err)
		}
		if got := again.Describe()["broker"]; got != printed {
			t.Fatalf("round trip: %q became %q", printed, got)
		}
		for _, pat := range p.roles[Broker].patterns {
			if !pat.wildcard && !pat.Match(pat.prefix) {
				t.Fatalf("exact pattern %s does not match its own name", pat)
			}
		}
		for _, n := range p.roles[Broker].networks {
			if n != n.Masked() || n.Addr().Is4In6() {
				t.Fatalf("network %s not canonical", n)
			}
			if !n.Contains(n.Addr()) {
				t.Fatalf("network %s does not contain its address", n)
			}
			if got := p.Grants(n.Addr(), nil); !got.Has(Broker) || !got.Has(Read) {
				t.Fatalf("address %s of a broker network gets %s", n.Addr(), got)
			}
			if n.Addr().Is4() && !p.Grants(netip.AddrFrom16(n.Addr().As16()), nil).Has(Broker) {
				t.Fatalf("mapped form of %s not granted", n.Addr())
			}
		}
	})
}
