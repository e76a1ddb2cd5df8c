//! Checks of the fields a request carries, each failing with a [`PlatformError`] that names the
//! field.

use super::*;

/// Refuses capability ids that are unknown, coming soon, or listed twice (`422`).
pub(super) fn check_capabilities(platform: &Platform, ids: &[String]) -> Result<(), PlatformError> {
    for (i, id) in ids.iter().enumerate() {
        match platform.capability(id) {
            None => {
                return Err(PlatformError::Invalid(format!(
                    "no capability {id:?} (GET /v1/capabilities lists them)"
                )));
            }
            Some(c) if c.status == CapabilityStatus::ComingSoon => {
                return Err(PlatformError::Invalid(format!(
                    "capability {id:?} is coming soon and cannot be given to agents yet"
                )));
            }
            Some(_) => {}
        }
        if ids[..i].contains(id) {
            return Err(PlatformError::Invalid(format!(
                "capability {id:?} is listed twice: each is given to an agent once"
            )));
        }
    }
    Ok(())
}

pub(super) fn not_found(kind: &'static str, id: Uuid) -> PlatformError {
    PlatformError::NotFound {
        kind,
        id: id.to_string(),
    }
}

/// A required text field: trimmed, 1 to `max` characters.
pub(super) fn required(field: &str, value: String, max: usize) -> Result<String, PlatformError> {
    let value = value.trim().to_owned();
    if value.is_empty() {
        return Err(PlatformError::Invalid(format!(
            "`{field}` must not be empty"
        )));
    }
    if value.chars().count() > max {
        return Err(PlatformError::Invalid(format!(
            "`{field}` is longer than {max} characters"
        )));
    }
    Ok(value)
}

/// An optional text field: empty counts as none.
pub(super) fn optional(
    field: &str,
    value: Option<String>,
    max: usize,
) -> Result<Option<String>, PlatformError> {
    match value {
        Some(value) if !value.trim().is_empty() => required(field, value, max).map(Some),
        _ => Ok(None),
    }
}

pub(super) fn tags(field: &str, tags: Vec<String>) -> Result<Vec<String>, PlatformError> {
    if tags.len() > 100 {
        return Err(PlatformError::Invalid(format!(
            "`{field}` holds more than 100 items"
        )));
    }
    tags.into_iter()
        .map(|tag| required(field, tag, 100))
        .collect()
}

/// The longest system prompt, in characters.
pub(super) const MAX_PROMPT: usize = 100_000;

pub(super) fn base_url(value: Option<String>) -> Result<Option<String>, PlatformError> {
    let value = optional("base_url", value, 2000)?;
    if let Some(url) = &value
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        return Err(PlatformError::Invalid(format!(
            "`base_url` must start with http:// or https://, not {url:?}"
        )));
    }
    Ok(value)
}

pub(super) fn api_key(value: String) -> Result<String, PlatformError> {
    if value.trim().is_empty() || value.len() > 4096 {
        return Err(PlatformError::Invalid(
            "`api_key` must be 1 to 4096 bytes (or null to remove the key)".into(),
        ));
    }
    Ok(value)
}

pub(super) fn context_window(value: Option<u32>) -> Result<Option<u32>, PlatformError> {
    if value == Some(0) {
        return Err(PlatformError::Invalid(
            "`context_window` must be positive".into(),
        ));
    }
    Ok(value)
}

pub(super) fn prompt(value: String) -> Result<String, PlatformError> {
    if value.chars().count() > MAX_PROMPT {
        return Err(PlatformError::Invalid(format!(
            "`system_prompt` is longer than {MAX_PROMPT} characters"
        )));
    }
    Ok(value)
}
