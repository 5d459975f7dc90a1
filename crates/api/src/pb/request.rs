//! Field translations shared by the operations: bucket and type names,
//! quorum values, causal contexts.

use eddy_model::{BucketRef, Quorum};
use eddy_object::VersionVector;
use eddy_object::context;
use eddy_wire::WireQuorum;

use super::error::PbError;

/// The bucket a request names; a missing type is the `default` type.
pub fn bucket_ref(bucket_type: Option<Vec<u8>>, bucket: Vec<u8>) -> Result<BucketRef, PbError> {
    if bucket.is_empty() {
        return Err(PbError::ZeroLength("Bucket"));
    }
    let bucket_type = type_name(bucket_type)?;
    Ok(BucketRef {
        bucket_type,
        bucket,
    })
}

/// A bucket type name; a missing one is `default`.
pub fn type_name(bucket_type: Option<Vec<u8>>) -> Result<String, PbError> {
    match bucket_type {
        None => Ok(eddy_model::types::DEFAULT_TYPE.to_string()),
        Some(t) if t.is_empty() => Err(PbError::ZeroLength("Type")),
        Some(t) => String::from_utf8(t).map_err(|_| PbError::NotUtf8("Type")),
    }
}

/// A key that must be present and non-empty.
pub fn key(key: Vec<u8>) -> Result<Vec<u8>, PbError> {
    match key.is_empty() {
        true => Err(PbError::ZeroLength("Key")),
        false => Ok(key),
    }
}

/// A PB quorum field: Riak's special values or a count.
pub fn quorum(value: Option<u32>) -> Option<Quorum> {
    value.map(Quorum::from_wire)
}

/// A quorum as a PB field's value.
pub fn quorum_value(q: Quorum) -> u32 {
    q.to_wire()
}

/// A request's vclock; absent or empty means none.
pub fn context(vclock: Option<Vec<u8>>) -> Result<Option<VersionVector>, PbError> {
    match vclock {
        Some(bytes) if !bytes.is_empty() => Ok(Some(context::from_bytes(&bytes)?)),
        _ => Ok(None),
    }
}

/// A timeout in milliseconds; Riak treats 0 as "not given".
pub fn timeout_ms(timeout: Option<u32>) -> Option<u64> {
    timeout.filter(|t| *t > 0).map(u64::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quorums_roundtrip() {
        for q in [
            Quorum::One,
            Quorum::Quorum,
            Quorum::All,
            Quorum::Default,
            Quorum::Count(0),
            Quorum::Count(2),
        ] {
            assert_eq!(quorum(Some(quorum_value(q))), Some(q));
        }
        assert_eq!(quorum(Some(4_294_967_293)), Some(Quorum::Quorum));
        assert_eq!(quorum(None), None);
    }

    #[test]
    fn names_are_checked() {
        assert!(matches!(
            bucket_ref(None, Vec::new()),
            Err(PbError::ZeroLength("Bucket"))
        ));
        assert!(matches!(
            bucket_ref(Some(Vec::new()), b"b".to_vec()),
            Err(PbError::ZeroLength("Type"))
        ));
        assert!(matches!(
            bucket_ref(Some(vec![0xff]), b"b".to_vec()),
            Err(PbError::NotUtf8("Type"))
        ));
        assert_eq!(
            bucket_ref(None, b"b".to_vec()).unwrap(),
            BucketRef::default_type(b"b".to_vec())
        );
        assert!(context(Some(b"garbage".to_vec())).is_err());
        assert_eq!(context(Some(Vec::new())).unwrap(), None);
    }
}
