//! Creating a store file so that a crash part way never leaves a file that cannot be opened.
//!
//! redb writes a new file's header in several steps; a process killed in between leaves a file
//! that every later open refuses ("not a redb database"). So a new store is built under a
//! temporary name in the same directory, made durable, and only then given its real name with
//! a hard link, which fails rather than replace a file another process created meanwhile. A
//! crash leaves at most a temporary file, removed by a later creation once it is an hour old.

use std::path::{Path, PathBuf};
use std::time::Duration;

use redb::Database;

use super::guard::Db;
use super::{RedbError, layout};

/// Temporary files older than this are leftovers of a crash.
const STALE: Duration = Duration::from_secs(3600);

/// Creates the store file at `path`, complete with its tables, unless it exists.
pub(super) fn ensure_exists(path: &Path) -> Result<(), RedbError> {
    if path.exists() {
        return Ok(());
    }
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    remove_stale(&dir, &name);
    let temp = dir.join(format!(".{name}.{}{SUFFIX}", uuid::Uuid::now_v7().simple()));
    let built = build(&temp);
    let linked = built.and_then(|()| link(&temp, path));
    let _ = std::fs::remove_file(&temp);
    linked?;
    // The new name must survive a crash too.
    if let Ok(handle) = std::fs::File::open(&dir) {
        let _ = handle.sync_all();
    }
    Ok(())
}

/// The end of a temporary file's name.
const SUFFIX: &str = ".creating";

/// Builds a complete, durable store file at `temp`.
fn build(temp: &Path) -> Result<(), RedbError> {
    let db = Database::create(temp).map_err(|err| RedbError::Open {
        path: temp.to_owned(),
        source: Box::new(err.into()),
    })?;
    let db = Db::writable(db);
    layout::prepare_file(&db, temp)?;
    drop(db);
    let file_error = |source| RedbError::CreateFile {
        path: temp.to_owned(),
        source,
    };
    std::fs::File::open(temp)
        .and_then(|file| file.sync_all())
        .map_err(file_error)
}

/// Gives `temp` the name `path`, unless a file has that name already (another process created
/// the store first: then its file is the store).
fn link(temp: &Path, path: &Path) -> Result<(), RedbError> {
    match std::fs::hard_link(temp, path) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        // A file system without hard links: a rename, which could replace a file created in
        // the same instant, is the best left.
        Err(_) if !path.exists() => {
            std::fs::rename(temp, path).map_err(|source| RedbError::CreateFile {
                path: path.to_owned(),
                source,
            })
        }
        Err(_) => Ok(()),
    }
}

/// Removes temporary files of `name` in `dir` left by crashed creations.
fn remove_stale(dir: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!(".{name}.");
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let file_name = file_name.to_string_lossy();
        if !(file_name.starts_with(&prefix) && file_name.ends_with(SUFFIX)) {
            continue;
        }
        let old = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age > STALE);
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn racing_creators_make_one_store_and_leave_no_temporary_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.redb");
        let creators: Vec<_> = (0..4)
            .map(|_| {
                let path = path.clone();
                std::thread::spawn(move || ensure_exists(&path))
            })
            .collect();
        for creator in creators {
            creator.join().unwrap().unwrap();
        }
        let db = Db::writable(Database::create(&path).unwrap());
        layout::prepare_file(&db, &path).unwrap();
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["store.redb".to_owned()]);
    }

    #[test]
    fn stale_temporary_files_are_removed_and_fresh_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let stale = dir.path().join(".store.redb.0123.creating");
        let fresh = dir.path().join(".store.redb.4567.creating");
        let other = dir.path().join(".other.redb.89ab.creating");
        for file in [&stale, &fresh, &other] {
            std::fs::write(file, b"partial").unwrap();
        }
        let old = std::time::SystemTime::now() - STALE - Duration::from_secs(60);
        for file in [&stale, &other] {
            std::fs::File::options()
                .write(true)
                .open(file)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        ensure_exists(&dir.path().join("store.redb")).unwrap();
        assert!(!stale.exists());
        assert!(fresh.exists(), "a creation may still be running");
        assert!(other.exists(), "another store's files are not ours");
    }
}
