//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting/tlstest"
	"github.com/kube-namesrv/kube-namesrv/test/brokersim"
)

// The identities of the authorization scenario, as a SPIFFE issuer would
// name brokers by service account and cert-manager would name client pods.
const (
	brokerIdentities = "uri:spiffe://e2e.test/ns/rocketmq/sa/broker-*"
	brokerURI        = "spiffe://e2e.test/ns/rocketmq/sa/broker-e2e"
	rogueBrokerURI   = "spiffe://e2e.test/ns/rocketmq/sa/broker-rogue"
	readIdentities   = "dns:*.clients.e2e.test"
	clientDNS        = "app-0.clients.e2e.test"
)

// TestAuthorizationThroughARoll: zero trust end to end. One cluster serves
// TLS with client certificates verified and authorizes every remoting
// request by role, granted by certificate identity only: the broker
// registers with its broker identity, and the sticky clients read routes
// with theirs. clientAuth is Optional, not Require, so that a peer without
// a certificate gets as far as authorization, whose refusal is what this
// proves. A config change rolls every
// peer with no client missing the route (every answer also names the
// real broker's address). Before and after the roll, on every peer, a
// registration or unregistration under the real broker's name from a peer
// without a certificate, from the clients' identity or from another
// broker identity (broker-name ownership) is answered NO_PERMISSION and
// leaves the route as it was, and a KV write with the clients' identity is
// answered NO_PERMISSION and stores nothing.
func TestAuthorizationThroughARoll(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	ca := tlstest.NewCA(t, "e2e-authz-ca")
	server := ca.Server(t)
	// The certificates name localhost: clients check the chain up to the
	// CA and that name, which the test CA's server certificates carry.
	trusting := func(cert *tlstest.Cert) *tls.Config {
		cfg := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{cert.TLS}
		}
		return cfg
	}
	brokerTLS := trusting(ca.ClientNamed(t, tlstest.Names{URIs: []string{brokerURI}}))
	readTLS := trusting(ca.ClientNamed(t, tlstest.Names{DNS: []string{clientDNS}}))
	rogueTLS := trusting(ca.ClientNamed(t, tlstest.Names{URIs: []string{rogueBrokerURI}}))

	ns := createNamespace(ctx, t, "nsc-")
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "namesrv-tls"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": server.CertPEM, "tls.key": server.KeyPEM, "ca.crt": ca.PEM},
	}
	if _, err := cl.Clientset.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const replicas = 2
	c := applyClusterIn(ctx, t, ns, "authz", clusterSpec{
		replicas: replicas, drain: 2,
		config: map[string]string{"scanNotActiveBrokerInterval": "5000"},
		tls:    &v1alpha1.TLSSpec{SecretName: secret.Name, ClientAuth: v1alpha1.TLSClientAuthOptional},
		authorization: &v1alpha1.AuthorizationSpec{
			Enable:              true,
			Broker:              v1alpha1.RoleGrants{Identities: []string{brokerIdentities}},
			Read:                v1alpha1.RoleGrants{Identities: []string{readIdentities}},
			BrokerNameOwnership: true,
		},
	})
	since := time.Now()
	b := startBrokerWith(ctx, t, c, brokerOptions{name: brokerName, topic: topic, tls: brokerTLS})
	b.waitRegistered(t, c.peers(replicas), since)
	for _, addr := range c.peers(replicas) {
		eventually(t, answerTimeout, func() (bool, string) {
			_, err := tlsRoute(ctx, addr, readTLS)
			return err == nil, fmt.Sprintf("route from %s to the read identity: %v", addr, err)
		})
	}
	fleet := startFleet(ctx, t, c, 6, fleetOptions{tls: readTLS, want: []string{quoted(b.sim.Addr())}})

	intruders := []intruder{
		{name: "a plain peer without a certificate", remark: "needs the broker role, which a peer without a client certificate"},
		{name: "a TLS peer without a certificate", tls: trusting(nil), remark: "needs the broker role, which a peer without a client certificate"},
		{name: "the clients' identity", tls: readTLS, remark: "needs the broker role, which client certificate dns:" + clientDNS},
		{name: "another broker's identity", tls: rogueTLS, remark: "no permission: broker name " + brokerName + " is registered by another identity; client certificate uri:" + rogueBrokerURI},
	}
	refusals := func(t *testing.T) {
		for _, addr := range c.peers(replicas) {
			ip, err := resolve(addr)
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range intruders {
				assertHijackRefused(ctx, t, ip, in, readTLS, b.sim.Addr())
			}
			assertKVWriteRefused(ctx, t, ip, readTLS)
		}
	}
	t.Run("refused before the roll", refusals)

	pods := recordPods(ctx, t, c.ns, c.selector())
	before := processes(t, ctx, c, replicas)
	mark := pods.len()
	kubectl(ctx, t, "patch", "-n", c.ns, "nameservercluster/"+c.name, "--type=merge", "-p", `{"spec":{"config":{"scanNotActiveBrokerInterval":"6000"}}}`)
	waitAllReplaced(ctx, t, c, before, replicas, rollTimeout)
	rolled := time.Now()
	assertOneAtATime(t, c, pods, mark, before)
	b.waitRegistered(t, c.peers(replicas), rolled)
	for i := range replicas {
		props := namesrvConfigOver(ctx, t, processOf(t, getPeerPod(ctx, t, c, i)).ip, readTLS)
		for k, want := range map[string]string{
			"scanNotActiveBrokerInterval": "6000", "authzEnable": "true", "authzBrokerNameOwnership": "true",
			"authzBrokerIdentities": brokerIdentities, "authzReadIdentities": readIdentities,
		} {
			if props[k] != want {
				t.Errorf("%s runs with %s=%q, want %q", c.pod(i), k, props[k], want)
			}
		}
	}
	t.Run("refused after the roll", refusals)
	judgeClients(t, fleet.stop(), c.peers(replicas)...)
}

// intruder is a peer that tries to take over the scenario's broker name.
type intruder struct {
	name string
	// tls is how it connects; nil is a plain connection.
	tls *tls.Config
	// remark is what the refusal must say.
	remark string
}

// assertHijackRefused has an intruder register a broker under the real
// broker's name, at its own address, with the NameServer at ip:port, and
// then unregister the name: both must be answered NO_PERMISSION, and the
// route must still name the real broker's address and not the intruder's.
func assertHijackRefused(ctx context.Context, t *testing.T, ipPort string, in intruder, readTLS *tls.Config, realAddr string) {
	t.Helper()
	sim, err := brokersim.Start(brokerConfig(brokerName, topic, in.tls))
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	rctx, cancel := context.WithTimeout(ctx, javaTimeout)
	defer cancel()
	r := sim.Register(rctx, []string{ipPort})[0]
	assertRefusal(t, fmt.Sprintf("%s registering %s with %s", in.name, brokerName, ipPort), r.Response, r.Err, in.remark)
	resp, err := sim.Unregister(rctx, ipPort)
	assertRefusal(t, fmt.Sprintf("%s unregistering %s from %s", in.name, brokerName, ipPort), resp, err, in.remark)

	resp, err = invoke(ctx, ipPort, readTLS, protocol.GetRouteInfoByTopic, remoting.Pair{Key: "topic", Value: topic})
	switch {
	case err != nil:
		t.Errorf("route from %s after %s tried to take it: %v", ipPort, in.name, err)
	case resp.Code != protocol.Success:
		t.Errorf("route from %s after %s tried to take it: code %d, %s", ipPort, in.name, resp.Code, resp.Remark)
	case !strings.Contains(string(resp.Body), quoted(realAddr)) || strings.Contains(string(resp.Body), quoted(sim.Addr())):
		t.Errorf("route from %s after %s (at %s) tried to take it names other than the real broker at %s: %s",
			ipPort, in.name, sim.Addr(), realAddr, resp.Body)
	}
}

// assertKVWriteRefused has the clients' identity write a KV entry: the
// NameServer answers NO_PERMISSION naming the admin role, and the entry
// does not exist afterwards.
func assertKVWriteRefused(ctx context.Context, t *testing.T, ipPort string, readTLS *tls.Config) {
	t.Helper()
	kv := []remoting.Pair{{Key: "namespace", Value: "E2E_AUTHZ"}, {Key: "key", Value: "written-by-a-client"}}
	resp, err := invoke(ctx, ipPort, readTLS, protocol.PutKVConfig, append(kv, remoting.Pair{Key: "value", Value: "x"})...)
	assertRefusal(t, "the clients' identity writing KV on "+ipPort, resp, err,
		"no permission: PUT_KV_CONFIG (100) needs the admin role, which client certificate dns:"+clientDNS)
	resp, err = invoke(ctx, ipPort, readTLS, protocol.GetKVConfig, kv...)
	if err != nil || resp.Code != protocol.QueryNotFound {
		t.Errorf("the KV entry a client tried to write on %s: %v %+v, want code %d (not found)", ipPort, err, resp, protocol.QueryNotFound)
	}
}

// assertRefusal checks that a request was answered NO_PERMISSION with a
// remark containing want.
func assertRefusal(t *testing.T, what string, resp *remotingclient.Response, err error, want string) {
	t.Helper()
	switch {
	case err != nil:
		t.Errorf("%s: %v, want the answer NO_PERMISSION", what, err)
	case resp.Code != protocol.NoPermission || !strings.Contains(resp.Remark, want):
		t.Errorf("%s: code %d %q, want code %d with %q", what, resp.Code, resp.Remark, protocol.NoPermission, want)
	}
}

// quoted is a broker address as a route's JSON body holds it, so that one
// address is not found inside another.
func quoted(addr string) string { return `"` + addr + `"` }
