package authz

import (
	"crypto/x509"
	"fmt"
	"net/netip"
	"strings"
)

// Lists are the grants of one role as written in the properties: comma-
// separated identity patterns and networks.
type Lists struct {
	Identities string
	Networks   string
}

// Config is the authorization as written in the properties
// (docs/security.md#properties).
type Config struct {
	Broker, Admin, Read Lists
}

// grants is one role's parsed grants.
type grants struct {
	patterns []Pattern
	networks []netip.Prefix
}

// Policy decides which roles a peer holds. It is immutable and safe for
// concurrent use.
type Policy struct {
	roles [Admin + 1]grants
}

// ListError names the property and the entry of a list that does not
// parse.
type ListError struct {
	// Role and What ("identities" or "networks") say which list.
	Role  Role
	What  string
	Entry string
	Err   error
}

func (e *ListError) Error() string {
	return fmt.Sprintf("%s %s: %q: %v", e.Role, e.What, e.Entry, e.Err)
}

func (e *ListError) Unwrap() error { return e.Err }

// Parse reads the lists of every role. An empty list grants nothing.
func Parse(c Config) (*Policy, error) {
	p := &Policy{}
	for _, r := range Roles {
		l := c.lists(r)
		g := &p.roles[r]
		for _, e := range splitList(l.Identities) {
			pat, err := ParsePattern(e)
			if err != nil {
				return nil, &ListError{Role: r, What: "identities", Entry: e, Err: err}
			}
			g.patterns = append(g.patterns, pat)
		}
		for _, e := range splitList(l.Networks) {
			n, err := ParseNetwork(e)
			if err != nil {
				return nil, &ListError{Role: r, What: "networks", Entry: e, Err: err}
			}
			g.networks = append(g.networks, n)
		}
	}
	return p, nil
}

func (c Config) lists(r Role) Lists {
	switch r {
	case Broker:
		return c.Broker
	case Admin:
		return c.Admin
	}
	return c.Read
}

// splitList splits a comma-separated list, dropping blanks around and
// between entries.
func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// ParseNetwork reads a CIDR prefix (10.0.0.0/8, fd00::/8) or a single
// address (a /32 or /128). IPv4-mapped IPv6 prefixes are read as the IPv4
// prefix they contain, since peers' addresses are compared unmapped.
func ParseNetwork(s string) (netip.Prefix, error) {
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return netip.Prefix{}, fmt.Errorf("want a CIDR prefix or an IP address: %w", err)
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("want a CIDR prefix or an IP address: %w", err)
		}
		if a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("want an address without a zone")
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if p.Addr().Is4In6() {
		if p.Bits() < 96 {
			return netip.Prefix{}, fmt.Errorf("an IPv4-mapped prefix needs at least 96 bits")
		}
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// Grants returns the roles of a peer at addr (zero for none) holding the
// verified client certificate cert (nil for none).
func (p *Policy) Grants(addr netip.Addr, cert *x509.Certificate) Grants {
	var out Grants
	addr = addr.Unmap()
	for _, r := range Roles {
		if p.roles[r].admits(addr, cert) {
			out = out.grant(r)
		}
	}
	return out
}

// CertGrants is Grants from the certificate alone, for the HTTP side,
// whose grants are not by network.
func (p *Policy) CertGrants(cert *x509.Certificate) Grants {
	return p.Grants(netip.Addr{}, cert)
}

func (g *grants) admits(addr netip.Addr, cert *x509.Certificate) bool {
	if addr.IsValid() {
		for _, n := range g.networks {
			if n.Contains(addr) {
				return true
			}
		}
	}
	if cert != nil {
		for _, pat := range g.patterns {
			if pat.MatchCert(cert) {
				return true
			}
		}
	}
	return false
}

// Describe lists each role's grants, for the start-up log.
func (p *Policy) Describe() map[string]string {
	out := map[string]string{}
	for _, r := range Roles {
		var parts []string
		for _, pat := range p.roles[r].patterns {
			parts = append(parts, pat.String())
		}
		for _, n := range p.roles[r].networks {
			parts = append(parts, n.String())
		}
		out[r.String()] = strings.Join(parts, ",")
	}
	return out
}
