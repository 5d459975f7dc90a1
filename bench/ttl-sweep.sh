#!/bin/bash
# docs/BENCHMARKS.md, History "Session 24": the expiry sweep of 1,000,000 coupons.
# A fresh node; bucket `expiring` gets a ttl of TTL seconds (default 90); 1,000,000
# coupons with two index entries are loaded into it (bench/ttl-sweep-load.toml); a 20 s
# run of plain puts to another bucket (`bench pb --workload put`) measures the rate with
# nothing expiring; a second such run starts as the first coupons expire, beside the
# sweep; then /stats' expired_total is read every second until every copy (n_val 3) is
# gone. Prints: the load's time, both put rates and their ratio, the sweep's time from
# the first expiry and from the last, and the server's CPU over the sweep.
# usage: ttl-sweep.sh BIN  (an eddy built with --features bench)
BIN=$1; TTL=${TTL:-90}; HERE=$(dirname "$0")
D=$(mktemp -d /tmp/eddyttl.XXXX)
. $HERE/ttl-common.sh
EDDY_PLATFORM_DATA_DIR=$D $BIN start > $D/out.log 2>&1 &
PID=$!
for i in $(seq 1 100); do $BIN ping >/dev/null 2>&1 && break; sleep 0.1; done
load_coupons
A=$(rate)
# The first coupons expire TTL s after the load began (whole seconds: one more).
python3 -c "import time; time.sleep(max(0, $T0 + $TTL + 1 - time.time()))"
CPU0=$(awk '{print $14+$15}' /proc/$PID/stat)
TS=$(date +%s.%N)
B=$(rate)
wait_expired 3000000
TE=$(date +%s.%N)
CPU1=$(awk '{print $14+$15}' /proc/$PID/stat)
python3 -c "
t0,t1,ts,te=$T0,$T1,$TS,$TE; a,b=$A,$B; tick=$(getconf CLK_TCK)
print('load %.1f s; puts/s alone %d, beside the sweep %d (%.2f); sweep %.1f s from the first expiry, %.1f s after the last; server CPU %.1f s over it' % (t1-t0, a, b, b/a, te-ts, te-(t1+$TTL+1), ($CPU1-$CPU0)/tick))
"
kill $PID; wait $PID 2>/dev/null; rm -rf $D
