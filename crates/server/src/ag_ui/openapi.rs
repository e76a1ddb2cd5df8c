//! The AG-UI routes in `GET /openapi.json`. The request is AG-UI's `RunAgentInput` and the
//! answer its event stream (the protocol's own schemas, `@ag-ui/core` 1.0.0, describe both):
//! the body is described by the fields this server reads.

use serde_json::{Map, Value, json};

use crate::openapi::parts::{ok, operation, sse};

fn workflow() -> Value {
    json!({ "name": "workflow", "in": "path", "required": true, "description": "a served workflow, or a `/v1` agent (`agent:<name-or-id>`)", "schema": { "type": "string" } })
}

/// `/ag-ui/{workflow}` and its stop route.
pub(crate) fn paths() -> Map<String, Value> {
    let mut run = operation(
        "AG-UI 1.0: a run of the thread `threadId` (the session) answered as AG-UI events; a recorded `runId` rejoins its run",
        vec![workflow(), crate::openapi::parts::on_busy_header()],
        Some(
            json!({ "type": "object", "required": ["threadId", "runId", "messages"], "properties": {
            "threadId": { "type": "string" },
            "runId": { "type": "string" },
            "messages": { "type": "array" },
            "resume": { "type": "array" },
            "tools": { "type": "array", "maxItems": 0 },
            "state": {},
            "context": { "type": "array" },
            "forwardedProps": {},
            "protocolVersion": { "type": "string" },
        } }),
        ),
        ("200", sse("the run's AG-UI events (`data:` JSON lines)")),
        &["404", "409", "429"],
    );
    run["externalDocs"] = json!({ "description": "AG-UI protocol 1.0", "url": "https://github.com/ag-ui-protocol/ag-ui" });
    let stop = operation(
        "Stops the thread's running turn as an event (stop:requested); its run ends with outcome `cancelled`",
        vec![
            workflow(),
            json!({ "name": "thread", "in": "path", "required": true, "schema": { "type": "string" } }),
        ],
        None,
        (
            "200",
            ok(
                "whether a turn was running",
                json!({ "type": "object", "required": ["cancelled"], "properties": { "cancelled": { "type": "boolean" } } }),
            ),
        ),
        &["400"],
    );
    let events = {
        let mut op = operation(
            "The thread's whole history as AG-UI events, run after run, each frame `id: <seq>.<k>`; resumes after Last-Event-ID (or `after`) with exactly the frames after it, and follows a run under way here",
            vec![
                workflow(),
                json!({ "name": "thread", "in": "path", "required": true, "schema": { "type": "string" } }),
                crate::openapi::parts::query(
                    "after",
                    json!({ "type": "string", "pattern": "^[0-9]{1,16}(\\.[0-9]{1,16})?$" }),
                ),
            ],
            None,
            ("200", sse("the thread's AG-UI events")),
            &["400", "404", "429"],
        );
        op["externalDocs"] = json!({ "description": "AG-UI protocol 1.0", "url": "https://github.com/ag-ui-protocol/ag-ui" });
        op
    };
    let mut paths = Map::new();
    paths.insert(
        "/ag-ui/{workflow}/{thread}/events".into(),
        json!({ "get": events }),
    );
    paths.insert("/ag-ui/{workflow}".into(), json!({ "post": run }));
    paths.insert(
        "/ag-ui/{workflow}/{thread}/stop".into(),
        json!({ "post": stop }),
    );
    paths
}
