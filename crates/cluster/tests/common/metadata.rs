//! Bucket metadata entries for the tests, from their JSON.

/// A props patch from its JSON.
pub fn patch(v: serde_json::Value) -> eddy_model::props::PropsPatch {
    serde_json::from_value(v).expect("a props patch")
}

/// An active type's entry with `v` as its patch.
pub fn active_type(v: serde_json::Value) -> eddy_model::types::TypeEntry {
    eddy_model::types::TypeEntry {
        patch: patch(v),
        status: eddy_model::types::TypeStatus::Active,
    }
}

/// A register's content as JSON.
pub fn json_of<T: serde::Serialize>(content: &T) -> serde_json::Value {
    serde_json::to_value(content).expect("JSON")
}
