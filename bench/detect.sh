#!/bin/bash
# Part of docs/BENCHMARKS.md "Session 8": three nodes, one killed with SIGKILL; time until ring-status names it unreachable, then w = 2 writes.
BIN=$1
D=$(mktemp -d /tmp/det.XXXX)
for i in 1 2 3; do mkdir -p $D/d$i; cat > $D/d$i/eddy.toml <<EOT
nodename = "dev$i@127.0.0.1"
platform_data_dir = "$D/d$i/data"
"listener.http.internal" = "127.0.0.1:3${i}018"
"listener.protobuf.internal" = "127.0.0.1:3${i}017"
"listener.cluster.internal" = "127.0.0.1:3${i}019"
EOT
EDDY_LOG_LEVEL=warn $BIN start --config $D/d$i/eddy.toml > $D/d$i/log 2>&1 &
done
for i in 1 2 3; do for t in $(seq 1 100); do $BIN ping --config $D/d$i/eddy.toml >/dev/null 2>&1 && break; sleep 0.1; done; done
for i in 2 3; do $BIN admin cluster join dev1@127.0.0.1 --address 127.0.0.1:31019 --config $D/d$i/eddy.toml >/dev/null; done
$BIN admin cluster commit --config $D/d1/eddy.toml > /dev/null
sleep 3
PID=$(pgrep -f "$D/d3/eddy.toml")
T0=$(date +%s.%N); kill -9 $PID
for t in $(seq 1 200); do
  if $BIN admin ring-status --config $D/d1/eddy.toml 2>/dev/null | grep -q "unreachable: \['dev3"; then echo "detected_s $(echo "$(date +%s.%N) - $T0" | bc)"; break; fi
  sleep 0.02
done
# a w=3 pw=0 write that needs a fallback for dev3's replicas
OK=0; for k in $(seq 1 50); do c=$(curl -s -o /dev/null -w "%{http_code}" -XPUT -H 'content-type: text/plain' -d v "http://127.0.0.1:31018/buckets/b/keys/f$k?w=2"); [ "$c" = 204 ] && OK=$((OK+1)); done
echo "w2_writes_ok $OK/50 at $(echo "$(date +%s.%N) - $T0" | bc)s after the kill"
for i in 1 2; do $BIN stop --config $D/d$i/eddy.toml >/dev/null 2>&1; done
rm -rf $D
