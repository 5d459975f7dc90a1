#!/bin/bash
# docs/BENCHMARKS.md, History "Session 24": issue 28's figures at the seed's scale.
# usage: coupons-10m.sh BIN   (BIN: a release eddy built with `--features bench`)
# Starts `BIN dev-cluster 3` in a temporary directory (PB 10017/10027/10037, HTTP
# 10018/10028/10038: those ports must be free), loads 10,000,000 coupons with two index
# entries each (bench/coupons-8-cluster3-10m-load.toml), prints each node's resident
# memory, waits for the nodes to go idle (load average below 1, at most 10 minutes), then
# times one affiliate's coupons and a multi-get over PB
# (bench/coupons-9-cluster3-10m-queries-pb.toml), pages of max_results=100 of the
# redeemed_count_int range 0..99 begun at four places and continued once (HTTP, curl),
# the 50 % range 0..49 streamed whole (HTTP `stream=true`), counting its keys, then read
# again in pages of max_results=100000, and each node's resident memory after.
# KEEP=1 keeps the cluster's directory (the nodes are stopped either way).
set -euo pipefail
BIN=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(pwd)/bench-results/coupons-10m-$(date -u +%Y%m%dT%H%M%SZ)
D=$(mktemp -d /tmp/coup10m.XXXX)
cleanup() {
  (cd "$D" && "$BIN" dev-cluster stop >/dev/null 2>&1) || true
  if [ -n "${KEEP:-}" ]; then echo "kept $D"; else rm -rf "$D"; fi
}
trap cleanup EXIT
mkdir -p "$OUT"
cd "$D"
"$BIN" dev-cluster 3 > dev-cluster.log 2>&1 || { cat dev-cluster.log; exit 1; }
T0=$(date +%s.%N)
"$BIN" bench run "$HERE/coupons-8-cluster3-10m-load.toml" --out "$OUT/load" 2> "$OUT/load.err"
echo "load: $(printf '%.0f' "$(echo "$(date +%s.%N) - $T0" | bc)") s"
# VmRSS counts the pages of bitcask's memory-mapped data files that reads touched
# (RssFile: page cache the kernel reclaims); RssAnon is the node's own memory.
rss() {
  for pid in $(pgrep -f "$BIN start"); do
    echo "node $pid $1: $(awk '/^(VmRSS|RssAnon|RssFile)/ {printf "%s %d MiB  ", $1, $2/1024}' /proc/$pid/status)"
  done
}
rss "after the load"
# The nodes go on compacting after a big load; queries timed then measure the machine.
# Wait (at most 10 minutes) until the one-minute load average falls below 1.
for _ in $(seq 1 120); do
  awk '{exit !($1 < 1.0)}' /proc/loadavg && break
  sleep 5
done
echo "load average before the queries: $(cut -d' ' -f1-3 /proc/loadavg)"
"$BIN" bench run "$HERE/coupons-9-cluster3-10m-queries-pb.toml" --out "$OUT/queries" 2> "$OUT/queries.err"
python3 - <<'PY'
import json, time, urllib.request
base = "http://127.0.0.1:10018/buckets/coupons/index/redeemed_count_int"
def get(path):
    t = time.perf_counter(); body = urllib.request.urlopen(base + path).read()
    return (time.perf_counter() - t) * 1000, body
for start in (0, 25, 50, 75):
    times = []
    for _ in range(9):
        ms, body = get(f"/{start}/99?max_results=100")
        times.append(ms)
    page = json.loads(body)
    times2 = []
    for _ in range(9):
        ms, body2 = get(f"/{start}/99?max_results=100&continuation={page['continuation']}")
        times2.append(ms)
    times.sort(); times2.sort()
    print(f"page of 100 from term {start}: median {times[4]:.2f} ms (max {times[-1]:.2f}); "
          f"its next page: median {times2[4]:.2f} ms; keys {len(page['keys'])}, "
          f"{len(json.loads(body2)['keys'])}")
t = time.perf_counter(); keys = 0
with urllib.request.urlopen(base + "/0/49?stream=true") as r:
    buf = b""
    for chunk in iter(lambda: r.read(1 << 16), b""):
        keys += chunk.count(b'"coupon-')
secs = time.perf_counter() - t
print(f"range 0..49 streamed: {keys} keys in {secs:.2f} s, {keys / secs:,.0f} keys/s")
PY
python3 - <<'PY'
import json, time, urllib.parse, urllib.request
base = "http://127.0.0.1:10018/buckets/coupons/index/redeemed_count_int/0/49?max_results=100000"
t = time.perf_counter(); keys = 0; pages = 0; c = None
while True:
    url = base + (f"&continuation={urllib.parse.quote(c)}" if c else "")
    page = json.loads(urllib.request.urlopen(url).read())
    keys += len(page["keys"]); pages += 1; c = page.get("continuation")
    if not c:
        break
secs = time.perf_counter() - t
print(f"range 0..49 in {pages} pages of 100,000: {keys} keys in {secs:.2f} s, {keys / secs:,.0f} keys/s")
PY
rss "after the queries"
