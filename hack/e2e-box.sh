#!/usr/bin/env bash
# Runs a command inside "the box": private user, mount, network and PID
# namespaces, with lo up, 10.244.0.0/16 routed to lo (so that every Pod of the
# process kubelet binds its own routable address), and a private writable
# /etc/hosts (per-pod DNS names). Nothing on the host changes, no privileges
# are needed, and when the command exits the kernel kills whatever it left in
# the box (the command is the PID namespace's init).
#
# The module proxy is unreachable inside: build test binaries before.
# usage: go test -c -tags e2e -o bin/e2e.test ./test/e2e && hack/e2e-box.sh bin/e2e.test -test.v
set -euo pipefail
[[ $# -gt 0 ]] || { echo "usage: $0 command [args...]" >&2; exit 2; }

# Read by test/e2e/cluster.BoxFromEnv. The hosts file is rewritten
# in place by the kubelet: it is a bind mount.
export CIB_HOSTS_FILE=/etc/hosts CIB_IP_PREFIX=10.244.0. CIB_ADVERTISE_ADDRESS=10.244.0.1

# The hosts file is a private copy: created, bind-mounted over /etc/hosts
# and unlinked, so nothing remains once the box is gone. "localhost" must
# resolve before envtest starts. --kill-child: if unshare is killed, so is
# the box.
unshare --user --map-root-user --mount --net --pid --fork --mount-proc --kill-child -- sh -c '
  hosts=$(mktemp) &&
  printf "127.0.0.1\tlocalhost\n::1\tlocalhost\n" >"$hosts" &&
  mount --bind "$hosts" /etc/hosts && rm -f "$hosts" &&
  ip link set lo up &&
  ip route add local 10.244.0.0/16 dev lo table local &&
  exec "$@"' sh "$@" &
box=$!

# unshare blocks SIGINT and SIGTERM while it waits, so pass them on to the
# box's init (the command), which may then stop cleanly.
forward() {
  local p
  for p in $(pgrep -P "$box" || true); do kill -s "$1" "$p" 2>/dev/null || true; done
}
trap 'forward TERM' TERM
trap 'forward INT' INT
while kill -0 "$box" 2>/dev/null; do wait "$box" || true; done
wait "$box"
