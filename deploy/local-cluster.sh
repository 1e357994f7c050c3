#!/usr/bin/env bash
# Starts one name server and two brokers (deploy/broker-a.conf, broker-b.conf) on this
# host, waits until each is ready, and stops them all on Ctrl-C.
#
# Every port binds 127.0.0.1, as a standalone broker's do: the cluster is not reachable
# from the network. VOSTOK_BIND=ADDRESS binds that address instead (0.0.0.0: all of
# them); the brokers then advertise it to clients, or 127.0.0.1 for 0.0.0.0.
set -euo pipefail
bind=${VOSTOK_BIND:-127.0.0.1}
advertise=$bind
[ "$bind" = 0.0.0.0 ] && advertise=127.0.0.1
cd "$(dirname "$0")/.."
cargo build --release -p vostok-namesrv -p vostok-broker --bin mqnamesrv --bin mqbroker
bin=target/release
logs=data/logs
mkdir -p "$logs"
pids=()
cleanup() { kill -TERM "${pids[@]}" 2>/dev/null || true; wait; }
trap cleanup EXIT INT TERM

start() { # name, ready-pattern, command...
  local name=$1 ready=$2; shift 2
  "$@" > "$logs/$name.out" 2> "$logs/$name.log" &
  pids+=($!)
  for _ in $(seq 1 100); do
    grep -q "$ready" "$logs/$name.out" 2>/dev/null && { echo "$name: $(cat "$logs/$name.out")"; return; }
    sleep 0.1
  done
  echo "$name did not start; see $logs/$name.log" >&2; exit 1
}

start namesrv "boot success" "$bin/mqnamesrv" -c deploy/namesrv.conf -o bindAddress="$bind"
start broker-a "boot success" "$bin/mqbroker" -n "$advertise:9876" -c deploy/broker-a.conf \
  -o bindAddress="$bind" -o brokerIP1="$advertise"
start broker-b "boot success" "$bin/mqbroker" -n "$advertise:9876" -c deploy/broker-b.conf \
  -o bindAddress="$bind" -o brokerIP1="$advertise"
echo "cluster up: name server $advertise:9876 (bound to $bind); logs in $logs. Ctrl-C stops it."
wait
