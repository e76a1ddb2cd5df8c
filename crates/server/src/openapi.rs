//! `GET /openapi.json`: the one OpenAPI 3.1 document of every route this server serves, built
//! from the same JSON Schemas the wire types generate (`openharness_host::wire_schemas`, and
//! the platform's types for `/v1`), so it cannot drift from the JSON the server writes. This
//! module is its one builder: each schema's `$defs` are hoisted into `components.schemas`
//! ([`hoist`]), every operation is written by [`operation`] (`401` where keys are required;
//! `400`, `413`, `415` and `422` for a body, as the one request parser answers them), every
//! failure refers to the one `Error` schema ([`failure`]). The `/v1` part
//! (`crate::v1::openapi`, with the `platform` feature, built with these helpers) and the
//! documents of routes merged beside the server's
//! ([`ServerOptions::openapi`](crate::ServerOptions::openapi)) are added to it ([`merged`])
//! where the router is built.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::request::MAX_SAFE;

pub(crate) mod parts;

pub(crate) use parts::{
    approvals_header, failure, object, ok, on_busy_header, operation, public, query, schema,
    session_id, sse,
};

/// A session's feedback: `GET /sessions/{id}/feedback`, `POST /sessions/{id}/annotations`.
fn feedback_paths() -> Map<String, Value> {
    let paths = json!({
        "/sessions/{id}/feedback": { "get": operation("What was said of the session: people's annotations and online scores of its turns, oldest first", vec![session_id()], None, ("200", ok("its feedback", schema("Feedback"))), &["400", "401", "404"]) },
        "/sessions/{id}/annotations": { "post": operation(
            "A person's annotation of the session, one of its turns (by the position it ended at) or an experiment's run: a thumb, labels, a note (at least one)",
            vec![session_id()],
            Some(annotation_body()),
            ("201", ok("the annotation as recorded", schema("Annotation"))),
            &["400", "401", "404", "413", "415", "422"],
        ) },
    });
    match paths {
        Value::Object(paths) => paths,
        _ => Map::new(),
    }
}

/// The body of `POST /sessions/{id}/annotations`.
fn annotation_body() -> Value {
    json!({
        "type": "object",
        "required": ["by"],
        "additionalProperties": false,
        // An annotation says something: a thumb, a label or a note.
        "anyOf": [
            { "required": ["thumbs"] },
            { "required": ["labels"], "properties": { "labels": { "minItems": 1 } } },
            { "required": ["note"], "properties": { "note": { "pattern": "\\S" } } },
        ],
        "properties": {
            "by": { "type": "string", "minLength": 1, "maxLength": 200, "pattern": "\\S", "description": "who annotates (trimmed)" },
            "thumbs": { "enum": ["up", "down"] },
            "labels": { "type": "array", "maxItems": 32, "items": { "type": "string", "minLength": 1, "maxLength": 64, "pattern": "\\S" }, "description": "each trimmed" },
            "note": { "type": "string", "maxLength": 10000, "description": "one of only blanks is no note" },
            "turn": { "type": "integer", "minimum": 1, "maximum": MAX_SAFE, "description": "the position where the annotated turn ended" },
            "run": { "type": "object", "required": ["experiment", "case", "variant", "repeat"], "additionalProperties": false, "properties": {
                "experiment": { "type": "string" }, "case": { "type": "string" }, "variant": { "type": "string" }, "repeat": { "type": "integer", "minimum": 0, "maximum": 4294967295u64 },
            } },
        },
    })
}

/// The document.
pub fn document() -> Value {
    let mut schemas = Map::new();
    for wire in openharness_host::wire_schemas() {
        let mut schema = wire.schema.to_value();
        hoist(&mut schema, &mut schemas, "");
        schemas.insert(wire.name.to_owned(), schema);
    }
    schemas.insert(
        "Error".to_owned(),
        json!({
            "type": "object",
            "required": ["error"],
            "description": "The error shape of every failed request, on every route.",
            "properties": { "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": { "type": "string", "description": "A stable code, such as `not_found` or `session_busy`." },
                    "message": { "type": "string", "description": "What went wrong, for people." },
                },
            } },
        }),
    );
    schemas.insert(
        "Accepted".to_owned(),
        json!({
            "type": "object",
            "required": ["session", "status"],
            "properties": {
                "session": { "type": "string" },
                "status": { "const": "running" },
                "recorded": {
                    "type": "object",
                    "required": ["seq", "id"],
                    "description": "the request's event, durable: the turn's first, or the input:queued a running turn recorded",
                    "properties": { "seq": { "type": "integer", "minimum": 0 }, "id": { "type": "string", "format": "uuid" } },
                },
            },
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

/// Moves the `$defs` of `schema` into `into` as `<prefix><name>`, pointing its references
/// there, and gives unsigned integers the largest value the routes read as their `maximum`
/// (schemars gives only the `format`).
pub(crate) fn hoist(schema: &mut Value, into: &mut Map<String, Value>, prefix: &str) {
    if let Some(Value::Object(defs)) = schema.as_object_mut().and_then(|s| s.remove("$defs")) {
        for (name, mut def) in defs {
            hoist(&mut def, into, prefix);
            into.entry(format!("{prefix}{name}")).or_insert(def);
        }
    }
    tidy(schema, prefix);
}

fn tidy(value: &mut Value, prefix: &str) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get_mut("$ref")
                && let Some(name) = target.strip_prefix("#/$defs/")
            {
                *target = format!("#/components/schemas/{prefix}{name}");
            }
            let maximum = match map.get("format").and_then(Value::as_str) {
                Some("uint32") => Some(u64::from(u32::MAX)),
                Some("uint64" | "uint") => Some(MAX_SAFE),
                _ => None,
            };
            if let Some(maximum) = maximum {
                map.entry("maximum").or_insert(json!(maximum));
            }
            map.values_mut().for_each(|v| tidy(v, prefix));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| tidy(v, prefix)),
        _ => {}
    }
}

fn paths() -> Value {
    let position = json!({ "type": "integer", "minimum": 0, "maximum": MAX_SAFE });
    let accepted = (
        "202",
        ok("the turn runs on in the server", schema("Accepted")),
    );
    let paths = json!({
        "/health": { "get": public(operation("Health", vec![], None, ("200", ok("ok", json!({ "type": "object" }))), &[])) },
        "/providers": { "get": operation("The providers a fork may run with, by name (configured by the operator)", vec![], None, ("200", ok("their names", json!({ "type": "object", "required": ["providers"], "properties": { "providers": { "type": "array", "items": { "type": "object", "required": ["name"], "properties": { "name": { "type": "string" } } } } } }))), &["401"]) },
        "/openapi.json": { "get": public(operation("This document", vec![], None, ("200", ok("the document", json!({ "type": "object" }))), &[])) },
        "/sessions": {
            "get": operation(
                "Sessions: searched, filtered, sorted and paged (every parameter optional; none gives every session)",
                vec![
                    query("search", json!({ "type": "string", "description": "text in the id, title, workflow, an agent's name or an input (any case)" })),
                    query("status", json!({ "type": "string", "pattern": "^((running|idle|waiting|failed)(,(running|idle|waiting|failed))*)?$", "description": "any of these comma-separated statuses (empty: any status)" })),
                    query("workflow", json!({ "type": "string" })),
                    query("agent", json!({ "type": "string" })),
                    query("since", json!({ "type": "string", "format": "date-time", "description": "last event at or after" })),
                    query("until", json!({ "type": "string", "format": "date-time", "description": "first event at or before" })),
                    query("openRequest", json!({ "type": "boolean" })),
                    query("forkOf", json!({ "type": "string", "pattern": "^[A-Za-z0-9._~-]{1,200}$" })),
                    query("scorer", json!({ "type": "string", "description": "scored by this online scorer (its latest score of the session's turns); what minScore, maxScore and the score sorts read" })),
                    query("minScore", json!({ "type": "number", "description": "the scorer's latest score at least this (needs scorer)" })),
                    query("maxScore", json!({ "type": "number", "description": "the scorer's latest score at most this (needs scorer)" })),
                    query("annotated", json!({ "type": "boolean", "description": "annotated by a person (true) or not yet (false: an annotation queue)" })),
                    query("label", json!({ "type": "string", "description": "annotated with this label" })),
                    query("sort", schema("SessionSort")),
                    query("after", json!({ "type": "string", "pattern": "^(-?[0-9]{1,38}~.+)?$", "description": "a page's nextAfter (empty: the first page)" })),
                    query("limit", json!({ "type": "integer", "minimum": 1, "maximum": 1000 })),
                ],
                None,
                ("200", ok("a page of sessions", schema("SessionsPage"))),
                &["400", "401"],
            ),
            "post": operation("Start a session", vec![], Some(object(&["workflow"], json!({ "workflow": { "type": "string" }, "input": { "type": ["string", "null"] } }))), accepted.clone(), &["400", "401", "404", "413"]),
        },
        "/sessions/{id}": {
            "get": operation("One session", vec![session_id()], None, ("200", ok("the session: its summary, whether this server runs a turn on it now, and, when the code that recorded it differs from the code registered here, both", json!({ "allOf": [schema("SessionSummary"), { "type": "object", "properties": { "runningHere": { "type": "boolean" }, "codeChange": schema("CodeChange") }, "required": ["runningHere"] }] }))), &["400", "401", "404"]),
            "delete": operation("Delete a session", vec![session_id()], None, ("204", json!({ "description": "deleted" })), &["400", "401", "404", "409"]),
        },
        "/sessions/{id}/input": { "post": operation("A new turn; while a turn runs, what `onBusy` (or the header, or the server's default) says", vec![session_id(), on_busy_header()], Some(object(&["text"], json!({ "text": { "type": "string" }, "onBusy": schema("BusyPolicy"), "by": { "type": "string", "description": "Who wrote it (recorded as the input's `by`; traces show it)" } }))), accepted.clone(), &["400", "401", "404", "409", "413", "422"]) },
        "/sessions/{id}/answer": { "post": operation("Answer an input request", vec![session_id()], Some(object(&["request", "text"], json!({ "request": { "type": "string", "format": "uuid" }, "text": { "type": "string" }, "by": { "type": "string", "description": "Who answered (recorded as the answer's `by`; traces show it)" } }))), accepted.clone(), &["400", "401", "404", "409", "413", "422"]) },
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
                "400": failure("400"), "401": failure("401"),
                "404": failure("404"), "429": failure("429"),
            },
        } },
        "/sessions/{id}/state": { "get": operation("The state at a position", vec![session_id(), query("at", position.clone())], None, ("200", ok("the state", schema("StateAt"))), &["400", "401", "404", "422"]) },
        "/sessions/{id}/states": { "get": operation("States at positions, in one pass", vec![session_id(), json!({ "name": "at", "in": "query", "required": true, "schema": { "type": "string", "pattern": "^[0-9]{1,15}(,[0-9]{1,15}){0,99}$" } })], None, ("200", ok("the states", json!({ "type": "array", "items": schema("StateAt") }))), &["400", "401", "404", "422"]) },
        "/sessions/{id}/diff": { "get": operation("The JSON patch between two positions", vec![session_id(), json!({ "name": "from", "in": "query", "required": true, "schema": position.clone() }), json!({ "name": "to", "in": "query", "required": true, "schema": position.clone() })], None, ("200", ok("an RFC 6902 patch", json!({ "type": "array" }))), &["400", "401", "404", "422"]) },
        "/sessions/{id}/messages": { "get": operation("Chat messages at a position", vec![session_id(), query("at", position), query("shape", json!({ "enum": ["v4", "ui", "calls"] })), query("approvals", json!({ "enum": ["data", "tool"], "description": "how shape=ui shows approvals: as `data-input-requested` parts (the default) or as AI SDK 6+ tool approvals; the other shapes are the same either way" }))], None, ("200", ok("the messages", json!({ "type": "array" }))), &["400", "401", "404"]) },
        "/sessions/{id}/fork": { "post": operation(
            "Fork and run on; with `answer`, another answer to the request open there; with `input`, a new turn once forked; with `stateEdit`, from the state changed by that JSON merge patch; with `provider`, with another model",
            vec![session_id()],
            Some(json!({ "allOf": [
                schema("ForkPoint"),
                { "type": "object", "properties": {
                    "input": { "type": ["string", "null"], "description": "the new turn's input, once forked" },
                    "stateEdit": { "type": ["object", "null"], "description": "a JSON merge patch (RFC 7396) on the state the fork starts from" },
                    "provider": { "type": ["string", "null"], "description": "run the fork (and its input) with this provider of `GET /providers` instead of the workflow's own; another name is a 404" },
                    "answer": { "description": "answer the request open at the fork point with this instead (before `input`): its text, or the text and the request's id when several are open; a fork point where it is not open is refused (409) and nothing is recorded", "oneOf": [
                        { "type": "string" },
                        { "type": "object", "required": ["text"], "additionalProperties": false, "properties": { "text": { "type": "string" }, "request": { "type": "string", "format": "uuid" } } },
                        { "type": "null" },
                    ] },
                } },
            ] })),
            accepted,
            &["400", "401", "404", "409", "413", "422"],
        ) },
        "/sessions/{id}/compare": { "get": operation(
            "Where this session and another part: common ancestor, first differing event, payload and state patches",
            vec![session_id(), json!({ "name": "with", "in": "query", "required": true, "schema": { "type": "string", "pattern": "^[A-Za-z0-9._~-]{1,200}$" } })],
            None,
            ("200", ok("the comparison", schema("SessionComparison"))),
            &["400", "401", "404"],
        ) },
        "/sessions/{id}/state-check": { "get": operation(
            "The session folded through this server's handlers, compared with the state hashes its live run recorded: the first position where the state parts",
            vec![session_id()],
            None,
            ("200", ok("the check", schema("StateCheck"))),
            &["400", "401", "404", "422"],
        ) },
        "/sessions/{id}/export": { "get": operation(
            "The session as `openharness export` writes it: JSONL whose blocks are SHA-256 chains (a fork's ancestors first), which `openharness verify` checks and `openharness import` reads",
            vec![session_id()],
            None,
            ("200", json!({ "description": "the export (docs/export-format.md), saved as `<id>.jsonl`", "content": { "application/x-ndjson": { "schema": { "type": "string" } } } })),
            &["400", "401", "404", "409"],
        ) },
        "/api/chat": { "post": {
            "summary": "AI SDK 5 chat: the turn as a UI message stream",
            "parameters": [approvals_header()],
            "requestBody": { "required": true, "content": { "application/json": { "schema": object(&["id", "messages"], json!({
                "id": { "type": "string" }, "messages": { "type": "array" }, "trigger": { "type": "string" }, "messageId": { "type": "string" },
            })) } } },
            "responses": { "200": sse("the UI message stream"), "400": failure("400"), "401": failure("401"), "404": failure("404"), "409": failure("409"), "413": failure("413"), "415": failure("415"), "422": failure("422"), "429": failure("429") },
        } },
        "/api/chat/{id}/stream": { "get": {
            "summary": "The running chat turn's stream from its start",
            "parameters": [session_id(), approvals_header()],
            "responses": { "200": sse("the UI message stream"), "204": { "description": "no turn is running" }, "400": failure("400"), "401": failure("401"), "429": failure("429") },
        } },
        "/api/chat/{id}/stop": { "post": operation("Stop the chat's running turn as an event (stop:requested, then cancelled), whoever reads its stream", vec![session_id()], None, ("200", ok("whether a turn was running", object(&["cancelled"], json!({ "cancelled": { "type": "boolean" } })))), &["400", "401"]) },
        "/api/workflow": { "post": {
            "summary": "The seeds' workflow handler: event, state and done frames",
            "requestBody": { "required": true, "content": { "application/json": { "schema": object(&["input"], json!({
                "input": { "type": "string" }, "sessionId": { "type": "string" }, "workflow": { "type": "string" }, "record": { "type": "boolean" },
            })) } } },
            "responses": { "200": sse("the frames"), "400": failure("400"), "401": failure("401"), "404": failure("404"), "409": failure("409"), "413": failure("413"), "415": failure("415"), "422": failure("422"), "429": failure("429") },
        } },
    });
    let mut paths = paths;
    if let Some(paths) = paths.as_object_mut() {
        paths.extend(feedback_paths());
        paths.extend(crate::responses::openapi::paths());
        paths.extend(crate::ag_ui::openapi::paths());
        paths.extend(crate::a2a::openapi::paths());
    }
    #[cfg(feature = "eval")]
    let paths = with_experiments(paths);
    paths
}

/// `paths` with the experiments' routes (feature `eval`).
#[cfg(feature = "eval")]
fn with_experiments(mut paths: Value) -> Value {
    if let Some(paths) = paths.as_object_mut() {
        paths.extend(experiment_paths());
        paths.extend(dataset_paths());
    }
    paths
}

/// The datasets' routes (feature `eval`): `GET /datasets` and `GET /datasets/{name}`.
#[cfg(feature = "eval")]
fn dataset_paths() -> Map<String, Value> {
    let case = json!({ "type": "object", "required": ["id", "session", "position"], "properties": {
        "id": { "type": "string" },
        "session": { "type": "string" },
        "position": { "type": "integer", "minimum": 0, "description": "where its runs fork the session, resolved when it was added" },
        "workflow": { "type": "string" },
        "title": { "type": "string" },
        "answers": { "type": "array", "items": { "type": "string" } },
        "inputs": { "type": "array", "items": { "type": "string" } },
        "expected": {},
        "metadata": {},
    } });
    let listed = json!({ "type": "object", "required": ["datasets"], "properties": { "datasets": { "type": "array", "items": {
        "type": "object", "required": ["name", "cases", "version", "created", "changed"],
        "properties": { "name": { "type": "string" }, "cases": { "type": "integer", "minimum": 0 }, "version": { "type": "integer", "minimum": 0 }, "created": { "type": "string" }, "changed": { "type": "string" } },
    } } } });
    let one = json!({ "type": "object", "required": ["name", "version", "latest", "cases", "created", "changes"], "properties": {
        "name": { "type": "string" },
        "version": { "type": "integer", "minimum": 0, "description": "the version read: how many of its log's events it folds" },
        "latest": { "type": "integer", "minimum": 0 },
        "cases": { "type": "array", "items": case },
        "created": { "type": "string" },
        "changed": { "type": "string" },
        "changes": { "type": "array", "items": { "type": "object", "required": ["version", "time"], "description": "one per version: the cases it added or removed, what was asked, why" } },
    } });
    let name = json!({ "name": "name", "in": "path", "required": true, "schema": { "type": "string", "minLength": 1, "maxLength": 128 } });
    let version = query(
        "version",
        json!({ "type": "integer", "minimum": 0, "description": "the version (its log's first K events); the latest when absent" }),
    );
    let mut paths = Map::new();
    paths.insert("/datasets".to_owned(), json!({
        "get": operation("The store's datasets cut from production sessions", vec![], None, ("200", ok("each with its cases, version and last change", listed)), &[]),
    }));
    paths.insert("/datasets/{name}".to_owned(), json!({ "get": operation("One dataset at a version: its cases (session, position) and its changes", vec![name, version], None, ("200", ok("the dataset", one)), &["400", "404"]) }));
    paths
}

/// The experiments' routes (feature `eval`): `GET /experiments` and `GET
/// /experiments/{name}` (the store's), `POST /experiments` (one run here),
/// `GET /experiments/{name}/events` (its log as SSE, then an `end` frame) and
/// `POST /experiments/{name}/cancel`.
#[cfg(feature = "eval")]
fn experiment_paths() -> Map<String, Value> {
    let listed = json!({ "type": "object", "required": ["experiments"], "properties": { "experiments": { "type": "array", "items": {
        "type": "object", "required": ["name", "created", "lastEvent", "events"],
        "properties": { "name": { "type": "string" }, "created": { "type": "string" }, "lastEvent": { "type": "string" }, "events": { "type": "integer", "minimum": 0 }, "running": { "type": "boolean", "description": "whether it runs on this server now" } },
    } } } });
    let one = json!({ "type": "object", "required": ["name", "created", "definition", "runs"], "properties": {
        "name": { "type": "string" },
        "created": { "type": "string" },
        "definition": { "type": "object", "description": "the experiment's `eval:started`: cases, variants, baseline, repeats, scorers" },
        "runs": { "type": "array", "items": { "type": "object", "required": ["run", "scores"], "properties": {
            "run": { "type": "object", "description": "the run's `eval:recorded`: case, variant, repeat, session, status, latency, usage, cost" },
            "scores": { "type": "object", "description": "by scorer, its `eval:scored`", "additionalProperties": { "type": "object" } },
        } } },
    } });
    let name = json!({ "name": "name", "in": "path", "required": true, "schema": { "type": "string", "pattern": "^[A-Za-z0-9._~-]{1,195}$" } });
    // An experiment file as JSON (the TOML's keys), or its TOML text.
    let file = json!({ "oneOf": [
        { "type": "object", "required": ["toml"], "properties": { "toml": { "type": "string", "description": "an experiment file's TOML text, as `openharness eval run` reads it" } }, "additionalProperties": false },
        { "type": "object", "required": ["name"], "description": "an experiment file as JSON: name, workflow, case, recordings, datasets, variant, baseline, repeats, concurrency, scorer, max_regression, max_agent_calls, max_cost, deadline_secs (no `dataset` file, no `provider` table: it runs on this server's workflows and their providers)", "properties": { "name": { "type": "string" } } },
    ] });
    let started = json!({ "type": "object", "required": ["name", "status", "events", "cancel"], "properties": {
        "name": { "type": "string" },
        "status": { "type": "string", "enum": ["running"] },
        "events": { "type": "string", "description": "its progress as SSE" },
        "cancel": { "type": "string", "description": "POST here to stop it" },
    } });
    let ended = json!({ "type": "object", "required": ["name", "status", "ran", "skipped", "failed", "cancelled"], "properties": {
        "name": { "type": "string" },
        "status": { "type": "string", "enum": ["completed", "cancelled", "failed"] },
        "ran": { "type": "integer", "minimum": 0 },
        "skipped": { "type": "integer", "minimum": 0 },
        "failed": { "type": "integer", "minimum": 0 },
        "cancelled": { "type": "integer", "minimum": 0 },
        "error": { "type": "string" },
    } });
    let after = query("after", json!({ "type": "integer", "minimum": 0 }));
    let mut paths = Map::new();
    paths.insert("/experiments".to_owned(), json!({
        "get": operation("The store's experiments", vec![], None, ("200", ok("their names, times and lengths", listed)), &[]),
        "post": operation("Runs an experiment file on this server's host, in the background (an experiment of that name done before is resumed)", vec![], Some(file), ("202", ok("its definition is recorded; it runs", started)), &["409"]),
    }));
    paths.insert("/experiments/{name}".to_owned(), json!({ "get": operation("One experiment: its definition, every run with its session and scores, whether it runs here, when it was cancelled", vec![name.clone()], None, ("200", ok("the experiment", one)), &["400", "404"]) }));
    paths.insert("/experiments/{name}/events".to_owned(), json!({ "get": operation("Its log as SSE (id: the event's seq; resumes after Last-Event-ID or ?after=), then one `end` frame (no id) with how it ended: completed, cancelled, failed, or stopped when it does not run here", vec![name.clone(), after], None, ("200", crate::openapi::sse("its events, then `end`")), &["400", "404", "429"]) }));
    paths.insert("/experiments/{name}/cancel".to_owned(), json!({ "post": operation("Stops an experiment running here: runs under way are recorded cancelled, then eval:cancelled; answered once recorded", vec![name], None, ("200", ok("how it ended", ended)), &["400", "404", "409"]) }));
    paths
}

/// `doc` with the paths and schemas of `extensions` added; a path or schema name `doc` has
/// already keeps its own.
pub(crate) fn merged(mut doc: Value, extensions: &[Value]) -> Value {
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

/// `GET /openapi.json`: the document, built once when the router was.
pub(crate) async fn serve(State(state): State<Arc<crate::AppState>>) -> Response {
    Json(state.openapi.as_ref()).into_response()
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
        let doc = merged(document(), &[extension]);
        assert!(doc["paths"]["/v1/ping"]["get"].is_object());
        assert!(doc["paths"]["/sessions"].is_object());
        assert_eq!(doc["components"]["schemas"]["V1Ping"]["type"], "object");
        // The server's own keep theirs.
        assert_eq!(doc["components"]["schemas"]["Error"]["type"], "object");
        assert_eq!(doc["paths"]["/health"], document()["paths"]["/health"]);
    }
}
