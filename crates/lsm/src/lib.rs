//! The lsm backend (in progress).
