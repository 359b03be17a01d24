package box

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// boxEnv is set by hack/e2e-box.sh once it has made the namespaces.
const boxEnv = "E2E_BOX"

// ErrNotInBox is returned by Start outside hack/e2e-box.sh.
var ErrNotInBox = errors.New("box: not inside hack/e2e-box.sh's namespaces (" + boxEnv + " unset); run `make test-e2e`")

// checkPrivate refuses to touch anything unless this process runs as root
// in a network namespace of its own: one whose only link is lo, which is
// what a new namespace has and a host never does.
func checkPrivate() error {
	if os.Getenv(boxEnv) != "1" {
		return ErrNotInBox
	}
	if os.Geteuid() != 0 {
		return errors.New("box: the node needs root (the kubelet and runc do)")
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return fmt.Errorf("box: %w", err)
	}
	for _, i := range ifs {
		if i.Name != "lo" {
			return fmt.Errorf("box: the network namespace has link %s besides lo: not a private namespace, refusing to set up a node in it", i.Name)
		}
	}
	return nil
}

// setupNetwork gives the namespace the node's address on one end of a veth
// pair (the kernel may lack the dummy link type) and a default route through
// it, so that connections to Service addresses leave a socket and meet
// kube-proxy's rules. Nothing leaves the namespace: both ends are in it.
func setupNetwork() error {
	steps := [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", "node0", "type", "veth", "peer", "name", "node0p"},
		{"addr", "add", NodeIP + "/24", "dev", "node0"},
		{"link", "set", "node0", "up"},
		{"link", "set", "node0p", "up"},
		{"route", "add", "default", "dev", "node0"},
	}
	for _, s := range steps {
		if _, err := run("ip", s...); err != nil {
			return fmt.Errorf("box: network: %w", err)
		}
	}
	return nil
}

// hostPaths are the directories the kubelet, containerd and the CNI plugins
// use whatever their configuration says (the kubelet's device-plugin
// socket, /var/log/pods and /var/log/containers, containerd 1.6's shim
// sockets under /run/containerd, the CNI cache and address store under
// /var/lib/cni). The mount namespace sees a directory of the run in place of
// each; the host's stay as they are.
var hostPaths = []string{"/run", "/var/lib", "/var/log"}

// kubeletTunables are the kernel settings the kubelet writes at start when
// they differ (vm.overcommit_memory, kernel.panic...): they are not
// namespaced, so writing them would change the whole machine.
var kubeletTunables = map[string]string{
	"vm/overcommit_memory":      "1",
	"vm/panic_on_oom":           "0",
	"kernel/panic":              "10",
	"kernel/panic_on_oops":      "1",
	"kernel/keys/root_maxkeys":  "1000000",
	"kernel/keys/root_maxbytes": "25000000",
}

// setupMounts binds the run's directories over hostPaths and over the
// tunables the kubelet would change (files holding the values it wants, so
// it finds them set and writes nothing), makes the kubelet's root a shared
// mount (volume mounts propagate into pods), and points the resolver at
// cluster DNS.
func setupMounts(work string) error {
	root := filepath.Join(work, "root")
	for _, p := range hostPaths {
		dir := filepath.Join(root, strings.ReplaceAll(strings.TrimPrefix(p, "/"), "/", "-"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("box: %w", err)
		}
		if err := syscall.Mount(dir, p, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("box: binding %s over %s: %w", dir, p, err)
		}
	}
	kubelet := "/var/lib/kubelet"
	if err := os.MkdirAll(kubelet, 0o750); err != nil {
		return fmt.Errorf("box: %w", err)
	}
	if err := syscall.Mount(kubelet, kubelet, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("box: binding %s: %w", kubelet, err)
	}
	if err := syscall.Mount("", kubelet, "", syscall.MS_SHARED|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("box: making %s shared: %w", kubelet, err)
	}
	sysctl := filepath.Join(work, "sysctl")
	if err := os.MkdirAll(sysctl, 0o755); err != nil {
		return fmt.Errorf("box: %w", err)
	}
	for key, want := range kubeletTunables {
		p := filepath.Join("/proc/sys", key)
		cur, err := os.ReadFile(p)
		if err != nil || strings.TrimSpace(string(cur)) == want {
			continue
		}
		f := filepath.Join(sysctl, strings.ReplaceAll(key, "/", "."))
		if err := os.WriteFile(f, []byte(want+"\n"), 0o644); err != nil {
			return fmt.Errorf("box: %w", err)
		}
		if err := syscall.Mount(f, p, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("box: binding over %s: %w", p, err)
		}
	}
	resolv := filepath.Join(work, "resolv.conf")
	if err := os.WriteFile(resolv, []byte(resolvConf()), 0o644); err != nil {
		return fmt.Errorf("box: %w", err)
	}
	if err := syscall.Mount(resolv, "/etc/resolv.conf", "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("box: binding over /etc/resolv.conf: %w", err)
	}
	return nil
}
