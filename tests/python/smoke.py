"""Smoke test of a running Eddy node with the real `riak` Python client (2.7.0),
over Protocol Buffers and over HTTP.

usage: smoke.py PB_PORT HTTP_PORT TYPED_BUCKET_TYPE
The bucket type must exist and be active, with allow_mult true. Exits non-zero on
the first failed check and prints OK at the end.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import riakcompat  # noqa: E402,F401  (must precede riak)
import riak  # noqa: E402


def check(cond, what):
    if not cond:
        raise SystemExit("FAILED: " + what)


def exercise(client, proto, typed):
    check(client.ping(), proto + " ping")
    bucket = client.bucket("smoke_" + proto)

    obj = bucket.new("k1", data={"coupon": "SAVE10", "n": 1})
    obj.usermeta = {"owner": "alice"}
    obj.add_index("affiliate_bin", "a1")
    obj.add_index("redeemed_int", 42)
    obj.store()
    got = bucket.get("k1")
    check(got.exists, proto + " stored object exists")
    check(got.data == {"coupon": "SAVE10", "n": 1}, proto + " JSON value round trip: %r" % (got.data,))
    check(got.content_type == "application/json", proto + " content type: %r" % got.content_type)
    check(got.usermeta.get("owner") == "alice", proto + " usermeta: %r" % (got.usermeta,))
    check(("affiliate_bin", "a1") in got.indexes, proto + " bin index: %r" % (got.indexes,))
    check(("redeemed_int", 42) in got.indexes, proto + " int index: %r" % (got.indexes,))
    check(got.vclock is not None, proto + " vclock returned")

    got.data = {"coupon": "SAVE10", "n": 2}
    got.store()
    check(bucket.get("k1").data["n"] == 2, proto + " update with context")

    text = bucket.new("k2", data="plain text", content_type="text/plain")
    text.store(return_body=True)
    check(text.data == "plain text", proto + " return_body")

    keys = sorted(bucket.get_keys())
    check(keys == ["k1", "k2"], proto + " list keys: %r" % keys)
    streamed = sorted(k for chunk in bucket.stream_keys() for k in chunk)
    check(streamed == ["k1", "k2"], proto + " stream keys: %r" % streamed)

    bucket.get("k1").delete()
    check(not bucket.get("k1").exists, proto + " deleted key is gone")
    check(sorted(bucket.get_keys()) == ["k2"], proto + " deleted key not listed")

    props = bucket.get_properties()
    check(props["n_val"] == 3 and props["allow_mult"] is False, proto + " default props: %r" % (props,))
    bucket.set_property("notfound_ok", False)
    check(bucket.get_property("notfound_ok") is False, proto + " set bucket property")
    bucket.clear_properties()
    check(bucket.get_property("notfound_ok") is True, proto + " reset bucket properties")

    names = [b.name for b in client.get_buckets()]
    check("smoke_" + proto in names, proto + " list buckets: %r" % names)

    sib_bucket = client.bucket_type(typed).bucket("siblings_" + proto)
    sib_bucket.new("k", data="one", content_type="text/plain").store()
    sib_bucket.new("k", data="two", content_type="text/plain").store()
    sibs = sib_bucket.get("k")
    values = sorted(s.data for s in sibs.siblings)
    check(values == ["one", "two"], proto + " siblings: %r" % values)
    sibs.siblings = [sibs.siblings[0]]
    sibs.store()
    check(len(sib_bucket.get("k").siblings) == 1, proto + " siblings resolved")

    missing = bucket.get("no-such-key")
    check(not missing.exists, proto + " missing key")


def exercise_2i(client, proto):
    """Secondary-index queries: terms, ranges with terms, pages, streams, regex."""
    bucket = client.bucket("smoke2i_" + proto)
    for i in range(7):
        obj = bucket.new("k%d" % i, data=i)
        obj.add_index("group_bin", "even" if i % 2 == 0 else "odd")
        obj.add_index("n_int", i * 5 - 10)
        obj.store()
    everyone = ["k%d" % i for i in range(7)]

    odd = sorted(bucket.get_index("group_bin", "odd"))
    check(odd == ["k1", "k3", "k5"], proto + " 2i equality: %r" % odd)
    # (An end of 0 would read as no end to the client, which then adds the start as the term.)
    pairs = list(bucket.get_index("n_int", -10, 1, return_terms=True))
    check(pairs == [(-10, "k0"), (-5, "k1"), (0, "k2")], proto + " 2i range with terms: %r" % pairs)
    regex = sorted(bucket.get_index("group_bin", "a", "z", term_regex="^od"))
    check(regex == ["k1", "k3", "k5"], proto + " 2i term_regex: %r" % regex)

    page, seen = bucket.get_index("n_int", -100, 100, max_results=3), []
    seen.extend(page)
    while page.has_next_page():
        page = page.next_page()
        seen.extend(page)
    check(seen == everyone, proto + " 2i pages: %r" % seen)

    streamed = sorted(k for chunk in bucket.stream_index("group_bin", "even") for k in chunk)
    check(streamed == ["k0", "k2", "k4", "k6"], proto + " 2i stream: %r" % streamed)
    page, seen = bucket.stream_index("n_int", -100, 100, max_results=4, return_terms=True), []
    while True:
        seen.extend(pair for chunk in page for pair in chunk)
        if not page.has_next_page():
            break
        page = page.next_page()
    check([k for _, k in seen] == everyone, proto + " 2i streamed pages: %r" % seen)
    check(seen[0] == (-10, "k0"), proto + " 2i streamed terms: %r" % seen)


def main():
    pb_port, http_port, typed = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    for proto in ("pbc", "http"):
        client = riak.RiakClient(protocol=proto, host="127.0.0.1", pb_port=pb_port, http_port=http_port)
        exercise(client, proto, typed)
        exercise_2i(client, proto)
        client.close()
    print("OK")


if __name__ == "__main__":
    main()
