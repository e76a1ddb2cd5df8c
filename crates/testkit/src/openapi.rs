//! Checking an OpenAPI document: every `$ref` in it names a schema it defines.
//!
//! ```
//! use openharness_testkit::openapi::assert_references_resolve;
//! use serde_json::json;
//!
//! let doc = json!({
//!     "paths": { "/health": { "get": { "responses": { "200": {
//!         "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Health" } } }
//!     } } } } },
//!     "components": { "schemas": { "Health": { "type": "object" } } }
//! });
//! assert_eq!(assert_references_resolve(&doc), 1);
//! ```

use serde_json::Value;

/// Asserts that every `$ref` in `doc` points into `#/components/schemas/` and names a schema
/// there; returns how many references it checked, so a test can also say it found some.
///
/// # Panics
///
/// On a reference outside the components or one that names no schema: that is the test
/// failing.
#[track_caller]
pub fn assert_references_resolve(doc: &Value) -> usize {
    let mut targets = Vec::new();
    references(doc, &mut targets);
    for target in &targets {
        let Some(name) = target.strip_prefix("#/components/schemas/") else {
            panic!("{target} points outside the components");
        };
        assert!(
            doc["components"]["schemas"].get(name).is_some(),
            "{target} does not resolve"
        );
    }
    targets.len()
}

/// Every `$ref` in `value`, depth first.
fn references<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref") {
                out.push(target);
            }
            map.values().for_each(|v| references(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| references(v, out)),
        _ => {}
    }
}
