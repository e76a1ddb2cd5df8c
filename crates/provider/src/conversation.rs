//! The tool loop shared by the HTTP providers: ask the model, run the tools it calls, send the
//! results back, until it answers without calling a tool or `max_turns` is reached.
//!
//! Each provider implements [`Dialect`] (how one turn is sent and read, how tool results are
//! appended to its message history); this module owns the loop, the recording of every call as
//! [`ProviderEvent::ToolCalled`] / [`ProviderEvent::ToolResult`], and the parsing of the final
//! answer into JSON.

use async_trait::async_trait;
use openharness_core::{
    Image, ProviderError, ProviderEvent, ProviderRequest, ProviderResponse, ProviderSink, Toolbox,
    Usage,
};
use serde_json::Value;

/// One tool call the model made.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolCall {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) input: Value,
}

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
        match &self.output {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        }
    }
}

/// How a provider talks: one turn at a time, with its own message history.
#[async_trait]
pub(crate) trait Dialect: Send {
    /// Sends the conversation so far and reads the model's turn, streaming text into `sink`.
    async fn turn(&mut self, sink: &ProviderSink) -> Result<Turn, ProviderError>;

    /// Appends the model's turn and the tools' results to the history.
    fn push_results(&mut self, turn: &Turn, outcomes: &[ToolOutcome]);

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
) -> Result<ProviderResponse, ProviderError> {
    let mut usage = Usage::default();
    let max_turns = request.max_turns.max(1);
    for turn_number in 1..=max_turns {
        let turn = dialect.turn(sink).await?;
        usage += turn.usage;
        if let Some(output_tool) = dialect.output_tool()
            && let Some(call) = turn.calls.iter().find(|c| c.name == output_tool)
        {
            let output = dialect.finish_output(call.input.clone());
            return Ok(response(dialect, output, usage));
        }
        if turn.calls.is_empty() {
            let output = dialect.finish_output(parse_output(&turn.text));
            return Ok(response(dialect, output, usage));
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

fn response(dialect: &dyn Dialect, output: Value, usage: Usage) -> ProviderResponse {
    ProviderResponse {
        output,
        usage,
        cost: dialect.cost(&usage),
    }
}

/// Calls each tool in order, reporting the call and its result. A failing or unknown tool is
/// an error result the model will read.
async fn call_tools(tools: &Toolbox, calls: &[ToolCall], sink: &ProviderSink) -> Vec<ToolOutcome> {
    let mut outcomes = Vec::with_capacity(calls.len());
    for call in calls {
        sink.emit(ProviderEvent::ToolCalled {
            id: call.id.clone(),
            tool: call.name.clone(),
            input: call.input.clone(),
        });
        let (output, is_error) = match tools.call(&call.name, call.input.clone()).await {
            Ok(output) => (output, false),
            Err(err) => (Value::String(err.message().to_owned()), true),
        };
        sink.emit(ProviderEvent::ToolResult {
            id: call.id.clone(),
            tool: call.name.clone(),
            output: output.clone(),
            is_error,
        });
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
        Some(error) => format!(
            "{}\n\nYour previous answer (attempt {}) was rejected: {error}\nAnswer again with JSON that matches the required schema exactly.",
            request.prompt,
            request.attempt.saturating_sub(1).max(1)
        ),
        None => request.prompt.clone(),
    }
}

/// The user message's `content` in Anthropic's shape (which the `claude` CLI's stream-json
/// input takes too): the prompt as a string, or, with images, an `image` block per image
/// (images first, as Anthropic advises) and the prompt as a `text` block.
pub(crate) fn anthropic_user_content(request: &ProviderRequest) -> Value {
    let prompt = user_prompt(request);
    if request.images.is_empty() {
        return Value::String(prompt);
    }
    let mut blocks: Vec<Value> = request
        .images
        .iter()
        .map(|image| {
            let source = match image {
                Image::Url { url } => serde_json::json!({ "type": "url", "url": url }),
                Image::Base64 { media_type, data } => serde_json::json!({
                    "type": "base64",
                    "media_type": media_type,
                    "data": data,
                }),
            };
            serde_json::json!({ "type": "image", "source": source })
        })
        .collect();
    blocks.push(serde_json::json!({ "type": "text", "text": prompt }));
    Value::Array(blocks)
}

/// The user message's `content` in OpenAI's Chat Completions shape: the prompt as a string,
/// or, with images, a `text` part and an `image_url` part per image (inline images as `data:`
/// URLs).
pub(crate) fn openai_user_content(request: &ProviderRequest) -> Value {
    let prompt = user_prompt(request);
    if request.images.is_empty() {
        return Value::String(prompt);
    }
    let mut parts = vec![serde_json::json!({ "type": "text", "text": prompt })];
    parts.extend(request.images.iter().map(|image| {
        serde_json::json!({ "type": "image_url", "image_url": { "url": image.data_url() } })
    }));
    Value::Array(parts)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

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
