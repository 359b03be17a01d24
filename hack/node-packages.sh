#!/usr/bin/env bash
# Installs what the end-to-end suite's node runs that comes from Debian rather
# than the Go module proxy: containerd (with ctr and its runc shim), runc, the
# CNI plugins (bridge, host-local, loopback in /usr/lib/cni) and iptables
# (kube-proxy's), plus util-linux and iproute2 for the namespace the suite
# runs in. Idempotent: does nothing when every package is installed, so
# `make test` calls it every time. Needs root, as the suite itself does.
# Installing starts nothing: the suite runs its own containerd.
set -euo pipefail

PACKAGES=(containerd runc containernetworking-plugins iptables util-linux iproute2)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]})) || exit 0

if [[ $(id -u) != 0 ]]; then
  echo "node-packages: ${missing[*]} missing; installing them needs root (the end-to-end suite needs root too)" >&2
  exit 1
fi
echo "node-packages: installing ${missing[*]} from Debian" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
