//! Built-in tools agents can offer their models.

use async_trait::async_trait;
use openharness_core::{Tool, ToolError};
use serde_json::{Value, json};

/// `current_time`: the current date and time in UTC (RFC 3339), so a model can reason about
/// "today".
///
/// ```
/// use openharness_core::Tool;
/// use openharness_provider::tools::CurrentTime;
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let now = CurrentTime.call(serde_json::json!({})).await.unwrap();
/// let text = now["utc"].as_str().unwrap();
/// assert!(chrono::DateTime::parse_from_rfc3339(text).is_ok());
/// assert_eq!(CurrentTime.name(), "current_time");
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct CurrentTime;

#[async_trait]
impl Tool for CurrentTime {
    fn name(&self) -> &str {
        "current_time"
    }

    fn description(&self) -> &str {
        "Returns the current date and time in UTC, in RFC 3339 format, and the weekday."
    }

    fn input_schema(&self) -> Value {
        json!({ "type": "object", "properties": {}, "additionalProperties": false })
    }

    async fn call(&self, _input: Value) -> Result<Value, ToolError> {
        let now = chrono::Utc::now();
        Ok(json!({
            "utc": now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "weekday": now.format("%A").to_string(),
        }))
    }
}
