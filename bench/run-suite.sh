#!/usr/bin/env bash
# Runs the shipped workloads (bench/*.toml) against a fresh node per storage
# backend, then draws each workload's runs side by side.
#
#   bench/run-suite.sh [OUT_DIR] [DURATION]      (defaults: bench-results/suite, 30s)
#   BACKENDS="bitcask lsm" WORKLOADS="backend-1 writes-2" bench/run-suite.sh
#
# Layout: OUT_DIR/<workload>/<backend>/ (eddy bench run's output) and
# OUT_DIR/<workload>/compare/ (eddy bench compare over the backends, whose
# table is also in compare.txt there).
# Each workload gets a node of its own, started on an empty data directory,
# so runs do not see each other's data, and with the settings its file names
# on `# node-env: NAME=value` lines (e.g. backend-2's o_sync commit log). Needs a release build:
# cargo build --release -p eddy --features bench
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
eddy=$root/target/release/eddy
out=${1:-$root/bench-results/suite}
duration=${2:-30s}
backends=${BACKENDS:-bitcask lsm memory}
workloads=${WORKLOADS:-$(cd "$root/bench" && ls *.toml | sed 's/\.toml$//' | grep -v '^coupons-3')}
mkdir -p "$out"

node_pid=
stop_node() {
    if [ -n "$node_pid" ]; then
        kill -TERM "$node_pid" 2>/dev/null || true
        wait "$node_pid" 2>/dev/null || true
        node_pid=
    fi
}
trap stop_node EXIT

# Node settings a workload asks for, from its `# node-env: NAME=value ...` lines.
node_env() { sed -n 's/^# node-env: //p' "$root/bench/$1.toml"; }

start_node() { # backend data_dir workload
    # shellcheck disable=SC2046 # one word per NAME=value is the point
    env $(node_env "$3") EDDY_STORAGE_BACKEND=$1 EDDY_PLATFORM_DATA_DIR=$2 \
        "$eddy" start >"$2.log" 2>&1 &
    node_pid=$!
    for _ in $(seq 100); do
        "$eddy" ping >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "node ($1) did not answer; see $2.log" >&2
    return 1
}

# Waits (at most 60 s) until the disk under the results has been idle for 2 s:
# deleting the previous run's data (and, on a `discard` mount, trimming it)
# would otherwise stall the next run's first seconds.
wait_disk_idle() {
    local dev ticks prev now quiet=0
    dev=$(basename "$(findmnt -n -o SOURCE -T "$out")")
    ticks() { awk -v d="$dev" '$3 == d { print $13 }' /proc/diskstats; }
    prev=$(ticks)
    [ -n "$prev" ] || return 0
    for _ in $(seq 60); do
        sleep 1
        now=$(ticks)
        if [ $((now - prev)) -lt 100 ]; then quiet=$((quiet + 1)); else quiet=0; fi
        prev=$now
        [ "$quiet" -ge 2 ] && return 0
    done
}

# coupons-2 redeems the coupons coupons-1 loaded: they share a node.
shares_node_with_previous() { [ "$1" = coupons-2-redeem ]; }

for backend in $backends; do
    data=$(mktemp -d)
    for w in $workloads; do
        if ! shares_node_with_previous "$w"; then
            stop_node
            rm -rf "$data/node"
            sync
            wait_disk_idle
            start_node "$backend" "$data/node" "$w"
        fi
        echo "== $backend / $w ($duration)"
        rm -rf "$out/$w/$backend"
        mkdir -p "$out/$w"
        "$eddy" bench run "$root/bench/$w.toml" --duration "$duration" \
            --out "$out/$w/$backend" </dev/null | tail -n 20
    done
    stop_node
    rm -rf "$data"
done

for w in $workloads; do
    dirs=()
    for backend in $backends; do dirs+=("$out/$w/$backend"); done
    rm -rf "$out/$w/compare"
    "$eddy" bench compare "${dirs[@]}" --out "$out/$w/compare" >/dev/null
done
echo "results in $out"
