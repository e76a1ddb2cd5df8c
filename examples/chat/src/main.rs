//! Runs the chat example offline: three turns on ONE session (`Workflow::run`, then
//! `Workflow::send`), printing the conversation as it grows and the session id.
//!
//! The session is recorded in `$OPENHARNESS_STORE` (default `.openharness/store.redb`, the
//! `openharness` command's store), so `openharness send <session> "..."` continues it.

use std::path::PathBuf;

use openharness::prelude::*;
use openharness::store::RedbStore;
use openharness_example_chat as chat;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::var_os("OPENHARNESS_STORE")
        .map_or_else(|| PathBuf::from(".openharness/store.redb"), PathBuf::from);
    let store = RedbStore::open(&path)?;
    let workflow = chat::workflow(store, chat::scripted_provider())?;
    let mut session: Option<SessionId> = None;
    for message in chat::DEMO_MESSAGES {
        let outcome = match &session {
            None => workflow.run(RunOptions::new().input(message)).await?,
            Some(id) => workflow.send(id, message, RunOptions::new()).await?,
        };
        let exchange = outcome
            .state
            .exchanges
            .last()
            .ok_or("the turn recorded no exchange")?;
        println!("you:       {}", exchange.user);
        println!(
            "assistant: {}",
            exchange.reply.as_deref().unwrap_or("(no reply)")
        );
        println!(
            "           [turn ended {}, session length {}]\n",
            outcome.reason.as_str(),
            outcome.len
        );
        session = Some(outcome.session);
    }
    if let Some(id) = session {
        println!("Session {id} is recorded in {}.", path.display());
        println!("Continue it:  openharness send {id} \"Thanks!\"");
        println!("Step back:    openharness tape {id}");
    }
    Ok(())
}
