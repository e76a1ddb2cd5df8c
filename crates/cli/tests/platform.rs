//! `openharness platform rotate-keys`: every provider key of the store is re-sealed under the
//! newest master key, so the older one can be dropped; a row under a key id that is not
//! configured fails, naming it, with nothing changed.
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use openharness::store::RedbStore;
use openharness_platform::{MasterKeys, NewProvider, Platform};

fn key(id: &str, byte: &str) -> String {
    format!("{id}:{}", byte.repeat(32))
}

fn rotate(store: &Path, keys: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_openharness"));
    command
        .args(["platform", "rotate-keys", "--store"])
        .arg(store)
        .env_remove("OPENHARNESS_STORE")
        .env_remove("OPENHARNESS_MASTER_KEYS")
        .env_remove("OPENHARNESS_MASTER_KEYS_FILE");
    if let Some(keys) = keys {
        command.env("OPENHARNESS_MASTER_KEYS", keys);
    }
    command.output().unwrap()
}

/// Runs `work` on a platform over the redb store at `path`, closing the store afterwards.
fn with_platform<T>(path: &Path, keys: &str, work: impl AsyncFnOnce(Platform) -> T) -> T {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = Arc::new(RedbStore::open(path).unwrap());
        work(Platform::new(store, Some(MasterKeys::parse(keys).unwrap()))).await
    })
}

#[test]
fn rotate_keys_reseals_every_provider_key_under_the_newest_master_key() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.redb");
    let k1 = key("k1", "11");
    let ids = with_platform(&store, &k1, async |platform| {
        let mut ids = Vec::new();
        for (name, api_key) in [("first", Some("sk-first")), ("second", Some("sk-second"))] {
            let new: NewProvider = serde_json::from_value(serde_json::json!({
                "name": name, "provider_type": "anthropic", "api_key": api_key,
            }))
            .unwrap();
            ids.push(platform.create_provider(new).await.unwrap().id);
        }
        let keyless: NewProvider =
            serde_json::from_str(r#"{"name":"keyless","provider_type":"openai"}"#).unwrap();
        platform.create_provider(keyless).await.unwrap();
        ids
    });

    // Key 2 is added; the rotation moves both keyed rows to it.
    let both = format!("{k1},{}", key("k2", "22"));
    let out = rotate(&store, Some(&both));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.trim(),
        "Re-sealed 2 provider API keys under master key k2 (0 already under it, 1 provider without a key)."
    );
    assert!(!stdout.contains("sk-"));

    // Key 1 can go: key 2 alone opens both.
    let opened = with_platform(&store, &key("k2", "22"), async |platform| {
        let mut opened = Vec::new();
        for id in &ids {
            opened.push(platform.provider_key(*id).await.unwrap().unwrap());
        }
        opened
    });
    assert_eq!(opened, ["sk-first", "sk-second"]);

    // Again: nothing to do.
    let out = rotate(&store, Some(&key("k2", "22")));
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("Re-sealed 0 provider API keys"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // Only key 3: the rows' key id is not configured, and the error says which.
    let out = rotate(&store, Some(&key("k3", "33")));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error: ") && stderr.contains("\"k2\"") && stderr.contains("\"k3\""),
        "{stderr}"
    );
    assert!(stderr.contains("OPENHARNESS_MASTER_KEYS"), "{stderr}");

    // No master keys at all: how to configure them.
    let out = rotate(&store, None);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no master key is configured"), "{stderr}");
}

#[test]
fn rotate_keys_needs_an_existing_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("typo.redb");
    let out = rotate(&store, Some(&key("k1", "11")));
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("there is no store at"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!store.exists());
}
