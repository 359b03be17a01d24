package pkubelet

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// Config configures a Kubelet. Client and RootDir are required.
type Config struct {
	Client kubernetes.Interface
	// RootDir holds pods/<ns>_<pod>_<uid>/ (cwd, volumes, <container>.log)
	// and pvc/<ns>/<claim>/.
	RootDir string
	// NodeName defaults to "fake-node".
	NodeName string

	// IPPrefix is what processes bind: host number N gives IPPrefix+N, with
	// N in 2..254. Default "127.0.0." (mapped mode).
	IPPrefix string
	// ReportedIPPrefix is what Pod status shows. The API server rejects
	// loopback addresses in EndpointSlices, so it defaults to "10.244.0."
	// when IPPrefix is loopback and to IPPrefix otherwise (box mode, where
	// the box routes 10.244.0.0/16 to lo).
	ReportedIPPrefix string
	// HostsFile, when set, is kept listing the per-pod DNS names of Pods
	// with a hostname and a subdomain (box mode: it is bind-mounted over
	// /etc/hosts). It is rewritten in place, never replaced.
	HostsFile string
	// ClusterDomain defaults to "cluster.local".
	ClusterDomain string

	// Resolver turns a container into a host command line.
	Resolver Resolver
	// ExtraEnv, when set, adds variables after the container's own env, with
	// the same $(VAR) expansion. Tests use it for settings that production
	// manifests must not carry, e.g. NAMESRV_BIND_ADDRESS=$(PKUBELET_POD_IP).
	ExtraEnv func(pod *corev1.Pod, c *corev1.Container) []corev1.EnvVar
	// InheritEnv names host variables passed to every process; default PATH.
	// A container does not see the test's environment otherwise.
	InheritEnv []string

	// ProbePeriodCap caps periodSeconds of every probe (default 1s): real
	// periods of 10s would make each ordered Pod take 10s.
	ProbePeriodCap time.Duration
	// ProbeInitialDelayCap caps initialDelaySeconds (default ProbePeriodCap).
	ProbeInitialDelayCap time.Duration
	// PreStopSleepCap caps a preStop sleep action (0: as the pod says),
	// for the same reason.
	PreStopSleepCap time.Duration

	// DisableBinder leaves unscheduled Pods alone (for a real kube-scheduler).
	DisableBinder bool
	// NodeStatusPeriod is how often the Node status is re-posted (default 10s).
	NodeStatusPeriod time.Duration
	// Logger receives the kubelet's own log; default: discarded.
	Logger *slog.Logger
}

func (c *Config) withDefaults() (Config, error) {
	out := *c
	if out.Client == nil {
		return out, errors.New("pkubelet: Config.Client is required")
	}
	if out.RootDir == "" {
		return out, errors.New("pkubelet: Config.RootDir is required")
	}
	if out.NodeName == "" {
		out.NodeName = "fake-node"
	}
	if out.IPPrefix == "" {
		out.IPPrefix = "127.0.0."
	}
	if out.ReportedIPPrefix == "" {
		out.ReportedIPPrefix = out.IPPrefix
		if strings.HasPrefix(out.IPPrefix, "127.") {
			out.ReportedIPPrefix = "10.244.0."
		}
	}
	for _, p := range []string{out.IPPrefix, out.ReportedIPPrefix} {
		if strings.Count(p, ".") != 3 || !strings.HasSuffix(p, ".") {
			return out, fmt.Errorf("pkubelet: IP prefix %q must be three octets and a dot", p)
		}
	}
	if out.ClusterDomain == "" {
		out.ClusterDomain = "cluster.local"
	}
	if out.InheritEnv == nil {
		out.InheritEnv = []string{"PATH"}
	}
	if out.ProbePeriodCap <= 0 {
		out.ProbePeriodCap = time.Second
	}
	if out.ProbeInitialDelayCap <= 0 {
		out.ProbeInitialDelayCap = out.ProbePeriodCap
	}
	if out.NodeStatusPeriod <= 0 {
		out.NodeStatusPeriod = 10 * time.Second
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return out, nil
}

// inheritedEnv returns the host variables a process starts with.
func (c *Config) inheritedEnv() map[string]string {
	out := map[string]string{}
	for _, n := range c.InheritEnv {
		if v, ok := os.LookupEnv(n); ok {
			out[n] = v
		}
	}
	return out
}
