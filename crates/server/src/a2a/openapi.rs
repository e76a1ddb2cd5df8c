//! The A2A routes in `GET /openapi.json`. The JSON-RPC request, the card and the task are
//! described loosely (the specification's `a2a.proto` is their schema; see `externalDocs`):
//! JSON-RPC answers every method's outcome, errors included, as `200`.

use serde_json::{Map, Value, json};

use crate::openapi::parts::{ok, operation, public, sse};

/// Where the shapes are specified.
fn spec() -> Value {
    json!({ "description": "A2A (Agent2Agent) specification v1.0.1: docs/specification.md and specification/a2a.proto", "url": "https://github.com/a2aproject/A2A/tree/v1.0.1" })
}

/// A served workflow or `/v1` agent in the path.
fn target() -> Value {
    json!({ "name": "target", "in": "path", "required": true, "description": "a served workflow, or a `/v1` agent (`agent:<name-or-id>`)", "schema": { "type": "string", "minLength": 1 } })
}

/// An agent card (loosely: its required fields).
fn card() -> Value {
    json!({ "type": "object", "required": ["name", "description", "supportedInterfaces", "version", "capabilities", "defaultInputModes", "defaultOutputModes", "skills"], "properties": {
        "name": { "type": "string" },
        "supportedInterfaces": { "type": "array", "minItems": 1 },
        "skills": { "type": "array", "minItems": 1 },
    } })
}

/// `/.well-known/agent-card.json`, `/a2a/{target}/.well-known/agent-card.json` and
/// `/a2a/{target}`.
pub(crate) fn paths() -> Map<String, Value> {
    let mut root = public(operation(
        "A2A: the agent card of the default workflow (serve --chat-workflow, or the only one)",
        vec![],
        None,
        ("200", ok("the card", card())),
        &["404"],
    ));
    root["externalDocs"] = spec();
    let mut one = public(operation(
        "A2A: the workflow's agent card; its JSON-RPC endpoint is /a2a/{target}",
        vec![target()],
        None,
        ("200", ok("the card", card())),
        &["404"],
    ));
    one["externalDocs"] = spec();
    let last_event_id = json!({ "name": "Last-Event-ID", "in": "header", "required": false, "description": "SubscribeToTask: the id of the last frame the client has (`<seq>.<n>`); the stream resumes right after it", "schema": { "type": "string" } });
    let mut rpc = operation(
        "A2A v1.0 JSON-RPC (header `A2A-Version: 1.0`): SendMessage, SendStreamingMessage (SSE), GetTask, CancelTask, SubscribeToTask (SSE), ListTasks; errors are JSON-RPC errors with the specification's codes",
        vec![
            json!({ "name": "A2A-Version", "in": "header", "required": false, "description": "the protocol version: 1.0 (absent means 0.3, answered -32009)", "schema": { "type": "string" } }),
            crate::openapi::parts::on_busy_header(),
            last_event_id,
            target(),
        ],
        Some(
            json!({ "type": "object", "required": ["jsonrpc", "method"], "properties": {
            "jsonrpc": { "const": "2.0" },
            "id": { "oneOf": [{ "type": "string" }, { "type": "integer" }, { "type": "null" }] },
            "method": { "type": "string" },
            "params": { "type": "object" },
        } }),
        ),
        ("200", {
            let mut answer = ok(
                "the JSON-RPC answer (`result` or `error`); for the streaming methods, SSE frames each holding one",
                json!({ "type": "object", "required": ["jsonrpc"], "properties": {
                    "jsonrpc": { "const": "2.0" }, "result": {}, "error": { "type": "object" },
                } }),
            );
            answer["content"]["text/event-stream"] =
                sse("the stream")["content"]["text/event-stream"].clone();
            answer
        }),
        &["404", "429"],
    );
    rpc["externalDocs"] = spec();
    let mut paths = Map::new();
    paths.insert(
        "/.well-known/agent-card.json".into(),
        json!({ "get": root }),
    );
    paths.insert(
        "/a2a/{target}/.well-known/agent-card.json".into(),
        json!({ "get": one }),
    );
    paths.insert("/a2a/{target}".into(), json!({ "post": rpc }));
    paths
}
