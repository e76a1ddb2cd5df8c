//! Key rotation: [`Platform::rotate_keys`] re-seals every provider key under the newest master
//! key, as one append to the platform log.

use super::{Change, Platform};
use crate::error::PlatformError;

/// What [`Platform::rotate_keys`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rotation {
    /// The id of the master key every provider key is now sealed under (the newest).
    pub key_id: String,
    /// How many provider keys were re-sealed under it.
    pub resealed: usize,
    /// How many were already sealed under it (left as they were).
    pub current: usize,
    /// How many providers have no key.
    pub without_key: usize,
}

impl Platform {
    /// Re-seals the API key of every LLM provider under the newest master key, with a fresh
    /// nonce each, and records the re-sealed rows in the platform log in one all-or-nothing
    /// append (another replica's concurrent change makes it decide again, never overwrite).
    /// Keys already under the newest master key are left as they are, so running it twice
    /// re-seals nothing the second time. Afterwards the older master keys can be removed.
    ///
    /// A row sealed under a master key id that is not configured fails the whole rotation with
    /// [`KeyError::UnknownKeyId`](crate::KeyError::UnknownKeyId), naming the provider and the
    /// id (nothing is changed); so does a row that does not decrypt. Without master keys it is
    /// [`KeyError::NoMasterKey`](crate::KeyError::NoMasterKey).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use openharness_platform::{MasterKeys, NewProvider, Platform};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let store = Arc::new(openharness_store::MemoryStore::new());
    /// let old = MasterKeys::parse(&format!("k1:{}", "11".repeat(32)))?;
    /// let platform = Platform::new(store.clone(), Some(old));
    /// let new: NewProvider =
    ///     serde_json::from_str(r#"{"name":"main","provider_type":"anthropic","api_key":"sk-1"}"#)?;
    /// let provider = platform.create_provider(new).await?;
    ///
    /// // A second master key is added; the rotation moves every row to it.
    /// let both = MasterKeys::parse(&format!("k1:{},k2:{}", "11".repeat(32), "22".repeat(32)))?;
    /// let rotation = Platform::new(store.clone(), Some(both)).rotate_keys().await?;
    /// assert_eq!((rotation.key_id.as_str(), rotation.resealed), ("k2", 1));
    ///
    /// // Now k2 alone opens it.
    /// let k2 = MasterKeys::parse(&format!("k2:{}", "22".repeat(32)))?;
    /// let platform = Platform::new(store, Some(k2));
    /// assert_eq!(platform.provider_key(provider.id).await?.as_deref(), Some("sk-1"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn rotate_keys(&self) -> Result<Rotation, PlatformError> {
        let keys = self.keys()?;
        let newest = keys
            .ids()
            .pop()
            .ok_or(PlatformError::Keys(crate::KeyError::NoMasterKey))?;
        self.write(|index| {
            let mut rotation = Rotation {
                key_id: newest.clone(),
                resealed: 0,
                current: 0,
                without_key: 0,
            };
            let mut changes = Vec::new();
            for record in index.providers.values() {
                let Some(sealed) = &record.api_key else {
                    rotation.without_key += 1;
                    continue;
                };
                if sealed.key_id == newest {
                    rotation.current += 1;
                    continue;
                }
                let plain = keys.open(record.id, sealed)?;
                let mut record = record.clone();
                record.api_key = Some(keys.seal(record.id, &plain)?);
                changes.push(Change::provider_saved(record));
                rotation.resealed += 1;
            }
            Ok((changes, rotation))
        })
        .await
    }
}
