//! [`Renderer`]: observers of a run. They see events after they are recorded and can change
//! nothing.
//!
//! The event loop hands each renderer its events through a channel to a thread of its own, so a
//! slow renderer never holds up the loop and a panicking one is caught, logged and kept going.

use crate::event::Envelope;
use crate::pattern::Pattern;

/// Observes events of a run (a progress printer, a log, a UI bridge).
///
/// ```
/// use openharness_core::{Envelope, Pattern, Renderer};
/// struct Errors(Vec<String>);
/// impl Renderer for Errors {
///     fn patterns(&self) -> Vec<Pattern> { vec!["error:*".parse().unwrap()] }
///     fn render(&mut self, event: &Envelope) { self.0.push(event.name.to_string()); }
/// }
/// ```
pub trait Renderer: Send + 'static {
    /// The events to receive. Defaults to every event.
    fn patterns(&self) -> Vec<Pattern> {
        vec![Pattern::Any]
    }

    /// Called once per matching event, in log order.
    fn render(&mut self, event: &Envelope);

    /// Called once after the last event of the run.
    fn finish(&mut self) {}
}

/// A renderer made from a pattern and a closure; see [`renderer_fn`].
pub struct FnRenderer<F> {
    pattern: Pattern,
    render: F,
}

/// A renderer that calls `render` for every event matching `pattern`.
///
/// ```
/// use openharness_core::renderer_fn;
/// let printer = renderer_fn("text:delta".parse().unwrap(), |event| {
///     print!("{}", event.payload["delta"].as_str().unwrap_or(""));
/// });
/// # let _ = printer;
/// ```
pub fn renderer_fn<F>(pattern: Pattern, render: F) -> FnRenderer<F>
where
    F: FnMut(&Envelope) + Send + 'static,
{
    FnRenderer { pattern, render }
}

impl<F> Renderer for FnRenderer<F>
where
    F: FnMut(&Envelope) + Send + 'static,
{
    fn patterns(&self) -> Vec<Pattern> {
        vec![self.pattern.clone()]
    }

    fn render(&mut self, event: &Envelope) {
        (self.render)(event);
    }
}
