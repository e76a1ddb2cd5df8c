//! Many readers, one writer, several processes: while `openharness serve` writes the redb
//! file, 40 CLI readers at once (sessions, events, tape, check, export) are never refused and
//! see what the server commits; a second writer is refused with an error naming the server;
//! a program that keeps its store to itself is named to the reader it refuses.
#![allow(clippy::unwrap_used, missing_docs)]

mod binary;
mod serving;

use binary::{openharness, text};

#[test]
fn readers_are_never_refused_by_a_writer_and_a_second_writer_is_told_who_writes() {
    let dir = tempfile::tempdir().unwrap();
    assert!(openharness(dir.path(), &["demo"]).status.success());
    let listed: serde_json::Value =
        serde_json::from_slice(&openharness(dir.path(), &["sessions", "--json"]).stdout).unwrap();
    let demo = listed[0]["id"].as_str().unwrap().to_owned();

    let mut command = binary::command(dir.path());
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--chat-workflow", "chat"])
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT");
    let (server, port, _) = serving::start_serve(command);

    // 40 readers at once, while the server records a turn.
    let readers: Vec<_> = (0..40)
        .map(|i| {
            let (dir, demo) = (dir.path().to_owned(), demo.clone());
            std::thread::spawn(move || {
                let args: Vec<&str> = match i % 5 {
                    0 => vec!["sessions", "--json"],
                    1 => vec!["events", &demo, "--json"],
                    2 => vec!["tape", &demo, "--at", "5", "--json"],
                    3 => vec!["check"],
                    _ => vec!["export", &demo],
                };
                let output = openharness(&dir, &args);
                (args.join(" "), output)
            })
        })
        .collect();
    let written = "0190a8c4-5f00-7000-8000-00000000beef";
    let answered = serving::post_chat(port, written, "Hi there");
    assert_eq!(answered.status, 200, "{answered:?}");
    let mut refused = Vec::new();
    for reader in readers {
        let (args, output) = reader.join().unwrap();
        if !output.status.success() {
            refused.push(format!("{args}: {}", text(&output)));
        }
    }
    assert!(
        refused.is_empty(),
        "{} of 40 readers failed: {refused:#?}",
        refused.len()
    );

    // What the server committed, a reader in another process sees.
    let events = openharness(dir.path(), &["events", written, "--json"]);
    assert!(events.status.success(), "{}", text(&events));
    assert!(
        String::from_utf8_lossy(&events.stdout).contains("Hi there"),
        "{}",
        text(&events)
    );

    // A second writer is refused, told who writes the store and what still works.
    let second = openharness(dir.path(), &["demo", "chat"]);
    assert!(!second.status.success());
    let said = text(&second);
    assert!(said.contains("is being written by pid"), "{said}");
    assert!(said.contains("openharness serve"), "{said}");
    assert!(said.contains("commands that only read it"), "{said}");

    drop(server);
    // Once the writer is gone, writing works again.
    let after = openharness(dir.path(), &["demo", "chat"]);
    assert!(after.status.success(), "{}", text(&after));
}

#[test]
fn a_program_that_keeps_its_store_to_itself_is_named_to_the_reader() {
    let dir = tempfile::tempdir().unwrap();
    assert!(openharness(dir.path(), &["demo"]).status.success());
    // A program of the user's, opening the store the library's default way (not shared).
    let path = dir.path().join(".openharness/store.redb");
    let program = openharness::store::RedbStore::open(&path).unwrap();
    let refused = openharness(dir.path(), &["sessions"]);
    assert!(!refused.status.success());
    let said = text(&refused);
    assert!(said.contains("which keeps the file to itself"), "{said}");
    assert!(
        said.contains(&format!("pid {}", std::process::id())),
        "{said}"
    );
    assert!(said.contains("share_with_readers(true)"), "{said}");
    drop(program);
    assert!(openharness(dir.path(), &["sessions"]).status.success());
}
