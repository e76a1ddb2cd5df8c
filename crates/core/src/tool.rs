//! The [`Tool`] trait: a function an agent's model may call while it works.
//!
//! A tool has a name, a description and a JSON Schema for its arguments, and an async `call`.
//! Providers run the tool loop: they offer an agent's tools to the model, call the ones it asks
//! for, report each call and result (recorded as `tool:called` / `tool:result`), and send the
//! results back, for at most `max_turns` model turns. A tool that fails returns a
//! [`ToolError`], which the model sees as an error result; it never ends the run.
//!
//! [`FnTool`] builds a tool from a typed async function, deriving the argument schema from the
//! argument type with `schemars`.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// How many model turns (requests) one agent call may take in a tool loop, unless the agent
/// says otherwise with [`Agent::max_turns`](crate::Agent::max_turns).
pub const DEFAULT_MAX_TURNS: u32 = 8;

/// A tool the model may call.
///
/// Most tools are built with [`FnTool::new`]; implement the trait directly for tools whose
/// schema is not derived from a Rust type.
///
/// ```
/// use openharness_core::{Tool, ToolError};
/// use serde_json::{Value, json};
///
/// struct Add;
///
/// #[async_trait::async_trait]
/// impl Tool for Add {
///     fn name(&self) -> &str { "add" }
///     fn description(&self) -> &str { "Adds two integers." }
///     fn input_schema(&self) -> Value {
///         json!({ "type": "object", "properties": { "a": { "type": "integer" }, "b": { "type": "integer" } }, "required": ["a", "b"] })
///     }
///     async fn call(&self, input: Value) -> Result<Value, ToolError> {
///         match (input["a"].as_i64(), input["b"].as_i64()) {
///             (Some(a), Some(b)) => Ok(json!(a + b)),
///             _ => Err(ToolError::new("`a` and `b` must be integers")),
///         }
///     }
/// }
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// assert_eq!(Add.call(json!({ "a": 2, "b": 3 })).await.unwrap(), json!(5));
/// assert!(Add.call(json!({ "a": "two" })).await.is_err());
/// # });
/// ```
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The name the model calls it by (letters, digits, `_` and `-`).
    fn name(&self) -> &str;

    /// What it does, for the model.
    fn description(&self) -> &str;

    /// The JSON Schema of its arguments (an object schema).
    fn input_schema(&self) -> Value;

    /// Runs the tool. An error is reported to the model as an error result.
    async fn call(&self, input: Value) -> Result<Value, ToolError>;

    /// The MCP server that offers this tool, by its configured name, recorded on each
    /// `tool:called` (`server` on the wire). `None`, the default, for a tool that runs in this
    /// process.
    fn server(&self) -> Option<&str> {
        None
    }

    /// Whether the client runs this tool, not this process ([`ClientTool`]): a model's call
    /// of it is never run here; it ends the agent's call, recorded as a `tool:called` with
    /// `client: true`, and its result arrives with a later `user:input` (`toolResults`).
    /// `false`, the default.
    fn runs_on_client(&self) -> bool {
        false
    }
}

/// A tool the client declares with its input and runs itself (an OpenAI function tool sent
/// to `/v1/responses`, an AG-UI frontend tool): offered to the model by name, description and
/// schema ([`RunOptions::client_tools`](crate::RunOptions::client_tools)); when the model calls
/// it, the agent's call ends with the call recorded (`tool:called`, `client: true`) and the
/// turn ends; the client runs it and sends the result with its next input
/// ([`ClientToolResult`](crate::builtin::ClientToolResult)).
///
/// ```
/// use openharness_core::{ClientTool, Tool};
/// let weather = ClientTool::new(
///     "get_weather",
///     "The weather in a city.",
///     serde_json::json!({ "type": "object", "properties": { "city": { "type": "string" } } }),
/// );
/// assert!(weather.runs_on_client());
/// assert_eq!(weather.name(), "get_weather");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ClientTool {
    name: String,
    description: String,
    input_schema: Value,
}

impl ClientTool {
    /// The client's tool `name`, described as `description`, taking arguments of `input_schema`
    /// (a JSON Schema object; anything else is offered as an object schema without fields).
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        let input_schema = if input_schema.is_object() {
            input_schema
        } else {
            serde_json::json!({ "type": "object", "properties": {} })
        };
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
        }
    }
}

#[async_trait]
impl Tool for ClientTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.input_schema.clone()
    }

    async fn call(&self, _input: Value) -> Result<Value, ToolError> {
        Err(ToolError::new(format!(
            "`{}` runs on the client: its result comes with the client's next input",
            self.name
        )))
    }

    fn runs_on_client(&self) -> bool {
        true
    }
}

/// A tool failure, shown to the model as the tool's (error) result.
///
/// ```
/// use openharness_core::ToolError;
/// let err = ToolError::new("the city `Atlantis` is unknown");
/// assert_eq!(err.to_string(), "the city `Atlantis` is unknown");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    message: String,
}

impl ToolError {
    /// A failure with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The message the model sees.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// The tools offered in one request, shared and cheap to clone.
///
/// Two toolboxes are equal when they offer the same tools by name, description and schema.
///
/// ```
/// use openharness_core::{FnTool, adapter::Toolbox};
/// use std::sync::Arc;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Echo { text: String }
///
/// let echo = FnTool::new("echo", "Repeats the text.", |args: Echo| async move { Ok::<_, String>(args.text) });
/// let toolbox = Toolbox::new(vec![Arc::new(echo)]);
/// assert_eq!(toolbox.names(), ["echo"]);
/// assert!(toolbox.get("echo").is_some());
/// ```
#[derive(Clone, Default)]
pub struct Toolbox {
    tools: Vec<Arc<dyn Tool>>,
}

impl Toolbox {
    /// A toolbox with these tools.
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        Self { tools }
    }

    /// Whether it has no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// How many tools it has.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// The tools, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.iter()
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// Whether the tool `name` runs on the client ([`Tool::runs_on_client`]).
    pub fn runs_on_client(&self, name: &str) -> bool {
        self.get(name).is_some_and(|tool| tool.runs_on_client())
    }

    /// The tools' names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    /// Calls the tool `name` with `input`. An unknown tool is an error result, like any other
    /// tool failure, so the model can correct itself.
    pub async fn call(&self, name: &str, input: Value) -> Result<Value, ToolError> {
        match self.get(name) {
            Some(tool) => tool.call(input).await,
            None => Err(ToolError::new(format!(
                "there is no tool named `{name}`; the tools are: {}",
                self.names().join(", ")
            ))),
        }
    }
}

impl fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl PartialEq for Toolbox {
    fn eq(&self, other: &Self) -> bool {
        self.tools.len() == other.tools.len()
            && self.tools.iter().zip(&other.tools).all(|(a, b)| {
                a.name() == b.name()
                    && a.description() == b.description()
                    && a.input_schema() == b.input_schema()
            })
    }
}

type BoxedCall<A> =
    Arc<dyn Fn(A) -> Pin<Box<dyn Future<Output = Result<Value, ToolError>> + Send>> + Send + Sync>;

/// A [`Tool`] made from a typed async function: the argument schema comes from `A`'s
/// `JsonSchema`, arguments that do not deserialize into `A` are an error result, and the
/// function's `Ok` value is serialized as the result.
///
/// ```
/// use openharness_core::{FnTool, Tool};
/// use serde_json::json;
///
/// /// Arguments of `weather`.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct City {
///     /// The city's name.
///     name: String,
/// }
///
/// let weather = FnTool::new("weather", "Current weather in a city.", |city: City| async move {
///     if city.name == "Lisbon" { Ok(json!({ "celsius": 21 })) } else { Err(format!("no data for {}", city.name)) }
/// });
/// assert_eq!(weather.input_schema()["properties"]["name"]["type"], "string");
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// assert_eq!(weather.call(json!({ "name": "Lisbon" })).await.unwrap(), json!({ "celsius": 21 }));
/// assert_eq!(weather.call(json!({ "name": "Oz" })).await.unwrap_err().message(), "no data for Oz");
/// assert!(weather.call(json!({ "town": "Lisbon" })).await.unwrap_err().message().contains("name"));
/// # });
/// ```
pub struct FnTool<A> {
    name: String,
    description: String,
    schema: Value,
    call: BoxedCall<A>,
    _args: PhantomData<fn(A)>,
}

impl<A: DeserializeOwned + JsonSchema + Send + 'static> FnTool<A> {
    /// A tool called `name` that runs `f` on the deserialized arguments.
    pub fn new<F, Fut, R, E>(name: impl Into<String>, description: impl Into<String>, f: F) -> Self
    where
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: Serialize,
        E: fmt::Display,
    {
        let mut schema = schemars::schema_for!(A).to_value();
        if let Some(object) = schema.as_object_mut() {
            object.remove("$schema");
            object.remove("title");
        }
        let f = Arc::new(f);
        let call: BoxedCall<A> = Arc::new(move |args: A| {
            let fut = f(args);
            Box::pin(async move {
                match fut.await {
                    Ok(value) => serde_json::to_value(value).map_err(|err| {
                        ToolError::new(format!("the tool's result could not be encoded: {err}"))
                    }),
                    Err(err) => Err(ToolError::new(err.to_string())),
                }
            })
        });
        Self {
            name: name.into(),
            description: description.into(),
            schema,
            call,
            _args: PhantomData,
        }
    }
}

impl<A> fmt::Debug for FnTool<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl<A: DeserializeOwned + JsonSchema + Send + 'static> Tool for FnTool<A> {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    async fn call(&self, input: Value) -> Result<Value, ToolError> {
        let args = A::deserialize(&input).map_err(|err| {
            ToolError::new(format!("invalid arguments for `{}`: {err}", self.name))
        })?;
        (self.call)(args).await
    }
}
