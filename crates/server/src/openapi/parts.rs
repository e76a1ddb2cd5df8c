//! The pieces the OpenAPI document is built of — operations, answers, parameters — apart from
//! the document itself, so that each route family describes its own paths with them (the
//! protocols' `openapi.rs` files) and the document gathers those paths without an import
//! circle.

use serde_json::{Map, Value, json};

/// A reference to the component schema `name`.
pub(crate) fn schema(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// A JSON body of `schema`.
pub(crate) fn json_body(schema: Value) -> Value {
    json!({ "content": { "application/json": { "schema": schema } } })
}

/// A described JSON answer of `body`.
pub(crate) fn ok(description: &str, body: Value) -> Value {
    let mut response = json_body(body);
    response["description"] = json!(description);
    response
}

/// The answer of a failure with status `code`: the `Error` schema, described.
pub(crate) fn failure(code: &str) -> Value {
    let description = match code {
        "400" => "the request cannot be read (bad JSON, a bad query, header or id)",
        "401" => {
            "an API key is required (`Authorization: Bearer <key>`, the bare key, or `x-api-key`) and none, or a wrong one, was sent"
        }
        "404" => "no such session, workflow, resource or route",
        "405" => "the path takes other methods",
        "409" => "the current state forbids it (the code says which: `session_busy`, ...)",
        "413" => "the body is larger than the limit",
        "415" => "the body is not `application/json`",
        "422" => "well-formed JSON that is not valid input",
        "429" => "too many event streams of this session are open",
        "503" => "this server's configuration cannot serve it (no model provider, no master key)",
        _ => "an error",
    };
    ok(description, schema("Error"))
}

/// `op` as a route that needs no key: no `401`, no security requirement.
pub(crate) fn public(mut op: Value) -> Value {
    if let Some(map) = op.as_object_mut() {
        map.remove("security");
    }
    if let Some(responses) = op["responses"].as_object_mut() {
        responses.remove("401");
    }
    op
}

/// One operation: its summary, parameters, body, success and failure statuses. Every
/// operation may answer `401` (when keys are required); one with a body also `400`, `413`,
/// `415` and `422`, as the one request parser answers them.
pub(crate) fn operation(
    summary: &str,
    parameters: Vec<Value>,
    body: Option<Value>,
    success: (&str, Value),
    failures: &[&str],
) -> Value {
    let mut codes = vec!["401"];
    codes.extend_from_slice(failures);
    if body.is_some() {
        codes.extend(["400", "413", "415", "422"]);
    }
    let mut responses: Map<String, Value> = codes
        .into_iter()
        .map(|code| (code.to_owned(), failure(code)))
        .collect();
    responses.insert(success.0.to_owned(), success.1);
    let mut op = json!({
        "summary": summary,
        "parameters": parameters,
        "responses": responses,
        "security": [{ "apiKey": [] }, {}],
    });
    if let Some(body) = body {
        let mut request = json_body(body);
        request["required"] = json!(true);
        op["requestBody"] = request;
    }
    op
}

/// A session id as clients should write one (the server generates UUIDs; it accepts any
/// printable id up to 200 characters).
pub(crate) fn session_id() -> Value {
    json!({ "name": "id", "in": "path", "required": true, "schema": { "type": "string", "pattern": "^[A-Za-z0-9._~-]{1,200}$" } })
}

/// An optional query parameter.
pub(crate) fn query(name: &str, schema: Value) -> Value {
    json!({ "name": name, "in": "query", "required": false, "schema": schema })
}

/// A closed object with `required` fields.
pub(crate) fn object(required: &[&str], properties: Value) -> Value {
    json!({ "type": "object", "required": required, "properties": properties, "additionalProperties": false })
}

/// The chat's opt-in to AI SDK 6+ tool approvals.
pub(crate) fn approvals_header() -> Value {
    json!({
        "name": "x-openharness-approvals", "in": "header", "required": false,
        "description": "`tool`: approvals as AI SDK 6+ tool approvals (tool-approval-request); `data` (the default): as data-input-requested parts",
        "schema": { "enum": ["data", "tool"] },
    })
}

/// The header with which a request says what its input gets while a turn runs.
pub(crate) fn on_busy_header() -> Value {
    json!({
        "name": crate::request::ON_BUSY_HEADER, "in": "header", "required": false,
        "description": "what this input gets while a turn runs on the session: reject (409), enqueue, interrupt, rollback or steer (recorded at once as input:queued); absent, the server's default",
        "schema": schema("BusyPolicy"),
    })
}

/// A described event-stream answer.
pub(crate) fn sse(description: &str) -> Value {
    json!({ "description": description, "content": { "text/event-stream": { "schema": { "type": "string" } } } })
}
