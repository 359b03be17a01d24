#!/usr/bin/env bash
# Builds the container image's binaries, static and stamped with $VERSION,
# into the given directory: manager, namesrv, and the admin tools nsadmin and
# kubectl-nsc. The Dockerfile and
# `make image-binaries` (part of `make test`) both run this script, so CI
# compiles exactly what the image ships.
set -euo pipefail

out=${1:?usage: VERSION=vX.Y.Z build-binaries.sh OUT_DIR}
: "${VERSION:?VERSION must be set: it tags the default NameServer image the operator deploys}"

cd "$(dirname "${BASH_SOURCE[0]}")/.."
mkdir -p "$out"
# No cgo: the scratch image has no libc to load.
CGO_ENABLED=0 go build -trimpath \
  -ldflags "-s -w -X github.com/kube-namesrv/kube-namesrv/internal/version.Version=$VERSION" \
  -o "$out/" ./cmd/manager ./cmd/namesrv ./cmd/nsadmin ./cmd/kubectl-nsc
