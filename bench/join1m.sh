#!/bin/bash
# Part of docs/BENCHMARKS.md: a fourth node joins a three-node cluster holding OBJECTS
# objects of 1 KiB, with PB reads and writes running throughout.
# usage: join1m.sh BIN [OBJECTS] [DIR]  (BIN: an eddy built with --features bench)
# Prints: fio's sequential write rate on DIR's filesystem (same run), the load time,
# the join's handoff time (commit -> no transfers, ring settled), the bytes the new
# node received (its data directory) and their rate as a share of fio, and the load's
# rate and p99 in 3-second slices while the transfers ran.
set -euo pipefail
BIN=$(realpath "$1"); OBJECTS=${2:-1000000}; BASE=${3:-/tmp}
D=$(mktemp -d "$BASE/j1m.XXXX")
cleanup() { for i in 1 2 3 4; do "$BIN" stop --config "$D/d$i/eddy.toml" >/dev/null 2>&1 || true; done; rm -rf "$D"; }
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap - EXIT
conf() { mkdir -p "$D/d$1"; cat > "$D/d$1/eddy.toml" <<EOT
nodename = "dev$1@127.0.0.1"
platform_data_dir = "$D/d$1/data"
"listener.http.internal" = "127.0.0.1:3${1}018"
"listener.protobuf.internal" = "127.0.0.1:3${1}017"
"listener.cluster.internal" = "127.0.0.1:3${1}019"
EOT
}
start() { conf "$1"; EDDY_LOG_LEVEL=warn "$BIN" start --config "$D/d$1/eddy.toml" > "$D/d$1/log" 2>&1 &
  for _ in $(seq 1 100); do "$BIN" ping --config "$D/d$1/eddy.toml" >/dev/null 2>&1 && return; sleep 0.1; done; echo "node $1 did not start"; exit 1; }
admin() { local i=$1; shift; "$BIN" admin "$@" --config "$D/d$i/eddy.toml"; }
settled() { # every member valid, no transfers
  local n=$1 out; out=$(admin 1 member-status)
  [ "$(echo "$out" | grep -c '^valid')" = "$n" ] && admin 1 transfers | grep -q "No transfers"; }
now() { date +%s.%N; }

# fio: sequential 1 MiB writes of 2 GiB, end fsync, on the same filesystem.
FIO=$(fio --name=seqw --directory="$D" --rw=write --bs=1M --size=2G --ioengine=psync --end_fsync=1 --output-format=json | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["write"]["bw_bytes"])')
rm -f "$D"/seqw*
echo "fio_seq_write_MBps $(echo "$FIO/1000000" | bc)"

for i in 1 2 3; do start $i; done
for i in 2 3; do admin $i cluster join dev1@127.0.0.1 --address 127.0.0.1:31019 >/dev/null; done
admin 1 cluster commit >/dev/null
until settled 3; do sleep 0.1; done

T0=$(now)
"$BIN" bench pb --addr 127.0.0.1:31017 --workload get --keys "$OBJECTS" --value-size 1024 --duration 1 --baseline 0 --connections 32 --json > "$D/load.json" 2>"$D/load.err"
echo "load_s $(echo "$(now) - $T0" | bc) objects $OBJECTS"
for i in 1 2 3; do echo "node$i partitions_MB $(du -sm "$D/d$i/data/partitions" | cut -f1)"; ls "$D/d$i/data/partitions" > "$D/before$i"; done

# The load during the join: 3-second mixed runs on nodes 1-3 until the transfers end.
[ "${LOAD:-1}" = 1 ] && touch "$D/loading"
( n=0; while [ -e "$D/loading" ]; do n=$((n+1))
    "$BIN" bench pb --addr "127.0.0.1:3$(( (n % 3) + 1 ))017" --workload mixed --read-percent 50 --skip-preload --keys "$OBJECTS" --duration 3 --baseline 0 --connections 16 --json >> "$D/during.json" 2>>"$D/during.err" || true
  done ) &
LOADER=$!
sleep 3
start 4
T1=$(now)
[ -n "${LIMIT:-}" ] && for i in 1 2 3 4; do admin $i transfer-limit "$LIMIT" >/dev/null; done
admin 4 cluster join dev1@127.0.0.1 --address 127.0.0.1:31019 >/dev/null
admin 1 cluster plan >/dev/null
admin 1 cluster commit >/dev/null
until settled 4; do sleep 0.2; done
T2=$(now)
rm -f "$D/loading"; wait $LOADER
HANDOFF=$(echo "$T2 - $T1" | bc)
# What every node received: its partitions that were not there before the join
# (the 3 -> 4 join lays the ring out afresh, so the old members trade partitions too).
touch "$D/before4"; KB=0; MOVED=0
for i in 1 2 3 4; do for p in $(ls "$D/d$i/data/partitions"); do
  grep -qx "$p" "$D/before$i" && continue
  MOVED=$((MOVED+1)); KB=$((KB + $(du -sk "$D/d$i/data/partitions/$p" | cut -f1)))
done; done
MB=$((KB / 1024))
echo "node4_received_MB $(du -sm "$D/d4/data/partitions" | cut -f1) partitions_moved $MOVED"
echo "join_handoff_s $HANDOFF received_MB $MB rate_MBps $(echo "scale=1; $MB*1.048576/$HANDOFF" | bc) share_of_fio $(echo "scale=3; $MB*1048576/$HANDOFF/$FIO" | bc)"
touch "$D/during.json"; python3 - "$D/during.json" <<'PY'
import json,sys
for line in open(sys.argv[1]):
    line=line.strip()
    if not line.startswith('{'): continue
    j=json.loads(line)
    g=j.get('get',{}); p=j.get('put',{})
    print(f"during: {j['ops_per_s']:.0f} ops/s  get p99 {g.get('p99_us',0)/1000:.1f} ms  put p99 {p.get('p99_us',0)/1000:.1f} ms  errors {j['errors']}")
PY
