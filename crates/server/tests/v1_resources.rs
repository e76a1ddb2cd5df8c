//! The `/v1` API over real sockets on 127.0.0.1: agents (CRUD, archive), sessions, messages
//! (turns of the agent-chat workflow with a scripted model), notification events (a JSON page
//! and SSE resumed after `Last-Event-ID`), capabilities, LLM providers (the key write-only and sealed in the log) and models (one
//! default per provider), the page envelope and the error shape; two replicas over one store
//! that conflict instead of overwriting. Every scenario runs on a `MemoryStore` and on
//! PostgreSQL (`OPENHARNESS_TEST_POSTGRES`, a fresh schema each; skipped, saying so, when
//! unset); durability across a restart is checked on redb.
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;

use openharness_core::{SessionId, Store};
use openharness_platform::{
    KeyError, NewModel, NewProvider, PLATFORM_LOG, Platform, PlatformError,
};
use openharness_server::ServerOptions;
use openharness_store::RedbStore;
use openharness_testkit::http;
use openharness_testkit::{LIMIT, eventually};
use serde_json::{Value, json};
use uuid::Uuid;

#[path = "v1_common/mod.rs"]
mod common;
use common::client::{error, master_keys, serve};
use common::on_every_store;

/// The texts of the messages at `messages` once there are `n` of them.
async fn texts_once(client: &common::client::Client, messages: &str, n: usize) -> Vec<String> {
    eventually(LIMIT, &format!("{n} messages at {messages}"), || async {
        let (_, page) = client.get(messages).await;
        let said: Vec<String> = page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"][0]["text"].as_str().unwrap_or("").to_owned())
            .collect();
        if said.len() == n { Ok(said) } else { Err(said) }
    })
    .await
}

fn uuid_v7(value: &Value) -> Uuid {
    let id: Uuid = value.as_str().unwrap().parse().unwrap();
    assert_eq!(id.get_version_num(), 7, "{id}");
    id
}

async fn agents_are_created_read_changed_archived_and_deleted(store: Arc<dyn Store>) {
    let platform = Platform::new(Arc::clone(&store), None);
    let client = serve(platform, ServerOptions::default()).await;

    let (status, agent) = client
        .send(
            "POST",
            "/v1/agents",
            json!({"name": " helper ", "system_prompt": "Be brief.", "tags": ["demo"]}),
        )
        .await;
    assert_eq!(status, 201, "{agent}");
    let id = uuid_v7(&agent["id"]);
    assert_eq!(agent["name"], "helper");
    assert_eq!(agent["status"], "active");
    assert_eq!(agent["description"], Value::Null);
    assert_eq!(agent["default_model_id"], Value::Null);
    assert_eq!(agent["created_at"], agent["updated_at"]);
    let mut keys: Vec<&str> = agent
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "capabilities",
            "created_at",
            "default_model_id",
            "description",
            "harness_id",
            "id",
            "initial_files",
            "name",
            "status",
            "system_prompt",
            "tags",
            "tools",
            "updated_at"
        ]
    );
    // What the Everruns SDK's `Agent` requires beside the seed's fields.
    assert_eq!(agent["harness_id"], "agent-chat");
    assert_eq!(agent["capabilities"], json!([]));

    let (status, read) = client.get(&format!("/v1/agents/{id}")).await;
    assert_eq!((status, &read), (200, &agent));

    let (status, changed) = client
        .send(
            "PATCH",
            &format!("/v1/agents/{id}"),
            json!({"description": "answers briefly", "tags": []}),
        )
        .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["description"], "answers briefly");
    assert_eq!(changed["system_prompt"], "Be brief.");
    assert_ne!(changed["updated_at"], agent["updated_at"]);
    let (_, cleared) = client
        .send(
            "PATCH",
            &format!("/v1/agents/{id}"),
            json!({"description": null}),
        )
        .await;
    assert_eq!(cleared["description"], Value::Null);

    // A second agent, then the page envelope.
    let second = client
        .create("/v1/agents", json!({"name": "second", "system_prompt": ""}))
        .await;
    let (status, page) = client.get("/v1/agents?limit=1&offset=1").await;
    assert_eq!(status, 200);
    assert_eq!(page["total"], 2);
    assert_eq!(
        (page["offset"].as_u64(), page["limit"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(page["data"][0]["id"], second["id"]);

    // Archived: readable, listed by status, not changed until unarchived.
    let (status, archived) = client
        .call("POST", &format!("/v1/agents/{id}/archive"), None)
        .await;
    assert_eq!(
        (status, archived["status"].as_str()),
        (200, Some("archived"))
    );
    let (_, page) = client.get("/v1/agents?status=archived").await;
    assert_eq!(page["total"], 1);
    client
        .refuses(
            "PATCH",
            &format!("/v1/agents/{id}"),
            json!({"name": "x"}),
            409,
            "agent_archived",
        )
        .await;
    let (_, active) = client
        .call("POST", &format!("/v1/agents/{id}/unarchive"), None)
        .await;
    assert_eq!(active["status"], "active");

    // Delete archives, as Everruns clients mean it (an archived agent stays readable);
    // `?permanent=true` deletes for good.
    let (status, _) = client
        .call("DELETE", &format!("/v1/agents/{id}"), None)
        .await;
    assert_eq!(status, 204);
    let (status, archived) = client.get(&format!("/v1/agents/{id}")).await;
    assert_eq!((status, &archived["status"]), (200, &json!("archived")));
    let (status, _) = client
        .call("DELETE", &format!("/v1/agents/{id}?permanent=true"), None)
        .await;
    assert_eq!(status, 204);
    error(
        &client.get(&format!("/v1/agents/{id}")).await,
        404,
        "not_found",
    );
    error(
        &client
            .call("DELETE", &format!("/v1/agents/{id}"), None)
            .await,
        404,
        "not_found",
    );
}

async fn bad_input_is_answered_in_the_error_shape(store: Arc<dyn Store>) {
    let platform = Platform::new(Arc::clone(&store), None);
    let client = serve(platform, ServerOptions::default()).await;
    error(&client.get("/v1/agents/not-a-uuid").await, 404, "not_found");
    error(
        &client.get(&format!("/v1/agents/{}", Uuid::now_v7())).await,
        404,
        "not_found",
    );
    let nowhere = client.get("/v1/nothing-here").await;
    error(&nowhere, 404, "not_found");
    assert_eq!(
        nowhere.1["error"]["message"],
        "no route is `GET /v1/nothing-here`: GET /openapi.json lists the routes"
    );
    // A method a path does not take is 405, in the same shape, saying what to do.
    let wrong = client.call("PUT", "/v1/agents", None).await;
    error(&wrong, 405, "method_not_allowed");
    assert!(
        wrong.1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`/v1/agents` does not take PUT"),
        "{}",
        wrong.1
    );
    // An empty name, an unknown field, no system prompt, a default model that does not exist.
    for bad in [
        json!({"name": "", "system_prompt": "x"}),
        json!({"name": "a", "system_prompt": "x", "colour": 1}),
        json!({"name": "a"}),
        json!({"name": "a", "system_prompt": "", "default_model_id": Uuid::now_v7()}),
    ] {
        client
            .refuses("POST", "/v1/agents", bad, 422, "invalid")
            .await;
    }
    error(
        &client.call("POST", "/v1/agents", Some("{nope")).await,
        400,
        "bad_request",
    );
    error(&client.get("/v1/agents?limit=0").await, 400, "bad_request");
    error(
        &client.get("/v1/agents?limit=101").await,
        400,
        "bad_request",
    );
    error(
        &client.get("/v1/agents?status=gone").await,
        400,
        "bad_request",
    );
}

async fn capabilities_are_a_registry_and_each_agent_has_an_ordered_unique_list(
    store: Arc<dyn Store>,
) {
    let platform = Platform::new(Arc::clone(&store), None);
    let client = serve(platform, ServerOptions::default()).await;
    let (status, registry) = client.get("/v1/capabilities").await;
    assert_eq!(status, 200);
    let listed: Vec<(&str, &str)> = registry["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        listed,
        [
            ("noop", "available"),
            ("current_time", "available"),
            ("research", "coming_soon"),
            ("sandbox", "coming_soon"),
            ("file_system", "coming_soon"),
        ]
    );
    let (_, time) = client.get("/v1/capabilities/current_time").await;
    assert_eq!(time["tools"], json!(["current_time"]));
    error(
        &client.get("/v1/capabilities/teleport").await,
        404,
        "not_found",
    );

    let agent = client
        .create("/v1/agents", json!({"name": "a", "system_prompt": ""}))
        .await;
    let path = format!("/v1/agents/{}/capabilities", agent["id"].as_str().unwrap());
    let (_, empty) = client.get(&path).await;
    assert_eq!(empty["total"], 0);
    let (status, set) = client
        .send(
            "PUT",
            &path,
            json!({"capabilities": ["current_time", "noop"]}),
        )
        .await;
    assert_eq!(status, 200, "{set}");
    let (_, read) = client.get(&path).await;
    let order: Vec<(&str, u64)> = read["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["capability_id"].as_str().unwrap(),
                c["position"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(order, [("current_time", 0), ("noop", 1)]);
    assert_eq!(read["data"][0]["agent_id"], agent["id"]);

    for (list, needle) in [
        (json!(["noop", "noop"]), "twice"),
        (json!(["sandbox"]), "coming soon"),
        (json!(["teleport"]), "no capability"),
    ] {
        let answer = client
            .send("PUT", &path, json!({"capabilities": list}))
            .await;
        error(&answer, 422, "invalid");
        let message = answer.1["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{message}");
    }
    // Refused changes left the list as it was.
    let (_, again) = client.get(&path).await;
    assert_eq!(again["data"], read["data"]);
    client
        .refuses(
            "PUT",
            &format!("/v1/agents/{}/capabilities", Uuid::now_v7()),
            json!({"capabilities": []}),
            404,
            "not_found",
        )
        .await;
}

async fn provider_keys_are_write_only_and_sealed_in_the_log(store: Arc<dyn Store>) {
    let platform = Platform::new(Arc::clone(&store), Some(master_keys("k1", "5a")));
    let client = serve(platform.clone(), ServerOptions::default()).await;
    let secret = "sk-test-DO-NOT-LEAK-1234567890";
    let (status, provider) = client
        .send(
            "POST",
            "/v1/llm-providers",
            json!({"name": "main", "provider_type": "anthropic", "api_key": secret,
                   "settings": {"region": "eu"}}),
        )
        .await;
    assert_eq!(status, 201, "{provider}");
    let id = uuid_v7(&provider["id"]);
    assert_eq!(provider["api_key_set"], true);
    assert!(provider.get("api_key").is_none());
    assert_eq!(provider["settings"], json!({"region": "eu"}));
    assert_eq!(provider["status"], "active");
    assert!(!provider.to_string().contains(secret));
    let (_, listed) = client.get("/v1/llm-providers").await;
    assert!(!listed.to_string().contains(secret));
    assert_eq!(
        platform.provider_key(id).await.unwrap().as_deref(),
        Some(secret)
    );

    // A new key is sealed afresh; null removes it.
    let (_, _) = client
        .send(
            "PATCH",
            &format!("/v1/llm-providers/{id}"),
            json!({"api_key": "sk-second"}),
        )
        .await;
    assert_eq!(
        platform.provider_key(id).await.unwrap().as_deref(),
        Some("sk-second")
    );
    let (_, removed) = client
        .send(
            "PATCH",
            &format!("/v1/llm-providers/{id}"),
            json!({"api_key": null}),
        )
        .await;
    assert_eq!(removed["api_key_set"], false);
    assert_eq!(platform.provider_key(id).await.unwrap(), None);

    // No event of the log holds a key in the clear.
    let log: SessionId = PLATFORM_LOG.parse().unwrap();
    let recorded = serde_json::to_string(&store.all_events(&log).await.unwrap()).unwrap();
    assert!(recorded.contains("llm_provider:saved"));
    assert!(!recorded.contains(secret) && !recorded.contains("sk-second"));

    // An unknown provider type, a base URL that is not HTTP, the read-only `api_key_set`.
    for bad in [
        json!({"name": "x", "provider_type": "bard"}),
        json!({"name": "x", "provider_type": "openai", "base_url": "ftp://x"}),
        json!({"name": "x", "provider_type": "openai", "api_key_set": true}),
    ] {
        client
            .refuses("POST", "/v1/llm-providers", bad, 422, "invalid")
            .await;
    }
}

async fn a_key_without_master_keys_is_refused_and_nothing_is_recorded(store: Arc<dyn Store>) {
    let platform = Platform::new(Arc::clone(&store), None);
    let client = serve(platform, ServerOptions::default()).await;
    let answer = client
        .send(
            "POST",
            "/v1/llm-providers",
            json!({"name": "x", "provider_type": "openai", "api_key": "sk-1"}),
        )
        .await;
    error(&answer, 503, "no_master_key");
    assert!(
        answer.1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("OPENHARNESS_MASTER_KEYS")
    );
    let log: SessionId = PLATFORM_LOG.parse().unwrap();
    assert!(store.all_events(&log).await.unwrap().is_empty());
    // Without a key a provider can be made.
    let (status, provider) = client
        .send(
            "POST",
            "/v1/llm-providers",
            json!({"name": "x", "provider_type": "azure_openai"}),
        )
        .await;
    assert_eq!(
        (status, provider["api_key_set"].as_bool()),
        (201, Some(false))
    );
}

async fn a_sealed_key_copied_to_another_row_or_under_an_unknown_master_key_does_not_open(
    store: Arc<dyn Store>,
) {
    let platform = Platform::new(Arc::clone(&store), Some(master_keys("k1", "5a")));
    let new = |name: &str, key: &str| -> NewProvider {
        serde_json::from_value(json!({"name": name, "provider_type": "openai", "api_key": key}))
            .unwrap()
    };
    let first = platform
        .create_provider(new("first", "sk-first"))
        .await
        .unwrap();
    let second = platform
        .create_provider(new("second", "sk-second"))
        .await
        .unwrap();

    // Copy the first row's ciphertext into the second row, as an attacker with write access
    // to the store could.
    let log: SessionId = PLATFORM_LOG.parse().unwrap();
    let events = store.all_events(&log).await.unwrap();
    let saved = |id: Uuid| {
        events
            .iter()
            .rfind(|e| e.name == "llm_provider:saved" && e.payload["id"] == id.to_string())
            .unwrap()
            .payload
            .clone()
    };
    let mut moved = saved(second.id);
    moved["api_key"] = saved(first.id)["api_key"].clone();
    let event = openharness_core::Envelope::new("llm_provider:saved", moved, None);
    store
        .append(&log, &[event], events.len() as u64)
        .await
        .unwrap();
    let err = platform.provider_key(second.id).await.unwrap_err();
    assert!(
        matches!(err, PlatformError::Keys(KeyError::Undecryptable { provider }) if provider == second.id),
        "{err}"
    );
    assert_eq!(
        platform.provider_key(first.id).await.unwrap().as_deref(),
        Some("sk-first")
    );

    // Another process configured with other master keys names the missing one.
    let elsewhere = Platform::new(Arc::clone(&store), Some(master_keys("k2", "a5")));
    let err = elsewhere.provider_key(first.id).await.unwrap_err();
    assert!(
        matches!(err, PlatformError::Keys(KeyError::UnknownKeyId { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("\"k1\""), "{err}");
    assert_eq!(
        openharness_server::ApiError::from(err).code,
        "unknown_master_key"
    );
}

async fn models_have_one_default_per_provider_and_refuse_deletes_in_use(store: Arc<dyn Store>) {
    let platform = Platform::new(Arc::clone(&store), None);
    let client = serve(platform, ServerOptions::default()).await;
    let provider = client
        .create(
            "/v1/llm-providers",
            json!({"name": "p", "provider_type": "openai"}),
        )
        .await;
    let other = client
        .create(
            "/v1/llm-providers",
            json!({"name": "q", "provider_type": "openai"}),
        )
        .await;
    let p = provider["id"].as_str().unwrap();
    let q = other["id"].as_str().unwrap();

    let (status, a) = client
        .send(
            "POST",
            &format!("/v1/llm-providers/{p}/models"),
            json!({"model_id": "gpt-a", "is_default": true, "features": ["tools"], "context_window": 128000}),
        )
        .await;
    assert_eq!(status, 201, "{a}");
    assert_eq!(a["display_name"], "gpt-a");
    assert_eq!(a["provider_id"], provider["id"]);
    uuid_v7(&a["id"]);
    let q_default = client
        .create(
            "/v1/llm-models",
            json!({"provider_id": q, "model_id": "gpt-a", "is_default": true}),
        )
        .await;
    let b = client
        .create(
            "/v1/llm-models",
            json!({"provider_id": p, "model_id": "gpt-b", "display_name": "B", "is_default": true}),
        )
        .await;
    let defaults = |page: &Value| -> Vec<String> {
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["is_default"] == true)
            .map(|m| m["model_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let (_, models) = client.get(&format!("/v1/llm-providers/{p}/models")).await;
    assert_eq!(models["total"], 2);
    assert_eq!(defaults(&models), ["gpt-b"]);
    // The other provider's default is untouched.
    let (_, q_models) = client.get(&format!("/v1/llm-models?provider_id={q}")).await;
    assert_eq!(defaults(&q_models), ["gpt-a"]);
    assert_eq!(q_models["data"][0]["id"], q_default["id"]);

    let a_id = a["id"].as_str().unwrap();
    let (_, a_again) = client
        .send(
            "PATCH",
            &format!("/v1/llm-models/{a_id}"),
            json!({"is_default": true}),
        )
        .await;
    assert_eq!(a_again["is_default"], true);
    let (_, models) = client.get(&format!("/v1/llm-providers/{p}/models")).await;
    assert_eq!(defaults(&models), ["gpt-a"]);

    client
        .refuses(
            "POST",
            &format!("/v1/llm-providers/{p}/models"),
            json!({"model_id": "gpt-b"}),
            409,
            "duplicate_model",
        )
        .await;
    client
        .refuses(
            "POST",
            &format!("/v1/llm-providers/{}/models", Uuid::now_v7()),
            json!({"model_id": "m"}),
            404,
            "not_found",
        )
        .await;
    client
        .refuses(
            "POST",
            "/v1/llm-models",
            json!({"provider_id": Uuid::now_v7(), "model_id": "m"}),
            422,
            "invalid",
        )
        .await;
    client
        .refuses(
            "PATCH",
            &format!("/v1/llm-models/{a_id}"),
            json!({"context_window": 0}),
            422,
            "invalid",
        )
        .await;

    // In use: an agent's default model, a provider with models.
    let (status, agent) = client
        .send(
            "POST",
            "/v1/agents",
            json!({"name": "a", "system_prompt": "", "default_model_id": b["id"]}),
        )
        .await;
    assert_eq!(status, 201, "{agent}");
    let b_id = b["id"].as_str().unwrap();
    error(
        &client
            .call("DELETE", &format!("/v1/llm-models/{b_id}"), None)
            .await,
        409,
        "model_in_use",
    );
    error(
        &client
            .call("DELETE", &format!("/v1/llm-providers/{p}"), None)
            .await,
        409,
        "provider_in_use",
    );
    client
        .send(
            "PATCH",
            &format!("/v1/agents/{}", agent["id"].as_str().unwrap()),
            json!({"default_model_id": null}),
        )
        .await;
    for model in [a_id, b_id] {
        let (status, _) = client
            .call("DELETE", &format!("/v1/llm-models/{model}"), None)
            .await;
        assert_eq!(status, 204);
    }
    let (status, _) = client
        .call("DELETE", &format!("/v1/llm-providers/{p}"), None)
        .await;
    assert_eq!(status, 204);
    error(
        &client.get(&format!("/v1/llm-providers/{p}")).await,
        404,
        "not_found",
    );
    error(
        &client.get(&format!("/v1/llm-providers/{p}/models")).await,
        404,
        "not_found",
    );
}

async fn one_default_provider_at_a_time(store: Arc<dyn Store>) {
    let platform = Platform::new(Arc::clone(&store), None);
    let client = serve(platform, ServerOptions::default()).await;
    for name in ["a", "b", "c"] {
        client
            .send(
                "POST",
                "/v1/llm-providers",
                json!({"name": name, "provider_type": "openai", "is_default": true}),
            )
            .await;
    }
    let (_, page) = client.get("/v1/llm-providers").await;
    let defaults: Vec<&str> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["is_default"] == true)
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(defaults, ["c"]);
}

#[tokio::test]
async fn resources_survive_a_restart_on_redb() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let keys = master_keys("k1", "3c");
    let (agent, provider) = {
        let store: Arc<dyn Store> = Arc::new(RedbStore::open(&path).unwrap());
        let client = serve(
            Platform::new(store, Some(keys.clone())),
            ServerOptions::default(),
        )
        .await;
        let agent = client
            .create("/v1/agents", json!({"name": "kept", "system_prompt": "p"}))
            .await;
        let provider = client
            .create(
                "/v1/llm-providers",
                json!({"name": "p", "provider_type": "openai", "api_key": "sk-kept"}),
            )
            .await;
        client
            .send(
                "PUT",
                &format!("/v1/agents/{}/capabilities", agent["id"].as_str().unwrap()),
                json!({"capabilities": ["noop"]}),
            )
            .await;
        (agent, provider)
    };
    // The first server still holds the file; a fresh store opens it once that one is dropped,
    // so read it through a copy: the file and its journal (`-journal`, which holds the appends
    // not yet checkpointed into the file), as one copies a SQLite file with its WAL.
    let copy = dir.path().join("copy.redb");
    std::fs::copy(&path, &copy).unwrap();
    let journal = dir.path().join("store.redb-journal");
    if journal.exists() {
        std::fs::copy(&journal, dir.path().join("copy.redb-journal")).unwrap();
    }
    let store: Arc<dyn Store> = Arc::new(RedbStore::open(&copy).unwrap());
    let platform = Platform::new(store, Some(keys));
    let client = serve(platform.clone(), ServerOptions::default()).await;
    let id = agent["id"].as_str().unwrap();
    let (_, read) = client.get(&format!("/v1/agents/{id}")).await;
    let mut expected = agent.clone();
    expected["capabilities"] = json!([{"ref": "noop"}]);
    assert_eq!(read, expected);
    let (_, capabilities) = client.get(&format!("/v1/agents/{id}/capabilities")).await;
    assert_eq!(capabilities["data"][0]["capability_id"], "noop");
    let provider_id: Uuid = provider["id"].as_str().unwrap().parse().unwrap();
    assert_eq!(
        platform.provider_key(provider_id).await.unwrap().as_deref(),
        Some("sk-kept")
    );
}

async fn two_replicas_over_one_store_conflict_instead_of_overwriting(store: Arc<dyn Store>) {
    let one = Platform::new(Arc::clone(&store), None);
    let two = Platform::new(Arc::clone(&store), None);
    let provider = one
        .create_provider(
            serde_json::from_value(json!({"name": "p", "provider_type": "openai"})).unwrap(),
        )
        .await
        .unwrap();
    // Many concurrent writers on both replicas, each making its model the default.
    let mut tasks = Vec::new();
    for n in 0..24 {
        let replica = if n % 2 == 0 { one.clone() } else { two.clone() };
        let model: NewModel = serde_json::from_value(json!({
            "provider_id": provider.id, "model_id": format!("m{n}"), "is_default": true
        }))
        .unwrap();
        tasks.push(tokio::spawn(
            async move { replica.create_model(model).await },
        ));
    }
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    for replica in [&one, &two] {
        let models = replica.models(Some(provider.id)).await.unwrap();
        assert_eq!(models.len(), 24);
        assert_eq!(models.iter().filter(|m| m.is_default).count(), 1);
    }
    // A replica sees what the other wrote.
    let agent = two
        .create_agent(serde_json::from_value(json!({"name": "x", "system_prompt": ""})).unwrap())
        .await
        .unwrap();
    assert_eq!(one.agent(agent.id).await.unwrap(), agent);
}

async fn keys_are_required_when_configured(store: Arc<dyn Store>) {
    let platform = Platform::new(Arc::clone(&store), None);
    let mut client = serve(platform, common::client::keyed("s3cret")).await;
    error(&client.get("/v1/agents").await, 401, "unauthorized");
    client.set_key("guess");
    error(&client.get("/v1/agents").await, 401, "unauthorized");
    client.set_key("s3cret");
    assert_eq!(client.get("/v1/agents").await.0, 200);
    // The bare key in `Authorization`, as the Everruns SDK's management client sends it.
    let bare = http::Client::new(client.http.addr);
    for (key, status) in [("s3cret", 200), ("guess", 401)] {
        let answer = bare
            .call("GET", "/v1/agents", None, &[("authorization", key)])
            .await;
        assert_eq!(answer.status, status, "{key}");
    }
}

async fn sessions_belong_to_an_agent_and_read_their_status_from_their_log(store: Arc<dyn Store>) {
    let platform = Platform::new(Arc::clone(&store), None);
    let client = serve(platform, ServerOptions::default()).await;
    let agent = client
        .create("/v1/agents", json!({"name": "a", "system_prompt": ""}))
        .await;
    let other = client
        .create("/v1/agents", json!({"name": "b", "system_prompt": ""}))
        .await;
    let provider = client
        .create(
            "/v1/llm-providers",
            json!({"name": "p", "provider_type": "openai"}),
        )
        .await;
    let model = client
        .create(
            "/v1/llm-models",
            json!({"provider_id": provider["id"], "model_id": "m"}),
        )
        .await;
    let a = agent["id"].as_str().unwrap();
    let sessions = format!("/v1/agents/{a}/sessions");

    let (status, session) = client
        .send(
            "POST",
            &sessions,
            json!({"title": "Trip", "model_id": model["id"]}),
        )
        .await;
    assert_eq!(status, 201, "{session}");
    let id = uuid_v7(&session["id"]);
    assert_eq!(session["agent_id"], agent["id"]);
    assert_eq!(session["status"], "pending");
    assert_eq!(session["started_at"], Value::Null);
    assert_eq!(session["finished_at"], Value::Null);
    assert_eq!(session["tags"], json!([]));
    let path = format!("{sessions}/{id}");
    let (_, read) = client.get(&path).await;
    assert_eq!(read, session);
    let (_, page) = client.get(&sessions).await;
    assert_eq!(
        (page["total"].as_u64(), &page["data"][0]),
        (Some(1), &session)
    );
    // Another agent's path does not find it.
    let b = other["id"].as_str().unwrap();
    error(
        &client.get(&format!("/v1/agents/{b}/sessions/{id}")).await,
        404,
        "not_found",
    );
    client
        .refuses(
            "POST",
            &sessions,
            json!({"model_id": Uuid::now_v7()}),
            422,
            "invalid",
        )
        .await;
    let (_, renamed) = client
        .send("PATCH", &path, json!({"title": null, "tags": ["x"]}))
        .await;
    assert_eq!(
        (&renamed["title"], &renamed["tags"]),
        (&Value::Null, &json!(["x"]))
    );

    // Its status follows its log: a turn under way, ended, failed.
    let log: SessionId = id.to_string().parse().unwrap();
    let event =
        |name: &'static str, payload: Value| openharness_core::Envelope::new(name, payload, None);
    store
        .append(
            &log,
            &[
                event("workflow:started", json!({"workflow": "agent-chat"})),
                event("user:input", json!({"text": "hi"})),
            ],
            0,
        )
        .await
        .unwrap();
    let (_, running) = client.get(&path).await;
    assert_eq!(running["status"], "running");
    assert!(running["started_at"].is_string());
    assert_eq!(running["finished_at"], Value::Null);
    error(
        &client.call("DELETE", &path, None).await,
        409,
        "session_busy",
    );
    store
        .append(
            &log,
            &[event(
                "workflow:completed",
                json!({"reason": "idle", "errors": 1}),
            )],
            2,
        )
        .await
        .unwrap();
    let (_, failed) = client.get(&path).await;
    assert_eq!(failed["status"], "failed");
    assert!(failed["finished_at"].is_string());
    store
        .append(&log, &[event("user:input", json!({"text": "again"}))], 3)
        .await
        .unwrap();
    store
        .append(
            &log,
            &[event(
                "workflow:completed",
                json!({"reason": "idle", "errors": 0}),
            )],
            4,
        )
        .await
        .unwrap();
    let (_, pending) = client.get(&path).await;
    assert_eq!(pending["status"], "pending");

    // What it uses cannot go while it is there.
    error(
        &client
            .call("DELETE", &format!("/v1/agents/{a}?permanent=true"), None)
            .await,
        409,
        "agent_has_sessions",
    );
    let model_path = format!("/v1/llm-models/{}", model["id"].as_str().unwrap());
    error(
        &client.call("DELETE", &model_path, None).await,
        409,
        "model_in_use",
    );

    let (status, _) = client.call("DELETE", &path, None).await;
    assert_eq!(status, 204);
    error(&client.get(&path).await, 404, "not_found");
    assert!(store.all_events(&log).await.unwrap().is_empty());
    let (status, _) = client.call("DELETE", &model_path, None).await;
    assert_eq!(status, 204);

    // An archived agent starts no session.
    client
        .call("POST", &format!("/v1/agents/{a}/archive"), None)
        .await;
    client
        .refuses("POST", &sessions, json!({}), 409, "agent_archived")
        .await;
    let (status, _) = client
        .call("DELETE", &format!("/v1/agents/{a}"), None)
        .await;
    assert_eq!(status, 204);
}

async fn messages_continue_the_session_and_are_a_projection_of_its_log(store: Arc<dyn Store>) {
    use openharness_provider::{Reply, ScriptedProvider};
    let scripted = ScriptedProvider::new().fallback("assistant", |request| {
        let latest = request.latest_user_text().unwrap_or_default();
        Reply::output(json!(format!("echo: {latest}")))
    });
    let platform =
        Platform::new(Arc::clone(&store), None).with_provider(Arc::new(scripted.clone()));
    let client = serve(platform, ServerOptions::default()).await;
    let provider = client
        .create(
            "/v1/llm-providers",
            json!({"name": "p", "provider_type": "openai"}),
        )
        .await;
    let mut models = Vec::new();
    for name in ["m-1", "m-2"] {
        let model = client
            .create(
                "/v1/llm-models",
                json!({"provider_id": provider["id"], "model_id": name}),
            )
            .await;
        models.push(model["id"].clone());
    }
    let agent = client
        .create(
            "/v1/agents",
            json!({"name": "a", "system_prompt": "You are terse.", "default_model_id": models[0]}),
        )
        .await;
    let a = agent["id"].as_str().unwrap();
    client
        .send(
            "PUT",
            &format!("/v1/agents/{a}/capabilities"),
            json!({"capabilities": ["current_time"]}),
        )
        .await;
    let path = client.session(a).await;
    let messages = format!("{path}/messages");

    let wait_pending = || {
        eventually(LIMIT, "the turn to end", || async {
            let (_, read) = client.get(&path).await;
            if read["status"] == "pending" && read["finished_at"].is_string() {
                Ok(read)
            } else {
                Err(read)
            }
        })
    };

    let (status, posted) = client
        .send(
            "POST",
            &messages,
            json!({"content": [{"type": "text", "text": "Hello"}]}),
        )
        .await;
    assert_eq!(status, 201, "{posted}");
    uuid_v7(&posted["id"]);
    assert_eq!(posted["role"], "user");
    assert_eq!(
        posted["session_id"],
        messages.split('/').nth_back(1).unwrap()
    );
    assert_eq!(
        posted["content"],
        json!([{"type": "text", "text": "Hello"}])
    );
    assert_eq!(posted["sequence"], 1, "workflow:started is seq 0");
    wait_pending().await;

    let (status, second) = client
        .send(
            "POST",
            &messages,
            json!({"role": "user", "content": [{"type": "text", "text": "Again"}],
                   "controls": {"model_id": models[1], "reasoning": {"effort": "low"}},
                   "metadata": {"client": "test", "n": 2}, "tags": ["second", "x"]}),
        )
        .await;
    assert_eq!(status, 201, "{second}");
    // Controls, metadata and tags are kept with the message, as posted.
    assert_eq!(
        second["controls"],
        json!({"model_id": models[1], "reasoning": {"effort": "low"}})
    );
    assert_eq!(second["metadata"], json!({"client": "test", "n": 2}));
    assert_eq!(second["tags"], json!(["second", "x"]));
    assert_eq!(posted["controls"], Value::Null);
    assert_eq!(posted["tags"], json!([]));
    wait_pending().await;

    let (_, page) = client.get(&messages).await;
    let said: Vec<(&str, &str)> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap(),
                m["content"][0]["text"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        said,
        [
            ("user", "Hello"),
            ("assistant", "echo: Hello"),
            ("user", "Again"),
            ("assistant", "echo: Again")
        ]
    );
    assert_eq!(page["data"][0], posted);
    assert_eq!(page["data"][2], second);
    let sequences: Vec<u64> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["sequence"].as_u64().unwrap())
        .collect();
    assert!(sequences.windows(2).all(|w| w[0] < w[1]), "{sequences:?}");
    // The same on every read: ids are the events' ids.
    let (_, again) = client.get(&messages).await;
    assert_eq!(again, page);

    // The model came from the agent, then from the message; the system prompt is the agent's
    // with its capability's addition; the conversation went as role-correct messages and the
    // reply was asked for as text; the capability's tool was offered.
    let requests = scripted.requests();
    let asked: Vec<Option<&str>> = requests.iter().map(|r| r.model.as_deref()).collect();
    assert_eq!(asked, [Some("m-1"), Some("m-2")]);
    let system = requests[0].system.as_deref().unwrap();
    assert!(system.starts_with("You are terse."), "{system}");
    assert!(system.contains("`current_time` tool"), "{system}");
    assert!(requests[0].wants_text(), "{}", requests[0].schema);
    assert_eq!(requests[1].prompt, "", "the conversation says it all");
    assert_eq!(
        requests[1].messages,
        [
            openharness_core::ChatMessage::user("Hello"),
            openharness_core::ChatMessage::assistant("echo: Hello"),
            openharness_core::ChatMessage::user("Again"),
        ]
    );
    assert_eq!(requests[0].tools.names(), ["current_time"]);

    // Only user text and images can be posted (image parts: tests/content.rs).
    for bad in [
        json!({"content": [{"type": "tool_call", "id": "c", "name": "t", "arguments": {}}]}),
        json!({"role": "assistant", "content": [{"type": "text", "text": "x"}]}),
        json!({"content": []}),
        json!({"content": [{"type": "text", "text": "x"}], "controls": {"model_id": Uuid::now_v7()}}),
        json!({"content": [{"type": "text", "text": "x"}], "metadata": [1, 2]}),
        json!({"content": [{"type": "text", "text": "x"}], "tags": [""]}),
    ] {
        client.refuses("POST", &messages, bad, 422, "invalid").await;
    }
    client
        .refuses(
            "POST",
            &format!("/v1/agents/{a}/sessions/{}/messages", Uuid::now_v7()),
            json!({"content": [{"type": "text", "text": "x"}]}),
            404,
            "not_found",
        )
        .await;

    // Without an override, the model's provider row answers: this one has no key.
    let bare = serve(
        Platform::new(Arc::clone(&store), None),
        ServerOptions::default(),
    )
    .await;
    let answer = bare
        .send(
            "POST",
            &messages,
            json!({"content": [{"type": "text", "text": "x"}]}),
        )
        .await;
    error(&answer, 422, "invalid");
    assert!(
        answer.1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no API key")
    );
}

async fn a_provider_row_answers_with_its_opened_key(store: Arc<dyn Store>) {
    use openharness_provider::testing::FakeServer;
    use openharness_provider::testing::anthropic::{KEY, text};
    let fake = FakeServer::anthropic(KEY).await.unwrap();
    fake.respond(text("from the fake"));
    let platform = Platform::new(Arc::clone(&store), Some(master_keys("k1", "4d")));
    let client = serve(platform, ServerOptions::default()).await;
    // No model anywhere and no default: nothing can answer.
    let a = &client.agent("a", "Be kind.").await;
    let path = client.session(a).await;
    let hello = json!({"content": [{"type": "text", "text": "Hello"}]});
    client
        .refuses(
            "POST",
            &format!("{path}/messages"),
            hello.clone(),
            503,
            "no_provider",
        )
        .await;

    // The default provider's default model answers, with the key the platform keeps.
    client
        .default_model(
            json!({"name": "fake", "provider_type": "anthropic", "api_key": KEY,
                   "base_url": fake.base_url(), "is_default": true}),
            "claude-fake",
        )
        .await;
    let (status, posted) = client
        .send("POST", &format!("{path}/messages"), hello)
        .await;
    assert_eq!(status, 201, "{posted}");
    let said = texts_once(&client, &format!("{path}/messages"), 2).await;
    assert_eq!(said, ["Hello", "from the fake"]);
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header("x-api-key"), Some(KEY));
    assert_eq!(requests[0].body["model"], "claude-fake");
    // The key is in no event of the session's log.
    let log: SessionId = path.rsplit('/').next().unwrap().parse().unwrap();
    let recorded = serde_json::to_string(&store.all_events(&log).await.unwrap()).unwrap();
    assert!(recorded.contains("from the fake") && !recorded.contains(KEY));
}

async fn an_azure_openai_row_answers_through_its_v1_address(store: Arc<dyn Store>) {
    use openharness_provider::testing::FakeServer;
    use openharness_provider::testing::openai::{KEY, text};
    let fake = FakeServer::openai(KEY).await.unwrap();
    fake.respond(text("from azure"));
    let platform = Platform::new(Arc::clone(&store), Some(master_keys("k1", "4e")));
    let client = serve(platform, ServerOptions::default()).await;
    // Without its base_url an azure_openai row cannot answer: 422 saying what to set.
    let p = client
        .default_model(
            json!({"name": "azure", "provider_type": "azure_openai", "api_key": KEY, "is_default": true}),
            "my-gpt-deployment",
        )
        .await;
    let a = &client.agent("a", "Hi.").await;
    let messages = format!("{}/messages", client.session(a).await);
    let hello = json!({"content": [{"type": "text", "text": "Hello"}]});
    let refused = client.send("POST", &messages, hello.clone()).await;
    error(&refused, 422, "invalid");
    assert!(
        refused.1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("openai.azure.com/openai/v1"),
        "{}",
        refused.1
    );
    // With it (here the fake's address), the deployment is asked with the row's key.
    let (status, _) = client
        .send(
            "PATCH",
            &format!("/v1/llm-providers/{p}"),
            json!({"base_url": fake.base_url()}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, posted) = client.send("POST", &messages, hello).await;
    assert_eq!(status, 201, "{posted}");
    let said = texts_once(&client, &messages, 2).await;
    assert_eq!(said, ["Hello", "from azure"]);
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body["model"], "my-gpt-deployment");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

/// The SSE text of `response` up to and including its `session.completed` frame.
async fn read_until_completed(events: &mut http::Events) -> String {
    let frames = events
        .until(LIMIT, |frame| {
            frame.event.as_deref() == Some("turn.completed")
        })
        .await;
    frames
        .iter()
        .map(|frame| {
            let id = frame.id.as_ref().map(|id| format!("id: {id}\n"));
            let event = frame.event.as_ref().map(|e| format!("event: {e}\n"));
            format!(
                "{}{}data: {}\n\n",
                id.unwrap_or_default(),
                event.unwrap_or_default(),
                frame.data
            )
        })
        .collect()
}

async fn events_are_notifications_as_a_page_and_a_resumable_stream(store: Arc<dyn Store>) {
    use openharness_provider::{Reply, ScriptedProvider};
    let scripted = ScriptedProvider::new().fallback("assistant", |_| {
        Reply::output(json!("Hi there")).text("Hi there")
    });
    let platform =
        Platform::new(Arc::clone(&store), None).with_provider(Arc::new(scripted.clone()));
    let client = serve(platform, ServerOptions::default()).await;
    let a = &client.agent("a", "p").await;
    let path = client.session(a).await;
    let (_, empty) = client.get(&format!("{path}/events")).await;
    assert_eq!(empty["total"], 0);
    let (_, posted) = client.say(&path, "Hello").await;
    let events = format!("{path}/events?limit=100");
    let page = eventually(LIMIT, "a session.completed notification", || async {
        let page = client.get(&events).await.1;
        let completed = page["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["type"] == "session.completed");
        if completed { Ok(page) } else { Err(page) }
    })
    .await;
    let notes = page["data"].as_array().unwrap();
    let kinds: Vec<&str> = notes.iter().map(|n| n["type"].as_str().unwrap()).collect();
    // The reply streams as deltas (as many as the model sends), then is recorded with the
    // step's end in one append.
    let deltas = kinds.iter().filter(|k| **k == "message.delta").count();
    assert!(deltas > 0, "{kinds:?}");
    let without_deltas: Vec<&str> = kinds
        .iter()
        .copied()
        .filter(|k| *k != "message.delta")
        .collect();
    assert_eq!(
        without_deltas,
        [
            "session.started",
            "message.created",
            "step.started",
            "step.generating",
            "message.created",
            "output.message.completed",
            "step.generated",
            "session.completed",
            "turn.completed"
        ]
    );
    // The model's first text is two notifications of one event: `step.generating`, then its
    // `message.delta`.
    assert_eq!(kinds[3..5], ["step.generating", "message.delta"]);
    assert_eq!(notes[3]["sequence"], notes[4]["sequence"]);
    assert_ne!(notes[3]["id"], notes[4]["id"]);
    assert_eq!(notes[3]["data"]["agentName"], "assistant");
    assert!(notes[3]["data"].get("delta").is_none(), "{}", notes[3]);
    assert_eq!(notes[1]["data"], posted);
    assert_eq!(notes[1]["id"], posted["id"]);
    let reply = notes
        .iter()
        .rfind(|n| n["type"] == "message.created")
        .unwrap();
    assert_eq!(reply["data"]["role"], "assistant");
    assert_eq!(reply["data"]["content"][0]["text"], "Hi there");
    let after = notes[1]["sequence"].as_u64().unwrap();
    let (_, rest) = client.get(&format!("{path}/events?after={after}")).await;
    assert_eq!(rest["data"].as_array().unwrap()[..], notes[2..]);

    // The stream resumes after Last-Event-ID: the rest, each once, in order.
    let mut response = client
        .http
        .events(
            &format!("{path}/events"),
            &[("last-event-id", &after.to_string())],
        )
        .await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    let text = read_until_completed(&mut response).await;
    let ids: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("id: "))
        .collect();
    // A frame's id is its sequence, or `sequence.0` for the first of two notifications of one
    // event (a `step.generating` before its `message.delta`, a reply's `message.created`
    // before its `output.message.completed`, `session.completed` before `turn.completed`).
    let expected: Vec<String> = notes[2..]
        .iter()
        .zip(notes[3..].iter().map(Some).chain([None]))
        .map(|(n, next)| match next {
            Some(next) if next["sequence"] == n["sequence"] => format!("{}.0", n["sequence"]),
            _ => n["sequence"].to_string(),
        })
        .collect();
    assert_eq!(ids, expected, "{text}");
    // Each has `ts` (the Everruns SDK requires it), and the reply's second notification
    // carries the message `AgentClient.run` reads.
    assert!(notes.iter().all(|n| n["ts"] == n["created_at"]));
    let completed = notes
        .iter()
        .find(|n| n["type"] == "output.message.completed")
        .unwrap();
    assert_eq!(
        completed["data"]["message"]["content"][0]["text"],
        "Hi there"
    );

    // `since_id` resumes after a notification by its id, even the first of an event's two;
    // `types` and `exclude` filter.
    let (_, since) = client
        .get(&format!(
            "{path}/events?since_id={}",
            notes[3]["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(since["data"].as_array().unwrap()[..], notes[4..]);
    let (_, turns) = client
        .get(&format!(
            "{path}/events?types=turn.completed,session.started"
        ))
        .await;
    let turns: Vec<&Value> = turns["data"].as_array().unwrap().iter().collect();
    assert_eq!(turns, [&notes[0], notes.last().unwrap()]);
    let (_, quiet) = client
        .get(&format!(
            "{path}/events?exclude=message.delta&exclude=step.generating&after_sequence=0"
        ))
        .await;
    assert!(
        quiet["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n["type"] != "message.delta"
                && n["type"] != "step.generating"
                && n["sequence"] != 0),
        "{quiet}"
    );
    // Cursors together all hold: after the later of them.
    let (_, both) = client
        .get(&format!(
            "{path}/events?since_id={}&after_sequence={}",
            notes[3]["id"].as_str().unwrap(),
            notes[5]["sequence"]
        ))
        .await;
    let later = notes[5]["sequence"].as_u64().unwrap();
    let expected: Vec<&Value> = notes
        .iter()
        .filter(|n| n["sequence"].as_u64().unwrap() > later)
        .collect();
    let both: Vec<&Value> = both["data"].as_array().unwrap().iter().collect();
    assert_eq!(both, expected);
    error(
        &client
            .call("GET", &format!("{path}/events?since_id=x"), None)
            .await,
        400,
        "bad_request",
    );
    error(
        &client
            .call(
                "GET",
                &format!("{path}/events?since_id={}", Uuid::now_v7()),
                None,
            )
            .await,
        404,
        "not_found",
    );
    let streamed: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("event: "))
        .collect();
    assert_eq!(streamed, kinds[2..]);

    // Resuming between `step.generating` and its `message.delta` sends the delta, once.
    let generating = notes[3]["sequence"].as_u64().unwrap();
    let mut response = client
        .http
        .events(
            &format!("{path}/events"),
            &[("last-event-id", &format!("{generating}.0"))],
        )
        .await;
    let text = read_until_completed(&mut response).await;
    let streamed: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("event: "))
        .collect();
    assert_eq!(streamed, kinds[4..]);
    assert!(text.contains(&format!("id: {generating}\n")), "{text}");

    // A page never ends between the two: one cut there holds the delta too, so going on
    // `?after=` its last sequence misses nothing.
    let (_, cut) = client.get(&format!("{path}/events?limit=4")).await;
    let cut = cut["data"].as_array().unwrap().clone();
    assert_eq!(cut[..], notes[..5]);
    let (_, rest) = client
        .get(&format!("{path}/events?after={}", cut[4]["sequence"]))
        .await;
    assert_eq!(rest["data"].as_array().unwrap()[..], notes[5..]);
    let (_, from_generating) = client.get(&format!("{path}/events?offset=3&limit=1")).await;
    assert_eq!(from_generating["data"].as_array().unwrap()[..], notes[3..5]);
    let (_, one) = client.get(&format!("{path}/events?offset=4&limit=1")).await;
    assert_eq!(one["data"].as_array().unwrap()[..], notes[4..5]);
    for bad in ["x", "4.x", "4.", ".0", "-1"] {
        let answer = client
            .http
            .events(&format!("{path}/events"), &[("last-event-id", bad)])
            .await;
        assert_eq!(answer.status, 400, "Last-Event-ID `{bad}`");
    }
    error(
        &client
            .call(
                "GET",
                &format!("/v1/agents/{a}/sessions/{}/events", Uuid::now_v7()),
                None,
            )
            .await,
        404,
        "not_found",
    );
}

on_every_store!(
    a_provider_row_answers_with_its_opened_key,
    an_azure_openai_row_answers_through_its_v1_address,
    events_are_notifications_as_a_page_and_a_resumable_stream,
    messages_continue_the_session_and_are_a_projection_of_its_log,
    agents_are_created_read_changed_archived_and_deleted,
    bad_input_is_answered_in_the_error_shape,
    capabilities_are_a_registry_and_each_agent_has_an_ordered_unique_list,
    provider_keys_are_write_only_and_sealed_in_the_log,
    a_key_without_master_keys_is_refused_and_nothing_is_recorded,
    a_sealed_key_copied_to_another_row_or_under_an_unknown_master_key_does_not_open,
    models_have_one_default_per_provider_and_refuse_deletes_in_use,
    one_default_provider_at_a_time,
    keys_are_required_when_configured,
    sessions_belong_to_an_agent_and_read_their_status_from_their_log,
    two_replicas_over_one_store_conflict_instead_of_overwriting,
);
