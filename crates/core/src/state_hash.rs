//! [`state_hash`]: the SHA-256 of a state as canonical JSON, recorded in every fork's
//! `session:forked` so that two forks can be shown to have started from identical state.
//!
//! Canonical means object keys in sorted order at every depth, whatever order the state's
//! maps iterate in (a `HashMap` field serializes in a different order in each process), and
//! numbers, strings and literals as `serde_json` writes them.

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The SHA-256 (lower-case hex) of `state` serialized as canonical JSON.
///
/// ```
/// use std::collections::HashMap;
/// let a: HashMap<&str, u32> = [("x", 1), ("y", 2)].into();
/// let b: HashMap<&str, u32> = [("y", 2), ("x", 1)].into();
/// let hash = openharness_core::adapter::state_hash(&a).unwrap();
/// assert_eq!(hash, openharness_core::adapter::state_hash(&b).unwrap());
/// assert_eq!(hash.len(), 64);
/// ```
pub fn state_hash(state: &impl Serialize) -> Result<String, serde_json::Error> {
    let value = serde_json::to_value(state)?;
    Ok(json_hash(&value))
}

/// The shape of a state: the object keys of its JSON at every depth (an array by its first
/// item), without any value, hashed (16 hex digits). Taken of a workflow's initial state and
/// recorded in `workflow:started`, it tells whether the state's fields changed since a
/// session was recorded — then the state hashes it recorded cannot be compared with today's
/// fold (every one would differ), and a check says so instead of reporting a divergence.
///
/// ```
/// use openharness_core::adapter::state_shape;
/// let shape = state_shape(&serde_json::json!({ "total": 0, "items": [] }));
/// assert_eq!(shape, state_shape(&serde_json::json!({ "items": ["a"], "total": 7 })));
/// assert_ne!(shape, state_shape(&serde_json::json!({ "total": 0, "items": [], "note": null })));
/// ```
pub fn state_shape(value: &Value) -> String {
    fn skeleton(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(key, value)| (key.clone(), skeleton(value)))
                    .collect(),
            ),
            Value::Array(items) => match items.first() {
                Some(first @ Value::Object(_)) => Value::Array(vec![skeleton(first)]),
                _ => Value::Array(Vec::new()),
            },
            _ => Value::Null,
        }
    }
    let mut hash = json_hash(&skeleton(value));
    hash.truncate(16);
    hash
}

/// The SHA-256 (lower-case hex) of `value` as canonical JSON.
pub fn json_hash(value: &Value) -> String {
    let mut hasher = Sha256::new();
    write_canonical(value, &mut hasher);
    hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

fn write_canonical(value: &Value, hasher: &mut Sha256) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            hasher.update(b"{");
            for (index, (key, value)) in entries.into_iter().enumerate() {
                if index > 0 {
                    hasher.update(b",");
                }
                write_canonical(&Value::String(key.clone()), hasher);
                hasher.update(b":");
                write_canonical(value, hasher);
            }
            hasher.update(b"}");
        }
        Value::Array(items) => {
            hasher.update(b"[");
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    hasher.update(b",");
                }
                write_canonical(item, hasher);
            }
            hasher.update(b"]");
        }
        scalar => hasher.update(scalar.to_string().as_bytes()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn key_order_does_not_change_the_hash_and_values_do() {
        let a = json!({ "b": [1, { "y": true, "x": null }], "a": "s" });
        let b: Value = serde_json::from_str(r#"{"a":"s","b":[1,{"x":null,"y":true}]}"#).unwrap();
        assert_eq!(json_hash(&a), json_hash(&b));
        assert_ne!(
            json_hash(&a),
            json_hash(&json!({ "a": "s", "b": [1, { "x": null }] }))
        );
        assert_ne!(json_hash(&json!([1, 2])), json_hash(&json!([2, 1])));
        assert_ne!(json_hash(&json!("1")), json_hash(&json!(1)));
    }

    #[test]
    fn the_hash_is_sha256_of_the_canonical_text() {
        // sha256 of `{"a":1}`
        assert_eq!(
            json_hash(&json!({ "a": 1 })),
            "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
        );
    }
}
