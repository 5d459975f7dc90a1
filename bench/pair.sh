#!/bin/bash
# Part of docs/BENCHMARKS.md "Session 8": a fresh node, one `eddy bench pb` run, one JSON line.
# usage: pair.sh BIN LABEL WORKLOAD  (BIN: an eddy built with --features bench)
#  -> one fresh node, one bench pb run, prints json summary line
BIN=$1; LABEL=$2; WL=$3
D=$(mktemp -d /tmp/eddyb.XXXX)
EDDY_PLATFORM_DATA_DIR=$D $BIN start > $D/out.log 2>&1 &
PID=$!
for i in $(seq 1 100); do $BIN ping >/dev/null 2>&1 && break; sleep 0.1; done
R=$($BIN bench pb --json --workload $WL --duration 15 2>/dev/null | tail -1)
echo "$LABEL $WL $(date -u +%H:%M:%S) $(cut -d' ' -f1 /proc/loadavg) $R"
kill $PID; wait $PID 2>/dev/null; rm -rf $D
