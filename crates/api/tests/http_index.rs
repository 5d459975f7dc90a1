//! Secondary-index queries over HTTP (`riak_kv_wm_index`): equality and
//! range, terms, `_int` order, pagination, `$bucket`/`$key`, regexes,
//! streaming as multipart/mixed, typed buckets and bad input.

mod http_support;

use http_support::{Server, header, start};
use serde_json::{Value, json};

/// PUTs `key` in `bucket_path` (`/buckets/B` or `/types/T/buckets/B`)
/// with index headers.
async fn put_indexed(s: &Server, bucket_path: &str, key: &str, indexes: &[(&str, &str)]) {
    let mut req = s
        .client
        .put(s.url(&format!("{bucket_path}/keys/{key}")))
        .header("content-type", "text/plain")
        .body("v");
    for (field, term) in indexes {
        req = req.header(format!("x-riak-index-{field}"), *term);
    }
    let r = req.send().await.unwrap();
    assert_eq!(r.status(), 204, "{key}");
}

/// GETs `path` and returns its JSON, asserting a 200.
async fn query(s: &Server, path: &str) -> Value {
    let r = s.get(path).await;
    let status = r.status();
    let ct = header(&r, "content-type");
    let body = r.text().await.unwrap();
    assert_eq!(status, 200, "{path}: {body}");
    assert_eq!(ct.as_deref(), Some("application/json"));
    serde_json::from_str(&body).unwrap()
}

/// GETs `path`, expecting a 400; returns its message.
async fn refused(s: &Server, path: &str) -> String {
    let r = s.get(path).await;
    let status = r.status();
    assert_eq!(header(&r, "content-type").as_deref(), Some("text/plain"));
    let body = r.text().await.unwrap();
    assert_eq!(status, 400, "{path}: {body}");
    body
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// `{"results":[{"T":"K"}...]}` as (term, key) pairs.
fn pairs(v: &Value) -> Vec<(String, String)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let (t, k) = o.as_object().unwrap().iter().next().unwrap();
            (t.clone(), k.as_str().unwrap().to_string())
        })
        .collect()
}

/// Ten objects `p0`..`p9` in bucket `people`: `age_int` is `i*5 - 20`
/// (-20 to 25), `name_bin` `n{i}`, `group_bin` `even` or `odd`.
async fn people(s: &Server, bucket_path: &str) {
    for i in 0..10 {
        let age = (i * 5 - 20).to_string();
        let name = format!("n{i}");
        let group = if i % 2 == 0 { "even" } else { "odd" };
        let indexes = [
            ("age_int", age.as_str()),
            ("name_bin", name.as_str()),
            ("group_bin", group),
        ];
        put_indexed(s, bucket_path, &format!("p{i}"), &indexes).await;
    }
}

#[tokio::test]
async fn equality_and_range_queries_answer_keys_and_terms() {
    let s = start().await;
    people(&s, "/buckets/people").await;
    put_indexed(&s, "/buckets/other", "x", &[("group_bin", "even")]).await;

    let v = query(&s, "/buckets/people/index/group_bin/even").await;
    assert_eq!(strings(&v["keys"]), ["p0", "p2", "p4", "p6", "p8"]);
    assert!(v.get("continuation").is_none());
    // Terms come back only for ranges, as in Riak.
    let v = query(&s, "/buckets/people/index/group_bin/odd?return_terms=true").await;
    assert_eq!(strings(&v["keys"]), ["p1", "p3", "p5", "p7", "p9"]);

    let v = query(&s, "/buckets/people/index/name_bin/n3/n5?return_terms=true").await;
    let expected = [("n3", "p3"), ("n4", "p4"), ("n5", "p5")];
    assert_eq!(pairs(&v["results"]), as_pairs(&expected));
    let v = query(
        &s,
        "/buckets/people/index/name_bin/n3/n5?return_terms=false",
    )
    .await;
    assert_eq!(strings(&v["keys"]), ["p3", "p4", "p5"]);
    let v = query(&s, "/buckets/people/index/NAME_BIN/zz").await;
    assert_eq!(v, json!({ "keys": [] }));
}

fn as_pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(t, k)| (t.to_string(), k.to_string()))
        .collect()
}

#[tokio::test]
async fn int_terms_are_in_numeric_order_negatives_first() {
    let s = start().await;
    people(&s, "/buckets/people").await;
    for (key, n) in [("nine", "9"), ("ten", "10"), ("hundred", "100")] {
        put_indexed(&s, "/buckets/nums", key, &[("n_int", n)]).await;
    }
    let v = query(&s, "/buckets/nums/index/n_int/0/1000?return_terms=true").await;
    let expected = [("9", "nine"), ("10", "ten"), ("100", "hundred")];
    assert_eq!(pairs(&v["results"]), as_pairs(&expected));

    let v = query(&s, "/buckets/people/index/age_int/-20/-5?return_terms=true").await;
    let expected = [("-20", "p0"), ("-15", "p1"), ("-10", "p2"), ("-5", "p3")];
    assert_eq!(pairs(&v["results"]), as_pairs(&expected));
    let v = query(&s, "/buckets/people/index/age_int/%2B010").await;
    assert_eq!(
        strings(&v["keys"]),
        ["p6"],
        "an int term is read as a number"
    );
}

/// Follows continuations from `first` (a path with a query string) and
/// returns every page's entries, in order, and the page count.
async fn all_pages(s: &Server, first: &str, entries: &str) -> (Vec<Value>, usize) {
    let mut out = Vec::new();
    let mut pages = 0;
    let mut continuation: Option<String> = None;
    loop {
        let path = match &continuation {
            None => first.to_string(),
            Some(c) => format!("{first}&continuation={}", urlencode(c)),
        };
        let v = query(s, &path).await;
        pages += 1;
        out.extend(v[entries].as_array().unwrap().iter().cloned());
        match v.get("continuation") {
            Some(c) => continuation = Some(c.as_str().unwrap().to_string()),
            None => return (out, pages),
        }
        assert!(pages < 100, "pagination does not end");
    }
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test]
async fn pagination_lists_everything_exactly_once() {
    let s = start().await;
    for i in 0..23 {
        // Two keys per term, so pages also split between keys of one term.
        let term = (i / 2).to_string();
        put_indexed(&s, "/buckets/pg", &format!("k{i:02}"), &[("t_int", &term)]).await;
    }
    let first = "/buckets/pg/index/t_int/0/100?max_results=5&return_terms=true";
    let (got, pages) = all_pages(&s, first, "results").await;
    assert_eq!(pages, 5, "23 entries in pages of 5");
    let got: Vec<(String, String)> = got.iter().flat_map(|v| pairs(&json!([v]))).collect();
    let mut expected: Vec<(String, String)> = (0..23)
        .map(|i| ((i / 2).to_string(), format!("k{i:02}")))
        .collect();
    expected.sort_by_key(|(t, k)| (t.parse::<i64>().unwrap(), k.clone()));
    assert_eq!(got, expected);

    // Equality pages, and a page size that divides the count: the last
    // full page carries a continuation to an empty page.
    for i in 0..6 {
        put_indexed(&s, "/buckets/pg", &format!("e{i}"), &[("g_bin", "x")]).await;
    }
    let (keys, pages) = all_pages(&s, "/buckets/pg/index/g_bin/x?max_results=3", "keys").await;
    assert_eq!(
        strings(&Value::Array(keys)),
        ["e0", "e1", "e2", "e3", "e4", "e5"]
    );
    assert_eq!(pages, 3);
}

#[tokio::test]
async fn bucket_and_key_pseudo_fields_range_over_keys() {
    let s = start().await;
    people(&s, "/buckets/people").await;
    put_indexed(&s, "/buckets/people", "q", &[]).await;
    let v = query(&s, "/buckets/people/index/$bucket/people").await;
    let everyone = [
        "p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9", "q",
    ];
    assert_eq!(strings(&v["keys"]), everyone);
    let v = query(&s, "/buckets/people/index/%24bucket").await;
    assert_eq!(strings(&v["keys"]), everyone, "$bucket needs no value");
    let v = query(&s, "/buckets/people/index/$key/p3/p5").await;
    assert_eq!(strings(&v["keys"]), ["p3", "p4", "p5"]);
    let v = query(&s, "/buckets/people/index/$key/p7").await;
    assert_eq!(strings(&v["keys"]), ["p7"]);
    let (keys, pages) = all_pages(
        &s,
        "/buckets/people/index/$bucket/people?max_results=4",
        "keys",
    )
    .await;
    assert_eq!(strings(&Value::Array(keys)), everyone);
    assert_eq!(pages, 3);
}

#[tokio::test]
async fn term_regex_filters_terms() {
    let s = start().await;
    for (key, term) in [
        ("a", "apple"),
        ("b", "banana"),
        ("c", "apricot"),
        ("d", "cherry"),
    ] {
        put_indexed(&s, "/buckets/fruit", key, &[("name_bin", term)]).await;
    }
    let path = "/buckets/fruit/index/name_bin/a/z?return_terms=true&term_regex=%5Eap";
    let v = query(&s, path).await;
    let expected = [("apple", "a"), ("apricot", "c")];
    assert_eq!(pairs(&v["results"]), as_pairs(&expected));
    let v = query(&s, "/buckets/fruit/index/$key/a/z?term_regex=%5B%5Eab%5D").await;
    assert_eq!(
        strings(&v["keys"]),
        ["c", "d"],
        "on $key the regex matches keys"
    );
}

/// A multipart/mixed body's parts, each as (headers, JSON body).
fn multipart_parts(content_type: &str, body: &str) -> Vec<(String, Value)> {
    let boundary = content_type
        .split("boundary=")
        .nth(1)
        .unwrap_or_else(|| panic!("no boundary in {content_type}"));
    let delimiter = format!("\r\n--{boundary}");
    let mut pieces: Vec<&str> = body.split(&delimiter).collect();
    assert_eq!(pieces.remove(0), "", "the body starts with a boundary");
    assert_eq!(
        pieces.pop(),
        Some("--\r\n"),
        "the body ends with the closing boundary"
    );
    pieces
        .iter()
        .map(|p| {
            let p = p.strip_prefix("\r\n").unwrap();
            let (headers, json) = p.split_once("\r\n\r\n").unwrap();
            (headers.to_string(), serde_json::from_str(json).unwrap())
        })
        .collect()
}

async fn streamed(s: &Server, path: &str) -> Vec<Value> {
    let r = s.get(path).await;
    assert_eq!(r.status(), 200, "{path}");
    let ct = header(&r, "content-type").unwrap();
    assert!(ct.starts_with("multipart/mixed"), "{ct}");
    let parts = multipart_parts(&ct, &r.text().await.unwrap());
    for (headers, _) in &parts {
        assert_eq!(headers, "Content-Type: application/json");
    }
    parts.into_iter().map(|(_, v)| v).collect()
}

#[tokio::test]
async fn stream_true_answers_multipart_parts() {
    let s = start().await;
    let keys: Vec<String> = (0..1203).map(|i| format!("k{i:04}")).collect();
    for k in &keys {
        put_indexed(&s, "/buckets/st", k, &[("all_bin", "x")]).await;
    }

    let parts = streamed(&s, "/buckets/st/index/all_bin/x?stream=true").await;
    assert_eq!(parts.len(), 2, "parts of at most 1000 entries");
    let got: Vec<String> = parts.iter().flat_map(|p| strings(&p["keys"])).collect();
    assert_eq!(got, keys);

    let path = "/buckets/st/index/all_bin/a/z?stream=true&return_terms=true&max_results=1100";
    let parts = streamed(&s, path).await;
    assert_eq!(parts.len(), 3);
    assert_eq!(pairs(&parts[0]["results"]).len(), 1000);
    assert_eq!(
        pairs(&parts[1]["results"])[99],
        ("x".into(), "k1099".into())
    );
    let c = parts[2]["continuation"].as_str().unwrap();
    let rest = format!("{path}&continuation={}", urlencode(c));
    let parts = streamed(&s, &rest).await;
    assert_eq!(parts.len(), 1, "the last page has no continuation part");
    assert_eq!(pairs(&parts[0]["results"]).len(), 103);

    let parts = streamed(&s, "/buckets/st/index/all_bin/nothing?stream=true").await;
    assert!(parts.is_empty(), "no entries, no parts: {parts:?}");

    // A query refused before its first step is an error, not a stream.
    let r = s
        .get("/buckets/st/index/all_bin/a/z?stream=true&term_regex=(")
        .await;
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("regex"));
}

#[tokio::test]
async fn typed_buckets_have_their_own_indexes() {
    let s = start().await;
    people(&s, "/types/maps/buckets/people").await;
    let v = query(&s, "/types/maps/buckets/people/index/group_bin/odd").await;
    assert_eq!(strings(&v["keys"]), ["p1", "p3", "p5", "p7", "p9"]);
    let v = query(&s, "/buckets/people/index/group_bin/odd").await;
    assert_eq!(
        v,
        json!({ "keys": [] }),
        "the default type's bucket is another"
    );
    let r = s
        .get("/types/nope/buckets/people/index/group_bin/odd")
        .await;
    assert_eq!(r.status(), 404);
    assert!(r.text().await.unwrap().contains("Unknown bucket type"));
    let r = s
        .get("/types/inactive/buckets/people/index/group_bin/odd")
        .await;
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn bad_queries_are_refused_with_a_message() {
    let s = start().await;
    people(&s, "/buckets/people").await;
    let v = query(&s, "/buckets/people/index/group_bin/odd?max_results=2").await;
    let other = urlencode(v["continuation"].as_str().unwrap());
    let another_query = format!("group_bin/even?max_results=2&continuation={other}");
    // (what follows `index/`, what the message says)
    let cases = [
        (
            "color/red",
            "Invalid query: Unknown field type for field: 'color'.",
        ),
        (
            "age_int/ten",
            "Could not parse field 'age_int', value 'ten'",
        ),
        (
            "group_bin/odd?max_results=-3",
            "Invalid \"max_results\". -3 is not a positive integer\n",
        ),
        (
            "group_bin/odd?max_results=lots",
            "\"lots\" is not a positive integer",
        ),
        (
            "name_bin/a/z?term_regex=%28",
            "Invalid term regular expression",
        ),
        (
            "age_int/0/9?term_regex=1",
            "Can not use term regular expressions on integer queries",
        ),
        (
            "group_bin/odd?return_terms=maybe",
            "Invalid \"return_terms\". \"maybe\" is not a boolean",
        ),
        ("group_bin/odd?timeout=soon", "Bad timeout value"),
        ("group_bin", "Invalid query: an index query names a field"),
        (
            &another_query,
            "Invalid query: the continuation belongs to another query",
        ),
        (
            "group_bin/odd?continuation=junk!",
            "Invalid continuation: not base64",
        ),
        ("group_bin/odd?continuation=AAAA", "Invalid continuation"),
    ];
    for (rest, says) in cases {
        let m = refused(&s, &format!("/buckets/people/index/{rest}")).await;
        assert!(m.contains(says), "{rest}: {m}");
    }
    s.assert_serving().await;
}

#[tokio::test]
async fn index_queries_are_read_only() {
    let s = start().await;
    people(&s, "/buckets/people").await;
    let url = s.url("/buckets/people/index/group_bin/odd");
    let r = s.client.head(&url).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        header(&r, "content-type").as_deref(),
        Some("application/json")
    );
    let r = s.client.post(&url).body("x").send().await.unwrap();
    assert_eq!(r.status(), 405);
    let r = s.client.delete(&url).send().await.unwrap();
    assert_eq!(r.status(), 405);
    // Non-UTF-8 keys and terms come back percent-encoded, as key lists write them.
    put_indexed(&s, "/buckets/raw", "%FFk", &[("t_bin", "x")]).await;
    let v = query(&s, "/buckets/raw/index/t_bin/a/z?return_terms=true").await;
    assert_eq!(pairs(&v["results"]), as_pairs(&[("x", "%FFk")]));
}
