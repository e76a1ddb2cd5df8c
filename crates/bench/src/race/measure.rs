//! What our side measures beside its runs: each durable append's time, the disk's floor (a
//! sequential 1 KiB append + `fdatasync`) and the process's peak RSS.

use super::*;

/// The appends of a run: how long each took, shared by its clones.
#[derive(Clone, Default)]
pub(super) struct Appends(Arc<Mutex<Vec<f64>>>);

impl Appends {
    pub(super) fn add(&self, seconds: f64) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(seconds);
    }

    /// How many, their total seconds and their median.
    pub(super) fn read(&self) -> (u64, f64, f64) {
        let took = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        (took.len() as u64, took.iter().sum(), median(took))
    }
}

/// The disk's floor for a durable append, measured in `dir`: the median and the mean of
/// `samples` sequential 1 KiB writes, each followed by `fdatasync`, to a file of its own.
pub(super) fn append_floor(dir: &Path, samples: usize) -> Fallible<(f64, f64)> {
    use std::io::Write as _;
    let path = dir.join("floor.bin");
    let mut file = std::fs::File::create(&path)?;
    let block = [0x5a_u8; 1024];
    let mut took = Vec::with_capacity(samples);
    for _ in 0..samples {
        let started = Instant::now();
        file.write_all(&block)?;
        file.sync_data()?;
        took.push(started.elapsed().as_secs_f64());
    }
    drop(file);
    std::fs::remove_file(&path)?;
    let mean = took.iter().sum::<f64>() / took.len().max(1) as f64;
    Ok((median(took), mean))
}

/// The live run's appends, counted and timed, for the profile printed beside the table.
#[async_trait]
impl StoreObserver for Appends {
    fn after_append(
        &self,
        _: &SessionId,
        _: &[Envelope],
        _: &Result<u64, StoreError>,
        took: std::time::Duration,
    ) {
        self.add(took.as_secs_f64());
    }
}

/// This process's peak resident set (VmHWM), in bytes.
pub(super) fn peak_rss() -> Fallible<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let kb = crate::proc_status::kib(&status, "VmHWM:").ok_or("no VmHWM in /proc/self/status")?;
    Ok(kb * 1024)
}
