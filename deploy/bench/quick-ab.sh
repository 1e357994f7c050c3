#!/usr/bin/env bash
# The regression guard: builds two versions of the broker and mqbench and runs a quick
# subset of the matrix against both, interleaved, printing the ratio per row (about 2
# minutes once built). Each of A and B is
#   .          the working tree as it is (built into the usual release target),
#   a directory holding mqbroker, mqbench and mqadmin, or
#   a git revision (exported with git archive, built in $target/quick-ab, a target
#              directory of its own so that the working tree's binaries are never
#              replaced; binaries kept in $target/quick-ab/bin-<commit> for next time).
# Example: deploy/bench/quick-ab.sh main .        Extra arguments go to quick_ab.py.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 A B [--runs N] [--duration S] [--rows NAME...]" >&2
    exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
a="$1" b="$2"
shift 2

# Prints the directory holding the binaries of $1, building them when needed.
bins() {
    local spec="$1"
    if [ "$spec" = "." ]; then
        (cd "$root" && cargo build --release -q -p vostok-broker -p vostok-tools) >&2
        echo "$target/release"
    elif [ -d "$spec" ]; then
        (cd "$spec" && pwd)
    else
        local commit out src
        commit="$(git -C "$root" rev-parse --verify "$spec^{commit}")"
        out="$target/quick-ab/bin-$commit"
        if [ ! -x "$out/mqbench" ]; then
            src="$(mktemp -d)"
            git -C "$root" archive "$commit" | tar -x -C "$src"
            echo "building $spec ($commit)" >&2
            (cd "$src" && CARGO_TARGET_DIR="$target/quick-ab" \
                cargo build --release -q -p vostok-broker -p vostok-tools) >&2 \
                || { rm -rf "$src"; exit 1; }
            mkdir -p "$out"
            cp "$target/quick-ab/release/"{mqbroker,mqbench,mqadmin} "$out/"
            rm -rf "$src"
        fi
        echo "$out"
    fi
}

dir_a="$(bins "$a")"
dir_b="$(bins "$b")"
exec python3 "$root/deploy/bench/quick_ab.py" "$dir_a" "$dir_b" \
    --label-a "$a" --label-b "$b" "$@"
