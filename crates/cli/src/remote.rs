//! [`RemoteStore`]: a running `openharness serve` as a read-only [`Store`], for `--store
//! http://ADDR`. The server holds its redb file to itself, so the CLI's readers (`sessions`,
//! `events`, `tape`, `diff`, `export`, `check`) reach the store through it instead: sessions
//! from `GET /sessions`, events a page at a time from `GET /sessions/{id}/events`, a live tail
//! by asking for new pages. Writes are refused with an error that says where to send them.

use std::ops::Range;
use std::time::Duration;

use async_trait::async_trait;
use openharness::adapter::SnapshotJson;
use openharness::{
    Envelope, SessionId, SessionInfo, SessionStatus, Store, StoreError,
    adapter::{Recorded, Subscription},
};
use serde::Deserialize;

/// The most events the server gives in one page.
const PAGE: u64 = 1_000;
/// How often a live tail asks for new events.
const POLL: Duration = Duration::from_millis(200);

/// The header a request names its busy policy in (`openharness_server::ON_BUSY_HEADER`; spelled
/// here, so reading a server's store needs no server of its own: a test holds the two equal).
const ON_BUSY_HEADER: &str = "x-openharness-on-busy";

/// A running server's store, read through its HTTP API.
#[derive(Debug, Clone)]
pub(crate) struct RemoteStore {
    base: String,
    client: reqwest::Client,
    /// `Authorization: Bearer …` for a server with API keys (`OPENHARNESS_API_KEY`).
    key: Option<String>,
}

/// A session as `GET /sessions` lists it (the host's summary).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Summary {
    id: SessionId,
    #[serde(default)]
    workflow: Option<String>,
    #[serde(default)]
    parent: Option<SessionId>,
    #[serde(default)]
    status: SessionStatus,
    len: u64,
    created: chrono::DateTime<chrono::Utc>,
    last_event: chrono::DateTime<chrono::Utc>,
}

impl From<Summary> for SessionInfo {
    fn from(summary: Summary) -> Self {
        Self {
            id: summary.id,
            created: summary.created,
            last_event: summary.last_event,
            count: summary.len,
            workflow: summary.workflow,
            parent: summary.parent,
            status: summary.status,
        }
    }
}

#[derive(Deserialize)]
struct Sessions {
    sessions: Vec<Summary>,
}

#[derive(Deserialize)]
struct Page {
    events: Vec<Recorded>,
}

/// A request the server refused: its status, and its error's code and message.
#[derive(Debug)]
pub(crate) struct Refused {
    pub(crate) url: String,
    pub(crate) status: u16,
    pub(crate) code: String,
    pub(crate) message: String,
}

/// A failure talking to the server.
#[derive(Debug, thiserror::Error)]
enum RemoteError {
    #[error("could not reach {url}")]
    Request {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{url} answered {status}: {body}")]
    Status {
        url: String,
        status: reqwest::StatusCode,
        body: String,
    },
    #[error(
        "{operation} is not done through a server: `--store {base}` is read-only; send it to the server's HTTP API, or stop the server and use its store file"
    )]
    ReadOnly {
        operation: &'static str,
        base: String,
    },
}

impl RemoteStore {
    /// The server at `base` (`http://127.0.0.1:8080`, a trailing `/` or mount path allowed).
    pub(crate) fn new(base: &str) -> Result<Self, StoreError> {
        openharness::provider::install_crypto_provider();
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(StoreError::backend)?;
        Ok(Self {
            base: base.trim_end_matches('/').to_owned(),
            client,
            key: std::env::var("OPENHARNESS_API_KEY")
                .ok()
                .filter(|k| !k.is_empty()),
        })
    }

    /// `GET {base}{path}` as JSON; `None` for a 404.
    pub(crate) async fn get<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
    ) -> Result<Option<T>, StoreError> {
        let url = format!("{}{path}", self.base);
        let mut request = self.client.get(&url);
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let failed = |source| {
            StoreError::backend(RemoteError::Request {
                url: url.clone(),
                source,
            })
        };
        let response = request.send().await.map_err(failed)?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            return Err(StoreError::backend(RemoteError::Status {
                url,
                status,
                body: body.chars().take(300).collect(),
            }));
        }
        response.json().await.map(Some).map_err(failed)
    }

    /// `POST {base}{path}` with a JSON `body` (and the busy policy's header, when given): the
    /// JSON the server answered, or how it refused ([`Refused`]); an error when it cannot be
    /// reached.
    pub(crate) async fn post(
        &self,
        path: &str,
        body: &serde_json::Value,
        on_busy: Option<openharness::BusyPolicy>,
    ) -> Result<Result<serde_json::Value, Refused>, StoreError> {
        let url = format!("{}{path}", self.base);
        let mut request = self.client.post(&url).json(body);
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        if let Some(policy) = on_busy {
            request = request.header(ON_BUSY_HEADER, policy.as_str());
        }
        let unreachable = |source| {
            StoreError::backend(RemoteError::Request {
                url: url.clone(),
                source,
            })
        };
        let response = request.send().await.map_err(unreachable)?;
        let status = response.status();
        let text = response.text().await.map_err(unreachable)?;
        let answer: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        if status.is_success() {
            return Ok(Ok(answer));
        }
        let error = &answer["error"];
        Ok(Err(Refused {
            url,
            status: status.as_u16(),
            code: error["code"].as_str().unwrap_or("unknown").to_owned(),
            message: error["message"]
                .as_str()
                .map_or_else(|| text.chars().take(300).collect(), ToOwned::to_owned),
        }))
    }

    /// Every event of `session` from seq `from` on, a page at a time.
    pub(crate) async fn events_from(
        &self,
        session: &SessionId,
        mut from: u64,
    ) -> Result<Vec<Recorded>, StoreError> {
        let mut all = Vec::new();
        loop {
            let page = self.page(session, from, PAGE).await?;
            let Some(last) = page.last() else {
                return Ok(all);
            };
            from = last.seq + 1;
            let full = page.len() as u64 >= PAGE;
            all.extend(page);
            if !full {
                return Ok(all);
            }
        }
    }

    fn read_only(&self, operation: &'static str) -> StoreError {
        StoreError::backend(RemoteError::ReadOnly {
            operation,
            base: self.base.clone(),
        })
    }

    /// Up to a page of `session`'s events from seq `from` on.
    async fn page(
        &self,
        session: &SessionId,
        from: u64,
        limit: u64,
    ) -> Result<Vec<Recorded>, StoreError> {
        let after = from
            .checked_sub(1)
            .map_or(String::new(), |after| format!("&after={after}"));
        let path = format!(
            "/sessions/{session}/events?limit={}{after}",
            limit.clamp(1, PAGE)
        );
        Ok(self
            .get::<Page>(&path)
            .await?
            .map_or_else(Vec::new, |page| page.events))
    }
}

#[async_trait]
impl Store for RemoteStore {
    fn describe(&self) -> String {
        format!("server:{}", self.base)
    }

    /// Snapshots are the server's to save: a remote read prepares none.
    fn saves_snapshots(&self) -> bool {
        false
    }

    async fn append(
        &self,
        _session: &SessionId,
        _events: &[Envelope],
        _expected_seq: u64,
    ) -> Result<u64, StoreError> {
        Err(self.read_only("recording"))
    }

    async fn events(
        &self,
        session: &SessionId,
        range: Range<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        let mut events = Vec::new();
        let mut next = range.start;
        while next < range.end {
            let page = self.page(session, next, range.end - next).await?;
            let Some(last) = page.last().map(|r| r.seq) else {
                break;
            };
            events.extend(
                page.into_iter()
                    .filter(|r| r.seq >= next && r.seq < range.end)
                    .map(|r| r.event),
            );
            next = last + 1;
        }
        Ok(events)
    }

    async fn session(&self, session: &SessionId) -> Result<Option<SessionInfo>, StoreError> {
        let summary: Option<Summary> = self.get(&format!("/sessions/{session}")).await?;
        // A session the server has just started has no events yet: none, as a store says.
        Ok(summary.filter(|s| s.len > 0).map(SessionInfo::from))
    }

    async fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        let listed: Option<Sessions> = self.get("/sessions").await?;
        Ok(listed
            .map(|l| l.sessions.into_iter().map(SessionInfo::from).collect())
            .unwrap_or_default())
    }

    async fn clear(&self, _session: &SessionId) -> Result<(), StoreError> {
        Err(self.read_only("deleting a session"))
    }

    /// Snapshots are a cache the server keeps for itself: a reader's are not saved.
    async fn snapshot_json(
        &self,
        _session: &SessionId,
        _position: u64,
        _state: Box<serde_json::value::RawValue>,
    ) -> Result<(), StoreError> {
        Ok(())
    }

    async fn latest_snapshot_json(
        &self,
        _session: &SessionId,
        _at_most: u64,
    ) -> Result<Option<(u64, SnapshotJson)>, StoreError> {
        Ok(None)
    }

    async fn subscribe(
        &self,
        session: &SessionId,
        from_seq: u64,
    ) -> Result<Subscription, StoreError> {
        let (sender, subscription) = Subscription::channel(256);
        let (store, session) = (self.clone(), session.clone());
        tokio::spawn(async move {
            let mut next = from_seq;
            loop {
                match store.page(&session, next, PAGE).await {
                    Ok(page) if page.is_empty() => tokio::time::sleep(POLL).await,
                    Ok(page) => {
                        let from = next;
                        for recorded in page.into_iter().filter(|r| r.seq >= from) {
                            next = recorded.seq + 1;
                            if sender.send(Ok(recorded)).await.is_err() {
                                return;
                            }
                        }
                    }
                    Err(err) => {
                        let _ = sender.send(Err(err)).await;
                        return;
                    }
                }
            }
        });
        Ok(subscription)
    }
}

#[cfg(test)]
mod tests {
    /// The header is the one the server reads.
    #[test]
    #[cfg(feature = "server")]
    fn the_busy_header_is_the_servers() {
        assert_eq!(super::ON_BUSY_HEADER, openharness_server::ON_BUSY_HEADER);
    }
}
