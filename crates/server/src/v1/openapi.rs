//! The `/v1` part of the server's one OpenAPI document (`GET /openapi.json` lists it when a
//! platform is served), built from the JSON Schemas the platform's own serde types generate
//! (schemars), so it cannot drift from the JSON the routes read and write; its schemas are
//! hoisted and its errors written by the builder of the native part ([`crate::openapi`]).
//!
//! Schema names carry a `V1` prefix (`V1Agent`, `V1Message`, ...) so that they never clash with
//! the server's own (its `Message` is a chat projection, not a platform message). Request
//! bodies are described as the routes read them (unknown fields refused with `422` naming
//! them, defaults optional; the Everruns SDK's fields with the meaning [`super::everruns`]
//! gives them), responses as they are written.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value, json};

use openharness_platform::{
    AgentCapability, AgentPatch, Capability, CapabilityStatus, LlmModel, LlmProvider, ModelPatch,
    NewAgent, NewMessage, NewModel, NewProvider, NewSession, Notification, Page, ProviderPatch,
    Session, SessionMessage, SessionPatch, SetCapabilities,
};

use super::everruns::{AgentView, MessageView, ModelView, SessionView};
use crate::openapi::hoist;
use crate::request::MAX_SAFE;

/// The prefix of every schema name of the platform's part.
const PREFIX: &str = "V1";
/// The largest `limit` of a page.
const MAX_LIMIT: u64 = 100;

/// The `/v1` paths and schemas: every path with its parameters, request and response schemas
/// (`V1Agent`, `V1AgentPage`, ...), the status codes each route answers (`201` on create,
/// `204` on delete, `404`, `409`, `422`, `503` where they happen; every failure the one
/// `Error` schema) and `text/event-stream` for a session's events. `capabilities` are the
/// platform's (built-in and MCP), whose available ids are what an agent can be given.
pub(crate) fn document(capabilities: &[openharness_platform::Capability]) -> Value {
    let mut schemas = Map::new();
    // Responses, as the routes write them.
    for (name, schema) in [
        ("Agent", response::<AgentView>()),
        ("AgentPage", response::<Page<AgentView>>()),
        ("EverrunsSession", response::<SessionView>()),
        ("EverrunsSessionPage", response::<Page<SessionView>>()),
        ("EverrunsMessage", response::<MessageView>()),
        ("EverrunsMessagePage", response::<Page<MessageView>>()),
        ("ModelWithProvider", response::<ModelView>()),
        ("ModelWithProviderPage", response::<Page<ModelView>>()),
        ("Session", response::<Session>()),
        ("SessionPage", response::<Page<Session>>()),
        ("Message", response::<SessionMessage>()),
        ("MessagePage", response::<Page<SessionMessage>>()),
        ("Notification", response::<Notification>()),
        ("NotificationPage", response::<Page<Notification>>()),
        ("Capability", response::<Capability>()),
        ("CapabilityPage", response::<Page<Capability>>()),
        ("AgentCapabilityPage", response::<Page<AgentCapability>>()),
        ("LlmProvider", response::<LlmProvider>()),
        ("LlmProviderPage", response::<Page<LlmProvider>>()),
        ("LlmModel", response::<LlmModel>()),
        ("LlmModelPage", response::<Page<LlmModel>>()),
    ] {
        add(&mut schemas, name, schema);
    }
    // Request bodies, as the routes read them.
    for (name, schema) in [
        ("NewAgent", request::<NewAgent>()),
        ("AgentPatch", request::<AgentPatch>()),
        ("SetCapabilities", request::<SetCapabilities>()),
        ("NewSession", request::<NewSession>()),
        ("SessionPatch", request::<SessionPatch>()),
        ("NewMessage", request::<NewMessage>()),
        ("NewProvider", request::<NewProvider>()),
        ("ProviderPatch", request::<ProviderPatch>()),
        ("NewModel", request::<NewModel>()),
        ("NewProviderModel", request::<NewModel>()),
        ("ModelPatch", request::<ModelPatch>()),
    ] {
        add(&mut schemas, name, schema);
    }
    constrain(&mut schemas, capabilities);
    json!({
        "paths": paths(),
        "components": { "schemas": schemas },
    })
}

/// Text the routes trim and then require: something besides white space, at most `max`
/// characters.
fn text(max: u64) -> Value {
    json!({ "pattern": "\\S", "maxLength": max })
}

/// A list of labels (`tags`, `features`): at most 100, each text of at most 100 characters.
fn labels() -> Value {
    json!({ "maxItems": 100, "items": { "type": "string", "pattern": "\\S", "maxLength": 100 } })
}

/// `base_url`: blank for none, else `http://` or `https://` (after trimming), at most 2000
/// characters.
fn url() -> Value {
    json!({ "pattern": "^(\\s*|\\s*https?://[\\s\\S]*)$", "maxLength": 2000 })
}

/// Merges `constraint` into the property `field` of the schema `V1<name>`, if it has one.
fn limit(schemas: &mut Map<String, Value>, name: &str, field: &str, constraint: &Value) {
    let Some(Value::Object(property)) = schemas
        .get_mut(&format!("{PREFIX}{name}"))
        .and_then(|schema| schema.pointer_mut(&format!("/properties/{field}")))
    else {
        return;
    };
    if let Value::Object(constraint) = constraint {
        for (key, value) in constraint {
            property.insert(key.clone(), value.clone());
        }
    }
}

/// What the routes check beyond the types (non-blank names, lengths, URLs, the capabilities
/// an agent can have, what a posted message may hold), written into the request schemas, so
/// that input the document calls valid is accepted and input it calls invalid is refused.
fn constrain(schemas: &mut Map<String, Value>, capabilities: &[openharness_platform::Capability]) {
    for name in ["NewAgent", "AgentPatch"] {
        limit(schemas, name, "name", &text(200));
        limit(
            schemas,
            name,
            "description",
            &json!({ "maxLength": 10_000 }),
        );
        limit(
            schemas,
            name,
            "system_prompt",
            &json!({ "maxLength": 100_000 }),
        );
        limit(schemas, name, "tags", &labels());
    }
    for name in ["NewSession", "SessionPatch"] {
        limit(schemas, name, "title", &json!({ "maxLength": 500 }));
        limit(schemas, name, "tags", &labels());
    }
    for name in ["NewProvider", "ProviderPatch"] {
        limit(schemas, name, "name", &text(200));
        limit(schemas, name, "base_url", &url());
        limit(schemas, name, "api_key", &text(4096));
    }
    for name in ["NewModel", "NewProviderModel", "ModelPatch"] {
        limit(schemas, name, "model_id", &text(200));
        limit(schemas, name, "display_name", &text(200));
        limit(schemas, name, "features", &labels());
        limit(schemas, name, "context_window", &json!({ "minimum": 1 }));
    }
    // `POST /v1/llm-models` needs the provider; under `/v1/llm-providers/{id}/models` the
    // path names it.
    if let Some(schema) = schemas.get_mut(&format!("{PREFIX}NewModel")) {
        schema["required"] = json!(["provider_id", "model_id"]);
        schema["properties"]["provider_id"] = json!({ "type": "string", "format": "uuid" });
    }
    if let Some(Value::Object(properties)) = schemas
        .get_mut(&format!("{PREFIX}NewProviderModel"))
        .and_then(|schema| schema.get_mut("properties"))
    {
        properties.remove("provider_id");
    }
    let available: Vec<String> = capabilities
        .iter()
        .filter(|c| c.status == CapabilityStatus::Available)
        .map(|c| c.id.clone())
        .collect();
    limit(
        schemas,
        "SetCapabilities",
        "capabilities",
        &json!({ "uniqueItems": true, "items": { "type": "string", "enum": available.clone() } }),
    );
    // Only user messages of text parts, with some text, can be posted: as `content` (with an
    // optional `role`) or wrapped as `message: {role, content}`, not both.
    let text_parts = json!({
        "description": "Text parts, at least one with text besides white space.",
        "type": "array",
        "items": {
            "type": "object",
            "required": ["type", "text"],
            "properties": { "type": { "const": "text" }, "text": { "type": "string" } },
        },
        "contains": { "type": "object", "required": ["text"], "properties": { "text": { "type": "string", "pattern": "\\S" } } },
    });
    if let Some(schema) = schemas.get_mut(&format!("{PREFIX}NewMessage")) {
        if let Some(Value::Object(properties)) = schema.get_mut("properties") {
            properties.insert(
                "role".to_owned(),
                json!({ "description": "`user` (the default): the only role that can be posted", "enum": ["user", null] }),
            );
            properties.insert("content".to_owned(), text_parts.clone());
            properties.insert(
                "message".to_owned(),
                json!({
                    "description": "The message wrapped, as the Everruns SDK sends it (instead of `role` and `content`).",
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["role", "content"],
                    "properties": { "role": { "const": "user" }, "content": text_parts },
                }),
            );
        }
        if let Some(map) = schema.as_object_mut() {
            map.remove("required");
            map.insert(
                "oneOf".to_owned(),
                json!([
                    { "required": ["content"], "not": { "required": ["message"] } },
                    {
                        "required": ["message"],
                        "not": { "anyOf": [{ "required": ["content"] }, { "required": ["role"] }] },
                    },
                ]),
            );
        }
    }
    // What the Everruns SDK sends on every create: empty lists and the one harness.
    let only_empty = json!({ "maxItems": 0 });
    let only_harness = json!({ "enum": [openharness_platform::everruns::HARNESS, null] });
    for name in ["NewAgent", "NewSession"] {
        limit(schemas, name, "tools", &only_empty);
        limit(schemas, name, "initial_files", &only_empty);
        limit(schemas, name, "harness_id", &only_harness);
        limit(schemas, name, "harness_name", &only_harness);
    }
    limit(schemas, "NewSession", "capabilities", &only_empty);
    // Under `/v1/agents/{id}/sessions` the path names the agent (`agent_id` or `agent_name`
    // may repeat it, which this schema leaves out); `POST /v1/sessions` needs one of them.
    if let Some(top) = schemas.get(&format!("{PREFIX}NewSession")).cloned() {
        let mut nested = top.clone();
        if let Some(Value::Object(properties)) = nested.get_mut("properties") {
            properties.remove("agent_id");
            properties.remove("agent_name");
        }
        nested["title"] = json!(format!("{PREFIX}NewAgentSession"));
        schemas.insert(format!("{PREFIX}NewAgentSession"), nested);
        if let Some(schema) = schemas.get_mut(&format!("{PREFIX}NewSession")) {
            schema["oneOf"] = json!([{ "required": ["agent_id"] }, { "required": ["agent_name"] }]);
            schema["properties"]["agent_id"] = json!({
                "description": "The agent: a UUID, or `agent_` and 32 hex digits.",
                "type": ["string", "null"],
                "pattern": "^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|agent_[0-9a-fA-F]{32})$",
            });
            schema["properties"]["agent_name"] = json!({
                "description": "The agent by name: its one active agent of that name.",
                "type": ["string", "null"],
            });
        }
    }
    limit(
        schemas,
        "NewAgent",
        "capabilities",
        &json!({ "uniqueItems": true }),
    );
    if let Some(Value::Object(properties)) = schemas
        .get_mut(&format!("{PREFIX}NewAgent"))
        .and_then(|schema| schema.get_mut("properties"))
    {
        properties.insert(
            "capabilities".to_owned(),
            json!({
                "description": "Capabilities to give the agent, in order, each available and listed once, without `config`.",
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["ref"],
                    "properties": {
                        "ref": { "type": "string", "enum": available },
                        "config": { "type": "null" },
                    },
                },
            }),
        );
        properties.insert(
            "id".to_owned(),
            json!({
                "description": "The agent to create or update (upsert): a UUID, or `agent_` and 32 hex digits.",
                "type": ["string", "null"],
                "pattern": "^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|agent_[0-9a-fA-F]{32})$",
            }),
        );
    }
    limit(
        schemas,
        "NewMessage",
        "metadata",
        &json!({ "type": ["object", "null"] }),
    );
    limit(schemas, "NewMessage", "tags", &labels());
}

fn response<T: JsonSchema>() -> Schema {
    SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>()
}

fn request<T: JsonSchema>() -> Schema {
    SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>()
}

/// Adds `schema` as `V1<name>`, its `$defs` hoisted beside it (prefixed too).
fn add(into: &mut Map<String, Value>, name: &str, schema: Schema) {
    let mut schema = schema.to_value();
    hoist(&mut schema, into, PREFIX);
    if let Some(map) = schema.as_object_mut() {
        map.remove("$schema");
        map.insert("title".to_owned(), json!(format!("{PREFIX}{name}")));
    }
    into.insert(format!("{PREFIX}{name}"), schema);
}

fn schema(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{PREFIX}{name}") })
}

fn answer(description: &str, body: Value) -> Value {
    crate::openapi::ok(description, body)
}

fn path_id(name: &str, description: &str) -> Value {
    json!({ "name": name, "in": "path", "required": true, "description": description, "schema": { "type": "string", "format": "uuid" } })
}

fn query(name: &str, description: &str, schema: Value) -> Value {
    json!({ "name": name, "in": "query", "required": false, "description": description, "schema": schema })
}

/// `?offset=&limit=` of every list.
fn paging() -> Vec<Value> {
    vec![
        query(
            "offset",
            "how many items to skip",
            json!({ "type": "integer", "minimum": 0, "maximum": MAX_SAFE }),
        ),
        query(
            "limit",
            "the most items the page holds (default 20)",
            json!({ "type": "integer", "minimum": 1, "maximum": MAX_LIMIT }),
        ),
    ]
}

/// One operation of the server's one builder, its body named by schema.
fn operation(
    summary: &str,
    parameters: Vec<Value>,
    body: Option<&str>,
    success: (&str, Value),
    failures: &[&str],
) -> Value {
    crate::openapi::operation(summary, parameters, body.map(schema), success, failures)
}

fn ok(description: &str, name: &str) -> (&'static str, Value) {
    ("200", answer(description, schema(name)))
}

fn created(description: &str, name: &str) -> (&'static str, Value) {
    ("201", answer(description, schema(name)))
}

fn deleted() -> (&'static str, Value) {
    ("204", json!({ "description": "deleted" }))
}

fn with(mut parameters: Vec<Value>, more: Vec<Value>) -> Vec<Value> {
    parameters.extend(more);
    parameters
}

fn paths() -> Value {
    let agent = || path_id("id", "the agent's id");
    let session = || {
        vec![
            path_id("id", "the agent's id"),
            path_id("session", "the session's id"),
        ]
    };
    let provider = || path_id("id", "the LLM provider's id");
    let model = || path_id("id", "the LLM model's id");
    let uuid = json!({ "type": "string", "format": "uuid" });
    let cursors = || {
        vec![
            query(
                "after",
                "only notifications after this sequence",
                json!({ "type": "integer", "minimum": 0, "maximum": MAX_SAFE }),
            ),
            query(
                "after_sequence",
                "the same as `after` (the Everruns SDK's name; with both, after the larger)",
                json!({ "type": "integer", "minimum": 0, "maximum": MAX_SAFE }),
            ),
            query(
                "since_id",
                "only notifications after the one with this id (`404` when the session has none; with `after`, after the later of the two)",
                json!({ "type": "string", "format": "uuid" }),
            ),
            json!({ "name": "types", "in": "query", "required": false, "style": "form", "explode": true,
                "description": "only notifications of these types (repeat it, or separate types with commas)",
                "schema": { "type": "array", "items": { "type": "string" } } }),
            json!({ "name": "exclude", "in": "query", "required": false, "style": "form", "explode": true,
                "description": "no notifications of these types (repeat it, or separate types with commas)",
                "schema": { "type": "array", "items": { "type": "string" } } }),
        ]
    };
    let last_event_id = || {
        json!({
            "name": "Last-Event-ID", "in": "header", "required": false,
            "description": "with an event stream: resume after this frame id: a sequence, or `sequence.0` for the first of an event's two notifications (wins over `since_id` and `after`)",
            "schema": { "type": "string", "pattern": "^[0-9]{1,15}(\\.[0-9]{1,9})?$" },
        })
    };
    let sse_answer = || {
        json!({ "description": "an event stream of notifications (`event:` the type, `id:` the frame id, `data:` the notification as JSON) that goes on live", "content": {
            "text/event-stream": { "schema": { "type": "string" } },
        }, "headers": { "x-accel-buffering": {
            "description": "`no`, so proxies do not buffer it",
            "schema": { "type": "string" },
        } } })
    };
    let events_op = |parameters: Vec<Value>| {
        let mut parameters = with(parameters, paging());
        parameters.extend(cursors());
        parameters.push(last_event_id());
        let mut op = operation(
            "A session's notifications: a JSON page, or with `Accept: text/event-stream` an SSE stream (`event:` the type, `id:` the sequence, or `sequence.0` for the first of an event's two notifications) that goes on live; a page never ends between two notifications of one event",
            parameters,
            None,
            (
                "200",
                json!({ "description": "a page of notifications, or an event stream", "content": {
                    "application/json": { "schema": schema("NotificationPage") },
                    "text/event-stream": { "schema": { "type": "string" } },
                } }),
            ),
            &["400", "404"],
        );
        op["responses"]["200"]["headers"] = json!({ "x-accel-buffering": {
            "description": "`no` on an event stream, so proxies do not buffer it",
            "schema": { "type": "string" },
        } });
        op
    };
    let sse_op = |parameters: Vec<Value>| {
        let mut parameters = parameters;
        parameters.extend(cursors());
        parameters.push(last_event_id());
        operation(
            "A session's notifications as an SSE stream that goes on live (what the Everruns SDK follows; it reconnects with `since_id`)",
            parameters,
            None,
            ("200", sse_answer()),
            &["400", "404"],
        )
    };
    let events = events_op(session());
    let top = || path_id("id", "the session's id");
    let search = || {
        query(
            "search",
            "a case-insensitive search of names and descriptions",
            json!({ "type": "string" }),
        )
    };
    let mut create_agent = operation(
        "Create an agent (`201`), or update one (`200`, an upsert): the agent `id` names, else the one active agent of the same `name`",
        vec![],
        Some("NewAgent"),
        created("the agent", "Agent"),
        &["409"],
    );
    create_agent["responses"]["200"] = answer("the agent, updated", schema("Agent"));
    json!({
        "/v1/agents": {
            "get": operation("Agents, oldest first", with(paging(), vec![query("status", "only agents with this status", json!({ "enum": ["active", "archived"] })), search()]), None, ok("a page of agents", "AgentPage"), &["400"]),
            "post": create_agent,
        },
        "/v1/agents/{id}": {
            "get": operation("One agent", vec![agent()], None, ok("the agent", "Agent"), &["404"]),
            "patch": operation("Change an agent (`409 agent_archived` when archived)", vec![agent()], Some("AgentPatch"), ok("the agent", "Agent"), &["404", "409"]),
            "delete": operation("Archive an agent (what Everruns clients mean by delete); with `?permanent=true`, delete it for good (`409 agent_has_sessions` while it has sessions)", vec![agent(), query("permanent", "delete the agent for good instead of archiving it", json!({ "type": "boolean" }))], None, deleted(), &["400", "404", "409"]),
        },
        "/v1/agents/{id}/archive": {
            "post": operation("Archive an agent", vec![agent()], None, ok("the agent", "Agent"), &["404", "409"]),
        },
        "/v1/agents/{id}/unarchive": {
            "post": operation("Make an archived agent active again", vec![agent()], None, ok("the agent", "Agent"), &["404", "409"]),
        },
        "/v1/agents/{id}/capabilities": {
            "get": operation("An agent's capabilities, by position", with(vec![agent()], paging()), None, ok("a page of the agent's capabilities", "AgentCapabilityPage"), &["400", "404"]),
            "put": operation("Set an agent's capabilities, in order", vec![agent()], Some("SetCapabilities"), ok("the agent's capabilities", "AgentCapabilityPage"), &["404", "409"]),
        },
        "/v1/agents/{id}/sessions": {
            "get": operation("An agent's sessions, oldest first", with(vec![agent()], paging()), None, ok("a page of sessions", "SessionPage"), &["400", "404"]),
            "post": operation("Start a session (`pending`; `409 agent_archived` for an archived agent)", vec![agent()], Some("NewAgentSession"), created("the session", "Session"), &["404", "409"]),
        },
        "/v1/agents/{id}/sessions/{session}": {
            "get": operation("One session", session(), None, ok("the session", "Session"), &["404"]),
            "patch": operation("Change a session's title, tags or model", session(), Some("SessionPatch"), ok("the session", "Session"), &["404", "409"]),
            "delete": operation("Delete a session and its log (`409 session_busy` during a turn)", session(), None, deleted(), &["404", "409"]),
        },
        "/v1/agents/{id}/sessions/{session}/messages": {
            "get": operation("A session's messages, by sequence", with(session(), paging()), None, ok("a page of messages", "MessagePage"), &["400", "404"]),
            "post": operation("Post a user message: recorded, answered `201`, and the turn runs on; while a turn runs, the busy policy (`x-openharness-on-busy`, else the server's) says: `409 session_busy` under `reject`, else `201` once recorded as `input:queued` (`503 no_provider` when no model is configured)", with(session(), vec![crate::openapi::on_busy_header()]), Some("NewMessage"), created("the message as recorded", "Message"), &["404", "409", "503"]),
        },
        "/v1/agents/{id}/sessions/{session}/events": { "get": events },
        "/v1/agents/{id}/sessions/{session}/sse": { "get": sse_op(session()) },
        "/v1/agents/{id}/sessions/{session}/cancel": {
            "post": operation("Cancel the session's running turn (nothing when none runs here): its agents end interrupted and the turn ends `turn.failed` with `error_code: cancelled`", session(), None, ok("the session", "Session"), &["404"]),
        },
        "/v1/sessions": {
            "get": operation("Every session (the Everruns shape), oldest first", with(paging(), vec![query("agent_id", "only this agent's sessions", json!({ "type": "string" })), query("search", "a case-insensitive search of titles", json!({ "type": "string" }))]), None, ok("a page of sessions", "EverrunsSessionPage"), &["400", "404"]),
            "post": operation("Start a session with the agent `agent_id` or `agent_name` names", vec![], Some("NewSession"), created("the session", "EverrunsSession"), &["404", "409"]),
        },
        "/v1/sessions/{id}": {
            "get": operation("One session (the Everruns shape)", vec![top()], None, ok("the session", "EverrunsSession"), &["404"]),
            "delete": operation("Delete a session and its log (`409 session_busy` during a turn)", vec![top()], None, deleted(), &["404", "409"]),
        },
        "/v1/sessions/{id}/cancel": {
            "post": operation("Cancel the session's running turn (nothing when none runs here)", vec![top()], None, ok("the session", "EverrunsSession"), &["404"]),
        },
        "/v1/sessions/{id}/messages": {
            "get": operation("A session's messages (the Everruns shape: the agent's role is `agent`)", with(vec![top()], paging()), None, ok("a page of messages", "EverrunsMessagePage"), &["400", "404"]),
            "post": operation("Post a user message (`{message: {role, content}}` or `{content}`): recorded, answered `201`, and the turn runs on", vec![top()], Some("NewMessage"), created("the message as recorded", "EverrunsMessage"), &["404", "409", "503"]),
        },
        "/v1/sessions/{id}/events": { "get": events_op(vec![top()]) },
        "/v1/sessions/{id}/sse": { "get": sse_op(vec![top()]) },
        "/v1/models": {
            "get": operation("LLM models with their provider (the Everruns SDK's `ModelWithProvider`)", with(paging(), vec![query("provider_id", "only this provider's models", json!({ "type": "string", "format": "uuid" }))]), None, ok("a page of models", "ModelWithProviderPage"), &["400"]),
        },
        "/v1/models/{id}": {
            "get": operation("One LLM model with its provider", vec![model()], None, ok("the model", "ModelWithProvider"), &["404"]),
        },
        "/v1/capabilities": {
            "get": operation("The capability registry", with(paging(), vec![search()]), None, ok("a page of capabilities", "CapabilityPage"), &["400"]),
        },
        "/v1/capabilities/{id}": {
            "get": operation("One capability", vec![json!({ "name": "id", "in": "path", "required": true, "description": "the capability's id, such as `current_time`", "schema": { "type": "string" } })], None, ok("the capability", "Capability"), &["404"]),
        },
        "/v1/llm-providers": {
            "get": operation("LLM providers, oldest first", paging(), None, ok("a page of providers", "LlmProviderPage"), &["400"]),
            "post": operation("Create an LLM provider (its `api_key` is sealed, never returned)", vec![], Some("NewProvider"), created("the provider", "LlmProvider"), &["409", "503"]),
        },
        "/v1/llm-providers/{id}": {
            "get": operation("One LLM provider", vec![provider()], None, ok("the provider", "LlmProvider"), &["404"]),
            "patch": operation("Change an LLM provider (a new `api_key` is sealed afresh; `null` removes it)", vec![provider()], Some("ProviderPatch"), ok("the provider", "LlmProvider"), &["404", "409", "503"]),
            "delete": operation("Delete an LLM provider (`409 provider_in_use` while it has models)", vec![provider()], None, deleted(), &["404", "409"]),
        },
        "/v1/llm-providers/{id}/models": {
            "get": operation("A provider's models", with(vec![provider()], paging()), None, ok("a page of models", "LlmModelPage"), &["400", "404"]),
            "post": operation("Add a model to a provider", vec![provider()], Some("NewProviderModel"), created("the model", "LlmModel"), &["404", "409"]),
        },
        "/v1/llm-models": {
            "get": operation("LLM models, oldest first", with(paging(), vec![query("provider_id", "only this provider's models", uuid)]), None, ok("a page of models", "LlmModelPage"), &["400", "404"]),
            "post": operation("Create an LLM model (`409 duplicate_model` for a repeated `model_id` at one provider)", vec![], Some("NewModel"), created("the model", "LlmModel"), &["409"]),
        },
        "/v1/llm-models/{id}": {
            "get": operation("One LLM model", vec![model()], None, ok("the model", "LlmModel"), &["404"]),
            "patch": operation("Change an LLM model", vec![model()], Some("ModelPatch"), ok("the model", "LlmModel"), &["404", "409"]),
            "delete": operation("Delete an LLM model (`409 model_in_use` while an agent's default)", vec![model()], None, deleted(), &["404", "409"]),
        },
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn every_reference_resolves_in_the_one_document_and_every_schema_is_prefixed() {
        let part = document(&openharness_platform::capabilities());
        let own = part["components"]["schemas"].as_object().unwrap();
        assert!(own.keys().all(|name| name.starts_with(PREFIX)), "{own:?}");
        let doc = crate::openapi::merged(crate::openapi::document(), &[part]);
        assert!(openharness_testkit::openapi::assert_references_resolve(&doc) > 40);
        // Every failure of every family is the one error shape.
        let failure = &doc["paths"]["/v1/agents"]["post"]["responses"]["409"];
        let native = &doc["paths"]["/sessions/{id}"]["delete"]["responses"]["409"];
        assert_eq!(failure["content"], native["content"]);
    }

    #[test]
    fn requests_refuse_unknown_fields_and_pages_have_the_envelope() {
        let doc = document(&openharness_platform::capabilities());
        let schemas = &doc["components"]["schemas"];
        assert_eq!(schemas["V1NewAgent"]["additionalProperties"], false);
        assert_eq!(
            schemas["V1NewAgent"]["required"],
            json!(["name", "system_prompt"])
        );
        let page = &schemas["V1AgentPage"];
        assert_eq!(
            page["properties"]["data"]["items"]["$ref"],
            "#/components/schemas/V1Agent"
        );
        for field in ["data", "total", "offset", "limit"] {
            assert!(page["required"].as_array().unwrap().contains(&json!(field)));
        }
        // The key is write-only: it is read, never written.
        assert!(schemas["V1NewProvider"]["properties"]["api_key"].is_object());
        assert!(
            schemas["V1LlmProvider"]["properties"]
                .get("api_key")
                .is_none()
        );
        assert_eq!(
            schemas["V1LlmModel"]["properties"]["context_window"]["maximum"],
            u32::MAX
        );
    }
}
