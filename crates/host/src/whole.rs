//! Whole numbers as JSON writes them: `5` or `5.0`. JSON Schema's `integer` takes both, and a
//! client that computes a position in floating point sends the second; serde's integer types
//! take only the first. These read both, and refuse a fraction, a negative or anything beyond
//! JavaScript's largest safe integer with a message that names the number.
//!
//! ```
//! #[derive(serde::Deserialize)]
//! struct At {
//!     #[serde(deserialize_with = "openharness_host::whole::number")]
//!     position: u64,
//!     #[serde(default, deserialize_with = "openharness_host::whole::optional")]
//!     turn: Option<u64>,
//! }
//! let at: At = serde_json::from_str(r#"{"position": 12.0, "turn": 3}"#)?;
//! assert_eq!((at.position, at.turn), (12, Some(3)));
//! assert!(serde_json::from_str::<At>(r#"{"position": 1.5}"#).is_err());
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde::Deserialize;
use serde::de::Error;

/// The largest whole number read: JavaScript's largest safe integer.
const MAX: u64 = 9_007_199_254_740_991;

/// A whole number, `5` or `5.0`, that fits `T`.
pub fn number<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<u64>,
{
    let number = serde_json::Number::deserialize(deserializer)?;
    let whole = number.as_u64().filter(|n| *n <= MAX).or_else(|| {
        number
            .as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= MAX as f64)
            .map(|f| f as u64)
    });
    whole
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| D::Error::custom(format!("{number} is not a whole number in range")))
}

/// An optional [`number`]: absent or `null` is `None` (with `#[serde(default)]`).
pub fn optional<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<u64>,
{
    #[derive(Deserialize)]
    struct Whole<T: TryFrom<u64>>(#[serde(deserialize_with = "number")] T);
    Option::<Whole<T>>::deserialize(deserializer).map(|whole| whole.map(|Whole(n)| n))
}
