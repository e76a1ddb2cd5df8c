//! [`ForkAt`] written as one word of text, as a command line gives it
//! (`openharness eval dataset add NAME --at …`) and a dataset's log records it:
//!
//! | text                      | the fork point                                                  |
//! |---------------------------|-----------------------------------------------------------------|
//! | `position=12` (or `12`)   | the state after the session's first 12 events                   |
//! | `end`                     | the session's end                                               |
//! | `event=NAME`              | right after the first event named `NAME` (`event=task:started`) |
//! | `event=NAME#N`            | right after the `N`th (from 1)                                  |
//! | `phase=VALUE`             | the first position where the state's `/phase` becomes `VALUE`   |
//! | `phase=VALUE#WHICH`       | `WHICH` entry into it: `first`, `last` or `N` (from 1)          |
//! | `phase=VALUE…@/FIELD`     | another state field than `/phase`, as a JSON pointer            |
//!
//! A phase's `VALUE` is JSON when it reads as a number, `true`, `false`, `null` or a quoted
//! string (`phase="3"` is the text 3, `phase=3` the number), else the text as written.
//! [`ForkAt`]'s [`Display`](std::fmt::Display) writes this grammar back (a predicate on the
//! state, [`ForkAt::state`], has no text: it is written `state`, which does not parse).

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use crate::case::{ForkAt, Named, Occurrence};

/// The position [`ForkAt`] `end` stands for: any position past the session's length is
/// clamped to it.
pub(crate) const END: u64 = u64::MAX;

/// Text that is not a fork point: what was wrong, and the forms that are.
///
/// ```
/// use openharness_eval::ForkAt;
/// let err = "after=3".parse::<ForkAt>().unwrap_err();
/// assert!(err.to_string().contains("`position=N`"), "{err}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{text}` is not a fork point ({why}); write `position=N` (or `N`), `end`, `event=NAME[#N]` or `phase=VALUE[#first|#last|#N][@/FIELD]`"
)]
pub struct ForkAtSyntax {
    /// The text given.
    pub text: String,
    /// What is wrong with it.
    pub why: String,
}

impl FromStr for ForkAt {
    type Err = ForkAtSyntax;

    /// Reads the grammar of the module doc.
    ///
    /// ```
    /// use openharness_eval::{ForkAt, Occurrence};
    /// assert_eq!("12".parse::<ForkAt>()?, ForkAt::position(12));
    /// assert_eq!("event=task:started#2".parse::<ForkAt>()?, ForkAt::event("task:started", 2));
    /// let ForkAt::Phase { phase, occurrence, field } = "phase=coding#last@/stage".parse()? else {
    ///     unreachable!()
    /// };
    /// assert_eq!((phase, occurrence, field.as_str()), ("coding".into(), Occurrence::LAST, "/stage"));
    /// # Ok::<(), openharness_eval::ForkAtSyntax>(())
    /// ```
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| ForkAtSyntax {
            text: text.to_owned(),
            why: why.to_owned(),
        };
        let word = text.trim();
        if word == "end" {
            return Ok(Self::position(END));
        }
        if let Ok(position) = word.parse::<u64>() {
            return Ok(Self::position(position));
        }
        let Some((key, rest)) = word.split_once('=') else {
            return Err(bad("no `=`"));
        };
        match key.trim() {
            "position" => rest
                .trim()
                .parse::<u64>()
                .map(Self::position)
                .map_err(|_| bad("a position is a whole number from 0")),
            "event" => {
                let (name, n) = match rest.rsplit_once('#') {
                    Some((name, n)) => (
                        name,
                        n.trim()
                            .parse::<usize>()
                            .ok()
                            .filter(|n| *n >= 1)
                            .ok_or_else(|| bad("an occurrence is a whole number from 1"))?,
                    ),
                    None => (rest, 1),
                };
                let name = name.trim();
                if name.is_empty() {
                    return Err(bad("no event name"));
                }
                Ok(Self::event(name, n))
            }
            "phase" => {
                let (rest, field) = match rest.rsplit_once("@/") {
                    Some((rest, field)) => (rest, format!("/{field}")),
                    None => (rest, "/phase".to_owned()),
                };
                let (value, occurrence) = match rest.rsplit_once('#') {
                    Some((value, which)) => (
                        value,
                        occurrence(which.trim()).ok_or_else(|| {
                            bad("an entry is `first`, `last` or a whole number from 1")
                        })?,
                    ),
                    None => (rest, Occurrence::FIRST),
                };
                if value.trim().is_empty() {
                    return Err(bad("no phase value"));
                }
                Ok(Self::Phase {
                    phase: phase_value(value.trim()),
                    occurrence,
                    field,
                })
            }
            other => Err(bad(&format!("`{other}` is not a kind of fork point"))),
        }
    }
}

/// `first`, `last` or a whole number from 1.
fn occurrence(which: &str) -> Option<Occurrence> {
    match which {
        "first" => Some(Occurrence::FIRST),
        "last" => Some(Occurrence::LAST),
        n => n.parse().ok().filter(|n| *n >= 1).map(Occurrence::Nth),
    }
}

/// A phase's value: JSON when it reads as a scalar, else the text.
fn phase_value(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(value) if !value.is_array() && !value.is_object() => value,
        _ => Value::String(text.to_owned()),
    }
}

impl fmt::Display for ForkAt {
    /// The grammar of the module doc, defaults left out.
    ///
    /// ```
    /// use openharness_eval::ForkAt;
    /// assert_eq!(ForkAt::event("task:started", 2).to_string(), "event=task:started#2");
    /// assert_eq!(ForkAt::phase("coding").to_string(), "phase=coding");
    /// assert_eq!(ForkAt::phase("3").to_string(), "phase=\"3\"");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Position { position: END } => f.write_str("end"),
            Self::Position { position } => write!(f, "position={position}"),
            Self::Event { event, n: 1 } => write!(f, "event={event}"),
            Self::Event { event, n } => write!(f, "event={event}#{n}"),
            Self::Phase {
                phase,
                occurrence,
                field,
            } => {
                match phase {
                    // Bare when it reads back as the same text.
                    Value::String(text) if phase_value(text) == *phase => {
                        write!(f, "phase={text}")?;
                    }
                    other => write!(f, "phase={other}")?,
                }
                match occurrence {
                    Occurrence::Named(Named::First) => {}
                    Occurrence::Named(Named::Last) => f.write_str("#last")?,
                    Occurrence::Nth(n) => write!(f, "#{n}")?,
                }
                if field != "/phase" {
                    write!(f, "@{field}")?;
                }
                Ok(())
            }
            Self::State(_) => f.write_str("state"),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_form_reads_and_writes_back() {
        for (text, at) in [
            ("position=12", ForkAt::position(12)),
            ("end", ForkAt::position(END)),
            ("event=task:started", ForkAt::event("task:started", 1)),
            ("event=task:started#3", ForkAt::event("task:started", 3)),
            ("phase=coding", ForkAt::phase("coding")),
            (
                "phase=coding#last@/stage",
                ForkAt::Phase {
                    phase: json!("coding"),
                    occurrence: Occurrence::LAST,
                    field: "/stage".into(),
                },
            ),
            (
                "phase=2#2",
                ForkAt::Phase {
                    phase: json!(2),
                    occurrence: Occurrence::Nth(2),
                    field: "/phase".into(),
                },
            ),
            ("phase=\"2\"", ForkAt::phase("2")),
        ] {
            assert_eq!(text.parse::<ForkAt>().unwrap(), at, "{text}");
            assert_eq!(at.to_string(), text);
        }
        assert_eq!("7".parse::<ForkAt>().unwrap(), ForkAt::position(7));
        assert_eq!(
            " event = user:input # 2 ".parse::<ForkAt>().unwrap(),
            ForkAt::event("user:input", 2)
        );
    }

    #[test]
    fn bad_text_says_what_is_wrong_and_what_is_right() {
        for (text, why) in [
            ("", "no `=`"),
            ("after=task:started", "`after` is not a kind of fork point"),
            ("position=-1", "a position is a whole number from 0"),
            ("event=", "no event name"),
            (
                "event=task:started#0",
                "an occurrence is a whole number from 1",
            ),
            ("phase=coding#middle", "an entry is `first`, `last`"),
            ("phase=", "no phase value"),
        ] {
            let err = text.parse::<ForkAt>().unwrap_err().to_string();
            assert!(err.contains(why), "{text}: {err}");
            assert!(err.contains("`event=NAME[#N]`"), "{err}");
        }
    }
}
