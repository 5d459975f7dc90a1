//! Bucket properties Eddy keeps but does not implement: a change may set
//! them only to Riak's defaults, so no client believes a hook runs, a key
//! function applies or vclocks are pruned when none of it happens.
//!
//! Invariant: a props change (bucket or bucket type) that sets one of
//! [`UNSUPPORTED`] to anything but the value [`BucketProps::default`] has
//! for it is refused, naming the property and what is missing. Riak clients that write back the props they read
//! (all defaults) keep working.

use serde_json::Value;

use super::{BucketProps, PropsError, PropsPatch};

/// Each property Eddy refuses to change from Riak's default, and why.
pub const UNSUPPORTED: &[(&str, &str)] = &[
    ("precommit", "commit hooks are not implemented"),
    ("postcommit", "commit hooks are not implemented"),
    ("linkfun", "link walking is not implemented"),
    (
        "chash_keyfun",
        "keys are hashed only by riak_core_util:chash_std_keyfun",
    ),
    ("consistent", "strong consistency is not implemented"),
    ("small_vclock", "vclock pruning is not implemented"),
    ("big_vclock", "vclock pruning is not implemented"),
    ("young_vclock", "vclock pruning is not implemented"),
    ("old_vclock", "vclock pruning is not implemented"),
];

impl BucketProps {
    /// Fails, naming each property, if `patch` sets a property of
    /// [`UNSUPPORTED`] to a value these props (the patch's result) do not
    /// hold at Riak's default.
    pub fn check_supported(&self, patch: &PropsPatch) -> Result<(), PropsError> {
        let props = self.to_json();
        let defaults = BucketProps::default().to_json();
        let refused: Vec<(String, String)> = UNSUPPORTED
            .iter()
            .filter(|(field, _)| patch.sets(field))
            .filter(|(field, _)| props.get(*field) != defaults.get(*field))
            .map(|(field, why)| (field.to_string(), reason(field, why, defaults.get(*field))))
            .collect();
        match refused.is_empty() {
            true => Ok(()),
            false => Err(PropsError(refused)),
        }
    }
}

fn reason(field: &str, why: &str, default: Option<&Value>) -> String {
    let default = match default {
        Some(Value::Object(mf)) => format!(
            "{}:{}",
            mf.get("mod").and_then(Value::as_str).unwrap_or_default(),
            mf.get("fun").and_then(Value::as_str).unwrap_or_default()
        ),
        Some(v) => v.to_string(),
        None => "false".into(),
    };
    format!("bucket property '{field}' is not supported ({why}); only {default} is accepted")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patch(v: Value) -> PropsPatch {
        PropsPatch::from_json(v.as_object().unwrap()).unwrap()
    }

    fn check(p: Value) -> Result<(), PropsError> {
        let p = patch(p);
        BucketProps::default()
            .patched(&p)
            .unwrap()
            .check_supported(&p)
    }

    #[test]
    fn riak_defaults_are_accepted() {
        let defaults = BucketProps::default().to_json();
        assert_eq!(check(Value::Object(defaults)), Ok(()));
        assert_eq!(check(json!({"consistent": false, "precommit": []})), Ok(()));
    }

    #[test]
    fn other_values_are_refused_by_name() {
        let cases = [
            json!({"precommit": [{"mod": "m", "fun": "f"}]}),
            json!({"postcommit": [{"name": "js"}]}),
            json!({"linkfun": {"mod": "m", "fun": "f"}}),
            json!({"chash_keyfun": {"mod": "riak_core_util", "fun": "other"}}),
            json!({"consistent": true}),
            json!({"small_vclock": 10}),
            json!({"big_vclock": 100}),
            json!({"young_vclock": 0}),
            json!({"old_vclock": 1}),
        ];
        for case in cases {
            let field = case.as_object().unwrap().keys().next().unwrap().clone();
            let err = check(case).unwrap_err();
            assert_eq!(err.0.len(), 1);
            assert_eq!(err.0[0].0, field);
            assert!(err.0[0].1.contains(&format!("'{field}' is not supported")));
        }
        let err = check(json!({"precommit": [{"name": "x"}], "old_vclock": 5})).unwrap_err();
        assert_eq!(err.0.len(), 2, "every refused property is named");
        assert!(err.to_string().contains("commit hooks are not implemented"));
        let err = check(json!({"linkfun": {"mod": "m", "fun": "f"}})).unwrap_err();
        assert!(
            err.0[0]
                .1
                .contains("riak_kv_wm_link_walker:mapreduce_linkfun"),
            "{err}"
        );
    }
}
