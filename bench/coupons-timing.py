#!/usr/bin/env python3
"""Times issue 13's coupon queries against a cluster whose bucket "coupons" holds
100,000 coupons loaded by bench/coupons-4-cluster3-load.toml; called by
bench/coupons-cluster3.sh, which prints what this prints.

usage: coupons-timing.py RUNS LOAD_SUMMARY_JSON ECHO_JSON HTTP_PORT,... PB_PORT,...

Each query runs once untimed, then RUNS times (the nodes taken in turn); its line gives
min / median / max and the median in loopback-echo round trips (the 1-connection echo
p50 of `eddy bench pb --baseline`). Timed is the exchange only: from sending the request
to the last byte of the answer, on a connection opened beforehand; the answers are
decoded and checked afterwards (2i counts against the MapReduce counts, every key of a
multi-get and of the parallel GETs found). The 200 parallel GETs come with 200 parallel
PB pings on the same connections, the floor this client and the nodes' connection
handling put under them. Standard library only; PB messages are encoded by hand.
"""

import http.client
import json
import random
import selectors
import socket
import statistics
import struct
import sys
import time

BUCKET = b"coupons"
KEYS = 100_000
AFFILIATES = 1_000
BATCH = 200
PARALLEL = 200

# PB message codes (crates/wire/src/codes.rs).
PING_REQ, PING_RESP = 1, 2
GET_REQ, GET_RESP = 9, 10
INDEX_REQ, INDEX_RESP = 25, 26
MULTI_GET_REQ, MULTI_GET_RESP = 160, 161
ERROR_RESP = 0

COUNT_JS = {
    "inputs": "coupons",
    "query": [
        {"map": {"language": "javascript", "source":
            "function(v){var d=JSON.parse(v.values[0].data);var o={};o[d.affiliate_id]=1;return [o];}"}},
        {"reduce": {"language": "javascript", "source":
            "function(vs){var a={};vs.forEach(function(o){for(var k in o){a[k]=(a[k]||0)+o[k];}});return [a];}"}},
    ],
}
# Untimed check of the 2i range: coupons with redeemed_count < 50, counted from the data.
BELOW_50_JS = {
    "inputs": "coupons",
    "query": [
        {"map": {"language": "javascript", "source":
            "function(v){var d=JSON.parse(v.values[0].data);return [d.redeemed_count<50?1:0];}"}},
        {"reduce": {"language": "javascript", "source":
            "function(vs){var s=0;vs.forEach(function(x){s+=x;});return [s];}"}},
    ],
}


def key(n):
    return f"coupon-{n:012d}"


# --- PB by hand ----------------------------------------------------------------------

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, data):
    """A length-delimited field."""
    return varint(num << 3 | 2) + varint(len(data)) + data


def field_int(num, value):
    return varint(num << 3) + varint(value)


def frame(code, message):
    return struct.pack(">IB", len(message) + 1, code) + message


def fields(buf):
    """(number, value) of each field: bytes for length-delimited, int for varints."""
    i = 0
    while i < len(buf):
        tag, i = read_varint(buf, i)
        num, wire = tag >> 3, tag & 7
        if wire == 0:
            value, i = read_varint(buf, i)
        elif wire == 2:
            n, i = read_varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        else:
            raise ValueError(f"wire type {wire}")
        yield num, value


def read_varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


class Pb:
    """One PB connection."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def frame_ready(self):
        """The next frame if the buffer holds all of it."""
        if len(self.buf) < 4:
            return None
        n = struct.unpack(">I", self.buf[:4])[0]
        if len(self.buf) < 4 + n:
            return None
        code, body = self.buf[4], self.buf[5:4 + n]
        self.buf = self.buf[4 + n:]
        return code, body

    def recv_frame(self):
        while (f := self.frame_ready()) is None:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        return f

    def exchange(self, data, want):
        t0 = time.perf_counter()
        self.send(data)
        code, body = self.recv_frame()
        elapsed = time.perf_counter() - t0
        if code != want:
            raise RuntimeError(f"PB answer {code} ({bytes(body)[:200]!r}), wanted {want}")
        return elapsed, body


# --- HTTP ----------------------------------------------------------------------------

def http_exchange(conn, method, path, body=None):
    headers = {"content-type": "application/json"} if body is not None else {}
    t0 = time.perf_counter()
    conn.request(method, path, body=body, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    elapsed = time.perf_counter() - t0
    if resp.status != 200:
        raise RuntimeError(f"{method} {path}: HTTP {resp.status}: {data[:200]!r}")
    return elapsed, data


# --- the queries ---------------------------------------------------------------------

class Cluster:
    def __init__(self, http_ports, pb_ports):
        self.http = [http.client.HTTPConnection("127.0.0.1", p) for p in http_ports]
        self.pb = [Pb(p) for p in pb_ports]
        self.pb_ports = pb_ports
        self.rng = random.Random(13)

    def mapred(self, run, job):
        return http_exchange(self.http[run % len(self.http)], "POST", "/mapred", json.dumps(job))

    def range_2i(self, run):
        conn = self.http[run % len(self.http)]
        t, data = http_exchange(conn, "GET", "/buckets/coupons/index/redeemed_count_int/0/49")
        return t, len(json.loads(data)["keys"])

    def affiliate_http(self, run, affiliate):
        conn = self.http[run % len(self.http)]
        path = f"/buckets/coupons/index/affiliate_bin/affiliate-{affiliate}"
        t, data = http_exchange(conn, "GET", path)
        return t, len(json.loads(data)["keys"])

    def affiliate_pb(self, run, affiliate):
        req = (field(1, BUCKET) + field(2, b"affiliate_bin") + field_int(3, 0)
               + field(4, f"affiliate-{affiliate}".encode()))
        t, body = self.pb[run % len(self.pb)].exchange(frame(INDEX_REQ, req), INDEX_RESP)
        return t, sum(1 for num, _ in fields(body) if num == 1)

    def batch(self):
        return [key(n) for n in self.rng.sample(range(KEYS), BATCH)]

    def multi_get_http(self, run):
        body = json.dumps({"keys": self.batch()})
        conn = self.http[run % len(self.http)]
        t, data = http_exchange(conn, "POST", "/buckets/coupons/multi/get", body)
        results = json.loads(data)["results"]
        missing = [r for r in results if r["status"] != "ok"]
        if len(results) != BATCH or missing:
            raise RuntimeError(f"multi-get over HTTP: {len(results)} results, not ok: {missing[:3]}")
        return t, len(results)

    def multi_get_pb(self, run):
        req = field(1, BUCKET) + b"".join(field(3, k.encode()) for k in self.batch())
        t, body = self.pb[run % len(self.pb)].exchange(frame(MULTI_GET_REQ, req), MULTI_GET_RESP)
        results = [dict(fields(r)) for num, r in fields(body) if num == 1]
        bad = [r for r in results if r.get(2, 0) != 0]
        if len(results) != BATCH or bad:
            raise RuntimeError(f"multi-get over PB: {len(results)} results, {len(bad)} not ok")
        return t, len(results)


class Parallel:
    """PARALLEL PB connections spread over the nodes, each sending one request at once."""

    def __init__(self, pb_ports, rng):
        self.conns = [Pb(pb_ports[i % len(pb_ports)]) for i in range(PARALLEL)]
        self.rng = rng
        self.sel = selectors.DefaultSelector()
        for c in self.conns:
            c.sock.setblocking(False)
            self.sel.register(c.sock, selectors.EVENT_READ, c)

    def burst(self, frames, want):
        """Sends frame i on connection i, all at once; the time until every answer is
        in, and the answers' bodies."""
        pending, bodies = len(self.conns), []
        t0 = time.perf_counter()
        for c, f in zip(self.conns, frames):
            c.sock.send(f)  # a few dozen bytes: the socket buffer takes it whole
        while pending:
            for sk, _ in self.sel.select():
                c = sk.data
                c.buf += c.sock.recv(1 << 16)
                if (got := c.frame_ready()) is not None:
                    pending -= 1
                    code, body = got
                    if code != want:
                        raise RuntimeError(f"answer {code}, wanted {want}: {bytes(body)[:200]!r}")
                    bodies.append(body)
        return time.perf_counter() - t0, bodies

    def gets(self, run):
        frames = [frame(GET_REQ, field(1, BUCKET) + field(2, key(n).encode()))
                  for n in self.rng.sample(range(KEYS), PARALLEL)]
        elapsed, bodies = self.burst(frames, GET_RESP)
        found = sum(any(num == 1 for num, _ in fields(b)) for b in bodies)
        if found != PARALLEL:
            raise RuntimeError(f"{PARALLEL - found} of {PARALLEL} parallel gets found nothing")
        return elapsed, found

    def pings(self, run):
        """The floor under `gets`: the same burst of requests the nodes answer at once."""
        elapsed, bodies = self.burst([frame(PING_REQ, b"")] * PARALLEL, PING_RESP)
        return elapsed, len(bodies)


def timed(runs, once):
    """once(run) -> (seconds, count): one untimed run, then `runs` timed ones."""
    once(0)
    results = [once(run) for run in range(1, runs + 1)]
    times = [t for t, _ in results]
    counts = sorted({n for _, n in results})
    return min(times), statistics.median(times), max(times), counts


def main():
    runs, load_path, echo_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    http_ports = [int(p) for p in sys.argv[4].split(",")]
    pb_ports = [int(p) for p in sys.argv[5].split(",")]
    load = json.load(open(load_path))
    echo_get = json.load(open(echo_path))
    echo = echo_get["baseline"]
    echo_rtt_s = echo["p50_us"] / 1e6
    c = Cluster(http_ports, pb_ports)

    # The data, counted by MapReduce (untimed): coupons per affiliate, and below 50.
    _, data = c.mapred(0, COUNT_JS)
    per_affiliate = {int(a): n for a, n in json.loads(data)[0].items()}
    total = sum(per_affiliate.values())
    _, data = c.mapred(1, BELOW_50_JS)
    below_50 = json.loads(data)[0]
    if total != KEYS:
        raise SystemExit(f"MapReduce counted {total} coupons, not {KEYS}: the load is incomplete")

    affiliates = [c.rng.randrange(AFFILIATES) for _ in range(runs + 1)]

    def check_affiliate(query):
        def once(run):
            t, n = query(run, affiliates[run])
            want = per_affiliate.get(affiliates[run], 0)
            if n != want:
                raise RuntimeError(f"affiliate-{affiliates[run]}: 2i found {n}, the data holds {want}")
            return t, n
        return once

    def check_range(run):
        t, n = c.range_2i(run)
        if n != below_50:
            raise RuntimeError(f"2i range 0..49 found {n}, the data holds {below_50}")
        return t, n

    def mapreduce(run):
        t, data = c.mapred(run, COUNT_JS)
        got = sum(json.loads(data)[0].values())
        if got != KEYS:
            raise RuntimeError(f"MapReduce counted {got}")
        return t, got

    parallel = Parallel(pb_ports, c.rng)
    rows = [
        ("2i range redeemed_count_int 0..49 (HTTP)", timed(runs, check_range), 0.050),
        ("2i one affiliate, affiliate_bin (HTTP)", timed(runs, check_affiliate(c.affiliate_http)), 0.002),
        ("2i one affiliate, affiliate_bin (PB)", timed(runs, check_affiliate(c.affiliate_pb)), 0.002),
        ("JS MapReduce: count per affiliate", timed(max(3, runs // 3), mapreduce), 1.0),
        ("multi-get 200 keys (HTTP multi/get)", timed(runs, c.multi_get_http), 0.005),
        ("multi-get 200 keys (PB 160)", timed(runs, c.multi_get_pb), 0.005),
        ("200 parallel GETs (200 PB conns)", timed(runs, parallel.gets), 0.005),
        ("200 parallel PB pings (their floor)", timed(runs, parallel.pings), None),
    ]

    put = next(o for o in load["ops"] if o["op"] == "put")
    load_echo = load.get("baseline") or {}
    share = put["ops_per_s"] / load_echo["ops_per_s"] if load_echo else float("nan")
    print(f"loopback echo: 1 conn p50 {echo['p50_us']:.0f} µs (round trip) · "
          f"{load['concurrent']} conns {load_echo.get('ops_per_s', 0):,.0f} ops/s (the load's mix) · "
          f"one PB GET on 1 conn: p50 {echo_get['p50_us']:.0f} µs")
    print(f"load: {put['n']:,} coupons by {load['concurrent']} PB conns in {load['elapsed_s']:.2f} s "
          f"(goal ≤ 8 s) · {put['ops_per_s']:,.0f} puts/s = {share:.0%} of echo · "
          f"p50 {put['p50_us'] / 1000:.1f} ms p99 {put['p99_us'] / 1000:.1f} ms · "
          f"errors {put['errors']} · {load['ending']['reason']}")
    print(f"{'query':<42} {'answers':>9} {'min':>9} {'median':>9} {'max':>9} {'goal':>8} {'med/echo':>9}")
    for name, (lo, med, hi, counts), goal in rows:
        answers = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
        goal = ms(goal) if goal else "—"
        print(f"{name:<42} {answers:>9} {ms(lo):>9} {ms(med):>9} {ms(hi):>9} "
              f"{goal:>8} {med / echo_rtt_s:>8.0f}×")
    print(f"({runs} timed runs each after one untimed, MapReduce {max(3, runs // 3)}; "
          f"ms; checked: {total:,} coupons, {below_50:,} below 50, "
          f"{len(per_affiliate)} affiliates)")


def ms(seconds):
    return f"{seconds * 1000:.1f}" if seconds < 10 else f"{seconds:.1f} s"


if __name__ == "__main__":
    main()
