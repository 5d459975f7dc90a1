#!/bin/bash
# docs/BENCHMARKS.md, History "Session 24": a fresh node, 20 s of PB puts with two index
# entries each (bench/indexed-put.toml); prints one line:
# LABEL time puts/s p50-µs p99-µs errors.
# usage: indexed-put.sh BIN LABEL  (BENCH, the load generator: an eddy built with
# --features bench; default target/release/eddy)
BIN=$1; LABEL=$2; BENCH=${BENCH:-target/release/eddy}; HERE=$(dirname "$0")
D=$(mktemp -d /tmp/eddyip.XXXX)
EDDY_PLATFORM_DATA_DIR=$D $BIN start > $D/out.log 2>&1 &
PID=$!
for i in $(seq 1 100); do $BIN ping >/dev/null 2>&1 && break; sleep 0.1; done
$BENCH bench run --out $D/put $HERE/indexed-put.toml > $D/put.log 2>&1
python3 -c "
import json; s=json.load(open('$D/put/summary.json'))
o=s['ops'][0]
print('$LABEL', '$(date -u +%H:%M:%S)', round(o['ops_per_s']), o['p50_us'], o['p99_us'],
      'errors', o['errors'])
" || true
kill $PID; wait $PID 2>/dev/null; rm -rf $D
