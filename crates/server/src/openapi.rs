//! `GET /openapi.json`: an OpenAPI 3.1 document of the server, built from the same JSON Schemas
//! the wire types generate (`openharness_host::wire_schemas`), so it cannot drift from the JSON
//! the server writes. Each schema's `$defs` are hoisted into `components.schemas`. Documents
//! of routes merged beside the server's ([`ServerOptions::openapi`](crate::ServerOptions::openapi),
//! such as the platform's `/v1`) add their paths and schemas.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

/// The document.
pub fn document() -> Value {
    let mut schemas = Map::new();
    for wire in openharness_host::wire_schemas() {
        let mut schema = wire.schema.to_value();
        hoist(&mut schema, &mut schemas);
        schemas.insert(wire.name.to_owned(), schema);
    }
    schemas.insert(
        "Error".to_owned(),
        json!({
            "type": "object",
            "required": ["error"],
            "properties": { "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": { "code": { "type": "string" }, "message": { "type": "string" } },
            } },
        }),
    );
    schemas.insert(
        "Accepted".to_owned(),
        json!({
            "type": "object",
            "required": ["session", "status"],
            "properties": { "session": { "type": "string" }, "status": { "const": "running" } },
        }),
    );
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Open Harness",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Sessions of event-sourced agent workflows: turns, events (JSON and SSE), states at positions, forks.",
        },
        "paths": paths(),
        "components": {
            "schemas": schemas,
            "securitySchemes": { "apiKey": { "type": "http", "scheme": "bearer" } },
        },
    })
}

/// Moves the `$defs` of `schema` into `into`, pointing its references there.
fn hoist(schema: &mut Value, into: &mut Map<String, Value>) {
    if let Some(Value::Object(defs)) = schema.as_object_mut().and_then(|s| s.remove("$defs")) {
        for (name, mut def) in defs {
            hoist(&mut def, into);
            retarget(&mut def);
            into.entry(name).or_insert(def);
        }
    }
    retarget(schema);
}

/// `#/$defs/X` references become `#/components/schemas/X`.
fn retarget(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get_mut("$ref")
                && let Some(name) = target.strip_prefix("#/$defs/")
            {
                *target = format!("#/components/schemas/{name}");
            }
            map.values_mut().for_each(retarget);
        }
        Value::Array(items) => items.iter_mut().for_each(retarget),
        _ => {}
    }
}

fn schema(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn json_body(schema: Value) -> Value {
    json!({ "content": { "application/json": { "schema": schema } } })
}

fn ok(description: &str, body: Value) -> Value {
    let mut response = json_body(body);
    response["description"] = json!(description);
    response
}

fn errors(codes: &[&str]) -> Map<String, Value> {
    codes
        .iter()
        .map(|code| ((*code).to_owned(), ok("an error", schema("Error"))))
        .collect()
}

/// A session id as clients should write one (the server generates UUIDs; it accepts any
/// printable id up to 200 characters).
fn session_id() -> Value {
    json!({ "name": "id", "in": "path", "required": true, "schema": { "type": "string", "pattern": "^[A-Za-z0-9._~-]{1,200}$" } })
}

/// The largest integer JSON carries exactly (JavaScript's safe integers).
const MAX_SAFE: u64 = 9_007_199_254_740_991;

fn query(name: &str, schema: Value) -> Value {
    json!({ "name": name, "in": "query", "required": false, "schema": schema })
}

fn operation(
    summary: &str,
    parameters: Vec<Value>,
    body: Option<Value>,
    success: (&str, Value),
    failures: &[&str],
) -> Value {
    let mut responses = errors(failures);
    if body.is_some() {
        // A body that is not JSON, or JSON of the wrong shape.
        responses.extend(errors(&["400", "413", "415", "422"]));
    }
    responses.insert(success.0.to_owned(), success.1);
    let mut op = json!({ "summary": summary, "parameters": parameters, "responses": responses });
    if let Some(body) = body {
        let mut request = json_body(body);
        request["required"] = json!(true);
        op["requestBody"] = request;
    }
    op
}

fn object(required: &[&str], properties: Value) -> Value {
    json!({ "type": "object", "required": required, "properties": properties, "additionalProperties": false })
}

fn sse(description: &str) -> Value {
    json!({ "description": description, "content": { "text/event-stream": { "schema": { "type": "string" } } } })
}

fn paths() -> Value {
    let position = json!({ "type": "integer", "minimum": 0, "maximum": MAX_SAFE });
    let accepted = (
        "202",
        ok("the turn runs on in the server", schema("Accepted")),
    );
    json!({
        "/health": { "get": operation("Health", vec![], None, ("200", ok("ok", json!({ "type": "object" }))), &[]) },
        "/openapi.json": { "get": operation("This document", vec![], None, ("200", ok("the document", json!({ "type": "object" }))), &[]) },
        "/sessions": {
            "get": operation("Every session", vec![], None, ("200", ok("the sessions", object(&["sessions"], json!({ "sessions": { "type": "array", "items": schema("SessionSummary") } })))), &["401"]),
            "post": operation("Start a session", vec![], Some(object(&["workflow"], json!({ "workflow": { "type": "string" }, "input": { "type": ["string", "null"] } }))), accepted.clone(), &["400", "401", "404", "413"]),
        },
        "/sessions/{id}": {
            "get": operation("One session", vec![session_id()], None, ("200", ok("the session", schema("SessionSummary"))), &["400", "401", "404"]),
            "delete": operation("Delete a session", vec![session_id()], None, ("204", json!({ "description": "deleted" })), &["400", "401", "404", "409"]),
        },
        "/sessions/{id}/input": { "post": operation("A new turn", vec![session_id()], Some(object(&["text"], json!({ "text": { "type": "string" } }))), accepted.clone(), &["400", "401", "404", "409", "413", "422"]) },
        "/sessions/{id}/answer": { "post": operation("Answer an input request", vec![session_id()], Some(object(&["request", "text"], json!({ "request": { "type": "string", "format": "uuid" }, "text": { "type": "string" } }))), accepted.clone(), &["400", "401", "404", "409", "413", "422"]) },
        "/sessions/{id}/resume": { "post": operation("Finish a cut-off turn", vec![session_id()], None, accepted.clone(), &["400", "401", "404", "409", "422"]) },
        "/sessions/{id}/cancel": { "post": operation("Cancel the running turn", vec![session_id()], None, ("200", ok("whether a turn was running", object(&["cancelled"], json!({ "cancelled": { "type": "boolean" } })))), &["400", "401", "404"]) },
        "/sessions/{id}/events": { "get": {
            "summary": "Events: a JSON page, or SSE with Accept: text/event-stream",
            "parameters": [session_id(), query("after", position.clone()), query("limit", json!({ "type": "integer", "minimum": 0, "maximum": MAX_SAFE }))],
            "responses": {
                "200": { "description": "a page, or an event stream", "content": {
                    "application/json": { "schema": schema("EventsPage") },
                    "text/event-stream": { "schema": { "type": "string" } },
                } },
                "400": ok("an error", schema("Error")), "401": ok("an error", schema("Error")),
                "404": ok("an error", schema("Error")), "429": ok("an error", schema("Error")),
            },
        } },
        "/sessions/{id}/state": { "get": operation("The state at a position", vec![session_id(), query("at", position.clone())], None, ("200", ok("the state", schema("StateAt"))), &["400", "401", "404", "422"]) },
        "/sessions/{id}/states": { "get": operation("States at positions, in one pass", vec![session_id(), json!({ "name": "at", "in": "query", "required": true, "schema": { "type": "string", "pattern": "^[0-9]{1,15}(,[0-9]{1,15}){0,99}$" } })], None, ("200", ok("the states", json!({ "type": "array", "items": schema("StateAt") }))), &["400", "401", "404", "422"]) },
        "/sessions/{id}/diff": { "get": operation("The JSON patch between two positions", vec![session_id(), json!({ "name": "from", "in": "query", "required": true, "schema": position.clone() }), json!({ "name": "to", "in": "query", "required": true, "schema": position.clone() })], None, ("200", ok("an RFC 6902 patch", json!({ "type": "array" }))), &["400", "401", "404", "422"]) },
        "/sessions/{id}/messages": { "get": operation("Chat messages at a position", vec![session_id(), query("at", position), query("shape", json!({ "enum": ["v4", "ui", "calls"] }))], None, ("200", ok("the messages", json!({ "type": "array" }))), &["400", "401", "404"]) },
        "/sessions/{id}/fork": { "post": operation("Fork and run on", vec![session_id()], Some(schema("ForkPoint")), accepted, &["400", "401", "404", "413", "422"]) },
        "/api/chat": { "post": {
            "summary": "AI SDK 5 chat: the turn as a UI message stream",
            "requestBody": { "required": true, "content": { "application/json": { "schema": object(&["id", "messages"], json!({
                "id": { "type": "string" }, "messages": { "type": "array" }, "trigger": { "type": "string" }, "messageId": { "type": "string" },
            })) } } },
            "responses": { "200": sse("the UI message stream"), "400": ok("an error", schema("Error")), "401": ok("an error", schema("Error")), "404": ok("an error", schema("Error")), "409": ok("an error", schema("Error")), "413": ok("an error", schema("Error")) },
        } },
        "/api/chat/{id}/stream": { "get": {
            "summary": "The running chat turn's stream from its start",
            "parameters": [session_id()],
            "responses": { "200": sse("the UI message stream"), "204": { "description": "no turn is running" }, "400": ok("an error", schema("Error")), "401": ok("an error", schema("Error")) },
        } },
        "/api/workflow": { "post": {
            "summary": "The seeds' workflow handler: event, state and done frames",
            "requestBody": { "required": true, "content": { "application/json": { "schema": object(&["input"], json!({
                "input": { "type": "string" }, "sessionId": { "type": "string" }, "workflow": { "type": "string" }, "record": { "type": "boolean" },
            })) } } },
            "responses": { "200": sse("the frames"), "400": ok("an error", schema("Error")), "401": ok("an error", schema("Error")), "404": ok("an error", schema("Error")), "409": ok("an error", schema("Error")), "413": ok("an error", schema("Error")) },
        } },
    })
}

/// The server's document with the paths and schemas of `extensions` added; a schema name
/// the server already uses keeps the server's schema.
pub(crate) fn merged(extensions: &[Value]) -> Value {
    let mut doc = document();
    for extension in extensions {
        if let (Some(Value::Object(paths)), Some(into)) = (
            extension.get("paths"),
            doc.get_mut("paths").and_then(Value::as_object_mut),
        ) {
            for (path, item) in paths {
                into.entry(path.clone()).or_insert_with(|| item.clone());
            }
        }
        if let (Some(Value::Object(schemas)), Some(into)) = (
            extension.pointer("/components/schemas"),
            doc.pointer_mut("/components/schemas")
                .and_then(Value::as_object_mut),
        ) {
            for (name, schema) in schemas {
                into.entry(name.clone()).or_insert_with(|| schema.clone());
            }
        }
    }
    doc
}

/// `GET /openapi.json`.
pub(crate) async fn serve(State(state): State<Arc<crate::AppState>>) -> Response {
    Json(merged(&state.options.openapi)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_documents_add_paths_and_schemas_and_keep_the_servers() {
        let extension = json!({
            "paths": { "/v1/ping": { "get": { "responses": {} } }, "/health": { "get": {} } },
            "components": { "schemas": { "V1Ping": { "type": "object" }, "Error": { "type": "null" } } },
        });
        let doc = merged(&[extension]);
        assert!(doc["paths"]["/v1/ping"]["get"].is_object());
        assert!(doc["paths"]["/sessions"].is_object());
        assert_eq!(doc["components"]["schemas"]["V1Ping"]["type"], "object");
        // The server's own keep theirs.
        assert_eq!(doc["components"]["schemas"]["Error"]["type"], "object");
        assert_eq!(doc["paths"]["/health"], document()["paths"]["/health"]);
    }
}
