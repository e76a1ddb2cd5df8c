//! The checked-in JSON Schemas: what `schemas/` should hold (one pretty-printed
//! `<name>.schema.json` per wire type, plus the folder's README), writing it, and telling which
//! files are stale.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;

/// The suffix of every generated file; other files in the folder (its README) are left alone.
const SUFFIX: &str = ".schema.json";

/// The generated files by name, with their exact contents.
pub(crate) fn generated() -> io::Result<BTreeMap<String, String>> {
    let mut files = BTreeMap::new();
    for wire in openharness_host::wire_schemas() {
        let mut text = serde_json::to_string_pretty(&wire.schema)?;
        text.push('\n');
        if files
            .insert(format!("{}{SUFFIX}", wire.name), text)
            .is_some()
        {
            return Err(io::Error::other(format!(
                "two wire types are named {}",
                wire.name
            )));
        }
    }
    Ok(files)
}

/// The schema files now in `dir`, by name.
fn checked_in(dir: &Path) -> io::Result<BTreeMap<String, String>> {
    let mut files = BTreeMap::new();
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(files),
        Err(err) => return Err(err),
    };
    for entry in entries {
        let entry = entry?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if name.ends_with(SUFFIX) {
            files.insert(name, fs::read_to_string(entry.path())?);
        }
    }
    Ok(files)
}

/// The files that differ: generated but missing or different, or checked in but no longer
/// generated.
pub(crate) fn stale(dir: &Path) -> io::Result<Vec<String>> {
    let want = generated()?;
    let have = checked_in(dir)?;
    let mut stale: Vec<String> = want
        .iter()
        .filter(|(name, text)| have.get(*name) != Some(text))
        .map(|(name, _)| name.clone())
        .collect();
    stale.extend(
        have.keys()
            .filter(|name| !want.contains_key(*name))
            .cloned(),
    );
    stale.sort();
    Ok(stale)
}

/// Writes the generated files that differ and removes the ones no longer generated; returns
/// what it did to each file it changed (`wrote` or `removed`) and the file's name.
pub(crate) fn write(dir: &Path) -> io::Result<Vec<(&'static str, String)>> {
    let want = generated()?;
    fs::create_dir_all(dir)?;
    let mut changed = Vec::new();
    for name in stale(dir)? {
        let path = dir.join(&name);
        match want.get(&name) {
            Some(text) => {
                fs::write(path, text)?;
                changed.push(("wrote", name));
            }
            None => {
                fs::remove_file(path)?;
                changed.push(("removed", name));
            }
        }
    }
    Ok(changed)
}
