"""Helpers of bench/datatypes.sh: print one run's line, preload a set, check the hot
counter. Standard library only.

usage: datatypes.py echo ECHO_OUT
       datatypes.py line NAME SUMMARY_JSON
       datatypes.py preload HTTP_ADDR KEY N      (adds N members to sets/b/KEY, 1,000 a request)
       datatypes.py hot HTTP_ADDR SUMMARY_JSON   (the counter hot0 must read the acknowledged count plus the probe)
"""
import json
import sys
import urllib.request


def op_summary(path):
    with open(path) as f:
        s = json.load(f)
    ops = s["ops"] if isinstance(s.get("ops"), list) else s["operations"]
    return ops[0]


def line(name, path):
    o = op_summary(path)
    print(f"{name}: {o['ops_per_s']:.0f} ops/s  n {o['n']}  errors {o['errors']}  "
          f"p50 {o['p50_us'] / 1000:.2f} ms  p99 {o['p99_us'] / 1000:.2f} ms")


def echo(path):
    with open(path) as f:
        last = f.read().strip().splitlines()[-1]
    print("echo:", last)


def post(http, path, body):
    req = urllib.request.Request(f"http://{http}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=120) as r:
        r.read()


def preload(http, key, n):
    n = int(n)
    for start in range(0, n, 1000):
        members = [f"p{i:08d}" for i in range(start, min(n, start + 1000))]
        post(http, f"/types/sets/buckets/b/datatypes/{key}", {"add_all": members})
    with urllib.request.urlopen(f"http://{http}/types/sets/buckets/b/datatypes/{key}",
                                timeout=120) as r:
        got = len(json.load(r)["value"])
    assert got == n, f"{key} holds {got} members, expected {n}"


def hot(http, path):
    o = op_summary(path)
    with urllib.request.urlopen(f"http://{http}/types/counters/buckets/b/datatypes/hot0",
                                timeout=30) as r:
        value = json.load(r)["value"]
    # The bench tries each operation once before the measured phase (its probe).
    expected = o["n"] + 1
    verdict = "exact" if value == expected and o["errors"] == 0 else "MISMATCH"
    print(f"hot counter: {o['n']} acknowledged + 1 probe, {o['errors']} failed, "
          f"reads {value}: {verdict}")


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    {"echo": echo, "line": line, "preload": preload, "hot": hot}[cmd](*args)
