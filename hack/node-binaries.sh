#!/usr/bin/env bash
# Makes sure the node binaries of the end-to-end suite exist (kubelet,
# kube-scheduler, kube-proxy and CoreDNS), and prints the directory holding
# them on stdout. The suite's control plane comes from hack/envtest-binaries.sh;
# containerd, runc and the CNI plugins from Debian (hack/node-packages.sh).
#
# They are built from the Go module proxy, pinned by
# hack/envtest/{k8s,coredns}/go.{mod,sum}, into a directory of their own beside
# envtest's in the same store outside the clone (later clones reuse it), so
# that building them never replaces a control plane another suite is running.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
K8S_MOD=$HERE/envtest/k8s
COREDNS_MOD=$HERE/envtest/coredns

modver() { awk -v m="$1" '{for (i = 1; i < NF; i++) if ($i == m && $(i+1) ~ /^v/) {print $(i+1); exit}}' "$2"; }
K8S_VERSION=$(modver k8s.io/kubernetes "$K8S_MOD/go.mod")
COREDNS_VERSION=$(modver github.com/coredns/coredns "$COREDNS_MOD/go.mod")
[[ -n $K8S_VERSION && -n $COREDNS_VERSION ]] || { echo "node-binaries: cannot read pinned versions" >&2; exit 1; }
K8S_MINOR=$(echo "$K8S_VERSION" | cut -d. -f2)

GOOS=$(go env GOOS)
GOARCH=$(go env GOARCH)
STORE=${ENVTEST_STORE:-${XDG_DATA_HOME:-$HOME/.local/share}/kubebuilder-envtest}
DEST=$STORE/node/${K8S_VERSION#v}-coredns-${COREDNS_VERSION#v}-$GOOS-$GOARCH

log() { echo "node-binaries: $*" >&2; }

complete() {
  local b
  for b in kubelet kube-scheduler kube-proxy; do
    [[ -x $DEST/$b ]] || return 1
    [[ $("$DEST/$b" --version 2>/dev/null) == "Kubernetes $K8S_VERSION" ]] || return 1
  done
  [[ -x $DEST/coredns ]] || return 1
  "$DEST/coredns" -version 2>/dev/null | grep -x "CoreDNS-${COREDNS_VERSION#v}" >/dev/null || return 1
}

if complete; then
  echo "$DEST"; exit 0
fi

log "building kubelet, kube-scheduler, kube-proxy $K8S_VERSION and CoreDNS $COREDNS_VERSION from source (empty Go caches: ~5 min on 2 cores)"
mkdir -p "$STORE/node"
TMP=$(mktemp -d "$STORE/node/.build.XXXXXX"); chmod 755 "$TMP"
trap 'chmod -R u+w "$TMP" 2>/dev/null; rm -rf "$TMP"' EXIT

LD="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LD+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$K8S_MINOR"
  LD+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done

export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=readonly"
(cd "$K8S_MOD" && go build -trimpath -ldflags "$LD" -o "$TMP/" \
  k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-proxy) >&2
(cd "$COREDNS_MOD" && go build -trimpath -ldflags "-s -w" -o "$TMP/coredns" github.com/coredns/coredns) >&2

if [[ -d $DEST ]]; then chmod -R u+w "$DEST"; rm -rf "$DEST"; fi
mv "$TMP" "$DEST"
trap - EXIT
complete || { log "built binaries failed the version check in $DEST"; exit 1; }
log "ready: $DEST"
echo "$DEST"
