//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/body"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting/tlstest"
)

// TestTLS: a NameServerCluster with spec.tls serves the certificate of its
// Secret on the remoting port. In the default permissive mode a plain
// broker registers and TLS clients get its route, with or without a client
// certificate, while a client certificate from another CA is refused (it
// is verified against the Secret's ca.crt). A renewed certificate is
// served on the next connection with no peer restarted. In enforcing mode
// plain connections are refused.
func TestTLS(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	ca, stranger := tlstest.NewCA(t, "e2e-ca"), tlstest.NewCA(t, "e2e-other-ca")
	server, client := ca.Server(t), ca.Client(t, "e2e-client")
	strangerCert := stranger.Client(t, "intruder").TLS

	ns := createNamespace(ctx, t, "nsc-")
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "namesrv-tls"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": server.CertPEM, "tls.key": server.KeyPEM, "ca.crt": ca.PEM},
	}
	secret, err := cl.Clientset.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := applyClusterIn(ctx, t, ns, "tls", clusterSpec{replicas: 2, drain: 2, tls: &v1alpha1.TLSSpec{
		SecretName: secret.Name, ClientAuth: v1alpha1.TLSClientAuthOptional,
	}})
	since := time.Now()
	b := startBroker(ctx, t, c)
	b.waitRegistered(t, c.peers(2), since)

	// The certificate names localhost: the client checks the chain up to
	// the CA and that name, which the test CA's server certificates carry.
	trusting := func(certs ...tls.Certificate) *tls.Config {
		return &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", Certificates: certs}
	}
	t.Run("permissive", func(t *testing.T) {
		for _, addr := range c.peers(2) {
			for name, cfg := range map[string]*tls.Config{"no client certificate": trusting(), "a client certificate": trusting(client.TLS)} {
				serial, err := tlsRoute(ctx, addr, cfg)
				if err != nil {
					t.Errorf("%s, %s: %v", addr, name, err)
				} else if serial.Cmp(server.Leaf.SerialNumber) != 0 {
					t.Errorf("%s served certificate %v, want the Secret's %v", addr, serial, server.Leaf.SerialNumber)
				}
			}
			// Go's client sends no certificate that the server's list of
			// acceptable CAs rules out; a client that sends it anyway must
			// be refused.
			intruder := trusting()
			intruder.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &strangerCert, nil }
			if _, err := tlsRoute(ctx, addr, intruder); err == nil {
				t.Errorf("%s served a client whose certificate no CA of the Secret issued", addr)
			}
		}
	})

	t.Run("renewal", func(t *testing.T) {
		before := map[int]peerProcess{}
		for i := range 2 {
			before[i] = processOf(t, getPeerPod(ctx, t, c, i))
		}
		renewed := ca.Server(t)
		secret.Data["tls.crt"], secret.Data["tls.key"] = renewed.CertPEM, renewed.KeyPEM
		if _, err := cl.Clientset.CoreV1().Secrets(ns).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, addr := range c.peers(2) {
			eventually(t, refreshTimeout, func() (bool, string) {
				serial, err := tlsRoute(ctx, addr, trusting())
				return err == nil && serial.Cmp(renewed.Leaf.SerialNumber) == 0,
					fmt.Sprintf("%s serves certificate %v (%v), want the renewed %v", addr, serial, err, renewed.Leaf.SerialNumber)
			})
		}
		for i := range 2 {
			if now := processOf(t, getPeerPod(ctx, t, c, i)); now != before[i] {
				t.Errorf("%s restarted for a renewed certificate: %+v -> %+v", c.pod(i), before[i], now)
			}
		}
	})

	t.Run("enforcing", func(t *testing.T) {
		// Brokers move to TLS before the NameServers enforce it. This
		// broker speaks plain only, so it goes: the operator restarts the
		// next peer only once the restarted one holds every live broker,
		// and a plain broker could never register with an enforcing peer.
		b.stop()
		before := map[int]string{}
		for i := range 2 {
			before[i] = string(getPeerPod(ctx, t, c, i).UID)
		}
		kubectl(ctx, t, "patch", "-n", c.ns, "nameservercluster/"+c.name, "--type=merge", "-p", `{"spec":{"tls":{"mode":"Enforcing"}}}`)
		eventually(t, rollTimeout, func() (bool, string) {
			ps, err := peerPods(ctx, c)
			if err != nil {
				return false, err.Error()
			}
			replaced := 0
			for _, p := range ps {
				if string(p.UID) != before[ordinal(p.Name)] && podReady(&p) && p.DeletionTimestamp == nil {
					replaced++
				}
			}
			return len(ps) == 2 && replaced == 2, fmt.Sprintf("%d of %d pods replaced and Ready", replaced, len(ps))
		})
		for _, addr := range c.peers(2) {
			ip, err := resolve(addr)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := invoke(ctx, ip, nil, protocol.GetNamesrvConfig); err == nil {
				t.Errorf("%s answered a plain client in enforcing mode", addr)
			}
			resp, err := invoke(ctx, ip, trusting(client.TLS), protocol.GetNamesrvConfig)
			if err != nil {
				t.Errorf("%s over TLS: %v", addr, err)
				continue
			}
			props := "\n" + string(resp.Body)
			for _, want := range []string{"tls.server.mode=enforcing\n", "tls.server.need.client.auth=optional\n"} {
				if !strings.Contains(props, "\n"+want) {
					t.Errorf("%s runs without %q:%s", addr, want, props)
				}
			}
		}
	})
}

// tlsRoute asks the NameServer at a published address for the topic's route
// over TLS and returns the serial number of the certificate it presented.
func tlsRoute(ctx context.Context, addr string, cfg *tls.Config) (*big.Int, error) {
	ip, err := resolve(addr)
	if err != nil {
		return nil, err
	}
	var serial *big.Int
	cfg = cfg.Clone()
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		serial = cs.PeerCertificates[0].SerialNumber
		return nil
	}
	resp, err := invoke(ctx, ip, cfg, protocol.GetRouteInfoByTopic, remoting.Pair{Key: "topic", Value: topic})
	if err != nil {
		return serial, err
	}
	if resp.Code != protocol.Success {
		return serial, fmt.Errorf("route of %s: code %d, %s", topic, resp.Code, resp.Remark)
	}
	qs, err := body.DecodeQueueDatas(resp.Body)
	if err != nil {
		return serial, fmt.Errorf("route of %s: %w", topic, err)
	}
	if len(qs) != 1 || qs[0].BrokerName != brokerName || qs[0].WriteQueueNums != topicQueues {
		return serial, fmt.Errorf("route of %s: queues %+v, want %d of %s", topic, qs, topicQueues, brokerName)
	}
	return serial, nil
}

// invoke sends one request on a new connection, over TLS when cfg is set.
func invoke(ctx context.Context, ipPort string, cfg *tls.Config, code int32, ext ...remoting.Pair) (*remotingclient.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", ipPort)
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", ipPort, err)
		}
		nc = tc
	}
	rc := remotingclient.New(nc, remotingclient.Options{})
	defer rc.Close()
	return rc.Invoke(ctx, &remotingclient.Request{Code: code, Ext: ext})
}
