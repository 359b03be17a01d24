package config

import (
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The keys of Java's NamesrvConfig and NettyServerConfig
// with the Java defaults, plus the Go additions.
var javaDefaults = map[string]string{
	"rocketmqHome":                         "/opt/rocketmq",
	"kvConfigPath":                         "HOME/namesrv/kvConfig.json",
	"configStorePath":                      "HOME/namesrv/namesrv.properties",
	"productEnvName":                       "center",
	"clusterTest":                          "false",
	"orderMessageEnable":                   "false",
	"configBlackList":                      "configBlackList;configStorePath;kvConfigPath",
	"returnOrderTopicConfigToBroker":       "true",
	"clientRequestThreadPoolNums":          "8",
	"defaultThreadPoolNums":                "16",
	"clientRequestThreadPoolQueueCapacity": "50000",
	"defaultThreadPoolQueueCapacity":       "10000",
	"scanNotActiveBrokerInterval":          "5000",
	"unRegisterBrokerQueueCapacity":        "3000",
	"supportActingMaster":                  "false",
	"enableAllTopicList":                   "true",
	"enableTopicList":                      "true",
	"notifyMinBrokerIdChanged":             "false",
	"enableControllerInNamesrv":            "false",
	"needWaitForService":                   "false",
	"waitSecondsForService":                "45",
	"deleteTopicWithBrokerRegistration":    "false",

	"bindAddress":                        "0.0.0.0",
	"listenPort":                         "9876",
	"serverWorkerThreads":                "8",
	"serverCallbackExecutorThreads":      "0",
	"serverSelectorThreads":              "3",
	"serverOnewaySemaphoreValue":         "256",
	"serverAsyncSemaphoreValue":          "64",
	"serverChannelMaxIdleTimeSeconds":    "120",
	"serverSocketSndBufSize":             "0",
	"serverSocketRcvBufSize":             "0",
	"writeBufferHighWaterMark":           "0",
	"writeBufferLowWaterMark":            "0",
	"serverSocketBacklog":                "1024",
	"serverNettyWorkerGroupEnable":       "true",
	"serverPooledByteBufAllocatorEnable": "true",
	"enableShutdownGracefully":           "false",
	"shutdownWaitTimeSeconds":            "30",
	"useEpollNativeSelector":             "false",

	"frameMaxLength":      "16777216",
	"httpPort":            "8080",
	"addressFile":         "",
	"maxInflatedBodySize": "33554432",
	"brokerAddressFile":   "",
	"extraListenPorts":    "",

	"routeGateEnable":         "false",
	"routeGateTimeoutSeconds": "90",
	"kvDeclaredFile":          "",
	"liveBrokersPath":         "",

	"maxConnections":            "10000",
	"frameReadTimeoutMillis":    "30000",
	"writeTimeoutMillis":        "30000",
	"maxInflightPerConnection":  "256",
	"tlsHandshakeTimeoutMillis": "10000",

	"tls.server.mode":             "permissive",
	"tls.server.certPath":         "",
	"tls.server.keyPath":          "",
	"tls.server.trustCertPath":    "",
	"tls.server.need.client.auth": "none",

	"authzEnable":              "false",
	"authzBrokerIdentities":    "",
	"authzBrokerNetworks":      "",
	"authzAdminIdentities":     "",
	"authzAdminNetworks":       "",
	"authzReadIdentities":      "",
	"authzReadNetworks":        "",
	"authzBrokerNameOwnership": "false",
	"httpAuthScope":            "none",
	"httpAuthTokenFile":        "",
	"httpTLSMode":              "disabled",
}

func setHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("ROCKETMQ_HOME", "/opt/rocketmq")
	return home
}

func TestDefaultMatchesJava(t *testing.T) {
	home := setHome(t)
	c := Default()
	got := map[string]string{}
	for _, p := range c.Properties() {
		got[p.Key] = p.Value
	}
	want := map[string]string{}
	for k, v := range javaDefaults {
		want[k] = strings.Replace(v, "HOME", home, 1)
	}
	if !reflect.DeepEqual(got, want) {
		for k := range want {
			if got[k] != want[k] {
				t.Errorf("%s = %q, want %q", k, got[k], want[k])
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("unexpected key %s", k)
			}
		}
	}
	if c.ListenPort != 9876 || c.ScanNotActiveBrokerInterval != 5000 || !c.EnableAllTopicList || c.KVConfigPath != filepath.Join(home, "namesrv", "kvConfig.json") {
		t.Fatalf("typed fields disagree with properties: %+v", c)
	}
}

func TestDefaultWithoutRocketmqHome(t *testing.T) {
	t.Setenv("ROCKETMQ_HOME", "")
	if got := Default().RocketmqHome; got != "" {
		t.Fatalf("rocketmqHome = %q, want empty", got)
	}
}

func TestKeysDescribeEveryProperty(t *testing.T) {
	keys := Keys()
	if len(keys) != len(javaDefaults) {
		t.Fatalf("%d keys, want %d", len(keys), len(javaDefaults))
	}
	if !slices.IsSortedFunc(keys, func(a, b KeyInfo) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatal("Keys not sorted")
	}
	for _, k := range keys {
		if k.Doc == "" || k.Kind == "" {
			t.Errorf("%s: incomplete %+v", k.Name, k)
		}
		switch k.Effect {
		case EffectLive, EffectRestart, EffectNone:
		default:
			t.Errorf("%s: effect %q", k.Name, k.Effect)
		}
	}
	for name, want := range map[string]Effect{
		"orderMessageEnable": EffectLive, "listenPort": EffectRestart, "bindAddress": EffectRestart,
		"defaultThreadPoolNums": EffectNone, "scanNotActiveBrokerInterval": EffectLive, "serverSelectorThreads": EffectNone, "clusterTest": EffectNone,
	} {
		k, ok := LookupKey(name)
		if !ok || k.Effect != want {
			t.Errorf("LookupKey(%s) = %+v, %v; want effect %s", name, k, ok, want)
		}
	}
	if _, ok := LookupKey("noSuchKey"); ok {
		t.Error("LookupKey found an unknown key")
	}
	if k, _ := LookupKey("scanNotActiveBrokerInterval"); k.Kind != KindLong {
		t.Errorf("scanNotActiveBrokerInterval kind %s, want long", k.Kind)
	}
}

func TestApply(t *testing.T) {
	setHome(t)
	c := Default()
	unknown, err := c.Apply(props(
		"listenPort", "9877",
		"orderMessageEnable", "TRUE",
		"enableTopicList", "False",
		"scanNotActiveBrokerInterval", "8589934592",
		"productEnvName", "  \tprod \n",
		"bindAddress", " 10.0.0.1 ",
		"waitSecondsForService", " 7 ",
		"connectTimeoutMillis", "3000",
		"zzz", "1",
		"clientWorkerThreads", "4",
	))
	if err != nil {
		t.Fatal(err)
	}
	if want := props("connectTimeoutMillis", "3000", "zzz", "1", "clientWorkerThreads", "4"); !reflect.DeepEqual(unknown, want) {
		t.Fatalf("unknown = %q, want %q", unknown, want)
	}
	if c.ListenPort != 9877 || !c.OrderMessageEnable || c.EnableTopicList || c.ScanNotActiveBrokerInterval != 1<<33 ||
		c.ProductEnvName != "prod" || c.BindAddress != "10.0.0.1" || c.WaitSecondsForService != 7 {
		t.Fatalf("not applied: %+v", c)
	}
	if v, ok := c.Get("orderMessageEnable"); !ok || v != "true" {
		t.Fatalf("Get = %q, %v", v, ok)
	}
	if _, ok := c.Get("zzz"); ok {
		t.Fatal("Get knows an unknown key")
	}
}

func TestApplyRejectsInvalidValues(t *testing.T) {
	setHome(t)
	tests := []struct{ key, value string }{
		{"listenPort", "abc"},
		{"listenPort", "98 76"},
		{"listenPort", "0x10"},
		{"listenPort", "65536"},
		{"listenPort", "-1"},
		{"httpPort", "70000"},
		{"defaultThreadPoolNums", "2147483648"},
		{"defaultThreadPoolNums", "0"},
		{"scanNotActiveBrokerInterval", "0"},
		{"scanNotActiveBrokerInterval", "9223372036854775808"},
		{"frameMaxLength", "0"},
		{"orderMessageEnable", "yes"},
		{"orderMessageEnable", "1"},
		{"orderMessageEnable", ""},
		{"serverSocketSndBufSize", "-5"},
		{"maxConnections", "-1"},
		{"maxInflightPerConnection", "0"},
		{"tlsHandshakeTimeoutMillis", "0"},
		{"writeTimeoutMillis", "-1"},
		{"tls.server.mode", "strict"},
		{"tls.server.mode", ""},
		{"tls.server.need.client.auth", "true"},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			c := Default()
			before := *c
			_, err := c.Apply(props("orderMessageEnable", "true", tt.key, tt.value, "listenPort", "1"))
			var ve *ValueError
			if !errors.As(err, &ve) || ve.Key != tt.key || ve.Value != tt.value {
				t.Fatalf("Apply error = %v, want ValueError for %s=%q", err, tt.key, tt.value)
			}
			if !strings.Contains(err.Error(), tt.key) || !strings.Contains(err.Error(), `"`+tt.value+`"`) {
				t.Fatalf("error %q does not name the key and the value", err)
			}
			if *c != before {
				t.Fatal("a rejected Apply changed the config")
			}
		})
	}
}

func TestEnumValuesIgnoreCaseAndAreStoredAsDocumented(t *testing.T) {
	c := Default()
	if _, err := c.Apply(props("tls.server.mode", " Enforcing ", "tls.server.need.client.auth", "REQUIRE")); err != nil {
		t.Fatal(err)
	}
	if c.TLSServerMode != "enforcing" || c.TLSServerNeedClientAuth != "require" {
		t.Fatalf("mode %q client auth %q", c.TLSServerMode, c.TLSServerNeedClientAuth)
	}
	k, _ := LookupKey("tls.server.mode")
	if !slices.Equal(k.Enum, []string{"disabled", "permissive", "enforcing"}) {
		t.Fatalf("enum %q", k.Enum)
	}
	_, err := c.Apply(props("tls.server.mode", "on"))
	if err == nil || !strings.Contains(err.Error(), "disabled, permissive, enforcing") {
		t.Fatalf("error %v does not list the allowed values", err)
	}
}

func TestTextShape(t *testing.T) {
	setHome(t)
	c := Default()
	c.RocketmqHome = `C:\rocketmq`
	extra := props("zExtra", "1", "aExtra", "two words", "listenPort", "shadowed")
	text := Text(c, extra)
	lines := strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")
	if len(lines) != len(javaDefaults)+2 {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(javaDefaults)+2, text)
	}
	var keys []string
	for _, l := range lines {
		k, _, ok := strings.Cut(l, "=")
		if !ok {
			t.Fatalf("line %q has no '='", l)
		}
		keys = append(keys, k)
	}
	if !slices.IsSorted(keys) {
		t.Fatalf("keys not sorted: %v", keys)
	}
	for _, want := range []string{"aExtra=two words", "zExtra=1", "listenPort=9876", `rocketmqHome=C:\\rocketmq`, "bindAddress=0.0.0.0"} {
		if !slices.Contains(lines, want) {
			t.Errorf("missing line %q in\n%s", want, text)
		}
	}
	back, err := ParseProperties(text)
	if err != nil {
		t.Fatal(err)
	}
	round := Default()
	unknown, err := round.Apply(back)
	if err != nil {
		t.Fatal(err)
	}
	if *round != *c || !reflect.DeepEqual(unknown, props("aExtra", "two words", "zExtra", "1")) {
		t.Fatalf("text does not read back: %+v, unknown %q", round, unknown)
	}
}
