//! A session's conversation: its messages and notifications projected from its log, resumable
//! after an id, and followed live.

use super::*;

impl Platform {
    /// The messages of a session, oldest first: a projection of its log.
    pub async fn messages(
        &self,
        agent: Uuid,
        id: Uuid,
    ) -> Result<Vec<SessionMessage>, PlatformError> {
        self.read(|index| index.session(agent, id).map(|_| ()))
            .await??;
        let log = session_log(id);
        let mut events = self.inner.store.stream_events(&log, 0..u64::MAX);
        let mut messages = Vec::new();
        while let Some(recorded) = events.next().await {
            let recorded = recorded?;
            if let Some(message) = project(id, recorded.seq, &recorded.event) {
                messages.push(message);
            }
        }
        Ok(messages)
    }

    /// The notifications of a session with a sequence above `after`, oldest first.
    pub async fn notifications(
        &self,
        agent: Uuid,
        id: Uuid,
        after: Option<u64>,
    ) -> Result<Vec<Notification>, PlatformError> {
        self.notifications_after(agent, id, after.map(Resume::after))
            .await
    }

    /// Where a reader that last saw the notification `seen` (its id) resumes: right after it
    /// ([`PlatformError::NotFound`] when the session has no notification of that id).
    pub async fn resume_after_id(
        &self,
        agent: Uuid,
        id: Uuid,
        seen: Uuid,
    ) -> Result<Resume, PlatformError> {
        let log = self.log_of(agent, id).await?;
        let mut projector = Projector::new(id, None);
        let mut events = self.inner.store.stream_events(&log, 0..u64::MAX);
        while let Some(recorded) = events.next().await {
            let recorded = recorded?;
            let notes = projector.project(recorded.seq, &recorded.event);
            if let Some((frame, _)) = notes.iter().find(|(_, note)| note.id == seen)
                && let Some(resume) = Resume::parse(frame)
            {
                return Ok(resume);
            }
        }
        Err(PlatformError::NotFound {
            kind: "event",
            id: format!("{seen} in session {id}"),
        })
    }

    /// The notifications of a session after `resume` (all without it), oldest first.
    pub async fn notifications_after(
        &self,
        agent: Uuid,
        id: Uuid,
        resume: Option<Resume>,
    ) -> Result<Vec<Notification>, PlatformError> {
        let log = self.log_of(agent, id).await?;
        let mut projector = Projector::new(id, resume);
        let mut events = self
            .inner
            .store
            .stream_events(&log, projector.read_from()..u64::MAX);
        let mut notifications = Vec::new();
        while let Some(recorded) = events.next().await {
            let recorded = recorded?;
            let notes = projector.project(recorded.seq, &recorded.event);
            notifications.extend(notes.into_iter().map(|(_, note)| note));
        }
        Ok(notifications)
    }

    /// The model provider a provider row describes, with its key opened, asking `model`.
    pub(super) fn row_provider(
        &self,
        row: &ProviderRecord,
        model: &str,
    ) -> Result<BoxedProvider, PlatformError> {
        use openharness_provider::{AnthropicProvider, ApiKey, OpenAiProvider};
        if row.status != crate::resources::ResourceStatus::Active {
            return Err(PlatformError::Invalid(format!(
                "LLM provider {} is disabled",
                row.id
            )));
        }
        let sealed = row.api_key.as_ref().ok_or_else(|| {
            PlatformError::Invalid(format!("LLM provider {} has no API key", row.id))
        })?;
        let key = ApiKey::new(self.keys()?.open(row.id, sealed)?);
        let invalid = |err: openharness_provider::ConfigError| {
            PlatformError::Invalid(format!("LLM provider {}: {err}", row.id))
        };
        let provider: BoxedProvider = match row.provider_type {
            crate::resources::ProviderType::Anthropic => {
                let mut builder = AnthropicProvider::builder(key).model(model);
                if let Some(url) = &row.base_url {
                    builder = builder.base_url(url);
                }
                Arc::new(builder.build().map_err(invalid)?)
            }
            // Azure OpenAI's v1 API is the Chat Completions API at the resource's
            // `/openai/v1` address, taking the resource's key as a bearer token; the model id
            // names the deployment. Its address has no default.
            crate::resources::ProviderType::AzureOpenai if row.base_url.is_none() => {
                return Err(PlatformError::Invalid(format!(
                    "LLM provider {}: an azure_openai provider needs its base_url, \
                     https://RESOURCE.openai.azure.com/openai/v1",
                    row.id
                )));
            }
            crate::resources::ProviderType::Openai
            | crate::resources::ProviderType::AzureOpenai => {
                let mut builder = OpenAiProvider::builder(key).model(model);
                if let Some(url) = &row.base_url {
                    builder = builder.base_url(url);
                }
                Arc::new(builder.build().map_err(invalid)?)
            }
        };
        Ok(provider)
    }

    /// A session's notifications after `resume` (all without it), for a reader that follows
    /// its log itself (the server's one live tail per session): read the log from
    /// [`Notifier::read_from`] and give each event to [`Notifier::notify`].
    ///
    /// ```no_run
    /// # async fn demo(platform: openharness_platform::Platform, agent: uuid::Uuid, session: uuid::Uuid) -> Result<(), openharness_platform::PlatformError> {
    /// let mut notifier = platform.notifier(agent, session, None).await?;
    /// let events = platform.store().events(notifier.log(), notifier.read_from()..u64::MAX).await?;
    /// for (seq, event) in (notifier.read_from()..).zip(&events) {
    ///     for (frame_id, note) in notifier.notify(seq, event) {
    ///         println!("{frame_id}: {}", note.kind);
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn notifier(
        &self,
        agent: Uuid,
        id: Uuid,
        resume: Option<Resume>,
    ) -> Result<Notifier, PlatformError> {
        let log = self.log_of(agent, id).await?;
        Ok(Notifier {
            projector: Projector::new(id, resume),
            log,
        })
    }

    /// The log of a session of `agent` that exists.
    pub(super) async fn log_of(&self, agent: Uuid, id: Uuid) -> Result<SessionId, PlatformError> {
        self.read(|index| index.session(agent, id).map(|_| ()))
            .await??;
        Ok(session_log(id))
    }
}

/// Turns a session's events into its notifications, resuming where a reader stopped
/// ([`Platform::notifier`]).
#[derive(Debug)]
pub struct Notifier {
    projector: Projector,
    log: SessionId,
}

impl Notifier {
    /// The session whose log to follow.
    pub fn log(&self) -> &SessionId {
        &self.log
    }

    /// The first seq of the log to read (one before the resume point, to know what came
    /// before it).
    pub fn read_from(&self) -> u64 {
        self.projector.read_from()
    }

    /// The notifications the event at `seq` is that the reader has not seen, in order, each
    /// with its SSE frame id. Give it every event from [`Notifier::read_from`] on, in order.
    pub fn notify(&mut self, seq: u64, event: &Envelope) -> Vec<(String, Notification)> {
        self.projector.project(seq, event)
    }
}
