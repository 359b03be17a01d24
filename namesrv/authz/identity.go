package authz

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
)

// Kind is which name of a certificate a pattern matches.
type Kind uint8

// The names of a client certificate that identify it.
const (
	// CN is the subject's common name.
	CN Kind = iota + 1
	// DNS is a DNS subject alternative name.
	DNS
	// URI is a URI subject alternative name, such as a SPIFFE ID.
	URI
)

var kindPrefixes = [...]string{CN: "cn:", DNS: "dns:", URI: "uri:"}

func (k Kind) prefix() string { return kindPrefixes[k] }

// Pattern matches one name of a client certificate: exactly, or with one
// '*' standing for one or more characters, none of which is a '.' in a DNS
// pattern or a '/' in a URI pattern (so "dns:*.ns.svc" matches one label,
// "uri:spiffe://td/ns/app/sa/*" one path segment, "cn:broker-*" any CN
// with that prefix). DNS names compare ignoring case; CNs and URIs
// exactly.
type Pattern struct {
	Kind Kind
	// prefix and suffix surround the '*'; without one, prefix is the
	// whole name.
	prefix, suffix string
	wildcard       bool
}

// String is the pattern as written in the properties.
func (p Pattern) String() string {
	if p.wildcard {
		return p.Kind.prefix() + p.prefix + "*" + p.suffix
	}
	return p.Kind.prefix() + p.prefix
}

// ParsePattern reads one identity pattern: "cn:", "dns:" or "uri:", then
// the name, with at most one '*'.
func ParsePattern(s string) (Pattern, error) {
	var p Pattern
	for k := CN; k <= URI; k++ {
		if len(s) > len(k.prefix()) && strings.EqualFold(s[:len(k.prefix())], k.prefix()) {
			p.Kind = k
			s = s[len(k.prefix()):]
			break
		}
	}
	switch {
	case p.Kind == 0:
		return Pattern{}, errors.New(`want "cn:", "dns:" or "uri:" and a name`)
	case strings.Count(s, "*") > 1:
		return Pattern{}, errors.New("at most one '*' per pattern")
	}
	for _, r := range s {
		if r < ' ' || r == 0x7f {
			return Pattern{}, errors.New("control character in pattern")
		}
	}
	if p.Kind == DNS {
		s = strings.ToLower(s)
	}
	p.prefix = s
	if i := strings.IndexByte(s, '*'); i >= 0 {
		p.prefix, p.suffix, p.wildcard = s[:i], s[i+1:], true
	}
	return p, nil
}

// Match reports whether name, a certificate name of the pattern's kind,
// matches.
func (p Pattern) Match(name string) bool {
	if p.Kind == DNS {
		name = strings.ToLower(name)
	}
	if !p.wildcard {
		return name == p.prefix
	}
	if len(name) <= len(p.prefix)+len(p.suffix) || !strings.HasPrefix(name, p.prefix) || !strings.HasSuffix(name, p.suffix) {
		return false
	}
	star := name[len(p.prefix) : len(name)-len(p.suffix)]
	switch p.Kind {
	case DNS:
		return !strings.Contains(star, ".")
	case URI:
		return !strings.Contains(star, "/")
	}
	return true
}

// MatchCert reports whether any name of the pattern's kind in cert
// matches.
func (p Pattern) MatchCert(cert *x509.Certificate) bool {
	switch p.Kind {
	case CN:
		return cert.Subject.CommonName != "" && p.Match(cert.Subject.CommonName)
	case DNS:
		for _, n := range cert.DNSNames {
			if p.Match(n) {
				return true
			}
		}
	case URI:
		for _, u := range cert.URIs {
			if p.Match(u.String()) {
				return true
			}
		}
	}
	return false
}

// Identity is the one name that stands for a certificate where a single
// name is needed: in logs, in refusals and as the owner of a broker name.
// It is the first URI SAN (a SPIFFE ID when there is one), else the
// subject CN, else the first DNS SAN, each with its kind's prefix
// ("uri:spiffe://...", "cn:broker-a", "dns:..."); a certificate with none
// of them is named by its subject. A peer without a verified certificate
// has the empty identity.
func Identity(cert *x509.Certificate) string {
	switch {
	case cert == nil:
		return ""
	case len(cert.URIs) > 0:
		return URI.prefix() + cert.URIs[0].String()
	case cert.Subject.CommonName != "":
		return CN.prefix() + cert.Subject.CommonName
	case len(cert.DNSNames) > 0:
		return DNS.prefix() + strings.ToLower(cert.DNSNames[0])
	}
	return fmt.Sprintf("subject:%s", cert.Subject)
}
