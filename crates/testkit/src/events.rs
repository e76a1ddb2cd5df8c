//! Reading a log in assertions (feature `fixtures`): the names of its events in order, and the
//! first event of a type, decoded.
//!
//! ```
//! use openharness::prelude::*;
//! use openharness_testkit::events::{first, names};
//!
//! let log = vec![Envelope::typed(&UserInput::new("hi"), None).unwrap()];
//! assert_eq!(names(&log), ["user:input"]);
//! assert_eq!(first::<UserInput>(&log).text, "hi");
//! ```

use openharness::{Envelope, Event};

/// The names of `events`, in order.
pub fn names(events: &[Envelope]) -> Vec<&str> {
    events.iter().map(|event| event.name.as_ref()).collect()
}

/// The first event of type `E` in `events`, decoded.
///
/// # Panics
///
/// When there is none, or it does not decode as `E`: that is the test failing.
#[track_caller]
pub fn first<E: Event>(events: &[Envelope]) -> E {
    let Some(event) = events.iter().find(|event| event.name == E::NAME) else {
        panic!("no {} event among {:?}", E::NAME, names(events));
    };
    event
        .decode()
        .unwrap_or_else(|err| panic!("{} does not decode: {err}", E::NAME))
}
