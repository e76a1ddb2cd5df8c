//! What the `/v1` API reads: bodies that create ([`NewAgent`], [`NewProvider`], [`NewModel`])
//! and that change ([`AgentPatch`], [`ProviderPatch`], [`ModelPatch`]) resources. Unknown fields
//! are refused (`422`, naming the field), so a misspelt field is never silently ignored. In a
//! patch an absent field is left as it is; `null` clears a field that may be empty.
//!
//! The fields the Everruns SDK sends on every create (`capabilities`, `tools`,
//! `initial_files`, `harness_id`/`harness_name`, an agent's client-chosen `id`, a session's
//! `agent_id`/`agent_name`) are read with the meaning [`crate::everruns`] documents; a value
//! this server cannot honour (a client-side tool, an initial file, a capability it lacks) is
//! `422` naming it, never dropped.

use serde::{Deserialize, Deserializer, Serialize};
use uuid::Uuid;

use crate::resources::{ProviderType, ResourceStatus};

/// Reads a field that may be absent (outer `None`), `null` (`Some(None)`) or a value.
fn nullable<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// A count JSON may write as `200000` or `200000.0` (both are the integer JSON Schema and
/// many clients mean): a whole number from 0 to `u32::MAX`.
struct Whole(u32);

impl<'de> Deserialize<'de> for Whole {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Whole;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "a whole number from 0 to {}", u32::MAX)
            }
            fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Whole, E> {
                u32::try_from(value)
                    .map(Whole)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Unsigned(value), &self))
            }
            fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<Whole, E> {
                u32::try_from(value)
                    .map(Whole)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(value), &self))
            }
            fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<Whole, E> {
                if value.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&value) {
                    // Whole and in range: the cast is exact.
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    return Ok(Whole(value as u32));
                }
                Err(E::invalid_value(serde::de::Unexpected::Float(value), &self))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// An optional [`Whole`].
fn whole<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u32>, D::Error> {
    Option::<Whole>::deserialize(deserializer).map(|whole| whole.map(|w| w.0))
}

/// A [`Whole`] that may be absent, `null` or a value (see [`nullable`]).
fn nullable_whole<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<u32>>, D::Error> {
    whole(deserializer).map(Some)
}

/// `POST /v1/agents`.
///
/// ```
/// use openharness_platform::NewAgent;
/// let new: NewAgent = serde_json::from_str(r#"{"name":"helper","system_prompt":"Be brief."}"#)?;
/// assert!(new.tags.is_empty());
/// assert!(serde_json::from_str::<NewAgent>(r#"{"name":"x","system_prompt":"","colour":1}"#).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewAgent {
    /// The agent to create or update (an upsert, the Everruns SDK's `apply`): a UUID, or
    /// `agent_` and its 32 hex digits. Without it, an active agent of the same `name` is
    /// updated (the SDK's `apply_by_name`), else a new agent is created.
    #[serde(default)]
    pub id: Option<String>,
    /// Its name (1 to 200 characters).
    pub name: String,
    /// What it is for.
    #[serde(default)]
    pub description: Option<String>,
    /// Its system prompt.
    pub system_prompt: String,
    /// A model that exists.
    #[serde(default)]
    pub default_model_id: Option<Uuid>,
    /// Labels.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Capabilities to give it, in order (`[{"ref": "current_time"}]`): each one available in
    /// `GET /v1/capabilities`, without `config` (`422` naming any other). Given on an update,
    /// they replace the agent's.
    #[serde(default)]
    pub capabilities: Vec<CapabilityRef>,
    /// Client-side tools: only `[]` (this server runs no client-side tools; `422` otherwise).
    #[serde(default)]
    pub tools: Vec<serde_json::Value>,
    /// Starter files: only `[]` (sessions here have no file system; `422` otherwise).
    #[serde(default)]
    pub initial_files: Vec<serde_json::Value>,
    /// The harness: only `agent-chat`, the workflow every session runs (`422` otherwise).
    #[serde(default)]
    pub harness_id: Option<String>,
    /// The harness by name: only `agent-chat` (`422` otherwise).
    #[serde(default)]
    pub harness_name: Option<String>,
}

/// A capability named in a body, as the Everruns SDK sends it: `{"ref": "<id>"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CapabilityRef {
    /// The capability's id.
    #[serde(rename = "ref")]
    pub id: String,
    /// Its settings: only `null` (the capabilities here take none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Value>,
}

/// `PATCH /v1/agents/{id}`: the fields to change.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentPatch {
    /// A new name.
    pub name: Option<String>,
    /// A new description, or `null` for none.
    #[serde(default, deserialize_with = "nullable")]
    pub description: Option<Option<String>>,
    /// A new system prompt.
    pub system_prompt: Option<String>,
    /// A new default model, or `null` for none.
    #[serde(default, deserialize_with = "nullable")]
    pub default_model_id: Option<Option<Uuid>>,
    /// New labels.
    pub tags: Option<Vec<String>>,
}

/// `PUT /v1/agents/{id}/capabilities`: the agent's capabilities, in order.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetCapabilities {
    /// Capability ids, each available and listed once; their order is their position.
    pub capabilities: Vec<String>,
}

/// `POST /v1/llm-providers`.
///
/// ```
/// use openharness_platform::{NewProvider, ProviderType};
/// let new: NewProvider = serde_json::from_str(
///     r#"{"name":"main","provider_type":"anthropic","api_key":"sk-ant-…"}"#,
/// )?;
/// assert_eq!(new.provider_type, ProviderType::Anthropic);
/// // The key is never printed.
/// assert!(!format!("{new:?}").contains("sk-ant"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewProvider {
    /// Its name.
    pub name: String,
    /// The API it speaks.
    pub provider_type: ProviderType,
    /// Where its API is (`http://` or `https://`).
    #[serde(default)]
    pub base_url: Option<String>,
    /// Its API key: stored encrypted, never returned.
    #[serde(default)]
    pub api_key: Option<String>,
    /// Whether it becomes the default provider (the previous default stops being it).
    #[serde(default)]
    pub is_default: bool,
    /// `active` (the default) or `disabled`.
    #[serde(default)]
    pub status: ResourceStatus,
    /// Provider-specific settings.
    #[serde(default)]
    pub settings: serde_json::Map<String, serde_json::Value>,
}

impl std::fmt::Debug for NewProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewProvider")
            .field("name", &self.name)
            .field("provider_type", &self.provider_type)
            .field("api_key_set", &self.api_key.is_some())
            .finish_non_exhaustive()
    }
}

/// `PATCH /v1/llm-providers/{id}`: the fields to change. `api_key` sets a new key (sealed
/// afresh) or, as `null`, removes it.
#[derive(Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderPatch {
    /// A new name.
    pub name: Option<String>,
    /// A new API type.
    pub provider_type: Option<ProviderType>,
    /// A new address, or `null` for the provider's own.
    #[serde(default, deserialize_with = "nullable")]
    pub base_url: Option<Option<String>>,
    /// A new key, or `null` to remove it.
    #[serde(default, deserialize_with = "nullable")]
    pub api_key: Option<Option<String>>,
    /// Make it the default provider (`true`) or not.
    pub is_default: Option<bool>,
    /// A new status.
    pub status: Option<ResourceStatus>,
    /// New settings (replacing the old ones).
    pub settings: Option<serde_json::Map<String, serde_json::Value>>,
}

impl std::fmt::Debug for ProviderPatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderPatch")
            .field("name", &self.name)
            .field("api_key_changed", &self.api_key.is_some())
            .finish_non_exhaustive()
    }
}

/// `POST /v1/llm-models` (with `provider_id`) or `POST /v1/llm-providers/{id}/models`.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewModel {
    /// The provider (taken from the path under `/v1/llm-providers/{id}/models`).
    #[serde(default)]
    pub provider_id: Option<Uuid>,
    /// The provider's name for the model.
    pub model_id: String,
    /// The name people see (default: `model_id`).
    #[serde(default)]
    pub display_name: Option<String>,
    /// What it can do.
    #[serde(default)]
    pub features: Vec<String>,
    /// Its context window in tokens (a whole number; `200000.0` reads as `200000`).
    #[serde(default, deserialize_with = "whole")]
    pub context_window: Option<u32>,
    /// Whether it becomes its provider's default model (the previous default stops being it).
    #[serde(default)]
    pub is_default: bool,
    /// `active` (the default) or `disabled`.
    #[serde(default)]
    pub status: ResourceStatus,
}

/// `PATCH /v1/llm-models/{id}`: the fields to change.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelPatch {
    /// A new model id.
    pub model_id: Option<String>,
    /// A new display name.
    pub display_name: Option<String>,
    /// New features.
    pub features: Option<Vec<String>>,
    /// A new context window, or `null` for unknown.
    #[serde(default, deserialize_with = "nullable_whole")]
    pub context_window: Option<Option<u32>>,
    /// Make it its provider's default (`true`) or not.
    pub is_default: Option<bool>,
    /// A new status.
    pub status: Option<ResourceStatus>,
}

/// `POST /v1/agents/{id}/sessions`. Every field may be left out (`{}` is a new session).
///
/// ```
/// use openharness_platform::NewSession;
/// let new: NewSession = serde_json::from_str(r#"{"title":"Trip"}"#)?;
/// assert_eq!(new.title.as_deref(), Some("Trip"));
/// assert!(serde_json::from_str::<NewSession>("{}")?.tags.is_empty());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct NewSession {
    /// The agent (`POST /v1/sessions` only; under `/v1/agents/{id}/sessions` it may repeat the
    /// path's): a UUID, or `agent_` and its 32 hex digits.
    pub agent_id: Option<String>,
    /// The agent by name, instead of `agent_id` (`POST /v1/sessions` only): its one active
    /// agent of that name.
    pub agent_name: Option<String>,
    /// Its title.
    pub title: Option<String>,
    /// Labels.
    pub tags: Vec<String>,
    /// A model that exists, used instead of the agent's default.
    pub model_id: Option<Uuid>,
    /// Session-level capabilities: only `[]` (a session has its agent's; `422` otherwise).
    pub capabilities: Vec<CapabilityRef>,
    /// Client-side tools: only `[]` (`422` otherwise).
    pub tools: Vec<serde_json::Value>,
    /// Starter files: only `[]` (`422` otherwise).
    pub initial_files: Vec<serde_json::Value>,
    /// The harness: only `agent-chat` (`422` otherwise).
    pub harness_id: Option<String>,
    /// The harness by name: only `agent-chat` (`422` otherwise).
    pub harness_name: Option<String>,
}

/// `PATCH /v1/agents/{a}/sessions/{s}`: the fields to change.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionPatch {
    /// A new title, or `null` for none.
    #[serde(default, deserialize_with = "nullable")]
    pub title: Option<Option<String>>,
    /// New labels.
    pub tags: Option<Vec<String>>,
    /// A new model, or `null` for the agent's.
    #[serde(default, deserialize_with = "nullable")]
    pub model_id: Option<Option<Uuid>>,
}
