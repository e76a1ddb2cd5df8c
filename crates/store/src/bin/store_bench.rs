//! `openharness-store-bench`: store benchmarks, each figure printed beside a baseline measured
//! in the same run, with the ratio and the goal. Run it through `cargo xtask bench stores`
//! (release build).
//!
//! Options: `--dir DIR` for the files (default `target/store-bench`, on the same disk as the
//! workspace), `--postgres URL` (default `$OPENHARNESS_BENCH_POSTGRES`, else
//! `$OPENHARNESS_TEST_POSTGRES`; without one the PostgreSQL figures are skipped), `--quick` for
//! fewer iterations, `--only redb` or `--only postgres` for one backend's figures.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use openharness_core::{Envelope, SessionId, Store};
use openharness_store::{PostgresStore, RedbOptions, RedbStore};
use redb::{Database, TableDefinition};
use serde_json::json;

const RAW: TableDefinition<'_, (&str, u64), &[u8]> = TableDefinition::new("raw");

type Error = Box<dyn std::error::Error + Send + Sync>;

struct Options {
    dir: PathBuf,
    postgres: Option<String>,
    quick: bool,
    /// Only this backend's figures (`redb` or `postgres`); both when `None`.
    only: Option<String>,
}

fn options() -> Result<Options, Error> {
    let mut args = std::env::args().skip(1);
    let mut options = Options {
        dir: PathBuf::from("target/store-bench"),
        postgres: std::env::var("OPENHARNESS_BENCH_POSTGRES")
            .or_else(|_| std::env::var("OPENHARNESS_TEST_POSTGRES"))
            .ok()
            .filter(|url| !url.is_empty()),
        quick: false,
        only: None,
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--dir" => options.dir = args.next().ok_or("--dir needs a path")?.into(),
            "--postgres" => options.postgres = Some(args.next().ok_or("--postgres needs a URL")?),
            "--quick" => options.quick = true,
            "--only" => match args.next().as_deref() {
                Some(backend @ ("redb" | "postgres")) => options.only = Some(backend.to_owned()),
                _ => return Err("--only needs redb or postgres".into()),
            },
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    Ok(options)
}

/// A typical event: about 300 bytes of JSON.
fn event(n: u64) -> Envelope {
    Envelope::new(
        "task:completed",
        json!({ "task": n, "summary": "wrote the report and checked every figure twice", "tokens": { "input": 1234, "output": 567 } }),
        None,
    )
}

struct Latencies(Vec<Duration>);

impl Latencies {
    fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.0.clone();
        sorted.sort();
        let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
        sorted.get(index).copied().unwrap_or_default()
    }
    fn p50(&self) -> Duration {
        self.percentile(0.5)
    }
    fn p99(&self) -> Duration {
        self.percentile(0.99)
    }
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn rate(events: u64, elapsed: Duration) -> f64 {
    events as f64 / elapsed.as_secs_f64()
}

fn per_s(r: f64) -> String {
    format!("{:.0} events/s", r)
}

/// Prints one figure, its baseline, the ratio and whether the goal is met.
fn report(name: &str, figure: String, baseline: String, ratio: f64, goal: &str, met: bool) {
    println!(
        "{name:<46} {figure:>18}   baseline {baseline:>18}   ratio {ratio:>6.2}x   goal {goal:<10} {}",
        if met { "met" } else { "MISSED" }
    );
}

fn fresh(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

/// The single-append latencies, measured interleaved (one of each per round) so that disk
/// noise from other processes hits all of them alike: a raw 1 KiB write + fdatasync, a raw
/// redb insert + durable commit, and our durable single-event append with the journal through
/// the writer thread (`store`) and committed on the caller (`caller`), and without the journal
/// (a durable redb commit, on the caller: `unjournaled`).
struct Singles {
    floor: Latencies,
    raw: Latencies,
    ours: Latencies,
    caller: Latencies,
    unjournaled: Latencies,
}

async fn single_latencies(
    dir: &Path,
    store: &RedbStore,
    caller: &RedbStore,
    unjournaled: &RedbStore,
    n: usize,
) -> Result<Singles, Error> {
    let mut file = std::fs::File::create(fresh(dir, "floor.bin"))?;
    let block = [0x5a_u8; 1024];
    let db = Database::create(fresh(dir, "raw-single.redb"))?;
    let session = SessionId::new();
    let (mut floor, mut raw, mut ours, mut on_caller, mut plain) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for seq in 0..n as u64 {
        let start = Instant::now();
        file.write_all(&block)?;
        file.sync_data()?;
        floor.push(start.elapsed());

        let bytes = serde_json::to_vec(&event(seq))?;
        let start = Instant::now();
        let txn = db.begin_write()?;
        {
            let mut table = txn.open_table(RAW)?;
            table.insert(("session", seq), bytes.as_slice())?;
        }
        txn.commit()?;
        raw.push(start.elapsed());

        let batch = [event(seq)];
        let start = Instant::now();
        store.append(&session, &batch, seq).await?;
        ours.push(start.elapsed());

        let batch = [event(seq)];
        let start = Instant::now();
        caller.append(&session, &batch, seq).await?;
        on_caller.push(start.elapsed());

        let batch = [event(seq)];
        let start = Instant::now();
        unjournaled.append(&session, &batch, seq).await?;
        plain.push(start.elapsed());
    }
    Ok(Singles {
        floor: Latencies(floor),
        raw: Latencies(raw),
        ours: Latencies(ours),
        caller: Latencies(on_caller),
        unjournaled: Latencies(plain),
    })
}

/// Another writer on the same disk while it lives: a thread writing 256 KiB and calling
/// `fdatasync`, over and over, to a file of its own (a loaded disk, as when another process
/// syncs its files beside the store).
struct DiskLoad {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<std::io::Result<u64>>>,
}

impl DiskLoad {
    fn start(dir: &Path) -> Result<Self, Error> {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let path = fresh(dir, "load.bin");
        let flag = std::sync::Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut file = std::fs::File::create(&path)?;
            let block = vec![0x33_u8; 256 * 1024];
            let mut syncs = 0;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                file.write_all(&block)?;
                file.sync_data()?;
                syncs += 1;
                if syncs % 64 == 0 {
                    // Keep the file small: 16 MiB, rewritten.
                    file.set_len(0)?;
                    std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(0))?;
                }
            }
            drop(file);
            std::fs::remove_file(&path)?;
            Ok(syncs)
        });
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }

    /// Stops the load: how many syncs it made.
    fn stop(mut self) -> Result<u64, Error> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(syncs)) => Ok(syncs?),
            Some(Err(_)) => Err("the disk load thread panicked".into()),
            None => Ok(0),
        }
    }
}

/// Raw redb: `batches` transactions of `size` encoded events each; events per second.
fn raw_redb_batches(dir: &Path, batches: u64, size: u64) -> Result<f64, Error> {
    let db = Database::create(fresh(dir, "raw-batch.redb"))?;
    let start = Instant::now();
    for b in 0..batches {
        let txn = db.begin_write()?;
        {
            let mut table = txn.open_table(RAW)?;
            for i in 0..size {
                let seq = b * size + i;
                let bytes = serde_json::to_vec(&event(seq))?;
                table.insert(("session", seq), bytes.as_slice())?;
            }
        }
        txn.commit()?;
    }
    Ok(rate(batches * size, start.elapsed()))
}

/// `writers` sessions appending single events concurrently; (events/s, latencies).
async fn concurrent_appends<S: Store + Clone>(
    store: &S,
    writers: usize,
    each: usize,
) -> Result<(f64, Latencies), Error> {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..writers {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let session = SessionId::new();
            let mut times = Vec::with_capacity(each);
            for seq in 0..each as u64 {
                let batch = [event(seq)];
                let t = Instant::now();
                store.append(&session, &batch, seq).await?;
                times.push(t.elapsed());
            }
            Ok::<_, openharness_core::StoreError>(times)
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await??);
    }
    let elapsed = start.elapsed();
    Ok((rate((writers * each) as u64, elapsed), Latencies(all)))
}

async fn batch_import<S: Store>(
    store: &S,
    batches: u64,
    size: u64,
) -> Result<(f64, SessionId), Error> {
    let session = SessionId::new();
    let prepared: Vec<Vec<Envelope>> = (0..batches)
        .map(|b| (0..size).map(|i| event(b * size + i)).collect())
        .collect();
    let start = Instant::now();
    for (b, batch) in prepared.iter().enumerate() {
        store.append(&session, batch, b as u64 * size).await?;
    }
    Ok((rate(batches * size, start.elapsed()), session))
}

async fn load<S: Store>(store: &S, session: &SessionId) -> Result<(f64, u64), Error> {
    let start = Instant::now();
    let events = store.all_events(session).await?;
    Ok((
        rate(events.len() as u64, start.elapsed()),
        events.len() as u64,
    ))
}

/// Baseline for loading: typed serde_json decode of the same number of encoded events, in memory.
fn plain_decode(n: u64) -> Result<f64, Error> {
    let encoded: Vec<Vec<u8>> = (0..n)
        .map(|i| serde_json::to_vec(&event(i)))
        .collect::<Result<_, _>>()?;
    let start = Instant::now();
    let mut decoded = Vec::with_capacity(encoded.len());
    for bytes in &encoded {
        decoded.push(serde_json::from_slice::<Envelope>(bytes)?);
    }
    let elapsed = start.elapsed();
    std::hint::black_box(&decoded);
    Ok(rate(n, elapsed))
}

/// Group commit: one writer against eight concurrent writers (one session each), alternating
/// in rounds so disk noise from other processes hits both alike.
async fn group_commit_figures(
    config: &str,
    store: &RedbStore,
    options: &Options,
) -> Result<(), Error> {
    let rounds = if options.quick { 3 } else { 24 };
    let each = if options.quick { 20 } else { 80 };
    let (mut single_time, mut single_events, mut single_lat) = (Duration::ZERO, 0u64, Vec::new());
    let (mut group_time, mut group_events, mut group_lat) = (Duration::ZERO, 0u64, Vec::new());
    for _ in 0..rounds {
        let start = Instant::now();
        let lone = concurrent_appends(store, 1, each * 2).await?.1;
        single_time += start.elapsed();
        single_events += (each * 2) as u64;
        single_lat.extend(lone.0);
        let start = Instant::now();
        let eight = concurrent_appends(store, 8, each).await?.1;
        group_time += start.elapsed();
        group_events += (8 * each) as u64;
        group_lat.extend(eight.0);
    }
    let single_rate = rate(single_events, single_time);
    let group_rate = rate(group_events, group_time);
    let (single_lat, group_lat) = (Latencies(single_lat), Latencies(group_lat));
    report(
        &format!("8 sessions: throughput [{config}]"),
        per_s(group_rate),
        per_s(single_rate),
        group_rate / single_rate,
        ">= 5x",
        group_rate / single_rate >= 5.0,
    );
    let lat = group_lat.p50().as_secs_f64() / single_lat.p50().as_secs_f64();
    report(
        &format!("8 sessions: p50 latency [{config}]"),
        us(group_lat.p50()),
        us(single_lat.p50()),
        lat,
        "<= 2x",
        lat <= 2.0,
    );
    Ok(())
}

async fn redb_figures(options: &Options) -> Result<(), Error> {
    let dir = &options.dir;
    let n = if options.quick { 100 } else { 1000 };
    println!(
        "== RedbStore ({}; {n} durable appends per latency figure)",
        dir.display()
    );

    let store = RedbStore::open(fresh(dir, "store.redb"))?;
    let caller = RedbStore::open_with(
        fresh(dir, "store-caller.redb"),
        RedbOptions::default().commit_on_caller(true),
    )?;
    let unjournaled = RedbStore::open_with(
        fresh(dir, "store-unjournaled.redb"),
        RedbOptions::default().commit_on_caller(true).journal(false),
    )?;
    let singles = single_latencies(dir, &store, &caller, &unjournaled, n).await?;
    let (floor, raw) = (&singles.floor, &singles.raw);
    let f50 = floor.p50().as_secs_f64();
    println!(
        "(context: fdatasync 1 KiB p50 {} p99 {}; raw redb insert+commit p50 {} p99 {})",
        us(floor.p50()),
        us(floor.p99()),
        us(raw.p50()),
        us(raw.p99())
    );
    // The journal's goal is the disk's floor; a durable redb commit's was 2.5x it.
    for (config, ours, goal) in [
        ("journal, writer thread", &singles.ours, 1.5),
        ("journal, commit_on_caller", &singles.caller, 1.5),
        ("no journal, commit_on_caller", &singles.unjournaled, 2.5),
    ] {
        report(
            &format!("append p50 vs fdatasync p50 [{config}]"),
            us(ours.p50()),
            us(floor.p50()),
            ours.p50().as_secs_f64() / f50,
            &format!("<= {goal}x"),
            ours.p50().as_secs_f64() / f50 <= goal,
        );
        report(
            &format!("append p99 vs fdatasync p50 [{config}]"),
            us(ours.p99()),
            us(floor.p50()),
            ours.p99().as_secs_f64() / f50,
            "<= 4x",
            ours.p99().as_secs_f64() / f50 <= 4.0,
        );
        let overhead = ours.p50().as_secs_f64() / raw.p50().as_secs_f64();
        report(
            &format!("append p50 vs raw redb commit [{config}]"),
            us(ours.p50()),
            us(raw.p50()),
            overhead,
            "<= 1.15x",
            overhead <= 1.15,
        );
    }

    // The same, with another process's syncs on the disk: the floor rises too, and the
    // ratio says whether the journal keeps to it.
    let disk_load = DiskLoad::start(dir)?;
    let loaded = single_latencies(dir, &store, &caller, &unjournaled, n / 2).await?;
    let syncs = disk_load.stop()?;
    let loaded_floor = loaded.floor.p50().as_secs_f64();
    println!(
        "(loaded disk: {syncs} syncs of 256 KiB beside; fdatasync 1 KiB p50 {} p99 {})",
        us(loaded.floor.p50()),
        us(loaded.floor.p99())
    );
    for (config, ours, goal) in [
        ("journal, writer thread, loaded disk", &loaded.ours, 1.5),
        (
            "journal, commit_on_caller, loaded disk",
            &loaded.caller,
            1.5,
        ),
        (
            "no journal, commit_on_caller, loaded disk",
            &loaded.unjournaled,
            2.5,
        ),
    ] {
        let ratio = ours.p50().as_secs_f64() / loaded_floor;
        report(
            &format!("append p50 vs fdatasync p50 [{config}]"),
            us(ours.p50()),
            us(loaded.floor.p50()),
            ratio,
            &format!("<= {goal}x"),
            ratio <= goal,
        );
    }

    for (config, store) in [
        ("journal, writer thread", &store),
        ("journal, commit_on_caller", &caller),
        ("no journal, commit_on_caller", &unjournaled),
    ] {
        group_commit_figures(config, store, options).await?;
    }

    let batches = if options.quick { 10 } else { 100 };
    let raw_batch = raw_redb_batches(dir, batches, 1000)?;
    let (import_rate, session) = batch_import(&store, batches, 1000).await?;
    report(
        "import, 1000-event batches",
        per_s(import_rate),
        per_s(raw_batch),
        import_rate / raw_batch,
        ">= 0.5x",
        import_rate / raw_batch >= 0.5,
    );

    let (first, loaded) = load(&store, &session).await?;
    let (load_rate, _) = load(&store, &session).await?;
    let decode = plain_decode(loaded)?;
    report(
        &format!("load {loaded} events, first read"),
        per_s(first),
        per_s(decode),
        first / decode,
        ">= 0.7x",
        first / decode >= 0.7,
    );
    report(
        &format!("load {loaded} events, redb cache warm"),
        per_s(load_rate),
        per_s(decode),
        load_rate / decode,
        ">= 0.7x",
        load_rate / decode >= 0.7,
    );
    Ok(())
}

async fn postgres_figures(url: &str, options: &Options) -> Result<(), Error> {
    let n = if options.quick { 100 } else { 400 };
    let schema = format!("oh_bench_{}", uuid::Uuid::now_v7().simple());
    println!("== PostgresStore (schema {schema}; {n} appends per latency figure)");
    let store = PostgresStore::connect_in_schema(url, &schema).await?;

    // Baseline: a raw single-row INSERT of the same JSON, committed (autocommit), one round trip.
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "SET search_path TO \"{schema}\";
             CREATE TABLE raw_events (session text, seq bigint, id uuid, body text, PRIMARY KEY (session, seq))"
        ))
        .await?;
    let insert = client
        .prepare("INSERT INTO raw_events (session, seq, id, body) VALUES ($1, $2, $3, $4)")
        .await?;
    // Interleaved (one raw INSERT, then one append, per round), so that disk noise from other
    // processes hits both alike.
    let session = SessionId::new();
    let (mut raw, mut ours) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for seq in 0..n as u64 {
        let e = event(seq);
        let body = serde_json::to_string(&e)?;
        let start = Instant::now();
        client
            .execute(&insert, &[&"session", &(seq as i64), e.id.as_uuid(), &body])
            .await?;
        raw.push(start.elapsed());

        let batch = [event(seq)];
        let start = Instant::now();
        store.append(&session, &batch, seq).await?;
        ours.push(start.elapsed());
    }
    let (raw, ours) = (Latencies(raw), Latencies(ours));
    println!(
        "(context: raw INSERT commit p50 {} p99 {}; append p99 {})",
        us(raw.p50()),
        us(raw.p99()),
        us(ours.p99())
    );
    let ratio = ours.p50().as_secs_f64() / raw.p50().as_secs_f64();
    report(
        "append p50 vs raw INSERT commit p50",
        us(ours.p50()),
        us(raw.p50()),
        ratio,
        "<= 1.3x",
        ratio <= 1.3,
    );

    let batches = if options.quick { 10 } else { 100 };
    let (import_rate, session) = batch_import(&store, batches, 1000).await?;
    report(
        "import, 1000-event batches (absolute goal)",
        per_s(import_rate),
        per_s(100_000.0),
        import_rate / 100_000.0,
        ">= 1x",
        import_rate >= 100_000.0,
    );
    let (load_rate, loaded) = load(&store, &session).await?;
    report(
        &format!("load a {loaded}-event session (absolute goal)"),
        per_s(load_rate),
        per_s(300_000.0),
        load_rate / 300_000.0,
        ">= 1x",
        load_rate >= 300_000.0,
    );
    client
        .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .await?;
    Ok(())
}

fn main() -> std::process::ExitCode {
    let result = (|| -> Result<(), Error> {
        let options = options()?;
        std::fs::create_dir_all(&options.dir)?;
        let dir = options.dir.clone();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        // On a worker thread, as a workflow's appends run (not on the `block_on` thread).
        let task = runtime.spawn(async move {
            if options.only.as_deref() != Some("postgres") {
                redb_figures(&options).await?;
            }
            if options.only.as_deref() == Some("redb") {
                return Ok(());
            }
            match &options.postgres {
                Some(url) => postgres_figures(url, &options).await?,
                None => println!(
                    "== PostgresStore: skipped (set OPENHARNESS_BENCH_POSTGRES or pass --postgres URL)"
                ),
            }
            Ok::<_, Error>(())
        });
        runtime.block_on(task)??;
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    })();
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}
