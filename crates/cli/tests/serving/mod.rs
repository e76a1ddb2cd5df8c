//! Starting `openharness serve` in a test and finding the port it listens on; one chat
//! message sent to it; a fresh PostgreSQL database for one (`postgres`).

pub(crate) mod postgres;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use openharness_testkit::block_on;
use openharness_testkit::http::{Client, Response};

use crate::binary::Killed;

/// Starts `command`, an `openharness serve --addr 127.0.0.1:0 …`, with its stdout piped, and
/// reads the first line it prints: the process (killed when dropped, so a failing test leaves
/// no server behind), the port that line names, and the line.
pub(crate) fn start_serve(mut command: Command) -> (Killed, u16, String) {
    let mut server = command.stdout(Stdio::piped()).spawn().unwrap();
    let mut first = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let port = first
        .split("http://127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("no port in {first:?}"));
    (Killed(server), port, first)
}

/// The kit's client of the server on `port` (on 127.0.0.1).
#[allow(dead_code)] // each test file uses what it needs
pub(crate) fn client(port: u16) -> Client {
    Client::new(([127, 0, 0, 1], port).into())
}

/// Sends the chat `chat` one user message `text` the way `useChat` does (`POST /api/chat`) to
/// the server on `port`, and returns the whole answer (the turn's stream as its body).
#[allow(dead_code)] // each test file uses what it needs
pub(crate) fn post_chat(port: u16, chat: &str, text: &str) -> Response {
    let body = serde_json::json!({
        "id": chat,
        "trigger": "submit-message",
        "messages": [{ "id": "m1", "role": "user", "parts": [{ "type": "text", "text": text }] }],
    });
    block_on(client(port).post("/api/chat", &body))
}
