#!/usr/bin/env bash
# Measures the idle memory of a namesrv binary the way docs/benchmarks.md
# ("Idle memory") reports it: start it with HTTP on, let one broker register
# once (and keep its connection, as a broker does between heartbeats), stay
# idle IDLE_SECONDS, then print the process's VmRSS, RssAnon and RssFile.
# Every run starts a fresh process in a directory of its own and stops it.
#
#   hack/idle-rss.sh bin/namesrv 6                     # six runs, no scrape
#   SCRAPE_EVERY=15 hack/idle-rss.sh bin/namesrv 6     # scraped as Prometheus does
#
# nsbench (`make nsbench`) sends the registration; curl polls /readyz and
# scrapes /metrics with the Accept header Prometheus 3 sends.
set -euo pipefail

bin=${1:?usage: idle-rss.sh NAMESRV_BINARY [RUNS]}
runs=${2:-6}
idle=${IDLE_SECONDS:-60}
scrape_every=${SCRAPE_EVERY:-0}
topics=${TOPICS:-10}
nsbench=${NSBENCH:-$(dirname "${BASH_SOURCE[0]}")/../bin/nsbench}
accept='application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2'

[[ -x $bin ]] || { echo "idle-rss: $bin is not an executable" >&2; exit 1; }
[[ -x $nsbench ]] || { echo "idle-rss: $nsbench missing (make nsbench)" >&2; exit 1; }

# A port nobody listens on now, below the kernel's ephemeral range; a clash
# with a process that binds it meanwhile shows as a server that never gets
# ready, and the run fails.
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 12000))
    ss -Htln "sport = :$p" | grep -q . || { echo "$p"; return; }
  done
}

pid= dir= bench=
cleanup() {
  [[ -n $bench ]] && kill "$bench" 2>/dev/null && wait "$bench" 2>/dev/null
  [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [[ -n $dir ]] && rm -rf "$dir"
  pid= dir= bench=
}
trap cleanup EXIT

for ((run = 1; run <= runs; run++)); do
  dir=$(mktemp -d)
  port=$(free_port) http=$(free_port)
  # HOME keeps the KV and config files out of the real home directory.
  HOME=$dir "$bin" --listen-port "$port" --http-port "$http" >"$dir/log" 2>&1 &
  pid=$!
  for ((i = 0; ; i++)); do
    curl -sf -o /dev/null "http://127.0.0.1:$http/readyz" && break
    if ((i >= 300)) || ! kill -0 "$pid" 2>/dev/null; then
      echo "idle-rss: run $run: namesrv not ready on port $http after 30 s" >&2
      cat "$dir/log" >&2
      exit 1
    fi
    sleep 0.1
  done
  # One registration, then the connection is held for the idle time (the
  # broker stays registered: it expires only after 120 s of silence).
  "$nsbench" -addr "127.0.0.1:$port" -mode register -brokers 1 -topics-per-broker "$topics" \
    -interval 1h -duration "$((idle + 10))s" >"$dir/nsbench" 2>&1 &
  bench=$!
  start=$SECONDS
  next=$scrape_every
  while ((SECONDS - start < idle)); do
    if ((scrape_every > 0 && SECONDS - start >= next)); then
      curl -sf -o /dev/null -H 'Accept-Encoding: gzip' -H "Accept: $accept" "http://127.0.0.1:$http/metrics"
      next=$((next + scrape_every))
    fi
    sleep 1
  done
  kill -0 "$pid" 2>/dev/null || { echo "idle-rss: run $run: namesrv exited while idle" >&2; cat "$dir/log" >&2; exit 1; }
  read -r rss anon file < <(awk '/^VmRSS/ {r=$2} /^RssAnon/ {a=$2} /^RssFile/ {f=$2} END {print r, a, f}' "/proc/$pid/status")
  kill "$bench"
  wait "$bench" 2>/dev/null || true
  bench=
  grep -q '^register: 1 registrations .* errors 0$' "$dir/nsbench" || {
    echo "idle-rss: run $run: the registration did not happen as one successful request:" >&2
    cat "$dir/nsbench" >&2
    exit 1
  }
  how="no scrape"
  ((scrape_every == 0)) || how="scraped every $scrape_every s"
  awk -v run="$run" -v r="$rss" -v a="$anon" -v f="$file" -v idle="$idle" -v how="$how" 'BEGIN {
    printf "run %d: VmRSS %.2f MiB (anon %.2f, file %.2f) after %d s idle, %s\n", run, r/1024, a/1024, f/1024, idle, how }'
  cleanup
done
