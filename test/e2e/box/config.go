package box

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The box's addresses and names. Everything lives in the box's own network
// namespace, so they are fixed.
const (
	// NodeName is the one Node.
	NodeName = "e2e-node"
	// NodeIP is the node's address (a veth inside the namespace): where the
	// API server, the kubelet and CoreDNS listen.
	NodeIP = "10.250.0.1"
	// PodCIDR is the CNI bridge's range.
	PodCIDR = "10.244.0.0/24"
	// ServiceCIDR is the Services' range; its first address is the
	// kubernetes Service's.
	ServiceCIDR  = "10.96.0.0/16"
	apiServiceIP = "10.96.0.1"
	// ClusterDomain is the DNS suffix of Services.
	ClusterDomain = "cluster.local"

	apiPort      = 6443
	etcdPort     = 2379
	etcdPeerPort = 2380
	kubeletPort  = 10250
)

// containerdConfig is containerd 1.6's configuration: state and sockets in
// the work directory, the CRI plugin with runc (cgroupfs: there is no
// systemd) and the CNI bridge.
func containerdConfig(dir, cniConf, pauseImage string) string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = %[3]q
[ttrpc]
  address = %[4]q
[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q
[plugins."io.containerd.grpc.v1.cri"]
  # Imported before the node starts (Options.Images); never pulled.
  sandbox_image = %[6]q
  # Pod network namespaces are pinned under the state directory, not in
  # /var/run/netns.
  netns_mounts_under_state_dir = true
  # runc cannot lower oom_score_adj without CAP_SYS_RESOURCE, which
  # machines without it (VMs with a reduced bounding set) lack: clamp it to
  # containerd's own.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[7]q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), filepath.Join(dir, "containerd.sock"),
		filepath.Join(dir, "containerd.sock.ttrpc"), filepath.Join(dir, "opt"), pauseImage, cniConf)
}

// cniConfig is the pods' network: a bridge with the node as gateway and
// host-local addresses. containerd adds the loopback plugin itself.
const cniConfig = `{"cniVersion":"1.0.0","name":"e2e","plugins":[
 {"type":"bridge","bridge":"cni0","isGateway":true,"ipMasq":false,"hairpinMode":true,
  "ipam":{"type":"host-local","ranges":[[{"subnet":"` + PodCIDR + `"}]],"routes":[{"dst":"0.0.0.0/0"}]}}]}
`

// kubeletConfig is the KubeletConfiguration. What differs from a
// production node, and why:
//   - failCgroupV1: false: machines with cgroup v1 only run it (the
//     kubelet refuses v1 unless told, and warns that v1 is deprecated);
//   - cgroupDriver cgroupfs and cgroupRoot: no systemd, and every pod cgroup
//     under the run's own root, which Stop sweeps;
//   - syncFrequency 10s instead of 1m: mounted ConfigMaps (the address
//     lists) refresh within seconds, so scenarios about list changes do not
//     wait minutes; pod probes and the operator's timing are untouched;
//   - no image garbage collection and no eviction: the imported images
//     cannot be pulled again, and a full CI disk must not evict the pods
//     under test;
//   - anonymous access to the kubelet's API, which only the namespace can
//     reach: the API server's logs, exec and port-forward use it.
func kubeletConfig(sock, cgroupRoot, volumePluginDir string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %q
containerRuntimeEndpoint: unix://%s
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
failSwapOn: false
resolvConf: ""
clusterDomain: %s
clusterDNS: [%q]
registerNode: true
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {}
enforceNodeAllocatable: ["pods"]
syncFrequency: 10s
volumePluginDir: %q
`, cgroupRoot, sock, NodeIP, kubeletPort, ClusterDomain, NodeIP, volumePluginDir)
}

// corefile serves the cluster domain from the API and nothing else.
func corefile(kubeconfig string) string {
	return fmt.Sprintf(`%[1]s:53 {
    bind %[2]s
    kubernetes %[1]s {
        kubeconfig %[3]s e2e
    }
}
.:53 {
    bind %[2]s
    hosts {
        fallthrough
    }
}
`, ClusterDomain, NodeIP, kubeconfig)
}

// resolvConf is the node's (the test process's) resolver: cluster DNS.
func resolvConf() string {
	return "nameserver " + NodeIP + "\nsearch svc." + ClusterDomain + " " + ClusterDomain + "\n"
}

// writeFiles writes name -> content under dir.
func writeFiles(dir string, files map[string]string) error {
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("box: %w", err)
		}
		if !strings.HasSuffix(content, "\n") {
			content += "\n"
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return fmt.Errorf("box: %w", err)
		}
	}
	return nil
}
