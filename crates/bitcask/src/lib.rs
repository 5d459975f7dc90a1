//! The bitcask backend (in progress).
