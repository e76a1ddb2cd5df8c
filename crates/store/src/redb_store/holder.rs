//! Who has a store file open, for the error a second writer gets: on Linux, the processes of
//! this user whose open files (`/proc/PID/fd`) include it, each named by its command line.
//! Elsewhere, or when `/proc` says nothing, nobody is named. Read only when an open is
//! refused, so it costs the happy path nothing.

use std::path::Path;

/// The processes that have `path` open, as `pid N (command line)`, this process first.
pub(super) fn holders(path: &Path) -> Vec<String> {
    #[cfg(target_os = "linux")]
    {
        linux::holders(path)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        Vec::new()
    }
}

/// `holders` as the tail of a sentence: ` (open in pid 4242 (openharness serve))`, or nothing.
pub(super) fn describe(holders: &[String]) -> String {
    if holders.is_empty() {
        String::new()
    } else {
        format!(" (open in {})", holders.join(", "))
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::path::{Path, PathBuf};

    /// The most characters of a command line shown.
    const SHOWN: usize = 120;

    pub(super) fn holders(path: &Path) -> Vec<String> {
        let Ok(target) = std::fs::canonicalize(path) else {
            return Vec::new();
        };
        let Ok(processes) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let own = std::process::id();
        let mut found: Vec<(u32, String)> = processes
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| has_open(*pid, &target))
            .map(|pid| (pid, name(pid, own)))
            .collect();
        // This process first, then by pid.
        found.sort_by_key(|(pid, _)| (*pid != own, *pid));
        found.into_iter().map(|(_, name)| name).collect()
    }

    /// Whether process `pid` has the file `target` open (false when it cannot be told).
    fn has_open(pid: u32, target: &Path) -> bool {
        let Ok(fds) = std::fs::read_dir(PathBuf::from(format!("/proc/{pid}/fd"))) else {
            return false;
        };
        fds.flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|open| open == target))
    }

    /// `pid N (command line)`, `this process (pid N)` for this one.
    fn name(pid: u32, own: u32) -> String {
        if pid == own {
            return format!("this process (pid {pid})");
        }
        let command = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|bytes| {
                let words: Vec<String> = bytes
                    .split(|b| *b == 0)
                    .filter(|word| !word.is_empty())
                    .map(|word| String::from_utf8_lossy(word).into_owned())
                    .collect();
                let mut words = words.into_iter();
                let program = words.next().map(|program| {
                    Path::new(&program)
                        .file_name()
                        .map_or(program.clone(), |name| name.to_string_lossy().into_owned())
                });
                program
                    .into_iter()
                    .chain(words)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        let command: String = command.chars().take(SHOWN).collect();
        if command.is_empty() {
            format!("pid {pid}")
        } else {
            format!("pid {pid} ({command})")
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn this_process_is_named_while_it_holds_the_file_and_nobody_after() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("held");
        let file = std::fs::File::create(&path).unwrap();
        let found = holders(&path);
        assert_eq!(
            found,
            [format!("this process (pid {})", std::process::id())]
        );
        assert_eq!(
            describe(&found),
            format!(" (open in this process (pid {}))", std::process::id())
        );
        drop(file);
        assert!(holders(&path).is_empty());
        assert_eq!(describe(&[]), "");
    }
}
