//! The `/v1` OpenAPI document against the routes: every route the router declares is in the
//! document with the same methods (and no more), and every operation of the document, called
//! over a real socket on 127.0.0.1, answers a status the document lists for it with a body
//! that validates against the documented schema — successes, `401`, `404`, `409`, `422` and
//! `503` alike.
#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use openharness_host::Host;
use openharness_platform::{MasterKeys, Platform};
use openharness_provider::{Reply, ScriptedProvider};
use openharness_server::{ApiKeyHash, ServerOptions, router};
use openharness_testkit::http;
use openharness_testkit::{LIMIT, eventually};
use serde_json::{Value, json};

const KEY: &str = "test-key";

/// The `/v1` routes and their methods as `v1/mod.rs` and `v1/everruns.rs` declare them
/// (`.route("/v1/…", get(…).post(…))`), catch-alls left out.
fn declared_routes() -> BTreeMap<String, BTreeSet<String>> {
    let source = concat!(
        include_str!("../src/v1/mod.rs"),
        include_str!("../src/v1/everruns.rs")
    );
    let mut routes = BTreeMap::new();
    for chunk in source.split(".route(").skip(1) {
        let chunk = chunk.trim_start();
        let Some(rest) = chunk.strip_prefix('"') else {
            continue;
        };
        let Some((path, rest)) = rest.split_once('"') else {
            continue;
        };
        // The method chain runs to the end of this `.route(…)` call.
        let mut depth = 1;
        let mut end = rest.len();
        for (i, c) in rest.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let chain = &rest[..end];
        if !path.starts_with("/v1/") || chain.contains("any(") {
            continue;
        }
        let methods = ["get", "post", "put", "patch", "delete"]
            .into_iter()
            .filter(|m| {
                chain.contains(&format!(" {m}("))
                    || chain.contains(&format!(".{m}("))
                    || chain.contains(&format!("\n{m}("))
                    || chain.trim_start().starts_with(&format!("{m}("))
            })
            .map(str::to_owned)
            .collect();
        routes.insert(path.to_owned(), methods);
    }
    routes
}

fn documented_routes(doc: &Value) -> BTreeMap<String, BTreeSet<String>> {
    doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        // The platform's routes: Open Responses (`/v1/responses…`, `/v1/conversations…`) is the server's own,
        // checked by `tests/protocols.rs` and the real SDK in `crates/cli/tests/open_responses.rs`.
        .filter(|(path, _)| {
            path.starts_with("/v1/")
                && !path.starts_with("/v1/responses")
                && !path.starts_with("/v1/conversations")
        })
        .map(|(path, item)| {
            (
                path.clone(),
                item.as_object().unwrap().keys().cloned().collect(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_of_the_router_is_documented_with_its_methods() {
    let declared = declared_routes();
    assert!(declared.len() >= 16, "{declared:?}");
    let store = Arc::new(openharness_store::MemoryStore::new());
    let served = checker(Platform::new(store, None)).await;
    assert_eq!(declared, documented_routes(&served.doc));
}

/// Calls the API and checks every answer against the document.
struct Checker {
    http: http::Client,
    doc: Value,
    /// The operations called, as `METHOD template`.
    called: Mutex<BTreeSet<String>>,
}

struct Answer {
    status: u16,
    body: Value,
}

impl Checker {
    /// Calls `method template` at `path` (the template with its ids filled in).
    async fn call(
        &self,
        method: &str,
        template: &str,
        path: &str,
        body: Option<Value>,
        key: Option<&str>,
    ) -> Answer {
        let bearer = key.map(|key| format!("Bearer {key}"));
        let headers: Vec<(&str, &str)> = bearer
            .iter()
            .map(|bearer| ("authorization", bearer.as_str()))
            .collect();
        let body = body.map(|body| body.to_string());
        let response = self
            .http
            .call(method, path, body.as_deref(), &headers)
            .await;
        let status = response.status;
        let content_type = response.header("content-type").map(str::to_owned);
        let text = response.body;
        let operation = &self.doc["paths"][template][method.to_lowercase()];
        assert!(
            operation.is_object(),
            "{method} {template} is not documented"
        );
        let documented = &operation["responses"][status.to_string()];
        assert!(
            documented.is_object(),
            "{method} {path}: {status} is not a documented answer: {text}"
        );
        let body = if text.is_empty() {
            assert!(
                documented.get("content").is_none(),
                "{method} {path}: {status} documents a body, none came"
            );
            Value::Null
        } else {
            assert_eq!(content_type.as_deref(), Some("application/json"));
            let body: Value = serde_json::from_str(&text).unwrap();
            let schema = &documented["content"]["application/json"]["schema"];
            assert!(
                schema.is_object(),
                "{method} {template} {status}: no schema"
            );
            let mut root = json!({ "components": self.doc["components"].clone() });
            root["$ref"] = schema["$ref"].clone();
            if root["$ref"].is_null() {
                root = schema.clone();
            }
            let validator = jsonschema::draft202012::new(&root).unwrap();
            let errors: Vec<String> = validator
                .iter_errors(&body)
                .map(|e| format!("{} at {}", e, e.instance_path()))
                .collect();
            assert!(
                errors.is_empty(),
                "{method} {path} {status}: the body does not match its schema: {errors:?}\n{body:#}"
            );
            body
        };
        self.called
            .lock()
            .unwrap()
            .insert(format!("{method} {template}"));
        Answer { status, body }
    }

    async fn ok(&self, method: &str, template: &str, path: &str, body: Option<Value>) -> Value {
        let answer = self.call(method, template, path, body, Some(KEY)).await;
        assert!(
            (200..300).contains(&answer.status),
            "{method} {path}: {} {}",
            answer.status,
            answer.body
        );
        answer.body
    }

    async fn fails(
        &self,
        method: &str,
        template: &str,
        path: &str,
        body: Option<Value>,
        status: u16,
    ) -> Value {
        let answer = self.call(method, template, path, body, Some(KEY)).await;
        assert_eq!(answer.status, status, "{method} {path}: {}", answer.body);
        answer.body
    }
}

async fn checker(platform: Platform) -> Checker {
    let options = ServerOptions::default()
        .api_keys([ApiKeyHash::of(KEY)])
        .platform(platform.clone());
    let host = Host::shared(platform.store().clone());
    let http = http::Client::new(http::serve(router(host, options)).await);
    // The one document the server serves, native routes and `/v1` alike.
    let doc = http.get("/openapi.json").await.json();
    Checker {
        http,
        doc,
        called: Mutex::default(),
    }
}

fn id(value: &Value) -> String {
    value["id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_answers_as_documented() {
    let store = Arc::new(openharness_store::MemoryStore::new());
    let keys = MasterKeys::parse(&format!("k1:{}", "42".repeat(32))).unwrap();
    let scripted = ScriptedProvider::new().fallback("assistant", |_| {
        Reply::output(json!("Hi there")).text("Hi there")
    });
    // One platform answers with a scripted model; a second over the same store has none.
    let c =
        checker(Platform::new(store.clone(), Some(keys.clone())).with_provider(Arc::new(scripted)))
            .await;
    let bare = checker(Platform::new(store.clone(), Some(keys))).await;

    // No key: 401, in the error shape.
    let answer = c.call("GET", "/v1/agents", "/v1/agents", None, None).await;
    assert_eq!(answer.status, 401);

    // An offset beyond what JSON carries exactly is refused, not echoed.
    c.fails(
        "GET",
        "/v1/agents",
        "/v1/agents?offset=9007199254740992",
        None,
        400,
    )
    .await;

    // Capabilities.
    let page = c
        .ok("GET", "/v1/capabilities", "/v1/capabilities", None)
        .await;
    assert!(page["total"].as_u64().unwrap() >= 2);
    c.ok(
        "GET",
        "/v1/capabilities/{id}",
        "/v1/capabilities/current_time",
        None,
    )
    .await;
    c.fails(
        "GET",
        "/v1/capabilities/{id}",
        "/v1/capabilities/nope",
        None,
        404,
    )
    .await;

    // Providers and models.
    let provider = c
        .ok(
            "POST",
            "/v1/llm-providers",
            "/v1/llm-providers",
            Some(json!({"name": "main", "provider_type": "anthropic", "api_key": "sk-1", "is_default": true})),
        )
        .await;
    let p = id(&provider);
    c.fails(
        "POST",
        "/v1/llm-providers",
        "/v1/llm-providers",
        Some(json!({"name": "", "provider_type": "openai"})),
        422,
    )
    .await;
    c.ok("GET", "/v1/llm-providers", "/v1/llm-providers", None)
        .await;
    c.ok(
        "GET",
        "/v1/llm-providers/{id}",
        &format!("/v1/llm-providers/{p}"),
        None,
    )
    .await;
    c.ok(
        "PATCH",
        "/v1/llm-providers/{id}",
        &format!("/v1/llm-providers/{p}"),
        Some(json!({"base_url": "http://127.0.0.1:9", "settings": {"region": "x"}})),
    )
    .await;
    let model = c
        .ok(
            "POST",
            "/v1/llm-providers/{id}/models",
            &format!("/v1/llm-providers/{p}/models"),
            Some(json!({"model_id": "m-1", "is_default": true, "context_window": 200000.0})),
        )
        .await;
    // A whole number written with a fraction is that number.
    assert_eq!(model["context_window"], 200_000);
    let m = id(&model);
    c.ok(
        "GET",
        "/v1/llm-providers/{id}/models",
        &format!("/v1/llm-providers/{p}/models"),
        None,
    )
    .await;
    c.fails(
        "POST",
        "/v1/llm-models",
        "/v1/llm-models",
        Some(json!({"provider_id": p, "model_id": "m-1"})),
        409,
    )
    .await;
    let other = c
        .ok(
            "POST",
            "/v1/llm-models",
            "/v1/llm-models",
            Some(json!({"provider_id": p, "model_id": "m-2", "features": ["streaming"]})),
        )
        .await;
    c.ok(
        "GET",
        "/v1/llm-models",
        &format!("/v1/llm-models?provider_id={p}&limit=1&offset=1"),
        None,
    )
    .await;
    c.ok(
        "GET",
        "/v1/llm-models/{id}",
        &format!("/v1/llm-models/{m}"),
        None,
    )
    .await;
    c.ok(
        "PATCH",
        "/v1/llm-models/{id}",
        &format!("/v1/llm-models/{}", id(&other)),
        Some(json!({"display_name": "Second", "context_window": null})),
    )
    .await;
    c.fails(
        "DELETE",
        "/v1/llm-providers/{id}",
        &format!("/v1/llm-providers/{p}"),
        None,
        409,
    )
    .await;

    // Agents and capabilities.
    let agent = c
        .ok(
            "POST",
            "/v1/agents",
            "/v1/agents",
            Some(json!({"name": "helper", "system_prompt": "Be brief.", "default_model_id": m, "tags": ["t"]})),
        )
        .await;
    let a = id(&agent);
    c.fails(
        "POST",
        "/v1/agents",
        "/v1/agents",
        Some(json!({"name": "x", "system_prompt": "", "colour": 1})),
        422,
    )
    .await;
    c.fails("GET", "/v1/agents/{id}", "/v1/agents/not-a-uuid", None, 404)
        .await;
    c.ok("GET", "/v1/agents", "/v1/agents?status=active", None)
        .await;
    c.ok("GET", "/v1/agents/{id}", &format!("/v1/agents/{a}"), None)
        .await;
    c.ok(
        "PATCH",
        "/v1/agents/{id}",
        &format!("/v1/agents/{a}"),
        Some(json!({"description": "helps"})),
    )
    .await;
    c.ok(
        "PUT",
        "/v1/agents/{id}/capabilities",
        &format!("/v1/agents/{a}/capabilities"),
        Some(json!({"capabilities": ["current_time", "noop"]})),
    )
    .await;
    c.fails(
        "PUT",
        "/v1/agents/{id}/capabilities",
        &format!("/v1/agents/{a}/capabilities"),
        Some(json!({"capabilities": ["research"]})),
        422,
    )
    .await;
    c.ok(
        "GET",
        "/v1/agents/{id}/capabilities",
        &format!("/v1/agents/{a}/capabilities"),
        None,
    )
    .await;
    c.fails(
        "DELETE",
        "/v1/llm-models/{id}",
        &format!("/v1/llm-models/{m}"),
        None,
        409,
    )
    .await;

    // Sessions, messages, events.
    let session = c
        .ok(
            "POST",
            "/v1/agents/{id}/sessions",
            &format!("/v1/agents/{a}/sessions"),
            Some(json!({"title": "Trip"})),
        )
        .await;
    let s = id(&session);
    let one = format!("/v1/agents/{a}/sessions/{s}");
    c.ok(
        "GET",
        "/v1/agents/{id}/sessions",
        &format!("/v1/agents/{a}/sessions"),
        None,
    )
    .await;
    c.ok(
        "PATCH",
        "/v1/agents/{id}/sessions/{session}",
        &one,
        Some(json!({"tags": ["x"], "model_id": null})),
    )
    .await;
    c.fails(
        "POST",
        "/v1/agents/{id}/sessions/{session}/messages",
        &format!("{one}/messages"),
        Some(json!({"content": [{"type": "image", "url": "ftp://127.0.0.1/x.png"}]})),
        422,
    )
    .await;
    let posted = c
        .call(
            "POST",
            "/v1/agents/{id}/sessions/{session}/messages",
            &format!("{one}/messages"),
            Some(json!({"content": [{"type": "text", "text": "Hello"}]})),
            Some(KEY),
        )
        .await;
    assert_eq!(posted.status, 201, "{}", posted.body);
    // The turn runs on: wait for the answer, then read everything.
    let (c_ref, one_ref) = (&c, &one);
    let messages = eventually(LIMIT, "the answer with the turn ended", || async move {
        let messages = c_ref
            .ok(
                "GET",
                "/v1/agents/{id}/sessions/{session}/messages",
                &format!("{one_ref}/messages"),
                None,
            )
            .await;
        let status = c_ref
            .ok("GET", "/v1/agents/{id}/sessions/{session}", one_ref, None)
            .await;
        if messages["total"] == 2 && status["status"] == "pending" {
            Ok(messages)
        } else {
            Err(messages)
        }
    })
    .await;
    assert_eq!(messages["total"], 2, "{messages}");
    let events = c
        .ok(
            "GET",
            "/v1/agents/{id}/sessions/{session}/events",
            &format!("{one}/events?after=0"),
            None,
        )
        .await;
    assert!(events["total"].as_u64().unwrap() > 2, "{events}");

    // The event stream is documented as SSE.
    let bearer = format!("Bearer {KEY}");
    let stream = c
        .http
        .events(&format!("{one}/events"), &[("authorization", &bearer)])
        .await;
    assert_eq!(stream.status, 200);
    let content_type = stream.header("content-type").unwrap();
    assert!(content_type.starts_with("text/event-stream"));
    assert!(
        c.doc["paths"]["/v1/agents/{id}/sessions/{session}/events"]["get"]["responses"]["200"]
            ["content"]
            .get("text/event-stream")
            .is_some()
    );
    drop(stream);

    // The routes the Everruns SDK calls, in its shapes.
    let nowhere = uuid::Uuid::now_v7();
    c.ok(
        "POST",
        "/v1/agents/{id}/sessions/{session}/cancel",
        &format!("{one}/cancel"),
        None,
    )
    .await;
    c.fails(
        "GET",
        "/v1/agents/{id}/sessions/{session}/sse",
        &format!("/v1/agents/{a}/sessions/{nowhere}/sse"),
        None,
        404,
    )
    .await;
    let sessions = c
        .ok(
            "GET",
            "/v1/sessions",
            &format!("/v1/sessions?agent_id={a}"),
            None,
        )
        .await;
    assert_eq!(sessions["data"][0]["status"], "idle", "{sessions}");
    let top = c
        .ok(
            "POST",
            "/v1/sessions",
            "/v1/sessions",
            Some(
                json!({"agent_id": a, "title": "Top", "tags": [], "capabilities": [], "tools": []}),
            ),
        )
        .await;
    assert_eq!(top["status"], "started");
    let t = format!("/v1/sessions/{}", id(&top));
    c.fails(
        "POST",
        "/v1/sessions",
        "/v1/sessions",
        Some(json!({"agent_id": a, "capabilities": [{"ref": "current_time"}]})),
        422,
    )
    .await;
    c.fails(
        "POST",
        "/v1/sessions",
        "/v1/sessions",
        Some(json!({"agent_name": "nobody"})),
        404,
    )
    .await;
    c.ok("GET", "/v1/sessions/{id}", &t, None).await;
    c.ok(
        "POST",
        "/v1/sessions/{id}/cancel",
        &format!("{t}/cancel"),
        None,
    )
    .await;
    let wrapped = c
        .ok(
            "POST",
            "/v1/sessions/{id}/messages",
            &format!("{t}/messages"),
            Some(json!({"message": {"role": "user", "content": [{"type": "text", "text": "Hi"}]}})),
        )
        .await;
    assert_eq!(wrapped["role"], "user");
    let (c_ref, t_ref) = (&c, &t);
    let top_messages = eventually(LIMIT, "the answer", || async move {
        let messages = c_ref
            .ok(
                "GET",
                "/v1/sessions/{id}/messages",
                &format!("{t_ref}/messages"),
                None,
            )
            .await;
        if messages["total"] == 2 {
            Ok(messages)
        } else {
            Err(messages)
        }
    })
    .await;
    assert_eq!(top_messages["data"][1]["role"], "agent", "{top_messages}");
    let completed = c
        .ok(
            "GET",
            "/v1/sessions/{id}/events",
            &format!(
                "{t}/events?types=turn.completed&types=output.message.completed&after_sequence=0"
            ),
            None,
        )
        .await;
    assert!(completed["total"].as_u64().unwrap() >= 1, "{completed}");
    c.fails(
        "GET",
        "/v1/sessions/{id}/sse",
        &format!("/v1/sessions/{nowhere}/sse"),
        None,
        404,
    )
    .await;
    c.fails(
        "GET",
        "/v1/sessions/{id}/events",
        &format!("{t}/events?since_id={nowhere}"),
        None,
        404,
    )
    .await;
    let models = c.ok("GET", "/v1/models", "/v1/models", None).await;
    assert_eq!(models["data"][0]["provider_name"], "main", "{models}");
    c.ok("GET", "/v1/models/{id}", &format!("/v1/models/{m}"), None)
        .await;
    c.ok("DELETE", "/v1/sessions/{id}", &t, None).await;

    // Without any model provider: 503 no_provider.
    let lone = bare
        .ok(
            "POST",
            "/v1/agents",
            "/v1/agents",
            Some(json!({"name": "lone", "system_prompt": "p"})),
        )
        .await;
    let lone_session = bare
        .ok(
            "POST",
            "/v1/agents/{id}/sessions",
            &format!("/v1/agents/{}/sessions", id(&lone)),
            Some(json!({})),
        )
        .await;
    // (The default provider has a model, but no reachable server; remove the default first.)
    bare.ok(
        "PATCH",
        "/v1/llm-providers/{id}",
        &format!("/v1/llm-providers/{p}"),
        Some(json!({"is_default": false})),
    )
    .await;
    let body = bare
        .fails(
            "POST",
            "/v1/agents/{id}/sessions/{session}/messages",
            &format!(
                "/v1/agents/{}/sessions/{}/messages",
                id(&lone),
                id(&lone_session)
            ),
            Some(json!({"content": [{"type": "text", "text": "Hi"}]})),
            503,
        )
        .await;
    assert_eq!(body["error"]["code"], "no_provider");

    // Archive, conflicts, deletes.
    c.ok(
        "POST",
        "/v1/agents/{id}/archive",
        &format!("/v1/agents/{a}/archive"),
        None,
    )
    .await;
    c.fails(
        "PATCH",
        "/v1/agents/{id}",
        &format!("/v1/agents/{a}"),
        Some(json!({"name": "renamed"})),
        409,
    )
    .await;
    c.fails(
        "DELETE",
        "/v1/agents/{id}",
        &format!("/v1/agents/{a}?permanent=true"),
        None,
        409,
    )
    .await;
    c.ok(
        "POST",
        "/v1/agents/{id}/unarchive",
        &format!("/v1/agents/{a}/unarchive"),
        None,
    )
    .await;
    c.ok("DELETE", "/v1/agents/{id}/sessions/{session}", &one, None)
        .await;
    c.fails("GET", "/v1/agents/{id}/sessions/{session}", &one, None, 404)
        .await;
    // Delete archives; `?permanent=true` deletes for good.
    c.ok(
        "DELETE",
        "/v1/agents/{id}",
        &format!("/v1/agents/{a}"),
        None,
    )
    .await;
    let archived = c
        .ok("GET", "/v1/agents/{id}", &format!("/v1/agents/{a}"), None)
        .await;
    assert_eq!(archived["status"], "archived");
    c.ok(
        "DELETE",
        "/v1/agents/{id}",
        &format!("/v1/agents/{a}?permanent=true"),
        None,
    )
    .await;
    c.ok(
        "DELETE",
        "/v1/llm-models/{id}",
        &format!("/v1/llm-models/{m}"),
        None,
    )
    .await;
    c.ok(
        "DELETE",
        "/v1/llm-models/{id}",
        &format!("/v1/llm-models/{}", id(&other)),
        None,
    )
    .await;
    c.ok(
        "DELETE",
        "/v1/llm-providers/{id}",
        &format!("/v1/llm-providers/{p}"),
        None,
    )
    .await;

    // Every documented operation was called and answered as documented.
    let mut called = c.called.lock().unwrap().clone();
    called.extend(bare.called.lock().unwrap().iter().cloned());
    let documented: BTreeSet<String> = documented_routes(&c.doc)
        .into_iter()
        .flat_map(|(path, methods)| {
            methods
                .into_iter()
                .map(move |m| format!("{} {path}", m.to_uppercase()))
        })
        .collect();
    let missed: Vec<_> = documented.difference(&called).collect();
    assert!(missed.is_empty(), "never called: {missed:?}");
}
