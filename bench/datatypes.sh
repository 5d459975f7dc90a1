#!/bin/bash
# Issue 14's data type figures (docs/BENCHMARKS.md "Data types"), on one node or on a
# three-node dev cluster, 32 PB connections, side by side with plain PUTs of the same run.
# usage: datatypes.sh BIN NODES [SECONDS]   (BIN: a release eddy built with
#        --features bench; NODES: 1 or 3;
#        SECONDS: each timed run, default 15)
# One node: `BIN start` in a temporary directory (PB 8087, HTTP 8098); three: `BIN
# dev-cluster 3` (PB 10017/10027/10037, HTTP 10018/10028/10038). Those ports must be free.
# Runs, in order: the loopback echo (32 connections); plain PUTs and counter increments
# over 10,000 keys, alternated twice; 32 connections incrementing one hot counter (then
# checks that the counter reads exactly the number of acknowledged increments plus
# the bench's one probe, none failed); and adding one member at a time (one connection) to sets preloaded with
# 1,000, 10,000 and 100,000 members (p50/p99). Prints one line per run; removes the
# directory (KEEP=1 keeps it).
set -euo pipefail
BIN=$(realpath "$1"); NODES=$2; SECS=${3:-15}
HERE=$(cd "$(dirname "$0")" && pwd)
D=$(mktemp -d /tmp/eddydt.XXXX)
cleanup() {
  if [ "$NODES" = 3 ]; then (cd "$D" && "$BIN" dev-cluster stop >/dev/null 2>&1) || true
  else kill "${PID:-0}" 2>/dev/null || true; wait 2>/dev/null || true; fi
  if [ -n "${KEEP:-}" ]; then echo "kept $D"; else rm -rf "$D"; fi
}
trap cleanup EXIT
cd "$D"
if [ "$NODES" = 3 ]; then
  "$BIN" dev-cluster 3 > dev-cluster.log 2>&1 || { cat dev-cluster.log; exit 1; }
  PB='"127.0.0.1:10017", "127.0.0.1:10027", "127.0.0.1:10037"'; HTTP=127.0.0.1:10018
  ADMIN=(--config "$D/dev/dev1/eddy.toml")
else
  EDDY_PLATFORM_DATA_DIR=$D "$BIN" start > node.log 2>&1 &
  PID=$!
  for _ in $(seq 1 100); do "$BIN" ping >/dev/null 2>&1 && break; sleep 0.1; done
  PB='"127.0.0.1:8087"'; HTTP=127.0.0.1:8098; ADMIN=()
fi
for t in counters:counter sets:set; do
  "$BIN" admin "${ADMIN[@]}" bucket-type create "${t%%:*}" "{\"props\":{\"datatype\":\"${t#*:}\"}}" >/dev/null
  "$BIN" admin "${ADMIN[@]}" bucket-type activate "${t%%:*}" >/dev/null
done
echo "datatypes: $("$BIN" --version 2>/dev/null | head -n 1) · $NODES node(s) · $(nproc) cores · load $(cut -d' ' -f1-3 /proc/loadavg)"

# One run: NAME OP TYPE KEYS CONNS [PREFIX]
run() {
  local name=$1 op=$2 btype=$3 keys=$4 conns=$5 prefix=${6:-k}
  local typeline=""; [ "$btype" != default ] && typeline="bucket_type = \"$btype\""
  cat > "$name.toml" <<TOML
mode = "max"
duration = "${SECS}s"
concurrent = $conns
report_interval = "5s"
[driver]
protocol = "pb"
endpoints = [$PB]
$typeline
bucket = "b"
[operations]
$op = 1
[keys]
generator = "uniform_int"
max = $keys
prefix = "$prefix"
format = "plain"
[values]
generator = "fixed_bin"
size = 200
TOML
  "$BIN" bench run "$name.toml" --out "$D/$name" > "$name.out" 2> "$name.err" \
    || { cat "$name.out" "$name.err"; exit 1; }
  python3 "$HERE/datatypes.py" line "$name" "$D/$name/summary.json"
}

"$BIN" bench pb --addr "$(echo "$PB" | cut -d'"' -f2)" --workload get --keys 1 --value-size 200 \
  --connections 32 --duration 3 --baseline 3 --json > echo.out 2> echo.err || true
python3 "$HERE/datatypes.py" echo echo.out
for round in 1 2; do
  run "put-$round" put default 10000 32
  run "counter-$round" counter_incr counters 10000 32
done
run hot counter_incr counters 1 32 hot
python3 "$HERE/datatypes.py" hot "$HTTP" "$D/hot/summary.json"
for n in 1000 10000 100000; do
  python3 "$HERE/datatypes.py" preload "$HTTP" "set$n-0" "$n"
  run "set-$n" set_add sets 1 1 "set$n-"
done
