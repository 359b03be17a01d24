#!/usr/bin/env bash
# Builds commands, static and stamped with $VERSION, into the given
# directory: by default the container image's binaries (manager, namesrv,
# and the admin tools nsadmin and kubectl-nsc), or the packages named after
# the directory. The Dockerfile, `make image-binaries` (part of `make test`)
# and `make build` all run this script, so CI compiles exactly what the
# image ships and the link flags are written down once.
set -euo pipefail

out=${1:?usage: VERSION=vX.Y.Z build-binaries.sh OUT_DIR [PACKAGE...]}
shift
: "${VERSION:?VERSION must be set: it tags the default NameServer image the operator deploys}"
packages=("$@")
((${#packages[@]})) || packages=(./cmd/manager ./cmd/namesrv ./cmd/nsadmin ./cmd/kubectl-nsc)

cd "$(dirname "${BASH_SOURCE[0]}")/.."
mkdir -p "$out"
# No cgo: the scratch image has no libc to load.
build() {
  CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X github.com/kube-namesrv/kube-namesrv/internal/version.Version=$VERSION" \
    -o "$out/" "$@"
}
# The NameServer's HTTP side (probes, metrics, address server, peer status)
# speaks HTTP/1.1, which every client of it falls back to: leaving net/http's
# HTTP/2 server out (nethttpomithttp2) takes 0.4 MB off the binary and about
# 0.3 MiB off its idle memory (docs/benchmarks.md, "Idle memory"). The other
# commands keep HTTP/2: the operator's API client multiplexes over it.
namesrv=github.com/kube-namesrv/kube-namesrv/cmd/namesrv
mapfile -t all < <(go list "${packages[@]}")
others=()
for p in "${all[@]}"; do
  [[ $p == "$namesrv" ]] || others+=("$p")
done
((${#others[@]} == ${#all[@]})) || build -tags nethttpomithttp2 "$namesrv"
((${#others[@]} == 0)) || build "${others[@]}"
