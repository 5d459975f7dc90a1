#!/bin/bash
# Issue 13's coupon figures on a three-node dev cluster (n_val 3, the default).
# usage: coupons-cluster3.sh BIN [RUNS]   (BIN: a release eddy; RUNS: timed runs per query, default 9)
# Starts `BIN dev-cluster 3` in a temporary directory (PB 10017/10027/10037, HTTP
# 10018/10028/10038: those ports must be free), measures the loopback echo
# (`bench pb --baseline`, one connection), loads 100,000 coupons with
# bench/coupons-4-cluster3-load.toml (32 PB connections over the three nodes, each key
# written once, the run's own 32-connection echo first), then times the queries with
# bench/coupons-timing.py: the 2i range 0..49, one affiliate over 2i (HTTP and PB), the
# JavaScript MapReduce count per affiliate, a multi-get of 200 keys (HTTP and PB), and
# 200 parallel GETs (and 200 parallel pings, their floor), each checked against the data.
# Prints one summary; stops the nodes and removes the directory.
# KEEP=1 keeps the directory (the nodes are stopped either way).
set -euo pipefail
BIN=$(realpath "$1"); RUNS=${2:-9}
HERE=$(cd "$(dirname "$0")" && pwd)
D=$(mktemp -d /tmp/coupc3.XXXX)
cleanup() {
  (cd "$D" && "$BIN" dev-cluster stop >/dev/null 2>&1) || true
  if [ -n "${KEEP:-}" ]; then echo "kept $D"; else rm -rf "$D"; fi
}
trap cleanup EXIT
cd "$D"

T0=$(date +%s.%N)
"$BIN" dev-cluster 3 > dev-cluster.log 2>&1 || { cat dev-cluster.log; exit 1; }
SETTLED=$(printf "%.1f" "$(echo "$(date +%s.%N) - $T0" | bc)")

# The machine's loopback round trip now: one connection, 200 B values (a 1 s get run
# against dev1 comes with it, in its own bucket).
"$BIN" bench pb --addr 127.0.0.1:10017 --workload get --keys 1 --value-size 200 \
  --connections 1 --duration 1 --baseline 3 --json > echo.out 2> echo.err
tail -n 1 echo.out > echo.json

"$BIN" bench run "$HERE/coupons-4-cluster3-load.toml" --out "$D/load" > load.out 2> load.err \
  || { cat load.out load.err; exit 1; }

echo "coupons-cluster3: $("$BIN" --version 2>/dev/null | head -n 1) · 3 dev nodes settled in ${SETTLED} s · $(nproc) cores · load average $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$HERE/coupons-timing.py" "$RUNS" "$D/load/summary.json" echo.json \
  10018,10028,10038 10017,10027,10037
