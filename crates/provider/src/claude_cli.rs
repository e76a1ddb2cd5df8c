//! [`ClaudeCliProvider`]: the `claude` CLI (Claude Code) driven as a subprocess.
//!
//! Each request spawns `claude -p --output-format stream-json --verbose --input-format
//! stream-json` (plus `--json-schema`, `--system-prompt`, `--max-turns`, `--model`,
//! `--resume`, `--include-partial-messages`, `--no-session-persistence` as configured),
//! writes the prompt as one stream-json user message, closes stdin and reads the NDJSON it
//! prints:
//! `stream_event` text deltas (or, without partial messages, the text of each `assistant`
//! message) become text deltas, the tools the CLI runs become tool calls and results, and the
//! final `result` line gives the structured output, usage and `total_cost_usd`. A `result`
//! with `is_error` or a non-`success` subtype, or a process that exits without one, fails the
//! request. Dropping the request's future kills the process group.
//!
//! A request's system prompt is `--system-prompt`. Its conversation cannot be given to the CLI
//! as separate turns (stream-json input takes user messages only, each one a turn of its own),
//! so it goes in the one user message as a transcript before the prompt. A request for plain
//! text (a `String` output) is run without `--json-schema`, and the result's text is the
//! output.
//!
//! The CLI runs its own tools, so an agent's [`Tool`](openharness_core::Tool)s cannot be
//! offered through it; a request with tools fails with an explanation. A request's images go
//! in the user message as Anthropic `image` blocks; its reasoning effort is not passed (the
//! CLI has no documented flag for it), so the CLI's own setting applies.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use openharness_core::{
    Provider, ProviderError,
    adapter::{
        ProviderEvent, ProviderRequest, ProviderResponse, ProviderResult, ProviderSink, Usage,
    },
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use crate::conversation;

const NAME: &str = "claude-cli";

/// The `claude` CLI as a [`Provider`].
///
/// ```
/// use openharness_provider::ClaudeCliProvider;
/// let provider = ClaudeCliProvider::new()
///     .model("sonnet")
///     .persist_session(false)
///     .include_partial_messages(true);
/// assert_eq!(provider.command_line(&openharness_core::adapter::ProviderRequest::new(
///     "planner", "plan", std::sync::Arc::new(serde_json::json!({ "type": "object" })),
/// ))[..5], ["-p", "--output-format", "stream-json", "--verbose", "--input-format"]);
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct ClaudeCliProvider {
    program: PathBuf,
    model: Option<String>,
    resume: Option<String>,
    persist_session: bool,
    partial_messages: bool,
    args: Vec<String>,
    env: Vec<(String, String)>,
    idle_timeout: Duration,
}

impl Default for ClaudeCliProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl ClaudeCliProvider {
    /// Runs `claude` from the `PATH`, with partial messages on and sessions persisted.
    pub fn new() -> Self {
        Self {
            program: PathBuf::from("claude"),
            model: None,
            resume: None,
            persist_session: true,
            partial_messages: true,
            args: Vec::new(),
            env: Vec::new(),
            idle_timeout: Duration::from_secs(600),
        }
    }

    /// The executable to run (default `claude` from the `PATH`).
    pub fn program(mut self, program: impl Into<PathBuf>) -> Self {
        self.program = program.into();
        self
    }

    /// The default model (`--model`; agents may name another).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Resumes this session (`--resume`).
    pub fn resume(mut self, session: impl Into<String>) -> Self {
        self.resume = Some(session.into());
        self
    }

    /// Whether the CLI keeps the session on disk (default true; false adds
    /// `--no-session-persistence`).
    pub fn persist_session(mut self, persist: bool) -> Self {
        self.persist_session = persist;
        self
    }

    /// Whether to stream token deltas (`--include-partial-messages`, default true).
    pub fn include_partial_messages(mut self, partial: bool) -> Self {
        self.partial_messages = partial;
        self
    }

    /// An extra argument (e.g. `--permission-mode`, `--allowedTools`).
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// An environment variable for the process (e.g. `ANTHROPIC_BASE_URL`).
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// How long the CLI may print nothing before the request fails (default 10 minutes).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// The arguments a request runs the CLI with.
    pub fn command_line(&self, request: &ProviderRequest) -> Vec<String> {
        let mut args: Vec<String> = [
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--input-format",
            "stream-json",
        ]
        .map(str::to_owned)
        .into();
        if self.partial_messages {
            args.push("--include-partial-messages".into());
        }
        // Plain text is asked for with no schema: the result's text is the output.
        if !request.wants_text() {
            let mut schema = (*request.schema).clone();
            if let Some(object) = schema.as_object_mut() {
                object.remove("$schema");
            }
            args.extend(["--json-schema".into(), schema.to_string()]);
        }
        if let Some(system) = conversation::system_prompt(None, request) {
            args.extend(["--system-prompt".into(), system]);
        }
        args.extend(["--max-turns".into(), request.max_turns.max(1).to_string()]);
        if let Some(model) = request.model.as_ref().or(self.model.as_ref()) {
            args.extend(["--model".into(), model.clone()]);
        }
        if let Some(session) = &self.resume {
            args.extend(["--resume".into(), session.clone()]);
        }
        if !self.persist_session {
            args.push("--no-session-persistence".into());
        }
        args.extend(self.args.iter().cloned());
        args
    }

    fn failed(message: impl Into<String>) -> ProviderError {
        ProviderError::Failed {
            provider: NAME.into(),
            message: message.into(),
        }
    }
}

/// Kills the process group of a spawned CLI when dropped (the CLI starts MCP servers and hooks
/// of its own), unless disarmed after a normal exit.
struct GroupGuard {
    pid: Option<u32>,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.pid.take() {
            // Best effort: the child itself is also killed by `kill_on_drop`.
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

#[async_trait]
impl Provider for ClaudeCliProvider {
    fn name(&self) -> &str {
        NAME
    }

    async fn complete(&self, request: ProviderRequest, sink: ProviderSink) -> ProviderResult {
        if !request.tools.is_empty() {
            return Err(Self::failed(format!(
                "agent `{}` offers tools ({}), but the claude CLI runs only its own tools; use the anthropic provider for agents with tools",
                request.agent,
                request.tools.names().join(", ")
            )));
        }
        let mut command = Command::new(&self.program);
        command
            .args(self.command_line(&request))
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command.spawn().map_err(|err| {
            Self::failed(format!(
                "could not start `{}`: {err}; install Claude Code or point the provider at the executable with `.program(...)`",
                self.program.display()
            ))
        })?;
        let mut guard = GroupGuard { pid: child.id() };

        let message = json!({
            "type": "user",
            "message": { "role": "user", "content": conversation::cli_user_content(&request) },
        });
        if let Some(mut stdin) = child.stdin.take() {
            let line = format!("{message}\n");
            // A CLI that exits early closes its stdin; its output then says why.
            let _ = stdin.write_all(line.as_bytes()).await;
            let _ = stdin.shutdown().await;
        }
        let mut stderr = child.stderr.take();
        let Some(stdout) = child.stdout.take() else {
            return Err(Self::failed("the CLI's stdout was not captured"));
        };
        let mut lines = BufReader::new(stdout).lines();
        let mut reader = CliOutput::default();
        let result = loop {
            let line = tokio::time::timeout(self.idle_timeout, lines.next_line())
                .await
                .map_err(|_| {
                    Self::failed(format!(
                        "the CLI printed nothing for {:?} (the idle timeout)",
                        self.idle_timeout
                    ))
                })?
                .map_err(|err| Self::failed(format!("could not read the CLI's output: {err}")))?;
            let Some(line) = line else {
                break None;
            };
            if let Some(result) = reader.line(&line, &sink, request.wants_text())? {
                break Some(result);
            }
        };
        let Some(response) = result else {
            let status = child.wait().await.ok();
            let mut text = String::new();
            if let Some(stderr) = stderr.as_mut() {
                let _ = stderr.take(16 * 1024).read_to_string(&mut text).await;
            }
            guard.pid = None;
            return Err(Self::failed(format!(
                "the CLI exited ({}) without a result: {}",
                status.map_or_else(|| "status unknown".to_owned(), |s| s.to_string()),
                if text.trim().is_empty() {
                    "(no stderr)"
                } else {
                    text.trim()
                }
            )));
        };
        // The result is in: let the process end on its own, and do not wait for it.
        drop(lines);
        let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
        Ok(response)
    }
}

/// The state of reading one CLI run's NDJSON.
#[derive(Default)]
struct CliOutput {
    /// Text deltas streamed since the last `assistant` message.
    streamed_text: bool,
    /// Tool names by call id, to name results.
    tools: HashMap<String, String>,
}

impl CliOutput {
    /// Handles one line; returns the response once the `result` line arrives.
    fn line(
        &mut self,
        line: &str,
        sink: &ProviderSink,
        text: bool,
    ) -> Result<Option<ProviderResponse>, ProviderError> {
        let line = line.trim();
        if line.is_empty() {
            return Ok(None);
        }
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            tracing::warn!(line = %line.chars().take(200).collect::<String>(), "the claude CLI printed a line that is not JSON; skipped");
            return Ok(None);
        };
        match message["type"].as_str() {
            Some("stream_event") => {
                let event = &message["event"];
                if event["type"] == "content_block_delta"
                    && event["delta"]["type"] == "text_delta"
                    && let Some(text) = event["delta"]["text"].as_str()
                    && !text.is_empty()
                {
                    self.streamed_text = true;
                    sink.emit(ProviderEvent::TextDelta(text.to_owned()));
                }
            }
            Some("assistant") => {
                let streamed = std::mem::take(&mut self.streamed_text);
                for block in message["message"]["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    match block["type"].as_str() {
                        Some("text") if !streamed => {
                            if let Some(text) = block["text"].as_str().filter(|t| !t.is_empty()) {
                                sink.emit(ProviderEvent::TextDelta(text.to_owned()));
                            }
                        }
                        Some("tool_use") => {
                            let id = block["id"].as_str().unwrap_or_default().to_owned();
                            let tool = block["name"].as_str().unwrap_or_default().to_owned();
                            self.tools.insert(id.clone(), tool.clone());
                            sink.emit(ProviderEvent::ToolCalled {
                                server: None,
                                id,
                                tool,
                                input: block["input"].clone(),
                            });
                        }
                        _ => {}
                    }
                }
            }
            Some("user") => {
                for block in message["message"]["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    if block["type"] != "tool_result" {
                        continue;
                    }
                    let id = block["tool_use_id"].as_str().unwrap_or_default().to_owned();
                    let tool = self.tools.get(&id).cloned().unwrap_or_default();
                    let output = match &block["content"] {
                        Value::Array(parts) => Value::String(
                            parts
                                .iter()
                                .filter_map(|p| p["text"].as_str())
                                .collect::<Vec<_>>()
                                .join("\n"),
                        ),
                        other => other.clone(),
                    };
                    sink.emit(ProviderEvent::ToolResult {
                        id,
                        tool,
                        output,
                        is_error: block["is_error"].as_bool().unwrap_or(false),
                    });
                }
            }
            Some("result") => return result(&message, text).map(Some),
            _ => {} // system/init, compact boundaries, hooks, and types added later
        }
        Ok(None)
    }
}

/// The response a `result` line gives: its `structured_output` (or JSON parsed from its
/// `result` text), or for a request for plain `text` its `result` text as it is.
fn result(message: &Value, text: bool) -> ProviderResult {
    let subtype = message["subtype"].as_str().unwrap_or("unknown");
    if message["is_error"].as_bool().unwrap_or(false) || subtype != "success" {
        let errors: Vec<&str> = message["errors"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let detail = if errors.is_empty() {
            message["result"]
                .as_str()
                .unwrap_or("(no details)")
                .to_owned()
        } else {
            errors.join("; ")
        };
        return Err(ClaudeCliProvider::failed(format!(
            "the CLI's run ended with `{subtype}`: {detail}"
        )));
    }
    let answer = message["result"].as_str().unwrap_or_default();
    let output = match message.get("structured_output") {
        _ if text => Value::String(answer.to_owned()),
        Some(output) if !output.is_null() => output.clone(),
        _ => conversation::parse_output(answer),
    };
    let usage = &message["usage"];
    let field = |name: &str| usage[name].as_u64().unwrap_or(0);
    let usage = Usage {
        input_tokens: field("input_tokens"),
        output_tokens: field("output_tokens"),
        cache_read_tokens: field("cache_read_input_tokens"),
        cache_creation_tokens: field("cache_creation_input_tokens"),
    };
    Ok(ProviderResponse::new(
        output,
        usage,
        message["total_cost_usd"].as_f64(),
    ))
}
