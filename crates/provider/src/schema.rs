//! JSON Schema transformations: from the schema `schemars` emits for an output type to the
//! subset each provider accepts for constrained decoding.
//!
//! * [`for_anthropic`]: Anthropic's structured-output subset. Every object gets
//!   `additionalProperties: false`; numeric, string-length and most array constraints and
//!   unsupported `format`s are removed and restated in the `description` (so the model still
//!   reads them); `oneOf` becomes `anyOf`. Recursive schemas and maps cannot be expressed: the
//!   provider then falls back to the forced-tool method, which takes any schema.
//! * [`for_openai_strict`]: OpenAI's strict mode. Every property is `required`, optional ones
//!   become nullable, every object gets `additionalProperties: false`, `oneOf` becomes `anyOf`,
//!   and the root must be an object. Recursion is allowed. When the schema cannot be made strict
//!   (maps, `allOf`), the provider sends it non-strict.
//!
//! Either way the output is validated locally against the *original* schema by the runtime,
//! so a constraint dropped here is still enforced (and re-asked about).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

/// Why a schema cannot be expressed in a provider's subset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The schema uses something the subset lacks.
    #[error("the schema cannot be expressed in {target}'s subset: {reason}")]
    Unsupported {
        /// `anthropic` or `openai-strict`.
        target: &'static str,
        /// What is missing, naming the JSON pointer of the offending part.
        reason: String,
    },
}

const ANTHROPIC: &str = "anthropic";
const OPENAI: &str = "openai-strict";

/// String formats both providers accept.
const FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Transforms a schema to Anthropic's structured-output subset.
///
/// ```
/// use openharness_provider::schema::for_anthropic;
/// use serde_json::json;
///
/// let original = json!({
///     "type": "object",
///     "properties": { "count": { "type": "integer", "minimum": 1, "description": "How many" } },
///     "required": ["count"]
/// });
/// let transformed = for_anthropic(&original).unwrap();
/// assert_eq!(transformed["additionalProperties"], false);
/// assert_eq!(transformed["properties"]["count"], json!({
///     "type": "integer",
///     "description": "How many\n\n{minimum: 1}"
/// }));
/// ```
pub fn for_anthropic(schema: &Value) -> Result<Value, SchemaError> {
    if let Some(path) = recursion(schema) {
        return Err(SchemaError::Unsupported {
            target: ANTHROPIC,
            reason: format!("recursive schemas are not supported (`{path}` refers back to itself)"),
        });
    }
    let mut out = schema.clone();
    strip_meta(&mut out);
    walk(&mut out, "", &mut |node, path| anthropic_node(node, path))?;
    Ok(out)
}

/// Transforms a schema to OpenAI's strict structured-output form.
///
/// ```
/// use openharness_provider::schema::for_openai_strict;
/// use serde_json::json;
///
/// let original = json!({
///     "type": "object",
///     "properties": {
///         "title": { "type": "string" },
///         "note": { "type": "string" }
///     },
///     "required": ["title"]
/// });
/// let strict = for_openai_strict(&original).unwrap();
/// assert_eq!(strict["required"], json!(["note", "title"]));
/// assert_eq!(strict["properties"]["note"]["type"], json!(["string", "null"]));
/// assert_eq!(strict["additionalProperties"], false);
/// ```
pub fn for_openai_strict(schema: &Value) -> Result<Value, SchemaError> {
    let root_is_object = schema.get("type").and_then(Value::as_str) == Some("object")
        && schema.get("anyOf").is_none()
        && schema.get("oneOf").is_none();
    if !root_is_object {
        return Err(SchemaError::Unsupported {
            target: OPENAI,
            reason: "the root must be an object (use a struct as the output type)".into(),
        });
    }
    let mut out = schema.clone();
    strip_meta(&mut out);
    walk(&mut out, "", &mut |node, path| openai_node(node, path))?;
    Ok(out)
}

/// Removes `null` values of properties that the original schema does not require, in place.
///
/// OpenAI's strict mode makes every property required and optional ones nullable, so the model
/// writes `"field": null` where the original type expects the field to be absent. Removing
/// those gives back a value the original schema accepts.
///
/// ```
/// use openharness_provider::schema::remove_optional_nulls;
/// use serde_json::json;
///
/// let schema = json!({
///     "type": "object",
///     "properties": { "a": { "type": "string" }, "b": { "type": "integer" } },
///     "required": ["a"]
/// });
/// let mut output = json!({ "a": "x", "b": null });
/// remove_optional_nulls(&schema, &mut output);
/// assert_eq!(output, json!({ "a": "x" }));
/// ```
pub fn remove_optional_nulls(schema: &Value, output: &mut Value) {
    strip_nulls(schema, schema, output, 0);
}

fn strip_nulls(root: &Value, schema: &Value, value: &mut Value, depth: usize) {
    if depth > 64 {
        return;
    }
    let schema = resolve(root, schema);
    match value {
        Value::Object(object) => {
            let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
                return;
            };
            let required = required_set(schema);
            object.retain(|key, v| !v.is_null() || required.contains(key.as_str()));
            for (key, v) in object.iter_mut() {
                if let Some(property) = properties.get(key) {
                    strip_nulls(root, property, v, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items") {
                for v in items {
                    strip_nulls(root, item, v, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// Follows a local `$ref` (`#`, `#/$defs/X`, `#/definitions/X`).
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    let mut current = schema;
    for _ in 0..16 {
        match current.get("$ref").and_then(Value::as_str) {
            Some(reference) => match lookup(root, reference) {
                Some(target) => current = target,
                None => return current,
            },
            None => return current,
        }
    }
    current
}

fn lookup<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    root.pointer(pointer)
}

fn required_set(schema: &Value) -> BTreeSet<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Whether the schema's local references form a cycle; returns the pointer of one definition
/// in it.
pub fn is_recursive(schema: &Value) -> bool {
    recursion(schema).is_some()
}

fn recursion(schema: &Value) -> Option<String> {
    // Edges: from each definition (and the root, "#") to the references inside it.
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut collect = |name: String, node: &Value| {
        let mut refs = BTreeSet::new();
        references(node, &mut refs, true);
        edges.insert(name, refs);
    };
    collect("#".into(), schema);
    for container in ["$defs", "definitions"] {
        if let Some(defs) = schema.get(container).and_then(Value::as_object) {
            for (name, def) in defs {
                collect(format!("#/{container}/{name}"), def);
            }
        }
    }
    // Depth-first search for a back edge.
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        on_path: &mut BTreeSet<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<String> {
        if on_path.contains(node) {
            return Some(node.to_owned());
        }
        if !done.insert(node.to_owned()) {
            return None;
        }
        on_path.insert(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, edges, on_path, done) {
                return Some(found);
            }
        }
        on_path.remove(node);
        None
    }
    let mut done = BTreeSet::new();
    let names: Vec<String> = edges.keys().cloned().collect();
    names
        .iter()
        .find_map(|name| visit(name, &edges, &mut BTreeSet::new(), &mut done))
}

/// The `$ref`s inside `node`, not descending into the root's own `$defs` (they are nodes of
/// their own in the graph).
fn references(node: &Value, out: &mut BTreeSet<String>, is_root: bool) {
    match node {
        Value::Object(map) => {
            for (key, value) in map {
                if is_root && (key == "$defs" || key == "definitions") {
                    continue;
                }
                if key == "$ref"
                    && let Some(reference) = value.as_str()
                {
                    out.insert(reference.to_owned());
                } else {
                    references(value, out, false);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| references(v, out, false)),
        _ => {}
    }
}

fn strip_meta(schema: &mut Value) {
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
    }
}

/// A transformation of one subschema, given its JSON pointer.
type Visit<'a> = dyn FnMut(&mut Map<String, Value>, &str) -> Result<(), SchemaError> + 'a;

/// Applies `visit` to every subschema (parents before children), with its JSON pointer.
fn walk(node: &mut Value, path: &str, visit: &mut Visit<'_>) -> Result<(), SchemaError> {
    let Some(object) = node.as_object_mut() else {
        return Ok(());
    };
    visit(object, path)?;
    for key in ["properties", "$defs", "definitions", "patternProperties"] {
        if let Some(children) = object.get_mut(key).and_then(Value::as_object_mut) {
            for (name, child) in children.iter_mut() {
                walk(child, &format!("{path}/{key}/{name}"), visit)?;
            }
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(children) = object.get_mut(key).and_then(Value::as_array_mut) {
            for (i, child) in children.iter_mut().enumerate() {
                walk(child, &format!("{path}/{key}/{i}"), visit)?;
            }
        }
    }
    for key in ["items", "additionalProperties", "not", "contains"] {
        if let Some(child) = object.get_mut(key) {
            walk(child, &format!("{path}/{key}"), visit)?;
        }
    }
    Ok(())
}

fn is_object_schema(node: &Map<String, Value>) -> bool {
    match node.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
        _ => node.contains_key("properties"),
    }
}

/// Takes out of `node` what a target does not accept: the listed keywords, and a `format` it
/// does not know, move into a note at the end of its description (the model still reads
/// them there); `examples` is dropped.
fn move_to_description(node: &mut Map<String, Value>, keys: &[&str]) {
    node.remove("examples");
    let format = unsupported_format(node).then_some("format");
    let moved: Vec<String> = keys
        .iter()
        .copied()
        .chain(format)
        .filter_map(|key| node.remove(key).map(|value| format!("{key}: {value}")))
        .collect();
    if moved.is_empty() {
        return;
    }
    let note = format!("{{{}}}", moved.join(", "));
    let description = match node.get("description").and_then(Value::as_str) {
        Some(existing) if !existing.is_empty() => format!("{existing}\n\n{note}"),
        _ => note,
    };
    node.insert("description".into(), Value::String(description));
}

fn unsupported_format(node: &Map<String, Value>) -> bool {
    node.get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| !FORMATS.contains(&f))
}

fn close_object(
    node: &mut Map<String, Value>,
    path: &str,
    target: &'static str,
) -> Result<(), SchemaError> {
    if !is_object_schema(node) {
        return Ok(());
    }
    match node.get("additionalProperties") {
        None | Some(Value::Bool(_)) => {}
        Some(_) => {
            return Err(SchemaError::Unsupported {
                target,
                reason: format!(
                    "`{}` is a map (an object with `additionalProperties`); only objects with fixed properties are supported",
                    if path.is_empty() { "/" } else { path }
                ),
            });
        }
    }
    node.insert("additionalProperties".into(), Value::Bool(false));
    node.entry("properties").or_insert_with(|| json!({}));
    Ok(())
}

fn anthropic_node(node: &mut Map<String, Value>, path: &str) -> Result<(), SchemaError> {
    if let Some(one_of) = node.remove("oneOf") {
        node.insert("anyOf".into(), one_of);
    }
    if let Some(Value::Array(all_of)) = node.get("allOf")
        && all_of.iter().any(|s| s.get("$ref").is_some())
    {
        return Err(SchemaError::Unsupported {
            target: ANTHROPIC,
            reason: format!("`{path}/allOf` contains a `$ref`"),
        });
    }
    if let Some(Value::Array(values)) = node.get("enum")
        && values.iter().any(|v| v.is_object() || v.is_array())
    {
        return Err(SchemaError::Unsupported {
            target: ANTHROPIC,
            reason: format!("`{path}/enum` has values that are not primitives"),
        });
    }
    let mut removed = vec![
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "maxItems",
        "uniqueItems",
        "minProperties",
        "maxProperties",
    ];
    if node
        .get("minItems")
        .and_then(Value::as_u64)
        .is_some_and(|n| n > 1)
    {
        removed.push("minItems");
    }
    move_to_description(node, &removed);
    close_object(node, path, ANTHROPIC)
}

fn openai_node(node: &mut Map<String, Value>, path: &str) -> Result<(), SchemaError> {
    if let Some(one_of) = node.remove("oneOf") {
        node.insert("anyOf".into(), one_of);
    }
    for keyword in [
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
    ] {
        if node.contains_key(keyword) {
            return Err(SchemaError::Unsupported {
                target: OPENAI,
                reason: format!("`{path}` uses `{keyword}`"),
            });
        }
    }
    let removed = [
        "minLength",
        "maxLength",
        "uniqueItems",
        "default",
        "minProperties",
        "maxProperties",
    ];
    move_to_description(node, &removed);
    close_object(node, path, OPENAI)?;
    if !is_object_schema(node) {
        return Ok(());
    }
    let required = required_set_owned(node);
    let Some(properties) = node.get_mut("properties").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let all: Vec<Value> = properties
        .keys()
        .map(|k| Value::String(k.clone()))
        .collect();
    for (name, property) in properties.iter_mut() {
        if !required.contains(name) {
            make_nullable(property);
        }
    }
    node.insert("required".into(), Value::Array(all));
    Ok(())
}

fn required_set_owned(node: &Map<String, Value>) -> BTreeSet<String> {
    node.get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn allows_null(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        _ => schema
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|branches| branches.iter().any(allows_null)),
    }
}

/// Lets `schema` also accept `null`.
fn make_nullable(schema: &mut Value) {
    if allows_null(schema) {
        return;
    }
    let Some(node) = schema.as_object_mut() else {
        *schema = json!({ "anyOf": [schema.clone(), { "type": "null" }] });
        return;
    };
    let has_ref = node.contains_key("$ref");
    match node.get_mut("type") {
        Some(Value::String(t)) if !has_ref => {
            let t = std::mem::take(t);
            node.insert("type".into(), json!([t, "null"]));
            if let Some(Value::Array(values)) = node.get_mut("enum")
                && !values.contains(&Value::Null)
            {
                values.push(Value::Null);
            }
        }
        Some(Value::Array(types)) => types.push(json!("null")),
        _ => {
            if let Some(Value::Array(branches)) = node.get_mut("anyOf") {
                branches.push(json!({ "type": "null" }));
            } else {
                // A `$ref` or a schema without a type: wrap it, keeping the description outside.
                let description = node.remove("description");
                let inner = Value::Object(std::mem::take(node));
                node.insert("anyOf".into(), json!([inner, { "type": "null" }]));
                if let Some(description) = description {
                    node.insert("description".into(), description);
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn recursion_is_found_through_defs_and_the_root() {
        let direct = json!({ "type": "object", "properties": { "next": { "$ref": "#" } } });
        assert!(is_recursive(&direct));
        let via_defs = json!({
            "$ref": "#/$defs/A",
            "$defs": {
                "A": { "type": "object", "properties": { "b": { "$ref": "#/$defs/B" } } },
                "B": { "type": "array", "items": { "$ref": "#/$defs/A" } }
            }
        });
        assert!(is_recursive(&via_defs));
        let shared_not_recursive = json!({
            "type": "object",
            "properties": { "x": { "$ref": "#/$defs/P" }, "y": { "$ref": "#/$defs/P" } },
            "$defs": { "P": { "type": "string" } }
        });
        assert!(!is_recursive(&shared_not_recursive));
    }

    #[test]
    fn anthropic_rejects_recursion_and_maps() {
        let map = json!({ "type": "object", "additionalProperties": { "type": "integer" } });
        let err = for_anthropic(&map).unwrap_err();
        assert!(err.to_string().contains("map"), "{err}");
        let recursive = json!({ "type": "object", "properties": { "next": { "$ref": "#" } } });
        assert!(
            for_anthropic(&recursive)
                .unwrap_err()
                .to_string()
                .contains("recursive")
        );
    }

    #[test]
    fn openai_nullable_enum_accepts_null() {
        let mut property = json!({ "type": "string", "enum": ["a", "b"] });
        make_nullable(&mut property);
        assert_eq!(
            property,
            json!({ "type": ["string", "null"], "enum": ["a", "b", null] })
        );
    }

    #[test]
    fn openai_nullable_ref_is_wrapped() {
        let mut property = json!({ "$ref": "#/$defs/X", "description": "d" });
        make_nullable(&mut property);
        assert_eq!(
            property,
            json!({ "anyOf": [{ "$ref": "#/$defs/X" }, { "type": "null" }], "description": "d" })
        );
    }

    #[test]
    fn nulls_of_optional_fields_are_removed_through_refs_and_arrays() {
        let schema = json!({
            "type": "object",
            "properties": { "items": { "type": "array", "items": { "$ref": "#/$defs/I" } } },
            "required": ["items"],
            "$defs": { "I": { "type": "object", "properties": { "n": { "type": "integer" }, "m": { "type": ["integer", "null"] } }, "required": ["m"] } }
        });
        let mut value = json!({ "items": [{ "n": null, "m": null }, { "n": 1, "m": 2 }] });
        remove_optional_nulls(&schema, &mut value);
        assert_eq!(
            value,
            json!({ "items": [{ "m": null }, { "n": 1, "m": 2 }] })
        );
    }
}
