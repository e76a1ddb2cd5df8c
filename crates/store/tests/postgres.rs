//! PostgresStore: the conformance suite, the model check, and two OS processes appending to
//! and tailing one session through PostgreSQL.
//!
//! The server's URL comes from `OPENHARNESS_TEST_POSTGRES` (`.ci/run` sets it). Unset, every
//! test here prints that it was skipped. Set but unreachable, the tests fail when `CI=true`
//! and skip (saying why) otherwise. Each test works in its own fresh schema, so tests run in
//! parallel and re-run without cleanup.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use openharness_core::{Envelope, SessionId, Store, StoreError};
use openharness_store::conformance::{self, Op, check_against_model};
use openharness_store::{PostgresError, PostgresOptions, PostgresStore};
use openharness_testkit::{LIMIT, eventually};
use serde_json::json;

const URL_ENV: &str = "OPENHARNESS_TEST_POSTGRES";
const CHILD_ENV: &str = "OPENHARNESS_TEST_POSTGRES_CHILD";

/// A fresh schema name.
fn schema() -> String {
    format!("oh_test_{}", uuid::Uuid::now_v7().simple())
}

/// A store in `schema` of the server at `url`: stores in one schema stand for replicas
/// sharing a database.
async fn replica(url: &str, schema: &str) -> PostgresStore {
    PostgresStore::connect_in_schema(url, schema)
        .await
        .unwrap_or_else(|err| panic!("connecting to schema {schema}: {err}"))
}

/// The server's URL, or `None` (after saying why) when the tests must skip: when
/// [`URL_ENV`] is unset, or the server does not answer and `CI` is not `true` (under CI an
/// unreachable server fails the test).
async fn server(test: &str) -> Option<String> {
    let Ok(url) = std::env::var(URL_ENV) else {
        eprintln!("{test}: skipped: {URL_ENV} is not set (CI sets it; see .ci/run)");
        return None;
    };
    match tokio_postgres::connect(&url, tokio_postgres::NoTls).await {
        Ok(_) => Some(url),
        Err(err) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("{test}: {URL_ENV} is set and CI=true, but PostgreSQL is unreachable: {err}")
        }
        Err(err) => {
            eprintln!("{test}: skipped: PostgreSQL at {URL_ENV} is unreachable: {err}");
            None
        }
    }
}

/// A store in a fresh schema, or `None` (after saying why) when the tests must skip.
async fn store(test: &str) -> Option<PostgresStore> {
    let url = server(test).await?;
    match PostgresStore::connect_in_schema(&url, &schema()).await {
        Ok(store) => Some(store),
        Err(err) => panic!("{test}: the server answers, but a store cannot be opened: {err}"),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

macro_rules! postgres_conformance {
    (; $($check:ident),* $(,)?) => {$(
        #[test]
        fn $check() {
            if runtime().block_on(server(stringify!($check))).is_none() {
                return;
            }
            conformance::run(
                async { store(stringify!($check)).await.unwrap() },
                conformance::$check,
            );
        }
    )*};
}

mod conformance_suite {
    use super::*;
    openharness_store::__for_each_conformance_check!([postgres_conformance]);
}

#[test]
fn reconnecting_sees_the_same_store_and_migrations_run_once() {
    runtime().block_on(async {
        let Some(url) = server("reconnect").await else {
            return;
        };
        let schema = schema();
        // Two stores starting together on a new schema: migrations apply once, under a lock.
        let (a, b) = tokio::join!(
            PostgresStore::connect_in_schema(&url, &schema),
            PostgresStore::connect_in_schema(&url, &schema)
        );
        let (a, b) = (a.unwrap(), b.unwrap());
        let session = SessionId::new();
        let event = Envelope::new("test:appended", json!({ "n": 1 }), None);
        assert_eq!(
            a.append(&session, std::slice::from_ref(&event), 0)
                .await
                .unwrap(),
            1
        );
        assert_eq!(b.all_events(&session).await.unwrap(), vec![event.clone()]);
        assert!(matches!(
            b.append(&session, std::slice::from_ref(&event), 0).await,
            Ok(1)
        ));
        drop((a, b));
        let c = replica(&url, &schema).await;
        assert_eq!(c.all_events(&session).await.unwrap(), vec![event]);
        assert!(c.describe().contains(&schema), "{}", c.describe());

        let err = PostgresStore::connect_in_schema(&url, "Robert'); DROP")
            .await
            .unwrap_err();
        assert!(err.to_string().contains("invalid schema name"), "{err}");

        drop(c);
        drop_old_test_schemas(&url, &schema).await;
    });
}

/// A schema written by version 1 (sessions kept a count and the last event time, rewritten on
/// every append) keeps its sessions through migration 2, which derives both from the events.
#[test]
fn migration_2_keeps_sessions_written_by_version_1() {
    runtime().block_on(async {
        let Some(url) = server("migration 2").await else {
            return;
        };
        let schema = schema();
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let (version, v1) = openharness_store::MIGRATIONS[0];
        assert_eq!(version, 1);
        client
            .batch_execute(&format!(
                "CREATE SCHEMA \"{schema}\"; SET search_path TO \"{schema}\";
                 CREATE TABLE oh_migrations (
                     version integer PRIMARY KEY,
                     applied_at timestamptz NOT NULL DEFAULT now()
                 );
                 {v1}
                 INSERT INTO oh_migrations (version) VALUES (1);"
            ))
            .await
            .unwrap();

        // Two sessions as version 1 stored them: a forked one running a workflow, and a plain one.
        let (forked, plain, parent) = (SessionId::new(), SessionId::new(), SessionId::new());
        let mut first = vec![
            Envelope::new(
                "session:forked",
                json!({ "parent": parent, "position": 2 }),
                None,
            ),
            Envelope::new("workflow:started", json!({ "workflow": "planner" }), None),
            Envelope::new("test:appended", json!({ "n": 3 }), None),
        ];
        let base: chrono::DateTime<chrono::Utc> = "2024-05-01T10:00:00Z".parse().unwrap();
        for (n, event) in first.iter_mut().enumerate() {
            event.timestamp = base + chrono::Duration::seconds(n as i64);
        }
        let second = vec![Envelope::new("test:appended", json!({ "n": 1 }), None)];
        for (session, events, workflow, parent) in [
            (&forked, &first, Some("planner"), Some(parent.as_str())),
            (&plain, &second, None, None),
        ] {
            for (seq, event) in events.iter().enumerate() {
                client
                    .execute(
                        "INSERT INTO oh_events (session, seq, id, body) VALUES ($1, $2, $3, $4)",
                        &[
                            &session.as_str(),
                            &(seq as i64),
                            event.id.as_uuid(),
                            &serde_json::to_string(event).unwrap(),
                        ],
                    )
                    .await
                    .unwrap();
            }
            let (Some(head), Some(last)) = (events.first(), events.last()) else {
                unreachable!()
            };
            client
                .execute(
                    "INSERT INTO oh_sessions (id, created, last_event, count, workflow, parent)
                     VALUES ($1, $2, $3, $4, $5, $6)",
                    &[
                        &session.as_str(),
                        &head.timestamp.to_rfc3339(),
                        &last.timestamp.to_rfc3339(),
                        &(events.len() as i64),
                        &workflow,
                        &parent,
                    ],
                )
                .await
                .unwrap();
        }

        // Two processes connecting together migrate once.
        let (a, b) = tokio::join!(
            PostgresStore::connect_in_schema(&url, &schema),
            PostgresStore::connect_in_schema(&url, &schema)
        );
        let (a, b) = (a.unwrap(), b.unwrap());
        let versions: Vec<i32> = client
            .query("SELECT version FROM oh_migrations ORDER BY version", &[])
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        let all: Vec<i32> = openharness_store::MIGRATIONS
            .iter()
            .map(|(v, _)| *v)
            .collect();
        assert_eq!(versions, all);

        let info = a.session(&forked).await.unwrap().unwrap();
        assert_eq!(info.count, 3);
        assert_eq!(info.created, first[0].timestamp);
        assert_eq!(info.last_event, first[2].timestamp);
        assert_eq!(info.workflow.as_deref(), Some("planner"));
        assert_eq!(info.parent.as_ref(), Some(&parent));
        let listed = b.sessions().await.unwrap();
        let ids: Vec<&SessionId> = listed.iter().map(|info| &info.id).collect();
        assert_eq!(ids, vec![&forked, &plain], "oldest first");
        assert_eq!(listed[1].count, 1);

        // Appending continues at the stored length; the conflict carries it.
        let next = Envelope::new("test:appended", json!({ "n": 4 }), None);
        assert!(matches!(
            b.append(&forked, std::slice::from_ref(&next), 2).await,
            Err(StoreError::Conflict { actual: 3, .. })
        ));
        assert_eq!(
            b.append(&forked, std::slice::from_ref(&next), 3)
                .await
                .unwrap(),
            4
        );
        let info = a.session(&forked).await.unwrap().unwrap();
        assert_eq!((info.count, info.last_event), (4, next.timestamp));
        assert_eq!(info.created, first[0].timestamp, "created is kept");
        let mut all = first.clone();
        all.push(next);
        assert_eq!(a.all_events(&forked).await.unwrap(), all);

        drop((a, b));
        client
            .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
            .await
            .unwrap();
    });
}

/// Keeps the test database tidy: drops this test's schema and every test schema created more
/// than an hour ago (the time is in the name's UUID v7), which no running test still uses:
/// these tests' and `tests/sessions.rs`'s `oh_test_*`, and the platform tests' `oh_platform_*`,
/// which cannot drop their own (they hold only a `dyn Store`).
async fn drop_old_test_schemas(url: &str, own: &str) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let rows = client
        .query(
            "SELECT nspname FROM pg_namespace \
             WHERE nspname LIKE 'oh\\_test\\_%' OR nspname LIKE 'oh\\_platform\\_%'",
            &[],
        )
        .await
        .unwrap();
    for row in rows {
        let name: String = row.get(0);
        let created_ms = name
            .strip_prefix("oh_test_")
            .or_else(|| name.strip_prefix("oh_platform_"))
            .and_then(|hex| hex.get(..12))
            .and_then(|hex| u128::from_str_radix(hex, 16).ok());
        let old = created_ms.is_some_and(|ms| now_ms.saturating_sub(ms) > 3_600_000);
        if old || name == own {
            // Another run may be dropping the same schema: ignore failures.
            let _ = client
                .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE"))
                .await;
        }
    }
}

#[test]
fn matches_the_model_on_fixed_sequences() {
    runtime().block_on(async {
        let Some(store) = store("model").await else {
            return;
        };
        let ops = vec![
            Op::Append {
                session: 0,
                events: 3,
                skew: 0,
                reuse: None,
                workflow: Some(1),
            },
            Op::Retry { session: 0 },
            Op::Append {
                session: 0,
                events: 2,
                skew: 1,
                reuse: None,
                workflow: None,
            },
            Op::Append {
                session: 0,
                events: 2,
                skew: 0,
                reuse: Some(1),
                workflow: None,
            },
            Op::Append {
                session: 1,
                events: 1,
                skew: 0,
                reuse: None,
                workflow: None,
            },
            Op::Read {
                session: 0,
                start: 1,
                end: 9,
            },
            Op::List,
            Op::Clear { session: 0 },
            Op::Retry { session: 0 },
            Op::List,
        ];
        check_against_model(&store, &ops).await.unwrap();
    });
}

/// The child half of [`two_processes_append_and_tail_one_session`]; a no-op unless that test
/// started this process.
#[test]
fn child_process_appends_and_tails() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (schema, session) = spec.split_once(' ').unwrap();
    let url = std::env::var(URL_ENV).unwrap();
    let session: SessionId = session.parse().unwrap();
    runtime().block_on(async {
        let store = PostgresStore::connect_in_schema(&url, schema)
            .await
            .unwrap();
        let seen = append_and_tail(&store, &session, "child").await;
        // libtest has printed `test ... ` without a newline: start a fresh line.
        println!();
        for id in seen {
            println!("seen {id}");
        }
    });
}

const PER_PROCESS: u64 = 40;

/// Subscribes from 0, appends `PER_PROCESS` events (retrying conflicts), then waits until the
/// tail has delivered both processes' events; returns the ids in delivery order.
async fn append_and_tail(store: &PostgresStore, session: &SessionId, writer: &str) -> Vec<String> {
    let mut tail = store.subscribe(session, 0).await.unwrap();
    let mut seq = 0;
    for n in 0..PER_PROCESS {
        let event = Envelope::new("test:appended", json!({ "writer": writer, "n": n }), None);
        loop {
            match store
                .append(session, std::slice::from_ref(&event), seq)
                .await
            {
                Ok(len) => {
                    seq = len;
                    break;
                }
                Err(StoreError::Conflict { actual, .. }) => seq = actual,
                Err(err) => panic!("{writer}: append failed: {err}"),
            }
        }
    }
    let mut seen = Vec::new();
    for expected in 0..2 * PER_PROCESS {
        let recorded = tokio::time::timeout(Duration::from_secs(30), tail.next())
            .await
            .unwrap_or_else(|_| panic!("{writer}: no event at seq {expected} (stuck tail)"))
            .unwrap()
            .unwrap();
        assert_eq!(
            recorded.seq, expected,
            "{writer}: skipped or repeated a seq"
        );
        seen.push(recorded.event.id.to_string());
    }
    seen
}

#[test]
fn two_processes_append_and_tail_one_session() {
    runtime().block_on(async {
        let Some(url) = server("two processes").await else {
            return;
        };
        let schema = schema();
        let store = replica(&url, &schema).await;
        let session = SessionId::new();

        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "child_process_appends_and_tails",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, format!("{schema} {session}"))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .filter_map(|line| line.strip_prefix("seen ").map(str::to_owned))
                .collect::<Vec<_>>()
        });

        let ours = append_and_tail(&store, &session, "parent").await;
        let status = tokio::task::spawn_blocking(move || child.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(status.success(), "the child process failed: {status}");
        let theirs = reader.join().unwrap();

        let stored: Vec<String> = store
            .all_events(&session)
            .await
            .unwrap()
            .iter()
            .map(|e| e.id.to_string())
            .collect();
        assert_eq!(stored.len() as u64, 2 * PER_PROCESS);
        assert_eq!(stored.iter().collect::<HashSet<_>>().len(), stored.len());
        assert_eq!(
            ours, stored,
            "this process's tail differs from the stored order"
        );
        assert_eq!(
            theirs, stored,
            "the other process's tail differs from the stored order"
        );
        let writers: HashSet<String> = store
            .all_events(&session)
            .await
            .unwrap()
            .iter()
            .filter_map(|e| e.payload["writer"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(writers.len(), 2, "both processes appended");
    });
}

/// `PostgresOptions::connections` bounds the pool: many operations at once on a pool of one
/// all succeed, through one query connection (and the listener's); a size out of range is
/// refused before connecting.
#[test]
fn the_pool_opens_at_most_the_connections_asked_for() {
    runtime().block_on(async {
        let Some(url) = server("pool size").await else {
            return;
        };
        for size in [0, openharness_store::MAX_CONNECTIONS + 1] {
            let options = PostgresOptions::default()
                .schema(schema())
                .connections(size);
            let err = PostgresStore::connect_with(&url, options)
                .await
                .err()
                .unwrap();
            assert!(
                matches!(PostgresError::of(&err), Some(PostgresError::Connections(_))),
                "{err}"
            );
        }
        let schema = schema();
        let options = PostgresOptions::default().schema(&schema).connections(1);
        let store = PostgresStore::connect_with(&url, options).await.unwrap();
        let sessions: Vec<SessionId> = (0..12).map(|_| SessionId::new()).collect();
        let appends: Vec<_> = sessions
            .iter()
            .map(|session| {
                let (store, session) = (store.clone(), session.clone());
                let event = Envelope::new("test:appended", json!({ "n": 1 }), None);
                tokio::spawn(async move { store.append(&session, &[event], 0).await })
            })
            .collect();
        for appended in appends {
            assert_eq!(appended.await.unwrap().unwrap(), 1);
        }
        let reads: Vec<_> = sessions
            .iter()
            .map(|session| {
                let (store, session) = (store.clone(), session.clone());
                tokio::spawn(async move { store.all_events(&session).await })
            })
            .collect();
        for read in reads {
            assert_eq!(read.await.unwrap().unwrap().len(), 1);
        }
        let (admin, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let open: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                &[&format!("openharness {schema}")],
            )
            .await
            .unwrap()
            .get(0);
        // One query connection and the listener.
        assert_eq!(open, 2);
    });
}

#[test]
fn long_reads_split_across_connections_keep_the_order() {
    runtime().block_on(async {
        let Some(store) = store("long reads").await else {
            return;
        };
        let session = SessionId::new();
        let events: Vec<Envelope> = (0..45_000u64)
            .map(|n| Envelope::new("test:appended", json!({ "n": n }), None))
            .collect();
        for (i, batch) in events.chunks(5000).enumerate() {
            store
                .append(&session, batch, i as u64 * 5000)
                .await
                .unwrap();
        }
        let all = store.all_events(&session).await.unwrap();
        assert_eq!(all.len(), events.len());
        assert!(all == events, "a long read differs from what was appended");
        let middle = store.events(&session, 123..44_321).await.unwrap();
        assert!(middle == events[123..44_321], "a long ranged read differs");
        let tail = store.events(&session, 20_000..u64::MAX).await.unwrap();
        assert!(tail == events[20_000..], "a long read to the end differs");
    });
}

/// Only the listener is terminated, while the session is idle: it reconnects, and the tail
/// delivers what is appended afterwards (woken by the new listener) without an error; new
/// subscriptions work too.
#[test]
fn a_lost_listener_reconnects_and_tails_carry_on() {
    runtime().block_on(async {
        let Some(url) = server("lost listener").await else {
            return;
        };
        let schema = schema();
        let store = replica(&url, &schema).await;
        let session = SessionId::new();
        let mut tail = store.subscribe(&session, 0).await.unwrap();

        // Terminate this store's listener backend from another connection.
        let (admin, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let terminated = admin
            .query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1",
                &[&format!("LISTEN \"oh_{schema}\"")],
            )
            .await
            .unwrap();
        assert_eq!(terminated.len(), 1, "exactly one listener for the schema");

        let events: Vec<Envelope> = (0..3u64)
            .map(|n| Envelope::new("test:appended", json!({ "n": n }), None))
            .collect();
        for (seq, event) in events.iter().enumerate() {
            store
                .append(&session, std::slice::from_ref(event), seq as u64)
                .await
                .unwrap();
            // Spread out, so some appends land after the listener is back.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        for (seq, event) in events.iter().enumerate() {
            let recorded = tokio::time::timeout(Duration::from_secs(20), tail.next())
                .await
                .expect("the tail delivers, not hangs")
                .expect("the tail carries on")
                .expect("an event, not an error");
            assert_eq!((recorded.seq, &recorded.event), (seq as u64, event));
        }
        let mut later = store.subscribe(&session, 1).await.unwrap();
        let recorded = later.next().await.unwrap().unwrap();
        assert_eq!((recorded.seq, &recorded.event), (1, &events[1]));
        drop((tail, later, store));
        drop_old_test_schemas(&url, &schema).await;
    });
}

/// Terminates every backend of the store in `schema` (its query connections and its listener),
/// found by the `application_name` the store gives its connections; returns how many.
async fn terminate_store_backends(admin: &tokio_postgres::Client, schema: &str) -> usize {
    admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE application_name = $1 AND pid <> pg_backend_pid()",
            &[&format!("openharness {schema}")],
        )
        .await
        .expect("the admin connection terminates the store's backends")
        .len()
}

/// Waits (up to 20 s) until the store in `schema` has a listener connection `LISTEN`ing.
async fn wait_for_listener(admin: &tokio_postgres::Client, schema: &str) {
    let what = format!("the listener of {schema} to reconnect");
    eventually(Duration::from_secs(20), &what, || async {
        let listening = admin
            .query(
                "SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND query = $2",
                &[
                    &format!("openharness {schema}"),
                    &format!("LISTEN \"oh_{schema}\""),
                ],
            )
            .await
            .expect("the admin connection reads pg_stat_activity");
        if listening.is_empty() {
            Err("not listening")
        } else {
            Ok(())
        }
    })
    .await;
}

/// Fault probe: every backend of a store is terminated (as a server restart, a failover or an
/// idle reaper would), several times, between and during appends and reads. The store must
/// carry on: no error, nothing lost, nothing stored twice, and a live tail started before the
/// first termination delivers every event once, in order, without ending.
#[test]
fn appends_reads_and_tails_carry_on_when_every_connection_is_terminated() {
    runtime().block_on(async {
        let Some(url) = server("terminated connections").await else {
            return;
        };
        let schema = schema();
        let store = replica(&url, &schema).await;
        let (admin, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);

        let session = SessionId::new();
        let events: Vec<Envelope> = (0..90u64)
            .map(|n| Envelope::new("test:appended", json!({ "n": n }), None))
            .collect();
        let total = events.len();
        let mut tail = store.subscribe(&session, 0).await.unwrap();
        let follower = tokio::spawn(async move {
            let mut seen = Vec::new();
            while seen.len() < total {
                match tokio::time::timeout(Duration::from_secs(30), tail.next()).await {
                    Ok(Some(Ok(recorded))) => seen.push((recorded.seq, recorded.event.id)),
                    Ok(Some(Err(err))) => {
                        panic!("the tail failed after {} events: {err}", seen.len())
                    }
                    Ok(None) => panic!("the tail ended after {} events", seen.len()),
                    Err(_) => panic!("the tail stalled after {} events", seen.len()),
                }
            }
            // Nothing more: a repeat would arrive now.
            let extra = tokio::time::timeout(Duration::from_millis(500), tail.next()).await;
            assert!(
                extra.is_err(),
                "the tail delivered more than was appended: {extra:?}"
            );
            seen
        });

        let mut terminations = 0;
        let mut seq = 0usize;
        while seq < total {
            if seq % 15 == 5 {
                // Between operations: the store's connections are idle (so is the listener,
                // once it is back from the previous termination).
                wait_for_listener(&admin, &schema).await;
                let killed = terminate_store_backends(&admin, &schema).await;
                assert!(
                    killed >= 2,
                    "a query connection and the listener, got {killed}"
                );
                terminations += 1;
            }
            if seq % 15 == 10 {
                // During an append of a batch: the termination races the append's query.
                let batch = &events[seq..seq + 3];
                let (killed, appended) = tokio::join!(
                    terminate_store_backends(&admin, &schema),
                    store.append(&session, batch, seq as u64)
                );
                assert!(killed >= 1, "the store has backends to terminate");
                terminations += 1;
                assert_eq!(
                    appended.expect("a batch append carries on through a termination"),
                    (seq + 3) as u64
                );
                seq += 3;
                continue;
            }
            let len = store
                .append(&session, std::slice::from_ref(&events[seq]), seq as u64)
                .await
                .unwrap_or_else(|err| panic!("append at {seq} after a termination: {err}"));
            assert_eq!(len, (seq + 1) as u64);
            seq += 1;
            let read = store
                .events(&session, 0..u64::MAX)
                .await
                .unwrap_or_else(|err| panic!("read at {seq} after a termination: {err}"));
            assert!(read == events[..seq], "the read at {seq} differs");
        }
        assert!(terminations >= 6);

        // Snapshots, metadata and the session list carry on too.
        terminate_store_backends(&admin, &schema).await;
        let snapshot = openharness_core::adapter::Snapshot::new(40, json!({ "at": 40 }));
        store
            .snapshot(&session, &snapshot)
            .await
            .expect("a snapshot write carries on through a termination");
        terminate_store_backends(&admin, &schema).await;
        assert_eq!(
            store.latest_snapshot(&session, 90).await.unwrap(),
            Some(snapshot)
        );
        terminate_store_backends(&admin, &schema).await;
        let info = store.session(&session).await.unwrap().expect("the session");
        assert_eq!(info.count, total as u64);
        assert_eq!(store.sessions().await.unwrap().len(), 1);

        // Stored once each, in order: a plain connection reads the table itself.
        let rows = admin
            .query(
                &format!(
                    "SELECT seq, id FROM \"{schema}\".oh_events WHERE session = $1 ORDER BY seq"
                ),
                &[&session.as_str()],
            )
            .await
            .unwrap();
        let stored: Vec<(i64, uuid::Uuid)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        let expected: Vec<(i64, uuid::Uuid)> = events
            .iter()
            .enumerate()
            .map(|(seq, e)| (seq as i64, *e.id.as_uuid()))
            .collect();
        assert_eq!(stored, expected);

        let seen = follower.await.expect("the follower checks its tail");
        let expected: Vec<(u64, openharness_core::EventId)> = events
            .iter()
            .enumerate()
            .map(|(seq, e)| (seq as u64, e.id))
            .collect();
        assert_eq!(
            seen, expected,
            "the tail delivers every event once, in order"
        );

        drop(store);
        drop_old_test_schemas(&url, &schema).await;
    });
}

/// Claims are exclusive among processes sharing the database, and the database frees those of
/// a process whose connection ends (as when it dies).
#[tokio::test]
async fn claims_exclude_other_processes_and_die_with_their_connection() {
    let Some(url) = server("claims").await else {
        return;
    };
    let schema = schema();
    // Two stores on one schema stand for two replicas.
    let a = replica(&url, &schema).await;
    let b = replica(&url, &schema).await;
    let session = SessionId::new();
    let other = SessionId::new();

    let held = a
        .claim(&session)
        .await
        .unwrap()
        .expect("a free session is granted");
    assert!(
        b.claim(&session).await.unwrap().is_none(),
        "another replica is refused"
    );
    assert!(
        a.claim(&session).await.unwrap().is_none(),
        "a second claim in the holder is refused"
    );
    let unrelated = b
        .claim(&other)
        .await
        .unwrap()
        .expect("another session is free");
    // The same session in another schema is another store's: free.
    let elsewhere = PostgresStore::connect_in_schema(&url, &self::schema())
        .await
        .unwrap();
    assert!(elsewhere.claim(&session).await.unwrap().is_some());

    // Released on drop: the other replica gets it once the unlock has run.
    drop(held);
    let taken = claimed(|| b.claim(&session)).await;
    assert!(a.claim(&session).await.unwrap().is_none());
    drop(taken);
    drop(unrelated);

    // The holder's connection ends (its process died): the database frees the claim.
    let _held_by_a = claimed(|| a.claim(&session)).await;
    assert!(b.claim(&session).await.unwrap().is_none());
    assert_eq!(
        cut_claims_connections(&url, &schema).await,
        2,
        "one claims connection per store"
    );
    let _taken_over = claimed(|| b.claim(&session)).await;
}

/// Terminates the claims connections of the stores on `schema` (as a crash or a partition
/// would); how many there were.
async fn cut_claims_connections(url: &str, schema: &str) -> usize {
    let (admin, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            &[&format!("openharness {schema} claims")],
        )
        .await
        .unwrap()
        .len()
}

/// Claims `session` through `claim`, retrying (a release is sent by a task).
async fn claimed<F, Fut>(mut claim: F) -> openharness_core::adapter::Claim
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<openharness_core::adapter::Claim>, StoreError>>,
{
    eventually(LIMIT, "the claim to be granted", || {
        let attempt = claim();
        async move { attempt.await.unwrap().ok_or("held by another") }
    })
    .await
}

/// Fencing: a replica whose claims connection is cut keeps running its turn, not knowing it
/// lost the session; another replica claims the session and appends. The first replica's late
/// append is refused with a typed error and writes nothing, though the session's length is
/// the one it expected: the same append made outside any claim (a store that never claimed
/// the session) is accepted, so only the fence refused it.
#[tokio::test]
async fn a_late_append_from_a_replica_that_lost_its_claim_is_refused() {
    let Some(url) = server("fencing").await else {
        return;
    };
    let schema = schema();
    let a = replica(&url, &schema).await;
    let b = replica(&url, &schema).await;
    let session = SessionId::new();
    let event = |text: &str| Envelope::new("user:input", json!({ "text": text }), None);

    let held_by_a = a.claim(&session).await.unwrap().expect("a free session");
    a.append(&session, &[event("a0")], 0).await.unwrap();
    a.append(&session, &[event("a1"), event("a2")], 1)
        .await
        .unwrap();

    // A's claims connection is cut (a partition): the database frees A's claim, and B takes
    // the session over and records into it.
    assert_eq!(
        cut_claims_connections(&url, &schema).await,
        1,
        "only A has claimed"
    );
    let _held_by_b = claimed(|| b.claim(&session)).await;
    b.append(&session, &[event("b3")], 3).await.unwrap();

    // A still holds its (stale) claim and appends where it believes the session ends, one
    // event and a batch: both refused, nothing written.
    for batch in [vec![event("late")], vec![event("late"), event("later")]] {
        let err = a.append(&session, &batch, 3).await.unwrap_err();
        assert!(
            matches!(
                err,
                StoreError::Fenced {
                    token: 1,
                    current: 2,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("claimed again"), "{err}");
    }
    // At the session's true end too: the length matches, only the fence refuses it.
    let late = [event("late at the end")];
    let err = a.append(&session, &late, 4).await.unwrap_err();
    assert!(matches!(err, StoreError::Fenced { .. }), "{err:?}");
    let texts = |events: Vec<Envelope>| {
        events
            .iter()
            .map(|e| e.payload["text"].as_str().unwrap_or_default().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        texts(b.events(&session, 0..u64::MAX).await.unwrap()),
        ["a0", "a1", "a2", "b3"]
    );

    // Without the fence the same late append lands: a store that holds no claim of the
    // session writes it at seq 4.
    let unclaimed = replica(&url, &schema).await;
    assert_eq!(unclaimed.append(&session, &late, 4).await.unwrap(), 5);
    drop(held_by_a);

    // B's appends under its claim carry on; a later claim by A (once B released) gets a newer
    // token, and A writes again.
    b.append(&session, &[event("b5")], 5).await.unwrap();
    drop(_held_by_b);
    let _again = claimed(|| a.claim(&session)).await;
    a.append(&session, &[event("a6")], 6).await.unwrap();
    assert_eq!(b.events(&session, 0..u64::MAX).await.unwrap().len(), 7);
}
