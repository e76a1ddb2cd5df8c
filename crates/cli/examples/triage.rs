//! A program of its own with every `openharness` command for its workflow: the code the
//! README's "Your own workflows in the CLI" shows. Run it with
//! `cargo run -p openharness-cli --example triage -- start support-triage "the printer is on fire"`.

use std::process::ExitCode;

use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::schemars;
use openharness::store::MemoryStore;
use openharness_cli::Cli;

#[event]
#[derive(Debug, Clone)]
struct TicketFiled {
    title: String,
}

#[event]
enum TriageEvent {
    UserInput,
    TicketFiled,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Triage {
    tickets: Vec<String>,
}

#[handler(TriageEvent)]
impl Triage {
    fn input(&mut self, _input: &UserInput) {}
    fn filed(&mut self, ticket: &TicketFiled) {
        self.tickets.push(ticket.title.clone());
    }
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Ticket {
    title: String,
}

struct Clerk;

#[agent(output = Ticket, emits = [TicketFiled])]
impl Clerk {
    fn prompt(&self, _state: &Triage, input: &UserInput) -> String {
        format!("File a ticket for: {}", input.text)
    }
    fn on_output(&self, ticket: Ticket, _input: &UserInput) -> TicketFiled {
        TicketFiled {
            title: ticket.title,
        }
    }
}

fn triage() -> Result<Workflow<Triage>, openharness::Error> {
    Workflow::builder("support-triage")
        .initial_state(Triage::default())
        .agent(Clerk)
        // Any store: the CLI records to the one `--store` names.
        .store(MemoryStore::new())
        // Offline; `--provider anthropic` (or openai, claude-cli) asks a real model.
        .provider(ScriptedProvider::new().fallback("clerk", |request| {
            Reply::output(serde_json::json!({ "title": request.prompt }))
        }))
        .build()
}

fn main() -> Result<ExitCode, Box<dyn std::error::Error>> {
    // triage start support-triage "the printer is on fire" · triage sessions
    // triage tape <id> · triage fork <id> --at 3 · triage send <id> "and the fax"
    Ok(Cli::new().workflow(triage()?)?.run())
}
