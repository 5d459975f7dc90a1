#!/bin/bash
# docs/BENCHMARKS.md, History "Session 23": a fresh node, 10,000 keys loaded, 20 s of
# PB multi-gets of 100 keys; prints one line: LABEL time requests/s errors.
# usage: multiget.sh BIN LABEL  (BENCH, the load generator: an eddy built with
# --features bench; default target/release/eddy)
BIN=$1; LABEL=$2; BENCH=${BENCH:-target/release/eddy}; HERE=$(dirname "$0")
D=$(mktemp -d /tmp/eddymg.XXXX)
EDDY_PLATFORM_DATA_DIR=$D $BIN start > $D/out.log 2>&1 &
PID=$!
for i in $(seq 1 100); do $BIN ping >/dev/null 2>&1 && break; sleep 0.1; done
$BENCH bench run --out $D/load $HERE/multiget-1-load.toml > $D/load.log 2>&1
$BENCH bench run --out $D/mg $HERE/multiget-2-read.toml > $D/mg.log 2>&1
python3 -c "
import json; s=json.load(open('$D/mg/summary.json'))
print('$LABEL', '$(date -u +%H:%M:%S)', round(sum(o['ops_per_s'] for o in s['ops'])),
      'errors', sum(sum(o['errors_by_kind'].values()) for o in s['ops']))
"
kill $PID; wait $PID 2>/dev/null; rm -rf $D
