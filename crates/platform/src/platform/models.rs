//! LLM models: one default per provider, and none deleted while an agent uses it.

use super::*;

impl Platform {
    /// Every LLM model, oldest first; with `provider`, only that provider's (which must exist).
    pub async fn models(&self, provider: Option<Uuid>) -> Result<Vec<LlmModel>, PlatformError> {
        self.read(|index| {
            if let Some(provider) = provider {
                index.provider(provider)?;
            }
            Ok(index
                .models
                .values()
                .filter(|m| provider.is_none_or(|p| m.provider_id == p))
                .cloned()
                .collect())
        })
        .await?
    }

    /// One LLM model.
    pub async fn model(&self, id: Uuid) -> Result<LlmModel, PlatformError> {
        self.read(|index| index.model(id).cloned()).await?
    }

    /// Creates a model of an existing provider; with `is_default` the provider's previous
    /// default stops being it, in the same append.
    pub async fn create_model(&self, new: NewModel) -> Result<LlmModel, PlatformError> {
        let provider = new
            .provider_id
            .ok_or_else(|| PlatformError::Invalid("`provider_id` is required".into()))?;
        let model_id = required("model_id", new.model_id, 200)?;
        let display_name = match new.display_name {
            Some(name) => required("display_name", name, 200)?,
            None => model_id.clone(),
        };
        let features = tags("features", new.features)?;
        let window = context_window(new.context_window)?;
        self.write(|index| {
            if !index.providers.contains_key(&provider) {
                return Err(PlatformError::Invalid(format!(
                    "`provider_id` {provider} names no LLM provider"
                )));
            }
            index.check_model_unique(provider, &model_id, None)?;
            let now = Utc::now();
            let model = LlmModel {
                id: Uuid::now_v7(),
                provider_id: provider,
                model_id: model_id.clone(),
                display_name: display_name.clone(),
                features: features.clone(),
                context_window: window,
                is_default: new.is_default,
                status: new.status,
                created_at: now,
                updated_at: now,
            };
            let mut changes = if new.is_default {
                index.undefault_models(provider, model.id)
            } else {
                Vec::new()
            };
            changes.push(Change::model_saved(model.clone()));
            Ok((changes, model))
        })
        .await
    }

    /// Changes a model.
    pub async fn update_model(
        &self,
        id: Uuid,
        patch: ModelPatch,
    ) -> Result<LlmModel, PlatformError> {
        let model_id = patch
            .model_id
            .map(|m| required("model_id", m, 200))
            .transpose()?;
        let display_name = patch
            .display_name
            .map(|d| required("display_name", d, 200))
            .transpose()?;
        let features = patch.features.map(|f| tags("features", f)).transpose()?;
        let window = patch.context_window.map(context_window).transpose()?;
        self.write(|index| {
            let mut model = index.model(id)?.clone();
            if let Some(model_id) = &model_id {
                index.check_model_unique(model.provider_id, model_id, Some(id))?;
                model.model_id.clone_from(model_id);
            }
            if let Some(display_name) = &display_name {
                model.display_name.clone_from(display_name);
            }
            if let Some(features) = &features {
                model.features.clone_from(features);
            }
            if let Some(window) = window {
                model.context_window = window;
            }
            if let Some(status) = patch.status {
                model.status = status;
            }
            let mut changes = Vec::new();
            if let Some(is_default) = patch.is_default {
                if is_default {
                    changes = index.undefault_models(model.provider_id, id);
                }
                model.is_default = is_default;
            }
            model.updated_at = Utc::now();
            changes.push(Change::model_saved(model.clone()));
            Ok((changes, model))
        })
        .await
    }

    /// Deletes a model no agent has as its default (`409 model_in_use` otherwise).
    pub async fn delete_model(&self, id: Uuid) -> Result<(), PlatformError> {
        self.write(|index| {
            index.model(id)?;
            if let Some(agent) = index
                .agents
                .values()
                .find(|a| a.default_model_id == Some(id))
            {
                return Err(PlatformError::conflict(
                    "model_in_use",
                    format!(
                        "model {id} is the default model of agent {} ({}): change that first",
                        agent.id, agent.name
                    ),
                ));
            }
            if let Some(session) = index.sessions.values().find(|s| s.model_id == Some(id)) {
                return Err(PlatformError::conflict(
                    "model_in_use",
                    format!(
                        "model {id} is the model of session {}: change that first",
                        session.id
                    ),
                ));
            }
            Ok((vec![Change::model_deleted(id)], ()))
        })
        .await
    }
}
