# Shared by bench/ttl-sweep.sh and bench/ttl-backlog.sh (sourced; BIN, TTL, HERE and D
# set by the caller). The node listens on the default ports.

# Sets bucket `expiring`'s ttl to TTL and loads 1,000,000 coupons into it
# (bench/ttl-sweep-load.toml); T0 and T1: when the load began and ended.
load_coupons() {
  curl -s -XPUT -H 'Content-Type: application/json' localhost:8098/buckets/expiring/props \
    -d "{\"props\":{\"ttl\":$TTL}}"
  T0=$(date +%s.%N)
  $BIN bench run --out $D/load $HERE/ttl-sweep-load.toml > $D/load.log 2>&1
  T1=$(date +%s.%N)
}

# Plain puts to another bucket for 20 s: prints their rate.
rate() {
  $BIN bench pb --json --workload put --duration 20 2>/dev/null | tail -1 |
    python3 -c "import json,sys; j=json.load(sys.stdin); print(round(j['ops']/j['elapsed_s']))"
}

# The node's expired_total.
expired() {
  curl -s localhost:8098/stats |
    python3 -c "import json,sys; print(json.load(sys.stdin).get('expired_total', 0))"
}

# Waits (at most 900 s from TS) until expired_total reaches $1.
wait_expired() {
  while [ "$(expired)" -lt "$1" ]; do
    sleep 1
    if [ $(( $(date +%s) - ${TS%.*} )) -gt 900 ]; then echo "sweep: gave up at $(expired)"; break; fi
  done
}
