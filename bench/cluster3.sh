#!/bin/bash
# Part of docs/BENCHMARKS.md "Session 8": three nodes on loopback, joined, then PB load on all three at once.
# usage: cluster3.sh BIN SECONDS  (BIN: an eddy built with --features bench)
# -> 3 release nodes joined and settled, then 3 bench pb mixed runs (one per node, 11 conns each) at once
BIN=$1; SECS=${2:-20}
D=$(mktemp -d /tmp/c3b.XXXX)
for i in 1 2 3; do mkdir -p $D/d$i; cat > $D/d$i/eddy.toml <<EOT
nodename = "dev$i@127.0.0.1"
platform_data_dir = "$D/d$i/data"
"listener.http.internal" = "127.0.0.1:2${i}018"
"listener.protobuf.internal" = "127.0.0.1:2${i}017"
"listener.cluster.internal" = "127.0.0.1:2${i}019"
EOT
EDDY_LOG_LEVEL=warn $BIN start --config $D/d$i/eddy.toml > $D/d$i/log 2>&1 &
done
for i in 1 2 3; do for t in $(seq 1 100); do $BIN ping --config $D/d$i/eddy.toml >/dev/null 2>&1 && break; sleep 0.1; done; done
T0=$(date +%s.%N)
for i in 2 3; do $BIN admin cluster join dev1@127.0.0.1 --address 127.0.0.1:21019 --config $D/d$i/eddy.toml >/dev/null; done
$BIN admin cluster commit --config $D/d1/eddy.toml > /dev/null
for t in $(seq 1 600); do
  OUT=$($BIN admin member-status --config $D/d1/eddy.toml)
  if [ $(echo "$OUT" | grep -c "^valid .*--") = 3 ] && $BIN admin transfers --config $D/d1/eddy.toml | grep -q "No transfers"; then break; fi
  sleep 0.05
done
echo "settled_s $(echo "$(date +%s.%N) - $T0" | bc)"
for i in 1 2 3; do $BIN bench pb --addr 127.0.0.1:2${i}017 --connections 11 --workload mixed --read-percent 50 --duration $SECS --keys 30000 --json --baseline 5 > $D/b$i.json 2>$D/b$i.err & done
wait %4 %5 %6 2>/dev/null; sleep 1
for i in 1 2 3; do while pgrep -f "2${i}017 --connections" >/dev/null; do sleep 1; done; done
python3 - $D <<'PY'
import json,sys
d=sys.argv[1]; tot=0; base=0; p99=[]
for i in (1,2,3):
    j=json.loads(open(f"{d}/b{i}.json").read().strip().splitlines()[-1])
    tot+=j['ops_per_s']; base+=j['baseline']['ops_per_s']; p99.append((j.get('get',{}).get('p99_us'), j.get('put',{}).get('p99_us'), j['errors']))
print(f"cluster3 ops/s {tot:.0f} echo(sum of 3 concurrent) {base:.0f} ratio {tot/base:.3f} p99(get,put,errors) {p99}")
PY
for i in 1 2 3; do $BIN stop --config $D/d$i/eddy.toml >/dev/null 2>&1; done
rm -rf "$D"
