package config

import (
	"bytes"
	"errors"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// clearEnv unsets every NAMESRV_* variable a flag could fall back to, so the
// developer's environment cannot leak into a test.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, s := range flagSpecs {
		t.Setenv(EnvName(s.long), "")
	}
}

func resolve(t *testing.T, args ...string) (*CommandLine, *Config, []Property, []string, error) {
	t.Helper()
	var out bytes.Buffer
	fs, cl := NewCommandLine("namesrv", &out)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("Parse(%q): %v\n%s", args, err, out.String())
	}
	cfg, extra, unknown, err := cl.Resolve()
	return cl, cfg, extra, unknown, err
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestResolveDefaults(t *testing.T) {
	setHome(t)
	clearEnv(t)
	cl, cfg, extra, unknown, err := resolve(t)
	if err != nil {
		t.Fatal(err)
	}
	if *cfg != *Default() || extra != nil || unknown != nil {
		t.Fatalf("no flags: cfg %+v extra %q unknown %q", cfg, extra, unknown)
	}
	if cl.PrintConfig || cl.LogFormat != "text" || cl.LogLevel != slog.LevelInfo {
		t.Fatalf("options = %v %q %v", cl.PrintConfig, cl.LogFormat, cl.LogLevel)
	}
}

func TestResolveJavaSampleFile(t *testing.T) {
	setHome(t)
	clearEnv(t)
	path, err := filepath.Abs(filepath.Join("testdata", "namesrv.properties"))
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-c", path}, {"--config-file", path}, {"-config-file=" + path}} {
		_, cfg, extra, unknown, err := resolve(t, args...)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if cfg.ListenPort != 9877 || !cfg.OrderMessageEnable || cfg.EnableTopicList || cfg.ProductEnvName != "prod east" ||
			cfg.ScanNotActiveBrokerInterval != 10000 || cfg.ServerChannelMaxIdleTimeSeconds != 180 ||
			cfg.RocketmqHome != "/opt/rocketmq" || cfg.ServerWorkerThreads != 16 ||
			cfg.ConfigBlackList != "configBlackList;configStorePath;kvConfigPath;listenPort" {
			t.Fatalf("%q: file not applied: %+v", args, cfg)
		}
		if cfg.ConfigStorePath != path {
			t.Fatalf("configStorePath = %q, want the -c path %q", cfg.ConfigStorePath, path)
		}
		if want := props("clientWorkerThreads", "4", "connectTimeoutMillis", "3000"); !reflect.DeepEqual(extra, want) {
			t.Fatalf("extra = %q, want %q", extra, want)
		}
		if want := []string{"clientWorkerThreads", "connectTimeoutMillis"}; !reflect.DeepEqual(unknown, want) {
			t.Fatalf("unknown = %q, want %q", unknown, want)
		}
	}
}

func TestResolveUnknownKeysSorted(t *testing.T) {
	setHome(t)
	clearEnv(t)
	path := writeFile(t, t.TempDir(), "n.conf", "zeta=1\nlistenPort=1\nalpha=2\nmid=3\n")
	_, _, extra, unknown, err := resolve(t, "-c", path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"alpha", "mid", "zeta"}; !reflect.DeepEqual(unknown, want) {
		t.Fatalf("unknown = %q, want %q", unknown, want)
	}
	if want := props("zeta", "1", "alpha", "2", "mid", "3"); !reflect.DeepEqual(extra, want) {
		t.Fatalf("extra = %q, want file order %q", extra, want)
	}
}

func TestResolveConfigStorePath(t *testing.T) {
	home := setHome(t)
	dir := t.TempDir()
	plain := writeFile(t, dir, "plain.conf", "listenPort=1\n")
	explicit := writeFile(t, dir, "explicit.conf", "configStorePath=/data/namesrv.properties\n")
	tests := []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"no file: Java default", nil, "", filepath.Join(home, "namesrv", "namesrv.properties")},
		{"the -c path, as in Java", []string{"-c", plain}, "", plain},
		{"the file's own setting (read-only ConfigMap)", []string{"-c", explicit}, "", "/data/namesrv.properties"},
		{"environment beats the file", []string{"-c", explicit}, "/env/p", "/env/p"},
		{"flag beats everything", []string{"-c", plain, "--config-store-path", "/flag/p"}, "/env/p", "/flag/p"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("NAMESRV_CONFIG_STORE_PATH", tt.env)
			_, cfg, _, _, err := resolve(t, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ConfigStorePath != tt.want {
				t.Fatalf("configStorePath = %q, want %q", cfg.ConfigStorePath, tt.want)
			}
		})
	}
}

func TestResolvePrecedence(t *testing.T) {
	setHome(t)
	file := writeFile(t, t.TempDir(), "n.conf", "listenPort=1111\nbindAddress=10.0.0.1\nhttpPort=1\n")
	tests := []struct {
		name       string
		file, flag bool
		env        string
		want       int
	}{
		{"default", false, false, "", 9876},
		{"file", true, false, "", 1111},
		{"env over default", false, false, "2222", 2222},
		{"env over file", true, false, "2222", 2222},
		{"flag over default", false, true, "", 3333},
		{"flag over file", true, true, "", 3333},
		{"flag over env and file", true, true, "2222", 3333},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("NAMESRV_LISTEN_PORT", tt.env)
			var args []string
			if tt.file {
				args = append(args, "-c", file)
			}
			if tt.flag {
				args = append(args, "--listen-port", "3333")
			}
			_, cfg, _, _, err := resolve(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ListenPort != tt.want {
				t.Fatalf("listenPort = %d, want %d", cfg.ListenPort, tt.want)
			}
		})
	}
}

func TestResolveEveryPropertyFlagAndEnv(t *testing.T) {
	setHome(t)
	tests := []struct {
		flag, env, prop, value string
	}{
		{"bind-address", "NAMESRV_BIND_ADDRESS", "bindAddress", "127.0.0.7"},
		{"listen-port", "NAMESRV_LISTEN_PORT", "listenPort", "19876"},
		{"http-port", "NAMESRV_HTTP_PORT", "httpPort", "0"},
		{"kv-config-path", "NAMESRV_KV_CONFIG_PATH", "kvConfigPath", "/kv/kvConfig.json"},
		{"config-store-path", "NAMESRV_CONFIG_STORE_PATH", "configStorePath", "/cfg/namesrv.properties"},
		{"address-file", "NAMESRV_ADDRESS_FILE", "addressFile", "/etc/namesrv/addresses"},
		{"broker-address-file", "NAMESRV_BROKER_ADDRESS_FILE", "brokerAddressFile", "/etc/namesrv/brokers"},
		{"extra-listen-ports", "NAMESRV_EXTRA_LISTEN_PORTS", "extraListenPorts", "9877,10911"},
		{"route-gate-enable", "NAMESRV_ROUTE_GATE_ENABLE", "routeGateEnable", "true"},
		{"route-gate-timeout-seconds", "NAMESRV_ROUTE_GATE_TIMEOUT_SECONDS", "routeGateTimeoutSeconds", "15"},
		{"kv-declared-file", "NAMESRV_KV_DECLARED_FILE", "kvDeclaredFile", "/etc/namesrv/kv/declared.json"},
		{"live-brokers-path", "NAMESRV_LIVE_BROKERS_PATH", "liveBrokersPath", "/data/live.json"},
		{"tls-mode", "NAMESRV_TLS_MODE", "tls.server.mode", "enforcing"},
		{"tls-cert", "NAMESRV_TLS_CERT", "tls.server.certPath", "/etc/namesrv/tls/tls.crt"},
		{"tls-key", "NAMESRV_TLS_KEY", "tls.server.keyPath", "/etc/namesrv/tls/tls.key"},
		{"tls-trust-cert", "NAMESRV_TLS_TRUST_CERT", "tls.server.trustCertPath", "/etc/namesrv/tls/ca.crt"},
		{"tls-client-auth", "NAMESRV_TLS_CLIENT_AUTH", "tls.server.need.client.auth", "require"},
		{"authz-enable", "NAMESRV_AUTHZ_ENABLE", "authzEnable", "true"},
		{"authz-broker-identities", "NAMESRV_AUTHZ_BROKER_IDENTITIES", "authzBrokerIdentities", "uri:spiffe://td/ns/mq/sa/broker-*"},
		{"authz-broker-networks", "NAMESRV_AUTHZ_BROKER_NETWORKS", "authzBrokerNetworks", "10.0.0.0/8,fd00::/8"},
		{"authz-admin-identities", "NAMESRV_AUTHZ_ADMIN_IDENTITIES", "authzAdminIdentities", "cn:operator"},
		{"authz-admin-networks", "NAMESRV_AUTHZ_ADMIN_NETWORKS", "authzAdminNetworks", "192.168.0.1"},
		{"authz-read-identities", "NAMESRV_AUTHZ_READ_IDENTITIES", "authzReadIdentities", "dns:*.clients.svc"},
		{"authz-read-networks", "NAMESRV_AUTHZ_READ_NETWORKS", "authzReadNetworks", "0.0.0.0/0,::/0"},
		{"authz-broker-name-ownership", "NAMESRV_AUTHZ_BROKER_NAME_OWNERSHIP", "authzBrokerNameOwnership", "true"},
		{"http-auth-token-file", "NAMESRV_HTTP_AUTH_TOKEN_FILE", "httpAuthTokenFile", "/etc/namesrv/http-token/token"},
	}
	for _, tt := range tests {
		t.Run(tt.flag, func(t *testing.T) {
			clearEnv(t)
			for _, args := range [][]string{{"--" + tt.flag, tt.value}, {"-" + tt.flag + "=" + tt.value}} {
				_, cfg, _, _, err := resolve(t, args...)
				if err != nil {
					t.Fatal(err)
				}
				if got, _ := cfg.Get(tt.prop); got != tt.value {
					t.Fatalf("%q: %s = %q, want %q", args, tt.prop, got, tt.value)
				}
			}
			t.Setenv(tt.env, tt.value)
			_, cfg, _, _, err := resolve(t)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := cfg.Get(tt.prop); got != tt.value {
				t.Fatalf("env %s: %s = %q, want %q", tt.env, tt.prop, got, tt.value)
			}
		})
	}
}

func TestResolveConfigFileFromEnv(t *testing.T) {
	setHome(t)
	clearEnv(t)
	path := writeFile(t, t.TempDir(), "n.conf", "orderMessageEnable=true\n")
	t.Setenv("NAMESRV_CONFIG_FILE", path)
	_, cfg, _, _, err := resolve(t)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.OrderMessageEnable || cfg.ConfigStorePath != path {
		t.Fatalf("NAMESRV_CONFIG_FILE not used: %+v", cfg)
	}
}

func TestResolveErrors(t *testing.T) {
	setHome(t)
	dir := t.TempDir()
	badValue := writeFile(t, dir, "bad.conf", "listenPort=98a76\n")
	badEscape := writeFile(t, dir, "esc.conf", "a=1\nb=\\u12\n")
	gateNoTimeout := writeFile(t, dir, "gate.conf", "routeGateEnable=true\nrouteGateTimeoutSeconds=0\n")
	tests := []struct {
		name string
		args []string
		env  [2]string
		want []string
	}{
		{"missing file", []string{"-c", filepath.Join(dir, "none.conf")}, [2]string{}, []string{"none.conf"}},
		{"file value", []string{"-c", badValue}, [2]string{}, []string{"bad.conf", "listenPort", `"98a76"`}},
		{"file escape", []string{"-c", badEscape}, [2]string{}, []string{"esc.conf", "line 2", "malformed"}},
		{"flag value", []string{"--listen-port", "x"}, [2]string{}, []string{"--listen-port", "listenPort", `"x"`}},
		{"env value", nil, [2]string{"NAMESRV_HTTP_PORT", "80a"}, []string{"NAMESRV_HTTP_PORT", "httpPort", `"80a"`}},
		{"log format", []string{"--log-format", "xml"}, [2]string{}, []string{"--log-format", "xml"}},
		{"log level", []string{"--log-level", "trace"}, [2]string{}, []string{"--log-level", "trace"}},
		{"log level offset", nil, [2]string{"NAMESRV_LOG_LEVEL", "info+2"}, []string{"NAMESRV_LOG_LEVEL"}},
		{"print flag", nil, [2]string{"NAMESRV_PRINT_CONFIG", "maybe"}, []string{"NAMESRV_PRINT_CONFIG", "maybe"}},
		{"gate without timeout", []string{"-c", gateNoTimeout}, [2]string{}, []string{"routeGateTimeoutSeconds", "at least 1 when routeGateEnable"}},
		{"gate timeout from a flag", []string{"--route-gate-enable", "--route-gate-timeout-seconds", "0"}, [2]string{},
			[]string{"routeGateTimeoutSeconds", "at least 1"}},
		{"negative gate timeout", []string{"--route-gate-timeout-seconds", "-1"}, [2]string{}, []string{"routeGateTimeoutSeconds", `"-1"`}},
		{"gate flag value", []string{"--route-gate-enable=yes"}, [2]string{}, []string{"routeGateEnable", `"yes"`}},
		{"an extra port that is no port", []string{"--extra-listen-ports", "9877,x"}, [2]string{}, []string{"extraListenPorts", `"x" is not a port`}},
		{"an extra port out of range", []string{"--extra-listen-ports", "70000"}, [2]string{}, []string{"extraListenPorts", `"70000" is not a port`}},
		{"the listen port again", []string{"--listen-port", "9877", "--extra-listen-ports", "9877"}, [2]string{}, []string{"extraListenPorts", "port 9877 is listed twice or is listenPort"}},
		{"an extra port twice", []string{"--extra-listen-ports", "9000,9000"}, [2]string{}, []string{"extraListenPorts", "listed twice"}},
		{"a bad broker network", []string{"--authz-broker-networks", "10.0.0.0/8, 10.0.0.0/40"}, [2]string{},
			[]string{"authzBrokerNetworks", `entry "10.0.0.0/40"`, "CIDR"}},
		{"an untyped identity", nil, [2]string{"NAMESRV_AUTHZ_ADMIN_IDENTITIES", "operator"},
			[]string{"authzAdminIdentities", `entry "operator"`, `"cn:"`}},
		{"two stars", []string{"--authz-read-identities", "dns:*.*.svc"}, [2]string{}, []string{"authzReadIdentities", "one '*'"}},
		{"a bad read network", []string{"--authz-read-networks", "everyone"}, [2]string{}, []string{"authzReadNetworks", `"everyone"`}},
		{"an admin network", []string{"--authz-admin-networks", "::1/129"}, [2]string{}, []string{"authzAdminNetworks"}},
		{"a broker identity", []string{"--authz-broker-identities", "spiffe://x"}, [2]string{}, []string{"authzBrokerIdentities"}},
		{"a read identity", []string{"--authz-read-identities", "cn:"}, [2]string{}, []string{"authzReadIdentities"}},
		{"an admin identity", []string{"--authz-admin-identities", "ip:1.2.3.4"}, [2]string{}, []string{"authzAdminIdentities"}},
		{"HTTP auth without a credential", []string{"--http-auth-scope", "writes"}, [2]string{},
			[]string{"httpAuthScope", "httpAuthTokenFile"}},
		{"HTTP auth by client certificates without trusted CAs", []string{"--http-auth-scope", "all", "--http-tls-mode", "enforcing",
			"--tls-cert", "/c", "--tls-key", "/k"}, [2]string{}, []string{"httpAuthScope", "tls.server.trustCertPath"}},
		{"HTTP TLS without a certificate", []string{"--http-tls-mode", "permissive"}, [2]string{}, []string{"httpTLSMode", "tls.server.certPath"}},
		{"an unknown HTTP scope", []string{"--http-auth-scope", "mutations"}, [2]string{}, []string{"httpAuthScope", "none, writes, all"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			if tt.env[0] != "" {
				t.Setenv(tt.env[0], tt.env[1])
			}
			_, cfg, _, _, err := resolve(t, tt.args...)
			if err == nil {
				t.Fatalf("no error, cfg %+v", cfg)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestResolveOptions(t *testing.T) {
	setHome(t)
	tests := []struct {
		name   string
		args   []string
		env    [2]string
		print  bool
		format string
		level  slog.Level
	}{
		{"-p", []string{"-p"}, [2]string{}, true, "text", slog.LevelInfo},
		{"--print-config", []string{"--print-config"}, [2]string{}, true, "text", slog.LevelInfo},
		{"print from env", nil, [2]string{"NAMESRV_PRINT_CONFIG", "TRUE"}, true, "text", slog.LevelInfo},
		{"flag false beats env", []string{"-p=false"}, [2]string{"NAMESRV_PRINT_CONFIG", "true"}, false, "text", slog.LevelInfo},
		{"json", []string{"--log-format", "json"}, [2]string{}, false, "json", slog.LevelInfo},
		{"format from env", nil, [2]string{"NAMESRV_LOG_FORMAT", "JSON"}, false, "json", slog.LevelInfo},
		{"debug", []string{"--log-level=debug"}, [2]string{}, false, "text", slog.LevelDebug},
		{"level from env", nil, [2]string{"NAMESRV_LOG_LEVEL", "warn"}, false, "text", slog.LevelWarn},
		{"error", []string{"-log-level", "ERROR"}, [2]string{}, false, "text", slog.LevelError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			if tt.env[0] != "" {
				t.Setenv(tt.env[0], tt.env[1])
			}
			cl, _, _, _, err := resolve(t, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if cl.PrintConfig != tt.print || cl.LogFormat != tt.format || cl.LogLevel != tt.level {
				t.Fatalf("got print=%v format=%q level=%v", cl.PrintConfig, cl.LogFormat, cl.LogLevel)
			}
		})
	}
}

func TestUsage(t *testing.T) {
	for _, arg := range []string{"-h", "--help"} {
		var out bytes.Buffer
		fs, _ := NewCommandLine("namesrv", &out)
		if err := fs.Parse([]string{arg}); !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("Parse(%s) = %v, want flag.ErrHelp", arg, err)
		}
		usage := out.String()
		for _, want := range []string{
			"-c, --config-file FILE", "-p, --print-config", "--bind-address ADDR", "--listen-port PORT",
			"--http-port PORT", "--kv-config-path FILE", "--config-store-path FILE", "--address-file FILE",
			"--log-format text|json", "--log-level LEVEL", "$NAMESRV_BIND_ADDRESS", "$NAMESRV_CONFIG_FILE",
			"--tls-mode MODE", "--tls-cert FILE", "--tls-key FILE", "$NAMESRV_TLS_CERT", "tls.server.*",
			"namesrv -p", "orderMessageEnable", "flag > environment > config file > default",
		} {
			if !strings.Contains(usage, want) {
				t.Errorf("%s: usage lacks %q:\n%s", arg, want, usage)
			}
		}
	}
}

// TestResolveHTTPAuth sets the HTTP properties that only work together.
func TestResolveHTTPAuth(t *testing.T) {
	setHome(t)
	clearEnv(t)
	t.Setenv("NAMESRV_HTTP_AUTH_SCOPE", "writes")
	t.Setenv("NAMESRV_HTTP_AUTH_TOKEN_FILE", "/token")
	_, cfg, _, _, err := resolve(t)
	if err != nil || cfg.HTTPAuthScope != "writes" || cfg.HTTPAuthTokenFile != "/token" {
		t.Fatalf("%v %+v", err, cfg)
	}
	clearEnv(t)
	_, cfg, _, _, err = resolve(t, "--http-auth-scope", "ALL", "--http-tls-mode", "permissive",
		"--tls-cert", "/c", "--tls-key", "/k", "--tls-trust-cert", "/ca")
	if err != nil || cfg.HTTPAuthScope != "all" || cfg.HTTPTLSMode != "permissive" {
		t.Fatalf("%v %+v", err, cfg)
	}
}
