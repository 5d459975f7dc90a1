//! Configuration: riak.conf-style setting names ([`schema`]), value parsing
//! ([`values`]), loading defaults, file and environment ([`load`]), and the
//! typed [`Settings`] everything else reads ([`settings`], built by
//! [`build`]).

mod build;
mod de;
mod file;
pub mod load;
pub mod schema;
pub mod settings;
pub mod values;

pub use load::Config;
pub use settings::Settings;
