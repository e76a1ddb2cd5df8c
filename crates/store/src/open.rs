//! [`open`]: the store a location names. The one place that tells a PostgreSQL connection
//! string and [`MEMORY_LOCATION`] from a redb file path, used by the CLI's `--store` and by
//! tools of your own that take a store location from their users; and [`redact_url`], a
//! location fit to show (with or without the `postgres` feature: a program built without it
//! still names what it cannot open, never with the password).

use std::ffi::OsStr;
use std::path::Path;

use openharness_core::{Store, StoreError};

use crate::{MemoryStore, RedbOptions, RedbStore};
#[cfg(feature = "postgres")]
use crate::{PostgresOptions, PostgresStore};

/// The location that names a new, empty [`MemoryStore`]: `--store memory:` keeps nothing once
/// the process ends (a try-out, a test, a benchmark of the server without a disk). A file of
/// that name is still reached as `./memory:`.
///
/// ```
/// use openharness_store::{Access, MEMORY_LOCATION, open};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), openharness_store::StoreError> {
/// let store = open(MEMORY_LOCATION, Access::Write).await?;
/// assert_eq!(store.describe(), "memory");
/// assert!(store.sessions().await?.is_empty());
/// # Ok(()) }
/// ```
pub const MEMORY_LOCATION: &str = "memory:";

/// Whether `location` is [`MEMORY_LOCATION`] (exactly: `./memory:` is a file).
///
/// ```
/// use openharness_store::is_memory;
///
/// assert!(is_memory("memory:"));
/// assert!(!is_memory("./memory:"));
/// ```
pub fn is_memory(location: impl AsRef<OsStr>) -> bool {
    location.as_ref() == MEMORY_LOCATION
}

/// Whether the opener records into the store or only reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Access {
    /// It records: a redb file is opened for writing (created if missing), and refused while
    /// another process writes it.
    #[default]
    Write,
    /// It only reads: a redb file is opened read-only, beside a process writing it, and never
    /// created.
    Read,
}

/// How [`open_with`] opens each kind of store.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct OpenOptions {
    /// Write or read.
    pub access: Access,
    /// A redb file's options ([`Access::Read`] adds `read_only(true)`).
    pub redb: RedbOptions,
    /// A PostgreSQL store's options.
    #[cfg(feature = "postgres")]
    pub postgres: PostgresOptions,
}

impl OpenOptions {
    /// The defaults, for `access`.
    pub fn new(access: Access) -> Self {
        Self {
            access,
            ..Self::default()
        }
    }

    /// A redb file's options.
    pub fn redb(mut self, options: RedbOptions) -> Self {
        self.redb = options;
        self
    }

    /// A PostgreSQL store's options.
    #[cfg(feature = "postgres")]
    pub fn postgres(mut self, options: PostgresOptions) -> Self {
        self.postgres = options;
        self
    }
}

/// Whether `location` is a PostgreSQL connection string (a `postgres://` or `postgresql://`
/// URL, or key-value `host=… dbname=…`) rather than a file path.
///
/// ```
/// use openharness_store::is_postgres;
///
/// assert!(is_postgres("postgres://postgres@127.0.0.1:5432/test"));
/// assert!(is_postgres("host=127.0.0.1 dbname=test"));
/// assert!(!is_postgres("sessions.redb"));
/// assert!(!is_postgres("odd=name.redb"));
/// ```
pub fn is_postgres(location: &str) -> bool {
    location.starts_with("postgres://")
        || location.starts_with("postgresql://")
        || (location.contains('=')
            && ["host=", "dbname=", "user="].iter().any(|key| {
                location
                    .split_whitespace()
                    .any(|part| part.starts_with(key))
            }))
}

/// `url` with its password replaced by `***`, for messages: a `postgres://` URL
/// (`postgres://user:***@host/db`) or a key-value string (`host=h password=*** dbname=d`).
/// Anything else is returned as is.
pub fn redact_url(url: &str) -> String {
    if let Some(scheme_end) = url.find("://") {
        let rest_start = scheme_end + 3;
        let rest = &url[rest_start..];
        // The user info ends at the last `@` before the path or query.
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let authority = &rest[..authority_end];
        let redacted = match authority.rfind('@') {
            Some(at) => match authority[..at].find(':') {
                Some(colon) => format!("{}:***{}", &authority[..colon], &authority[at..]),
                None => authority.to_owned(),
            },
            None => authority.to_owned(),
        };
        let mut query = rest[authority_end..].to_owned();
        if let Some(q) = query.find('?') {
            let params: Vec<String> = query[q + 1..]
                .split('&')
                .map(|param| match param.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => {
                        format!("{key}=***")
                    }
                    _ => param.to_owned(),
                })
                .collect();
            query = format!("{}?{}", &query[..q], params.join("&"));
        }
        return format!("{}{redacted}{query}", &url[..rest_start]);
    }
    redact_key_value(url)
}

/// A key-value connection string with the value of `password` replaced by `***` (values may
/// be single-quoted, with `\'` and `\\` escapes).
fn redact_key_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    loop {
        // Whitespace between parameters.
        while let Some(&c) = chars.peek() {
            if !c.is_whitespace() {
                break;
            }
            out.push(c);
            chars.next();
        }
        if chars.peek().is_none() {
            return out;
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() {
                break;
            }
            key.push(c);
            chars.next();
        }
        out.push_str(&key);
        while let Some(&c) = chars.peek() {
            if c == '=' {
                out.push(c);
                chars.next();
                break;
            }
            if !c.is_whitespace() {
                break;
            }
            out.push(c);
            chars.next();
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.peek() == Some(&'\'') {
            value.push('\'');
            chars.next();
            while let Some(c) = chars.next() {
                value.push(c);
                if c == '\\' {
                    if let Some(escaped) = chars.next() {
                        value.push(escaped);
                    }
                } else if c == '\'' {
                    break;
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                value.push(c);
            }
        }
        if key.eq_ignore_ascii_case("password") {
            out.push_str("***");
        } else {
            out.push_str(&value);
        }
    }
}

/// Opens the store `location` names with the default options: PostgreSQL for a connection
/// string ([`is_postgres`]; feature `postgres`), a new [`MemoryStore`] for
/// [`MEMORY_LOCATION`] (every open a new, empty one), else the redb file at that path. A path is
/// taken as it is (a `&Path` that is not UTF-8 included), never through a lossy string.
///
/// ```
/// use openharness_store::{Access, open};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), openharness_store::StoreError> {
/// let dir = tempfile::tempdir().map_err(openharness_store::StoreError::backend)?;
/// let path = dir.path().join("sessions.redb");
/// let store = open(&path, Access::Write).await?;
/// assert!(store.sessions().await?.is_empty());
/// # Ok(()) }
/// ```
pub async fn open(
    location: impl AsRef<OsStr>,
    access: Access,
) -> Result<Box<dyn Store>, StoreError> {
    open_with(location, OpenOptions::new(access)).await
}

/// [`open`] with options for each kind of store.
pub async fn open_with(
    location: impl AsRef<OsStr>,
    options: OpenOptions,
) -> Result<Box<dyn Store>, StoreError> {
    let location = location.as_ref();
    if is_memory(location) {
        return Ok(Box::new(MemoryStore::new()));
    }
    // A connection string is text; a location that is not UTF-8 can only be a path.
    if let Some(url) = location.to_str().filter(|text| is_postgres(text)) {
        #[cfg(feature = "postgres")]
        return Ok(Box::new(
            PostgresStore::connect_with(url, options.postgres).await?,
        ));
        #[cfg(not(feature = "postgres"))]
        {
            // Not echoed: a connection string may carry a password.
            let _ = url;
            return Err(StoreError::Invalid(
                "this is a PostgreSQL connection string, and this build has no PostgreSQL store \
                 (openharness-store's feature `postgres`)"
                    .to_owned(),
            ));
        }
    }
    let redb = match options.access {
        Access::Read => options.redb.read_only(true),
        Access::Write => options.redb,
    };
    Ok(Box::new(RedbStore::open_with(Path::new(location), redb)?))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn redact_url_hides_passwords_in_urls_and_key_value_strings() {
        let cases = [
            (
                "postgres://alice:s3cret@db.example:5432/app",
                "postgres://alice:***@db.example:5432/app",
            ),
            (
                "postgresql://alice:p%40ss@host/db?sslmode=disable",
                "postgresql://alice:***@host/db?sslmode=disable",
            ),
            (
                "postgres://alice@host/db?password=s3cret&application_name=x",
                "postgres://alice@host/db?password=***&application_name=x",
            ),
            ("postgres://host/db", "postgres://host/db"),
            (
                "host=h user=alice password=s3cret dbname=app",
                "host=h user=alice password=*** dbname=app",
            ),
            (
                "host=h password = 'se cr\\'et' dbname=app",
                "host=h password =*** dbname=app",
            ),
            ("host=h dbname=app", "host=h dbname=app"),
        ];
        for (url, redacted) in cases {
            assert_eq!(redact_url(url), redacted, "{url}");
        }
    }

    /// `memory:` opens a new memory store each time and writes no file; `./memory:` is a file.
    #[tokio::test]
    async fn memory_names_a_new_store_and_no_file() {
        use openharness_core::{Envelope, SessionId};

        let dir = tempfile::tempdir().unwrap();
        let here = std::env::current_dir().unwrap();
        let session = SessionId::new();
        let store = open(MEMORY_LOCATION, Access::Write).await.unwrap();
        let event = Envelope::new("user:input", serde_json::json!({ "text": "hi" }), None);
        store.append(&session, &[event], 0).await.unwrap();
        assert_eq!(store.all_events(&session).await.unwrap().len(), 1);
        assert_eq!(store.describe(), "memory");
        let again = open(MEMORY_LOCATION, Access::Write).await.unwrap();
        assert!(
            again.sessions().await.unwrap().is_empty(),
            "a new store each time"
        );
        assert!(!here.join(MEMORY_LOCATION).exists(), "no file is written");
        let file = dir.path().join(MEMORY_LOCATION);
        let store = open(&file, Access::Write).await.unwrap();
        drop(store);
        assert!(file.exists(), "a path ending in memory: is a redb file");
    }

    /// A path that is not UTF-8 opens the file it names, not one at a lossy copy of its name.
    #[cfg(unix)]
    #[tokio::test]
    async fn a_path_that_is_not_utf8_opens_that_file() {
        use std::os::unix::ffi::OsStrExt;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(OsStr::from_bytes(b"sessions-\xff.redb"));
        let store = open(&path, Access::Write).await.unwrap();
        assert!(store.sessions().await.unwrap().is_empty());
        drop(store);
        assert!(path.exists(), "the store is at the path given");
        let lossy = dir
            .path()
            .join(path.file_name().unwrap().to_string_lossy().as_ref());
        assert!(!lossy.exists(), "no file at a lossy copy of the name");
    }
}
