//! Fold selection and control.

/// What a fold callback says next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FoldControl {
    /// Keep folding.
    Continue,
    /// Stop now; the fold returns `Ok`.
    Stop,
}

/// Which keys a fold visits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FoldOptions {
    /// Only this bucket; all buckets when `None`.
    pub bucket: Option<Vec<u8>>,
    /// With a bucket: only keys `>= key_start`.
    pub key_start: Option<Vec<u8>>,
    /// With a bucket: only keys `<= key_end`.
    pub key_end: Option<Vec<u8>>,
}

impl FoldOptions {
    /// Every key of every bucket.
    pub fn all() -> Self {
        Self::default()
    }

    /// Every key of one bucket.
    pub fn bucket(bucket: &[u8]) -> Self {
        FoldOptions {
            bucket: Some(bucket.to_vec()),
            ..Self::default()
        }
    }

    /// True when `(bucket, key)` is selected.
    pub fn admits(&self, bucket: &[u8], key: &[u8]) -> bool {
        let Some(b) = &self.bucket else { return true };
        if b.as_slice() != bucket {
            return false;
        }
        let after_start = self.key_start.as_deref().is_none_or(|s| key >= s);
        let before_end = self.key_end.as_deref().is_none_or(|e| key <= e);
        after_start && before_end
    }
}

/// A fold callback over `(bucket, key)`, or over `(term, key)` for index scans.
pub type KeyVisitor<'a> = dyn FnMut(&[u8], &[u8]) -> FoldControl + 'a;

/// A fold callback over `(bucket, key, value)`.
pub type ObjectVisitor<'a> = dyn FnMut(&[u8], &[u8], &[u8]) -> FoldControl + 'a;
