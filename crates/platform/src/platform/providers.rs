//! LLM providers: their records, with keys sealed by the master keys, and the plain key for the
//! provider that calls the model.

use super::*;

impl Platform {
    /// Every LLM provider, oldest first.
    pub async fn providers(&self) -> Result<Vec<LlmProvider>, PlatformError> {
        self.read(|index| {
            index
                .providers
                .values()
                .map(ProviderRecord::public)
                .collect()
        })
        .await
    }

    /// One LLM provider.
    pub async fn provider(&self, id: Uuid) -> Result<LlmProvider, PlatformError> {
        self.read(|index| index.provider(id).map(ProviderRecord::public))
            .await?
    }

    pub(super) fn keys(&self) -> Result<&MasterKeys, PlatformError> {
        self.inner
            .keys
            .as_ref()
            .ok_or(PlatformError::Keys(crate::KeyError::NoMasterKey))
    }

    /// Creates a provider; its key, if any, is sealed under the newest master key.
    pub async fn create_provider(&self, new: NewProvider) -> Result<LlmProvider, PlatformError> {
        let name = required("name", new.name, 200)?;
        let url = base_url(new.base_url)?;
        let key = new.api_key.map(api_key).transpose()?;
        if key.is_some() {
            self.keys()?;
        }
        self.write(|index| {
            let now = Utc::now();
            let id = Uuid::now_v7();
            let sealed = match &key {
                Some(key) => Some(self.keys()?.seal(id, key)?),
                None => None,
            };
            let record = ProviderRecord {
                id,
                name: name.clone(),
                provider_type: new.provider_type,
                base_url: url.clone(),
                api_key: sealed,
                is_default: new.is_default,
                status: new.status,
                settings: new.settings.clone(),
                created_at: now,
                updated_at: now,
            };
            let mut changes = if new.is_default {
                index.undefault_providers(id)
            } else {
                Vec::new()
            };
            let public = record.public();
            changes.push(Change::provider_saved(record));
            Ok((changes, public))
        })
        .await
    }

    /// Changes a provider; a new key is sealed afresh, `null` removes it.
    pub async fn update_provider(
        &self,
        id: Uuid,
        patch: ProviderPatch,
    ) -> Result<LlmProvider, PlatformError> {
        let name = patch.name.map(|n| required("name", n, 200)).transpose()?;
        let url = patch.base_url.map(base_url).transpose()?;
        let key = patch
            .api_key
            .map(|key| key.map(api_key).transpose())
            .transpose()?;
        if matches!(key, Some(Some(_))) {
            self.keys()?;
        }
        self.write(|index| {
            let mut record = index.provider(id)?.clone();
            if let Some(name) = &name {
                record.name.clone_from(name);
            }
            if let Some(provider_type) = patch.provider_type {
                record.provider_type = provider_type;
            }
            if let Some(url) = &url {
                record.base_url.clone_from(url);
            }
            match &key {
                Some(Some(key)) => record.api_key = Some(self.keys()?.seal(id, key)?),
                Some(None) => record.api_key = None,
                None => {}
            }
            if let Some(status) = patch.status {
                record.status = status;
            }
            if let Some(settings) = &patch.settings {
                record.settings.clone_from(settings);
            }
            let mut changes = Vec::new();
            if let Some(is_default) = patch.is_default {
                if is_default {
                    changes = index.undefault_providers(id);
                }
                record.is_default = is_default;
            }
            record.updated_at = Utc::now();
            let public = record.public();
            changes.push(Change::provider_saved(record));
            Ok((changes, public))
        })
        .await
    }

    /// Deletes a provider that serves no model (`409 provider_in_use` otherwise).
    pub async fn delete_provider(&self, id: Uuid) -> Result<(), PlatformError> {
        self.write(|index| {
            index.provider(id)?;
            let models = index
                .models
                .values()
                .filter(|m| m.provider_id == id)
                .count();
            if models > 0 {
                return Err(PlatformError::conflict(
                    "provider_in_use",
                    format!("provider {id} still has {models} model(s): delete them first"),
                ));
            }
            Ok((vec![Change::provider_deleted(id)], ()))
        })
        .await
    }

    /// The API key of a provider, opened: for calling the provider, never for an answer.
    /// `None` when the provider has no key.
    pub async fn provider_key(&self, id: Uuid) -> Result<Option<String>, PlatformError> {
        let sealed = self
            .read(|index| index.provider(id).map(|p| p.api_key.clone()))
            .await??;
        match sealed {
            Some(sealed) => Ok(Some(self.keys()?.open(id, &sealed)?)),
            None => Ok(None),
        }
    }
}
