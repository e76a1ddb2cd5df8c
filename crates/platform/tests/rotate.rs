//! Master key rotation ([`Platform::rotate_keys`]): every provider key is re-sealed under the
//! newest master key in one append to the platform log, so a row sealed under key 1 opens with
//! key 2 alone afterwards; a ciphertext copied to another row still does not open; a row under
//! a key id that is not configured fails the rotation, naming it, and changes nothing. Runs on
//! a `MemoryStore`, and on PostgreSQL when `OPENHARNESS_TEST_POSTGRES` is set.
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;

use openharness_core::{SessionId, Store};
use openharness_platform::{
    KeyError, MasterKeys, NewProvider, PLATFORM_LOG, Platform, PlatformError,
};
use serde_json::{Value, json};
use uuid::Uuid;

mod common;
use common::on_every_store;

fn keys(text: &[(&str, &str)]) -> MasterKeys {
    let text: Vec<String> = text
        .iter()
        .map(|(id, byte)| format!("{id}:{}", byte.repeat(32)))
        .collect();
    MasterKeys::parse(&text.join(",")).unwrap()
}

fn provider(name: &str, key: Option<&str>) -> NewProvider {
    serde_json::from_value(json!({"name": name, "provider_type": "anthropic", "api_key": key}))
        .unwrap()
}

fn log() -> SessionId {
    PLATFORM_LOG.parse().unwrap()
}

/// The last `llm_provider:saved` payload of `id` in the platform log.
async fn saved(store: &Arc<dyn Store>, id: Uuid) -> Value {
    store
        .all_events(&log())
        .await
        .unwrap()
        .iter()
        .rfind(|e| e.name == "llm_provider:saved" && e.payload["id"] == id.to_string())
        .unwrap()
        .payload
        .clone()
}

async fn log_len(store: &Arc<dyn Store>) -> u64 {
    store.all_events(&log()).await.unwrap().len() as u64
}

async fn a_row_sealed_under_key_1_opens_with_key_2_alone_after_rotation(store: Arc<dyn Store>) {
    let before = Platform::new(Arc::clone(&store), Some(keys(&[("k1", "11")])));
    let first = before
        .create_provider(provider("first", Some("sk-first")))
        .await
        .unwrap();
    let second = before
        .create_provider(provider("second", Some("sk-second")))
        .await
        .unwrap();
    before
        .create_provider(provider("keyless", None))
        .await
        .unwrap();
    assert_eq!(saved(&store, first.id).await["api_key"]["key_id"], "k1");

    let both = Platform::new(
        Arc::clone(&store),
        Some(keys(&[("k1", "11"), ("k2", "22")])),
    );
    let len = log_len(&store).await;
    let rotation = both.rotate_keys().await.unwrap();
    assert_eq!(rotation.key_id, "k2");
    assert_eq!(
        (rotation.resealed, rotation.current, rotation.without_key),
        (2, 0, 1)
    );
    // Recorded as events of the platform log, one per re-sealed row, no key in plain.
    let events = store.all_events(&log()).await.unwrap();
    let appended = &events[usize::try_from(len).unwrap()..];
    assert_eq!(appended.len(), 2);
    assert!(appended.iter().all(|e| e.name == "llm_provider:saved"));
    let text = serde_json::to_string(&events).unwrap();
    assert!(!text.contains("sk-first") && !text.contains("sk-second"));
    assert_eq!(saved(&store, first.id).await["api_key"]["key_id"], "k2");

    // Key 1 can go: key 2 alone opens both rows, on a fresh process.
    let after = Platform::new(Arc::clone(&store), Some(keys(&[("k2", "22")])));
    assert_eq!(
        after.provider_key(first.id).await.unwrap().as_deref(),
        Some("sk-first")
    );
    assert_eq!(
        after.provider_key(second.id).await.unwrap().as_deref(),
        Some("sk-second")
    );
    // The API still tells only that a key is set.
    assert!(after.provider(first.id).await.unwrap().api_key_set);

    // A second rotation has nothing to do and records nothing.
    let len = log_len(&store).await;
    let again = after.rotate_keys().await.unwrap();
    assert_eq!((again.resealed, again.current), (0, 2));
    assert_eq!(log_len(&store).await, len);
}

async fn a_ciphertext_copied_to_another_row_still_fails(store: Arc<dyn Store>) {
    let k1 = Platform::new(Arc::clone(&store), Some(keys(&[("k1", "11")])));
    let first = k1
        .create_provider(provider("first", Some("sk-first")))
        .await
        .unwrap();
    let second = k1
        .create_provider(provider("second", Some("sk-second")))
        .await
        .unwrap();
    let platform = Platform::new(
        Arc::clone(&store),
        Some(keys(&[("k1", "11"), ("k2", "22")])),
    );
    platform.rotate_keys().await.unwrap();

    // Copy the first row's re-sealed ciphertext into the second row, as someone with write
    // access to the store could.
    let mut moved = saved(&store, second.id).await;
    moved["api_key"] = saved(&store, first.id).await["api_key"].clone();
    assert_eq!(moved["api_key"]["key_id"], "k2");
    let len = log_len(&store).await;
    let event = openharness_core::Envelope::new("llm_provider:saved", moved, None);
    store.append(&log(), &[event], len).await.unwrap();
    let err = platform.provider_key(second.id).await.unwrap_err();
    assert!(
        matches!(err, PlatformError::Keys(KeyError::Undecryptable { provider }) if provider == second.id),
        "{err}"
    );
    assert_eq!(
        platform.provider_key(first.id).await.unwrap().as_deref(),
        Some("sk-first")
    );

    // With a row that does not open, a rotation (under a newer key) fails and changes nothing.
    let three = Platform::new(
        Arc::clone(&store),
        Some(keys(&[("k1", "11"), ("k2", "22"), ("k3", "33")])),
    );
    let len = log_len(&store).await;
    let err = three.rotate_keys().await.unwrap_err();
    assert!(
        matches!(err, PlatformError::Keys(KeyError::Undecryptable { provider }) if provider == second.id),
        "{err}"
    );
    assert_eq!(log_len(&store).await, len);
}

async fn an_unknown_key_id_fails_the_rotation_naming_it(store: Arc<dyn Store>) {
    let k1 = Platform::new(Arc::clone(&store), Some(keys(&[("k1", "11")])));
    let first = k1
        .create_provider(provider("first", Some("sk-first")))
        .await
        .unwrap();
    // Key 1 was dropped before the rotation: the row cannot be re-sealed.
    let k2 = Platform::new(Arc::clone(&store), Some(keys(&[("k2", "22")])));
    let len = log_len(&store).await;
    let err = k2.rotate_keys().await.unwrap_err();
    match &err {
        PlatformError::Keys(KeyError::UnknownKeyId {
            provider,
            key_id,
            known,
        }) => {
            assert_eq!(*provider, first.id);
            assert_eq!(key_id, "k1");
            assert_eq!(known, &["k2"]);
        }
        other => panic!("{other}"),
    }
    let message = err.to_string();
    assert!(message.contains("\"k1\"") && message.contains(&first.id.to_string()));
    assert_eq!(log_len(&store).await, len);
    // Without master keys at all, it says how to configure them.
    let none = Platform::new(Arc::clone(&store), None);
    let err = none.rotate_keys().await.unwrap_err();
    assert!(
        matches!(err, PlatformError::Keys(KeyError::NoMasterKey)),
        "{err}"
    );
}

on_every_store!(
    a_row_sealed_under_key_1_opens_with_key_2_alone_after_rotation,
    a_ciphertext_copied_to_another_row_still_fails,
    an_unknown_key_id_fails_the_rotation_naming_it,
);
