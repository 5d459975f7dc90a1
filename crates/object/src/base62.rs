//! Base 62 (`0-9A-Za-z`): the alphabet of server-made keys, version tags
//! (the HTTP ETag), entity tags of sibling sets and multipart boundaries.
//! Every such token is made here, so they all look alike and none needs
//! escaping in a URL or a header.

use rand::Rng;

/// The 62 digits, in value order.
pub const DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Digits `encode_u64` writes: enough for `u64::MAX` (62^11 > 2^64).
pub const U64_DIGITS: usize = 11;

/// `n` in base 62, most significant digit first, padded with `0` to
/// [`U64_DIGITS`] characters.
pub fn encode_u64(mut n: u64) -> String {
    let mut out = [b'0'; U64_DIGITS];
    for slot in out.iter_mut().rev() {
        *slot = digit(n);
        n /= 62;
    }
    out.iter().map(|&b| char::from(b)).collect()
}

/// `len` digits drawn uniformly at random (about 5.95 bits each).
pub fn random(len: usize) -> Vec<u8> {
    let mut rng = rand::rng();
    (0..len).map(|_| digit(rng.random_range(0..62))).collect()
}

/// [`random`] as a string.
pub fn random_string(len: usize) -> String {
    random(len).into_iter().map(char::from).collect()
}

/// The digit of `n % 62`.
fn digit(n: u64) -> u8 {
    // `n % 62` is below 62, so the index is in bounds.
    DIGITS[(n % 62) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_fixed_width_most_significant_first() {
        assert_eq!(encode_u64(0), "00000000000");
        assert_eq!(encode_u64(61), "0000000000z");
        assert_eq!(encode_u64(62), "00000000010");
        assert_eq!(encode_u64(u64::MAX), "LygHa16AHYF");
    }

    #[test]
    fn random_tokens_use_only_the_digits() {
        let token = random(1_000);
        assert_eq!(token.len(), 1_000);
        assert!(token.iter().all(|b| DIGITS.contains(b)));
        assert_ne!(random_string(22), random_string(22));
    }
}
