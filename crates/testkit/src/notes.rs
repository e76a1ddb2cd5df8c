//! The note-taking workflow several suites share (feature `fixtures`): a [`Scribe`] agent
//! answers each input with a [`Note`], recorded as a [`NoteTaken`] that [`Notes`] folds. A
//! suite builds the workflow with its own name, provider and store:
//!
//! ```
//! use openharness::prelude::*;
//! use openharness::provider::{Reply, ScriptedProvider};
//! use openharness::store::MemoryStore;
//! use openharness_testkit::notes::{Notes, Scribe};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let provider = ScriptedProvider::new().respond("scribe", Reply::output(serde_json::json!({ "note": "milk" })));
//! let notes = Workflow::builder("notes")
//!     .initial_state(Notes::default())
//!     .agent(Scribe)
//!     .store(MemoryStore::new())
//!     .provider(provider)
//!     .build()
//!     .unwrap();
//! let outcome = notes.run(RunOptions::new().input("buy milk")).await.unwrap();
//! assert_eq!(outcome.state.notes, ["milk"]);
//! # }
//! ```

use openharness::prelude::*;

/// A note was taken.
#[event]
#[derive(Debug, Clone)]
pub struct NoteTaken {
    /// The note.
    pub text: String,
}

/// The events [`Notes`] folds.
#[event]
pub enum NoteEvent {
    /// An input (folded as nothing: the scribe answers it).
    UserInput,
    /// A note.
    NoteTaken,
}

/// The notes taken so far, in order.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Notes {
    /// The notes.
    pub notes: Vec<String>,
}

#[handler(NoteEvent)]
impl Notes {
    fn input(&mut self, _input: &UserInput) {}
    fn taken(&mut self, note: &NoteTaken) {
        self.notes.push(note.text.clone());
    }
}

/// What the scribe's model answers: `{"note": …}`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct Note {
    /// The note.
    pub note: String,
}

/// The agent `scribe`: prompted with each input's text, it records the note its model gives.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scribe;

#[agent(output = Note, emits = [NoteTaken])]
impl Scribe {
    fn prompt(&self, _state: &Notes, input: &UserInput) -> String {
        input.text.clone()
    }
    fn on_output(&self, out: Note, _input: &UserInput) -> NoteTaken {
        NoteTaken { text: out.note }
    }
}
