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

    /// A session's notifications after `resume` (all without it), history and then live, each
    /// with its SSE frame id (the sequence, or `seq.index` for the first of an event's two
    /// notifications; [`Resume::parse`] reads it back). The stream ends only with an error
    /// (the store's tail failed); it waits for new events otherwise.
    pub async fn follow(
        &self,
        agent: Uuid,
        id: Uuid,
        resume: Option<Resume>,
    ) -> Result<
        impl futures_util::Stream<Item = Result<(String, Notification), PlatformError>> + Send + 'static,
        PlatformError,
    > {
        let log = self.log_of(agent, id).await?;
        let mut projector = Projector::new(id, resume);
        let tail = self
            .inner
            .store
            .subscribe(&log, projector.read_from())
            .await?;
        Ok(futures_util::StreamExt::flat_map(tail, move |item| {
            let notes: Vec<_> = match item {
                Ok(recorded) => projector
                    .project(recorded.seq, &recorded.event)
                    .into_iter()
                    .map(Ok)
                    .collect(),
                Err(err) => vec![Err(PlatformError::Store(err))],
            };
            futures_util::stream::iter(notes)
        }))
    }

    /// The log of a session of `agent` that exists.
    pub(super) async fn log_of(&self, agent: Uuid, id: Uuid) -> Result<SessionId, PlatformError> {
        self.read(|index| index.session(agent, id).map(|_| ()))
            .await??;
        Ok(session_log(id))
    }
}
