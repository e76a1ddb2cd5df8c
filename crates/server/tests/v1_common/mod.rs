//! What the `/v1` test files share: the platform's own store kit (each scenario run on a
//! `MemoryStore` and, when `OPENHARNESS_TEST_POSTGRES` is set, on PostgreSQL in a fresh schema;
//! skipped, saying so, when it is not), and a client of the server over a real socket.

#[path = "../../../platform/tests/common/mod.rs"]
mod stores;

pub(crate) mod client;

pub(crate) use stores::{on_every_store, postgres};
