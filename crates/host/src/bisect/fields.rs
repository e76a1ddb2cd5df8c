//! [`FieldChange`]: two JSON values compared field by field, each change with the value on
//! both sides — what a person reads to see what a bug did (`/refunded_cents: 1250 → 125000`).
//! A JSON patch (`json_patch::diff`, RFC 6902) says how to turn one into the other and keeps
//! only the new values, with array indexes that shift as it removes; this keeps both values
//! at the paths of the two documents as they are.

use serde::Serialize;
use serde_json::Value;

/// One field that differs between two JSON documents: its JSON Pointer (RFC 6901, as a JSON
/// patch names it) and its value on each side (`None`: absent there).
///
/// ```
/// use openharness_host::FieldChange;
/// let changes: Vec<String> = FieldChange::between(
///     &serde_json::json!({ "total": 1, "items": ["a"] }),
///     &serde_json::json!({ "total": 2, "items": ["a", "b"] }),
/// )
/// .iter()
/// .map(ToString::to_string)
/// .collect();
/// assert_eq!(changes.len(), 2);
/// assert!(changes.contains(&"/total: 1 → 2".to_owned()));
/// assert!(changes.contains(&"/items/1: (none) → \"b\"".to_owned()));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[non_exhaustive]
pub struct FieldChange {
    /// Where, as a JSON Pointer (`""` for the whole document).
    pub path: String,
    /// The value on the first side (`None`: the field is not there).
    pub from: Option<Value>,
    /// The value on the second side (`None`: the field is not there).
    pub to: Option<Value>,
}

impl FieldChange {
    /// Every field of `a` and `b` that differs, in document order (an object's keys as they
    /// come, then those only `a` has; an array index by index): leaves and whole values that
    /// are on one side only, never an object or array that merely contains a change.
    pub fn between(a: &Value, b: &Value) -> Vec<FieldChange> {
        let mut changes = Vec::new();
        walk(a, b, &mut String::new(), &mut changes);
        changes
    }
}

impl std::fmt::Display for FieldChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let side = |value: &Option<Value>| {
            value
                .as_ref()
                .map_or_else(|| "(none)".to_owned(), Value::to_string)
        };
        let path = if self.path.is_empty() {
            "(the whole value)"
        } else {
            &self.path
        };
        write!(f, "{path}: {} → {}", side(&self.from), side(&self.to))
    }
}

fn walk(a: &Value, b: &Value, path: &mut String, changes: &mut Vec<FieldChange>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (key, to) in y {
                let len = push(path, key);
                match x.get(key) {
                    Some(from) => walk(from, to, path, changes),
                    None => changes.push(change(path, None, Some(to))),
                }
                path.truncate(len);
            }
            for (key, from) in x.iter().filter(|(key, _)| !y.contains_key(*key)) {
                let len = push(path, key);
                changes.push(change(path, Some(from), None));
                path.truncate(len);
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            for index in 0..x.len().max(y.len()) {
                let len = push(path, &index.to_string());
                match (x.get(index), y.get(index)) {
                    (Some(from), Some(to)) => walk(from, to, path, changes),
                    (from, to) => changes.push(change(path, from, to)),
                }
                path.truncate(len);
            }
        }
        (a, b) if a != b => changes.push(change(path, Some(a), Some(b))),
        _ => {}
    }
}

/// Appends `/key` (escaped as RFC 6901 says) to `path`; returns the length to cut back to.
fn push(path: &mut String, key: &str) -> usize {
    let len = path.len();
    path.push('/');
    path.push_str(&key.replace('~', "~0").replace('/', "~1"));
    len
}

fn change(path: &str, from: Option<&Value>, to: Option<&Value>) -> FieldChange {
    FieldChange {
        path: path.to_owned(),
        from: from.cloned(),
        to: to.cloned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_change_names_its_path_in_both_documents_with_both_values() {
        let a = json!({ "n": 1, "list": ["a", "b", "c"], "gone": true, "a/b": { "x": 1 } });
        let b = json!({ "n": 1, "list": ["b"], "new": null, "a/b": { "x": 2 } });
        let mut changes: Vec<String> = FieldChange::between(&a, &b)
            .iter()
            .map(ToString::to_string)
            .collect();
        // (Keys come in the order serde_json's map keeps them.)
        changes.sort();
        assert_eq!(
            changes,
            [
                "/a~1b/x: 1 → 2",
                "/gone: true → (none)",
                "/list/0: \"a\" → \"b\"",
                "/list/1: \"b\" → (none)",
                "/list/2: \"c\" → (none)",
                "/new: (none) → null",
            ]
        );
        // Every path is one a JSON Pointer reads back on its side.
        for change in FieldChange::between(&a, &b) {
            assert_eq!(a.pointer(&change.path), change.from.as_ref());
            assert_eq!(b.pointer(&change.path), change.to.as_ref());
        }
        assert!(FieldChange::between(&a, &a).is_empty());
        assert_eq!(
            FieldChange::between(&json!(1), &json!("1"))[0].to_string(),
            "(the whole value): 1 → \"1\""
        );
    }
}
