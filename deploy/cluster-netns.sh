#!/usr/bin/env bash
# A Vostok cluster on one Linux machine, each process on its own address in its own
# network namespace: two name servers and two broker groups of a master and a slave.
#
#   deploy/cluster-netns.sh up       build the release binaries, start everything
#   deploy/cluster-netns.sh status   what runs, and whether its port answers
#   deploy/cluster-netns.sh down     SIGTERM everything, then remove the namespaces
#   deploy/cluster-netns.sh kill P   SIGKILL process P (e.g. broker-a), as a crash
#   deploy/cluster-netns.sh start P  start process P again, on its store
#
# Needs root (ip netns) and iproute2. Settings: deploy/cluster/*.conf (the addresses
# below are read from there), or the directory $VOSTOK_CLUSTER_CONF names: one
# namesrv-*.conf per name server and one broker-*.conf per broker, started in that
# order (masters before brokers whose name ends in -s). deploy/controller/ is a
# controller-mode group: three name servers each running a controller, three brokers
# of one group. Logs and data: $VOSTOK_CLUSTER_DIR (/tmp/vostok-cluster);
# `down` keeps them, so that `up` resumes on the same stores. VOSTOK_NO_BUILD=1 skips
# the build.
#
#   root namespace 10.250.0.1 on bridge vkc-br0
#     vkc-namesrv-1 10.250.0.11:9876     vkc-namesrv-2 10.250.0.12:9876
#     vkc-broker-a  10.250.0.21:10911    vkc-broker-a-s 10.250.0.22:10911 (slave)
#     vkc-broker-b  10.250.0.31:10911    vkc-broker-b-s 10.250.0.32:10911 (slave)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
conf=${VOSTOK_CLUSTER_CONF:-$root/deploy/cluster}
dir=${VOSTOK_CLUSTER_DIR:-/tmp/vostok-cluster}
bin="$root/target/release"
bridge=vkc-br0
gateway=10.250.0.1/24
# Start order: name servers, masters, slaves.
names() { (cd "$conf" && ls -1 "$1"*.conf 2>/dev/null | sed 's/\.conf$//' | sort); }
mapfile -t namesrvs < <(names namesrv-)
mapfile -t brokers < <(names broker- | grep -v -- '-s$'; names broker- | grep -- '-s$')

die() { echo "cluster-netns: $*" >&2; exit 1; }

# The value of `key` in config file `name`.conf.
setting() { sed -n "s/^$2[[:space:]]*=[[:space:]]*//p" "$conf/$1.conf" | tail -n 1; }

# The address a process's namespace gets: a name server's bindAddress, a broker's brokerIP1.
address_of() {
  case $1 in
    namesrv-*) setting "$1" bindAddress ;;
    *) setting "$1" brokerIP1 ;;
  esac
}

port_of() { setting "$1" listenPort; }

ns_of() { echo "vkc-$1"; }

# Adds namespace vkc-<name> with its veth on the bridge and the configured address.
add_host() {
  local name=$1 ns veth addr
  ns=$(ns_of "$name"); veth=vkc-$name; addr=$(address_of "$name")
  [ -n "$addr" ] || die "no address for $name in $conf/$name.conf"
  ip netns add "$ns"
  ip link add "$veth" type veth peer name eth0 netns "$ns"
  ip link set "$veth" master "$bridge" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$addr/24" dev eth0
  ip -n "$ns" link set eth0 up
}

# Starts a process in its namespace, detached, and waits for its boot line.
launch() { # name, program, args...
  local name=$1 ns out log; shift
  ns=$(ns_of "$name"); out="$dir/logs/$name.out"; log="$dir/logs/$name.log"
  setsid ip netns exec "$ns" "$@" >"$out" 2>>"$log" </dev/null &
  local pid=$!
  for _ in $(seq 1 300); do
    if grep -q "boot success" "$out" 2>/dev/null; then
      printf '  %-11s %s\n' "$name" "$(grep "boot success" "$out")"
      return
    fi
    # The process itself, not the namespace: a child that has not entered the
    # namespace yet is not listed there.
    if ! kill -0 "$pid" 2>/dev/null; then
      die "$name exited; see $log ($0 down removes what started)"
    fi
    sleep 0.1
  done
  die "$name did not start within 30 s; see $log ($0 down removes what started)"
}

# Starts one process of the cluster in its (existing) namespace.
start_one() {
  local name=$1
  case $name in
    namesrv-*)
      launch "$name" "$bin/mqnamesrv" -c "$conf/$name.conf" \
        -o "kvConfigPath=$dir/data/$name/kvConfig.json" \
        -o "controllerStorePath=$dir/data/$name/controller" ;;
    *)
      launch "$name" "$bin/mqbroker" -c "$conf/$name.conf" \
        -o "storePathRootDir=$dir/data/$name" ;;
  esac
}

known() {
  local name
  for name in "${namesrvs[@]}" "${brokers[@]}"; do [ "$name" = "$1" ] && return 0; done
  die "unknown process ${1:-(none)}: one of ${namesrvs[*]} ${brokers[*]}"
}

# SIGKILL to every process in a namespace: the process crashes, its store stays.
kill_one() {
  [ "$(id -u)" = 0 ] || die "needs root (ip netns)"
  known "$1"
  local pids
  pids=$(ip netns pids "$(ns_of "$1")" 2>/dev/null || true)
  [ -n "$pids" ] || die "$1 is not running"
  # shellcheck disable=SC2086
  kill -KILL $pids
  echo "killed $1 (SIGKILL to $(echo $pids))"
}

restart_one() {
  [ "$(id -u)" = 0 ] || die "needs root (ip netns)"
  known "$1"
  ip netns pids "$(ns_of "$1")" >/dev/null 2>&1 || die "no namespace for $1; run: $0 up"
  [ -z "$(ip netns pids "$(ns_of "$1")")" ] || die "$1 is running"
  start_one "$1"
}

up() {
  [ "$(id -u)" = 0 ] || die "needs root (ip netns)"
  command -v ip >/dev/null || die "needs iproute2 (ip)"
  if ip link show "$bridge" >/dev/null 2>&1; then
    die "already up (bridge $bridge exists); run: $0 down"
  fi
  if [ "${VOSTOK_NO_BUILD:-}" != 1 ]; then
    (cd "$root" && cargo build --release -p vostok-namesrv -p vostok-broker \
      --bin mqnamesrv --bin mqbroker)
  fi
  [ -x "$bin/mqbroker" ] && [ -x "$bin/mqnamesrv" ] || die "no release binaries in $bin"
  mkdir -p "$dir/logs" "$dir/data"
  ip link add "$bridge" type bridge
  ip addr add "$gateway" dev "$bridge"
  ip link set "$bridge" up
  for name in "${namesrvs[@]}" "${brokers[@]}"; do add_host "$name"; done
  echo "starting (logs in $dir/logs):"
  for name in "${namesrvs[@]}" "${brokers[@]}"; do start_one "$name"; done
  local addrs
  addrs=$(setting "${brokers[0]}" namesrvAddr)
  cat <<EOF

Cluster up. From this machine (root namespace, 10.250.0.1 on $bridge):
  export NAMESRV_ADDR='$addrs'
  cargo run --release -p vostok-tools --bin mqadmin -- -n "\$NAMESRV_ADDR" clusterList
  cargo run --release -p vostok-tools --bin mqbench -- e2e -d 10   (reads NAMESRV_ADDR)
Inside a process's namespace:  ip netns exec vkc-broker-a bash
Cut a host off and heal it:    ip link set vkc-broker-a down / up
Crash a master, bring it back: $0 kill broker-a / $0 start broker-a
Stop:                          $0 down
EOF
}

status() {
  local name ns pids addr port state
  printf '%-11s %-16s %-22s %-8s %s\n' PROCESS NAMESPACE ADDRESS PIDS PORT
  for name in "${namesrvs[@]}" "${brokers[@]}"; do
    ns=$(ns_of "$name"); addr=$(address_of "$name"); port=$(port_of "$name")
    if ! ip netns pids "$ns" >/dev/null 2>&1; then
      printf '%-11s %-16s %-22s %-8s %s\n' "$name" "-" "$addr:$port" "-" "no namespace"
      continue
    fi
    pids=$(ip netns pids "$ns" | tr '\n' ' ')
    if timeout 1 bash -c "exec 3<>/dev/tcp/$addr/$port" 2>/dev/null; then
      state=answers
    else
      state="not answering"
    fi
    printf '%-11s %-16s %-22s %-8s %s\n' "$name" "$ns" "$addr:$port" "${pids:--}" "$state"
  done
  echo "logs and data: $dir"
}

down() {
  [ "$(id -u)" = 0 ] || die "needs root (ip netns)"
  local name ns pids
  # Slaves, masters, then name servers: the reverse of the start order.
  local order=()
  for ((i = ${#brokers[@]} - 1; i >= 0; i--)); do order+=("${brokers[i]}"); done
  for ((i = ${#namesrvs[@]} - 1; i >= 0; i--)); do order+=("${namesrvs[i]}"); done
  for name in "${order[@]}"; do
    ns=$(ns_of "$name")
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] || continue
    echo "stopping $name (SIGTERM to $(echo $pids))"
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    for _ in $(seq 1 300); do
      [ -n "$(ip netns pids "$ns" 2>/dev/null)" ] || break
      sleep 0.1
    done
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    if [ -n "$pids" ]; then
      echo "  $name did not stop within 30 s; SIGKILL"
      # shellcheck disable=SC2086
      kill -KILL $pids 2>/dev/null || true
    fi
  done
  for name in "${order[@]}"; do
    ip link del "vkc-$name" 2>/dev/null || true
    ip netns del "$(ns_of "$name")" 2>/dev/null || true
  done
  ip link del "$bridge" 2>/dev/null || true
  echo "down; logs and data kept in $dir"
}

case ${1:-} in
  up) up ;;
  status) status ;;
  down) down ;;
  kill) kill_one "${2:-}" ;;
  start) restart_one "${2:-}" ;;
  *) echo "usage: $0 up|status|down|kill PROCESS|start PROCESS" >&2; exit 2 ;;
esac
