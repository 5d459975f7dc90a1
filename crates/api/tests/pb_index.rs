//! PB secondary-index queries (RpbIndexReq 25 → RpbIndexResp 26): equality
//! and range, return_terms, `_int` numeric order, pagination, streaming,
//! `$bucket`/`$key`, typed buckets, and malformed queries refused.

mod pb_support;

use eddy_wire::codes;
use eddy_wire::proto::*;
use pb_support::*;

async fn put_indexed(c: &mut Client, key: &str, affiliate: &str, count: i64) {
    let mut req = put_req(None, "coupons", key, "{}");
    req.content.indexes = vec![
        RpbPair {
            key: b"affiliate_bin".to_vec(),
            value: Some(affiliate.as_bytes().to_vec()),
        },
        RpbPair {
            key: b"count_int".to_vec(),
            value: Some(count.to_string().into_bytes()),
        },
    ];
    c.put(&req).await.unwrap();
}

fn range(index: &str, lo: &str, hi: &str) -> RpbIndexReq {
    RpbIndexReq {
        bucket: b"coupons".to_vec(),
        index: index.as_bytes().to_vec(),
        qtype: 1,
        range_min: Some(lo.as_bytes().to_vec()),
        range_max: Some(hi.as_bytes().to_vec()),
        ..Default::default()
    }
}

fn eq(index: &str, term: &str) -> RpbIndexReq {
    RpbIndexReq {
        bucket: b"coupons".to_vec(),
        index: index.as_bytes().to_vec(),
        qtype: 0,
        key: Some(term.as_bytes().to_vec()),
        ..Default::default()
    }
}

async fn query(c: &mut Client, req: &RpbIndexReq) -> Result<RpbIndexResp, String> {
    c.call(codes::INDEX_REQ, req, codes::INDEX_RESP).await
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

async fn loaded() -> (Server, Client) {
    let server = start().await;
    let mut c = Client::connect(&server).await;
    for i in 0..40i64 {
        put_indexed(&mut c, &format!("k{i:02}"), &format!("a{}", i % 4), i - 20).await;
    }
    (server, c)
}

#[tokio::test]
async fn equality_and_range_queries_answer_in_riaks_order() {
    let (_server, mut c) = loaded().await;
    let resp = query(&mut c, &eq("affiliate_bin", "a1")).await.unwrap();
    let keys: Vec<String> = resp.keys.iter().map(|k| text(k)).collect();
    let want: Vec<String> = (0..40)
        .filter(|i| i % 4 == 1)
        .map(|i| format!("k{i:02}"))
        .collect();
    assert_eq!(keys, want);
    assert!(resp.results.is_empty() && resp.continuation.is_none());

    let mut r = range("count_int", "-12", "9");
    r.return_terms = Some(true);
    let resp = query(&mut c, &r).await.unwrap();
    let got: Vec<(i64, String)> = resp
        .results
        .iter()
        .map(|p| {
            (
                text(&p.key).parse().unwrap(),
                text(p.value.as_ref().unwrap()),
            )
        })
        .collect();
    let want: Vec<(i64, String)> = (8..=29).map(|i| (i - 20, format!("k{i:02}"))).collect();
    assert_eq!(
        got, want,
        "numeric order, negatives first, terms as decimal"
    );
}

#[tokio::test]
async fn pages_join_through_continuations_and_streams_end_with_done() {
    let (_server, mut c) = loaded().await;
    let mut r = range("$key", "k05", "k33");
    r.max_results = Some(6);
    let mut keys = Vec::new();
    loop {
        let resp = query(&mut c, &r).await.unwrap();
        assert!(resp.keys.len() <= 6);
        keys.extend(resp.keys.iter().map(|k| text(k)));
        match resp.continuation {
            Some(cont) => r.continuation = Some(cont),
            None => break,
        }
    }
    let want: Vec<String> = (5..=33).map(|i| format!("k{i:02}")).collect();
    assert_eq!(keys, want);

    let mut s = eq("$bucket", "");
    s.stream = Some(true);
    s.max_results = Some(30);
    c.send(codes::INDEX_REQ, &s).await;
    let mut streamed = Vec::new();
    let last = loop {
        let resp: RpbIndexResp = expect(c.recv().await, codes::INDEX_RESP).unwrap();
        streamed.extend(resp.keys.iter().map(|k| text(k)));
        if resp.done == Some(true) {
            break resp;
        }
        assert!(resp.continuation.is_none(), "only the last carries it");
    };
    assert_eq!(streamed.len(), 30);
    assert!(last.continuation.is_some(), "a full page continues");
    assert!(c.ping().await, "the connection stays usable");
}

#[tokio::test]
async fn malformed_queries_get_an_error_and_the_connection_stays_open() {
    let (_server, mut c) = loaded().await;
    let mut no_key = eq("affiliate_bin", "a1");
    no_key.key = None;
    let e = query(&mut c, &no_key).await.unwrap_err();
    assert_eq!(e, "Invalid equality query undefined");
    let mut half = range("count_int", "1", "2");
    half.range_max = None;
    let e = query(&mut c, &half).await.unwrap_err();
    assert_eq!(e, "Invalid range query: <<\"1\">> -> undefined");
    let e = query(&mut c, &eq("color", "red")).await.unwrap_err();
    assert_eq!(e, "Unknown field type for field: 'color'.");
    let e = query(&mut c, &range("count_int", "x", "2"))
        .await
        .unwrap_err();
    assert_eq!(e, "Could not parse field 'count_int', value 'x'.");
    let mut re = range("affiliate_bin", "a", "b");
    re.term_regex = Some(b"[".to_vec());
    let e = query(&mut c, &re).await.unwrap_err();
    assert!(e.starts_with("Invalid term regular expression"), "{e}");
    let mut cont = range("affiliate_bin", "a", "b");
    cont.continuation = Some(b"not a continuation".to_vec());
    let e = query(&mut c, &cont).await.unwrap_err();
    assert!(e.starts_with("Invalid continuation"), "{e}");
    let mut typed = eq("affiliate_bin", "a1");
    typed.r#type = Some(b"nope".to_vec());
    let e = query(&mut c, &typed).await.unwrap_err();
    assert_eq!(e, "no_type");
    assert!(c.ping().await);
}
