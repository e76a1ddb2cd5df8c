//! Open Harness server: an axum [`Router`] over a [`Host`], to mount in your own app or run
//! with `openharness serve`. Sessions are created and continued over HTTP, their turns run on in
//! the server when the client goes away, and their events come as JSON pages and as SSE that
//! resumes from `Last-Event-ID` without losing or repeating an event.
//!
//! | method and path | what it does |
//! |---|---|
//! | `GET /` | the tape inspector, a browser page over this API (see `inspector`; no key needed) |
//! | `GET /health` | `{"status":"ok"}` |
//! | `GET /openapi.json` | this table as OpenAPI 3.1, its schemas those of the wire types |
//! | `GET /sessions?search=&status=&scorer=&minScore=&annotated=&label=&sort=` | sessions searched, filtered (by online score, annotated or not, label) and sorted (`score`, `lowestScore`), a page at a time |
//! | `POST /sessions` `{workflow, input?}` | starts a session; the turn runs on; `202 {session}` |
//! | `GET /sessions/{id}` | one session, and whether this server runs a turn on it |
//! | `DELETE /sessions/{id}` | deletes it (`409` while a turn runs) |
//! | `POST /sessions/{id}/input` `{text, onBusy?}` | a new turn (see the busy policy below) |
//! | `POST /sessions/{id}/answer` `{request, text}` | answers an open `input:requested` |
//! | `POST /sessions/{id}/resume` | finishes a turn a crash cut off |
//! | `POST /sessions/{id}/cancel` | stops the turn this server runs: `stop:requested`, then `cancelled` |
//! | `GET /sessions/{id}/events?after=&limit=` | a JSON page; with `Accept: text/event-stream`, SSE |
//! | `GET /sessions/{id}/state?at=` | the state at a position (`at` absent: the end) |
//! | `GET /sessions/{id}/states?at=1,5,9` | states at several positions, in one pass |
//! | `GET /sessions/{id}/diff?from=&to=` | the JSON patch between two positions |
//! | `GET /sessions/{id}/compare?with=` | where two sessions part: their common ancestor, the first event that differs, the patches there |
//! | `GET /sessions/{id}/messages?at=&shape=v4\|ui\|calls` | chat messages at a position: v4-style, the chat as `/api/chat` streamed it (`ui`), or one UIMessage per agent call (`calls`) |
//! | `GET /sessions/{id}/state-check` | the session folded through this server's handlers, compared with the state hashes its live run recorded |
//! | `GET /sessions/{id}/export` | the session as `openharness export` writes it: hash-chained JSONL (`application/x-ndjson`), a fork's ancestors first, which `openharness verify` checks |
//! | `POST /sessions/{id}/fork` `{"at":"position","position":5}` or `{"at":"nth","name","n"}` | a fork, run on; `202 {session}` |
//! | `GET /sessions/{id}/feedback` | what was said of it: people's annotations and online scores of its turns (its feedback log, `feedback:<id>`) |
//! | `POST /sessions/{id}/annotations` `{by, thumbs?, labels?, note?, turn?, run?}` | a person's annotation of it (or of a turn, by the position it ended at, or of an experiment's run); `201` with its id and time |
//! | `GET /providers` | the names of the providers a fork may run with ([`ServerOptions::fork_provider`]) |
//! | `POST /api/chat` | AI SDK 5 `useChat`: the turn as a UI message stream (see `chat`) |
//! | `GET /api/chat/{id}/stream` | the running turn's UI message stream from its start, or `204` |
//! | `POST /api/chat/{id}/stop` | stops the chat's running turn as an event (`stop:requested`), whoever reads its stream |
//! | `POST /api/workflow` `{input, sessionId?, workflow?}` | the seeds' handler: `event`, `state`, `done` / `error` frames |
//! | `POST /v1/responses` | Open Responses (OpenAI's Responses shape): a turn of the workflow `model` names, new or continuing `previous_response_id` (a fork when the session has moved on since) or `conversation`; JSON, or SSE with `stream: true` (see `responses`) |
//! | `GET /v1/responses/{id}` | the response as the log has it; `?stream=true&starting_after=N` its events after `N`, followed live |
//! | `POST /v1/responses/{id}/cancel` | stops the response's turn as an event; the response ends `incomplete` (`cancelled`) |
//! | `GET /v1/responses/{id}/input_items` | the user message the response answered |
//! | `GET /.well-known/agent-card.json` | A2A: the agent card of the default workflow (no API key needed) |
//! | `GET /a2a/{workflow}/.well-known/agent-card.json` | A2A: the workflow's agent card (no API key needed) |
//! | `POST /a2a/{workflow}` | A2A v1.0 JSON-RPC (`A2A-Version: 1.0`): `SendMessage` (blocking, or `returnImmediately`), `SendStreamingMessage` (SSE), `GetTask`, `CancelTask`, `SubscribeToTask`, `ListTasks`; a context is a session, a task the turn a message started and the turns answering its questions (see `a2a`) |
//! | `POST /ag-ui/{workflow}` | AG-UI 1.0: `@ag-ui/client`'s `RunAgentInput` (the `threadId` is the session) answered as the run's events over SSE: state snapshot and JSON Patch deltas, steps, text, tool calls, interrupts answered by `resume`; a recorded `runId` rejoins its run (see `ag_ui`) |
//! | `POST /ag-ui/{workflow}/{threadId}/stop` | stops the thread's running turn as an event; the run ends `cancelled` |
//! | `GET /experiments`, `GET /experiments/{name}` | with feature `eval`: the store's experiments, as the inspector's experiments view reads them |
//! | `POST /experiments` | with feature `eval`: runs an experiment file (its JSON, or `{"toml": …}`) on this server's host in the background; `202` once its definition is recorded, `409` while one of that name runs here |
//! | `GET /experiments/{name}/events` | with feature `eval`: the experiment's log as SSE (resumable with `Last-Event-ID`), then an `end` frame with how it ended |
//! | `POST /experiments/{name}/cancel` | with feature `eval`: stops it; its runs under way are recorded `cancelled`, then `eval:cancelled`; a later run of the file runs them again |
//! | `GET /datasets`, `GET /datasets/{name}?version=K` | with feature `eval`: the store's datasets cut from production sessions, one at its latest version or at version `K` |
//! | `/v1/…` | with feature `platform` and `ServerOptions::platform`: the platform's Everruns-shaped API (agents, sessions, messages, notifications, LLM providers and models) |
//!
//! **One HTTP layer**: every route family (native, `/api/chat`, `/api/workflow`, `/v1`) answers
//! errors in one shape from one table ([`ApiError`]), reads bodies and queries with one parser
//! (`400` unreadable, `413` too large, `415` not JSON, `422` the wrong shape), streams events
//! with one SSE writer (a cap of streams per session, a heartbeat, an `error` frame, resuming
//! after `Last-Event-ID`), checks keys once, and is described by one OpenAPI document.
//!
//! **API keys**: with [`ServerOptions::api_keys`] set, every route but `/health`,
//! `/openapi.json`, the A2A agent cards and the inspector's page and assets requires
//! `Authorization: Bearer <key>`; keys are kept hashed and compared in constant time.
//!
//! **CORS** is off unless [`ServerOptions::cors`] names the origins a browser page may call
//! from (`serve --cors-origin`); preflights are answered before the key check.
//!
//! **Hosts and connections**: with [`ServerOptions::allowed_hosts`] (which `openharness serve`
//! sets when it has no keys) a request to another host name or from another site's page is
//! `403`, against DNS rebinding; [`serve`] accepts connections through a [`GuardedListener`]
//! that closes idle ones and caps how many are open ([`ConnectionLimits`]).
//!
//! **Nothing acknowledged before it is recorded**: a `202` (new session, input, answer,
//! resume, fork), and the first byte of a chat's or the workflow handler's stream, come only
//! once the input's event is durably in the store; a turn that fails before recording it
//! answers its error instead. A server killed right after acknowledging loses nothing it
//! acknowledged (`crates/cli/tests/acknowledged.rs` kills one 20 times per route and store).
//!
//! **Busy policy**: a second input while a turn runs on the session gets what the request asks
//! (`onBusy` in the body of `…/input`, or the header `x-openharness-on-busy` on every route that
//! takes input) or the server's default ([`ServerOptions::on_busy`], `reject`;
//! [`ServerOptions::chat_on_busy`], `enqueue`, for `/api/chat`): `reject` is `409 session_busy`
//! with nothing recorded; `enqueue`, `interrupt`, `rollback` and `steer` are recorded at once as
//! `input:queued` in the running turn and acknowledged then (see `openharness_core::BusyPolicy`).
//! A turn running in another process sharing the store is `409` too (the store's claim decides).
//! The host runs every turn ([`Host::start`]); this crate only translates HTTP to its calls.
//! Errors are `{"error":{"code","message"}}`.
//! Request bodies are limited ([`ServerOptions::body_limit`], `413`), and every route but the
//! event stream has a timeout.
//!
//! # Modules
//!
//! - `routes`: the native routes and their handlers; `build` puts every family and layer together.
//! - `chat`: `POST /api/chat` and `GET /api/chat/{id}/stream`, the AI SDK 5 UI message stream.
//! - `frames`: `POST /api/workflow`, the seeds' handler: `event`, `state`, `done` / `error` frames.
//! - `responses` (`responses/`): Open Responses at `/v1/responses`, a projection of the log.
//! - `a2a` (`a2a/`): A2A v1.0 (agent cards, JSON-RPC tasks) at `/a2a/{workflow}`, a projection of
//!   the log.
//! - `ag_ui`: AG-UI at `/ag-ui/{workflow}`, a projection of the log.
//! - `experiments` (feature `eval`): the store's experiments; starting one, following it as
//!   SSE, cancelling it.
//! - `datasets` (feature `eval`): the store's datasets cut from production, at any version.
//! - `v1` (`v1/`, feature `platform`): the `/v1` API; `everruns` (the SDK's routes), `events`.
//! - `inspector`: the tape inspector at `GET /`, its built files embedded from `inspector/`.
//! - `hub`: one live tail per watched session, shared by all of its event streams.
//! - `sse`: the one Server-Sent Events writer of every route family.
//! - `keep_alive`: a JSON answer that waits for a turn, written to while it waits.
//! - `frame_id`: the `<seq>.<n>` ids of projected frames (AG-UI, A2A), resumed after.
//! - `request`: the one request parser: `400`, `413`, `415` or `422` for what cannot be used.
//! - `error`: [`ApiError`], the one error shape, and the table from the domain's errors to it.
//! - `openapi`: the one builder of `GET /openapi.json` (`paths`, `operation`, `failure`).
//! - `auth`: the one API-key check; `cors`: CORS, off unless configured.
//! - `feedback`: a session's annotations and online scores over HTTP.
//! - `origin`: the `Host` and `Origin` check of a keyless server, against DNS rebinding.
//! - `listener`: [`GuardedListener`], what [`serve`] accepts connections with.
//!
//! # Adding a route
//!
//! A native route is an `async fn` handler in `routes.rs`: it reads its input with `request`'s
//! `body` or `query` (so a malformed request gets the answer it gets everywhere), asks the
//! [`Host`], and answers JSON or an [`ApiError`] (the host's errors convert with `?`). Register
//! it in `routes::build`: in the `timed` router (under the request timeout) or, for a stream
//! that lives as long as its client, in `streaming`; the key check, body limit, origin check
//! and CORS then wrap it (a route that needs no key is also let through in `auth.rs`).
//! Describe it in `openapi.rs` (`paths`, each operation written by `operation`, `public` for a
//! keyless one), with the schema of any new answer type added to
//! `openharness_host::wire_schemas` (the host's `schema.rs`; `cargo xtask schemas` then
//! rewrites `schemas/`). Add its row to the table above and its path to the list in
//! `tests/server.rs` that checks the document. A `/v1` route goes in `v1/mod.rs` (or
//! `v1/everruns.rs`) and `v1/openapi.rs` instead; `tests/v1_openapi.rs` checks the two agree.
//!
//! ```no_run
//! # async fn demo(host: openharness_host::Host) -> std::io::Result<()> {
//! use openharness_server::{ServerOptions, router};
//! // `nest_service`, not `nest`: the inspector's page is served at `/harness/` and `/harness`.
//! let app = axum::Router::new().nest_service("/harness", router(host, ServerOptions::default()));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! axum::serve(listener, app).await
//! # }
//! ```

mod a2a;
mod ag_ui;
mod auth;
mod chat;
mod cors;
#[cfg(feature = "eval")]
mod datasets;
mod error;
#[cfg(feature = "eval")]
mod experiments;
mod feedback;
mod frame_id;
mod frames;
mod hub;
mod inspector;
mod keep_alive;
mod listener;
mod openapi;
mod origin;
mod request;
mod responses;
mod routes;
mod sse;
mod targets;
#[cfg(feature = "platform")]
mod v1;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use openharness_host::Host;

pub use auth::{ApiKeyHash, parse_api_keys};
pub use cors::{CorsOrigins, InvalidOrigin};
pub use error::ApiError;
pub use listener::{ConnectionLimits, GuardedListener, GuardedStream, serve};
pub use openapi::document as openapi_document;
pub use origin::loopback_hosts;
pub use request::ON_BUSY_HEADER;

/// How the server behaves; [`Default`] gives the documented defaults.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerOptions {
    /// The most event streams one session may have open (default 64); one more is `429`.
    pub max_streams_per_session: usize,
    /// The comment heartbeat of event streams (default 15 s).
    pub heartbeat: Duration,
    /// The largest request body, in bytes (default 1 MiB); a larger one is `413`.
    pub body_limit: usize,
    /// How long a request other than an event stream may take (default 30 s).
    pub request_timeout: Duration,
    /// What a second input gets while a turn runs on its session, when the request does not
    /// say (default `reject`: `409`). `/api/chat` has its own ([`ServerOptions::chat_on_busy`]).
    pub on_busy: openharness_core::BusyPolicy,
    /// What a chat message gets while a turn runs on its chat (default `enqueue`: a chat page
    /// never loses a message; both are answered in order).
    pub chat_on_busy: openharness_core::BusyPolicy,
    /// The workflow a new chat of `POST /api/chat` runs (default: the host's only workflow).
    pub chat_workflow: Option<String>,
    /// API keys (hashed): when any are set, every route but `/health`, `/openapi.json` and
    /// the inspector's page and assets requires one.
    pub api_keys: Vec<ApiKeyHash>,
    /// The origins a browser page may call the server from (default none: CORS off).
    pub cors: Option<CorsOrigins>,
    /// The hosts the server answers to (default: any): set, a request naming another host in
    /// `Host`, or sent from a page of another site (`Origin`, unless CORS allows it), is `403`.
    /// `openharness serve` sets it to [`loopback_hosts`] when it has no API keys, against DNS
    /// rebinding.
    pub allowed_hosts: Option<Vec<String>>,
    /// OpenAPI documents of routes you merge beside the server's: `GET /openapi.json` lists
    /// their paths and schemas too.
    pub openapi: Vec<serde_json::Value>,
    /// Other models a fork may run with, by name (default none): `POST /sessions/{id}/fork`
    /// with `"provider": name` runs the fork (and its `input`) with that one; `GET /providers`
    /// lists the names. The operator chooses them; a client only picks among them.
    pub fork_providers: ForkProviders,
    /// The platform whose Everruns-shaped `/v1` API this server serves (feature `platform`;
    /// default none).
    #[cfg(feature = "platform")]
    pub platform: Option<openharness_platform::Platform>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            max_streams_per_session: 64,
            heartbeat: Duration::from_secs(15),
            body_limit: 1024 * 1024,
            request_timeout: Duration::from_secs(30),
            on_busy: openharness_core::BusyPolicy::Reject,
            chat_on_busy: openharness_core::BusyPolicy::Enqueue,
            chat_workflow: None,
            api_keys: Vec::new(),
            cors: None,
            allowed_hosts: None,
            openapi: Vec::new(),
            fork_providers: ForkProviders::default(),
            #[cfg(feature = "platform")]
            platform: None,
        }
    }
}

/// The named providers a fork may run with ([`ServerOptions::fork_provider`]).
#[derive(Clone, Default)]
pub struct ForkProviders(std::collections::BTreeMap<String, openharness_core::BoxedProvider>);

impl ForkProviders {
    /// The provider named `name`.
    pub fn get(&self, name: &str) -> Option<&openharness_core::BoxedProvider> {
        self.0.get(name)
    }

    /// The names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }
}

impl std::fmt::Debug for ForkProviders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

impl ServerOptions {
    /// Sets [`ServerOptions::max_streams_per_session`].
    #[must_use]
    pub fn max_streams_per_session(mut self, max: usize) -> Self {
        self.max_streams_per_session = max.max(1);
        self
    }

    /// Sets [`ServerOptions::heartbeat`].
    #[must_use]
    pub fn heartbeat(mut self, every: Duration) -> Self {
        self.heartbeat = every;
        self
    }

    /// Sets [`ServerOptions::body_limit`].
    #[must_use]
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// Requires API keys (kept hashed) on every route but `/health`, `/openapi.json` and the
    /// inspector's page and assets.
    #[must_use]
    pub fn api_keys(mut self, keys: impl IntoIterator<Item = ApiKeyHash>) -> Self {
        self.api_keys.extend(keys);
        self
    }

    /// Lets browser pages from `origins` call the server (CORS); see [`CorsOrigins`].
    ///
    /// ```
    /// use openharness_server::ServerOptions;
    /// let options = ServerOptions::default().cors("http://localhost:5173".parse()?);
    /// assert!(options.cors.is_some());
    /// # Ok::<(), openharness_server::InvalidOrigin>(())
    /// ```
    #[must_use]
    pub fn cors(mut self, origins: CorsOrigins) -> Self {
        self.cors = Some(origins);
        self
    }

    /// Answers only requests to `hosts` (by name: `localhost`, `127.0.0.1:8080`), and from
    /// pages of those hosts or of origins CORS allows; see [`ServerOptions::allowed_hosts`].
    ///
    /// ```
    /// use openharness_server::{ServerOptions, loopback_hosts};
    /// let addr = "127.0.0.1:8080".parse().unwrap();
    /// let options = ServerOptions::default().allowed_hosts(loopback_hosts(addr));
    /// assert_eq!(options.allowed_hosts.unwrap().len(), 3);
    /// ```
    #[must_use]
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = String>) -> Self {
        self.allowed_hosts
            .get_or_insert_with(Vec::new)
            .extend(hosts);
        self
    }

    /// Offers `provider` under `name` to forks: `POST /sessions/{id}/fork` with
    /// `"provider": "<name>"` runs the fork with it (another model from the same point, to
    /// compare). A second provider under one name replaces the first.
    ///
    /// ```
    /// use openharness::BoxedProvider;
    /// use openharness::provider::ScriptedProvider;
    /// use openharness_server::ServerOptions;
    /// let other: BoxedProvider = std::sync::Arc::new(ScriptedProvider::new());
    /// let options = ServerOptions::default().fork_provider("small-model", other);
    /// assert_eq!(options.fork_providers.names().collect::<Vec<_>>(), ["small-model"]);
    /// ```
    #[must_use]
    pub fn fork_provider(
        mut self,
        name: impl Into<String>,
        provider: openharness_core::BoxedProvider,
    ) -> Self {
        self.fork_providers.0.insert(name.into(), provider);
        self
    }

    /// Sets [`ServerOptions::chat_workflow`].
    #[must_use]
    pub fn chat_workflow(mut self, name: impl Into<String>) -> Self {
        self.chat_workflow = Some(name.into());
        self
    }

    /// Adds the paths and schemas of `document` (an OpenAPI 3.1 document of routes you merge
    /// beside the server's) to `GET /openapi.json`. A schema name the server already uses
    /// keeps the server's schema.
    ///
    /// ```
    /// use openharness_server::ServerOptions;
    /// let extra = serde_json::json!({ "paths": { "/v1/ping": { "get": { "responses": {} } } } });
    /// let options = ServerOptions::default().openapi(extra);
    /// assert_eq!(options.openapi.len(), 1);
    /// ```
    #[must_use]
    pub fn openapi(mut self, document: serde_json::Value) -> Self {
        self.openapi.push(document);
        self
    }

    /// Serves `platform`'s Everruns-shaped `/v1` API beside the native routes, on the same
    /// HTTP layer: the same API keys, body limit, CORS, error shape, event-stream cap and
    /// OpenAPI document (feature `platform`). Give the router the platform's host
    /// ([`Platform::with_host`](openharness_platform::Platform::with_host)), so the native
    /// routes read `/v1` sessions and one host runs every turn.
    ///
    /// ```no_run
    /// # async fn demo(host: openharness_host::Host) -> Result<(), Box<dyn std::error::Error>> {
    /// use openharness_platform::{MasterKeys, Platform};
    /// use openharness_server::{ServerOptions, router};
    /// // The platform's agent chat registered in the host, which runs (and recovers) its turns.
    /// let platform = Platform::new(host.store().clone(), MasterKeys::from_env()?).with_host(host)?;
    /// let recovery = platform.host().spawn_recovery(std::time::Duration::from_millis(500));
    /// let app = router(platform.host().clone(), ServerOptions::default().platform(platform));
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
    /// axum::serve(listener, app).await?;
    /// recovery.abort();
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "platform")]
    #[must_use]
    pub fn platform(mut self, platform: openharness_platform::Platform) -> Self {
        self.platform = Some(platform);
        self
    }

    /// Sets [`ServerOptions::on_busy`] (native routes and `/api/workflow`) and, unless it is
    /// `reject`, [`ServerOptions::chat_on_busy`] too (a server told to queue queues chats).
    ///
    /// ```
    /// use openharness_core::BusyPolicy;
    /// use openharness_server::ServerOptions;
    /// let options = ServerOptions::default().on_busy(BusyPolicy::Interrupt);
    /// assert_eq!((options.on_busy, options.chat_on_busy), (BusyPolicy::Interrupt, BusyPolicy::Interrupt));
    /// let options = ServerOptions::default().on_busy(BusyPolicy::Reject);
    /// assert_eq!(options.chat_on_busy, BusyPolicy::Enqueue);
    /// ```
    #[must_use]
    pub fn on_busy(mut self, policy: openharness_core::BusyPolicy) -> Self {
        self.on_busy = policy;
        if policy != openharness_core::BusyPolicy::Reject {
            self.chat_on_busy = policy;
        }
        self
    }

    /// Sets [`ServerOptions::chat_on_busy`].
    #[must_use]
    pub fn chat_on_busy(mut self, policy: openharness_core::BusyPolicy) -> Self {
        self.chat_on_busy = policy;
        self
    }
}

/// What every handler shares.
pub(crate) struct AppState {
    pub(crate) host: Host,
    pub(crate) options: ServerOptions,
    /// `GET /openapi.json`, built once.
    pub(crate) openapi: Arc<serde_json::Value>,
    pub(crate) streams: Arc<sse::StreamCounts>,
    /// One shared live tail per watched session.
    pub(crate) hubs: hub::Hubs,
    /// The experiments this server runs (`POST /experiments`).
    #[cfg(feature = "eval")]
    pub(crate) experiments: experiments::Running,
    /// Conversations made by `POST /v1/conversations` that no response has recorded yet.
    pub(crate) conversations: responses::Made,
}

/// The OpenAPI document this server serves: the native routes, the `/v1` routes when it
/// serves a platform, and the documents of [`ServerOptions::openapi`].
fn served_document(options: &ServerOptions) -> serde_json::Value {
    #[allow(unused_mut)]
    let mut parts = Vec::new();
    #[cfg(feature = "platform")]
    if let Some(platform) = &options.platform {
        parts.push(v1::openapi::document(&platform.capabilities()));
    }
    parts.extend(options.openapi.iter().cloned());
    openapi::merged(openapi::document(), &parts)
}

/// The server's routes over `host`, to serve as is or nest in your own axum app.
pub fn router(host: Host, options: ServerOptions) -> Router {
    routes::build(Arc::new(AppState {
        host,
        openapi: Arc::new(served_document(&options)),
        options,
        streams: Arc::default(),
        hubs: hub::Hubs::default(),
        #[cfg(feature = "eval")]
        experiments: experiments::Running::default(),
        conversations: responses::Made::default(),
    }))
}
