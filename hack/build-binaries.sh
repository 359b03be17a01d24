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
CGO_ENABLED=0 go build -trimpath \
  -ldflags "-s -w -X github.com/kube-namesrv/kube-namesrv/internal/version.Version=$VERSION" \
  -o "$out/" "${packages[@]}"
