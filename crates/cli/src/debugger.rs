//! `tape <id>` without `--at`: an interactive terminal debugger over a session, for any
//! workflow the program registers — and, in an events-only mode, for sessions of workflows
//! it does not.
//!
//! The screen shows the event timeline with the current position, the state there (pretty
//! JSON or a tree, from a [`JsonTape`]), the JSON patch the current event made to it, and the
//! current event itself (its payload and the event that caused it). A rejected model output
//! (`output:rejected`) is marked in the timeline with its agent and attempt, and the event pane
//! lists the validator's errors one per line above the output as the model returned it. For a session whose
//! workflow is not registered the states cannot be folded: the state pane says why, and the
//! timeline, payloads and causes still work. [`Debugger`] reacts to keys
//! ([`Debugger::handle_key`]), advances while playing ([`Debugger::tick`]) and draws into any
//! ratatui backend ([`Debugger::render`]), so tests drive it with key events on a
//! `TestBackend`.
//!
//! Keys: `→`/`l` step, `←`/`h` step back, `Home`/`g` start, `End`/`G` end, `:` goto N,
//! `/` search by event name, `n`/`N` next/previous match, space play/pause, `t` JSON/tree,
//! `PgDn`/`PgUp` scroll the state, `q`/`Esc` quit.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::time::Duration;

use openharness::builtin::{Builtin, OutputRejected};
use openharness::tape::PatchOperation;
use openharness::{Envelope, EventId, SessionId};
use openharness_host::{Host, HostError, JsonTape};
use ratatui::Frame;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, List, ListItem, Paragraph, Wrap};
use serde_json::Value;

use crate::error::CliError;

mod view;

/// How the state panel shows the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StateView {
    Json,
    Tree,
}

/// What the footer is reading, if anything.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Prompt {
    None,
    Goto(String),
    Search(String),
}

/// What the debugger steps through.
enum Source {
    /// A tape of a registered workflow: states as JSON.
    Folded(Box<dyn JsonTape>),
    /// The events of a session no registered workflow can fold, and why.
    EventsOnly {
        events: Vec<Envelope>,
        position: u64,
        why: String,
    },
}

impl Source {
    fn position(&self) -> u64 {
        match self {
            Self::Folded(tape) => tape.position(),
            Self::EventsOnly { position, .. } => *position,
        }
    }

    fn len(&self) -> u64 {
        match self {
            Self::Folded(tape) => tape.len(),
            Self::EventsOnly { events, .. } => events.len() as u64,
        }
    }

    fn step_to(&mut self, to: u64) -> u64 {
        match self {
            Self::Folded(tape) => tape.step_to(to),
            Self::EventsOnly {
                events, position, ..
            } => {
                *position = to.min(events.len() as u64);
                *position
            }
        }
    }

    fn events(&self) -> &[Envelope] {
        match self {
            Self::Folded(tape) => tape.events(),
            Self::EventsOnly { events, .. } => events,
        }
    }

    /// The event that leads to position `p` (none at 0).
    fn event_at(&self, p: u64) -> Option<&Envelope> {
        let index = usize::try_from(p.checked_sub(1)?).ok()?;
        self.events().get(index)
    }
}

/// Why the states of a session recorded by `recorded` cannot be shown.
fn why_unfolded(recorded: Option<&str>, program: &str) -> String {
    let by = recorded.map_or_else(
        || "an unknown workflow (its log has no `workflow:started`)".to_owned(),
        |w| format!("workflow `{w}`"),
    );
    format!(
        "Events only: this session was recorded by {by}, which this program (`{program}`) does not register, so its states cannot be folded. The timeline, each event's payload and its cause are all here; register the workflow in the program's `Cli` to see the states."
    )
}

/// The debugger: a session's tape (or its events alone) plus what the screen shows.
pub struct Debugger {
    session: SessionId,
    source: Source,
    /// Event ids to their index, to show what caused an event.
    index: HashMap<EventId, usize>,
    view: StateView,
    prompt: Prompt,
    search: Option<String>,
    playing: bool,
    message: String,
    state_scroll: u16,
    quit: bool,
}

impl std::fmt::Debug for Debugger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Debugger")
            .field("session", &self.session)
            .field("position", &self.position())
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

impl Debugger {
    /// A debugger at position 0 of `tape`, a tape of `session` ([`openharness_host::Hosted::tape`]).
    pub fn folded(session: SessionId, tape: Box<dyn JsonTape>) -> Self {
        Self::with(session, Source::Folded(tape))
    }

    /// A debugger at position 0 of `events`, the events of a session whose states cannot be
    /// derived; the state pane shows `why`.
    pub fn events_only(session: SessionId, events: Vec<Envelope>, why: String) -> Self {
        Self::with(
            session,
            Source::EventsOnly {
                events,
                position: 0,
                why,
            },
        )
    }

    /// A debugger over `session` of `host`'s store: its states when a registered workflow
    /// recorded it, its events alone (and why, naming `program`) when none did.
    pub async fn open(host: &Host, session: &SessionId, program: &str) -> Result<Self, HostError> {
        match host.workflow_of(session).await {
            Ok(hosted) => Ok(Self::folded(session.clone(), hosted.tape(session).await?)),
            Err(HostError::Unhosted {
                session, recorded, ..
            }) => {
                let events = crate::shared::all_events(host, &session).await?;
                let why = why_unfolded(recorded.as_deref(), program);
                Ok(Self::events_only(session, events, why))
            }
            Err(err) => Err(err),
        }
    }

    /// The event that led to the current position (none at 0).
    pub fn current(&self) -> Option<&Envelope> {
        self.source.event_at(self.position())
    }

    fn with(session: SessionId, mut source: Source) -> Self {
        source.step_to(0);
        let index = source
            .events()
            .iter()
            .enumerate()
            .map(|(i, e)| (e.id, i))
            .collect();
        Self {
            session,
            source,
            index,
            view: StateView::Json,
            prompt: Prompt::None,
            search: None,
            playing: false,
            message: String::new(),
            state_scroll: 0,
            quit: false,
        }
    }

    /// The current position.
    pub fn position(&self) -> u64 {
        self.source.position()
    }

    /// The session's length.
    pub fn len(&self) -> u64 {
        self.source.len()
    }

    /// Whether the session has no events.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether it shows events only (the session's workflow is not registered).
    pub fn is_events_only(&self) -> bool {
        matches!(self.source, Source::EventsOnly { .. })
    }

    /// Whether the user asked to leave.
    pub fn should_quit(&self) -> bool {
        self.quit
    }

    /// Whether the tape is playing.
    pub fn is_playing(&self) -> bool {
        self.playing
    }

    fn step(&mut self) {
        let next = self.position().saturating_add(1);
        self.source.step_to(next);
    }

    fn step_back(&mut self) {
        let back = self.position().saturating_sub(1);
        self.source.step_to(back);
    }

    /// One step of playback (called on a timer while playing); stops at the end.
    pub fn tick(&mut self) {
        if !self.playing {
            return;
        }
        if self.position() >= self.len() {
            self.playing = false;
            self.message = "played to the end".into();
            return;
        }
        self.step();
    }

    /// Reacts to one key press.
    pub fn handle_key(&mut self, key: KeyEvent) {
        if key.kind != KeyEventKind::Press {
            return;
        }
        match std::mem::replace(&mut self.prompt, Prompt::None) {
            Prompt::None => self.command(key.code),
            Prompt::Goto(text) => self.prompt = self.edit(key.code, text, Prompt::Goto),
            Prompt::Search(text) => self.prompt = self.edit(key.code, text, Prompt::Search),
        }
    }

    fn command(&mut self, code: KeyCode) {
        self.message.clear();
        let moved = match code {
            KeyCode::Char('q') | KeyCode::Esc => {
                self.quit = true;
                false
            }
            KeyCode::Right | KeyCode::Char('l') => {
                self.step();
                true
            }
            KeyCode::Left | KeyCode::Char('h') => {
                self.step_back();
                true
            }
            KeyCode::Home | KeyCode::Char('g') => {
                self.source.step_to(0);
                true
            }
            KeyCode::End | KeyCode::Char('G') => {
                self.source.step_to(self.len());
                true
            }
            KeyCode::Char(':') => {
                self.prompt = Prompt::Goto(String::new());
                false
            }
            KeyCode::Char('/') => {
                self.prompt = Prompt::Search(String::new());
                false
            }
            KeyCode::Char('n') => {
                self.search_next(true);
                true
            }
            KeyCode::Char('N') => {
                self.search_next(false);
                true
            }
            KeyCode::Char(' ') | KeyCode::Char('p') => {
                self.playing = !self.playing;
                if self.playing && self.position() >= self.len() {
                    self.source.step_to(0);
                }
                false
            }
            KeyCode::Char('t') => {
                self.view = match self.view {
                    StateView::Json => StateView::Tree,
                    StateView::Tree => StateView::Json,
                };
                false
            }
            KeyCode::PageDown => {
                self.state_scroll = self.state_scroll.saturating_add(10);
                false
            }
            KeyCode::PageUp => {
                self.state_scroll = self.state_scroll.saturating_sub(10);
                false
            }
            _ => false,
        };
        if moved {
            self.playing = false;
            self.state_scroll = 0;
        }
    }

    /// Edits the footer's input; Enter runs it, Esc drops it.
    fn edit(&mut self, code: KeyCode, mut text: String, again: fn(String) -> Prompt) -> Prompt {
        match code {
            KeyCode::Esc => Prompt::None,
            KeyCode::Backspace => {
                text.pop();
                again(text)
            }
            KeyCode::Enter => {
                match again(text) {
                    Prompt::Goto(text) => match text.trim().parse::<u64>() {
                        Ok(position) => {
                            self.playing = false;
                            self.source.step_to(position);
                        }
                        Err(_) => self.message = format!("not a position: {text:?}"),
                    },
                    Prompt::Search(text) => {
                        self.search = Some(text);
                        self.playing = false;
                        self.search_next(true);
                    }
                    Prompt::None => {}
                }
                Prompt::None
            }
            KeyCode::Char(c) => {
                text.push(c);
                again(text)
            }
            _ => again(text),
        }
    }

    /// Moves to the next (or previous) event whose name contains the search text.
    fn search_next(&mut self, forward: bool) {
        let Some(query) = self.search.clone().filter(|q| !q.is_empty()) else {
            self.message = "no search yet: press / and type an event name".into();
            return;
        };
        let position = usize::try_from(self.position()).unwrap_or(usize::MAX);
        let events = self.source.events();
        let found = if forward {
            events
                .iter()
                .enumerate()
                .skip(position)
                .find(|(_, e)| e.name.contains(query.as_str()))
                .map(|(i, _)| i)
        } else {
            events
                .iter()
                .enumerate()
                .take(position.saturating_sub(1))
                .rev()
                .find(|(_, e)| e.name.contains(query.as_str()))
                .map(|(i, _)| i)
        };
        match found {
            Some(index) => {
                self.source.step_to(index as u64 + 1);
            }
            None => {
                let way = if forward { "after" } else { "before" };
                self.message = format!("no `{query}` {way} position {}", self.position());
            }
        }
    }

    /// What folding the session skipped; `None` for a session shown as events only.
    pub fn skipped(&self) -> Option<&openharness::adapter::Skipped> {
        match &self.source {
            Source::Folded(tape) => Some(tape.skipped()),
            Source::EventsOnly { .. } => None,
        }
    }

    /// `" · N events skipped (M undecodable)"` when the fold skipped any, else empty.
    pub fn skipped_note(&self) -> String {
        match self.skipped() {
            Some(skipped) if !skipped.is_empty() => format!(
                " · {} events skipped ({} undecodable)",
                skipped.total(),
                skipped.undecodable
            ),
            _ => String::new(),
        }
    }
}

/// An event's line in the timeline: its name, and for a rejected output whose attempt it was
/// (`output:rejected ✗ clerk attempt 1`), so the re-asks stand out.
fn label(event: &Envelope) -> String {
    match Builtin::decode(event) {
        Some(Ok(Builtin::OutputRejected(rejected))) => format!(
            "{} ✗ {} attempt {}",
            event.name, rejected.agent, rejected.attempt
        ),
        _ => event.name.to_string(),
    }
}

/// A rejected output in the event pane: which attempt of which agent, each of the validator's
/// errors on its own line, then the output as the model returned it.
fn describe_rejected(rejected: &OutputRejected) -> String {
    let mut text = format!(
        "rejected output: attempt {} of agent `{}` did not pass its checks\nwhy:",
        rejected.attempt, rejected.agent
    );
    if rejected.errors.is_empty() {
        text.push_str("\n  (no reason recorded)");
    }
    for error in &rejected.errors {
        text.push_str("\n  ✗ ");
        text.push_str(error);
    }
    text.push_str("\nthe output as the model returned it:\n");
    text.push_str(&serde_json::to_string_pretty(&rejected.output).unwrap_or_default());
    text
}

/// One patch operation on one line: `replace /completed = 2`.
fn describe(op: &PatchOperation) -> String {
    match op {
        PatchOperation::Add(op) => format!("add     {} = {}", op.path, op.value),
        PatchOperation::Remove(op) => format!("remove  {}", op.path),
        PatchOperation::Replace(op) => format!("replace {} = {}", op.path, op.value),
        PatchOperation::Move(op) => format!("move    {} -> {}", op.from, op.path),
        PatchOperation::Copy(op) => format!("copy    {} -> {}", op.from, op.path),
        PatchOperation::Test(op) => format!("test    {} == {}", op.path, op.value),
    }
}

/// The state as an indented tree, one line per value.
fn tree(value: &Value, key: &str, depth: usize, lines: &mut Vec<String>) {
    let indent = "  ".repeat(depth);
    match value {
        Value::Object(map) => {
            lines.push(format!("{indent}▾ {key} {{{}}}", map.len()));
            for (k, v) in map {
                tree(v, k, depth + 1, lines);
            }
        }
        Value::Array(items) => {
            lines.push(format!("{indent}▾ {key} [{}]", items.len()));
            for (i, v) in items.iter().enumerate() {
                tree(v, &i.to_string(), depth + 1, lines);
            }
        }
        leaf => lines.push(format!("{indent}  {key}: {leaf}")),
    }
}

/// Runs the debugger on the terminal until the user quits.
pub(crate) fn run(mut app: Debugger) -> Result<(), CliError> {
    if !std::io::stdout().is_terminal() {
        return Err(CliError::Usage(
            "the interactive debugger needs a terminal; pass `--at N` to print one position".into(),
        ));
    }
    let mut terminal = ratatui::try_init()?;
    let result = (|| -> std::io::Result<()> {
        while !app.should_quit() {
            terminal.draw(|frame| app.render(frame))?;
            let wait = if app.is_playing() {
                Duration::from_millis(120)
            } else {
                Duration::from_secs(1)
            };
            if event::poll(wait)? {
                if let Event::Key(key) = event::read()? {
                    app.handle_key(key);
                }
            } else {
                app.tick();
            }
        }
        Ok(())
    })();
    ratatui::restore();
    Ok(result?)
}
