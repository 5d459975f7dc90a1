#!/bin/bash
# Issue 13's coupon figures on a three-node dev cluster (n_val 3, the default).
# usage: coupons-cluster3.sh BIN   (BIN: a release eddy built with `--features bench`)
# Starts `BIN dev-cluster 3` in a temporary directory (PB 10017/10027/10037, HTTP
# 10018/10028/10038: those ports must be free), loads 100,000 coupons with
# bench/coupons-4-cluster3-load.toml (32 PB connections over the three nodes, each key
# written once, the run's own 32-connection echo first), then times the queries, each a
# workload of the same load generator: bench/coupons-5-cluster3-queries-pb.toml (one
# affiliate over 2i, a multi-get of 200 keys; one PB connection),
# bench/coupons-6-cluster3-queries-http.toml (the 2i range 0..49, a multi-get of 200
# keys, the JavaScript MapReduce count per affiliate; one HTTP connection) and
# bench/coupons-7-cluster3-parallel-gets.toml (GETs on 200 PB connections). Each run
# reads itself against its own loopback echo and counts a coupon not found as an error.
# Prints each run's summary; results go to bench-results/coupons-cluster3-<time>/;
# stops the nodes and removes the cluster's directory.
# KEEP=1 keeps the cluster's directory (the nodes are stopped either way).
set -euo pipefail
BIN=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(pwd)/bench-results/coupons-cluster3-$(date -u +%Y%m%dT%H%M%SZ)
D=$(mktemp -d /tmp/coupc3.XXXX)
cleanup() {
  (cd "$D" && "$BIN" dev-cluster stop >/dev/null 2>&1) || true
  if [ -n "${KEEP:-}" ]; then echo "kept $D"; else rm -rf "$D"; fi
}
trap cleanup EXIT
mkdir -p "$OUT"
cd "$D"

T0=$(date +%s.%N)
"$BIN" dev-cluster 3 > dev-cluster.log 2>&1 || { cat dev-cluster.log; exit 1; }
SETTLED=$(printf "%.1f" "$(echo "$(date +%s.%N) - $T0" | bc)")
echo "coupons-cluster3: $("$BIN" --version 2>/dev/null | head -n 1) · 3 dev nodes settled in ${SETTLED} s · $(nproc) cores · load average $(cut -d' ' -f1-3 /proc/loadavg)"

for w in coupons-4-cluster3-load coupons-5-cluster3-queries-pb \
         coupons-6-cluster3-queries-http coupons-7-cluster3-parallel-gets; do
  echo "== $w"
  "$BIN" bench run "$HERE/$w.toml" --out "$OUT/$w" 2> "$OUT/$w.err" \
    || { cat "$OUT/$w.err"; exit 1; }
done
