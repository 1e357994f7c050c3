#!/usr/bin/env bash
# The benchmark matrix: builds the release mqbroker and mqbench, then runs matrix.py
# (fresh standalone broker per row, >= 3 runs per row, medians; then the rows on a
# broker that is not fresh, see aged.py) and writes deploy/bench/results.md. Extra
# arguments go to matrix.py (--runs, --duration, --rows, --no-peer, --no-aged,
# --fill-gib, ...). CARGO_TARGET_DIR is honoured.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
cargo build --release -p vostok-broker -p vostok-tools
exec python3 "$root/deploy/bench/matrix.py" --bin-dir "$target/release" "$@"
