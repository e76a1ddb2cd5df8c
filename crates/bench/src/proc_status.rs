//! One line of a process's `/proc/<pid>/status`, read as kibibytes (`VmRSS`, `VmHWM`): the
//! race suite's peak memory and the load suite's server memory read it the same way.

/// The value of `key` (such as `"VmRSS:"`) in the text of a `status` file, in KiB.
pub(crate) fn kib(status: &str, key: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
}
