//! [`RecordedModel`]: the provider and model a recorded session's agents asked. A variant that
//! names no provider runs its case on it (or on the experiment's configured provider), never
//! silently on whatever the workflow registered in the host asks (a scripted model, say).

use std::sync::Arc;

use openharness_core::builtin::{AgentStarted, SessionForked};
use openharness_core::{BoxedProvider, Event, SessionId, Store};
use serde::{Deserialize, Serialize};

use crate::error::EvalError;

/// The provider name a call answered from a recording records: not a model anyone can ask.
const CASSETTE: &str = "cassette";

/// How far up a chain of forks [`RecordedModel::of`] looks for an agent call.
const MAX_ANCESTORS: usize = 64;

/// Rebuilds the provider a recording was made with, or says what to configure so it can be.
pub(crate) type Rebuild =
    Arc<dyn Fn(&RecordedModel) -> Result<BoxedProvider, String> + Send + Sync>;

/// The provider (and model) a recording's agents asked, from its first `agent:started` that
/// names one.
///
/// ```
/// use openharness_eval::RecordedModel;
/// let recorded = RecordedModel { provider: "openai".into(), model: Some("gpt-4.1-mini".into()) };
/// assert_eq!(recorded.label(), "openai:gpt-4.1-mini");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedModel {
    /// The provider's name as recorded ([`openharness_core::Provider::name`]: `anthropic`,
    /// `openai`, `claude-cli`, `scripted`, ...).
    pub provider: String,
    /// The model the agent asked for, when it named one (else the provider's default).
    pub model: Option<String>,
}

impl RecordedModel {
    /// `provider:model`, or the provider alone: how reports and errors name it.
    pub fn label(&self) -> String {
        match &self.model {
            Some(model) => format!("{}:{model}", self.provider),
            None => self.provider.clone(),
        }
    }

    /// What `session` recorded: its first `agent:started` naming a provider (a call answered
    /// from a cassette names none that can be asked, and is passed over), else its fork
    /// parent's, and so on up. `None` when no agent call records one (a recording made
    /// before providers were recorded, or one without agent calls).
    pub async fn of(store: &dyn Store, session: &SessionId) -> Result<Option<Self>, EvalError> {
        let mut session = session.clone();
        for _ in 0..MAX_ANCESTORS {
            let mut parent = None;
            let mut events = store.stream_events_for_fold(&session, 0..u64::MAX, |name| {
                name == AgentStarted::NAME || name == SessionForked::NAME
            });
            while let Some(recorded) = events.next().await {
                let event = recorded?.event;
                if event.name == SessionForked::NAME {
                    parent = event.decode::<SessionForked>().ok().map(|f| f.parent);
                } else if event.name == AgentStarted::NAME
                    && let Ok(started) = event.decode::<AgentStarted>()
                    && let Some(provider) = started.provider.filter(|p| p != CASSETTE)
                {
                    return Ok(Some(Self {
                        provider,
                        model: started.model,
                    }));
                }
            }
            match parent {
                Some(next) => session = next,
                None => break,
            }
        }
        Ok(None)
    }
}
