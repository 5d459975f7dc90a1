#!/bin/bash
# docs/BENCHMARKS.md, History "Session 23": the server's CPU (utime + stime) per
# operation over one `eddy bench pb` run of 15 s (its preload included), a fresh node
# each time; alternate two builds to compare what each spends per request.
# usage: cpu-per-op.sh BIN LABEL WORKLOAD  (BENCH: an eddy with --features bench)
BIN=$1; LABEL=$2; WL=$3; BENCH=${BENCH:-target/release/eddy}
D=$(mktemp -d /tmp/eddyc.XXXX)
EDDY_PLATFORM_DATA_DIR=$D $BIN start > $D/out.log 2>&1 &
PID=$!
for i in $(seq 1 100); do $BIN ping >/dev/null 2>&1 && break; sleep 0.1; done
T0=$(awk '{print $14+$15}' /proc/$PID/stat)
R=$($BENCH bench pb --json --workload $WL --duration 15 2>/dev/null | tail -1)
T1=$(awk '{print $14+$15}' /proc/$PID/stat)
OPS=$(echo "$R" | python3 -c "import json,sys; print(json.load(sys.stdin)['ops'])")
TICK=$(getconf CLK_TCK)
echo "$LABEL $WL $(date -u +%H:%M:%S) ops=$OPS us_per_op=$(python3 -c "print(round(($T1-$T0)*1e6/$TICK/$OPS,2))")"
kill $PID; wait $PID 2>/dev/null; rm -rf $D
