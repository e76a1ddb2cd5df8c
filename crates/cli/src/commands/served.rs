//! Turns of a session that a running `openharness serve` holds (`--store http://ADDR`): `send`
//! and `respond` post the input or the answer to the server's API, `cancel` asks its running
//! turn to stop. The server runs the turn; this process only asks and watches. With
//! `--on-busy`, an input sent while a turn runs there is refused (`reject`) or recorded at once
//! as `input:queued` (`enqueue`, `interrupt`, `rollback`, `steer`), as the HTTP API's
//! `x-openharness-on-busy` header asks; without it, the server's default holds. Each command
//! prints where its event was recorded, then the session's events as they are recorded, until
//! no turn runs on it.

use std::io::Write;
use std::time::Duration;

use openharness::{BusyPolicy, SessionId};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::Context;
use crate::error::CliError;
use crate::remote::RemoteStore;

/// How often the session is read while its turns run.
const POLL: Duration = Duration::from_millis(100);

/// The server `--store` names, when it names one.
pub(crate) fn server(context: &Context) -> Option<String> {
    let store = context.store_path().to_string_lossy().into_owned();
    crate::transfer::is_remote(&store).then_some(store)
}

/// The server at `base`, as a client.
fn open(base: &str) -> Result<RemoteStore, CliError> {
    RemoteStore::new(base).map_err(|source| CliError::Store {
        operation: "opening",
        store: format!("server:{base}"),
        source,
    })
}

/// What a request the server took answers (`202`): where its event was recorded.
#[derive(Deserialize)]
struct Accepted {
    #[serde(default)]
    recorded: Option<Recorded>,
}

#[derive(Deserialize)]
struct Recorded {
    seq: u64,
}

/// The part of a session's summary this needs.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Summary {
    status: String,
    #[serde(default)]
    running_here: bool,
    len: u64,
}

/// `send` to a served session: `text` as its next input (by `by`), under `on_busy`.
pub(crate) async fn send(
    context: &Context,
    base: &str,
    session: &SessionId,
    text: &str,
    by: Option<&str>,
    on_busy: Option<BusyPolicy>,
) -> Result<(), CliError> {
    let body = with_by(json!({ "text": text }), by);
    let path = format!("/sessions/{session}/input");
    post_and_follow(context, base, session, (&path, &body, on_busy), "input").await
}

/// `respond` to a served session: `text` answers its open request `request`.
pub(crate) async fn respond(
    context: &Context,
    base: &str,
    session: &SessionId,
    request: &str,
    text: &str,
    by: Option<&str>,
) -> Result<(), CliError> {
    let body = with_by(json!({ "request": request, "text": text }), by);
    let path = format!("/sessions/{session}/answer");
    post_and_follow(context, base, session, (&path, &body, None), "answer").await
}

/// `body` with who wrote it, when said.
fn with_by(mut body: Value, by: Option<&str>) -> Value {
    if let Some(by) = by {
        body["by"] = json!(by);
    }
    body
}

/// Posts the request, then follows the turns it starts (see [`follow`]).
async fn post_and_follow(
    context: &Context,
    base: &str,
    session: &SessionId,
    (path, body, on_busy): (&str, &Value, Option<BusyPolicy>),
    what: &str,
) -> Result<(), CliError> {
    let server = open(base)?;
    let answer = post(&server, path, body, on_busy).await?;
    follow(context, &server, session, answer, what).await
}

/// `POST path` to the server: its answer, or its refusal as [`CliError::Server`].
async fn post(
    server: &RemoteStore,
    path: &str,
    body: &Value,
    on_busy: Option<BusyPolicy>,
) -> Result<Value, CliError> {
    match server.post(path, body, on_busy).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(refused)) => Err(CliError::Server {
            url: refused.url,
            status: refused.status,
            code: refused.code,
            message: refused.message,
        }),
        Err(source) => Err(server.failed("request", source)),
    }
}

/// `cancel`: asks the turn running on a served session to stop (`stop:requested`), then
/// follows it to its end; says so when none runs there.
pub(crate) async fn cancel(
    context: &Context,
    base: &str,
    session: &SessionId,
) -> Result<(), CliError> {
    let server = open(base)?;
    let answer = post(
        &server,
        &format!("/sessions/{session}/cancel"),
        &json!({}),
        None,
    )
    .await?;
    if answer.get("cancelled") == Some(&Value::Bool(false)) {
        writeln!(
            context.out(),
            "No turn runs on session {session}: nothing to stop."
        )?;
        return Ok(());
    }
    writeln!(
        context.out(),
        "Asked session {session}'s running turn to stop (stop:requested)."
    )?;
    let from = server.summary(session).await?.map_or(0, |s| s.len);
    print_until_settled(context, &server, session, from).await
}

/// Prints where the request's event was recorded, then the session's events from there on
/// until no turn runs on it.
async fn follow(
    context: &Context,
    server: &RemoteStore,
    session: &SessionId,
    answer: Value,
    what: &str,
) -> Result<(), CliError> {
    let accepted: Accepted = serde_json::from_value(answer)?;
    let from = match accepted.recorded {
        Some(recorded) => {
            writeln!(
                context.out(),
                "The server recorded the {what} at position {} of session {session}; its turns:\n",
                recorded.seq + 1
            )?;
            recorded.seq
        }
        None => 0,
    };
    print_until_settled(context, server, session, from).await
}

/// Prints `session`'s events from seq `from` as they are recorded, until no turn runs on it.
async fn print_until_settled(
    context: &Context,
    server: &RemoteStore,
    session: &SessionId,
    mut from: u64,
) -> Result<(), CliError> {
    loop {
        // Read the status first: events recorded before it said "settled" are all printed.
        let summary = server
            .summary(session)
            .await?
            .ok_or_else(|| CliError::Usage(format!("the server has no session {session}")))?;
        let recorded = server
            .events_from(session, from)
            .await
            .map_err(|source| server.failed("reading", source))?;
        for recorded in recorded {
            from = recorded.seq + 1;
            super::events::write_line(&mut context.out(), &recorded)?;
        }
        if summary.status != "running" && !summary.running_here && from >= summary.len {
            writeln!(context.out(), "\nSession {session} is {}.", summary.status)?;
            return Ok(());
        }
        tokio::time::sleep(POLL).await;
    }
}

impl RemoteStore {
    /// `session`'s summary as the server reads it now.
    async fn summary(&self, session: &SessionId) -> Result<Option<Summary>, CliError> {
        self.get::<Summary>(&format!("/sessions/{session}"))
            .await
            .map_err(|source| self.failed("reading", source))
    }

    /// A read of the server that failed, as the CLI says it.
    fn failed(&self, operation: &'static str, source: openharness::StoreError) -> CliError {
        CliError::Store {
            operation,
            store: openharness::Store::describe(self),
            source,
        }
    }
}
