//! A workflow of the tests' own — a ledger whose clerk books each input as an entry — that no
//! part of the CLI knows, to show the CLI reaches it through the host alone.
#![allow(dead_code, unreachable_pub, missing_docs, clippy::unwrap_used)]

use std::io::Write;
use std::sync::{Arc, Mutex};

use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::schemars;
use openharness::store::MemoryStore;
use openharness_host::Host;

/// The workflow's name, as sessions record it.
pub const LEDGER: &str = "ledger";

#[event]
#[derive(Debug, Clone)]
pub struct EntryBooked {
    pub label: String,
    pub amount: u64,
}

#[event]
pub enum LedgerEvent {
    UserInput,
    EntryBooked,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Ledger {
    pub entries: Vec<String>,
    pub balance: u64,
}

#[handler(LedgerEvent)]
impl Ledger {
    fn input(&mut self, _input: &UserInput) {}
    fn booked(&mut self, entry: &EntryBooked) {
        self.entries.push(entry.label.clone());
        self.balance += entry.amount;
    }
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct Booking {
    pub label: String,
    pub amount: u64,
}

pub struct Clerk;

#[agent(output = Booking, emits = [EntryBooked])]
impl Clerk {
    fn prompt(&self, _state: &Ledger, input: &UserInput) -> String {
        input.text.clone()
    }
    fn on_output(&self, booking: Booking, _input: &UserInput) -> EntryBooked {
        EntryBooked {
            label: booking.label,
            amount: booking.amount,
        }
    }
}

/// The ledger, offline: the clerk books `"<label> <amount>"` as that label and amount (an
/// amount that is not a number makes its output invalid, every time).
pub fn ledger() -> Workflow<Ledger> {
    Workflow::builder(LEDGER)
        .initial_state(Ledger::default())
        .agent(Clerk)
        .store(MemoryStore::new())
        .provider(ScriptedProvider::new().fallback("clerk", |request| {
            let (label, amount) = request
                .prompt
                .rsplit_once(' ')
                .unwrap_or((request.prompt.as_str(), ""));
            // An amount that is not a number is answered as is: an output that never
            // validates, so the clerk fails for good after its re-asks.
            let amount = amount
                .parse::<u64>()
                .map_or_else(|_| serde_json::json!(amount), serde_json::Value::from);
            Reply::output(serde_json::json!({ "label": label, "amount": amount }))
        }))
        .build()
        .expect("the ledger builds")
}

/// Records a ledger session with two turns (`coffee 3`, then `lunch 12`: two entries booked)
/// into `store`.
pub async fn ledger_session<S: Store>(store: S) -> SessionId {
    let host = Host::new(store)
        .workflow(ledger())
        .expect("the ledger is hosted");
    let first = host
        .run(LEDGER, Some("coffee 3".into()), RunOptions::new())
        .await
        .expect("the first turn runs");
    host.send(&first.session, "lunch 12".into(), RunOptions::new())
        .await
        .expect("the second turn runs");
    first.session
}

/// A writer the test keeps a handle on, to read what a command wrote.
#[derive(Clone, Default)]
pub struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Buffer {
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().expect("not poisoned").clone()).expect("UTF-8 output")
    }
}

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("not poisoned").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
