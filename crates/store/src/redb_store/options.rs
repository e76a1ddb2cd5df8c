//! [`RedbOptions`] and [`RedbDurability`]: how a [`RedbStore`] opens its
//! file and when its appends reach the disk.

use std::time::Duration;

use super::journal;
#[cfg(doc)]
use super::{RedbError, RedbStore};

/// How a [`RedbStore`] works, for [`RedbStore::open_with`]. The default is what
/// [`RedbStore::open`] uses.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RedbOptions {
    /// Let a lone writer commit on its own thread (see
    /// [`commit_on_caller`](Self::commit_on_caller)). Off by default.
    pub commit_on_caller: bool,
    /// Open the file read-only (see [`read_only`](Self::read_only)). Off by default.
    pub read_only: bool,
    /// When appends reach the disk (see [`durability`](Self::durability)). Every append by
    /// default.
    pub durability: RedbDurability,
    /// The most memory redb's page cache may hold, in bytes (see
    /// [`cache_size`](Self::cache_size)). [`DEFAULT_CACHE_BYTES`] by default.
    pub cache_size: usize,
    /// Let read-only stores in other processes open the file while this one writes it (see
    /// [`share_with_readers`](Self::share_with_readers)). Off by default.
    pub share_with_readers: bool,
    /// Make appends durable with a journal beside the file (see [`journal`](Self::journal)).
    /// On by default.
    pub journal: bool,
    /// How many bytes of journal records are written before redb is made durable and the
    /// journal starts over (see [`journal_checkpoint`](Self::journal_checkpoint)).
    pub journal_checkpoint: u64,
    /// Compact a small file that grew while open when the store closes (see
    /// [`compact_on_close`](Self::compact_on_close)). On by default.
    pub compact_on_close: bool,
    /// How long the writer thread polls for the next append before it sleeps (see
    /// [`writer_spin`](Self::writer_spin)). [`DEFAULT_WRITER_SPIN`] by default.
    pub writer_spin: Duration,
    /// How long a lone append's caller polls for its answer before it sleeps (see
    /// [`caller_spin`](Self::caller_spin)). [`DEFAULT_CALLER_SPIN`] by default.
    pub caller_spin: Duration,
}

/// How long a [`RedbStore`]'s writer thread polls for the next append after each group before
/// it sleeps: 150 µs.
pub const DEFAULT_WRITER_SPIN: Duration = Duration::from_micros(150);

/// How long a lone append's caller polls for its answer before its task sleeps on it: 200 µs,
/// about one journal write and `fdatasync` on a cloud disk.
pub const DEFAULT_CALLER_SPIN: Duration = Duration::from_micros(200);

/// The default bound of a [`RedbStore`]'s page cache: 64 MiB. (redb's own default is 1 GiB,
/// which a long read fills: about 216 MB after reading a million-event session.)
pub const DEFAULT_CACHE_BYTES: usize = 64 * 1024 * 1024;

/// The largest file [`RedbOptions::compact_on_close`] compacts: 64 MiB, about a quarter of a
/// second of compaction at worst.
pub const COMPACT_ON_CLOSE_BYTES: u64 = 64 * 1024 * 1024;

impl Default for RedbOptions {
    fn default() -> Self {
        Self {
            commit_on_caller: false,
            read_only: false,
            durability: RedbDurability::default(),
            cache_size: DEFAULT_CACHE_BYTES,
            share_with_readers: false,
            journal: true,
            journal_checkpoint: journal::DEFAULT_CHECKPOINT_BYTES,
            compact_on_close: true,
            writer_spin: DEFAULT_WRITER_SPIN,
            caller_spin: DEFAULT_CALLER_SPIN,
        }
    }
}

/// When a [`RedbStore`]'s appends reach the disk, and so what a crash can lose.
///
/// Whatever the choice, the file stays consistent after a crash (redb falls back to its last
/// durable commit), readers in the process see every append at once, and a clean close (the
/// last handle dropped) makes everything durable.
///
/// | choice | an append returns once | a crash (process or machine) can lose |
/// |---|---|---|
/// | `EveryAppend` (default) | it is on disk (in the journal, or a durable commit; shared by concurrent appends) | nothing that was acknowledged |
/// | `Periodic(t)` | its outcome is certain (see below); the disk catches up every `t` and at each turn's end | the appends of the last `t` |
/// | `TurnEnd` | its outcome is certain (see below); the disk catches up at each turn's end ([`Store::sync`](openharness_core::Store::sync)) | the turn in progress, as if it never started |
///
/// The last two trade that window for throughput: a turn's events then cost one fsync per
/// period or per turn instead of one per step. An agent call made in a lost window is made
/// again when the session is resumed.
///
/// With those two, an append to a session the store knows (its length and event ids, held in
/// memory once the session was appended to) is checked against it and answered at once; the
/// writer thread commits it, with whatever else is queued, in one transaction. Any other
/// append (a conflict, a retry, the first append to a session since the open) is answered
/// after its commit, as with `EveryAppend`. Reads wait for the acknowledged appends' commit, so
/// a caller always reads its own writes. If such a commit then fails (redb or the disk
/// failed), the store is marked damaged and every later write fails, [`Store::sync`](openharness_core::Store::sync) at the
/// turn's end included. On the race bench's 5,000 tasks that took the live run from 1.02 s to
/// 0.27 s.
///
/// ```
/// use std::time::Duration;
/// use openharness_store::{RedbDurability, RedbOptions, RedbStore};
/// let dir = tempfile::tempdir().unwrap();
/// let options = RedbOptions::default().durability(RedbDurability::Periodic(Duration::from_millis(50)));
/// let store = RedbStore::open_with(dir.path().join("store.redb"), options)?;
/// # Ok::<_, openharness_core::StoreError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RedbDurability {
    /// Every append is durable before it returns.
    #[default]
    EveryAppend,
    /// Appends are made durable at least this often, and at [`Store::sync`](openharness_core::Store::sync).
    Periodic(std::time::Duration),
    /// Appends are made durable at [`Store::sync`](openharness_core::Store::sync), which the runtime calls when a turn ends.
    TurnEnd,
}

impl RedbOptions {
    /// When on, an append made while no other append is in flight commits on the calling
    /// thread inside [`tokio::task::block_in_place`] instead of handing the batch to the
    /// store's writer thread and waiting to be woken: the lowest latency for a single writer
    /// (the usual case: one workflow run recording its session). Overlapping appends still
    /// share group commits on the writer thread, and a current-thread runtime always uses it.
    ///
    /// Turn it on only where every append runs on a multi-thread tokio runtime and **not
    /// inside a `LocalSet`**: tokio panics when `block_in_place` is called there, and that
    /// cannot be detected beforehand. The `openharness` CLI turns it on.
    pub fn commit_on_caller(mut self, on: bool) -> Self {
        self.commit_on_caller = on;
        self
    }

    /// How long the writer thread keeps polling its queue after answering a group before it
    /// goes to sleep on it ([`DEFAULT_WRITER_SPIN`] by default; `Duration::ZERO` sleeps at
    /// once).
    ///
    /// A caller that was just answered usually sends its next append within tens of
    /// microseconds (an agent's next event), and waking a sleeping thread costs about as much
    /// again on every append. Polling, the writer picks the append up at once: on the race
    /// bench's 5,000 tasks the mean task went from 0.37 to 0.32 ms and the append p50 from
    /// 0.26 to 0.23 ms. The price is at most this long of one core after each group, yielded to
    /// any other thread that wants it; set it to zero where that core matters more.
    ///
    /// ```
    /// use std::time::Duration;
    /// use openharness_store::RedbOptions;
    /// let options = RedbOptions::default().writer_spin(Duration::ZERO);
    /// assert_eq!(options.writer_spin, Duration::ZERO);
    /// ```
    pub fn writer_spin(mut self, spin: Duration) -> Self {
        self.writer_spin = spin;
        self
    }

    /// How long the caller of a lone append (none other queued) keeps polling for its answer
    /// before its task sleeps on it ([`DEFAULT_CALLER_SPIN`] by default; `Duration::ZERO`
    /// sleeps at once). Only with the journal, and only on a multi-threaded tokio runtime.
    ///
    /// A task asleep on its answer costs the writer thread a system call to wake it and the
    /// task a reschedule: 30 to 60 µs of a 0.25 ms append on the race bench. Polling, the
    /// caller takes the answer the moment it is sent: the race's 5,000 tasks took 0.23 instead
    /// of 0.29 ms each and the append p50 went from 0.21 to 0.15 ms (six runs each,
    /// alternating). The price is at most this long of the
    /// caller's worker thread per append, yielded to any other thread that wants the core;
    /// the runtime's other workers take its queued tasks meanwhile. Concurrent appends (a
    /// group commit) never poll.
    ///
    /// ```
    /// use std::time::Duration;
    /// use openharness_store::RedbOptions;
    /// let options = RedbOptions::default().caller_spin(Duration::ZERO);
    /// assert_eq!(options.caller_spin, Duration::ZERO);
    /// ```
    pub fn caller_spin(mut self, spin: Duration) -> Self {
        self.caller_spin = spin;
        self
    }

    /// When on (the default), closing the store (the last handle dropped) compacts the file
    /// if it is at most [`COMPACT_ON_CLOSE_BYTES`] and grew while the store had it open.
    ///
    /// redb grows a file by doubling it, so right after it grew, up to half of it can be free:
    /// the race bench's 5,000 tasks hold 8.4 MB of pages in a 12.8 MB file. Compacting moves
    /// the pages to the start and gives the free tail back to the file system; it takes about
    /// 4 ms per MB, so it happens only for small files and only after a growth (a store that
    /// only read, or wrote without growing the file, closes as fast as before). A failed
    /// compaction loses nothing and is logged. Larger files can be compacted on demand with
    /// [`RedbStore::compact_file`] (`openharness compact`). A file shared with readers in
    /// other processes ([`share_with_readers`](Self::share_with_readers)) is never compacted
    /// on close, since it moves the pages they read.
    ///
    /// ```
    /// use openharness_store::{RedbOptions, RedbStore};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let store = RedbStore::open_with(
    ///     dir.path().join("store.redb"),
    ///     RedbOptions::default().compact_on_close(false),
    /// )?;
    /// # drop(store);
    /// # Ok(())
    /// # }
    /// ```
    pub fn compact_on_close(mut self, on: bool) -> Self {
        self.compact_on_close = on;
        self
    }

    /// When on, the store file is opened read-only: it must exist and be a current store;
    /// reads work, and writes fail with [`RedbError::ReadOnly`]. A file the process may not
    /// write is opened this way even when this is off.
    pub fn read_only(mut self, on: bool) -> Self {
        self.read_only = on;
        self
    }

    /// When on, read-only stores ([`read_only`](Self::read_only)) in other processes may open
    /// the file while this store writes it, and see each of its commits: the CLI's read
    /// commands beside a running `openharness serve`, say. A second writer is still refused.
    ///
    /// It has a price, which is why it is off by default: redb then commits in two phases (two
    /// `fdatasync`s per durable commit instead of one) and frees a commit's pages one commit
    /// later. On the race shape (a planner, then 2,000 executor calls, every append durable)
    /// that made the run about 20% slower and the file 45% larger. It applies to
    /// [`RedbDurability::EveryAppend`] only: redb keeps non-durable commits out of a shared
    /// file, so a store that defers durability keeps its file to itself. The `openharness` CLI
    /// turns it on.
    ///
    /// ```
    /// use openharness_store::{RedbOptions, RedbStore};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("store.redb");
    /// let writer = RedbStore::open_with(&path, RedbOptions::default().share_with_readers(true))?;
    /// let reader = RedbStore::open_with(&path, RedbOptions::default().read_only(true))?;
    /// # Ok::<_, openharness_core::StoreError>(())
    /// ```
    pub fn share_with_readers(mut self, on: bool) -> Self {
        self.share_with_readers = on;
        self
    }

    /// Sets when appends reach the disk; see [`RedbDurability`] for what a crash can lose.
    pub fn durability(mut self, durability: RedbDurability) -> Self {
        self.durability = durability;
        self
    }

    /// Bounds the memory redb's page cache may hold ([`DEFAULT_CACHE_BYTES`] by default).
    /// Pages read beyond it are read again from the file (usually from the operating
    /// system's cache), so a smaller cache costs some speed on sessions larger than it.
    ///
    /// ```
    /// use openharness_store::RedbOptions;
    /// let options = RedbOptions::default().cache_size(16 * 1024 * 1024);
    /// assert_eq!(options.cache_size, 16 * 1024 * 1024);
    /// ```
    pub fn cache_size(mut self, bytes: usize) -> Self {
        self.cache_size = bytes;
        self
    }

    /// When on (the default), a store that writes its file alone with
    /// [`RedbDurability::EveryAppend`] makes each group of appends durable with one sequential
    /// record in a journal beside the file (`<store>-journal`) and one `fdatasync`, and writes
    /// redb without waiting for the disk; redb is made durable every
    /// [`journal_checkpoint`](Self::journal_checkpoint) bytes of records, off the appends'
    /// path, and when the store closes (which removes the journal). An append costs about
    /// half of a durable redb commit (measured by `cargo xtask bench stores`). Opening the file
    /// again after a crash re-applies the records the last checkpoint does not cover, so the
    /// guarantee is the same: an acknowledged append survives any crash.
    ///
    /// When off, or when the file is shared ([`share_with_readers`](Self::share_with_readers),
    /// where readers in other processes see only redb's durable commits), each group of
    /// appends is a durable redb commit.
    ///
    /// ```
    /// use openharness_store::{RedbOptions, RedbStore};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("store.redb");
    /// let store = RedbStore::open_with(&path, RedbOptions::default().journal(false))?;
    /// assert!(!dir.path().join("store.redb-journal").exists());
    /// # Ok::<_, openharness_core::StoreError>(())
    /// ```
    pub fn journal(mut self, on: bool) -> Self {
        self.journal = on;
        self
    }

    /// How many bytes of journal records are written between two checkpoints (4 MiB by
    /// default): a smaller figure keeps the journal short and the replay after a crash brief,
    /// at the cost of more durable redb commits.
    pub fn journal_checkpoint(mut self, bytes: u64) -> Self {
        self.journal_checkpoint = bytes;
        self
    }
}
