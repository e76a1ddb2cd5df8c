//! Provider API keys at rest: AES-256-GCM under versioned master keys.
//!
//! A provider's key is sealed with the newest [`MasterKeys`] entry, a fresh random 96-bit nonce
//! per write, and the provider's id bound as associated data, so a ciphertext copied to another
//! provider's row fails to open. What the platform log records is only the [`SealedKey`] (the
//! master key's id, the nonce and the ciphertext); the plain key is never returned, logged or
//! recorded. Older master keys stay listed to open rows sealed before a rotation; a row sealed
//! under a key id that is not configured is [`KeyError::UnknownKeyId`], naming both.
//!
//! Master keys come from `OPENHARNESS_MASTER_KEYS` (`id:hex,id:hex`, the last one the newest)
//! or from the file `OPENHARNESS_MASTER_KEYS_FILE` names (one `id:hex` a line, `#` comments),
//! each key 32 bytes written as 64 hex digits (`openssl rand -hex 32` makes one).

use std::fmt;

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The variable holding master keys inline: `id:hex[,id:hex…]`, the last one the newest.
pub const MASTER_KEYS_ENV: &str = "OPENHARNESS_MASTER_KEYS";
/// The variable naming a file of master keys, one `id:hex` a line, the last one the newest.
pub const MASTER_KEYS_FILE_ENV: &str = "OPENHARNESS_MASTER_KEYS_FILE";

/// What can go wrong with master keys or sealed provider keys. No variant carries key material.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The master keys' text is malformed.
    #[error("master keys, entry {entry}: {problem}")]
    Malformed {
        /// Which entry (1-based), counting lines of a file or comma-separated items.
        entry: usize,
        /// What is wrong with it (never the key itself).
        problem: String,
    },
    /// The master keys' file could not be read.
    #[error("cannot read the master keys file {path}: {source}")]
    File {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// No master key is configured, so a provider key cannot be sealed or opened.
    #[error(
        "no master key is configured to encrypt provider API keys: set {MASTER_KEYS_ENV} \
         (id:64-hex-digits) or {MASTER_KEYS_FILE_ENV}"
    )]
    NoMasterKey,
    /// A row was sealed under a master key id this process does not have.
    #[error(
        "the API key of provider {provider} was encrypted under master key {key_id:?}, which is \
         not configured (configured: {known:?}); add it to {MASTER_KEYS_ENV}"
    )]
    UnknownKeyId {
        /// The provider whose key it is.
        provider: Uuid,
        /// The key id the row names.
        key_id: String,
        /// The key ids configured.
        known: Vec<String>,
    },
    /// The ciphertext does not open: tampered with, copied from another row, or sealed under
    /// another key with the same id.
    #[error("the API key of provider {provider} does not decrypt (tampered with or moved)")]
    Undecryptable {
        /// The provider whose key it is.
        provider: Uuid,
    },
}

/// A provider key as the log records it: the master key's id, the nonce and the ciphertext
/// (with its tag), both as hex.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedKey {
    /// The id of the master key it was sealed under.
    pub key_id: String,
    /// The 96-bit nonce, as 24 hex digits.
    pub nonce: String,
    /// The ciphertext and its 128-bit tag, as hex.
    pub ciphertext: String,
}

impl fmt::Debug for SealedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SealedKey")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

/// Versioned AES-256 master keys; the last one seals, any of them opens.
///
/// ```
/// use openharness_platform::MasterKeys;
/// let keys = MasterKeys::parse(&format!("k1:{}", "11".repeat(32)))?;
/// let provider = uuid::Uuid::now_v7();
/// let sealed = keys.seal(provider, "sk-secret")?;
/// assert_eq!(sealed.key_id, "k1");
/// assert_eq!(keys.open(provider, &sealed)?, "sk-secret");
/// // Bound to its row: another provider's id does not open it.
/// assert!(keys.open(uuid::Uuid::now_v7(), &sealed).is_err());
/// // Never printed.
/// assert!(!format!("{keys:?}").contains("1111"));
/// # Ok::<(), openharness_platform::KeyError>(())
/// ```
#[derive(Clone)]
pub struct MasterKeys {
    /// `(id, key)`, oldest first.
    keys: Vec<(String, Key<Aes256Gcm>)>,
}

impl fmt::Debug for MasterKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MasterKeys")
            .field("ids", &self.ids())
            .finish_non_exhaustive()
    }
}

impl MasterKeys {
    /// Reads `id:hex` entries separated by commas or new lines (blank ones and `#` comments
    /// skipped), oldest first. Ids are 1 to 64 characters of letters, digits, `-`, `_`, `.`;
    /// each key is 64 hex digits; an id may not repeat.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let mut keys: Vec<(String, Key<Aes256Gcm>)> = Vec::new();
        let entries = text
            .split(['\n', ','])
            .map(str::trim)
            .filter(|entry| !entry.is_empty() && !entry.starts_with('#'));
        for (n, entry) in entries.enumerate() {
            let malformed = |problem: &str| KeyError::Malformed {
                entry: n + 1,
                problem: problem.to_owned(),
            };
            let (id, hex) = entry
                .split_once(':')
                .ok_or_else(|| malformed("expected `id:64-hex-digits`"))?;
            let id = id.trim();
            let valid_id = !id.is_empty()
                && id.len() <= 64
                && id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
            if !valid_id {
                return Err(malformed(
                    "the id must be 1 to 64 letters, digits, `-`, `_` or `.`",
                ));
            }
            if keys.iter().any(|(known, _)| known == id) {
                return Err(malformed(&format!("the id {id:?} repeats")));
            }
            let bytes = from_hex(hex.trim())
                .filter(|bytes| bytes.len() == 32)
                .ok_or_else(|| malformed("the key must be 64 hex digits (32 bytes)"))?;
            keys.push((id.to_owned(), *Key::<Aes256Gcm>::from_slice(&bytes)));
        }
        if keys.is_empty() {
            return Err(KeyError::NoMasterKey);
        }
        Ok(Self { keys })
    }

    /// The master keys the environment configures ([`MASTER_KEYS_ENV`], else the file
    /// [`MASTER_KEYS_FILE_ENV`] names), or `None` when neither is set.
    pub fn from_env() -> Result<Option<Self>, KeyError> {
        if let Ok(text) = std::env::var(MASTER_KEYS_ENV) {
            return Self::parse(&text).map(Some);
        }
        match std::env::var(MASTER_KEYS_FILE_ENV) {
            Ok(path) => {
                let text = std::fs::read_to_string(&path)
                    .map_err(|source| KeyError::File { path, source })?;
                Self::parse(&text).map(Some)
            }
            Err(_) => Ok(None),
        }
    }

    /// The configured key ids, oldest first.
    pub fn ids(&self) -> Vec<String> {
        self.keys.iter().map(|(id, _)| id.clone()).collect()
    }

    /// Seals `api_key` for `provider` under the newest master key with a fresh random nonce.
    pub fn seal(&self, provider: Uuid, api_key: &str) -> Result<SealedKey, KeyError> {
        let (id, key) = self.keys.last().ok_or(KeyError::NoMasterKey)?;
        let cipher = Aes256Gcm::new(key);
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let aad = associated_data(provider);
        let ciphertext = cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: api_key.as_bytes(),
                    aad: &aad,
                },
            )
            // AES-GCM encryption fails only for messages beyond 64 GiB.
            .map_err(|_| KeyError::Undecryptable { provider })?;
        Ok(SealedKey {
            key_id: id.clone(),
            nonce: to_hex(&nonce),
            ciphertext: to_hex(&ciphertext),
        })
    }

    /// Opens `sealed` as the key of `provider`: fails if it was sealed for another provider,
    /// tampered with, or under a master key id not configured here.
    pub fn open(&self, provider: Uuid, sealed: &SealedKey) -> Result<String, KeyError> {
        let (_, key) = self
            .keys
            .iter()
            .find(|(id, _)| *id == sealed.key_id)
            .ok_or_else(|| KeyError::UnknownKeyId {
                provider,
                key_id: sealed.key_id.clone(),
                known: self.ids(),
            })?;
        let undecryptable = || KeyError::Undecryptable { provider };
        let nonce = from_hex(&sealed.nonce)
            .filter(|nonce| nonce.len() == 12)
            .ok_or_else(undecryptable)?;
        let ciphertext = from_hex(&sealed.ciphertext).ok_or_else(undecryptable)?;
        let aad = associated_data(provider);
        let plain = Aes256Gcm::new(key)
            .decrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: &ciphertext,
                    aad: &aad,
                },
            )
            .map_err(|_| undecryptable())?;
        String::from_utf8(plain).map_err(|_| undecryptable())
    }
}

/// What binds a ciphertext to its row: a fixed label and the provider's id.
fn associated_data(provider: Uuid) -> Vec<u8> {
    let mut aad = b"openharness-platform/llm_provider/".to_vec();
    aad.extend_from_slice(provider.as_bytes());
    aad
}

fn to_hex(bytes: &[u8]) -> String {
    use fmt::Write;
    bytes.iter().fold(String::new(), |mut hex, byte| {
        let _ = write!(hex, "{byte:02x}");
        hex
    })
}

fn from_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) || !hex.is_ascii() {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn keys(text: &str) -> MasterKeys {
        MasterKeys::parse(text).unwrap()
    }

    #[test]
    fn each_seal_has_a_fresh_nonce() {
        let keys = keys(&format!("a:{}", "ab".repeat(32)));
        let provider = Uuid::now_v7();
        let one = keys.seal(provider, "sk-1").unwrap();
        let two = keys.seal(provider, "sk-1").unwrap();
        assert_ne!(one.nonce, two.nonce);
        assert_ne!(one.ciphertext, two.ciphertext);
        assert!(!one.ciphertext.contains(&to_hex(b"sk-1")));
    }

    #[test]
    fn a_ciphertext_moved_to_another_row_does_not_open() {
        let keys = keys(&format!("a:{}", "ab".repeat(32)));
        let (first, second) = (Uuid::now_v7(), Uuid::now_v7());
        let sealed = keys.seal(first, "sk-first").unwrap();
        assert!(matches!(
            keys.open(second, &sealed),
            Err(KeyError::Undecryptable { provider }) if provider == second
        ));
        let mut tampered = sealed.clone();
        tampered.ciphertext.replace_range(0..2, "00");
        if tampered.ciphertext == sealed.ciphertext {
            tampered.ciphertext.replace_range(0..2, "01");
        }
        assert!(keys.open(first, &tampered).is_err());
        assert_eq!(keys.open(first, &sealed).unwrap(), "sk-first");
    }

    #[test]
    fn the_newest_key_seals_and_older_ones_still_open() {
        let old = keys(&format!("old:{}", "01".repeat(32)));
        let provider = Uuid::now_v7();
        let sealed_old = old.seal(provider, "sk-old").unwrap();
        let rotated = keys(&format!(
            "old:{}\n# rotated\nnew:{}",
            "01".repeat(32),
            "02".repeat(32)
        ));
        assert_eq!(rotated.seal(provider, "x").unwrap().key_id, "new");
        assert_eq!(rotated.open(provider, &sealed_old).unwrap(), "sk-old");
    }

    #[test]
    fn an_unknown_key_id_is_named() {
        let old = keys(&format!("old:{}", "01".repeat(32)));
        let provider = Uuid::now_v7();
        let sealed = old.seal(provider, "sk").unwrap();
        let other = keys(&format!("new:{}", "02".repeat(32)));
        let err = other.open(provider, &sealed).unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, KeyError::UnknownKeyId { .. }));
        assert!(
            message.contains("\"old\"") && message.contains("\"new\""),
            "{message}"
        );
    }

    #[test]
    fn malformed_master_keys_are_refused_without_echoing_them() {
        for (text, needle) in [
            ("", "no master key"),
            ("nocolon", "expected `id:"),
            ("a:abcd", "64 hex digits"),
            (&format!("a b:{}", "00".repeat(32)), "the id must be"),
            (&format!("a:{0},a:{0}", "00".repeat(32)), "repeats"),
            (&format!("a:{}zz", "00".repeat(31)), "64 hex digits"),
        ] {
            let err = MasterKeys::parse(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text:?}: {err}");
            assert!(!err.contains("0000"), "{err}");
        }
    }
}
