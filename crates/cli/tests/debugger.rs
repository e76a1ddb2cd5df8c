//! The interactive debugger, driven with key events on ratatui's `TestBackend`: over a session
//! of a workflow defined here (its state and the patch each event made, through the host's
//! `JsonTape`), over the planner-executor demo (every key), and in events-only mode over a
//! session whose workflow the program does not register.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use common::{LEDGER, ledger, ledger_session};
use openharness::prelude::*;
use openharness::store::MemoryStore;
use openharness_cli::Debugger;
use openharness_example_planner_executor as example;
use openharness_host::Host;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Presses `keys` in order.
fn press(app: &mut Debugger, keys: &[KeyCode]) {
    for &code in keys {
        app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
    }
}

fn chars(text: &str) -> Vec<KeyCode> {
    text.chars().map(KeyCode::Char).collect()
}

/// Draws and returns the screen, one string per row.
fn screen(terminal: &mut Terminal<TestBackend>, app: &Debugger) -> Vec<String> {
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
async fn the_debugger_steps_through_a_custom_workflows_states_and_patches() {
    let store = MemoryStore::new();
    let session = ledger_session(store.clone()).await;
    let host = Host::new(store).workflow(ledger()).unwrap();
    let mut app = Debugger::open(&host, &session, "ledger-tool")
        .await
        .unwrap();
    assert!(!app.is_events_only());
    let len = app.len();
    let mut terminal = Terminal::new(TestBackend::new(140, 40)).unwrap();

    let start = screen(&mut terminal, &app);
    assert!(shows(&start, &format!("position 0/{len}")), "{start:#?}");
    assert!(shows(&start, "\"balance\": 0"), "{start:#?}");

    // The end: both entries, and the last turn's `workflow:completed` changed nothing.
    press(&mut app, &[KeyCode::Char('G')]);
    let end = screen(&mut terminal, &app);
    assert!(shows(&end, "\"balance\": 15"), "{end:#?}");
    assert!(shows(&end, "(no change to the state)"), "{end:#?}");

    // Search back to the second booking: the patch shows what it changed.
    press(&mut app, &[KeyCode::Char('/')]);
    press(&mut app, &chars("entry:booked"));
    press(&mut app, &[KeyCode::Enter]);
    assert!(shows(
        &screen(&mut terminal, &app),
        &format!("no `entry:booked` after position {len}")
    ));
    press(&mut app, &[KeyCode::Char('N')]);
    let second = screen(&mut terminal, &app);
    let at = app.position();
    assert_eq!(marked(&second), format!("{at} entry:booked"));
    assert!(shows(&second, "replace /balance = 15"), "{second:#?}");
    assert!(
        shows(&second, "add     /entries/1 = \"lunch\""),
        "{second:#?}"
    );
    // The event pane: its payload and the event that caused it.
    assert!(shows(&second, "\"amount\": 12"), "{second:#?}");
    assert!(shows(&second, "caused by: position"), "{second:#?}");

    // Step back once: the state before the booking.
    press(&mut app, &[KeyCode::Left]);
    let before = screen(&mut terminal, &app);
    assert_eq!(app.position(), at - 1);
    assert!(shows(&before, "\"balance\": 3"), "{before:#?}");
    assert!(!shows(&before, "\"lunch\""), "{before:#?}");

    // The tree view shows the custom state's fields.
    press(&mut app, &[KeyCode::Char('t')]);
    let tree = screen(&mut terminal, &app);
    assert!(shows(&tree, "▾ entries [1]"), "{tree:#?}");
    assert!(shows(&tree, "balance: 3"), "{tree:#?}");
}

#[tokio::test]
async fn a_rejected_output_shows_its_attempt_and_the_validators_errors() {
    let store = MemoryStore::new();
    let host = Host::new(store.clone()).workflow(ledger()).unwrap();
    // An amount that is not a number: the clerk's output never validates.
    let outcome = host
        .run(LEDGER, Some("coffee lots".into()), RunOptions::new())
        .await
        .unwrap();
    assert!(outcome.errors > 0, "the clerk failed for good");
    let mut app = Debugger::open(&host, &outcome.session, "ledger-tool")
        .await
        .unwrap();
    let mut terminal = Terminal::new(TestBackend::new(160, 50)).unwrap();

    press(&mut app, &[KeyCode::Char('/')]);
    press(&mut app, &chars("output:rejected"));
    press(&mut app, &[KeyCode::Enter]);
    let first = screen(&mut terminal, &app);
    assert_eq!(app.current().unwrap().name, "output:rejected");
    // The timeline marks it as a rejected attempt of the clerk.
    assert_eq!(
        marked(&first),
        format!("{} output:rejected ✗ clerk attempt 1", app.position())
    );
    // The event pane: which attempt, each error on its own line, then the raw output.
    assert!(
        shows(
            &first,
            "rejected output: attempt 1 of agent `clerk` did not pass its checks"
        ),
        "{first:#?}"
    );
    let errors = first
        .iter()
        .filter(|row| row.contains("✗ output does not match the schema of"))
        .count();
    assert!(errors >= 1, "{first:#?}");
    assert!(
        shows(&first, "the output as the model returned it:"),
        "{first:#?}"
    );
    assert!(shows(&first, "\"amount\": \"lots\""), "{first:#?}");
    assert!(!shows(&first, "payload {"), "{first:#?}");

    // The next rejection is the next attempt.
    press(&mut app, &[KeyCode::Char('n')]);
    let second = screen(&mut terminal, &app);
    assert!(
        shows(&second, "rejected output: attempt 2 of agent `clerk`"),
        "{second:#?}"
    );
}

#[tokio::test]
async fn the_title_says_how_many_events_the_fold_skipped() {
    let store = MemoryStore::new();
    let session = ledger_session(store.clone()).await;
    let host = Host::new(store.clone()).workflow(ledger()).unwrap();
    let clean = Debugger::open(&host, &session, "ledger-tool")
        .await
        .unwrap();
    let mut terminal = Terminal::new(TestBackend::new(160, 40)).unwrap();
    assert!(!shows(&screen(&mut terminal, &clean), "skipped"));

    let len = clean.len();
    let odd = [
        Envelope::new("entry:voided", serde_json::json!({}), None),
        Envelope::new(
            "entry:booked",
            serde_json::json!({ "amount": "lots" }),
            None,
        ),
    ];
    store.append(&session, &odd, len).await.unwrap();
    let app = Debugger::open(&host, &session, "ledger-tool")
        .await
        .unwrap();
    let title = screen(&mut terminal, &app);
    assert!(
        shows(&title, "2 events skipped (1 undecodable)"),
        "{title:#?}"
    );
}

#[tokio::test]
async fn a_session_of_an_unregistered_workflow_opens_events_only() {
    let store = MemoryStore::new();
    let session = ledger_session(store.clone()).await;
    // A program that registers another workflow only.
    let host = Host::new(store)
        .workflow(example::workflow(MemoryStore::new(), example::scripted_provider()).unwrap())
        .unwrap();
    let mut app = Debugger::open(&host, &session, "other-tool").await.unwrap();
    assert!(app.is_events_only());
    let len = app.len();
    let mut terminal = Terminal::new(TestBackend::new(140, 40)).unwrap();

    let start = screen(&mut terminal, &app);
    assert!(shows(&start, "· events only"), "{start:#?}");
    assert!(
        shows(&start, "workflow `ledger`, which this program"),
        "{start:#?}"
    );
    assert!(
        shows(&start, "(`other-tool`) does not register"),
        "{start:#?}"
    );
    assert!(shows(&start, "(position 0: no event yet)"), "{start:#?}");

    // Goto, search and step still work over the timeline; the payload and cause show.
    press(&mut app, &[KeyCode::Char(':')]);
    press(&mut app, &chars("1"));
    press(&mut app, &[KeyCode::Enter]);
    let first = screen(&mut terminal, &app);
    assert_eq!(marked(&first), "1 workflow:started");
    assert!(shows(&first, "caused by: (nothing"), "{first:#?}");
    press(&mut app, &[KeyCode::Char('/')]);
    press(&mut app, &chars("entry:booked"));
    press(&mut app, &[KeyCode::Enter]);
    let booked = screen(&mut terminal, &app);
    assert_eq!(app.current().unwrap().name, "entry:booked");
    assert!(shows(&booked, "\"label\": \"coffee\""), "{booked:#?}");
    // Caused by the clerk's completion, named with its seq.
    assert!(shows(&booked, "caused by: position"), "{booked:#?}");
    assert!(shows(&booked, "agent:completed"), "{booked:#?}");
    // Still no state anywhere.
    assert!(!shows(&booked, "\"balance\""), "{booked:#?}");

    // Play to the end.
    press(&mut app, &[KeyCode::Home, KeyCode::Char(' ')]);
    for _ in 0..=len {
        app.tick();
    }
    assert_eq!(app.position(), len);
    assert!(!app.is_playing());
    press(&mut app, &[KeyCode::Char('q')]);
    assert!(app.should_quit());
}

#[tokio::test]
async fn every_key_on_the_planner_executor_demo() {
    let store = MemoryStore::new();
    let host = Host::new(store)
        .workflow(example::workflow(MemoryStore::new(), example::scripted_provider()).unwrap())
        .unwrap();
    let outcome = host
        .run(
            example::WORKFLOW_NAME,
            Some(example::DEMO_GOAL.into()),
            RunOptions::new(),
        )
        .await
        .unwrap();
    let mut app = Debugger::open(&host, &outcome.session, "openharness")
        .await
        .unwrap();
    let len = app.len();
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
    assert!(
        shows(&plan, "\"title\": \"Write the changelog\""),
        "{plan:#?}"
    );

    // A text delta changes nothing.
    press(&mut app, &[KeyCode::Char('h'), KeyCode::Char('h')]);
    let delta = screen(&mut terminal, &app);
    assert_eq!(marked(&delta), "13 text:delta");
    assert!(shows(&delta, "(no change to the state)"));

    // Search by name, then the next match, then the previous.
    press(&mut app, &[KeyCode::Char('/')]);
    press(&mut app, &chars("task:completed"));
    press(&mut app, &[KeyCode::Enter]);
    let first_done = app.position();
    assert_eq!(app.current().unwrap().name, "task:completed");
    let found = screen(&mut terminal, &app);
    assert!(shows(&found, "replace /completed = 1"), "{found:#?}");
    press(&mut app, &[KeyCode::Char('n')]);
    assert!(app.position() > first_done);
    assert!(shows(
        &screen(&mut terminal, &app),
        "replace /completed = 2"
    ));
    press(&mut app, &[KeyCode::Char('N')]);
    assert_eq!(app.position(), first_done);
    press(&mut app, &[KeyCode::Char('/')]);
    press(&mut app, &chars("no:such"));
    press(&mut app, &[KeyCode::Enter]);
    assert!(shows(
        &screen(&mut terminal, &app),
        "no `no:such` after position"
    ));
    assert_eq!(app.position(), first_done);

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
    assert_eq!(app.position(), len);
    press(&mut app, &[KeyCode::Home, KeyCode::Left]);
    assert_eq!(app.position(), 0);

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
