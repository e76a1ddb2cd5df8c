//! `openharness compact`: compacts the redb store file `--store` names, which no process may
//! have open, and prints its size before and after.

use std::io::Write as _;
use std::path::Path;

use openharness::store::RedbStore;

use crate::Output;
use crate::error::CliError;

/// Compacts the store at `store` and says how much it shrank.
pub(crate) async fn run(store: &Path, mut out: Output) -> Result<(), CliError> {
    if openharness::store::is_postgres(&store.to_string_lossy()) {
        return Err(CliError::Usage(
            "compact is for redb store files; PostgreSQL reclaims space itself (VACUUM)".into(),
        ));
    }
    if openharness::store::is_memory(store) {
        return Err(CliError::Usage(
            "compact is for redb store files; a memory store (`memory:`) has no file to compact"
                .into(),
        ));
    }
    let path = store.to_owned();
    let failed = |source| CliError::Compact {
        path: store.display().to_string(),
        source,
    };
    let compaction = tokio::task::spawn_blocking(move || RedbStore::compact_file(&path))
        .await
        .map_err(|err| CliError::Other(Box::new(err)))?
        .map_err(failed)?;
    writeln!(
        out,
        "Compacted {}: {} → {} ({:.1}% smaller).",
        store.display(),
        megabytes(compaction.before),
        megabytes(compaction.after),
        shrink_percent(compaction.before, compaction.after)
    )?;
    Ok(())
}

fn megabytes(bytes: u64) -> String {
    format!("{:.2} MB", bytes as f64 / 1e6)
}

fn shrink_percent(before: u64, after: u64) -> f64 {
    if before == 0 {
        return 0.0;
    }
    before.saturating_sub(after) as f64 * 100.0 / before as f64
}
