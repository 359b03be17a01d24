package box

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the cluster's credentials, written under <work>/pki: a CA, the API
// server's serving certificate (valid for the names and addresses pods and
// the node use, the kubernetes Service's included), the ServiceAccount
// signing key and static bearer tokens.
type pki struct {
	dir                   string
	caCert                string // PEM file
	serverCert, serverKey string
	saKey, saPub          string
	tokens                string // kube-apiserver --token-auth-file
	adminToken            string
	nodeToken             string
}

func newPKI(dir string, apiServiceIP, nodeIP net.IP, clusterDomain string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("box: pki: %w", err)
	}
	p := &pki{
		dir:        dir,
		caCert:     filepath.Join(dir, "ca.crt"),
		serverCert: filepath.Join(dir, "apiserver.crt"),
		serverKey:  filepath.Join(dir, "apiserver.key"),
		saKey:      filepath.Join(dir, "sa.key"),
		saPub:      filepath.Join(dir, "sa.pub"),
		tokens:     filepath.Join(dir, "tokens.csv"),
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("box: CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "e2e-box-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("box: CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("box: CA certificate: %w", err)
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("box: server key: %w", err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc." + clusterDomain},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), apiServiceIP, nodeIP},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("box: server certificate: %w", err)
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("box: ServiceAccount key: %w", err)
	}
	p.adminToken, p.nodeToken = token(), token()
	files := []struct {
		path string
		data func() ([]byte, error)
	}{
		{p.caCert, func() ([]byte, error) { return pemBlock("CERTIFICATE", caDER), nil }},
		{p.serverCert, func() ([]byte, error) { return pemBlock("CERTIFICATE", srvDER), nil }},
		{p.serverKey, func() ([]byte, error) { return ecKeyPEM(srvKey) }},
		{p.saKey, func() ([]byte, error) { return ecKeyPEM(saKey) }},
		{p.saPub, func() ([]byte, error) {
			der, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
			return pemBlock("PUBLIC KEY", der), err
		}},
		// token,user,uid,"groups": the admin for every control-plane
		// component and the test, the node's own identity for the kubelet
		// (the Node authorizer and NodeRestriction check it).
		{p.tokens, func() ([]byte, error) {
			return fmt.Appendf(nil, "%s,e2e-admin,e2e-admin,\"system:masters\"\n%s,system:node:%s,node,\"system:nodes\"\n",
				p.adminToken, p.nodeToken, NodeName), nil
		}},
	}
	for _, f := range files {
		data, err := f.data()
		if err != nil {
			return nil, fmt.Errorf("box: %s: %w", f.path, err)
		}
		if err := os.WriteFile(f.path, data, 0o600); err != nil {
			return nil, fmt.Errorf("box: %w", err)
		}
	}
	return p, nil
}

func token() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func ecKeyPEM(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pemBlock("EC PRIVATE KEY", der), nil
}

// kubeconfig is a kubeconfig for a bearer token against server, trusting the
// cluster's CA.
func (p *pki) kubeconfig(path, server, token string) error {
	text := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: e2e
  user:
    token: %s
contexts:
- name: e2e
  context:
    cluster: e2e
    user: e2e
    namespace: default
current-context: e2e
`, server, p.caCert, token)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return fmt.Errorf("box: %w", err)
	}
	return nil
}
