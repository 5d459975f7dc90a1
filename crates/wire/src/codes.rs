//! Message codes: the byte after the length prefix in every frame, naming
//! the protobuf message that follows.
//!
//! Riak's codes are listed here whether Eddy serves them or not, so a
//! client, the bench tool and the server name each code in one place and
//! none is reused by accident. They follow riak_pb's registry of message
//! codes (riak_pb 3.x): Riak uses 0–36, 40–42, 50–60, 70–71, 80–83 (data
//! types), 90–104 (Riak TS), 128–130 (replication), 200–231 (real-time
//! replication and AAE folds) and 253–255.
//!
//! **Eddy's own codes** live in [`EDDY_CODES`] (160–199), a block none of
//! Riak's releases uses and away from the ends of Riak's blocks, which is
//! where Riak has added codes so far. Eddy's messages take codes upwards
//! from 160; test-only codes take them downwards from 199.
//!
//! Invariants (checked by this module's tests and the crate's `pinned`
//! test): every code has one name; no Riak code falls in [`EDDY_CODES`];
//! codes never change once released: a Riak client or an older Eddy may
//! be sending them.

use std::ops::RangeInclusive;

/// Defines one constant per code and [`ALL`], the table of every code with
/// its message name.
macro_rules! codes {
    ($( $(#[$doc:meta])* $name:ident = $code:literal, $message:literal; )*) => {
        $( $(#[$doc])* pub const $name: u8 = $code; )*

        /// Every code this module names, with its message's name, in code
        /// order.
        pub const ALL: &[(u8, &str)] = &[ $( ($code, $message), )* ];
    };
}

codes! {
    /// The answer to any request that failed.
    ERROR_RESP = 0, "RpbErrorResp";
    PING_REQ = 1, "RpbPingReq";
    PING_RESP = 2, "RpbPingResp";
    GET_CLIENT_ID_REQ = 3, "RpbGetClientIdReq";
    GET_CLIENT_ID_RESP = 4, "RpbGetClientIdResp";
    SET_CLIENT_ID_REQ = 5, "RpbSetClientIdReq";
    SET_CLIENT_ID_RESP = 6, "RpbSetClientIdResp";
    GET_SERVER_INFO_REQ = 7, "RpbGetServerInfoReq";
    GET_SERVER_INFO_RESP = 8, "RpbGetServerInfoResp";
    GET_REQ = 9, "RpbGetReq";
    GET_RESP = 10, "RpbGetResp";
    PUT_REQ = 11, "RpbPutReq";
    PUT_RESP = 12, "RpbPutResp";
    DEL_REQ = 13, "RpbDelReq";
    DEL_RESP = 14, "RpbDelResp";
    LIST_BUCKETS_REQ = 15, "RpbListBucketsReq";
    LIST_BUCKETS_RESP = 16, "RpbListBucketsResp";
    LIST_KEYS_REQ = 17, "RpbListKeysReq";
    LIST_KEYS_RESP = 18, "RpbListKeysResp";
    GET_BUCKET_REQ = 19, "RpbGetBucketReq";
    GET_BUCKET_RESP = 20, "RpbGetBucketResp";
    SET_BUCKET_REQ = 21, "RpbSetBucketReq";
    SET_BUCKET_RESP = 22, "RpbSetBucketResp";
    MAP_RED_REQ = 23, "RpbMapRedReq";
    MAP_RED_RESP = 24, "RpbMapRedResp";
    INDEX_REQ = 25, "RpbIndexReq";
    INDEX_RESP = 26, "RpbIndexResp";
    SEARCH_QUERY_REQ = 27, "RpbSearchQueryReq";
    SEARCH_QUERY_RESP = 28, "RpbSearchQueryResp";
    RESET_BUCKET_REQ = 29, "RpbResetBucketReq";
    RESET_BUCKET_RESP = 30, "RpbResetBucketResp";
    /// Answered by `RpbGetBucketResp` (20).
    GET_BUCKET_TYPE_REQ = 31, "RpbGetBucketTypeReq";
    /// Answered by `RpbSetBucketResp` (22).
    SET_BUCKET_TYPE_REQ = 32, "RpbSetBucketTypeReq";
    GET_BUCKET_KEY_PREFLIST_REQ = 33, "RpbGetBucketKeyPreflistReq";
    GET_BUCKET_KEY_PREFLIST_RESP = 34, "RpbGetBucketKeyPreflistResp";
    CLONE_REQ = 35, "RpbCloneReq";
    CLONE_RESP = 36, "RpbCloneResp";
    CS_BUCKET_REQ = 40, "RpbCSBucketReq";
    CS_BUCKET_RESP = 41, "RpbCSBucketResp";
    /// A 2i answer carrying objects (`return_body`).
    INDEX_BODY_RESP = 42, "RpbIndexBodyResp";
    COUNTER_UPDATE_REQ = 50, "RpbCounterUpdateReq";
    COUNTER_UPDATE_RESP = 51, "RpbCounterUpdateResp";
    COUNTER_GET_REQ = 52, "RpbCounterGetReq";
    COUNTER_GET_RESP = 53, "RpbCounterGetResp";
    YZ_INDEX_GET_REQ = 54, "RpbYokozunaIndexGetReq";
    YZ_INDEX_GET_RESP = 55, "RpbYokozunaIndexGetResp";
    YZ_INDEX_PUT_REQ = 56, "RpbYokozunaIndexPutReq";
    YZ_INDEX_DELETE_REQ = 57, "RpbYokozunaIndexDeleteReq";
    YZ_SCHEMA_GET_REQ = 58, "RpbYokozunaSchemaGetReq";
    YZ_SCHEMA_GET_RESP = 59, "RpbYokozunaSchemaGetResp";
    YZ_SCHEMA_PUT_REQ = 60, "RpbYokozunaSchemaPutReq";
    COVERAGE_REQ = 70, "RpbCoverageReq";
    COVERAGE_RESP = 71, "RpbCoverageResp";
    DT_FETCH_REQ = 80, "DtFetchReq";
    DT_FETCH_RESP = 81, "DtFetchResp";
    DT_UPDATE_REQ = 82, "DtUpdateReq";
    DT_UPDATE_RESP = 83, "DtUpdateResp";
    TS_QUERY_REQ = 90, "TsQueryReq";
    TS_QUERY_RESP = 91, "TsQueryResp";
    TS_PUT_REQ = 92, "TsPutReq";
    TS_PUT_RESP = 93, "TsPutResp";
    TS_DEL_REQ = 94, "TsDelReq";
    TS_DEL_RESP = 95, "TsDelResp";
    TS_GET_REQ = 96, "TsGetReq";
    TS_GET_RESP = 97, "TsGetResp";
    TS_LIST_KEYS_REQ = 98, "TsListKeysReq";
    TS_LIST_KEYS_RESP = 99, "TsListKeysResp";
    TS_COVERAGE_REQ = 100, "TsCoverageReq";
    TS_COVERAGE_RESP = 101, "TsCoverageResp";
    TS_COVERAGE_ENTRY = 102, "TsCoverageEntry";
    TS_RANGE = 103, "TsRange";
    TS_TTB_MSG = 104, "TsTtbMsg";
    REPL_GET_REQ = 128, "RpbReplGetReq";
    REPL_GET_CLUSTER_ID_REQ = 129, "RpbReplGetClusterIdReq";
    REPL_GET_CLUSTER_ID_RESP = 130, "RpbReplGetClusterIdResp";
    /// Eddy's multi-get (design note 016): several keys of one bucket.
    MULTI_GET_REQ = 160, "EddyMultiGetReq";
    /// One result per key of a multi-get, in request order.
    MULTI_GET_RESP = 161, "EddyMultiGetResp";
    /// Eddy's multi-put: several objects of one bucket.
    MULTI_PUT_REQ = 162, "EddyMultiPutReq";
    /// One result per object of a multi-put, in request order.
    MULTI_PUT_RESP = 163, "EddyMultiPutResp";
    /// Eddy's multi-delete: several keys of one bucket.
    MULTI_DEL_REQ = 164, "EddyMultiDelReq";
    /// One result per key of a multi-delete, in request order.
    MULTI_DEL_RESP = 165, "EddyMultiDelResp";
    /// Test-only: a request whose handler panics on purpose, to test the
    /// server's panic net. Served only by a server built with eddy-api's
    /// `test-hooks` feature; any other server answers "Unknown message
    /// code". The last of [`EDDY_CODES`].
    TEST_PANIC_REQ = 199, "EddyTestPanicReq";
    RTE_REQ = 200, "RpbRTEReq";
    RTE_RESP = 201, "RpbRTEResp";
    FETCH_REQ = 202, "RpbFetchReq";
    FETCH_RESP = 203, "RpbFetchResp";
    PUSH_REQ = 204, "RpbPushReq";
    PUSH_RESP = 205, "RpbPushResp";
    MEMBERSHIP_REQ = 206, "RpbMembershipReq";
    MEMBERSHIP_RESP = 207, "RpbMembershipResp";
    AAE_FOLD_MERGE_ROOT_NVAL_REQ = 210, "RpbAaeFoldMergeRootNValReq";
    AAE_FOLD_MERGE_BRANCH_NVAL_REQ = 211, "RpbAaeFoldMergeBranchNValReq";
    AAE_FOLD_FETCH_CLOCKS_NVAL_REQ = 212, "RpbAaeFoldFetchClocksNValReq";
    AAE_FOLD_MERGE_TREES_RANGE_REQ = 213, "RpbAaeFoldMergeTreesRangeReq";
    AAE_FOLD_FETCH_CLOCKS_RANGE_REQ = 214, "RpbAaeFoldFetchClocksRangeReq";
    AAE_FOLD_FIND_KEYS_REQ = 215, "RpbAaeFoldFindKeysReq";
    AAE_FOLD_OBJECT_STATS_REQ = 216, "RpbAaeFoldObjectStatsReq";
    AAE_FOLD_REPL_KEYS_REQ = 217, "RpbAaeFoldReplKeysReq";
    AAE_FOLD_FIND_TOMBS_REQ = 218, "RpbAaeFoldFindTombsReq";
    AAE_FOLD_REPAIR_KEYS_REQ = 219, "RpbAaeFoldRepairKeysReq";
    AAE_FOLD_TREE_RESP = 220, "RpbAaeFoldTreeResp";
    AAE_FOLD_KEY_VALUE_RESP = 221, "RpbAaeFoldKeyValueResp";
    AAE_FOLD_KEY_COUNT_RESP = 222, "RpbAaeFoldKeyCountResp";
    AAE_FOLD_LIST_BUCKETS_REQ = 223, "RpbAaeFoldListBucketsReq";
    AAE_FOLD_LIST_BUCKETS_RESP = 224, "RpbAaeFoldListBucketsResp";
    AAE_FOLD_REAP_TOMBS_REQ = 230, "RpbAaeFoldReapTombsReq";
    AAE_FOLD_ERASE_KEYS_REQ = 231, "RpbAaeFoldEraseKeysReq";
    /// Refused while security is off, as Riak does.
    AUTH_REQ = 253, "RpbAuthReq";
    AUTH_RESP = 254, "RpbAuthResp";
    /// Refused while security is off, as Riak does.
    START_TLS = 255, "RpbStartTls";
}

/// The codes reserved for Eddy's own messages; Riak uses none of them.
pub const EDDY_CODES: RangeInclusive<u8> = 160..=199;

/// The name of the message `code` stands for, if any.
pub fn name(code: u8) -> Option<&'static str> {
    ALL.iter().find(|(c, _)| *c == code).map(|(_, name)| *name)
}

/// Whether `code` is one of Eddy's own (in [`EDDY_CODES`]).
pub fn is_eddys(code: u8) -> bool {
    EDDY_CODES.contains(&code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_in_order_and_unique() {
        assert!(ALL.windows(2).all(|w| w[0].0 < w[1].0), "ALL is sorted");
        let mut names: Vec<&str> = ALL.iter().map(|(_, n)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len(), "a message name is used twice");
    }

    #[test]
    fn eddys_codes_are_riaks_gap() {
        for (code, name) in ALL {
            let riak = name.starts_with("Rpb") || name.starts_with("Dt") || name.starts_with("Ts");
            assert_eq!(riak, !is_eddys(*code), "{code} {name}");
        }
        assert!(is_eddys(TEST_PANIC_REQ));
        assert!(is_eddys(MULTI_GET_REQ) && is_eddys(MULTI_DEL_RESP));
    }

    #[test]
    fn names_are_found() {
        assert_eq!(name(PUT_REQ), Some("RpbPutReq"));
        assert_eq!(name(START_TLS), Some("RpbStartTls"));
        assert_eq!(name(37), None);
    }
}
