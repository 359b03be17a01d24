// Package config holds the NameServer configuration: every property of the
// Java NameServer (NamesrvConfig and NettyServerConfig, same names and
// defaults; docs/protocol.md#configuration) plus a few Go additions, the
// Java properties text format they are read from and printed in, the
// command line, and the live store behind GET_NAMESRV_CONFIG (319) and
// UPDATE_NAMESRV_CONFIG (318).
//
// The Config struct is the registry: each field carries its property name,
// default, runtime effect and a one-line doc in struct tags, so adding a key is
// adding one field. Reflection runs only when configuration is loaded, printed
// or updated, never on the request path; readers use plain field access on an
// immutable snapshot.
package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kube-namesrv/kube-namesrv/namesrv/authz"
)

// Config is the effective NameServer configuration. Every field maps to one
// property named like the Java field. A *Config obtained from Store.Load is
// shared and must not be modified.
//
// Tags: prop is the property name, default its default (${user.home} and
// ${ENV_VAR} are expanded), effect one of the Effect values, doc a one-line
// description, min/max optional inclusive bounds for integers, enum the
// '|'-separated values a string may take (matched ignoring case and stored
// as written in the tag).
type Config struct {
	// NamesrvConfig (org.apache.rocketmq.common.namesrv.NamesrvConfig).

	RocketmqHome                         string `prop:"rocketmqHome" default:"${ROCKETMQ_HOME}" effect:"none" doc:"RocketMQ installation directory; Java refuses to start without it, this server does not need it"`
	KVConfigPath                         string `prop:"kvConfigPath" default:"${user.home}/namesrv/kvConfig.json" effect:"restart" doc:"file holding the KV table of codes 100/101/102/219"`
	ConfigStorePath                      string `prop:"configStorePath" default:"${user.home}/namesrv/namesrv.properties" effect:"live" doc:"file UPDATE_NAMESRV_CONFIG rewrites; defaults to the -c file unless that file sets it"`
	ProductEnvName                       string `prop:"productEnvName" default:"center" effect:"none" doc:"environment name of Java's clusterTest mode"`
	ClusterTest                          bool   `prop:"clusterTest" default:"false" effect:"none" doc:"Java's cross-environment route fallback; not implemented"`
	OrderMessageEnable                   bool   `prop:"orderMessageEnable" default:"false" effect:"live" doc:"add orderTopicConf from the ORDER_TOPIC_CONFIG KV namespace to routes"`
	ConfigBlackList                      string `prop:"configBlackList" default:"configBlackList;configStorePath;kvConfigPath" effect:"live" doc:"';'-separated keys UPDATE_NAMESRV_CONFIG refuses (rocketmqHome and the defaults are always refused)"`
	ReturnOrderTopicConfigToBroker       bool   `prop:"returnOrderTopicConfigToBroker" default:"true" effect:"live" doc:"attach the ORDER_TOPIC_CONFIG KV table to REGISTER_BROKER answers"`
	ClientRequestThreadPoolNums          int    `prop:"clientRequestThreadPoolNums" default:"8" min:"1" effect:"none" doc:"Java's route-query thread pool; here each connection is served by its own goroutine"`
	DefaultThreadPoolNums                int    `prop:"defaultThreadPoolNums" default:"16" min:"1" effect:"none" doc:"Java's thread pool for other codes; here each connection is served by its own goroutine"`
	ClientRequestThreadPoolQueueCapacity int    `prop:"clientRequestThreadPoolQueueCapacity" default:"50000" min:"1" effect:"none" doc:"Java's route-query queue (full: SYSTEM_BUSY); this server queues nothing"`
	DefaultThreadPoolQueueCapacity       int    `prop:"defaultThreadPoolQueueCapacity" default:"10000" min:"1" effect:"none" doc:"Java's queue for other codes (full: SYSTEM_BUSY); this server queues nothing"`
	ScanNotActiveBrokerInterval          int64  `prop:"scanNotActiveBrokerInterval" default:"5000" min:"1" effect:"live" doc:"period of the expired-broker scan, milliseconds; read at every round"`
	UnRegisterBrokerQueueCapacity        int    `prop:"unRegisterBrokerQueueCapacity" default:"3000" min:"1" effect:"none" doc:"Java's batched unregistration queue; this server unregisters synchronously"`
	SupportActingMaster                  bool   `prop:"supportActingMaster" default:"false" effect:"live" doc:"rewrite routes so a slave acts as master when the master is gone"`
	EnableAllTopicList                   bool   `prop:"enableAllTopicList" default:"true" effect:"live" doc:"answer GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206)"`
	EnableTopicList                      bool   `prop:"enableTopicList" default:"true" effect:"live" doc:"answer codes 224, 311, 312 and 313"`
	NotifyMinBrokerIdChanged             bool   `prop:"notifyMinBrokerIdChanged" default:"false" effect:"none" doc:"send NOTIFY_MIN_BROKER_ID_CHANGE (905) to brokers; not implemented: 5.x brokers poll for it"`
	EnableControllerInNamesrv            bool   `prop:"enableControllerInNamesrv" default:"false" effect:"none" doc:"embed Java's DLedger controller; not implemented"`
	NeedWaitForService                   bool   `prop:"needWaitForService" default:"false" effect:"live" doc:"refuse route queries for waitSecondsForService after start"`
	WaitSecondsForService                int    `prop:"waitSecondsForService" default:"45" min:"0" effect:"live" doc:"length of that wait, seconds"`
	DeleteTopicWithBrokerRegistration    bool   `prop:"deleteTopicWithBrokerRegistration" default:"false" effect:"live" doc:"drop a master's topics missing from its registration"`

	// NettyServerConfig (org.apache.rocketmq.remoting.netty). listenPort is
	// 9876, the value NamesrvStartup sets before reading the -c file.

	BindAddress                        string `prop:"bindAddress" default:"0.0.0.0" effect:"restart" doc:"address the remoting server listens on"`
	ListenPort                         int    `prop:"listenPort" default:"9876" min:"0" max:"65535" effect:"restart" doc:"port the remoting server listens on"`
	ServerWorkerThreads                int    `prop:"serverWorkerThreads" default:"8" effect:"none" doc:"Netty worker threads; goroutines need none"`
	ServerCallbackExecutorThreads      int    `prop:"serverCallbackExecutorThreads" default:"0" effect:"none" doc:"Netty callback threads; unused"`
	ServerSelectorThreads              int    `prop:"serverSelectorThreads" default:"3" effect:"none" doc:"Netty selector threads; unused"`
	ServerOnewaySemaphoreValue         int    `prop:"serverOnewaySemaphoreValue" default:"256" effect:"none" doc:"Netty limit of outbound oneway requests; unused"`
	ServerAsyncSemaphoreValue          int    `prop:"serverAsyncSemaphoreValue" default:"64" effect:"none" doc:"Netty limit of outbound async requests; unused"`
	ServerChannelMaxIdleTimeSeconds    int    `prop:"serverChannelMaxIdleTimeSeconds" default:"120" min:"0" effect:"restart" doc:"close a connection idle this long (evicting its broker), seconds; 0 disables"`
	ServerSocketSndBufSize             int    `prop:"serverSocketSndBufSize" default:"0" min:"0" effect:"restart" doc:"socket send buffer, bytes; 0 keeps the OS default"`
	ServerSocketRcvBufSize             int    `prop:"serverSocketRcvBufSize" default:"0" min:"0" effect:"restart" doc:"socket receive buffer, bytes; 0 keeps the OS default"`
	WriteBufferHighWaterMark           int    `prop:"writeBufferHighWaterMark" default:"0" effect:"none" doc:"Netty write buffer high water mark; unused"`
	WriteBufferLowWaterMark            int    `prop:"writeBufferLowWaterMark" default:"0" effect:"none" doc:"Netty write buffer low water mark; unused"`
	ServerSocketBacklog                int    `prop:"serverSocketBacklog" default:"1024" effect:"none" doc:"listen backlog; Go uses the OS setting"`
	ServerNettyWorkerGroupEnable       bool   `prop:"serverNettyWorkerGroupEnable" default:"true" effect:"none" doc:"Netty worker group switch; unused"`
	ServerPooledByteBufAllocatorEnable bool   `prop:"serverPooledByteBufAllocatorEnable" default:"true" effect:"none" doc:"Netty pooled buffers; unused"`
	EnableShutdownGracefully           bool   `prop:"enableShutdownGracefully" default:"false" effect:"none" doc:"Java answers GO_AWAY while shutting down; this server answers what it received, then closes"`
	ShutdownWaitTimeSeconds            int    `prop:"shutdownWaitTimeSeconds" default:"30" min:"0" effect:"none" doc:"length of Java's GO_AWAY period; unused"`
	UseEpollNativeSelector             bool   `prop:"useEpollNativeSelector" default:"false" effect:"none" doc:"Netty epoll transport; unused"`

	// Go additions.

	FrameMaxLength      int    `prop:"frameMaxLength" default:"16777216" min:"1" effect:"restart" doc:"largest accepted frame, bytes (Java's -Dcom.rocketmq.remoting.frameMaxLength)"`
	HTTPPort            int    `prop:"httpPort" default:"8080" min:"0" max:"65535" effect:"restart" doc:"port of health, metrics and the address server /rocketmq/{subgroup}; 0 disables HTTP"`
	AddressFile         string `prop:"addressFile" default:"" effect:"live" doc:"file holding the ';'-joined NameServer list served at /rocketmq/{subgroup}; empty disables that path"`
	MaxInflatedBodySize int    `prop:"maxInflatedBodySize" default:"33554432" min:"1" effect:"live" doc:"largest size a compressed REGISTER_BROKER body may inflate to, bytes (a 100,000-topic broker needs about 6 MiB); larger is refused as a zlib bomb"`
	BrokerAddressFile   string `prop:"brokerAddressFile" default:"" effect:"live" doc:"file holding the ';'-joined NameServer list served to brokers at /rocketmq/brokers; empty: brokers get the addressFile list"`
	ExtraListenPorts    string `prop:"extraListenPorts" default:"" effect:"restart" doc:"more remoting ports, comma-separated, served like listenPort: a NameServer moving to a new port keeps answering brokers and clients that still use the old one"`

	// Route continuity and declared KV (Go additions), read at start.

	RouteGateEnable         bool   `prop:"routeGateEnable" default:"false" effect:"restart" doc:"start with the route gate closed: client route and KV reads get their connection closed, so clients use another NameServer, until the brokers named by POST /routes/gate are live here or routeGateTimeoutSeconds pass"`
	RouteGateTimeoutSeconds int    `prop:"routeGateTimeoutSeconds" default:"90" min:"0" effect:"restart" doc:"time after start at which a closed route gate opens by itself, seconds; at least 1 when routeGateEnable is true"`
	KVDeclaredFile          string `prop:"kvDeclaredFile" default:"" effect:"restart" doc:"JSON file of declared KV config (policy, configTable, removed), applied at start, when it changes, and on POST /kv/declared/apply; empty disables"`
	LiveBrokersPath         string `prop:"liveBrokersPath" default:"" effect:"restart" doc:"file where the NameServer keeps its record of live brokers (cluster and address), shown after a restart as gate.record in /routes/summary; empty: liveBrokers.json in the directory of kvConfigPath"`

	// Limits of the remoting server (Go additions): each one bounds what a
	// slow, stuck or hostile client can hold.

	MaxConnections            int `prop:"maxConnections" default:"10000" min:"0" effect:"restart" doc:"most remoting connections open at once; more are closed at accept; 0 means no limit"`
	FrameReadTimeoutMillis    int `prop:"frameReadTimeoutMillis" default:"30000" min:"0" effect:"restart" doc:"time a frame may take to arrive once its first byte is in, milliseconds (slow senders are closed); 0 disables"`
	WriteTimeoutMillis        int `prop:"writeTimeoutMillis" default:"30000" min:"0" effect:"restart" doc:"time one write of answers may block on a client that does not read, milliseconds; 0 disables"`
	MaxInflightPerConnection  int `prop:"maxInflightPerConnection" default:"256" min:"1" effect:"restart" doc:"most answers a connection may have unwritten; at the bound the server writes them before reading further requests"`
	TLSHandshakeTimeoutMillis int `prop:"tlsHandshakeTimeoutMillis" default:"10000" min:"1" effect:"restart" doc:"time a new connection has to send its first byte and finish a TLS handshake when TLS is possible, milliseconds"`

	// TLS of the remoting port, under the names of the Java system
	// properties (TlsSystemConfig); Java cannot change them over the wire
	// and neither can UPDATE_NAMESRV_CONFIG here.

	TLSServerMode           string `prop:"tls.server.mode" default:"permissive" enum:"disabled|permissive|enforcing" effect:"restart" doc:"disabled: plain only; permissive: TLS and plain on the same port, told apart by the first byte; enforcing: TLS only. Without a certificate, permissive is plain only"`
	TLSServerCertPath       string `prop:"tls.server.certPath" default:"" effect:"restart" doc:"PEM certificate chain of the remoting port; re-read on the next handshake after the file changes"`
	TLSServerKeyPath        string `prop:"tls.server.keyPath" default:"" effect:"restart" doc:"PEM private key (unencrypted PKCS#8, PKCS#1 or EC) of that certificate; re-read with it"`
	TLSServerTrustCertPath  string `prop:"tls.server.trustCertPath" default:"" effect:"restart" doc:"PEM CA certificates that client certificates are verified against; required when tls.server.need.client.auth is not none"`
	TLSServerNeedClientAuth string `prop:"tls.server.need.client.auth" default:"none" enum:"none|optional|require" effect:"restart" doc:"client certificates: none, optional (verified when given) or require"`

	// Authorization (Go additions, docs/security.md): who may send which
	// request codes on the remoting port, and who may use the HTTP port's
	// mutating endpoints. Read at start; UPDATE_NAMESRV_CONFIG cannot
	// change them.

	AuthzEnable              bool   `prop:"authzEnable" default:"false" effect:"restart" doc:"authorize every remoting request by role (broker, admin, read) as the authz* lists grant them; false serves every peer everything, as Java does"`
	AuthzBrokerIdentities    string `prop:"authzBrokerIdentities" default:"" effect:"restart" doc:"comma-separated client-certificate patterns (cn:NAME, dns:NAME, uri:NAME; one '*' per pattern) granted the broker role: register, unregister, heartbeats"`
	AuthzBrokerNetworks      string `prop:"authzBrokerNetworks" default:"" effect:"restart" doc:"comma-separated source networks (CIDR or address, IPv4 or IPv6) granted the broker role"`
	AuthzAdminIdentities     string `prop:"authzAdminIdentities" default:"" effect:"restart" doc:"client-certificate patterns granted the admin role: KV writes and deletes, config updates, write permissions, topic deletion; also the HTTP port's mutating endpoints"`
	AuthzAdminNetworks       string `prop:"authzAdminNetworks" default:"" effect:"restart" doc:"source networks granted the admin role on the remoting port"`
	AuthzReadIdentities      string `prop:"authzReadIdentities" default:"" effect:"restart" doc:"client-certificate patterns granted the read role (routes, cluster info, KV and config reads); broker and admin include it"`
	AuthzReadNetworks        string `prop:"authzReadNetworks" default:"" effect:"restart" doc:"source networks granted the read role; 0.0.0.0/0,::/0 lets every client read"`
	AuthzBrokerNameOwnership bool   `prop:"authzBrokerNameOwnership" default:"false" effect:"restart" doc:"the first client-certificate identity to register a broker name owns it while its group is live; registrations of that name by other identities are refused"`
	HTTPAuthScope            string `prop:"httpAuthScope" default:"none" enum:"none|writes|all" effect:"restart" doc:"HTTP endpoints that need a credential (bearer token or admin/read client certificate): none; writes (POST /routes/gate, POST /kv/declared/apply); all (also /metrics and /routes/summary). Health and /rocketmq/* stay open"`
	HTTPAuthTokenFile        string `prop:"httpAuthTokenFile" default:"" effect:"restart" doc:"file of accepted bearer tokens, one per line (a mounted Secret); re-read when it changes"`
	HTTPTLSMode              string `prop:"httpTLSMode" default:"disabled" enum:"disabled|permissive|enforcing" effect:"restart" doc:"TLS on the HTTP port with the tls.server.* certificate: disabled; permissive (TLS and plain on one port); enforcing (TLS only). Client certificates are verified when given, never required"`
}

// Effect says when a change of a property reaches the running server. As in
// Java, UPDATE_NAMESRV_CONFIG accepts every known key and persists it; only
// live keys change behaviour before a restart.
type Effect string

const (
	// EffectLive properties are read on every use.
	EffectLive Effect = "live"
	// EffectRestart properties are read once at startup.
	EffectRestart Effect = "restart"
	// EffectNone properties exist for compatibility with Java configuration
	// files and admin tools; this server ignores them.
	EffectNone Effect = "none"
)

// Kind is the value type of a property, named like the Java field type.
type Kind string

// The property kinds.
const (
	KindString Kind = "String"
	KindBool   Kind = "boolean"
	KindInt    Kind = "int"
	KindLong   Kind = "long"
)

// KeyInfo describes one property of the registry.
type KeyInfo struct {
	Name    string
	Kind    Kind
	Default string // as written in the tag, before ${...} expansion
	Effect  Effect
	Doc     string
	Min     *int64 // inclusive bounds of integer kinds, nil when unbounded
	Max     *int64
	Enum    []string // the values a string may take, nil when free
}

type entry struct {
	KeyInfo
	field int
}

var (
	registry = mustBuildRegistry()
	byName   = func() map[string]*entry {
		m := make(map[string]*entry, len(registry))
		for i := range registry {
			m[registry[i].Name] = &registry[i]
		}
		return m
	}()
)

// mustBuildRegistry reads the struct tags once; a malformed tag is a
// programming error caught by any test that touches the package.
func mustBuildRegistry() []entry {
	t := reflect.TypeFor[Config]()
	entries := make([]entry, 0, t.NumField())
	seen := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		e := entry{field: i, KeyInfo: KeyInfo{
			Name:    f.Tag.Get("prop"),
			Default: f.Tag.Get("default"),
			Effect:  Effect(f.Tag.Get("effect")),
			Doc:     f.Tag.Get("doc"),
		}}
		if e.Name == "" || seen[e.Name] {
			panic(fmt.Sprintf("config: field %s: missing or duplicate prop tag %q", f.Name, e.Name))
		}
		seen[e.Name] = true
		switch e.Effect {
		case EffectLive, EffectRestart, EffectNone:
		default:
			panic(fmt.Sprintf("config: field %s: bad effect tag %q", f.Name, e.Effect))
		}
		if e.Doc == "" {
			panic(fmt.Sprintf("config: field %s: missing doc tag", f.Name))
		}
		switch f.Type.Kind() {
		case reflect.String:
			e.Kind = KindString
		case reflect.Bool:
			e.Kind = KindBool
		case reflect.Int:
			e.Kind = KindInt
		case reflect.Int64:
			e.Kind = KindLong
		default:
			panic(fmt.Sprintf("config: field %s: unsupported type %s", f.Name, f.Type))
		}
		if s, ok := f.Tag.Lookup("enum"); ok {
			if e.Kind != KindString {
				panic(fmt.Sprintf("config: field %s: enum tag on a %s", f.Name, e.Kind))
			}
			e.Enum = strings.Split(s, "|")
		}
		for tag, dst := range map[string]**int64{"min": &e.Min, "max": &e.Max} {
			if s, ok := f.Tag.Lookup(tag); ok {
				n, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					panic(fmt.Sprintf("config: field %s: bad %s tag %q", f.Name, tag, s))
				}
				*dst = &n
			}
		}
		entries = append(entries, e)
	}
	var probe Config
	for i := range entries {
		if err := entries[i].set(&probe, entries[i].Default); err != nil {
			panic(fmt.Sprintf("config: bad default of %s: %v", entries[i].Name, err))
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	return entries
}

// Keys describes every property, sorted by name.
func Keys() []KeyInfo {
	out := make([]KeyInfo, len(registry))
	for i := range registry {
		out[i] = registry[i].KeyInfo
	}
	return out
}

// LookupKey describes the property named name.
func LookupKey(name string) (KeyInfo, bool) {
	e, ok := byName[name]
	if !ok {
		return KeyInfo{}, false
	}
	return e.KeyInfo, true
}

// Default returns the Java defaults (plus the Go additions' defaults). Paths
// under ${user.home} use $HOME; when the home directory is unknown they become
// relative to the working directory. rocketmqHome comes from $ROCKETMQ_HOME
// and stays empty when that is unset: unlike Java, which exits when it is
// missing, this server does not need it.
func Default() *Config {
	c := new(Config)
	for i := range registry {
		if err := registry[i].set(c, expandDefault(registry[i].Default)); err != nil {
			panic(fmt.Sprintf("config: default of %s: %v", registry[i].Name, err))
		}
	}
	return c
}

func expandDefault(s string) string {
	return os.Expand(s, func(name string) string {
		if name == "user.home" {
			if home, err := os.UserHomeDir(); err == nil {
				return home
			}
			return "."
		}
		return os.Getenv(name)
	})
}

// ValueError reports a property value that does not parse as its kind or is
// out of range. Java silently ignores such values; this server refuses them so
// a typo never goes unnoticed.
type ValueError struct {
	Key, Value string
	Err        error
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("invalid value %q for property %s: %v", e.Value, e.Key, e.Err)
}

func (e *ValueError) Unwrap() error { return e.Err }

// javaTrim is String.trim: it drops every char <= ' ' at both ends.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// set parses raw as the property's kind. Strings are trimmed like Java's
// properties2Object does; numbers and booleans are trimmed too, where Java
// would reject "5 " or read "true " as false.
func (e *entry) set(c *Config, raw string) error {
	v := reflect.ValueOf(c).Elem().Field(e.field)
	s := javaTrim(raw)
	switch e.Kind {
	case KindString:
		if e.Enum != nil {
			i := slices.IndexFunc(e.Enum, func(allowed string) bool { return strings.EqualFold(allowed, s) })
			if i < 0 {
				return &ValueError{Key: e.Name, Value: raw, Err: fmt.Errorf("want one of %s", strings.Join(e.Enum, ", "))}
			}
			s = e.Enum[i]
		}
		v.SetString(s)
	case KindBool:
		switch {
		case strings.EqualFold(s, "true"):
			v.SetBool(true)
		case strings.EqualFold(s, "false"):
			v.SetBool(false)
		default:
			return &ValueError{Key: e.Name, Value: raw, Err: fmt.Errorf("want true or false")}
		}
	case KindInt, KindLong:
		bits := 64
		if e.Kind == KindInt {
			bits = 32 // a Java int
		}
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return &ValueError{Key: e.Name, Value: raw, Err: fmt.Errorf("want a decimal %s", e.Kind)}
		}
		if e.Min != nil && n < *e.Min || e.Max != nil && n > *e.Max {
			return &ValueError{Key: e.Name, Value: raw, Err: fmt.Errorf("want a value in %s", e.bounds())}
		}
		v.SetInt(n)
	}
	return nil
}

func (e *entry) bounds() string {
	lo, hi := "-inf", "+inf"
	if e.Min != nil {
		lo = strconv.FormatInt(*e.Min, 10)
	}
	if e.Max != nil {
		hi = strconv.FormatInt(*e.Max, 10)
	}
	return "[" + lo + ", " + hi + "]"
}

func (e *entry) get(c *Config) string {
	v := reflect.ValueOf(c).Elem().Field(e.field)
	switch e.Kind {
	case KindBool:
		return strconv.FormatBool(v.Bool())
	case KindInt, KindLong:
		return strconv.FormatInt(v.Int(), 10)
	default:
		return v.String()
	}
}

// Get returns the value of property key as text, false when key is unknown.
func (c *Config) Get(key string) (string, bool) {
	e, ok := byName[key]
	if !ok {
		return "", false
	}
	return e.get(c), true
}

// Properties returns every registry property with its current value, sorted
// by key.
func (c *Config) Properties() []Property {
	out := make([]Property, len(registry))
	for i := range registry {
		out[i] = Property{Key: registry[i].Name, Value: registry[i].get(c)}
	}
	return out
}

// Apply sets the known keys of props on c and returns the unknown ones in
// input order. It is all or nothing: on the first invalid value it returns a
// *ValueError and leaves c untouched.
func (c *Config) Apply(props []Property) (unknown []Property, err error) {
	next := *c
	for _, p := range props {
		e, ok := byName[p.Key]
		if !ok {
			unknown = append(unknown, p)
			continue
		}
		if err := e.set(&next, p.Value); err != nil {
			return nil, err
		}
	}
	*c = next
	return unknown, nil
}

// Validate checks what no single property can: the combinations of keys.
// Resolve and Store.Update call it, so a combination that would stop the
// next start is refused when it is set.
func (c *Config) Validate() error {
	if c.RouteGateEnable && c.RouteGateTimeoutSeconds < 1 {
		return &ValueError{Key: "routeGateTimeoutSeconds", Value: strconv.Itoa(c.RouteGateTimeoutSeconds),
			Err: errors.New("want at least 1 when routeGateEnable is true")}
	}
	if _, err := c.ExtraPorts(); err != nil {
		return err
	}
	if _, err := c.AuthzPolicy(); err != nil {
		return err
	}
	return c.validateHTTPAuth()
}

// AuthzPolicy parses the authz* lists; an entry that does not parse is a
// *ValueError naming its property.
func (c *Config) AuthzPolicy() (*authz.Policy, error) {
	p, err := authz.Parse(authz.Config{
		Broker: authz.Lists{Identities: c.AuthzBrokerIdentities, Networks: c.AuthzBrokerNetworks},
		Admin:  authz.Lists{Identities: c.AuthzAdminIdentities, Networks: c.AuthzAdminNetworks},
		Read:   authz.Lists{Identities: c.AuthzReadIdentities, Networks: c.AuthzReadNetworks},
	})
	var le *authz.ListError
	if errors.As(err, &le) {
		key := authzKeys[le.Role][le.What]
		value, _ := c.Get(key)
		return nil, &ValueError{Key: key, Value: value, Err: fmt.Errorf("entry %q: %w", le.Entry, le.Err)}
	}
	return p, err
}

// authzKeys names the property of each role's lists.
var authzKeys = map[authz.Role]map[string]string{
	authz.Broker: {"identities": "authzBrokerIdentities", "networks": "authzBrokerNetworks"},
	authz.Admin:  {"identities": "authzAdminIdentities", "networks": "authzAdminNetworks"},
	authz.Read:   {"identities": "authzReadIdentities", "networks": "authzReadNetworks"},
}

// validateHTTPAuth refuses HTTP settings that could not work: a scope no
// credential can satisfy, or TLS without a certificate.
func (c *Config) validateHTTPAuth() error {
	httpTLS := c.HTTPTLSMode != "disabled"
	if httpTLS && (c.TLSServerCertPath == "" || c.TLSServerKeyPath == "") {
		return &ValueError{Key: "httpTLSMode", Value: c.HTTPTLSMode,
			Err: errors.New("TLS on the HTTP port needs tls.server.certPath and tls.server.keyPath")}
	}
	if c.HTTPAuthScope != "none" && c.HTTPAuthTokenFile == "" && !(httpTLS && c.TLSServerTrustCertPath != "") {
		return &ValueError{Key: "httpAuthScope", Value: c.HTTPAuthScope,
			Err: errors.New("no credential could be accepted: set httpAuthTokenFile, or httpTLSMode with tls.server.trustCertPath for client certificates")}
	}
	return nil
}

// ExtraPorts parses extraListenPorts: distinct ports from 1 to 65535, none of
// them listenPort.
func (c *Config) ExtraPorts() ([]int, error) {
	var out []int
	for _, f := range strings.Split(c.ExtraListenPorts, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := strconv.Atoi(f)
		switch {
		case err != nil || p < 1 || p > 65535:
			return nil, &ValueError{Key: "extraListenPorts", Value: c.ExtraListenPorts, Err: fmt.Errorf("%q is not a port from 1 to 65535", f)}
		case p == c.ListenPort || slices.Contains(out, p):
			return nil, &ValueError{Key: "extraListenPorts", Value: c.ExtraListenPorts, Err: fmt.Errorf("port %d is listed twice or is listenPort", p)}
		}
		out = append(out, p)
	}
	return out, nil
}

// Text renders cfg and the extra (unknown) properties as the sorted
// "key=value\n" text of GET_NAMESRV_CONFIG, `-p` and the configStorePath file.
func Text(cfg *Config, extra []Property) []byte {
	props := cfg.Properties()
	for _, p := range extra {
		if _, known := byName[p.Key]; !known {
			props = append(props, p)
		}
	}
	return FormatProperties(props)
}
