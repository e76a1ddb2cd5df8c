//! What a process (with its descendants) uses, read from `/proc`: CPU time, resident memory,
//! open file descriptors; and the driver's own limit on file descriptors.

use std::path::Path;

use crate::report::Fallible;

/// A process tree's use at one moment.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Usage {
    /// User + system CPU, in clock ticks ([`ticks_per_second`]).
    pub(crate) cpu_ticks: u64,
    /// Resident set, in bytes.
    pub(crate) rss: u64,
    /// Open file descriptors.
    pub(crate) fds: u64,
}

/// `pid` and its descendants' use now (a process that ends while read counts as nothing).
pub(crate) fn of_tree(pid: u32) -> Usage {
    let mut total = Usage::default();
    for pid in tree(pid) {
        if let Ok(usage) = of(pid) {
            total.cpu_ticks += usage.cpu_ticks;
            total.rss += usage.rss;
            total.fds += usage.fds;
        }
    }
    total
}

/// One process's use.
fn of(pid: u32) -> Fallible<Usage> {
    let dir = Path::new("/proc").join(pid.to_string());
    let stat = std::fs::read_to_string(dir.join("stat"))?;
    // Fields after the command (which may hold spaces) in parentheses: state is field 3;
    // utime and stime are fields 14 and 15.
    let after = stat.rsplit_once(") ").map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let tick = |at: usize| -> u64 { fields.get(at - 3).and_then(|f| f.parse().ok()).unwrap_or(0) };
    let status = std::fs::read_to_string(dir.join("status"))?;
    let rss_kib = crate::proc_status::kib(&status, "VmRSS:").unwrap_or(0);
    let fds = std::fs::read_dir(dir.join("fd"))?.count() as u64;
    Ok(Usage {
        cpu_ticks: tick(14) + tick(15),
        rss: rss_kib * 1024,
        fds,
    })
}

/// `root` and every process below it.
fn tree(root: u32) -> Vec<u32> {
    let mut parents = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            let ppid = stat
                .rsplit_once(") ")
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|ppid| ppid.parse::<u32>().ok());
            if let Some(ppid) = ppid {
                parents.push((pid, ppid));
            }
        }
    }
    let mut found = vec![root];
    let mut at = 0;
    while at < found.len() {
        let parent = found[at];
        found.extend(
            parents
                .iter()
                .filter(|(_, ppid)| *ppid == parent)
                .map(|(pid, _)| *pid),
        );
        at += 1;
    }
    found
}

/// Every process below `root` (not `root` itself).
pub(crate) fn descendants(root: u32) -> Vec<u32> {
    tree(root).into_iter().skip(1).collect()
}

/// This process's own use.
pub(crate) fn own() -> Usage {
    of(std::process::id()).unwrap_or_default()
}

/// Clock ticks per second of `/proc`'s CPU times (`getconf CLK_TCK`; 100 where it cannot run).
pub(crate) fn ticks_per_second() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|text| text.trim().parse::<f64>().ok())
        .unwrap_or(100.0)
}

/// The soft limit on this process's open files (`ulimit -n`), from `/proc/self/limits`.
pub(crate) fn open_files_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        let usage = own();
        assert!(usage.rss > 0 && usage.fds > 0, "{usage:?}");
        assert!(open_files_limit().is_some());
    }
}
