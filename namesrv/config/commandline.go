package config

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
)

// EnvPrefix starts the environment variable that backs each flag:
// --bind-address falls back to NAMESRV_BIND_ADDRESS, and so on.
const EnvPrefix = "NAMESRV_"

// flagSpec is one command-line option. prop names the property it overrides;
// options without one (config file, print, logging) are read by Resolve.
type flagSpec struct {
	long, short string
	arg         string // placeholder in the usage, "" for a boolean flag
	prop        string
	usage       string
}

var flagSpecs = []flagSpec{
	{long: "config-file", short: "c", arg: "FILE", usage: "Java-style properties file with any of the properties listed by -p (like mqnamesrv -c)"},
	{long: "print-config", short: "p", usage: "print every property with its effective value, sorted, and exit"},
	{long: "bind-address", arg: "ADDR", prop: "bindAddress", usage: "address the remoting server listens on"},
	{long: "listen-port", arg: "PORT", prop: "listenPort", usage: "port the remoting server listens on"},
	{long: "http-port", arg: "PORT", prop: "httpPort", usage: "port of /healthz, /readyz, /metrics and /rocketmq/{subgroup}; 0 disables HTTP"},
	{long: "kv-config-path", arg: "FILE", prop: "kvConfigPath", usage: "file holding the KV table"},
	{long: "config-store-path", arg: "FILE", prop: "configStorePath", usage: "file UPDATE_NAMESRV_CONFIG rewrites (default: the -c file, else ~/namesrv/namesrv.properties)"},
	{long: "address-file", arg: "FILE", prop: "addressFile", usage: "file with the ';'-joined NameServer list served at /rocketmq/{subgroup}"},
	{long: "extra-listen-ports", arg: "PORTS", prop: "extraListenPorts", usage: "more remoting ports, comma-separated, served like --listen-port (for a move to a new port)"},
	{long: "broker-address-file", arg: "FILE", prop: "brokerAddressFile", usage: "file with the NameServer list served to brokers at /rocketmq/brokers (default: the --address-file list)"},
	{long: "route-gate-enable", prop: "routeGateEnable", usage: "start with the route gate closed until POST /routes/gate's brokers are live or the timeout passes"},
	{long: "route-gate-timeout-seconds", arg: "SECONDS", prop: "routeGateTimeoutSeconds", usage: "seconds after start at which a closed route gate opens by itself"},
	{long: "kv-declared-file", arg: "FILE", prop: "kvDeclaredFile", usage: "JSON file of declared KV config, applied at start and when it changes"},
	{long: "live-brokers-path", arg: "FILE", prop: "liveBrokersPath", usage: "file recording the live brokers for the route gate after a restart (default: liveBrokers.json beside the KV file)"},
	{long: "tls-mode", arg: "MODE", prop: "tls.server.mode", usage: "TLS on the remoting port: disabled, permissive (TLS and plain) or enforcing"},
	{long: "tls-cert", arg: "FILE", prop: "tls.server.certPath", usage: "PEM certificate chain for TLS; re-read when it changes"},
	{long: "tls-key", arg: "FILE", prop: "tls.server.keyPath", usage: "PEM private key of that certificate; re-read when it changes"},
	{long: "tls-trust-cert", arg: "FILE", prop: "tls.server.trustCertPath", usage: "PEM CA certificates that verify client certificates"},
	{long: "tls-client-auth", arg: "MODE", prop: "tls.server.need.client.auth", usage: "client certificates: none, optional or require"},
	{long: "authz-enable", prop: "authzEnable", usage: "authorize remoting requests by role as the --authz-* lists grant them (default: every peer may do everything)"},
	{long: "authz-broker-identities", arg: "LIST", prop: "authzBrokerIdentities", usage: "client-certificate patterns (cn:, dns:, uri:) granted the broker role"},
	{long: "authz-broker-networks", arg: "LIST", prop: "authzBrokerNetworks", usage: "source networks granted the broker role"},
	{long: "authz-admin-identities", arg: "LIST", prop: "authzAdminIdentities", usage: "client-certificate patterns granted the admin role"},
	{long: "authz-admin-networks", arg: "LIST", prop: "authzAdminNetworks", usage: "source networks granted the admin role"},
	{long: "authz-read-identities", arg: "LIST", prop: "authzReadIdentities", usage: "client-certificate patterns granted the read role"},
	{long: "authz-read-networks", arg: "LIST", prop: "authzReadNetworks", usage: "source networks granted the read role"},
	{long: "authz-broker-name-ownership", prop: "authzBrokerNameOwnership", usage: "a broker name belongs to the first certificate identity that registers it while its group is live"},
	{long: "http-auth-scope", arg: "SCOPE", prop: "httpAuthScope", usage: "HTTP endpoints that need a credential: none, writes or all"},
	{long: "http-auth-token-file", arg: "FILE", prop: "httpAuthTokenFile", usage: "file of accepted bearer tokens, one per line; re-read when it changes"},
	{long: "http-tls-mode", arg: "MODE", prop: "httpTLSMode", usage: "TLS on the HTTP port with the --tls-cert certificate: disabled, permissive or enforcing"},
	{long: "log-format", arg: "text|json", usage: "log format (default text)"},
	{long: "log-level", arg: "LEVEL", usage: "log level: debug, info, warn or error (default info)"},
}

// EnvName is the environment variable backing the flag --long.
func EnvName(long string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(long, "-", "_"))
}

// CommandLine holds the parsed flags. After Resolve, LogFormat and LogLevel
// hold the effective logging settings and PrintConfig tells the caller to
// print Text(cfg, extra) and exit 0.
type CommandLine struct {
	fs     *flag.FlagSet
	values map[string]*string // by long name

	PrintConfig bool
	LogFormat   string // "text" or "json"
	LogLevel    slog.Level
}

// NewCommandLine defines the NameServer flags on a new FlagSet named name,
// writing usage and errors to out. Both -x and --x spellings work, as with
// every Go flag set; -c and -p are short for --config-file and --print-config.
func NewCommandLine(name string, out io.Writer) (*flag.FlagSet, *CommandLine) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	c := &CommandLine{fs: fs, values: map[string]*string{}}
	for _, s := range flagSpecs {
		v := new(string)
		c.values[s.long] = v
		var value flag.Value = (*stringValue)(v)
		if s.arg == "" {
			value = (*boolValue)(v)
		}
		fs.Var(value, s.long, s.usage)
		if s.short != "" {
			fs.Var(value, s.short, "short for --"+s.long)
		}
	}
	fs.Usage = func() { c.usage(out) }
	return fs, c
}

type stringValue string

func (v *stringValue) String() string     { return string(*v) }
func (v *stringValue) Set(s string) error { *v = stringValue(s); return nil }

// boolValue keeps the raw text so that flag and environment values go
// through the same validation in Resolve.
type boolValue string

func (v *boolValue) String() string     { return string(*v) }
func (v *boolValue) Set(s string) error { *v = boolValue(s); return nil }
func (v *boolValue) IsBoolFlag() bool   { return true }

func (c *CommandLine) usage(out io.Writer) {
	fmt.Fprintf(out, "Usage: %s [flags]\n\nFlags (each falls back to the environment variable shown when not given):\n", c.fs.Name())
	for _, s := range flagSpecs {
		names := "    --" + s.long
		if s.short != "" {
			names = "-" + s.short + ", --" + s.long
		}
		if s.arg != "" {
			names += " " + s.arg
		}
		fmt.Fprintf(out, "  %-34s %s [$%s]\n", names, s.usage, EnvName(s.long))
	}
	fmt.Fprintf(out, "  %-34s %s\n", "-h, --help", "print this help")
	fmt.Fprintf(out, "\nPrecedence: flag > environment > config file > default.\n"+
		"The config file accepts the property names of the Java NameServer (NamesrvConfig and\n"+
		"NettyServerConfig, e.g. orderMessageEnable=true), the tls.server.* system properties, and the\n"+
		"Go additions (frameMaxLength, httpPort, addressFile, connection limits and timeouts, the\n"+
		"route gate, the declared KV file and authorization);\n"+
		"run %s -p to list every property with its effective value.\n", c.fs.Name())
}

// lookup returns the value of the option long from the command line, else
// from its environment variable (an empty variable counts as unset, so a
// blank entry in a Pod spec does not wipe a setting).
func (c *CommandLine) lookup(long string) (value, source string, ok bool) {
	given := false
	c.fs.Visit(func(f *flag.Flag) {
		for _, s := range flagSpecs {
			if s.long == long && (f.Name == s.long || f.Name == s.short) {
				given = true
			}
		}
	})
	if given {
		return *c.values[long], "flag --" + long, true
	}
	env := EnvName(long)
	if v := os.Getenv(env); v != "" {
		return v, "environment variable " + env, true
	}
	return "", "", false
}

// Resolve builds the startup configuration in Java's order: defaults, then
// the -c file, then configStorePath set to the -c path, then the overrides.
// Overrides come from flags, or from NAMESRV_* variables for flags not given.
//
// Deviation: configStorePath becomes the -c path only when the file does not
// set configStorePath itself, because in Kubernetes the -c file is a
// read-only ConfigMap and the persisted copy must live elsewhere.
//
// extra holds the file's unknown properties in file order (they stay visible
// in GET_NAMESRV_CONFIG, as in Java); unknown lists their keys sorted, for a
// warning.
func (c *CommandLine) Resolve() (cfg *Config, extra []Property, unknown []string, err error) {
	cfg = Default()
	if path, src, ok := c.lookup("config-file"); ok {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("read config file (%s): %w", src, err)
		}
		props, err := ParseProperties(data)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("parse config file %s: %w", path, err)
		}
		if extra, err = cfg.Apply(props); err != nil {
			return nil, nil, nil, fmt.Errorf("config file %s: %w", path, err)
		}
		if !slices.ContainsFunc(props, func(p Property) bool { return p.Key == "configStorePath" }) {
			cfg.ConfigStorePath = path
		}
		for _, p := range extra {
			unknown = append(unknown, p.Key)
		}
		slices.Sort(unknown)
	}
	for _, s := range flagSpecs {
		if s.prop == "" {
			continue
		}
		if v, src, ok := c.lookup(s.long); ok {
			if _, err := cfg.Apply([]Property{{Key: s.prop, Value: v}}); err != nil {
				return nil, nil, nil, fmt.Errorf("%s: %w", src, err)
			}
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, nil, nil, err
	}
	if err := c.resolveOptions(); err != nil {
		return nil, nil, nil, err
	}
	return cfg, extra, unknown, nil
}

func (c *CommandLine) resolveOptions() error {
	c.PrintConfig, c.LogFormat, c.LogLevel = false, "text", slog.LevelInfo
	if v, src, ok := c.lookup("print-config"); ok {
		switch {
		case strings.EqualFold(v, "true"):
			c.PrintConfig = true
		case strings.EqualFold(v, "false"):
		default:
			return fmt.Errorf("%s: invalid value %q, want true or false", src, v)
		}
	}
	if v, src, ok := c.lookup("log-format"); ok {
		switch f := strings.ToLower(v); f {
		case "text", "json":
			c.LogFormat = f
		default:
			return fmt.Errorf("%s: invalid value %q, want text or json", src, v)
		}
	}
	if v, src, ok := c.lookup("log-level"); ok {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil || !slices.Contains(logLevels, c.LogLevel) {
			return fmt.Errorf("%s: invalid value %q, want debug, info, warn or error", src, v)
		}
	}
	return nil
}

var logLevels = []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError}
