//! The hash chain of a session's block, and the facts its end line seals (the module docs'
//! "Integrity"; `docs/export-format.md` says it for readers who recompute it without us).
//!
//! `h_0` is 32 zero bytes; `h_i = SHA-256(h_{i-1} ‖ line_i)`, where `line_i` is the block's
//! i-th event line without its chain member (the line exactly as an export without chains
//! writes it) and `h_{i-1}` the 32 bytes of the value before. The event line carries `h_i` as
//! its last member, `,"chain":"<64 lower-case hex digits>"` just before its closing brace, and
//! the end line carries the last, the chain head.

use std::fmt;
use std::io::Write;

use openharness_core::builtin::{SessionForked, WorkflowStarted};
use openharness_core::{Envelope, Event};
use sha2::{Digest, Sha256};

/// The algorithm a chained block's begin line names (`"chain":"sha256"`).
pub const CHAIN_ALGORITHM: &str = "sha256";

/// What a chained event line ends with, before its value's 64 hex digits and `"}`.
const MEMBER: &str = ",\"chain\":\"";

/// The length of an event line's chain member with the line's closing brace.
const MEMBER_LEN: usize = MEMBER.len() + 64 + 2;

/// One value of a block's hash chain: 32 bytes, written as 64 lower-case hex digits.
///
/// ```
/// use openharness_store::jsonl::ChainHash;
/// let line = br#"{"session":"s","seq":0,"name":"user:input"}"#;
/// let first = ChainHash::START.link(line);
/// assert_eq!(first, ChainHash::START.link(line));
/// assert_ne!(first.link(line), first);
/// assert_eq!(first.to_string().parse::<ChainHash>()?, first);
/// # Ok::<_, openharness_store::jsonl::InvalidChainHash>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChainHash([u8; 32]);

impl ChainHash {
    /// `h_0`, the value before a block's first event line: 32 zero bytes.
    pub const START: Self = Self([0; 32]);

    /// The chain's next value after this one for an event line (its bytes without the chain
    /// member and without a line ending): SHA-256 of this value's 32 bytes, then the line's.
    pub fn link(&self, line: &[u8]) -> Self {
        self.link_parts(&[line])
    }

    /// [`link`](Self::link) over a line given in parts, hashed as if joined.
    fn link_parts(&self, parts: &[&[u8]]) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(self.0);
        for part in parts {
            hasher.update(part);
        }
        Self(hasher.finalize().into())
    }

    /// The 32 bytes.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for ChainHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for ChainHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ChainHash({self})")
    }
}

/// Why a text is not a chain value: it must be 64 lower-case hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a chain value: 64 lower-case hex digits")]
pub struct InvalidChainHash(String);

impl std::str::FromStr for ChainHash {
    type Err = InvalidChainHash;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || InvalidChainHash(text.to_owned());
        if text.len() != 64 {
            return Err(invalid());
        }
        let mut bytes = [0; 32];
        for (byte, pair) in bytes.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
            let digit = |c: u8| match c {
                b'0'..=b'9' => Some(c - b'0'),
                b'a'..=b'f' => Some(c - b'a' + 10),
                _ => None,
            };
            *byte = digit(pair[0])
                .zip(digit(pair[1]))
                .map(|(high, low)| high << 4 | low)
                .ok_or_else(invalid)?;
        }
        Ok(Self(bytes))
    }
}

/// Writes `line` (an event line without a chain, a JSON object) chained after `previous`:
/// with `,"chain":"<its value>"` before its closing brace and a line break. Returns its value.
pub(super) fn write_chained(
    mut out: impl Write,
    previous: &ChainHash,
    line: &[u8],
) -> std::io::Result<ChainHash> {
    let value = previous.link(line);
    let open = line.strip_suffix(b"}").unwrap_or(line);
    out.write_all(open)?;
    writeln!(out, "{MEMBER}{value}\"}}")?;
    Ok(value)
}

/// An event line's chain: the value it carries and the value its bytes give after `previous`
/// (equal when the line is as it was exported). `None` when the line carries no chain value.
pub(super) fn carried_and_computed(
    line: &str,
    previous: &ChainHash,
) -> Option<(ChainHash, ChainHash)> {
    let split = line.len().checked_sub(MEMBER_LEN)?;
    let (open, member) = (line.get(..split)?, line.get(split..)?);
    let value = member.strip_prefix(MEMBER)?.strip_suffix("\"}")?;
    let carried = value.parse().ok()?;
    Some((carried, previous.link_parts(&[open.as_bytes(), b"}"])))
}

/// What a block's events say about it, which a chained block's end line repeats (its seal):
/// the workflow and code fingerprint of its `workflow:started` (a fork's workflow from its
/// `session:forked`), both from its first event, and the last state hash its events record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Facts {
    pub(super) workflow: Option<String>,
    pub(super) code: Option<String>,
    pub(super) state_hash: Option<String>,
    pub(super) state_hash_seq: Option<u64>,
    /// How many of its events record a state hash.
    pub(super) state_hashes: u64,
}

impl Facts {
    /// Takes in the block's event at `seq`.
    pub(super) fn observe(&mut self, seq: u64, event: &Envelope) {
        if seq == 0
            && event.name == WorkflowStarted::NAME
            && let Ok(started) = event.decode::<WorkflowStarted>()
        {
            self.workflow = Some(started.workflow);
            self.code = started.code;
        } else if seq == 0
            && event.name == SessionForked::NAME
            && let Ok(forked) = event.decode::<SessionForked>()
        {
            self.workflow = forked.workflow;
        }
        if let Some(hash) = &event.state_hash {
            self.state_hash = Some(hash.clone());
            self.state_hash_seq = Some(seq);
            self.state_hashes += 1;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_sha256_of_the_previous_bytes_then_the_line() {
        // python3 -c 'import hashlib; print(hashlib.sha256(bytes(32) + b"{}").hexdigest())'
        let first = ChainHash::START.link(b"{}");
        assert_eq!(
            first.to_string(),
            "fb1634c4e6cd4b1f1afe3ce2d6ef080f7ac5d1f357d723ad4dfca782733b62db"
        );
        // ... and of that value's bytes then the next line.
        let second = first.link(br#"{"a":1}"#);
        let mut joined = first.as_bytes().to_vec();
        joined.extend_from_slice(br#"{"a":1}"#);
        let direct: [u8; 32] = Sha256::digest(&joined).into();
        assert_eq!(second.as_bytes(), &direct);
        // Order matters: the same lines the other way round chain elsewhere.
        assert_ne!(
            ChainHash::START.link(br#"{"a":1}"#).link(b"{}"),
            second,
            "reordered lines chain to another head"
        );
    }

    #[test]
    fn a_chained_line_is_the_unchained_line_with_its_value_as_last_member() {
        let line = br#"{"session":"s","seq":0,"name":"user:input"}"#;
        let mut out = Vec::new();
        let value = write_chained(&mut out, &ChainHash::START, line).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            format!(
                "{},\"chain\":\"{value}\"}}\n",
                std::str::from_utf8(&line[..line.len() - 1]).unwrap()
            )
        );
        let chained = text.trim_end();
        assert_eq!(
            carried_and_computed(chained, &ChainHash::START),
            Some((value, value))
        );
        // It still reads as the event it was.
        let parsed: serde_json::Value = serde_json::from_str(chained).unwrap();
        assert_eq!(parsed["name"], "user:input");

        // One byte changed anywhere in the line: the value it carries is not what it gives.
        let flipped = chained.replacen("user", "usEr", 1);
        let (carried, computed) = carried_and_computed(&flipped, &ChainHash::START).unwrap();
        assert_ne!(carried, computed);
        // After another previous value: not what it gives either.
        let (carried, computed) =
            carried_and_computed(chained, &ChainHash::START.link(b"x")).unwrap();
        assert_ne!(carried, computed);
        // No chain member, or a value that is not 64 lower-case hex digits: none carried.
        let unchained = std::str::from_utf8(line).unwrap();
        assert_eq!(carried_and_computed(unchained, &ChainHash::START), None);
        let upper = chained.replace(&value.to_string(), &value.to_string().to_uppercase());
        assert_eq!(carried_and_computed(&upper, &ChainHash::START), None);
    }

    #[test]
    fn chain_values_read_back_and_other_text_is_refused() {
        let value = ChainHash::START.link(b"line");
        assert_eq!(value.to_string().parse::<ChainHash>(), Ok(value));
        for bad in ["", "00", &"0".repeat(63), &"g".repeat(64), &"A".repeat(64)] {
            assert!(bad.parse::<ChainHash>().is_err(), "{bad:?}");
        }
        assert_eq!(
            "0".repeat(64).parse::<ChainHash>(),
            Ok(ChainHash::START),
            "h_0 is 32 zero bytes"
        );
    }
}
