#!/usr/bin/env bash
# Runs a command inside "the box": private mount, network and PID namespaces
# in which the end-to-end suite (test/e2e/box) sets up its one-node cluster.
# The command is the PID namespace's init, so when it exits, or is killed,
# the kernel kills whatever it left in the box (containerd, its shims, every
# container); the network namespace, with its links and netfilter rules, and
# every mount go with it. What outlives that, the pods' cgroups and the work
# directory of a run that died, the next run removes (see test/e2e/box).
#
# Root is needed (the kubelet and runc are real); nothing on the host
# changes. The module proxy is unreachable inside: build test binaries
# before.
# usage: go test -C test/e2e -c -tags e2e -o bin/e2e.test . && hack/e2e-box.sh bin/e2e.test -test.v
set -euo pipefail
[[ $# -gt 0 ]] || { echo "usage: $0 command [args...]" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "$0: the end-to-end box needs root (a real kubelet and runc run in it)" >&2; exit 1; }

# Read by test/e2e/box, which refuses to set up a node anywhere else.
export E2E_BOX=1

# --kill-child: if unshare is killed, so is the box.
unshare --mount --net --pid --fork --mount-proc --propagation private --kill-child -- "$@" &
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
