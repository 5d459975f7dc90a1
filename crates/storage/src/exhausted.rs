//! Resources whose exhaustion is transient: the OS refuses an operation
//! because descriptors, disk space or memory ran out, not because the
//! device failed. A write refused for one of these was not applied, and the
//! same write succeeds once the resource is back, so nothing is poisoned
//! (design note 008).

use std::fmt;
use std::io;

/// A resource that ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Resource {
    /// File descriptors (EMFILE, ENFILE).
    Descriptors,
    /// Disk space or quota (ENOSPC, EDQUOT).
    Disk,
    /// Memory (ENOMEM).
    Memory,
}

impl Resource {
    /// The resource `e` says ran out, if it is an exhaustion error.
    pub fn of(e: &io::Error) -> Option<Resource> {
        match e.raw_os_error()? {
            libc::EMFILE | libc::ENFILE => Some(Resource::Descriptors),
            libc::ENOSPC | libc::EDQUOT => Some(Resource::Disk),
            libc::ENOMEM => Some(Resource::Memory),
            _ => None,
        }
    }

    /// A short name, as `/stats` and `/health` show it.
    pub fn name(self) -> &'static str {
        match self {
            Resource::Descriptors => "file descriptors",
            Resource::Disk => "disk space",
            Resource::Memory => "memory",
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exhaustion_errors_are_told_apart_from_failures() {
        let os = io::Error::from_raw_os_error;
        assert_eq!(Resource::of(&os(libc::EMFILE)), Some(Resource::Descriptors));
        assert_eq!(Resource::of(&os(libc::ENFILE)), Some(Resource::Descriptors));
        assert_eq!(Resource::of(&os(libc::ENOSPC)), Some(Resource::Disk));
        assert_eq!(Resource::of(&os(libc::EDQUOT)), Some(Resource::Disk));
        assert_eq!(Resource::of(&os(libc::EIO)), None);
        assert_eq!(Resource::of(&io::Error::other("x")), None);
        let e = crate::StorageError::io("/d/f", os(libc::ENOSPC));
        assert!(
            e.to_string().starts_with("disk space exhausted: /d/f"),
            "{e}"
        );
    }
}
