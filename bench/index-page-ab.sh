#!/bin/bash
# docs/BENCHMARKS.md, History "Session 25": 2i pages of one build against another on the
# same data directory, alternated.
# usage: index-page-ab.sh OLD_BIN NEW_BIN [ROUNDS]   (both release builds; NEW_BIN with
# `--features bench`, which loads the data)
# One node (ports 8087/8098: they must be free) loads 100,000 coupons
# (bench/coupons-1-load.toml: `redeemed_count_int` over 100 terms); then, ROUNDS times
# (default 2), each build in turn starts on that directory and answers, over HTTP from
# Python (one keep-alive connection): 300 pages of max_results=100 of the range 0..99
# begun at rotating terms, each followed by its next page; and the range 0..49 unpaged
# (about 50,000 keys), 9 times. Prints medians and p99s per build and round.
set -euo pipefail
OLD=$(realpath "$1"); NEW=$(realpath "$2"); ROUNDS=${3:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
D=$(mktemp -d /tmp/idxab.XXXX)
PID=
stop() { if [ -n "$PID" ]; then kill "$PID"; wait "$PID" 2>/dev/null || true; PID=; fi; }
trap 'stop; rm -rf "$D"' EXIT
start() {
  EDDY_PLATFORM_DATA_DIR=$D "$1" start >> "$D/out.log" 2>&1 &
  PID=$!
  for _ in $(seq 1 300); do "$1" ping >/dev/null 2>&1 && return; sleep 0.1; done
  echo "node did not start"; exit 1
}
start "$NEW"
"$NEW" bench run "$HERE/coupons-1-load.toml" --out "$D/load" > "$D/load.out" 2>&1
grep -E "^put " "$D/load.out"
stop
for round in $(seq 1 "$ROUNDS"); do
  for which in old new; do
    BIN=$OLD; [ "$which" = new ] && BIN=$NEW
    start "$BIN"
    LABEL="round $round $which" python3 - <<'PY'
import http.client, json, os, statistics, time
c = http.client.HTTPConnection("127.0.0.1", 8098)
base = "/buckets/coupons/index/redeemed_count_int"
def get(path):
    t = time.perf_counter(); c.request("GET", base + path); body = c.getresponse().read()
    return (time.perf_counter() - t) * 1000, json.loads(body)
for i in range(30):
    get(f"/{i}/99?max_results=100")
first, nxt = [], []
for i in range(300):
    ms, page = get(f"/{i % 100}/99?max_results=100"); first.append(ms)
    if page.get("continuation"):
        ms, _ = get(f"/{i % 100}/99?max_results=100&continuation={page['continuation']}")
        nxt.append(ms)
whole = []
for _ in range(9):
    ms, page = get("/0/49"); whole.append(ms); n = len(page["keys"])
def q(xs, p): xs = sorted(xs); return xs[min(len(xs) - 1, int(len(xs) * p))]
print(f"{os.environ['LABEL']}: page of 100 p50 {statistics.median(first):.3f} ms p99 {q(first, .99):.3f}; "
      f"next page p50 {statistics.median(nxt):.3f} p99 {q(nxt, .99):.3f}; "
      f"range 0..49 unpaged ({n} keys) p50 {statistics.median(whole):.1f} ms, "
      f"{n / statistics.median(whole) * 1000:,.0f} keys/s")
PY
    stop
  done
done
