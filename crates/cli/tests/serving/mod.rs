//! Starting `openharness serve` in a test and finding the port it listens on; a fresh
//! PostgreSQL database for one (`postgres`).

pub(crate) mod postgres;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// Starts `command`, an `openharness serve --addr 127.0.0.1:0 …`, with its stdout piped, and
/// reads the first line it prints: the process, the port that line names, and the line.
pub(crate) fn start_serve(mut command: Command) -> (Child, u16, String) {
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
    (server, port, first)
}
