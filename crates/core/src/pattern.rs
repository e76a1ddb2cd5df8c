//! [`Pattern`]: which event names a renderer wants to see.

use std::fmt;
use std::str::FromStr;

/// A pattern over event names: `*`, an exact name (`text:delta`), every verb of a noun
/// (`error:*`) or every noun with a verb (`*:completed`).
///
/// ```
/// use openharness_core::Pattern;
/// let p: Pattern = "*:completed".parse().unwrap();
/// assert!(p.matches("agent:completed"));
/// assert!(!p.matches("agent:started"));
/// assert!("error:*".parse::<Pattern>().unwrap().matches("error:occurred"));
/// assert!("nope".parse::<Pattern>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// Every event.
    Any,
    /// Exactly this name.
    Exact(String),
    /// Every event whose noun is this (`error:*`).
    Noun(String),
    /// Every event whose verb is this (`*:completed`).
    Verb(String),
}

impl Pattern {
    /// Whether `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Exact(exact) => exact == name,
            Self::Noun(noun) => name.split_once(':').is_some_and(|(n, _)| n == noun),
            Self::Verb(verb) => name.split_once(':').is_some_and(|(_, v)| v == verb),
        }
    }
}

/// A string that is not a valid [`Pattern`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid event pattern {0:?}: use `*`, `noun:verb`, `noun:*` or `*:verb`")]
pub struct InvalidPattern(String);

impl FromStr for Pattern {
    type Err = InvalidPattern;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "*" {
            return Ok(Self::Any);
        }
        let invalid = || InvalidPattern(s.to_owned());
        let (noun, verb) = s.split_once(':').ok_or_else(invalid)?;
        let part_ok = |p: &str| !p.is_empty() && !p.contains(['*', ':']);
        match (noun, verb) {
            ("*", "*") => Ok(Self::Any),
            ("*", v) if part_ok(v) => Ok(Self::Verb(v.to_owned())),
            (n, "*") if part_ok(n) => Ok(Self::Noun(n.to_owned())),
            (n, v) if part_ok(n) && part_ok(v) => Ok(Self::Exact(s.to_owned())),
            _ => Err(invalid()),
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Any => f.write_str("*"),
            Self::Exact(name) => f.write_str(name),
            Self::Noun(noun) => write!(f, "{noun}:*"),
            Self::Verb(verb) => write!(f, "*:{verb}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_matches_every_form() {
        let cases = [
            ("*", "text:delta", true),
            ("*:*", "anything:else", true),
            ("text:delta", "text:delta", true),
            ("text:delta", "text:complete", false),
            ("error:*", "error:occurred", true),
            ("error:*", "errors:occurred", false),
            ("*:completed", "workflow:completed", true),
            ("*:completed", "workflow:started", false),
        ];
        for (pattern, name, expected) in cases {
            let parsed: Pattern = pattern.parse().unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(parsed.matches(name), expected, "{pattern} vs {name}");
            assert_eq!(parsed.to_string().parse::<Pattern>().ok(), Some(parsed));
        }
    }

    #[test]
    fn rejects_malformed_patterns() {
        for bad in ["", "text", ":delta", "text:", "a:b:c", "**:x", "te*t:delta"] {
            assert!(
                bad.parse::<Pattern>().is_err(),
                "{bad:?} should be rejected"
            );
        }
    }
}
