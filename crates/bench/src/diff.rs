//! The diff suite: comparing two long sessions ([`Host::compare`], what `openharness diff`
//! runs) against loading one of them at its end ([`Host::tape_view`], what `openharness tape
//! --at` runs), on redb.
//!
//! Two 100 000-event sessions with no common ancestor that part two events before their end
//! (the worst case: every event is compared and both states are folded to the end), and, for
//! information, a fork of the first at its middle that goes on with 50 000 events of its own.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use openharness::host::{ForkPoint, Host};
use openharness::store::RedbStore;
use openharness::{Envelope, RunOptions, SessionId, Store, Workflow};

use crate::report::Row;
use crate::tape::{Counters, envelope, session_events};

/// Events in each compared session.
const LEN: u64 = 100_000;
/// The seq at which the second session parts from the first.
const PARTS_AT: u64 = LEN - 2;
/// Where the fork of the information row starts.
const FORK_AT: u64 = LEN / 2;
/// Interleaved rounds; the median of each side is reported.
const ROUNDS: usize = 7;

pub(crate) fn run() -> ExitCode {
    crate::report::run_suite("diff", crate::report::Missed::Shown, suite)
}

/// Appends `events` to `session` from seq `from`, a thousand at a time.
async fn append(
    store: &dyn Store,
    session: &SessionId,
    events: &[Envelope],
    from: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    for (seq, batch) in (from..).step_by(1_000).zip(events.chunks(1_000)) {
        store.append(session, batch, seq).await?;
    }
    Ok(())
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

async fn suite() -> Result<Vec<Row>, Box<dyn std::error::Error>> {
    eprintln!("bench diff: writing two {LEN}-event sessions to a temporary redb store…");
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn Store> = Arc::new(RedbStore::open(dir.path().join("diff.redb"))?);
    let (a, b) = (SessionId::new(), SessionId::new());
    let events = session_events(LEN);
    append(store.as_ref(), &a, &events, 0).await?;
    let mut other = events.clone();
    if let Some(event) = usize::try_from(PARTS_AT)
        .ok()
        .and_then(|i| other.get_mut(i))
    {
        // Another bump of another slot: the payload and the state both differ.
        *event = envelope(PARTS_AT + 1);
    }
    append(store.as_ref(), &b, &other, 0).await?;
    drop(other);

    let workflow = Workflow::builder("bench")
        .initial_state(Counters::new())
        .shared_store(Arc::clone(&store))
        .build()?;
    let host = Host::shared(Arc::clone(&store)).workflow(workflow)?;

    // The fork of the information row: `a` forked at its middle, then 50 000 events of its own.
    let fork = host
        .fork(
            &a,
            ForkPoint::Position { position: FORK_AT },
            RunOptions::new(),
        )
        .await?
        .session;
    let own = store.session(&fork).await?.map_or(0, |info| info.count);
    let tail: Vec<Envelope> = (LEN..LEN + FORK_AT).map(envelope).collect();
    append(store.as_ref(), &fork, &tail, own).await?;

    let compared = host.compare(&a, &b).await?;
    if compared.agree != PARTS_AT
        || compared
            .divergence
            .as_ref()
            .and_then(|d| d.state_patch.as_ref())
            .is_none_or(|patch| patch.0.is_empty())
    {
        return Err(format!(
            "the comparison is wrong: {} events agree (expected {PARTS_AT}), divergence {:?}",
            compared.agree,
            compared.divergence.map(|d| d.state_patch)
        )
        .into());
    }

    let (mut loads, mut diffs, mut forks) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let started = Instant::now();
        std::hint::black_box(host.tape_view(&a, LEN).await?);
        loads.push(started.elapsed());
        let started = Instant::now();
        std::hint::black_box(host.compare(&a, &b).await?);
        diffs.push(started.elapsed());
        let started = Instant::now();
        std::hint::black_box(host.compare(&a, &fork).await?);
        forks.push(started.elapsed());
    }
    let (load, diff, forked) = (median(loads), median(diffs), median(forks));
    let ratio = |d: Duration| d.as_secs_f64() / load.as_secs_f64();
    Ok(vec![
        Row {
            what: format!("diff of two {}k-event sessions", LEN / 1_000),
            measured: ms(diff),
            baseline: format!("{} (load one)", ms(load)),
            ratio: format!("{:.2}x", ratio(diff)),
            goal: "<= 2x",
            met: Some(ratio(diff) <= 2.0),
        },
        Row {
            what: format!(
                "diff with a fork at {}k (+{}k own)",
                FORK_AT / 1_000,
                FORK_AT / 1_000
            ),
            measured: ms(forked),
            baseline: format!("{} (load one)", ms(load)),
            ratio: format!("{:.2}x", ratio(forked)),
            goal: "(info)",
            met: None,
        },
    ])
}
