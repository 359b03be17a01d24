#!/bin/sh
# rocketmq-namesrv.sh: Apache RocketMQ's Java NameServer (4.9.x) in place of
# namesrv, for nsbench. It takes namesrv's --listen-port, --kv-config-path and
# --config-store-path (other flags and their values are ignored), writes the
# first two into a namesrv.properties as listenPort and kvConfigPath, and execs
# the JVM: the process nsbench started becomes the NameServer itself.
#
#   nsbench -spawn-cmd 'tools/nsbench/rocketmq-namesrv.sh --listen-port {port} --kv-config-path {kv}' -mode start
#   nsbench -spawn tools/nsbench/rocketmq-namesrv.sh -mode start
#
# ROCKETMQ_HOME is the distribution (lib/ and conf/); java is JAVA_HOME's, or
# the one on the PATH; NSBENCH_JAVA_OPTS are added after the options below.
set -eu

die() {
	echo "rocketmq-namesrv.sh: $*" >&2
	exit 2
}

port= kv= config=
while [ $# -gt 0 ]; do
	case $1 in
	--*=*) flag=${1%%=*} value=${1#*=}; shift ;;
	--*) [ $# -ge 2 ] || die "$1 needs a value"; flag=$1 value=$2; shift 2 ;;
	*) die "unexpected argument $1" ;;
	esac
	case $flag in
	--listen-port) port=$value ;;
	--kv-config-path) kv=$value ;;
	--config-store-path) config=$value ;;
	esac
done
[ -n "$port" ] || die "--listen-port is required"
[ -n "$kv" ] || die "--kv-config-path is required"
[ -n "${ROCKETMQ_HOME:-}" ] && [ -d "$ROCKETMQ_HOME/lib" ] ||
	die "set ROCKETMQ_HOME to a RocketMQ 4.9.x distribution (its lib/ and conf/)"

dir=$(dirname "$kv")
config=${config:-$dir/namesrv.properties}
printf 'listenPort=%s\nkvConfigPath=%s\n' "$port" "$kv" >"$config"

java=java
if [ -n "${JAVA_HOME:-}" ]; then
	java=$JAVA_HOME/bin/java
fi
export ROCKETMQ_HOME
# The heap and collector the Java curves in docs/curves/java-4.9.8 were
# measured with; the other options are those RocketMQ's runserver.sh gives a
# Java 9 or later JVM, less its GC log. user.home is the scratch directory,
# where the NameServer writes logs/rocketmqlogs.
# shellcheck disable=SC2086 # NSBENCH_JAVA_OPTS is split into options
exec "$java" -server -Xms256m -Xmx4g -Xmn1g -XX:MetaspaceSize=128m -XX:MaxMetaspaceSize=320m \
	-XX:+UseG1GC -XX:G1HeapRegionSize=16m -XX:G1ReservePercent=25 -XX:InitiatingHeapOccupancyPercent=30 \
	-XX:SoftRefLRUPolicyMSPerMB=0 -XX:-OmitStackTraceInFastThrow -XX:-UseLargePages \
	-Duser.home="$dir" ${NSBENCH_JAVA_OPTS:-} \
	-cp "$ROCKETMQ_HOME/conf:$ROCKETMQ_HOME/lib/*" \
	org.apache.rocketmq.namesrv.NamesrvStartup -c "$config"
