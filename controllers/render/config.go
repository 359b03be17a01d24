package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
)

// Properties the operator renders unless spec.config sets them.
const (
	// RouteGateEnableKey turns on the NameServer's start-up route gate: a
	// (re)started peer closes clients' connections on route queries, so
	// that they ask another peer, until it holds every broker the other
	// serving peers hold. The operator opens the gate as soon as that is
	// true (POST /routes/gate); without the operator it opens after
	// RouteGateTimeoutKey seconds.
	RouteGateEnableKey  = "routeGateEnable"
	RouteGateTimeoutKey = "routeGateTimeoutSeconds"
)

// DefaultBrokerHeartbeatSeconds is the brokers' registerNameServerPeriod
// when spec.brokerHeartbeatSeconds is unset.
const DefaultBrokerHeartbeatSeconds = 30

// BrokerRound is the brokers' heartbeat period of a cluster.
func BrokerRound(c *v1alpha1.NameServerCluster) time.Duration {
	return time.Duration(ptr.Deref(c.Spec.BrokerHeartbeatSeconds, DefaultBrokerHeartbeatSeconds)) * time.Second
}

// DefaultProperties are rendered unless spec.config sets them: the route
// gate, bounded by two broker rounds and 15 s, the time after which a broker
// that has not registered is cut off rather than slow.
func DefaultProperties(c *v1alpha1.NameServerCluster) map[string]string {
	round := ptr.Deref(c.Spec.BrokerHeartbeatSeconds, DefaultBrokerHeartbeatSeconds)
	return map[string]string{
		RouteGateEnableKey:  "true",
		RouteGateTimeoutKey: strconv.Itoa(int(2*round + 15)),
	}
}

// Properties renders spec.config over DefaultProperties as a Java
// properties file, keys sorted so that the same spec always gives the same
// bytes (and the same checksum).
func Properties(c *v1alpha1.NameServerCluster) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# NameServer properties of NameServerCluster %s/%s, rendered by kube-namesrv from spec.config.\n", c.Namespace, c.Name)
	b.WriteString("# Edits here are overwritten: change spec.config instead. Ports and paths are command-line flags.\n")
	props := DefaultProperties(c)
	for k, v := range c.Spec.Config {
		props[k] = string(v)
	}
	maps.Copy(props, AuthorizationProperties(c))
	list := make([]config.Property, 0, len(props))
	for k, v := range props {
		list = append(list, config.Property{Key: k, Value: v})
	}
	b.Write(config.FormatProperties(list))
	return b.String()
}

// AuthorizationProperties are the authz* and httpAuth* properties of
// spec.authorization; none without it, so that clusters that do not use it
// keep their properties, and their pods, across an operator upgrade. The
// API server refuses these keys in spec.config, so nothing here overrides
// a user's value.
func AuthorizationProperties(c *v1alpha1.NameServerCluster) map[string]string {
	a := c.Spec.Authorization
	if a == nil {
		return nil
	}
	props := map[string]string{
		"authzEnable":   strconv.FormatBool(a.Enable),
		"httpAuthScope": strings.ToLower(string(HTTPAuthScope(c))),
	}
	for key, list := range map[string][]string{
		"authzBrokerIdentities": a.Broker.Identities, "authzBrokerNetworks": a.Broker.Networks,
		"authzAdminIdentities": a.Admin.Identities, "authzAdminNetworks": a.Admin.Networks,
		"authzReadIdentities": a.Read.Identities, "authzReadNetworks": a.Read.Networks,
	} {
		if len(list) > 0 {
			props[key] = strings.Join(list, ",")
		}
	}
	if a.BrokerNameOwnership {
		props["authzBrokerNameOwnership"] = "true"
	}
	if HTTPTokenEnabled(c) {
		props["httpAuthTokenFile"] = HTTPTokenDir + "/" + HTTPTokenKey
	}
	return props
}

// HTTPAuthScope is spec.authorization.httpAuthScope, None without
// spec.authorization and Writes (the API default) when empty.
func HTTPAuthScope(c *v1alpha1.NameServerCluster) v1alpha1.HTTPAuthScope {
	switch {
	case c.Spec.Authorization == nil:
		return v1alpha1.HTTPAuthNone
	case c.Spec.Authorization.HTTPAuthScope == "":
		return v1alpha1.HTTPAuthWrites
	}
	return c.Spec.Authorization.HTTPAuthScope
}

// HTTPTokenEnabled tells whether the peers need the bearer token of the
// Secret HTTPTokenSecretName: when some endpoint the operator calls needs a
// credential.
func HTTPTokenEnabled(c *v1alpha1.NameServerCluster) bool {
	return HTTPAuthScope(c) != v1alpha1.HTTPAuthNone
}

// ConfigChecksum identifies the rendered properties; it is a pod template
// annotation, so pods roll exactly when the file they read changes.
func ConfigChecksum(c *v1alpha1.NameServerCluster) string {
	sum := sha256.Sum256([]byte(Properties(c)))
	return hex.EncodeToString(sum[:])
}

// ConfigConfigMap holds namesrv.properties, mounted read-only at /etc/namesrv.
func ConfigConfigMap(c *v1alpha1.NameServerCluster) *corev1ac.ConfigMapApplyConfiguration {
	labels := Labels(c)
	labels[LabelConfig] = ConfigChecksum(c)[:10]
	return corev1ac.ConfigMap(ConfigMapName(c), c.Namespace).
		WithLabels(labels).
		WithOwnerReferences(ownerReference(c)).
		WithData(map[string]string{ConfigKey: Properties(c)})
}

// defaultConfig is the NameServer's configuration before any property is
// read, built once: validation copies it.
var defaultConfig = sync.OnceValue(config.Default)

// ValidateConfig reads the rendered properties with the NameServer's own
// parser, as every peer reads them when it starts, and returns what it
// refuses: a value that does not parse as its property's kind, one out of
// range, or a combination that would stop the NameServer. Unknown keys are
// accepted, as the NameServer accepts them.
func ValidateConfig(c *v1alpha1.NameServerCluster) error {
	props, err := config.ParseProperties([]byte(Properties(c)))
	if err != nil {
		return err
	}
	cfg := *defaultConfig()
	if _, err := cfg.Apply(props); err != nil {
		return err
	}
	cfg.ListenPort = int(c.Spec.Ports.Remoting)
	return cfg.Validate()
}
