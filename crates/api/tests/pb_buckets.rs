//! PB bucket properties, bucket types and preflists.

mod pb_support;

use eddy_wire::proto::*;
use eddy_wire::{codes, quorum};
use pb_support::*;

async fn get_props(
    c: &mut Client,
    bucket_type: Option<&str>,
    bucket: &str,
) -> Result<RpbBucketProps, String> {
    let req = RpbGetBucketReq {
        bucket: bucket.as_bytes().to_vec(),
        r#type: bucket_type.map(|t| t.as_bytes().to_vec()),
    };
    let resp: RpbGetBucketResp = c
        .call(codes::GET_BUCKET_REQ, &req, codes::GET_BUCKET_RESP)
        .await?;
    Ok(resp.props)
}

async fn set_props(
    c: &mut Client,
    bucket_type: Option<&str>,
    bucket: &str,
    props: RpbBucketProps,
) -> Result<(), String> {
    let req = RpbSetBucketReq {
        bucket: bucket.as_bytes().to_vec(),
        props,
        r#type: bucket_type.map(|t| t.as_bytes().to_vec()),
    };
    c.send(codes::SET_BUCKET_REQ, &req).await;
    let (code, body) = c.recv().await.expect("answer");
    match code {
        codes::SET_BUCKET_RESP => {
            assert!(body.is_empty());
            Ok(())
        }
        _ => expect::<RpbErrorResp>(Some((code, body)), 255).map(drop),
    }
}

#[tokio::test]
async fn bucket_props_get_set_reset() {
    let server = start().await;
    let mut c = Client::connect(&server).await;
    let props = get_props(&mut c, None, "b").await.unwrap();
    assert_eq!(props.n_val, Some(3));
    assert_eq!(props.allow_mult, Some(false));
    assert_eq!(props.r, Some(quorum::QUORUM));
    assert_eq!(props.pr, Some(0));
    assert_eq!(props.notfound_ok, Some(true));
    assert_eq!(
        props.chash_keyfun,
        Some(RpbModFun {
            module: b"riak_core_util".to_vec(),
            function: b"chash_std_keyfun".to_vec(),
        })
    );

    let change = RpbBucketProps {
        n_val: Some(2),
        allow_mult: Some(true),
        r: Some(quorum::ONE),
        w: Some(1),
        has_precommit: Some(true),
        search_index: Some(b"idx".to_vec()),
        ..RpbBucketProps::default()
    };
    set_props(&mut c, None, "b", change.clone()).await.unwrap();
    let props = get_props(&mut c, None, "b").await.unwrap();
    assert_eq!((props.n_val, props.allow_mult), (Some(2), Some(true)));
    assert_eq!((props.r, props.w), (Some(quorum::ONE), Some(1)));
    assert!(props.precommit.is_empty());
    assert_eq!(props.has_precommit, Some(true));
    assert_eq!(props.search_index, Some(b"idx".to_vec()));

    // Commit hooks do not run, so none can be set.
    let hook = RpbBucketProps {
        n_val: Some(1),
        precommit: vec![RpbCommitHook {
            modfun: Some(RpbModFun {
                module: b"m".to_vec(),
                function: b"f".to_vec(),
            }),
            name: None,
        }],
        ..RpbBucketProps::default()
    };
    let err = set_props(&mut c, None, "b", hook).await.unwrap_err();
    assert!(
        err.starts_with("Invalid bucket properties: [{precommit,"),
        "{err}"
    );
    assert!(err.contains("commit hooks are not implemented"), "{err}");
    assert_eq!(get_props(&mut c, None, "b").await.unwrap().n_val, Some(2));
    // The new n_val governs quorum checks.
    let mut put = put_req(None, "b", "k", "v");
    put.w = Some(3);
    assert_eq!(c.put(&put).await.unwrap_err(), "{n_val_violation,2}");

    // A bad value changes nothing.
    let bad = RpbBucketProps {
        n_val: Some(0),
        allow_mult: Some(false),
        ..RpbBucketProps::default()
    };
    let err = set_props(&mut c, None, "b", bad).await.unwrap_err();
    assert!(err.starts_with("Invalid bucket properties"), "{err}");
    assert!(err.contains("n_val"), "{err}");
    assert_eq!(
        get_props(&mut c, None, "b").await.unwrap().allow_mult,
        Some(true)
    );

    let reset = RpbResetBucketReq {
        bucket: b"b".to_vec(),
        r#type: None,
    };
    c.send(codes::RESET_BUCKET_REQ, &reset).await;
    assert_eq!(c.recv().await, Some((codes::RESET_BUCKET_RESP, vec![])));
    let props = get_props(&mut c, None, "b").await.unwrap();
    assert_eq!((props.n_val, props.allow_mult), (Some(3), Some(false)));
    assert!(props.precommit.is_empty());
    assert_eq!(props.has_precommit, Some(true), "Riak flags the empty list");

    let err = get_props(&mut c, Some("nope"), "b").await.unwrap_err();
    assert_eq!(err, "Invalid bucket type: <<\"nope\">>");
}

#[tokio::test]
async fn bucket_types_get_and_set() {
    let server = start().await;
    typed(&server, "maps");
    let mut c = Client::connect(&server).await;
    let get = RpbGetBucketTypeReq {
        r#type: b"maps".to_vec(),
    };
    let resp: RpbGetBucketResp = c
        .call(codes::GET_BUCKET_TYPE_REQ, &get, codes::GET_BUCKET_RESP)
        .await
        .unwrap();
    assert_eq!(
        resp.props.allow_mult,
        Some(true),
        "typed buckets keep siblings"
    );

    let set = RpbSetBucketTypeReq {
        r#type: b"maps".to_vec(),
        props: RpbBucketProps {
            n_val: Some(5),
            ..RpbBucketProps::default()
        },
    };
    c.send(codes::SET_BUCKET_TYPE_REQ, &set).await;
    assert_eq!(c.recv().await, Some((codes::SET_BUCKET_RESP, vec![])));
    let resp: RpbGetBucketResp = c
        .call(codes::GET_BUCKET_TYPE_REQ, &get, codes::GET_BUCKET_RESP)
        .await
        .unwrap();
    assert_eq!(resp.props.n_val, Some(5));
    // Buckets of the type inherit it.
    assert_eq!(
        get_props(&mut c, Some("maps"), "b").await.unwrap().n_val,
        Some(5)
    );

    let immutable = RpbSetBucketTypeReq {
        r#type: b"maps".to_vec(),
        props: RpbBucketProps {
            write_once: Some(true),
            ..RpbBucketProps::default()
        },
    };
    let err = c
        .call::<RpbErrorResp>(codes::SET_BUCKET_TYPE_REQ, &immutable, 255)
        .await
        .unwrap_err();
    assert!(err.contains("write_once"), "{err}");

    let missing = RpbGetBucketTypeReq {
        r#type: b"nope".to_vec(),
    };
    let err = c
        .call::<RpbGetBucketResp>(codes::GET_BUCKET_TYPE_REQ, &missing, codes::GET_BUCKET_RESP)
        .await
        .unwrap_err();
    assert_eq!(err, "Invalid bucket type: <<\"nope\">>");
}

#[tokio::test]
async fn preflist_names_n_primary_partitions() {
    let server = start().await;
    let mut c = Client::connect(&server).await;
    let req = RpbGetBucketKeyPreflistReq {
        bucket: b"b".to_vec(),
        key: b"k".to_vec(),
        r#type: None,
    };
    let resp: RpbGetBucketKeyPreflistResp = c
        .call(
            codes::GET_BUCKET_KEY_PREFLIST_REQ,
            &req,
            codes::GET_BUCKET_KEY_PREFLIST_RESP,
        )
        .await
        .unwrap();
    assert_eq!(resp.preflist.len(), 3);
    let mut partitions: Vec<i64> = resp.preflist.iter().map(|i| i.partition).collect();
    partitions.dedup();
    assert_eq!(partitions.len(), 3, "distinct partitions");
    for item in &resp.preflist {
        assert!(item.primary);
        assert_eq!(item.node, b"eddy@127.0.0.1");
        assert!((0..8).contains(&item.partition));
    }
}

/// basho_bench's nhs driver sets node_confirms = 2: one node cannot
/// confirm a write on two, and says so as Riak does.
#[tokio::test]
async fn node_confirms_a_single_node_cannot_meet_refuses_the_write() {
    let server = start().await;
    let mut c = Client::connect(&server).await;
    let nc = RpbBucketProps {
        node_confirms: Some(2),
        ..RpbBucketProps::default()
    };
    set_props(&mut c, None, "nhs", nc).await.unwrap();
    let props = get_props(&mut c, None, "nhs").await.unwrap();
    assert_eq!(props.node_confirms, Some(2));
    let err = c.put(&put_req(None, "nhs", "k", "v")).await.unwrap_err();
    assert_eq!(err, "{node_confirms_val_unsatisfied,2,1}");
    let one = RpbBucketProps {
        node_confirms: Some(1),
        ..RpbBucketProps::default()
    };
    set_props(&mut c, None, "nhs", one).await.unwrap();
    c.put(&put_req(None, "nhs", "k", "v")).await.unwrap();
}
