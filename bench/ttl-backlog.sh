#!/bin/bash
# docs/BENCHMARKS.md, History "Session 27": the expiry sweep of a backlog of 1,000,000
# expired coupons. A fresh node; bucket `expiring` gets a ttl of TTL seconds (default
# 200: longer than the load and the first run of puts, so nothing expires before the
# stop; what does is counted and left out); 1,000,000 coupons with two index entries are loaded into it
# (bench/ttl-sweep-load.toml); a 20 s run of plain puts to another bucket measures the
# rate with nothing expiring; the node stops cleanly and stays down until every coupon
# has expired; it starts again on the same data directory and a second 20 s run of
# puts starts at once, beside the sweep of all 3,000,000 expired copies (n_val 3), whose
# progress /stats' expired_total gives every second. Prints: the load's time, both put
# rates and their ratio, the sweep's time from the restart, and the server's CPU
# over it.
# usage: ttl-backlog.sh BIN  (an eddy built with --features bench)
BIN=$1; TTL=${TTL:-200}; HERE=$(dirname "$0")
D=$(mktemp -d /tmp/eddyttl.XXXX)
. $HERE/ttl-common.sh
start() {
  EDDY_PLATFORM_DATA_DIR=$D $BIN start >> $D/out.log 2>&1 &
  PID=$!
  for i in $(seq 1 300); do $BIN ping >/dev/null 2>&1 && break; sleep 0.1; done
}
start
load_coupons
A=$(rate)
LEFT=$(( 3000000 - $(expired) ))
kill $PID; wait $PID 2>/dev/null
# The last coupons expire TTL s after the load ended (whole seconds: one more).
python3 -c "import time; time.sleep(max(0, $T1 + $TTL + 2 - time.time()))"
TS=$(date +%s.%N)
start
CPU0=$(awk '{print $14+$15}' /proc/$PID/stat)
rate > $D/rate-b &
RP=$!
wait_expired $LEFT
TE=$(date +%s.%N)
CPU1=$(awk '{print $14+$15}' /proc/$PID/stat)
wait $RP; B=$(cat $D/rate-b)
python3 -c "
t0,t1,ts,te=$T0,$T1,$TS,$TE; a,b=$A,$B; tick=$(getconf CLK_TCK)
print('load %.1f s; puts/s alone %d, beside the sweep %d (%.2f); %d expired copies swept %.1f s after the restart; server CPU %.1f s over it' % (t1-t0, a, b, b/a, $LEFT, te-ts, ($CPU1-$CPU0)/tick))
"
kill $PID; wait $PID 2>/dev/null; rm -rf $D
