#!/usr/bin/env bash
# Makes sure the control-plane binaries used by the envtest and end-to-end suites
# (kube-apiserver, etcd, kubectl, kube-controller-manager) exist, and prints the
# directory holding them (the value for KUBEBUILDER_ASSETS) on stdout.
#
# Order: 1) already in the store -> done; 2) setup-envtest download (only when
# ENVTEST_TRY_DOWNLOAD=1 and $SETUP_ENVTEST is executable); 3) build them from
# source through the Go module proxy, pinned by hack/envtest/{k8s,etcd}/go.{mod,sum}.
# The store layout is setup-envtest's own (<store>/k8s/<ver>-<os>-<arch>/), and the
# store lives outside the clone so that later clones on the same machine reuse it.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
K8S_MOD=$HERE/envtest/k8s
ETCD_MOD=$HERE/envtest/etcd

modver() { awk -v m="$1" '{for (i = 1; i < NF; i++) if ($i == m && $(i+1) ~ /^v/) {print $(i+1); exit}}' "$2"; }
K8S_VERSION=$(modver k8s.io/kubernetes "$K8S_MOD/go.mod")
ETCD_VERSION=$(modver go.etcd.io/etcd/server/v3 "$ETCD_MOD/go.mod")
[[ -n $K8S_VERSION && -n $ETCD_VERSION ]] || { echo "envtest-binaries: cannot read pinned versions" >&2; exit 1; }
K8S_MINOR=$(echo "$K8S_VERSION" | cut -d. -f2)

GOOS=$(go env GOOS)
GOARCH=$(go env GOARCH)
STORE=${ENVTEST_STORE:-${XDG_DATA_HOME:-$HOME/.local/share}/kubebuilder-envtest}
DEST=$STORE/k8s/${K8S_VERSION#v}-$GOOS-$GOARCH

log() { echo "envtest-binaries: $*" >&2; }

# kube-controller-manager is not part of setup-envtest's archives; it is only
# needed by the end-to-end suite, so a store without it is completed by a build.
complete() {
  local b
  for b in kube-apiserver etcd kubectl kube-controller-manager; do
    [[ -x $DEST/$b ]] || return 1
  done
  [[ $("$DEST/kube-apiserver" --version 2>/dev/null) == "Kubernetes $K8S_VERSION" ]] || return 1
  [[ $("$DEST/kube-controller-manager" --version 2>/dev/null) == "Kubernetes $K8S_VERSION" ]] || return 1
  # grep reads all of etcd's output: grep -q would exit at the first match
  # and, under pipefail, etcd's SIGPIPE would fail the check and rebuild.
  "$DEST/etcd" --version 2>/dev/null | grep -x "etcd Version: ${ETCD_VERSION#v}" >/dev/null || return 1
}

if complete; then
  echo "$DEST"; exit 0
fi

if [[ ${ENVTEST_TRY_DOWNLOAD:-0} == 1 && -x ${SETUP_ENVTEST:-} ]]; then
  if "$SETUP_ENVTEST" use "${K8S_VERSION#v}" --bin-dir "$STORE" -p path >/dev/null 2>&1; then
    log "setup-envtest downloaded the archive; adding what it lacks"
  else
    log "setup-envtest download failed; building from the Go module proxy"
  fi
fi

PKGS=(k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl k8s.io/kubernetes/cmd/kube-controller-manager)
log "building ${PKGS[*]##*/} $K8S_VERSION and etcd $ETCD_VERSION from source (empty Go caches: ~6-8 min on 2 cores)"
mkdir -p "$STORE/k8s"
TMP=$(mktemp -d "$STORE/k8s/.build.XXXXXX"); chmod 755 "$TMP"
trap 'chmod -R u+w "$TMP" 2>/dev/null; rm -rf "$TMP"' EXIT

LD="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LD+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$K8S_MINOR"
  LD+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done

export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=readonly"
(cd "$K8S_MOD" && go build -trimpath -ldflags "$LD" -o "$TMP/" "${PKGS[@]}") >&2
(cd "$ETCD_MOD" && go build -trimpath -ldflags "-s -w" -o "$TMP/etcd" go.etcd.io/etcd/server/v3) >&2

if [[ -d $DEST ]]; then chmod -R u+w "$DEST"; rm -rf "$DEST"; fi
mv "$TMP" "$DEST"
trap - EXIT
complete || { log "built binaries failed the version check in $DEST"; exit 1; }
log "ready: $DEST"
echo "$DEST"
