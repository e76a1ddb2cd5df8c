//! The base URL of an HTTP provider (Anthropic, OpenAI-compatible): checked once, when the
//! provider is built, so a typo fails there and not on the first call.

use crate::ConfigError;

/// `url` without its trailing slashes, if it is an `http://` or `https://` URL; the endpoint's
/// path is appended to it.
pub(crate) fn validate(url: &str) -> Result<&str, ConfigError> {
    let trimmed = url.trim_end_matches('/');
    if trimmed.starts_with("http://") || trimmed.starts_with("https://") {
        Ok(trimmed)
    } else {
        Err(ConfigError::BaseUrl {
            url: url.to_owned(),
            reason: "it must start with http:// or https://".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_slashes_are_trimmed() {
        assert_eq!(
            validate("https://api.example/").ok(),
            Some("https://api.example")
        );
        assert_eq!(
            validate("http://127.0.0.1:8080//").ok(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(
            validate("https://api.example/v2").ok(),
            Some("https://api.example/v2")
        );
    }

    #[test]
    fn a_url_without_a_scheme_is_refused_by_name() {
        let Err(ConfigError::BaseUrl { url, reason }) = validate("api.example/") else {
            panic!("accepted a URL without http:// or https://");
        };
        assert_eq!(url, "api.example/");
        assert!(reason.contains("http://"), "{reason}");
        assert!(validate("ftp://api.example").is_err());
        assert!(validate("").is_err());
    }
}
