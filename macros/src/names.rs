//! Names derived from Rust identifiers and types: `noun:verb` event names (`PlanCreated` is
//! `plan:created`), kebab-case agent names (`TaskExecutor` is `task-executor`), and the type
//! name a variant or a handler's parameter refers to.

use syn::{Ident, Type};

/// Splits a CamelCase identifier into lowercase words.
///
/// `ToolCallRequested` gives `tool call requested`; an acronym stays one word (`HTTPRequestSent`
/// gives `http request sent`); digits stay with the word before them; `_` separates words.
pub(crate) fn words(ident: &str) -> Vec<String> {
    let ident = ident.strip_prefix("r#").unwrap_or(ident);
    let chars: Vec<char> = ident.chars().collect();
    let mut words = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c == '_' {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            continue;
        }
        if c.is_uppercase() && !current.is_empty() {
            let prev = i.checked_sub(1).and_then(|p| chars.get(p)).copied();
            let next_is_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let starts_word = match prev {
                Some(p) => {
                    p.is_lowercase() || p.is_numeric() || (p.is_uppercase() && next_is_lower)
                }
                None => false,
            };
            if starts_word {
                words.push(std::mem::take(&mut current));
            }
        }
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// Why no event name can be derived from a type name.
pub(crate) enum Underivable {
    /// The name is a single word: there is no verb.
    SingleWord { noun: String },
    /// The words do not make a valid name (non-ASCII letters, say).
    Invalid { derived: String },
}

/// The `noun:verb` name of an event type: the last word is the verb, the words before it,
/// joined with `_`, are the noun.
pub(crate) fn event_name(ident: &str) -> Result<String, Underivable> {
    let words = words(ident);
    let Some((verb, noun)) = words.split_last() else {
        return Err(Underivable::SingleWord {
            noun: ident.to_lowercase(),
        });
    };
    if noun.is_empty() {
        return Err(Underivable::SingleWord { noun: verb.clone() });
    }
    let derived = format!("{}:{verb}", noun.join("_"));
    if is_event_name(&derived) {
        Ok(derived)
    } else {
        Err(Underivable::Invalid { derived })
    }
}

/// Whether `name` matches `^[a-z][a-z0-9_]*:[a-z][a-z0-9_]*$`.
pub(crate) fn is_event_name(name: &str) -> bool {
    fn is_part(part: &str) -> bool {
        let mut chars = part.chars();
        chars.next().is_some_and(|c| c.is_ascii_lowercase())
            && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    }
    match name.split_once(':') {
        Some((noun, verb)) => is_part(noun) && is_part(verb),
        None => false,
    }
}

/// A valid name close to an invalid one, if there is an obvious one: `Plan:Created` and
/// `PlanCreated` both suggest `plan:created`, `tool-call:requested` suggests
/// `tool_call:requested`.
pub(crate) fn suggest_event_name(name: &str) -> Option<String> {
    let suggestion = match name.split_once(':') {
        Some((noun, verb)) => format!("{}:{}", snake(noun), snake(verb)),
        None => event_name(name).ok()?,
    };
    (suggestion != name && is_event_name(&suggestion)).then_some(suggestion)
}

/// `Tool Call`, `tool-call` and `ToolCall` all give `tool_call`.
fn snake(part: &str) -> String {
    let spaced: String = part
        .chars()
        .map(|c| if c == '-' || c == ' ' { '_' } else { c })
        .collect();
    words(&spaced).join("_")
}

/// The kebab-case name of an agent type: `TaskExecutor` gives `task-executor`.
pub(crate) fn kebab(ident: &str) -> String {
    words(ident).join("-")
}

/// The identifier a type is named by: the last segment of its path (`PlanCreated` for both
/// `PlanCreated` and `events::PlanCreated`). `None` for anything that is not a plain path.
pub(crate) fn type_ident(ty: &Type) -> Option<&Ident> {
    match ty {
        Type::Path(path) if path.qself.is_none() => path.path.segments.last().map(|s| &s.ident),
        Type::Group(group) => type_ident(&group.elem),
        Type::Paren(paren) => type_ident(&paren.elem),
        _ => None,
    }
}

/// A type as the user wrote it, for messages: `events :: PlanCreated` becomes
/// `events::PlanCreated`.
pub(crate) fn display(tokens: &impl quote::ToTokens) -> String {
    let text = tokens.to_token_stream().to_string();
    text.replace(" :: ", "::")
        .replace(":: ", "::")
        .replace(" < ", "<")
        .replace(" <", "<")
        .replace(" >", ">")
        .replace(" ,", ",")
        .replace("& ", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(ident: &str) -> Option<String> {
        event_name(ident).ok()
    }

    #[test]
    fn derives_noun_verb_names() {
        assert_eq!(name("PlanCreated").as_deref(), Some("plan:created"));
        assert_eq!(name("TaskCompleted").as_deref(), Some("task:completed"));
        assert_eq!(
            name("ToolCallRequested").as_deref(),
            Some("tool_call:requested")
        );
        assert_eq!(
            name("HTTPRequestSent").as_deref(),
            Some("http_request:sent")
        );
        assert_eq!(name("Step2Done").as_deref(), Some("step2:done"));
        assert_eq!(name("r#PlanCreated").as_deref(), Some("plan:created"));
        assert_eq!(name("Plan"), None);
        assert_eq!(name("PLAN"), None);
        assert_eq!(name("ÉtéCommencé"), None);
    }

    #[test]
    fn checks_names() {
        for good in ["plan:created", "tool_call:requested", "a1:b2", "x:y_"] {
            assert!(is_event_name(good), "{good}");
        }
        for bad in [
            "",
            "plan",
            "plan:",
            ":created",
            "Plan:created",
            "plan:Created",
            "plan:created:again",
            "1plan:created",
            "plan-x:created",
            "plan :created",
            "_plan:created",
        ] {
            assert!(!is_event_name(bad), "{bad}");
        }
    }

    #[test]
    fn suggests_close_names() {
        let suggest = |s: &str| suggest_event_name(s);
        assert_eq!(suggest("PlanCreated").as_deref(), Some("plan:created"));
        assert_eq!(suggest("Plan:Created").as_deref(), Some("plan:created"));
        assert_eq!(
            suggest("tool-call:requested").as_deref(),
            Some("tool_call:requested")
        );
        assert_eq!(suggest("plan"), None);
        assert_eq!(suggest("plan:created"), None);
    }

    #[test]
    fn kebab_cases_agent_names() {
        assert_eq!(kebab("Planner"), "planner");
        assert_eq!(kebab("TaskExecutor"), "task-executor");
        assert_eq!(kebab("LLMJudge"), "llm-judge");
    }
}
