//! Error collection and the user-facing messages of the three macros.
//!
//! A macro checks everything it can before giving up, so a user sees every problem of an item
//! in one build: [`Errors`] collects `syn::Error`s, each spanned on the user's own token, and
//! [`Errors::finish`] combines them into one. The messages live here, in one place, so their
//! tone stays the same: a sentence that says what is wrong and names the fix.

use std::fmt::Display;

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

/// The problems found so far in one macro invocation.
///
/// Must be consumed with [`Errors::finish`]; dropping it unchecked is a bug in the macro and
/// panics (in the spirit of serde_derive's `Ctxt`), so no error is ever lost silently.
#[derive(Default)]
pub(crate) struct Errors {
    errors: Vec<syn::Error>,
    finished: bool,
}

impl Errors {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Reports `message` on the tokens of `tokens` (the user's own).
    pub(crate) fn spanned_by(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.errors.push(syn::Error::new_spanned(tokens, message));
    }

    /// Reports `message` on the type and const parameters of `generics`, if it has any
    /// (lifetimes are allowed): a macro that cannot name an instance of a generic item.
    pub(crate) fn refuse_generics(&mut self, generics: &syn::Generics, message: impl Display) {
        let generic = generics
            .params
            .iter()
            .filter(|param| !matches!(param, syn::GenericParam::Lifetime(_)))
            .collect::<Vec<_>>();
        if !generic.is_empty() {
            self.spanned_by(quote::quote!(#(#generic),*), message);
        }
    }

    /// Reports `message` at `span`.
    pub(crate) fn at(&mut self, span: Span, message: impl Display) {
        self.errors.push(syn::Error::new(span, message));
    }

    /// Adds an error built elsewhere (a parse error, say).
    pub(crate) fn push(&mut self, error: syn::Error) {
        self.errors.push(error);
    }

    /// How many errors have been reported.
    pub(crate) fn len(&self) -> usize {
        self.errors.len()
    }

    /// Whether nothing has been reported.
    pub(crate) fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    /// `tokens` followed by every reported error, as `compile_error!`s: for a macro that can
    /// still generate something useful despite the errors, so they do not cascade.
    pub(crate) fn emit_with(self, tokens: TokenStream) -> TokenStream {
        match self.finish() {
            Ok(()) => tokens,
            Err(err) => {
                let err = err.into_compile_error();
                quote::quote! { #tokens #err }
            }
        }
    }

    /// Every error reported so far followed by `error`, which stopped the macro, as one error.
    pub(crate) fn fail(mut self, error: syn::Error) -> syn::Error {
        self.finished = true;
        let mut errors = std::mem::take(&mut self.errors);
        if errors.is_empty() {
            return error;
        }
        let mut first = errors.remove(0);
        first.extend(errors);
        first.combine(error);
        first
    }

    /// `Ok` if nothing was reported, otherwise every error combined into one.
    pub(crate) fn finish(mut self) -> syn::Result<()> {
        self.finished = true;
        let mut errors = std::mem::take(&mut self.errors).into_iter();
        match errors.next() {
            None => Ok(()),
            Some(mut first) => {
                first.extend(errors);
                Err(first)
            }
        }
    }
}

impl Drop for Errors {
    fn drop(&mut self) {
        if !self.finished && !std::thread::panicking() {
            panic!("openharness-macros bug: errors were collected but never reported");
        }
    }
}

/// The messages, grouped by macro. Each is a sentence a user can act on.
pub(crate) mod msg {
    // ---- #[event] ----------------------------------------------------------------------------

    pub(crate) const CRATE_PATH: &str = "`crate = …` takes the path of the crate the generated \
         code names Open Harness by, unquoted: `crate = openharness_core`";
    pub(crate) const EVENT_ARGS: &str = "`#[event]` takes at most a `noun:verb` name, then \
         `version = N` and `crate = path`: write `#[event]`, `#[event(\"plan:created\")]` or \
         `#[event(version = 2)]`";
    pub(crate) const EVENT_VERSION: &str = "an event's version is a whole number from 1: \
         `#[event(version = 2)]`";
    pub(crate) const EVENT_SET_VERSION: &str = "an event set has no version of its own: put \
         `version = N` on the event whose shape changed";
    pub(crate) const EVENT_ITEM: &str = "`#[event]` goes on a struct (one event) or on an enum \
         (the workflow's event set)";
    pub(crate) const EVENT_UNION: &str =
        "an event cannot be a union: use a struct for one event or an enum for a set of events";
    pub(crate) const EVENT_GENERIC: &str = "events are concrete values and cannot be generic: \
         remove the type parameters and lifetimes, or define one event type per case";
    pub(crate) const EVENT_SET_GENERIC: &str =
        "an event set cannot be generic: remove the type parameters and lifetimes";
    /// The previous version of an upcast event is recorded under another name.
    pub(crate) fn upcast_other_name(event: &str, name: &str) -> String {
        format!(
            "the previous version of `{event}` (its `Upcast::Previous`) must be recorded under \
             the same name, `{name}`: write `#[event(\"{name}\", version = N)]` on it"
        )
    }

    /// The previous version of an upcast event is not the version just below.
    pub(crate) fn upcast_not_one_below(event: &str, version: u32) -> String {
        let below = version - 1;
        format!(
            "`{event}` is version {version}, so its `Upcast::Previous` must be version {below}: \
             each version upcasts from the one just below it"
        )
    }

    pub(crate) const EVENT_SET_NAMED: &str = "an event enum takes no name, each event type \
         has its own: remove the string from `#[event(...)]`";
    pub(crate) const EVENT_SET_DISCRIMINANT: &str =
        "variants of an event enum hold an event and take no discriminant: remove `= ...`";
    pub(crate) const EVENT_SET_FIELDS: &str = "each variant of an event enum holds exactly one \
         event type: write `PlanCreated` or `PlanCreated(PlanCreated)`";

    pub(crate) fn event_bad_name(got: &str, suggestion: Option<&str>) -> String {
        let mut message =
            format!("event names are lowercase `noun:verb`, such as \"plan:created\"; got {got:?}");
        if let Some(suggestion) = suggestion {
            message.push_str(&format!(": write {suggestion:?}"));
        }
        message
    }

    pub(crate) fn event_single_word(ty: &str, noun: &str) -> String {
        format!(
            "cannot derive a `noun:verb` name from `{ty}`: name the type like `{ty}Created` \
             or write `#[event(\"{noun}:created\")]`"
        )
    }

    pub(crate) fn event_underivable(ty: &str, derived: &str) -> String {
        format!(
            "cannot derive a `noun:verb` name from `{ty}` (it would be {derived:?}): \
             write the name yourself, such as `#[event(\"plan:created\")]`"
        )
    }

    pub(crate) fn event_set_variant_name(variant: &str, ty: &str, written: &str) -> String {
        format!(
            "variant `{variant}` must be named after its event type `{ty}`: write `{ty}({written})`"
        )
    }

    pub(crate) fn event_set_not_a_type(written: &str) -> String {
        format!(
            "a variant of an event enum holds a named event type, such as \
             `PlanCreated(PlanCreated)`; `{written}` is not one"
        )
    }

    pub(crate) fn event_set_duplicate(ty: &str) -> String {
        format!("`{ty}` is already in this event set: list each event type once")
    }

    pub(crate) fn event_set_same_name(set: &str, first: &str, second: &str) -> String {
        format!(
            "`{first}` and `{second}` in `{set}` are recorded under the same event name: \
             give each event type its own `noun:verb` name"
        )
    }

    // ---- #[handler] --------------------------------------------------------------------------

    pub(crate) const HANDLER_MISSING_EVENTS: &str =
        "name the workflow's event enum: `#[handler(MyEvents)]`";
    pub(crate) const HANDLER_ITEM: &str = "`#[handler(...)]` goes on an `impl` block of the \
         state type, or on an inline module of handler functions";
    pub(crate) const HANDLER_TRAIT_IMPL: &str = "`#[handler(...)]` goes on an inherent impl \
         block, `impl MyState { ... }`, and implements `Handler` for you: remove the trait";
    pub(crate) const HANDLER_GENERIC_IMPL: &str = "`#[handler(...)]` does not support generic \
         states: implement `openharness::Handler` by hand for this type";
    pub(crate) const HANDLER_MOD_NOT_INLINE: &str = "`#[handler(...)]` needs the module's \
         handlers in view: write the module inline, `mod handlers { ... }`";
    pub(crate) const HANDLER_MOD_EMPTY: &str = "this module has no handler functions: add \
         `fn on_event(state: &mut MyState, event: &MyEvent)` for each event";
    pub(crate) const HANDLER_ASYNC: &str =
        "handlers must be synchronous: remove `async`; do I/O in an agent or a tool";
    pub(crate) const HANDLER_UNSAFE: &str =
        "handlers must be safe functions: remove `unsafe` and keep the unsafe code inside";
    pub(crate) const HANDLER_GENERIC: &str = "handlers cannot be generic: each one handles one \
         concrete event type; remove the type and const parameters";
    pub(crate) const HANDLER_ABI: &str =
        "handlers are plain Rust functions: remove the `extern` ABI";
    pub(crate) const HANDLER_SHARED_SELF: &str =
        "handlers change the state: take `&mut self`, not `&self`";
    pub(crate) const HANDLER_OWNED_SELF: &str =
        "handlers change the state in place: take `&mut self`, not `self`";
    pub(crate) const HANDLER_NO_SELF: &str = "a handler takes `&mut self` and the event: \
         `fn on_event(&mut self, event: &MyEvent)`; helper functions go in another `impl` block";
    pub(crate) const HANDLER_ARITY: &str = "a handler takes exactly one event after `&mut self` \
         (and optionally `undo: &mut Undo<Self>`): `fn on_event(&mut self, event: &MyEvent)`; \
         helper methods go in another `impl` block";
    pub(crate) const HANDLER_FN_ARITY: &str = "a handler function takes the state and one \
         event (and optionally `undo: &mut Undo<MyState>`): \
         `fn on_event(state: &mut MyState, event: &MyEvent)`; helpers go in another module";
    pub(crate) const HANDLER_FN_STATE: &str = "a handler function takes the state first, as \
         `&mut MyState`: `fn on_event(state: &mut MyState, event: &MyEvent)`";
    pub(crate) const HANDLER_EVENT_NOT_NAMED: &str = "the event parameter must name one event \
         type of the workflow's event enum, such as `event: &PlanCreated`";

    pub(crate) fn handler_event_mut(ty: &str) -> String {
        format!("handlers read their event: take it as `&{ty}`, not `&mut {ty}`")
    }

    pub(crate) fn handler_event_by_value(ty: &str) -> String {
        format!("handlers read their event: take it as `&{ty}`")
    }

    pub(crate) fn handler_duplicate(event: &str, first: &str) -> String {
        format!("`{event}` already has a handler, `{first}`; one handler per event")
    }

    pub(crate) fn handler_state_mismatch(first_fn: &str, first: &str, this: &str) -> String {
        format!(
            "every handler in this module must take the same state: `{first_fn}` takes \
             `&mut {first}` but this one takes `&mut {this}`"
        )
    }

    pub(crate) fn handler_unknown_option(option: &str) -> String {
        format!(
            "unknown option `{option}`: `#[handler(MyEvents)]` takes only `partial`, as in \
             `#[handler(MyEvents, partial)]`"
        )
    }

    // ---- #[agent] ----------------------------------------------------------------------------

    pub(crate) const AGENT_MISSING_OUTPUT: &str =
        "agents need a structured output: add `output = YourType` to `#[agent(...)]`";
    pub(crate) const AGENT_MISSING_EMITS: &str = "declare the events the agent emits: \
         `emits = [EventType, ...]` (or `emits = []` if it emits none)";
    pub(crate) const AGENT_ITEM: &str = "`#[agent(...)]` goes on the agent's `impl` block, \
         the one with `fn prompt` and `fn on_output`";
    pub(crate) const AGENT_TRAIT_IMPL: &str = "`#[agent(...)]` goes on an inherent impl block, \
         `impl MyAgent { ... }`, and implements `Agent` for you: remove the trait";
    pub(crate) const AGENT_GENERIC_IMPL: &str = "`#[agent(...)]` does not support generic \
         agents: implement `openharness::Agent` by hand for this type";
    pub(crate) const AGENT_EMITS_LIST: &str =
        "`emits` takes a list of event types in brackets: `emits = [PlanCreated, TaskAdded]`";
    pub(crate) const AGENT_TOOLS_LIST: &str = "`tools` takes a list of tools in brackets, \
         each a value that implements `Tool`: `tools = [CurrentTime, lookup_order()]`";
    pub(crate) const AGENT_TOOLS_TWICE: &str = "the agent's tools are given twice, in \
         `tools = [...]` and in `fn tools`: keep one";
    pub(crate) const AGENT_TOOLS_ARITY: &str =
        "`tools` takes only `&self`: `fn tools(&self) -> Vec<Arc<dyn Tool>>`";
    pub(crate) const AGENT_TOOLS_RETURN: &str =
        "`tools` returns the agent's tools: `fn tools(&self) -> Vec<Arc<dyn Tool>>`";
    pub(crate) const AGENT_MODEL_TWICE: &str = "the agent's model is given twice, in \
         `model = \"...\"` and in `fn model`: keep one";
    pub(crate) const AGENT_MODEL_ARITY: &str =
        "`model` takes only `&self`: `fn model(&self) -> &str` (or `-> Option<&str>`)";
    pub(crate) const AGENT_MODEL_RETURN: &str =
        "`model` returns the model to ask for: `fn model(&self) -> &str` (or `-> Option<&str>`)";
    pub(crate) const AGENT_MAX_TURNS_ARITY: &str =
        "`max_turns` takes only `&self`: `fn max_turns(&self) -> u32`";
    pub(crate) const AGENT_NAME_STRING: &str =
        "`name` takes a string without spaces: `name = \"planner\"`";
    pub(crate) const AGENT_MODEL_STRING: &str =
        "`model` takes a non-empty string: `model = \"claude-sonnet-4-5\"`";
    pub(crate) const AGENT_REPLY_FIELD: &str = "`reply` names the output field that is the \
         chat reply: `reply = answer` (or its JSON name as a string, `reply = \"answerText\"`)";
    pub(crate) const AGENT_NO_TYPE_NAME: &str =
        "cannot derive an agent name from this type: add `name = \"my-agent\"` to `#[agent(...)]`";
    pub(crate) const AGENT_MISSING_PROMPT: &str =
        "an agent needs `fn prompt(&self, state: &State, trigger: &Event) -> String`";
    pub(crate) const AGENT_PROMPT_ARITY: &str = "`prompt` takes the state and the trigger \
         event: `fn prompt(&self, state: &State, trigger: &Event) -> String`";
    pub(crate) const AGENT_PROMPT_STATE: &str = "`prompt` reads the state: take it as `&State`, \
         as in `fn prompt(&self, state: &State, trigger: &Event) -> String`";
    pub(crate) const AGENT_PROMPT_TRIGGER: &str = "`prompt` reads the trigger event: take it \
         as `&Event`, as in `fn prompt(&self, state: &State, trigger: &Event) -> String`";
    pub(crate) const AGENT_ON_OUTPUT_ARITY: &str = "`on_output` takes the output and the \
         trigger event: `fn on_output(&self, output: Output, trigger: &Event) -> Emit`";
    pub(crate) const AGENT_ON_OUTPUT_BY_VALUE: &str = "`on_output` owns the output: take it by \
         value, as in `fn on_output(&self, output: Output, trigger: &Event) -> Emit`";
    pub(crate) const AGENT_ON_OUTPUT_TRIGGER: &str = "`on_output` reads the trigger event: take \
         it as `&Event`, as in `fn on_output(&self, output: Output, trigger: &Event) -> Emit`";
    pub(crate) const AGENT_SYSTEM_ARITY: &str = "`system` takes the state and the trigger \
         event: `fn system(&self, state: &State, trigger: &Event) -> Option<String>`";
    pub(crate) const AGENT_MESSAGES_ARITY: &str = "`messages` takes the state and the trigger \
         event: `fn messages(&self, state: &State, trigger: &Event) -> Vec<ChatMessage>`";
    pub(crate) const AGENT_IMAGES_ARITY: &str = "`images` takes the state and the trigger \
         event: `fn images(&self, state: &State, trigger: &Event) -> Vec<Image>`";
    pub(crate) const AGENT_REASONING_ARITY: &str = "`reasoning` takes the state and the trigger \
         event: `fn reasoning(&self, state: &State, trigger: &Event) -> Option<ReasoningEffort>`";
    pub(crate) const AGENT_WHEN_ARITY: &str =
        "`when` takes the state only: `fn when(&self, state: &State) -> bool`";
    pub(crate) const AGENT_WHEN_STATE: &str = "`when` reads the state: take it as `&State`, as in `fn when(&self, state: &State) -> bool`";

    pub(crate) fn agent_missing_on_output(output: &str) -> String {
        format!(
            "an agent needs `fn on_output(&self, output: {output}, trigger: &Event) -> Emit` \
             to turn its output into events"
        )
    }

    pub(crate) fn agent_async(method: &str) -> String {
        format!(
            "`{method}` must be synchronous: remove `async`; the runtime calls the model, \
             and tools do the I/O"
        )
    }

    pub(crate) fn agent_receiver(method: &str) -> String {
        format!("`{method}` takes `&self`: agents do not change while they run")
    }

    pub(crate) fn agent_generic(method: &str) -> String {
        format!("`{method}` cannot be generic: remove its type and const parameters")
    }

    pub(crate) fn agent_unsafe(method: &str) -> String {
        format!("`{method}` must be a safe function: remove `unsafe`")
    }

    pub(crate) fn agent_unknown_key(key: &str) -> String {
        format!(
            "unknown key `{key}`: `#[agent(...)]` takes `output`, `emits`, `tools`, `name`, \
             `model` and `reply`"
        )
    }

    pub(crate) fn agent_duplicate_key(key: &str) -> String {
        format!("`{key}` is given twice: keep one")
    }

    /// The `#[diagnostic::on_unimplemented]` message, label and note for an `on_output`
    /// whose return type is not in `emits` (`list` is the list as written, `[A, B]`);
    /// `{Self}` is the returned type.
    pub(crate) fn agent_not_in_emits(list: &str) -> [String; 3] {
        // `{` and `}` are the format string's own.
        let list = list.replace('{', "{{").replace('}', "}}");
        [
            format!(
                "`on_output` returns `{{Self}}`, which is not in this agent's `emits = {list}`"
            ),
            format!("not in `emits = {list}`"),
            "`on_output` returns `()`, `Emit` or one of the events in `emits`; if `{Self}` is \
             an event this agent emits, add it to `emits = [...]` in `#[agent(...)]`"
                .to_owned(),
        ]
    }

    /// The same for a `tools = [...]` entry that is not a tool.
    pub(crate) fn agent_not_a_tool() -> [String; 3] {
        [
            "`{Self}` is not a tool".to_owned(),
            "not a `Tool`".to_owned(),
            "each entry of `tools = [...]` is a value that implements `openharness::Tool`; \
             `FnTool::new(name, description, |args: Args| async move {{ ... }})` makes one \
             from an async function"
                .to_owned(),
        ]
    }

    pub(crate) fn agent_duplicate_emit(ty: &str) -> String {
        format!("`{ty}` is listed twice in `emits`: list each event once")
    }
}
