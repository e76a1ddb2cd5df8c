//! What the platform's test files share: each scenario run on a `MemoryStore` and, when
//! `OPENHARNESS_TEST_POSTGRES` is set, on PostgreSQL in a fresh schema (skipped, saying so,
//! when it is not; under `CI=true` an unusable server fails).

use std::sync::Arc;

use openharness_core::Store;
use uuid::Uuid;

/// Runs each scenario (an `async fn(Arc<dyn Store>)` of the including file) on a
/// `MemoryStore` (module `memory`) and on PostgreSQL (module `postgres`).
macro_rules! on_every_store {
    ($($scenario:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    super::$scenario(std::sync::Arc::new(openharness_store::MemoryStore::new())).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    if let Some(store) = crate::common::postgres(stringify!($scenario)).await {
                        super::$scenario(store).await;
                    }
                }
            )*
        }
    };
}
pub(crate) use on_every_store;

const POSTGRES_ENV: &str = "OPENHARNESS_TEST_POSTGRES";

/// A PostgreSQL store in a fresh schema, or `None` after saying why the test skips.
pub(crate) async fn postgres(test: &str) -> Option<Arc<dyn Store>> {
    let Ok(url) = std::env::var(POSTGRES_ENV) else {
        eprintln!(
            "{test}: skipped on PostgreSQL: {POSTGRES_ENV} is not set (CI sets it; see .ci/run)"
        );
        return None;
    };
    let schema = format!("oh_platform_{}", Uuid::now_v7().simple());
    match openharness_store::PostgresStore::connect_in_schema(&url, &schema).await {
        Ok(store) => Some(Arc::new(store)),
        Err(err) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("{test}: {POSTGRES_ENV} is set and CI=true, but PostgreSQL is unusable: {err}")
        }
        Err(err) => {
            eprintln!("{test}: skipped on PostgreSQL: {POSTGRES_ENV} is unusable: {err}");
            None
        }
    }
}
