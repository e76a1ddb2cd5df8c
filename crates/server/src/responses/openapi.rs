//! The Open Responses routes in `GET /openapi.json`. The request and the resource are
//! described loosely (the specification's own document is their schema; see `externalDocs`):
//! this server reads the fields `responses.rs` names and ignores the rest, as clients send many.

use serde_json::{Map, Value, json};

use crate::openapi::parts::{ok, operation, query, sse};

/// Where the shapes are specified.
fn spec() -> Value {
    json!({ "description": "Open Responses, specification 2026-04-24", "url": "https://github.com/openresponses/openresponses" })
}

/// A response id in the path.
fn response_id() -> Value {
    json!({ "name": "id", "in": "path", "required": true, "schema": { "type": "string", "pattern": "^resp_[0-9]{1,16}_.{1,200}$" } })
}

/// A response resource (loosely: its required fields).
fn resource() -> Value {
    json!({ "type": "object", "required": ["id", "object", "status", "output"], "properties": {
        "id": { "type": "string" }, "object": { "const": "response" },
        "status": { "enum": ["in_progress", "completed", "incomplete", "failed"] },
        "output": { "type": "array" },
    } })
}

/// `/v1/responses` and its sub-routes.
pub(crate) fn paths() -> Map<String, Value> {
    let mut create = operation(
        "Open Responses: a turn of the workflow or `/v1` agent (`agent:<name-or-id>`) `model` names (new, or continuing `previous_response_id` — a fork when the session has moved on since — or `conversation`); JSON, or SSE with `stream: true`",
        vec![crate::openapi::parts::on_busy_header()],
        Some(
            json!({ "type": "object", "required": ["model", "input"], "properties": {
            "model": { "type": "string" },
            "input": { "oneOf": [{ "type": "string", "minLength": 1 }, { "type": "array" }] },
            "previous_response_id": { "type": "string" },
            "conversation": { "oneOf": [{ "type": "string" }, { "type": "object" }] },
            "instructions": { "type": "string" },
            "stream": { "type": "boolean" },
            "background": { "type": "boolean" },
            "metadata": { "type": ["object", "null"] },
            "tools": { "type": "array", "description": "`function` tools the client runs (served for `/v1` agents)", "items": { "type": "object" } },
        } }),
        ),
        ("200", {
            let mut answer = ok(
                "the response (or, with `stream: true`, its events)",
                resource(),
            );
            answer["content"]["text/event-stream"] = json!({ "schema": { "type": "string" } });
            answer
        }),
        &["404", "409", "429"],
    );
    create["externalDocs"] = spec();
    let mut retrieve = operation(
        "A response as the log has it; with `stream=true`, its events after `starting_after`, followed live",
        vec![
            response_id(),
            query("stream", json!({ "type": "boolean" })),
            query(
                "starting_after",
                json!({ "type": "integer", "minimum": 0, "maximum": crate::request::MAX_SAFE }),
            ),
        ],
        None,
        ("200", {
            let mut answer = ok("the response", resource());
            answer["content"]["text/event-stream"] =
                sse("its events")["content"]["text/event-stream"].clone();
            answer
        }),
        &["400", "404", "429"],
    );
    retrieve["externalDocs"] = spec();
    let cancel = operation(
        "Stops the response's turn as an event (stop:requested); the response ends `incomplete` (`cancelled`)",
        vec![response_id()],
        None,
        ("200", ok("the response", resource())),
        &["404", "409"],
    );
    let items = operation(
        "The user message a response answered",
        vec![response_id()],
        None,
        (
            "200",
            ok(
                "a list of items",
                json!({ "type": "object", "required": ["object", "data"], "properties": { "object": { "const": "list" }, "data": { "type": "array" } } }),
            ),
        ),
        &["404"],
    );
    let conversation_id =
        || json!({ "name": "id", "in": "path", "required": true, "schema": { "type": "string" } });
    let conversation = json!({ "type": "object", "required": ["id", "object", "created_at", "metadata"], "properties": {
        "id": { "type": "string" }, "object": { "const": "conversation" },
        "created_at": { "type": "integer" }, "metadata": { "type": "object" },
    } });
    let create_conversation = operation(
        "A new conversation (a session, recorded with its first response)",
        vec![],
        Some(
            json!({ "type": "object", "properties": { "metadata": { "type": ["object", "null"] }, "items": { "type": ["array", "null"], "maxItems": 0 } } }),
        ),
        ("200", ok("the conversation", conversation.clone())),
        &[],
    );
    let get_conversation = operation(
        "A conversation (a session)",
        vec![conversation_id()],
        None,
        ("200", ok("the conversation", conversation)),
        &["404"],
    );
    let delete_conversation = operation(
        "Deletes a conversation (its session): 409 while a turn runs on it or when it has forks",
        vec![conversation_id()],
        None,
        (
            "200",
            ok(
                "deleted",
                json!({ "type": "object", "required": ["id", "object", "deleted"], "properties": { "id": { "type": "string" }, "object": { "const": "conversation.deleted" }, "deleted": { "const": true } } }),
            ),
        ),
        &["404", "409"],
    );
    let conversation_items = operation(
        "A conversation's items: per turn, the user's message and the response's output items",
        vec![
            conversation_id(),
            query("after", json!({ "type": "string" })),
            query(
                "limit",
                json!({ "type": "integer", "minimum": 1, "maximum": 100 }),
            ),
            query("order", json!({ "enum": ["asc", "desc"] })),
        ],
        None,
        (
            "200",
            ok(
                "a page of items",
                json!({ "type": "object", "required": ["object", "data", "has_more"], "properties": { "object": { "const": "list" }, "data": { "type": "array" }, "has_more": { "type": "boolean" } } }),
            ),
        ),
        &["400", "404"],
    );
    let mut paths = Map::new();
    paths.insert(
        "/v1/conversations".into(),
        json!({ "post": create_conversation }),
    );
    paths.insert(
        "/v1/conversations/{id}".into(),
        json!({ "get": get_conversation, "delete": delete_conversation }),
    );
    paths.insert(
        "/v1/conversations/{id}/items".into(),
        json!({ "get": conversation_items }),
    );
    paths.insert("/v1/responses".into(), json!({ "post": create }));
    paths.insert("/v1/responses/{id}".into(), json!({ "get": retrieve }));
    paths.insert(
        "/v1/responses/{id}/cancel".into(),
        json!({ "post": cancel }),
    );
    paths.insert(
        "/v1/responses/{id}/input_items".into(),
        json!({ "get": items }),
    );
    paths
}
