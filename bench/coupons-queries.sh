#!/bin/bash
# Times the coupon queries (2i range and equality, MapReduce counts) against a
# node whose bucket "coupons" was loaded by bench/coupons-1-load.toml; needs curl.
# usage: coupons-queries.sh HTTP_PORT (three runs of each query).
P=$1
t() { for i in 1 2 3; do curl -s -o ${OUT:-/tmp/coupons-q.json} -w "%{time_total} " "$@"; done; echo; }
echo -n "2i range 0..49 (keys): "; t "http://127.0.0.1:$P/buckets/coupons/index/redeemed_count_int/0/49"
python3 -c "import json;print(' results', len(json.load(open('${OUT:-/tmp/coupons-q.json}'))['keys']))"
echo -n "2i eq 7: "; t "http://127.0.0.1:$P/buckets/coupons/index/redeemed_count_int/7"
JS='{"inputs":"coupons","query":[{"map":{"language":"javascript","source":"function(v){var d=JSON.parse(v.values[0].data);var o={};o[d.affiliate_id]=1;return [o];}"}},{"reduce":{"language":"javascript","source":"function(vs){var a={};vs.forEach(function(o){for(var k in o){a[k]=(a[k]||0)+o[k];}});return [a];}"}}]}'
echo -n "MR JS count per affiliate: "; t -XPOST -H 'content-type: application/json' "http://127.0.0.1:$P/mapred" -d "$JS"
python3 -c "import json;r=json.load(open('${OUT:-/tmp/coupons-q.json}'));print(' affiliates', len(r[0]), 'total', sum(r[0].values()))"
ER='{"inputs":"coupons","query":[{"reduce":{"language":"erlang","module":"riak_kv_mapreduce","function":"reduce_count_inputs"}}]}'
echo -n "MR Erlang count inputs: "; t -XPOST -H 'content-type: application/json' "http://127.0.0.1:$P/mapred" -d "$ER"; cat ${OUT:-/tmp/coupons-q.json}; echo
EO='{"inputs":"coupons","query":[{"map":{"language":"erlang","module":"riak_kv_mapreduce","function":"map_object_value"}},{"reduce":{"language":"erlang","module":"riak_kv_mapreduce","function":"reduce_count_inputs"}}]}'
echo -n "MR Erlang map_object_value+count: "; t -XPOST -H 'content-type: application/json' "http://127.0.0.1:$P/mapred" -d "$EO"; cat ${OUT:-/tmp/coupons-q.json}; echo
