//! [`Pricing`]: turning token counts into US dollars for `agent:completed`.
//!
//! The built-in table covers Anthropic's current model families at their published list
//! prices per million tokens; prices change, so providers take an explicit [`Pricing`] too.

use openharness_core::adapter::Usage;

/// Prices in US dollars per million tokens.
///
/// ```
/// use openharness_core::adapter::Usage;
/// use openharness_provider::Pricing;
///
/// let pricing = Pricing::per_million(3.0, 15.0);
/// let usage = Usage { input_tokens: 1_000_000, output_tokens: 100_000, ..Usage::default() };
/// assert!((pricing.cost(&usage) - 4.5).abs() < 1e-9);
/// assert!((pricing.cache_read - 0.3).abs() < 1e-12);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pricing {
    /// Input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Input tokens written to the prompt cache.
    pub cache_write: f64,
    /// Input tokens read from the prompt cache.
    pub cache_read: f64,
}

impl Pricing {
    /// Input and output prices; cache writes cost 1.25× input and cache reads 0.1× input
    /// (Anthropic's five-minute cache multipliers).
    pub fn per_million(input: f64, output: f64) -> Self {
        Self {
            input,
            output,
            cache_write: input * 1.25,
            cache_read: input * 0.1,
        }
    }

    /// The list price of an Anthropic model, matched by family; `None` when unknown.
    ///
    /// ```
    /// use openharness_provider::Pricing;
    /// assert_eq!(Pricing::anthropic("claude-sonnet-4-5-20250929").map(|p| p.input), Some(3.0));
    /// assert_eq!(Pricing::anthropic("my-finetune"), None);
    /// ```
    pub fn anthropic(model: &str) -> Option<Self> {
        let (input, output) = if model.contains("opus-4-5") || model.contains("opus-4-6") {
            (5.0, 25.0)
        } else if model.contains("opus") {
            (15.0, 75.0)
        } else if model.contains("sonnet") {
            (3.0, 15.0)
        } else if model.contains("haiku-4") {
            (1.0, 5.0)
        } else if model.contains("3-5-haiku") {
            (0.8, 4.0)
        } else {
            return None;
        };
        Some(Self::per_million(input, output))
    }

    /// The cost of `usage`.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let million = 1_000_000.0;
        (usage.input_tokens as f64 * self.input
            + usage.output_tokens as f64 * self.output
            + usage.cache_creation_tokens as f64 * self.cache_write
            + usage.cache_read_tokens as f64 * self.cache_read)
            / million
    }
}
