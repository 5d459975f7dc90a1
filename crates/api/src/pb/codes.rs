//! Riak's PB message codes: the byte after the length in every frame.

pub const ERROR_RESP: u8 = 0;
pub const PING_REQ: u8 = 1;
pub const PING_RESP: u8 = 2;
pub const GET_CLIENT_ID_REQ: u8 = 3;
pub const GET_CLIENT_ID_RESP: u8 = 4;
pub const SET_CLIENT_ID_REQ: u8 = 5;
pub const SET_CLIENT_ID_RESP: u8 = 6;
pub const GET_SERVER_INFO_REQ: u8 = 7;
pub const GET_SERVER_INFO_RESP: u8 = 8;
pub const GET_REQ: u8 = 9;
pub const GET_RESP: u8 = 10;
pub const PUT_REQ: u8 = 11;
pub const PUT_RESP: u8 = 12;
pub const DEL_REQ: u8 = 13;
pub const DEL_RESP: u8 = 14;
pub const LIST_BUCKETS_REQ: u8 = 15;
pub const LIST_BUCKETS_RESP: u8 = 16;
pub const LIST_KEYS_REQ: u8 = 17;
pub const LIST_KEYS_RESP: u8 = 18;
pub const GET_BUCKET_REQ: u8 = 19;
pub const GET_BUCKET_RESP: u8 = 20;
pub const SET_BUCKET_REQ: u8 = 21;
pub const SET_BUCKET_RESP: u8 = 22;
pub const RESET_BUCKET_REQ: u8 = 29;
pub const RESET_BUCKET_RESP: u8 = 30;
pub const GET_BUCKET_TYPE_REQ: u8 = 31;
pub const SET_BUCKET_TYPE_REQ: u8 = 32;
pub const GET_BUCKET_KEY_PREFLIST_REQ: u8 = 33;
pub const GET_BUCKET_KEY_PREFLIST_RESP: u8 = 34;
pub const AUTH_REQ: u8 = 253;
pub const AUTH_RESP: u8 = 254;
pub const START_TLS: u8 = 255;
/// Not Riak's: a request whose handler panics, to test the panic net.
#[cfg(feature = "test-hooks")]
pub const TEST_PANIC_REQ: u8 = 250;

/// Riak's special quorum values in `uint32` fields.
pub mod quorum {
    pub const ONE: u32 = u32::MAX - 1;
    pub const QUORUM: u32 = u32::MAX - 2;
    pub const ALL: u32 = u32::MAX - 3;
    pub const DEFAULT: u32 = u32::MAX - 4;
}
