//! [`FrameId`]: where a frame stands in a protocol's projected stream (AG-UI, A2A), so a
//! client resumes after any frame. Each recorded event becomes zero or more frames; the id
//! `<seq>.<n>` names the `n`-th frame made of the event at `seq`, and `<seq>` alone stands
//! after every frame of that event. The frames are a pure function of the log, so the frames
//! after an id are the same on every read.

use std::fmt;

/// A frame's place: the `n`-th frame made of the event at `seq` (how a projection counts its
/// frames, from 0 or from 1, is its own; ids only compare).
///
/// ```ignore
/// let id = FrameId::parse("12.3").unwrap();
/// assert!(FrameId::parse("12").unwrap() > id && id > FrameId::parse("12.2").unwrap());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct FrameId {
    pub(crate) seq: u64,
    pub(crate) n: u64,
}

impl FrameId {
    /// Reads `<seq>.<n>`, or `<seq>` (after every frame of that event); `None` for anything
    /// else.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let (seq, n) = match text.split_once('.') {
            Some((seq, n)) => (seq, n.parse().ok()?),
            None => (text, u64::MAX),
        };
        Some(Self {
            seq: seq.parse().ok()?,
            n,
        })
    }
}

impl fmt::Display for FrameId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.seq, self.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_order_frames_and_a_bare_seq_is_after_all_of_its_event() {
        let at = |seq, n| FrameId { seq, n };
        assert_eq!(FrameId::parse("12.3"), Some(at(12, 3)));
        assert_eq!(FrameId::parse("12"), Some(at(12, u64::MAX)));
        assert!(at(12, 0) < at(12, 1) && at(12, u64::MAX) < at(13, 0));
        assert_eq!(at(7, 2).to_string(), "7.2");
        for wrong in ["", "x", "1.x", "-1.0", "1.2.3", "1."] {
            assert_eq!(FrameId::parse(wrong), None, "{wrong}");
        }
    }
}
