//! The built `openharness` binary, run as the CLI's suites run it: in a test's folder, with no
//! store, OTLP endpoint or provider key inherited from the environment that runs the tests
//! (a suite that wants one sets it on [`command`]).
#![allow(dead_code)] // each suite uses what it needs

use std::path::Path;
use std::process::{Child, Command, Output};

/// `openharness` in `dir`, its environment cleared of what the suites set themselves; add the
/// arguments (and any variable) before running it.
pub(crate) fn command(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_openharness"));
    command.current_dir(dir);
    for name in [
        "OPENHARNESS_STORE",
        "OPENHARNESS_API_KEY",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
    ] {
        command.env_remove(name);
    }
    command
}

/// `openharness ARGS` in `dir`, run to its end.
pub(crate) fn openharness(dir: &Path, args: &[&str]) -> Output {
    command(dir)
        .args(args)
        .output()
        .unwrap_or_else(|err| panic!("openharness {args:?} did not run: {err}"))
}

/// The standard output of a command that succeeded (else a panic showing both streams).
pub(crate) fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "command failed ({}):\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone())
        .unwrap_or_else(|err| panic!("the command's stdout is not UTF-8: {err}"))
}

/// What a command printed, standard output then standard error, for a failure message or an
/// assertion on a refusal.
pub(crate) fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The first word after `prefix` on the first line of `text` that starts with it (leading
/// spaces aside): the session id after `Session `, say.
pub(crate) fn word_after(text: &str, prefix: &str) -> String {
    text.lines()
        .find_map(|l| {
            l.trim_start()
                .strip_prefix(prefix)
                .and_then(|rest| rest.split_whitespace().next())
        })
        .unwrap_or_else(|| panic!("no line starting with {prefix:?} in:\n{text}"))
        .to_owned()
}

/// A process a test started, killed (and reaped) when dropped: a server never outlives the
/// test that started it, even one that fails.
pub(crate) struct Killed(pub(crate) Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
