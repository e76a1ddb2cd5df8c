//! The tool loop shared by the HTTP providers: ask the model, run the tools it calls, send the
//! results back, until it answers without calling a tool or `max_turns` is reached. Before each
//! model turn, what a person steered into the call ([`ProviderSink::take_steered`]) joins the
//! history as a user message.
//!
//! Each provider implements [`Dialect`] (how one turn is sent and read, how tool results are
//! appended to its message history); this module owns the loop, the recording of every call as
//! [`ProviderEvent::ToolCalled`] / [`ProviderEvent::ToolResult`], the parsing of the final
//! answer into JSON (or, for a request that [wants text](ProviderRequest::wants_text), the
//! final text as the output), and the request's system prompt and conversation in each
//! provider's message shape.

use async_trait::async_trait;
use openharness_core::{
    ChatMessage, Image, ProviderError,
    adapter::{
        ChatToolCall, ProviderRequest, ProviderResponse, ProviderResult, ProviderSink, Toolbox,
        Usage,
    },
};
use serde_json::{Value, json};

/// One tool call the model made: the shape of a call in the conversation a request carries,
/// so that both are sent back to the model by the same code.
pub(crate) type ToolCall = ChatToolCall;

/// What one model turn produced.
#[derive(Debug, Default)]
pub(crate) struct Turn {
    /// All the text, concatenated.
    pub(crate) text: String,
    /// The tool calls, in order.
    pub(crate) calls: Vec<ToolCall>,
    /// Tokens used by this turn.
    pub(crate) usage: Usage,
    /// Why the model stopped, as the API said it.
    pub(crate) stop_reason: Option<String>,
}

/// The result of one tool call, to send back.
#[derive(Debug, Clone)]
pub(crate) struct ToolOutcome {
    pub(crate) call: ToolCall,
    pub(crate) output: Value,
    pub(crate) is_error: bool,
}

impl ToolOutcome {
    /// The result as the text the model reads.
    pub(crate) fn content(&self) -> String {
        output_text(&self.output)
    }
}

/// How a provider talks: one turn at a time, with its own message history.
#[async_trait]
pub(crate) trait Dialect: Send {
    /// Sends the conversation so far and reads the model's turn, streaming text into `sink`.
    async fn turn(&mut self, sink: &ProviderSink) -> Result<Turn, ProviderError>;

    /// Appends the model's turn and the tools' results to the history.
    fn push_results(&mut self, turn: &Turn, outcomes: &[ToolOutcome]);

    /// Appends a person's message to the history (an input steered into the call): sent
    /// with the next model turn.
    fn push_user(&mut self, text: &str);

    /// The name of the tool that carries the final output (the forced-tool method), if any.
    fn output_tool(&self) -> Option<&str> {
        None
    }

    /// Adjusts the final output before it is returned (e.g. undoing a schema transformation).
    fn finish_output(&self, output: Value) -> Value {
        output
    }

    /// The cost of `usage` in US dollars, when the price is known.
    fn cost(&self, usage: &Usage) -> Option<f64>;
}

/// Runs the tool loop for `request` and returns the final output.
pub(crate) async fn run(
    provider: &str,
    dialect: &mut dyn Dialect,
    request: &ProviderRequest,
    sink: &ProviderSink,
) -> ProviderResult {
    let mut usage = Usage::default();
    let max_turns = request.max_turns.max(1);
    for turn_number in 1..=max_turns {
        // A person's messages steered into the call since its last model turn go with this one.
        for text in sink.take_steered() {
            dialect.push_user(&text);
        }
        let turn = dialect.turn(sink).await?;
        usage += turn.usage;
        if let Some(output_tool) = dialect.output_tool()
            && let Some(call) = turn.calls.iter().find(|c| c.name == output_tool)
        {
            let output = dialect.finish_output(call.input.clone());
            return Ok(response(dialect, output, usage));
        }
        if turn.calls.is_empty() {
            let output = if request.wants_text() {
                // The answer is the final turn's text, as written (no JSON to parse).
                Value::String(turn.text)
            } else {
                dialect.finish_output(parse_output(&turn.text))
            };
            return Ok(response(dialect, output, usage));
        }
        if turn
            .calls
            .iter()
            .any(|c| request.tools.runs_on_client(&c.name))
        {
            let cost = dialect.cost(&usage);
            return Ok(client_turn(request, turn, usage, cost, sink).await);
        }
        if turn_number == max_turns {
            break;
        }
        let outcomes = call_tools(&request.tools, &turn.calls, sink).await;
        dialect.push_results(&turn, &outcomes);
    }
    Err(ProviderError::Failed {
        provider: provider.into(),
        message: format!(
            "the model was still calling tools after {max_turns} turns (the agent's `max_turns`)"
        ),
    })
}

/// The end of a call whose model called the client's tools ([`openharness_core::ClientTool`]):
/// its other calls of that turn run here as usual (their results recorded, so the
/// conversation the next turn derives has them), the client's are reported and returned; the
/// turn's text is the output.
async fn client_turn(
    request: &ProviderRequest,
    turn: Turn,
    usage: Usage,
    cost: Option<f64>,
    sink: &ProviderSink,
) -> ProviderResponse {
    let (client, here): (Vec<ToolCall>, Vec<ToolCall>) = turn
        .calls
        .into_iter()
        .partition(|call| request.tools.runs_on_client(&call.name));
    call_tools(&request.tools, &here, sink).await;
    for call in &client {
        sink.client_tool_called(&call.id, &call.name, call.input.clone());
    }
    ProviderResponse {
        output: Value::String(turn.text),
        usage,
        cost,
        client_calls: client,
    }
}

fn response(dialect: &dyn Dialect, output: Value, usage: Usage) -> ProviderResponse {
    ProviderResponse::new(output, usage, dialect.cost(&usage))
}

/// Calls each tool in order, reporting the call and its result. A failing or unknown tool is
/// an error result the model will read.
async fn call_tools(tools: &Toolbox, calls: &[ToolCall], sink: &ProviderSink) -> Vec<ToolOutcome> {
    let mut outcomes = Vec::with_capacity(calls.len());
    for call in calls {
        let (output, is_error) = sink
            .call_tool(tools, &call.id, &call.name, call.input.clone())
            .await;
        outcomes.push(ToolOutcome {
            call: call.clone(),
            output,
            is_error,
        });
    }
    outcomes
}

/// The model's final text as JSON: the text itself, or inside a Markdown code fence, or the
/// outermost `{…}`. Text that holds no JSON is returned as a JSON string, so the runtime's
/// schema check rejects it and re-asks with the reason.
pub(crate) fn parse_output(text: &str) -> Value {
    let trimmed = text.trim();
    if let Ok(value) = serde_json::from_str(trimmed) {
        return value;
    }
    let fenced = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"));
    if let Some(inner) = fenced
        && let Ok(value) = serde_json::from_str(inner.trim())
    {
        return value;
    }
    if let (Some(start), Some(end)) = (trimmed.find('{'), trimmed.rfind('}'))
        && start < end
        && let Ok(value) = serde_json::from_str(&trimmed[start..=end])
    {
        return value;
    }
    Value::String(text.to_owned())
}

/// The user message for a request: the prompt, plus the reason the previous answer was
/// rejected on a re-ask.
pub(crate) fn user_prompt(request: &ProviderRequest) -> String {
    match &request.previous_error {
        Some(error) => {
            let rejected = format!(
                "Your previous answer (attempt {}) was rejected: {error}\nAnswer again with JSON that matches the required schema exactly.",
                request.attempt.saturating_sub(1).max(1)
            );
            if request.prompt.is_empty() {
                rejected
            } else {
                format!("{}\n\n{rejected}", request.prompt)
            }
        }
        None => request.prompt.clone(),
    }
}

/// The system prompt to send: the provider's own (set on its builder), then the request's,
/// separated by a blank line; `None` when neither is set.
pub(crate) fn system_prompt(configured: Option<&str>, request: &ProviderRequest) -> Option<String> {
    let parts: Vec<&str> = [configured, request.system.as_deref()]
        .into_iter()
        .flatten()
        .filter(|part| !part.trim().is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// A tool's output as the text a model reads.
fn output_text(output: &Value) -> String {
    match output {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// An image as an Anthropic `image` block.
fn anthropic_image(image: &Image) -> Value {
    let source = match image {
        Image::Url { url } => json!({ "type": "url", "url": url }),
        Image::Base64 { media_type, data } => json!({
            "type": "base64",
            "media_type": media_type,
            "data": data,
        }),
    };
    json!({ "type": "image", "source": source })
}

/// The request's conversation and prompt as Anthropic `messages`: user text and images
/// (images first, as Anthropic advises), assistant text and `tool_use` blocks, tool results
/// as `tool_result` blocks of a user message, then the prompt as the last user message.
/// Messages with nothing to say are left out, and consecutive messages of one role are merged
/// into one (tool results first, as the API requires), so roles alternate.
pub(crate) fn anthropic_messages(request: &ProviderRequest) -> Vec<Value> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in &request.messages {
        let (role, blocks) = match message {
            ChatMessage::User { text, images } => {
                let mut blocks: Vec<Value> = images.iter().map(anthropic_image).collect();
                if !text.is_empty() {
                    blocks.push(json!({ "type": "text", "text": text }));
                }
                ("user", blocks)
            }
            ChatMessage::Assistant { text, tool_calls } => {
                ("assistant", anthropic_assistant(text, tool_calls))
            }
            ChatMessage::Tool {
                id,
                output,
                is_error,
                ..
            } => (
                "user",
                vec![anthropic_tool_result(id, &output_text(output), *is_error)],
            ),
            _ => continue,
        };
        push_turn(&mut turns, role, blocks);
    }
    if request.sends_prompt() {
        let blocks = match anthropic_user_content(request) {
            Value::Array(blocks) => blocks,
            text => vec![json!({ "type": "text", "text": text })],
        };
        push_turn(&mut turns, "user", blocks);
    }
    if turns.is_empty() {
        // Nothing at all to say: the API needs a user message, so the empty prompt is sent.
        turns.push(("user", vec![json!({ "type": "text", "text": "" })]));
    }
    turns
        .into_iter()
        .map(|(role, blocks)| {
            // One text block is sent as a plain string, as the API's shorthand.
            let content = match blocks.as_slice() {
                [block] if block["type"] == "text" => block["text"].clone(),
                _ => Value::Array(blocks),
            };
            json!({ "role": role, "content": content })
        })
        .collect()
}

/// The content blocks of an Anthropic assistant turn: its text, when there is any, then a
/// `tool_use` block per call.
pub(crate) fn anthropic_assistant(text: &str, calls: &[ToolCall]) -> Vec<Value> {
    let mut blocks = Vec::with_capacity(1 + calls.len());
    if !text.is_empty() {
        blocks.push(json!({ "type": "text", "text": text }));
    }
    blocks.extend(calls.iter().map(
        |call| json!({ "type": "tool_use", "id": call.id, "name": call.name, "input": call.input }),
    ));
    blocks
}

/// The Anthropic `tool_result` block answering the call `id`.
pub(crate) fn anthropic_tool_result(id: &str, content: &str, is_error: bool) -> Value {
    json!({
        "type": "tool_result",
        "tool_use_id": id,
        "content": content,
        "is_error": is_error,
    })
}

/// Appends `blocks` as a turn of `role`, merged into the previous turn when it has the same
/// role (tool results before everything else in a user turn). Empty text blocks are dropped
/// (the API rejects them), and a turn with nothing left is not added.
fn push_turn(turns: &mut Vec<(&'static str, Vec<Value>)>, role: &'static str, blocks: Vec<Value>) {
    let blocks: Vec<Value> = blocks
        .into_iter()
        .filter(|block| block["type"] != "text" || block["text"].as_str() != Some(""))
        .collect();
    if blocks.is_empty() {
        return;
    }
    match turns.last_mut() {
        Some((last, existing)) if *last == role => {
            existing.extend(blocks);
            existing.sort_by_key(|block| block["type"] != "tool_result");
        }
        _ => turns.push((role, blocks)),
    }
}

/// The request's system prompt and conversation and prompt as OpenAI Chat Completions
/// `messages`: `system` first (the provider's own, then the request's), user text and
/// `image_url` parts, assistant text and `tool_calls`, a `tool` message per tool result, then
/// the prompt as the last user message.
pub(crate) fn openai_messages(
    configured_system: Option<&str>,
    request: &ProviderRequest,
) -> Vec<Value> {
    let mut messages = Vec::with_capacity(request.messages.len() + 2);
    if let Some(system) = system_prompt(configured_system, request) {
        messages.push(json!({ "role": "system", "content": system }));
    }
    for message in &request.messages {
        match message {
            ChatMessage::User { text, images } => {
                messages.push(json!({ "role": "user", "content": openai_content(text, images) }));
            }
            ChatMessage::Assistant { text, tool_calls } => {
                if tool_calls.is_empty() {
                    messages.push(json!({ "role": "assistant", "content": text }));
                } else {
                    messages.push(openai_assistant(text, tool_calls));
                }
            }
            ChatMessage::Tool { id, output, .. } => {
                messages.push(openai_tool_result(id, &output_text(output)));
            }
            _ => {}
        }
    }
    if request.sends_prompt() {
        messages.push(json!({ "role": "user", "content": openai_user_content(request) }));
    }
    messages
}

/// A user message's `content` in OpenAI's shape: the text as a string, or, with images, a
/// `text` part (when there is text) and an `image_url` part per image (inline images as
/// `data:` URLs).
/// The OpenAI assistant message that calls tools: its text (`null` when there is none) and a
/// `tool_calls` entry per call, whose input is sent as a JSON string in `arguments`.
pub(crate) fn openai_assistant(text: &str, calls: &[ToolCall]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|call| {
            json!({
                "id": call.id,
                "type": "function",
                "function": { "name": call.name, "arguments": call.input.to_string() },
            })
        })
        .collect();
    let content = if text.is_empty() {
        Value::Null
    } else {
        json!(text)
    };
    json!({ "role": "assistant", "content": content, "tool_calls": calls })
}

/// The OpenAI `tool` message answering the call `id`.
pub(crate) fn openai_tool_result(id: &str, content: &str) -> Value {
    json!({ "role": "tool", "tool_call_id": id, "content": content })
}

fn openai_content(text: &str, images: &[Image]) -> Value {
    if images.is_empty() {
        return Value::String(text.to_owned());
    }
    let mut parts = Vec::with_capacity(1 + images.len());
    if !text.is_empty() {
        parts.push(json!({ "type": "text", "text": text }));
    }
    parts.extend(
        images
            .iter()
            .map(|image| json!({ "type": "image_url", "image_url": { "url": image.data_url() } })),
    );
    Value::Array(parts)
}

/// The request's conversation and prompt as one user message's text, for a provider that
/// takes a single message (the `claude` CLI): the conversation as a transcript, then the
/// prompt. Without a conversation, the prompt alone (as before conversations existed).
pub(crate) fn transcript_prompt(request: &ProviderRequest) -> String {
    if request.messages.is_empty() {
        return user_prompt(request);
    }
    let mut lines = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        let line = match message {
            ChatMessage::User { text, images } => {
                let mut said = text.clone();
                if !images.is_empty() {
                    let shown = format!("[{} image(s), attached above]", images.len());
                    said = if said.is_empty() {
                        shown
                    } else {
                        format!("{said} {shown}")
                    };
                }
                format!("User: {said}")
            }
            ChatMessage::Assistant { text, tool_calls } => {
                let mut said = text.clone();
                for call in tool_calls {
                    let called = format!("[called `{}` with {}]", call.name, call.input);
                    said = if said.is_empty() {
                        called
                    } else {
                        format!("{said} {called}")
                    };
                }
                format!("Assistant: {said}")
            }
            ChatMessage::Tool {
                name,
                output,
                is_error,
                ..
            } => {
                let failed = if *is_error { " (failed)" } else { "" };
                format!("Tool `{name}`{failed}: {}", output_text(output))
            }
            _ => continue,
        };
        lines.push(line);
    }
    let mut text = format!("Conversation so far:\n{}", lines.join("\n"));
    if request.sends_prompt() {
        let prompt = user_prompt(request);
        if !prompt.is_empty() {
            text.push_str("\n\n");
            text.push_str(&prompt);
        }
    } else {
        text.push_str("\n\nAnswer the user's latest message.");
    }
    text
}

/// Every image of the request, in order: the conversation's, then the prompt's.
pub(crate) fn all_images(request: &ProviderRequest) -> Vec<&Image> {
    request
        .messages
        .iter()
        .filter_map(|message| match message {
            ChatMessage::User { images, .. } => Some(images.iter()),
            _ => None,
        })
        .flatten()
        .chain(&request.images)
        .collect()
}

/// The user message's `content` in Anthropic's shape: the prompt as a string, or, with
/// images, an `image` block per image (images first, as Anthropic advises) and the prompt as a
/// `text` block.
pub(crate) fn anthropic_user_content(request: &ProviderRequest) -> Value {
    let prompt = user_prompt(request);
    if request.images.is_empty() {
        return Value::String(prompt);
    }
    let mut blocks: Vec<Value> = request.images.iter().map(anthropic_image).collect();
    blocks.push(json!({ "type": "text", "text": prompt }));
    Value::Array(blocks)
}

/// The one user message the `claude` CLI's stream-json input takes, in Anthropic's shape: the
/// conversation as a transcript and the prompt ([`transcript_prompt`]), after an `image` block
/// per image of the conversation and the prompt.
pub(crate) fn cli_user_content(request: &ProviderRequest) -> Value {
    let text = transcript_prompt(request);
    let images = all_images(request);
    if images.is_empty() {
        return Value::String(text);
    }
    let mut blocks: Vec<Value> = images.into_iter().map(anthropic_image).collect();
    blocks.push(json!({ "type": "text", "text": text }));
    Value::Array(blocks)
}

/// The prompt's user message `content` in OpenAI's Chat Completions shape: the prompt as a
/// string, or, with images, a `text` part and an `image_url` part per image (inline images as
/// `data:` URLs).
pub(crate) fn openai_user_content(request: &ProviderRequest) -> Value {
    let prompt = user_prompt(request);
    if request.images.is_empty() {
        return Value::String(prompt);
    }
    let mut parts = vec![json!({ "type": "text", "text": prompt })];
    parts.extend(
        request
            .images
            .iter()
            .map(|image| json!({ "type": "image_url", "image_url": { "url": image.data_url() } })),
    );
    Value::Array(parts)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_re_ask_after_a_conversation_is_the_last_user_message() {
        let schema = std::sync::Arc::new(json!({ "type": "object" }));
        let mut request = ProviderRequest::new("a", "", schema).with_messages(vec![
            ChatMessage::user("Plan it."),
            ChatMessage::assistant("Done."),
        ]);
        assert!(!request.sends_prompt(), "the conversation says it all");
        assert_eq!(anthropic_messages(&request).len(), 2);
        request.attempt = 2;
        request.previous_error = Some("`tasks` is missing".into());
        let messages = anthropic_messages(&request);
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[2]["role"], "user");
        let note = messages[2]["content"].as_str().unwrap();
        assert!(
            note.starts_with("Your previous answer (attempt 1) was rejected: `tasks` is missing"),
            "{note}"
        );
        let openai = openai_messages(None, &request);
        assert_eq!(openai.last().unwrap()["content"], json!(note));
    }

    #[test]
    fn final_text_is_parsed_plain_fenced_or_embedded() {
        assert_eq!(parse_output(" {\"a\":1}\n"), json!({ "a": 1 }));
        assert_eq!(parse_output("```json\n{\"a\":2}\n```"), json!({ "a": 2 }));
        assert_eq!(
            parse_output("Here you go: {\"a\":3} — done"),
            json!({ "a": 3 })
        );
        assert_eq!(parse_output("no json"), json!("no json"));
    }
}
