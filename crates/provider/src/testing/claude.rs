//! [`FakeClaude`]: a stand-in `claude` executable that prints recorded-shape stream-json.
//!
//! It is a small `/bin/sh` script in a temporary directory. Like the real CLI it exits 1 with
//! `Error: When using --print, --output-format=stream-json requires --verbose` when `--verbose`
//! is missing. Otherwise it records its arguments and the stdin line, and prints the NDJSON of
//! its N-th scripted run (the last one again when the script is used up). A run can be made to
//! hang after printing, for cancellation tests.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use super::anthropic::{Block, message_events, pieces};

const SCRIPT: &str = r#"#!/bin/sh
dir="$(dirname "$0")"
verbose=no
for arg in "$@"; do
  if [ "$arg" = "--verbose" ]; then verbose=yes; fi
done
if [ "$verbose" != yes ]; then
  echo "Error: When using --print, --output-format=stream-json requires --verbose" >&2
  exit 1
fi
n=$(($(cat "$dir/calls" 2>/dev/null || echo 0) + 1))
echo "$n" > "$dir/calls"
printf '%s\n' "$@" > "$dir/args.$n"
echo "$$" > "$dir/pid.$n"
IFS= read -r line
printf '%s\n' "$line" > "$dir/stdin.$n"
run="$dir/run.$n.ndjson"
if [ ! -f "$run" ]; then run="$dir/last.ndjson"; fi
cat "$run"
if [ -f "$run.hang" ]; then sleep 30; fi
exit 0
"#;

/// A fake `claude` executable.
///
/// ```no_run
/// use openharness_provider::testing::FakeClaude;
/// use openharness_provider::ClaudeCliProvider;
/// use serde_json::json;
/// let fake = FakeClaude::new().unwrap();
/// fake.push_run(&FakeClaude::success("Done.", Some(json!({ "summary": "done" })))).unwrap();
/// let provider = ClaudeCliProvider::new().program(fake.program());
/// # let _ = provider;
/// ```
#[derive(Debug)]
pub struct FakeClaude {
    dir: PathBuf,
    runs: AtomicU64,
}

impl Drop for FakeClaude {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl FakeClaude {
    /// Writes the script into a fresh temporary directory.
    pub fn new() -> std::io::Result<Self> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "openharness-fake-claude-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        let program = dir.join("claude");
        std::fs::write(&program, SCRIPT)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755))?;
        }
        Ok(Self {
            dir,
            runs: AtomicU64::new(0),
        })
    }

    /// The executable's path.
    pub fn program(&self) -> PathBuf {
        self.dir.join("claude")
    }

    /// Scripts the next run to print these NDJSON lines.
    pub fn push_run(&self, lines: &[Value]) -> std::io::Result<()> {
        self.write_run(lines, false)
    }

    /// Scripts the next run to print these lines and then hang (until killed).
    pub fn push_hanging_run(&self, lines: &[Value]) -> std::io::Result<()> {
        self.write_run(lines, true)
    }

    fn write_run(&self, lines: &[Value], hang: bool) -> std::io::Result<()> {
        let n = self.runs.fetch_add(1, Ordering::Relaxed) + 1;
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let path = self.dir.join(format!("run.{n}.ndjson"));
        std::fs::write(&path, &text)?;
        std::fs::write(self.dir.join("last.ndjson"), &text)?;
        let hang_marker = path.with_extension("ndjson.hang");
        if hang {
            std::fs::write(&hang_marker, "")?;
            std::fs::write(self.dir.join("last.ndjson.hang"), "")?;
        } else {
            let _ = std::fs::remove_file(self.dir.join("last.ndjson.hang"));
        }
        Ok(())
    }

    /// How many times the executable ran past the argument check.
    pub fn calls(&self) -> usize {
        read(&self.dir.join("calls")).trim().parse().unwrap_or(0)
    }

    /// The arguments of run `n` (1-based).
    pub fn args(&self, n: usize) -> Vec<String> {
        read(&self.dir.join(format!("args.{n}")))
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The stdin line of run `n`, parsed.
    pub fn stdin(&self, n: usize) -> Value {
        serde_json::from_str(read(&self.dir.join(format!("stdin.{n}"))).trim())
            .unwrap_or(Value::Null)
    }

    /// The process id of run `n`.
    pub fn pid(&self, n: usize) -> Option<u32> {
        read(&self.dir.join(format!("pid.{n}"))).trim().parse().ok()
    }

    /// The lines of a successful run in the CLI's shape: `system/init`, partial-message stream
    /// events for `text`, the `assistant` message, and a `success` result carrying
    /// `structured_output` (when given), usage and cost.
    pub fn success(text: &str, structured_output: Option<Value>) -> Vec<Value> {
        let session = "4f5e0a8e-2b7c-4e54-9d57-3c2b1f0e9a11";
        let mut lines = vec![json!({
            "type": "system", "subtype": "init", "uuid": "0b1c", "session_id": session,
            "apiKeySource": "none", "claude_code_version": "2.1.0", "cwd": "/tmp", "tools": ["Bash", "Read"],
            "mcp_servers": [], "model": "claude-sonnet-4-5", "permissionMode": "default",
            "slash_commands": [], "output_style": "default", "skills": [], "plugins": []
        })];
        for event in message_events(&[Block::Text(text.into())], "end_turn", 12, 8) {
            let data = event
                .lines()
                .nth(1)
                .and_then(|l| l.strip_prefix("data: "))
                .unwrap_or("{}");
            let event: Value = serde_json::from_str(data).unwrap_or(Value::Null);
            lines.push(json!({ "type": "stream_event", "event": event, "parent_tool_use_id": null, "uuid": "5d6e", "session_id": session }));
        }
        lines.push(json!({
            "type": "assistant", "uuid": "7f80", "session_id": session, "parent_tool_use_id": null,
            "message": {
                "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{ "type": "text", "text": text }], "stop_reason": "end_turn", "stop_sequence": null,
                "usage": { "input_tokens": 12, "output_tokens": 8 }
            }
        }));
        let mut result = json!({
            "type": "result", "subtype": "success", "uuid": "9a0b", "session_id": session,
            "duration_ms": 1834, "duration_api_ms": 1602, "is_error": false, "num_turns": 1,
            "result": text, "stop_reason": "end_turn", "total_cost_usd": 0.00123,
            "usage": { "input_tokens": 12, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 40, "output_tokens": 8 },
            "modelUsage": {}, "permission_denials": []
        });
        if let Some(output) = structured_output {
            result["structured_output"] = output;
        }
        lines.push(result);
        lines
    }

    /// The lines of a run in which the CLI used one of its own tools before answering.
    pub fn with_tool_use(text: &str, structured_output: Value) -> Vec<Value> {
        let session = "4f5e0a8e-2b7c-4e54-9d57-3c2b1f0e9a11";
        let mut lines = vec![
            json!({ "type": "assistant", "uuid": "a1", "session_id": session, "parent_tool_use_id": null, "message": {
                "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{ "type": "tool_use", "id": "toolu_01Bash", "name": "Bash", "input": { "command": "date -u" } }],
                "stop_reason": "tool_use", "usage": { "input_tokens": 5, "output_tokens": 5 } } }),
            json!({ "type": "user", "uuid": "u1", "session_id": session, "parent_tool_use_id": null, "message": {
                "role": "user", "content": [{ "type": "tool_result", "tool_use_id": "toolu_01Bash", "content": [{ "type": "text", "text": "Sun Nov 22 20:00:00 UTC 2026" }], "is_error": false }] } }),
        ];
        let mut success = Self::success(text, Some(structured_output));
        success.remove(0);
        lines.extend(success);
        lines
    }

    /// The result line of a run that failed with `subtype` (e.g. `error_max_turns`).
    pub fn failure(subtype: &str, errors: &[&str]) -> Vec<Value> {
        vec![json!({
            "type": "result", "subtype": subtype, "uuid": "9a0b", "session_id": "4f5e0a8e-2b7c-4e54-9d57-3c2b1f0e9a11",
            "duration_ms": 10, "duration_api_ms": 8, "is_error": true, "num_turns": 3, "stop_reason": null,
            "total_cost_usd": 0.0004, "usage": { "input_tokens": 3, "output_tokens": 1 }, "modelUsage": {},
            "permission_denials": [], "errors": errors
        })]
    }

    /// Text split the way a streamed answer would be (for assertions on deltas).
    pub fn deltas(text: &str) -> Vec<String> {
        pieces(text, 7)
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}
