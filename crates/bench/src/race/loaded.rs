//! The live race on a loaded disk: both sides' durable live run at N = 5 000 again, while a
//! thread of the bench keeps the same disk busy writing 256 KiB blocks and `fdatasync`-ing
//! each one. The quiet rows above and these rows, from the same run, show how each side's
//! rate falls when its `fdatasync`s queue behind another writer's.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{Figures, Row, check, side_with};
use crate::report::Fallible;

/// The N of the loaded rows.
const LOADED_N: u64 = 5_000;
/// The size of each block the load writes before its `fdatasync`.
const BLOCK: usize = 256 * 1024;
/// The load's file is rewritten from its start once it reaches this size, so it never fills
/// the disk.
const FILE_LIMIT: u64 = 64 * 1024 * 1024;

/// Another writer on the same disk: a thread writing [`BLOCK`]s to a file in the temporary
/// folder (where each side's store lives too) and making each durable, until it is stopped.
struct DiskLoad {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<io::Result<u64>>>,
    started: Instant,
    _dir: tempfile::TempDir,
}

impl DiskLoad {
    fn start() -> io::Result<Self> {
        let dir = tempfile::tempdir()?;
        let mut file = File::create(dir.path().join("load"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::spawn(move || -> io::Result<u64> {
            let block = vec![0x5a_u8; BLOCK];
            let (mut written, mut offset) = (0_u64, 0_u64);
            while !stopped.load(Ordering::Relaxed) {
                if offset >= FILE_LIMIT {
                    file.seek(SeekFrom::Start(0))?;
                    offset = 0;
                }
                file.write_all(&block)?;
                file.sync_data()?;
                offset += BLOCK as u64;
                written += BLOCK as u64;
            }
            Ok(written)
        });
        // Let the load reach its pace before the side starts.
        std::thread::sleep(Duration::from_millis(200));
        Ok(Self {
            stop,
            thread: Some(thread),
            started: Instant::now(),
            _dir: dir,
        })
    }

    /// Stops the load; the MB/s it wrote while it ran.
    fn finish(mut self) -> Fallible<f64> {
        self.stop.store(true, Ordering::Relaxed);
        let seconds = self.started.elapsed().as_secs_f64();
        let written = match self.thread.take().map(JoinHandle::join) {
            Some(Ok(written)) => written?,
            Some(Err(_)) => return Err("the disk load's thread panicked".into()),
            None => 0,
        };
        Ok(written as f64 / 1e6 / seconds)
    }
}

impl Drop for DiskLoad {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Runs `command` (one side's durable live run) with the disk loaded; its figures and the
/// load's MB/s.
fn under_load(command: &mut Command, what: &str, after: &[&str]) -> Fallible<(Figures, f64)> {
    let load = DiskLoad::start()?;
    let figures = side_with(command, what, after)?;
    let pace = load.finish()?;
    check(figures.done == LOADED_N, || {
        format!("{what}: done = {}, not {LOADED_N}", figures.done)
    })?;
    Ok((figures, pace))
}

/// The loaded rows: live completions/s of ours (every append durable) against LangGraph's
/// `durability="sync"`, both with the disk loaded, shown for information beside the quiet
/// rows of the same run.
pub(super) fn loaded(exe: &Path, python: Option<&Path>, script: &Path) -> Fallible<Vec<Row>> {
    let n = LOADED_N;
    let mut command = Command::new(exe);
    command.arg(n.to_string());
    let (mine, our_load) = under_load(&mut command, "our side (loaded disk)", &["every"])?;
    let theirs = match python {
        Some(python) => {
            let mut command = Command::new(python);
            command.arg(script).arg(n.to_string());
            Some(under_load(
                &mut command,
                "LangGraph (loaded disk)",
                &["sync"],
            )?)
        }
        None => None,
    };
    let ours = n as f64 / mine.live_s;
    let base = theirs.as_ref().map(|(t, _)| n as f64 / t.live_s);
    let their_load = theirs.as_ref().map(|(_, pace)| *pace);
    let measured = format!("{ours:.0} /s (load {our_load:.0} MB/s)");
    let baseline = base.zip(their_load).map_or_else(
        || "(no LangGraph)".to_owned(),
        |(b, pace)| format!("{b:.0} /s (load {pace:.0} MB/s)"),
    );
    eprintln!("bench race: loaded disk, N = {n}: ours {measured}, LangGraph {baseline}");
    let mut rows = vec![Row {
        what: format!(
            "live completions/s, loaded disk (a writer fsyncing 256 KiB blocks beside it), N={n}"
        ),
        measured,
        baseline,
        ratio: base.map_or_else(|| "-".to_owned(), |b| format!("{:.1}x", ours / b)),
        goal: "(info)",
        met: None,
    }];
    if let Some((p50, floor)) = mine.append_p50_and_floor {
        rows.push(Row {
            what: format!("live, loaded disk: durable append p50 vs the disk's floor, N={n}"),
            measured: format!("{:.3} ms", 1e3 * p50),
            baseline: format!("{:.3} ms (1 KiB append + fdatasync, loaded)", 1e3 * floor),
            ratio: format!("{:.2}x", p50 / floor),
            goal: "(info)",
            met: None,
        });
    }
    Ok(rows)
}
