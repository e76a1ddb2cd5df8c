//! `openharness tape <id>` without `--at`: an interactive terminal debugger over a tape.
//!
//! The screen shows the event timeline with the current position, the state there (pretty
//! JSON or a tree), and the JSON patch the current event made. [`Debugger`] holds the tape
//! and the screen's state; it reacts to keys ([`Debugger::handle_key`]), advances while
//! playing ([`Debugger::tick`]) and draws into any ratatui backend ([`Debugger::render`]),
//! so its tests drive it with real key events on a `TestBackend`.
//!
//! Keys: `→`/`l` step, `←`/`h` step back, `Home`/`g` start, `End`/`G` end, `:` goto N,
//! `/` search by event name, `n`/`N` next/previous match, space play/pause, `t` JSON/tree,
//! `PgDn`/`PgUp` scroll the state, `q`/`Esc` quit.

use std::io::IsTerminal;
use std::time::Duration;

use openharness::WorkflowState;
use openharness::tape::{PatchOperation, Tape};
use ratatui::Frame;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, List, ListItem, Paragraph, Wrap};
use serde_json::Value;

use crate::commands::CliError;

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

/// The debugger: a tape plus what the screen shows.
pub(crate) struct Debugger<S: WorkflowState> {
    tape: Tape<S>,
    view: StateView,
    prompt: Prompt,
    search: Option<String>,
    playing: bool,
    message: String,
    state_scroll: u16,
    quit: bool,
}

impl<S: WorkflowState> Debugger<S> {
    /// A debugger at position 0 of `tape`.
    pub(crate) fn new(tape: Tape<S>) -> Self {
        Self {
            tape,
            view: StateView::Json,
            prompt: Prompt::None,
            search: None,
            playing: false,
            message: String::new(),
            state_scroll: 0,
            quit: false,
        }
    }

    /// Whether the user asked to leave.
    pub(crate) fn should_quit(&self) -> bool {
        self.quit
    }

    /// Whether the tape is playing.
    pub(crate) fn is_playing(&self) -> bool {
        self.playing
    }

    /// One step of playback (called on a timer while playing); stops at the end.
    pub(crate) fn tick(&mut self) {
        if !self.playing {
            return;
        }
        if self.tape.position() >= self.tape.len() {
            self.playing = false;
            self.message = "played to the end".into();
            return;
        }
        self.tape.step();
    }

    /// Reacts to one key press.
    pub(crate) fn handle_key(&mut self, key: KeyEvent) {
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
                self.tape.step();
                true
            }
            KeyCode::Left | KeyCode::Char('h') => {
                self.tape.step_back();
                true
            }
            KeyCode::Home | KeyCode::Char('g') => {
                self.tape.rewind();
                true
            }
            KeyCode::End | KeyCode::Char('G') => {
                self.tape.step_to(self.tape.len());
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
                if self.playing && self.tape.position() >= self.tape.len() {
                    self.tape.rewind();
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
                            self.tape.step_to(position);
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
        let position = usize::try_from(self.tape.position()).unwrap_or(usize::MAX);
        let events = self.tape.events();
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
                self.tape.step_to(index as u64 + 1);
            }
            None => {
                let way = if forward { "after" } else { "before" };
                self.message = format!("no `{query}` {way} position {}", self.tape.position());
            }
        }
    }

    /// Draws the whole screen.
    pub(crate) fn render(&self, frame: &mut Frame<'_>) {
        let [title, body, footer] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        let [timeline, right] =
            Layout::horizontal([Constraint::Percentage(40), Constraint::Percentage(60)])
                .areas(body);
        let [state, diff] =
            Layout::vertical([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(right);
        frame.render_widget(Paragraph::new(self.title_line()), title);
        self.render_timeline(frame, timeline);
        self.render_state(frame, state);
        self.render_diff(frame, diff);
        frame.render_widget(Paragraph::new(self.footer_line()), footer);
    }

    fn title_line(&self) -> Line<'_> {
        let current = self
            .tape
            .current()
            .map_or_else(|| "(initial state)".to_owned(), |e| e.name.to_string());
        let status = if self.playing { "playing" } else { "paused" };
        Line::from(vec![
            Span::styled(" openharness tape ", Style::new().reversed()),
            Span::raw(format!(
                " {} · position {}/{} · {} · {}",
                self.tape.session(),
                self.tape.position(),
                self.tape.len(),
                current,
                status
            )),
        ])
    }

    fn footer_line(&self) -> Line<'_> {
        match &self.prompt {
            Prompt::Goto(text) => Line::from(format!("goto position: {text}_")),
            Prompt::Search(text) => Line::from(format!("search event name: {text}_")),
            Prompt::None if !self.message.is_empty() => Line::from(self.message.clone()),
            Prompt::None => Line::from(
                "→/l step  ←/h back  g/G start/end  :N goto  /name search  n/N next/prev  space play  t tree  q quit",
            )
            .dim(),
        }
    }

    fn render_timeline(&self, frame: &mut Frame<'_>, area: Rect) {
        let rows = u64::from(area.height.saturating_sub(2)).max(1);
        let position = self.tape.position();
        let len = self.tape.len();
        // Rows are positions 0..=len; keep the current one in view, a third from the top.
        let first = position
            .saturating_sub(rows / 3)
            .min((len + 1).saturating_sub(rows));
        let last = (first + rows).min(len + 1);
        let items: Vec<ListItem<'_>> = (first..last)
            .map(|p| {
                let label = match self.tape.event_at(p) {
                    None => "(initial state)".to_owned(),
                    Some(event) => event.name.to_string(),
                };
                let marker = if p == position { "▶" } else { " " };
                let item = ListItem::new(format!("{marker}{p:>6} {label}"));
                if p == position {
                    item.style(Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD))
                } else {
                    item
                }
            })
            .collect();
        frame.render_widget(
            List::new(items).block(Block::bordered().title(" timeline ")),
            area,
        );
    }

    fn render_state(&self, frame: &mut Frame<'_>, area: Rect) {
        let (title, text) = match serde_json::to_value(self.tape.state()) {
            Err(err) => (
                " state ",
                format!("(the state does not encode as JSON: {err})"),
            ),
            Ok(value) => match self.view {
                StateView::Json => (
                    " state (json, t: tree) ",
                    serde_json::to_string_pretty(&value).unwrap_or_default(),
                ),
                StateView::Tree => {
                    let mut lines = Vec::new();
                    tree(&value, "state", 0, &mut lines);
                    (" state (tree, t: json) ", lines.join("\n"))
                }
            },
        };
        frame.render_widget(
            Paragraph::new(text)
                .scroll((self.state_scroll, 0))
                .block(Block::bordered().title(title)),
            area,
        );
    }

    fn render_diff(&self, frame: &mut Frame<'_>, area: Rect) {
        let position = self.tape.position();
        let text = if position == 0 {
            "(position 0: no event yet)".to_owned()
        } else {
            match self.tape.diff(position - 1, position) {
                Err(err) => format!("(no diff: {err})"),
                Ok(patch) if patch.0.is_empty() => "(no change to the state)".to_owned(),
                Ok(patch) => patch.0.iter().map(describe).collect::<Vec<_>>().join("\n"),
            }
        };
        frame.render_widget(
            Paragraph::new(text)
                .wrap(Wrap { trim: false })
                .block(Block::bordered().title(" what this event changed ")),
            area,
        );
    }
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
pub(crate) fn run<S: WorkflowState>(tape: Tape<S>) -> Result<(), CliError> {
    if !std::io::stdout().is_terminal() {
        return Err(CliError::Usage(
            "the interactive debugger needs a terminal; pass `--at N` to print one position".into(),
        ));
    }
    let mut app = Debugger::new(tape);
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use openharness::prelude::*;
    use openharness::store::MemoryStore;
    use openharness_example_planner_executor::{self as example, PlanState};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::*;

    async fn debugger() -> Debugger<PlanState> {
        let workflow = example::workflow(MemoryStore::new(), example::scripted_provider()).unwrap();
        let outcome = workflow
            .run(RunOptions::new().input(example::DEMO_GOAL))
            .await
            .unwrap();
        Debugger::new(workflow.load(&outcome.session).await.unwrap())
    }

    /// Presses `keys` (a `KeyCode::Char` per character, or named keys) in order.
    fn press(app: &mut Debugger<PlanState>, keys: &[KeyCode]) {
        for &code in keys {
            app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
        }
    }

    fn chars(text: &str) -> Vec<KeyCode> {
        text.chars().map(KeyCode::Char).collect()
    }

    /// Draws and returns the screen, one string per row.
    fn screen(terminal: &mut Terminal<TestBackend>, app: &Debugger<PlanState>) -> Vec<String> {
        terminal.draw(|frame| app.render(frame)).unwrap();
        let buffer = terminal.backend().buffer();
        (0..buffer.area.height)
            .map(|y| {
                (0..buffer.area.width)
                    .map(|x| buffer[(x, y)].symbol().to_owned())
                    .collect::<String>()
            })
            .collect()
    }

    fn shows(screen: &[String], text: &str) -> bool {
        screen.iter().any(|row| row.contains(text))
    }

    /// The timeline row marked as current.
    fn marked(screen: &[String]) -> String {
        screen
            .iter()
            .find_map(|row| {
                row.split('▶')
                    .nth(1)
                    .map(|rest| rest.split('│').next().unwrap_or("").trim().to_owned())
            })
            .unwrap_or_default()
    }

    #[tokio::test]
    async fn keys_move_the_tape_and_the_screen_follows() {
        let mut app = debugger().await;
        let len = app.tape.len();
        let mut terminal = Terminal::new(TestBackend::new(140, 40)).unwrap();

        let start = screen(&mut terminal, &app);
        assert!(shows(&start, &format!("position 0/{len}")), "{start:#?}");
        assert_eq!(marked(&start), "0 (initial state)");
        assert!(shows(&start, "(position 0: no event yet)"));
        assert!(shows(&start, "\"tasks\": []"));

        // Step forward twice, back once.
        press(
            &mut app,
            &[KeyCode::Right, KeyCode::Char('l'), KeyCode::Left],
        );
        let one = screen(&mut terminal, &app);
        assert!(shows(&one, &format!("position 1/{len} · workflow:started")));
        assert_eq!(marked(&one), "1 workflow:started");

        // Goto 15: plan:created, and the diff shows the tasks it added.
        press(&mut app, &[KeyCode::Char(':')]);
        press(&mut app, &chars("15"));
        let typing = screen(&mut terminal, &app);
        assert!(shows(&typing, "goto position: 15_"));
        press(&mut app, &[KeyCode::Enter]);
        let plan = screen(&mut terminal, &app);
        assert_eq!(marked(&plan), "15 plan:created");
        assert!(shows(&plan, "add     /tasks/0 = {"), "{plan:#?}");
        assert!(shows(&plan, "\"title\": \"Write the changelog\""));

        // A text delta changes nothing.
        press(&mut app, &[KeyCode::Char('h'), KeyCode::Char('h')]);
        let delta = screen(&mut terminal, &app);
        assert_eq!(marked(&delta), "13 text:delta");
        assert!(shows(&delta, "(no change to the state)"));

        // Search by name, then the next match, then the previous.
        press(&mut app, &[KeyCode::Char('/')]);
        press(&mut app, &chars("task:completed"));
        press(&mut app, &[KeyCode::Enter]);
        let first_done = app.tape.position();
        assert_eq!(app.tape.current().unwrap().name, "task:completed");
        let found = screen(&mut terminal, &app);
        assert!(shows(&found, "replace /completed = 1"), "{found:#?}");
        press(&mut app, &[KeyCode::Char('n')]);
        assert!(app.tape.position() > first_done);
        assert!(shows(
            &screen(&mut terminal, &app),
            "replace /completed = 2"
        ));
        press(&mut app, &[KeyCode::Char('N')]);
        assert_eq!(app.tape.position(), first_done);
        press(&mut app, &[KeyCode::Char('/')]);
        press(&mut app, &chars("no:such"));
        press(&mut app, &[KeyCode::Enter]);
        assert!(shows(
            &screen(&mut terminal, &app),
            "no `no:such` after position"
        ));
        assert_eq!(app.tape.position(), first_done);

        // Tree view.
        press(&mut app, &[KeyCode::Char('t')]);
        let tree = screen(&mut terminal, &app);
        assert!(shows(&tree, "state (tree, t: json)"));
        assert!(shows(&tree, "▾ tasks [3]"));
        assert!(shows(&tree, "completed: 1"));

        // End and start.
        press(&mut app, &[KeyCode::End]);
        let end = screen(&mut terminal, &app);
        assert!(shows(
            &end,
            &format!("position {len}/{len} · workflow:completed")
        ));
        assert_eq!(marked(&end), format!("{len} workflow:completed"));
        press(&mut app, &[KeyCode::Char('l')]);
        assert_eq!(app.tape.position(), len);
        press(&mut app, &[KeyCode::Home, KeyCode::Left]);
        assert_eq!(app.tape.position(), 0);

        // Play: each tick steps; space pauses.
        press(&mut app, &[KeyCode::Char(' ')]);
        assert!(shows(&screen(&mut terminal, &app), "· playing"));
        for _ in 0..5 {
            app.tick();
        }
        press(&mut app, &[KeyCode::Char(' ')]);
        app.tick();
        let paused = screen(&mut terminal, &app);
        assert!(shows(&paused, &format!("position 5/{len}")));
        assert!(shows(&paused, "· paused"));

        // Quit.
        assert!(!app.should_quit());
        press(&mut app, &[KeyCode::Char('q')]);
        assert!(app.should_quit());
    }
}
