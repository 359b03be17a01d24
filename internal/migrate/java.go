package migrate

import (
	"errors"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/namesrv/config"
)

// javaOptVars are the variables the NameService's image appends to the
// JVM's command line (runserver.sh): JAVA_OPT first, JAVA_OPT_EXT last, so
// a -D of JAVA_OPT_EXT wins.
var javaOptVars = []string{"JAVA_OPT", "JAVA_OPT_EXT"}

// jvmVars are the other variables that image reads, all about the JVM or
// the Java install.
var jvmVars = []string{"MAX_HEAP_SIZE", "HEAP_NEWSIZE", "JAVA_HOME", "ROCKETMQ_HOME", "CLASSPATH"}

// systemProperties are the JVM system properties the Java NameServer reads
// as NameServer settings that namesrv has under a property name
// (NettySystemConfig, NettyDecoder). The Java NameServer reads its
// NamesrvConfig and NettyServerConfig properties from its -c file only,
// which a NameService has no way to pass.
var systemProperties = map[string]string{
	"com.rocketmq.remoting.frameMaxLength":     "frameMaxLength",
	"com.rocketmq.remoting.socket.sndbuf.size": "serverSocketSndBufSize",
	"com.rocketmq.remoting.socket.rcvbuf.size": "serverSocketRcvBufSize",
}

// env sorts the NameService's environment: -D options of the JVM that
// namesrv has as properties go to spec.config, everything else is reported.
func (r *Result) env(env []corev1.EnvVar, c *v1alpha1.NameServerClusterSpec) {
	byName := map[string]corev1.EnvVar{}
	for _, e := range env {
		byName[e.Name] = e
	}
	for _, name := range javaOptVars {
		e, ok := byName[name]
		if !ok {
			continue
		}
		if e.ValueFrom != nil {
			r.skip("env "+name+" (valueFrom)", "JVM options read from elsewhere at start; this converter does not read them. namesrv is not a JVM: look for -D options that name a NameServer setting (spec.config) by hand.")
			continue
		}
		r.javaOptions(name, e.Value, c)
	}
	for _, e := range env {
		switch {
		case slices.Contains(javaOptVars, e.Name):
		case slices.Contains(jvmVars, e.Name):
			r.skip("env "+e.Name, "a setting of the JVM or the Java install; namesrv is a Go program: size it with spec.resources (GOMEMLIMIT follows the memory limit).")
		default:
			r.skip("env "+e.Name, "the Java image's environment. namesrv takes its settings from spec.config; add the variable to spec.env if something else in the pod needs it.")
		}
	}
}

// javaOptions reads JVM options from the variable name: -D system
// properties the Java NameServer honours as settings namesrv has go to
// spec.config, the rest is reported.
func (r *Result) javaOptions(name, value string, c *v1alpha1.NameServerClusterSpec) {
	var jvm []string
	for _, tok := range strings.Fields(value) {
		def, ok := strings.CutPrefix(tok, "-D")
		if !ok {
			jvm = append(jvm, tok)
			continue
		}
		key, val, _ := strings.Cut(def, "=")
		field := "env " + name + " " + tok
		switch prop, mapped := systemProperties[key]; {
		case mapped:
			// Check the value as namesrv would at start, so that the
			// result never holds a value that stops the pods.
			if _, err := config.Default().Apply([]config.Property{{Key: prop, Value: val}}); err != nil {
				var ve *config.ValueError
				if errors.As(err, &ve) {
					err = ve.Err
				}
				r.skip(field, "the same setting as namesrv's %s, but %q is not a valid value: %v.", prop, val, err)
				continue
			}
			if c.Config == nil {
				c.Config = map[string]v1alpha1.ConfigValue{}
			}
			c.Config[prop] = v1alpha1.ConfigValue(val)
			r.note("spec.config", "%s: from %s %s, the same setting.", prop, name, tok)
		case strings.HasPrefix(key, "tls."):
			r.skip(field, "TLS of the remoting port: set spec.tls (a Secret with the certificate); the operator renders the tls.server.* properties itself.")
		case key == "user.home" || key == "rocketmq.home.dir":
			r.skip(field, "a path inside the Java image; the operator lays out the peers' files itself.")
		default:
			if _, known := config.LookupKey(key); known {
				r.skip(field, "the Java NameServer reads its NameServer properties from its -c file, not from system properties, so this had no effect; set spec.config.%s if you want it.", key)
			} else {
				r.skip(field, "a JVM system property; namesrv is not a JVM.")
			}
		}
	}
	if len(jvm) > 0 {
		r.skip("env "+name+" "+strings.Join(jvm, " "), "JVM options; namesrv is a Go program: size it with spec.resources (GOMEMLIMIT follows the memory limit).")
	}
}
