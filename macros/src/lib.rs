//! Macros for Open Harness: `#[event]`, `#[handler]` and `#[agent(output = T)]`.
use proc_macro::TokenStream;

/// Marks an event (placeholder).
#[proc_macro_attribute]
pub fn event(_attr: TokenStream, item: TokenStream) -> TokenStream {
    item
}
