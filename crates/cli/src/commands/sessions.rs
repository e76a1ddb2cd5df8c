//! `sessions`: the store's sessions listed (filtered, sorted, searched), with the workflow that
//! owns each (marked `!` when other code recorded it) and the ones an interrupted import left
//! unfinished.

use super::*;
use openharness_host::{SessionQueryError, SessionQueryWords};

/// One session as `sessions --json` prints it: the store's metadata, the workflow that owns
/// it (a fork's is its root's) and whether this program registers that workflow.
#[derive(Serialize)]
pub(super) struct Row<'a> {
    id: &'a SessionId,
    created: DateTime<Utc>,
    last_event: DateTime<Utc>,
    count: u64,
    workflow: Option<&'a str>,
    parent: Option<&'a SessionId>,
    status: SessionStatus,
    hosted: bool,
    /// Its first input, cut short.
    title: Option<&'a str>,
    /// The agents it ran.
    agents: &'a [String],
    /// Input and output tokens.
    tokens: u64,
    /// What its agents reported costing, in US dollars.
    cost: f64,
    /// Questions waiting for an answer.
    open_requests: u64,
    /// The note of an interrupted import that left the session a prefix, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    unfinished: Option<&'a str>,
    /// Why its events cannot all be read, when they cannot (`check` says more).
    #[serde(skip_serializing_if = "Option::is_none")]
    damaged: Option<&'a str>,
    /// Whether other code than this program's recorded it (another fingerprint, version or
    /// commit in its `workflow:started`): its states here are today's fold.
    code_changed: bool,
    /// Its online scores: each scorer's latest.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    scores: &'a std::collections::BTreeMap<String, f64>,
    /// What people said of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<&'a openharness_host::AnnotationSummary>,
}

/// A row's last column: its title, then its online scores and people's thumbs and labels,
/// when it has any.
fn titled(info: &openharness_host::SessionSummary) -> String {
    let mut text = info.title.as_deref().map_or_else(
        || "-".to_owned(),
        |title| title.chars().take(48).collect::<String>(),
    );
    for (scorer, value) in &info.scores {
        text.push_str(&format!("  [{scorer} {value:.2}]"));
    }
    if let Some(said) = &info.annotations {
        text.push_str(&format!("  [+{} -{}", said.up, said.down));
        for label in &said.labels {
            text.push_str(&format!(" #{label}"));
        }
        text.push(']');
    }
    text
}

/// The sessions an interrupted import left marked unfinished, with their notes.
pub(super) async fn unfinished(store: &dyn Store) -> Result<Vec<(SessionId, String)>, CliError> {
    store.unfinished().await.map_err(|source| CliError::Store {
        operation: "listing of unfinished sessions",
        store: store.describe(),
        source,
    })
}

/// Fails when the store met damage while listing (a session left out, with a warning): the
/// list printed is not the whole store.
pub(super) async fn listed_whole(host: &openharness_host::Host) -> Result<(), CliError> {
    host.store().sync().await.map_err(|source| CliError::Store {
        operation: "listing of sessions",
        store: host.store().describe(),
        source,
    })
}

/// The host's query for `sessions`' options, checked by the host (the same rules as the
/// server's `GET /sessions`). Without `--sort`, the oldest come first, unless a filter is
/// given: then the most recently active.
pub(super) fn session_query(asked: crate::args::SessionsQuery) -> Result<SessionQuery, CliError> {
    let mut words = SessionQueryWords::default();
    words.search = asked.search;
    words.status = (!asked.status.is_empty()).then(|| asked.status.join(","));
    words.workflow = asked.workflow;
    words.agent = asked.agent;
    words.since = asked.since;
    words.until = asked.until;
    words.open_request = asked.open.then_some(true);
    words.fork_of = asked.fork_of;
    words.scorer = asked.scorer;
    words.min_score = asked.min_score;
    words.max_score = asked.max_score;
    words.annotated = asked.annotated;
    words.label = asked.label;
    words.limit = asked.limit;
    // Any option but the sort is a filter.
    let filtered = words != SessionQueryWords::default();
    let sorted = asked.sort.is_some();
    words.sort = asked.sort;
    let mut query = words.into_query().map_err(|err| {
        let option = match err {
            SessionQueryError::Status(_) => "--status",
            SessionQueryError::Sort(_) => "--sort",
            SessionQueryError::ForkOf { .. } => "--fork-of",
            SessionQueryError::NoScorer(_) => "--scorer",
            _ => "sessions",
        };
        CliError::Usage(format!("{option}: {err}"))
    })?;
    if !sorted && !filtered {
        query.sort = SessionSort::Oldest;
    }
    Ok(query)
}

pub(super) async fn sessions(
    context: &Context,
    json: bool,
    asked: crate::args::SessionsQuery,
) -> Result<(), CliError> {
    let host = context.host();
    let query = session_query(asked)?;
    let sessions = host
        .query_sessions(&query)
        .await
        .map_err(|e| context.explain(e))?
        .sessions;
    let unfinished: std::collections::HashMap<SessionId, String> =
        unfinished(host.store().as_ref())
            .await?
            .into_iter()
            .collect();
    // Sessions recorded by other code than this program's (one read of each lineage's first
    // event; unhosted ones cannot be compared).
    let mut changed = std::collections::HashSet::new();
    for info in sessions.iter().filter(|s| s.hosted) {
        if let Ok(Some(_)) = host.code_changed(&info.id).await {
            changed.insert(info.id.clone());
        }
    }
    let mut out = context.out();
    if json {
        let rows: Vec<Row<'_>> = sessions
            .iter()
            .map(|s| Row {
                unfinished: unfinished.get(&s.id).map(String::as_str),
                id: &s.id,
                created: s.created,
                last_event: s.last_event,
                count: s.len,
                workflow: s.workflow.as_deref(),
                parent: s.parent.as_ref(),
                status: s.status,
                hosted: s.hosted,
                title: s.title.as_deref(),
                agents: &s.agents,
                tokens: s.usage.input_tokens + s.usage.output_tokens,
                cost: s.cost,
                open_requests: s.open_requests,
                damaged: s.damaged.as_deref(),
                code_changed: changed.contains(&s.id),
                scores: &s.scores,
                annotations: s.annotations.as_ref(),
            })
            .collect();
        let mut text = serde_json::to_string_pretty(&rows)?;
        text.push('\n');
        out.write_all(text.as_bytes())?;
        out.flush()?;
        listed_whole(host).await?;
        return none_damaged(&sessions);
    }
    if sessions.is_empty() {
        writeln!(
            out,
            "No sessions yet in {}. This program runs {}.",
            host.store().describe(),
            list_names(&host.workflow_names())
        )?;
    }
    if !sessions.is_empty() {
        writeln!(
            out,
            "{:<38} {:<18} {:<8} {:>7}  {:<25} {:<38} TITLE",
            "SESSION", "WORKFLOW", "STATUS", "EVENTS", "LAST EVENT", "PARENT"
        )?;
    }
    for info in &sessions {
        let workflow = match (&info.workflow, info.hosted) {
            (Some(name), true) if changed.contains(&info.id) => format!("{name}!"),
            (Some(name), true) => name.clone(),
            (Some(name), false) => format!("{name}*"),
            (None, _) => "-*".to_owned(),
        };
        writeln!(
            out,
            "{:<38} {:<18} {:<8} {:>7}  {:<25} {:<38} {}",
            info.id.as_str(),
            workflow,
            info.status.as_str(),
            info.len,
            info.last_event.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
            info.parent.as_ref().map_or("-", SessionId::as_str),
            titled(info),
        )?;
    }
    for (session, note) in &unfinished {
        writeln!(out, "UNFINISHED  {session}  {note}")?;
    }
    for info in sessions.iter().filter(|s| s.damaged.is_some()) {
        let why = info.damaged.as_deref().unwrap_or_default();
        writeln!(out, "DAMAGED  {}  {why} (`check` tells more)", info.id)?;
    }
    out.flush()?;
    listed_whole(host).await?;
    if sessions.iter().any(|s| !s.hosted) {
        writeln!(
            out,
            "* recorded by a workflow this program does not register: `events` and `tape` show its events, not its states"
        )?;
    }
    if !changed.is_empty() {
        writeln!(
            out,
            "! recorded by other code than this program's: states here are today's fold (`replay` checks it against the state hashes the live run recorded)"
        )?;
    }
    none_damaged(&sessions)
}

/// A listing that met damaged sessions fails (after listing them all): damage is never passed
/// over with success.
fn none_damaged(sessions: &[openharness_host::SessionSummary]) -> Result<(), CliError> {
    match sessions.iter().filter(|s| s.damaged.is_some()).count() {
        0 => Ok(()),
        damaged => Err(CliError::Damaged(damaged)),
    }
}
