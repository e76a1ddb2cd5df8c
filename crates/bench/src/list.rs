//! The list suite: the session list of a team's store ([`Host::query_sessions`], what
//! `GET /sessions` and `openharness sessions` answer) at 10 000 sessions on redb.
//!
//! 1. The first page of a host that has read nothing yet (every session's digest is built:
//!    each session read once), against listing the store's metadata alone
//!    ([`Store::sessions`], the floor). Goal: ≤ 1 s.
//! 2. Searches once the digests are built (a word of some inputs, an agent's name, a status
//!    with a sort, an id's prefix), p95 of 200. Goal: ≤ 200 ms.
//! 3. The first page again after 100 sessions grew by a turn: only what was appended is
//!    read. For information.
//! 4. Every session annotated by a person (a thumb, a label, a note: an `annotation:added` on
//!    its feedback log) and every other one scored online (`eval:scored`): the first page of
//!    a host that has read nothing yet, against the first figure's (the same sessions
//!    unannotated). Goal: ≤ 1 s. Then, digests built, an annotation queue's first page
//!    (`annotated=false`) and the worst-scored first (`sort=lowestScore`), p95 of 200, for
//!    information.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use openharness::host::feedback::{AnnotationAdded, Better, Thumbs, TurnScored, feedback_log};
use openharness::host::{Host, SessionQuery, SessionSort};
use openharness::store::RedbStore;
use openharness::{Envelope, SessionId, SessionStatus, Store};
use serde_json::json;

use crate::report::Row;

/// Sessions in the store.
const SESSIONS: usize = 10_000;
/// Searches timed once the digests are built.
const SEARCHES: usize = 200;
/// Sessions that grow by a turn before the last figure.
const GROWN: usize = 100;

pub(crate) fn run() -> ExitCode {
    crate::report::run_suite("list", crate::report::Missed::Shown, suite)
}

const CITIES: [&str; 8] = [
    "Lisbon", "Porto", "Seville", "Kyoto", "Oslo", "Lima", "Hanoi", "Tunis",
];

/// One turn of session `i`: an input, two agent calls with a tool call between, sometimes a
/// question left open, and the turn's end.
fn turn(i: usize, turn: usize) -> Vec<Envelope> {
    let city = CITIES[i % CITIES.len()];
    let event = |name: &'static str, payload| Envelope::new(name, payload, None);
    let mut events = vec![
        event(
            "user:input",
            json!({ "text": format!("Plan day {turn} of a trip to {city} for traveller {i}") }),
        ),
        event(
            "agent:started",
            json!({ "agentName": "planner", "prompt": format!("plan {city}") }),
        ),
        event(
            "tool:called",
            json!({ "agentName": "planner", "toolCallId": format!("c{i}"), "tool": "search", "input": { "q": city } }),
        ),
        event(
            "tool:result",
            json!({ "agentName": "planner", "toolCallId": format!("c{i}"), "tool": "search", "output": "museums", "isError": false }),
        ),
        event(
            "agent:completed",
            json!({ "agentName": "planner", "outcome": "success", "usage": { "inputTokens": 900 + i % 97, "outputTokens": 120 }, "cost": 0.002 }),
        ),
        event(
            "agent:started",
            json!({ "agentName": if i.is_multiple_of(5) { "critic" } else { "writer" }, "prompt": "write" }),
        ),
        event(
            "agent:completed",
            json!({ "agentName": if i.is_multiple_of(5) { "critic" } else { "writer" }, "outcome": "success", "usage": { "inputTokens": 400, "outputTokens": 300 }, "cost": 0.001 }),
        ),
    ];
    if i.is_multiple_of(7) {
        let asked = event("input:requested", json!({ "prompt": "Book it?" }));
        let id = asked.id;
        events.push(asked);
        events.push(event(
            "workflow:completed",
            json!({ "reason": "waiting_for_input", "openRequests": [id] }),
        ));
    } else {
        events.push(event("workflow:completed", json!({ "reason": "done" })));
    }
    events
}

fn p95(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    let index = (samples.len() * 95 / 100).min(samples.len().saturating_sub(1));
    samples.get(index).copied().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

async fn suite() -> Result<Vec<Row>, Box<dyn std::error::Error>> {
    eprintln!("bench list: writing {SESSIONS} sessions to a temporary redb store…");
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn Store> = Arc::new(RedbStore::open(dir.path().join("list.redb"))?);
    let mut ids = Vec::with_capacity(SESSIONS);
    for i in 0..SESSIONS {
        let session = SessionId::new();
        let mut events = vec![Envelope::new(
            "workflow:started",
            json!({ "workflow": "trips" }),
            None,
        )];
        events.extend(turn(i, 1));
        store.append(&session, &events, 0).await?;
        ids.push((session, events.len() as u64));
    }

    // 1. The first page of a host that has read nothing.
    let started = Instant::now();
    let listed = store.sessions().await?;
    let floor = started.elapsed();
    let host = Host::shared(Arc::clone(&store));
    let first_page = SessionQuery::default().limit(50);
    let started = Instant::now();
    let page = host.query_sessions(&first_page).await?;
    let cold = started.elapsed();
    if page.total != listed.len() as u64 || page.sessions.len() != 50 {
        return Err(format!(
            "the first page is wrong: {} of {}",
            page.sessions.len(),
            page.total
        )
        .into());
    }

    // 2. Searches once the digests are built.
    let lisbon = format!("traveller {}", SESSIONS / 2);
    let prefix = ids[SESSIONS / 3].0.as_str()[..20].to_owned();
    let queries = [
        SessionQuery::default().search("lisbon").limit(50),
        SessionQuery::default().search(lisbon.as_str()).limit(50),
        SessionQuery::default()
            .agent("critic")
            .sort(SessionSort::Cost)
            .limit(50),
        SessionQuery::default()
            .status([SessionStatus::Waiting])
            .sort(SessionSort::Tokens)
            .limit(50),
        SessionQuery::default().search(prefix.as_str()).limit(50),
    ];
    let mut searches = Vec::with_capacity(SEARCHES);
    for n in 0..SEARCHES {
        let query = &queries[n % queries.len()];
        let started = Instant::now();
        let page = host.query_sessions(query).await?;
        searches.push(started.elapsed());
        if page.sessions.is_empty() {
            return Err(format!("a search found nothing: {query:?}").into());
        }
    }
    let search = p95(searches);

    // 3. After some sessions grew.
    for (i, (session, len)) in ids.iter().take(GROWN).enumerate() {
        store.append(session, &turn(i, 2), *len).await?;
    }
    let started = Instant::now();
    host.query_sessions(&first_page).await?;
    let grown = started.elapsed();

    // 4. Every session annotated, every other one scored.
    eprintln!("bench list: annotating the {SESSIONS} sessions, scoring every other one…");
    for (i, (session, len)) in ids.iter().enumerate() {
        let thumbs = if i.is_multiple_of(3) {
            Thumbs::Down
        } else {
            Thumbs::Up
        };
        let mut said = AnnotationAdded::by(format!("reviewer{}", i % 5))
            .thumbs(thumbs)
            .label(if i.is_multiple_of(4) {
                "wrong-city"
            } else {
                "fine"
            })
            .note("checked the plan against the request");
        said.turn = Some(*len);
        let mut events = vec![Envelope::typed(&said, None)?];
        if i.is_multiple_of(2) {
            let scored = TurnScored {
                scorer: "helpful".to_owned(),
                turn: *len,
                first_seq: 1,
                value: Some((i % 100) as f64 / 100.0),
                passed: i % 100 >= 50,
                better: Better::Higher,
                detail: None,
                judge_session: None,
            };
            events.push(Envelope::typed(&scored, None)?);
        }
        store.append(&feedback_log(session)?, &events, 0).await?;
    }
    let annotated_host = Host::shared(Arc::clone(&store));
    let started = Instant::now();
    let page = annotated_host.query_sessions(&first_page).await?;
    let annotated_cold = started.elapsed();
    if page.total != SESSIONS as u64 || page.sessions.iter().any(|s| s.annotations.is_none()) {
        return Err(format!("the annotated first page is wrong: {} sessions", page.total).into());
    }
    let reviews = [
        SessionQuery::default().annotated(false).limit(50),
        SessionQuery::default()
            .scorer("helpful")
            .sort(SessionSort::LowestScore)
            .limit(50),
        SessionQuery::default().label("wrong-city").limit(50),
    ];
    let mut reviewed = Vec::with_capacity(SEARCHES);
    for n in 0..SEARCHES {
        let query = &reviews[n % reviews.len()];
        let started = Instant::now();
        let page = annotated_host.query_sessions(query).await?;
        reviewed.push(started.elapsed());
        let expected = match n % reviews.len() {
            0 => 0,
            1 => SESSIONS / 2,
            _ => SESSIONS / 4,
        } as u64;
        if page.total != expected {
            return Err(format!("{query:?} found {} sessions, not {expected}", page.total).into());
        }
    }
    let review = p95(reviewed);

    Ok(vec![
        Row {
            what: format!("first page of {}k sessions, cold", SESSIONS / 1_000),
            measured: ms(cold),
            baseline: format!("{} (metadata)", ms(floor)),
            ratio: format!("{:.1}x", cold.as_secs_f64() / floor.as_secs_f64()),
            goal: "<= 1 s",
            met: Some(cold <= Duration::from_secs(1)),
        },
        Row {
            what: format!("search p95 over {}k sessions", SESSIONS / 1_000),
            measured: ms(search),
            baseline: format!("{} (metadata)", ms(floor)),
            ratio: format!("{:.1}x", search.as_secs_f64() / floor.as_secs_f64()),
            goal: "<= 200 ms",
            met: Some(search <= Duration::from_millis(200)),
        },
        Row {
            what: format!("first page after {GROWN} sessions grew"),
            measured: ms(grown),
            baseline: format!("{} (metadata)", ms(floor)),
            ratio: format!("{:.1}x", grown.as_secs_f64() / floor.as_secs_f64()),
            goal: "(info)",
            met: None,
        },
        Row {
            what: format!("first page, {}k sessions annotated, cold", SESSIONS / 1_000),
            measured: ms(annotated_cold),
            baseline: format!("{} unannotated", ms(cold)),
            ratio: format!("{:.2}x", annotated_cold.as_secs_f64() / cold.as_secs_f64()),
            goal: "<= 1 s",
            met: Some(annotated_cold <= Duration::from_secs(1)),
        },
        Row {
            what: "queue / worst score / label p95".to_owned(),
            measured: ms(review),
            baseline: format!("{} (search p95)", ms(search)),
            ratio: format!("{:.1}x", review.as_secs_f64() / search.as_secs_f64()),
            goal: "(info)",
            met: None,
        },
    ])
}
