//! What the debugger draws: the title and footer lines, the timeline, the state, the diff and the
//! event at the cursor.

use super::*;

impl Debugger {
    /// Draws the whole screen.
    pub fn render(&self, frame: &mut Frame<'_>) {
        let [title, body, footer] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        let [timeline, right] =
            Layout::horizontal([Constraint::Percentage(40), Constraint::Percentage(60)])
                .areas(body);
        frame.render_widget(Paragraph::new(self.title_line()), title);
        self.render_timeline(frame, timeline);
        match &self.source {
            Source::Folded(tape) => {
                let [state, diff, event] = Layout::vertical([
                    Constraint::Percentage(50),
                    Constraint::Percentage(25),
                    Constraint::Percentage(25),
                ])
                .areas(right);
                self.render_state(frame, state, tape.as_ref());
                self.render_diff(frame, diff, tape.as_ref());
                self.render_event(frame, event);
            }
            Source::EventsOnly { why, .. } => {
                let [state, event] =
                    Layout::vertical([Constraint::Percentage(30), Constraint::Percentage(70)])
                        .areas(right);
                frame.render_widget(
                    Paragraph::new(why.as_str())
                        .wrap(Wrap { trim: false })
                        .block(Block::bordered().title(" state (not available) ")),
                    state,
                );
                self.render_event(frame, event);
            }
        }
        frame.render_widget(Paragraph::new(self.footer_line()), footer);
    }

    pub(super) fn title_line(&self) -> Line<'_> {
        let current = self
            .source
            .event_at(self.position())
            .map_or_else(|| "(initial state)".to_owned(), |e| e.name.to_string());
        let status = if self.playing { "playing" } else { "paused" };
        let mode = if self.is_events_only() {
            " · events only"
        } else {
            ""
        };
        Line::from(vec![
            Span::styled(" tape ", Style::new().reversed()),
            Span::raw(format!(
                " {} · position {}/{} · {} · {}{mode}{}",
                self.session,
                self.position(),
                self.len(),
                current,
                status,
                self.skipped_note()
            )),
        ])
    }

    pub(super) fn footer_line(&self) -> Line<'_> {
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

    pub(super) fn render_timeline(&self, frame: &mut Frame<'_>, area: Rect) {
        let rows = u64::from(area.height.saturating_sub(2)).max(1);
        let position = self.position();
        let len = self.len();
        // Rows are positions 0..=len; keep the current one in view, a third from the top.
        let first = position
            .saturating_sub(rows / 3)
            .min((len + 1).saturating_sub(rows));
        let last = (first + rows).min(len + 1);
        let items: Vec<ListItem<'_>> = (first..last)
            .map(|p| {
                let label = match self.source.event_at(p) {
                    None => "(initial state)".to_owned(),
                    Some(event) => label(event),
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

    pub(super) fn render_state(&self, frame: &mut Frame<'_>, area: Rect, tape: &dyn JsonTape) {
        let (title, text) = match tape.state() {
            Err(err) => (
                " state ",
                format!(
                    "(no state here: {})",
                    openharness::adapter::ErrorChain(&err)
                ),
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

    pub(super) fn render_diff(&self, frame: &mut Frame<'_>, area: Rect, tape: &dyn JsonTape) {
        let position = self.position();
        let text = if position == 0 {
            "(position 0: no event yet)".to_owned()
        } else {
            match tape.diff(position - 1, position) {
                Err(err) => format!("(no diff: {})", openharness::adapter::ErrorChain(&err)),
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

    /// The current event: the position it leads to, its id, cause and payload (events are
    /// named by position here as in `events`, the inspector and `?at=`).
    pub(super) fn render_event(&self, frame: &mut Frame<'_>, area: Rect) {
        let position = self.position();
        let text = match self.source.event_at(position) {
            None => "(position 0: no event yet)".to_owned(),
            Some(event) => {
                let cause = match event.caused_by {
                    None => "caused by: (nothing: an input or a start)".to_owned(),
                    Some(id) => match self.index.get(&id) {
                        Some(&i) => {
                            format!(
                                "caused by: position {} {} ({id})",
                                i + 1,
                                self.source.events()[i].name
                            )
                        }
                        None => format!("caused by: {id} (not in this session)"),
                    },
                };
                let body = match Builtin::decode(event) {
                    Some(Ok(Builtin::OutputRejected(rejected))) => describe_rejected(&rejected),
                    _ => format!(
                        "payload {}",
                        serde_json::to_string_pretty(&event.payload).unwrap_or_default()
                    ),
                };
                format!(
                    "position {} {} ({})\n{cause}\n{body}",
                    position, event.name, event.id,
                )
            }
        };
        frame.render_widget(
            Paragraph::new(text)
                .wrap(Wrap { trim: false })
                .block(Block::bordered().title(" event ")),
            area,
        );
    }
}
