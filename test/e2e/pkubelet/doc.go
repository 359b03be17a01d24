// Package pkubelet is a test-only "process kubelet": it registers a fake Node
// with a real API server and runs the containers of the Pods bound to it as
// local processes, so that the real kube-controller-manager (StatefulSet,
// EndpointSlice, garbage collector, ...) can be exercised end to end without a
// container runtime.
//
// What it does, mirroring the kubelet where tests can observe the difference:
//   - keeps a Ready Node (no not-ready taint, status re-posted periodically) and,
//     unless disabled, binds unscheduled Pods to it;
//   - gives every Pod its own address (<prefix>N) and runs each container's
//     command with the Pod's environment resolved the kubelet's way ($(VAR)
//     expansion, fieldRef, resourceFieldRef, configMap/secret refs, envFrom);
//   - maps volumes to host directories: PVCs outlive the Pod, configMap and
//     secret volumes are projected file by file and refreshed atomically (the
//     kubelet's "..data" symlink swap) when the object changes;
//   - rewrites mount paths found in argv and env values to those directories;
//   - runs startup, readiness and liveness probes (HTTP GET, TCP, exec) with
//     capped periods, restarts containers with back-off, writes Pod status,
//     and performs the kubelet's final delete after a graceful termination;
//   - optionally maintains a hosts file with the per-pod DNS names of Pods that
//     have a hostname and a subdomain (box mode, see hack/e2e-box.sh).
//
// Ignored on purpose: securityContext, resources (except for resourceFieldRef),
// init and sidecar containers, image pulls, gRPC probes, hostPath semantics
// (every volume type other than PVC, configMap and secret is an empty per-Pod
// directory), and the kubelet API (no logs, exec or port-forward via kubectl;
// read the log files instead).
package pkubelet
