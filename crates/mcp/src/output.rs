//! A tool call's MCP result as the JSON an agent's model reads and the log records: the
//! structured content when the server gives it, else the text, else the content blocks as
//! MCP writes them (images, resources); an `isError` result becomes a tool error.

use openharness_core::ToolError;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

/// The output of a tool call, or the error the model is shown.
pub(crate) fn output_of(result: CallToolResult) -> Result<Value, ToolError> {
    let texts: Option<Vec<&str>> = result
        .content
        .iter()
        .map(|block| block.as_text().map(|text| text.text.as_str()))
        .collect();
    if result.is_error == Some(true) {
        let message = match (&texts, &result.structured_content) {
            (Some(texts), _) if !texts.is_empty() => texts.join("\n"),
            (_, Some(structured)) => structured.to_string(),
            _ => blocks(&result.content).to_string(),
        };
        return Err(ToolError::new(message));
    }
    if let Some(structured) = result.structured_content {
        return Ok(structured);
    }
    Ok(match texts {
        Some(texts) if texts.len() == 1 => Value::String(texts[0].to_owned()),
        Some(texts) if !texts.is_empty() => Value::Array(
            texts
                .into_iter()
                .map(|t| Value::String(t.to_owned()))
                .collect(),
        ),
        _ => blocks(&result.content),
    })
}

/// Content blocks as MCP writes them on the wire.
fn blocks(content: &[ContentBlock]) -> Value {
    serde_json::to_value(content)
        .unwrap_or_else(|err| Value::String(format!("the MCP result could not be encoded: {err}")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_structured_blocks_and_errors() {
        let text = CallToolResult::success(vec![ContentBlock::text("Echo: hi")]);
        assert_eq!(output_of(text).unwrap(), json!("Echo: hi"));

        let two = CallToolResult::success(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
        assert_eq!(output_of(two).unwrap(), json!(["a", "b"]));

        let structured = CallToolResult::structured(json!({ "sum": 3 }));
        assert_eq!(output_of(structured).unwrap(), json!({ "sum": 3 }));

        let image = CallToolResult::success(vec![ContentBlock::image("AAAA", "image/png")]);
        let out = output_of(image).unwrap();
        assert_eq!(out[0]["type"], "image");
        assert_eq!(out[0]["mimeType"], "image/png");

        let failed = CallToolResult::error(vec![ContentBlock::text("no such file")]);
        assert_eq!(output_of(failed).unwrap_err().message(), "no such file");
    }
}
