//! [`first_difference`]: where two runs of one case part — the first event that differs
//! (name or payload, with event ids left out: two sessions never share them) and how their
//! states differ just after it.

use openharness_core::{Envelope, SessionId};
use openharness_host::Host;
use serde::Serialize;
use serde_json::Value;

use crate::error::EvalError;

/// Where two runs part.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Difference {
    /// The seq of the first event that differs (how many events agree).
    pub seq: u64,
    /// The first run's event there (`None`: it had ended).
    pub a: Option<Envelope>,
    /// The second run's event there (`None`: it had ended).
    pub b: Option<Envelope>,
    /// The JSON patch from the first run's state to the second's, each just after that
    /// event (position `seq + 1`, clamped to each run's length).
    pub state_patch: json_patch::Patch,
}

/// The first event where runs `a` and `b` differ, or `None` when their events agree.
///
/// ```
/// # async fn demo(host: &openharness_host::Host, a: openharness_core::SessionId, b: openharness_core::SessionId) -> Result<(), openharness_eval::EvalError> {
/// if let Some(difference) = openharness_eval::first_difference(host, &a, &b).await? {
///     println!("they part at seq {}: {:?}", difference.seq, difference.state_patch);
/// }
/// # Ok(()) }
/// ```
pub async fn first_difference(
    host: &Host,
    a: &SessionId,
    b: &SessionId,
) -> Result<Option<Difference>, EvalError> {
    let (left, right) = (
        host.store().all_events(a).await?,
        host.store().all_events(b).await?,
    );
    let agree = left
        .iter()
        .zip(&right)
        .take_while(|(x, y)| same(x, y))
        .count();
    if agree == left.len() && agree == right.len() {
        return Ok(None);
    }
    let position = agree as u64 + 1;
    let state_a = host.state_at(a, position).await?;
    let state_b = host.state_at(b, position).await?;
    Ok(Some(Difference {
        seq: agree as u64,
        a: left.get(agree).cloned(),
        b: right.get(agree).cloned(),
        state_patch: json_patch::diff(&state_a, &state_b),
    }))
}

/// Whether two events say the same thing: name and payload, event ids aside.
fn same(a: &Envelope, b: &Envelope) -> bool {
    a.name == b.name && without_ids(&a.payload) == without_ids(&b.payload)
}

/// The payload with every string that is an id (a UUID) replaced by `"<id>"`.
fn without_ids(value: &Value) -> Value {
    match value {
        Value::String(text) if looks_like_uuid(text) => Value::String("<id>".to_owned()),
        Value::Array(items) => Value::Array(items.iter().map(without_ids).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| (key.clone(), without_ids(value)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `8-4-4-4-12` hex digits.
fn looks_like_uuid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(group, len)| group.len() == len && group.chars().all(|c| c.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ids_are_left_out_of_the_comparison_and_nothing_else_is() {
        let id = openharness_core::EventId::new().to_string();
        let other = openharness_core::EventId::new().to_string();
        assert!(looks_like_uuid(&id));
        let a = Envelope::new("x:y", json!({ "openRequests": [id], "text": "hi" }), None);
        let b = Envelope::new(
            "x:y",
            json!({ "openRequests": [other], "text": "hi" }),
            None,
        );
        assert!(same(&a, &b));
        let c = Envelope::new("x:y", json!({ "openRequests": [id], "text": "ho" }), None);
        assert!(!same(&a, &c));
        assert!(!looks_like_uuid("not-a-uuid-at-all-really"));
    }
}
