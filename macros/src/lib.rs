//! Macros for Open Harness: `#[event]`, `#[handler]` and `#[agent(output = T)]`.
//!
//! Use them through the `openharness` crate (`use openharness::prelude::*;`): the code they
//! generate names `::openharness::...` paths, so a workflow depends on that one crate. Each
//! also takes `crate = path` for crates that depend on `openharness-core` instead (the
//! platform's chat workflow), as `#[serde(crate = "...")]` does for serde.
//!
//! Each macro parses its input, checks it (reporting every problem at once, each on the token
//! at fault, in a sentence that names the fix), then generates the trait implementation. Set
//! `OPENHARNESS_MACROS_DEBUG=1` while building to print every expansion to stderr. Misuse is
//! tested as compile errors in `tests/ui/` (trybuild).
//!
//! # Modules
//!
//! This file holds the three entry points and their docs; each macro's work is in its module.
//!
//! - `event`: `#[event]`, one typed event on a struct, the workflow's event set on an enum.
//! - `handler`: `#[handler(Events)]`, `impl Handler` as one exhaustive `match`.
//! - `agent` (`agent/`): `#[agent(output = T)]`, `impl Agent`; `check` checks the methods.
//! - `attr`: typed parsing of the three macros' attribute arguments, `crate = path` included.
//! - `names`: names derived from Rust identifiers (`PlanCreated` is `plan:created`).
//! - `errors`: error collection and the user-facing messages.

mod agent;
mod attr;
mod code;
mod errors;
mod event;
mod handler;
mod names;

use proc_macro::TokenStream;

/// Makes a struct a typed event, or an enum the set of events a workflow handles.
///
/// # On a struct: one event
///
/// Adds serde's `Serialize` and `Deserialize` and schemars' `JsonSchema` derives (do not derive
/// them yourself; add `Debug`, `Clone` and the like as usual, and serde and schemars attributes
/// such as `#[serde(rename_all = "camelCase")]` work) and implements `openharness::Event`.
///
/// The event's name is `noun:verb`, lowercase. Without an argument it is derived from the type
/// name: the last CamelCase word is the verb, the words before it are the noun
/// (`PlanCreated` is `plan:created`, `ToolCallRequested` is `tool_call:requested`). Give it
/// explicitly as `#[event("noun:verb")]`; it is checked at compile time against
/// `^[a-z][a-z0-9_]*:[a-z][a-z0-9_]*$`.
///
/// ```
/// use openharness::prelude::*;
///
/// #[event]
/// #[derive(Debug, Clone, PartialEq)]
/// pub struct PlanCreated {
///     pub tasks: Vec<String>,
/// }
///
/// #[event("task:done")]
/// #[derive(Debug, Clone)]
/// pub struct TaskCompleted(pub u32);
///
/// assert_eq!(PlanCreated::NAME, "plan:created");
/// assert_eq!(TaskCompleted::NAME, "task:done");
/// ```
///
/// Names are checked, and a single-word type name has no verb:
///
/// ```compile_fail
/// use openharness::prelude::*;
/// #[event("PlanCreated")] // error: event names are lowercase `noun:verb` ...: write "plan:created"
/// struct PlanCreated;
/// ```
///
/// ```compile_fail
/// use openharness::prelude::*;
/// #[event] // error: cannot derive a `noun:verb` name from `Plan` ...
/// struct Plan;
/// ```
///
/// Events are concrete values: generic structs and unions are rejected.
///
/// # On an enum: the workflow's event set
///
/// Each variant names an event type in scope, either as a unit variant (`PlanCreated`) or as a
/// one-field tuple variant named after the type (`PlanCreated(events::PlanCreated)`). The
/// enum is generated with tuple variants (your attributes and derives are kept), with
/// `From<Event>` for each variant and `openharness::EventSet`, which decodes a recorded
/// event by name (names outside the set decode as `Decoded::Unknown`). Two event types in
/// one set may not share a name: that is a compile-time error. (The enum also gets a hidden
/// associated function, `__openharness_event`, used by the generated code.)
///
/// ```
/// use openharness::prelude::*;
/// use openharness::adapter::Decoded;
///
/// #[event]
/// #[derive(Debug, Clone, PartialEq)]
/// pub struct PlanCreated { pub tasks: Vec<String> }
///
/// #[event]
/// #[derive(Debug, Clone, PartialEq)]
/// pub enum PlannerEvent {
///     UserInput,
///     PlanCreated,
/// }
///
/// let event: PlannerEvent = PlanCreated { tasks: vec!["pack".into()] }.into();
/// assert_eq!(event.name(), "plan:created");
/// assert_eq!(PlannerEvent::NAMES, ["user:input", "plan:created"]);
/// let payload = serde_json::json!({ "tasks": ["pack"] });
/// assert_eq!(PlannerEvent::decode("plan:created", &payload).unwrap(), Decoded::Known(event));
/// assert_eq!(PlannerEvent::decode("plan:forgotten", &payload).unwrap(), Decoded::Unknown);
/// ```
///
/// A variant must be named after its type, must hold an event, and may appear only once:
///
/// ```compile_fail
/// use openharness::prelude::*;
/// #[event]
/// pub struct PlanCreated;
/// #[event]
/// pub enum PlannerEvent {
///     Plan(PlanCreated), // error: variant `Plan` must be named after its event type `PlanCreated`
/// }
/// ```
///
/// # Versions: `version = N` and upcasts
///
/// An event's shape has a version, recorded in each envelope (`Envelope::version`, 1 unless
/// declared). When a field is renamed, changes type or moves to an event of its own, keep the
/// old shape as a type recorded under the same name (`#[event("noun:verb", version = 1)]`),
/// give today's type the next version, and say how one becomes the other with `Upcast`.
/// Reading a recording upcasts its older events; the log itself is never rewritten.
///
/// ```
/// use openharness::prelude::*;
/// use openharness::adapter::Decoded;
///
/// /// `order:placed` as version 1 recorded it: the address was part of the order.
/// #[event("order:placed", version = 1)]
/// #[derive(Debug, Clone)]
/// pub struct OrderPlacedV1 { pub customer: String, pub address: String }
///
/// #[event(version = 2)]
/// #[derive(Debug, Clone, PartialEq)]
/// pub struct OrderPlaced { pub customer: String }
///
/// #[event]
/// #[derive(Debug, Clone, PartialEq)]
/// pub struct AddressGiven { pub address: String }
///
/// // Version 1 splits into today's order and the address, applied in that order.
/// impl Upcast for OrderPlaced {
///     type Previous = OrderPlacedV1;
///     fn upcast(old: OrderPlacedV1) -> Upcasted<Self> {
///         Upcasted::from(OrderPlaced { customer: old.customer }).and(AddressGiven { address: old.address })
///     }
/// }
///
/// #[event]
/// #[derive(Debug, Clone, PartialEq)]
/// pub enum Orders { OrderPlaced, AddressGiven }
///
/// let old = serde_json::json!({ "customer": "ada", "address": "1 Loop Rd" });
/// assert_eq!(
///     Orders::decode_versioned("order:placed", 1, &old).unwrap(),
///     Decoded::Several(vec![
///         Orders::OrderPlaced(OrderPlaced { customer: "ada".into() }),
///         Orders::AddressGiven(AddressGiven { address: "1 Loop Rd".into() }),
///     ]),
/// );
/// // A version newer than the code is refused, with what to do.
/// let err = Orders::decode_versioned("order:placed", 3, &old).unwrap_err();
/// assert!(err.to_string().contains("knows it only up to version 2"), "{err}");
/// assert_eq!(OrderPlaced::VERSION, 2);
/// ```
///
/// A version above 1 without a path from the previous one does not compile:
///
/// ```compile_fail
/// use openharness::prelude::*;
/// #[event(version = 2)] // error: `PaymentTaken` has a version above 1 but no path from the previous one
/// pub struct PaymentTaken { pub amount: f64 }
/// ```
///
/// Nor does an upcast from a version other than the one just below, or from an event recorded
/// under another name:
///
/// ```compile_fail
/// use openharness::prelude::*;
/// #[event("payment:taken", version = 1)]
/// pub struct PaymentTakenV1 { pub cents: u64 }
/// #[event(version = 3)] // error: `PaymentTaken` is version 3, so its `Upcast::Previous` must be version 2
/// pub struct PaymentTaken { pub amount: f64 }
/// impl Upcast for PaymentTaken {
///     type Previous = PaymentTakenV1;
///     fn upcast(old: PaymentTakenV1) -> Upcasted<Self> {
///         PaymentTaken { amount: old.cents as f64 / 100.0 }.into()
///     }
/// }
/// # fn main() { let _ = PaymentTaken::read_recorded(1, &serde_json::Value::Null); }
/// ```
///
/// # Where Open Harness is: `crate = path`
///
/// The generated code names Open Harness as `::openharness`, the facade. A crate that depends on
/// `openharness-core` instead (the framework's own crates, or a library that wants the smallest
/// dependency) says where it is, as `#[serde(crate = "...")]` does for serde; all three macros
/// take it: `#[event(crate = openharness_core)]`, `#[event("noun:verb", crate =
/// openharness_core)]`, `#[handler(Events, crate = openharness_core)]` and `#[agent(output = T,
/// emits = [E], crate = openharness_core)]`. The platform's agent-chat workflow
/// (`openharness-platform`'s `chat.rs`) is written this way.
#[proc_macro_attribute]
pub fn event(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand_with("event", attr, item, event::expand)
}

/// Implements `openharness::Handler` for a state from its handler methods.
///
/// Put it on an `impl` block of the state type and name the workflow's event enum. Every `fn`
/// in the block is a handler: `fn name(&mut self, event: &SomeEvent) -> R`, where
/// `SomeEvent` is one of the enum's events and `R` is `()`, an event, or `Emit` (anything
/// `IntoEmit`). Handlers are pure and synchronous: no `async`, no I/O.
///
/// ```
/// use openharness::prelude::*;
///
/// #[event]
/// #[derive(Debug, Clone)]
/// pub struct TaskAdded { pub title: String }
///
/// #[event]
/// #[derive(Debug, Clone)]
/// pub struct TaskCompleted { pub index: usize }
///
/// #[event]
/// #[derive(Debug, Clone)]
/// pub struct AllDone;
///
/// #[event]
/// #[derive(Debug, Clone)]
/// pub enum TodoEvent { TaskAdded, TaskCompleted, AllDone }
///
/// #[derive(Debug, Clone, Default)]
/// pub struct Todo { tasks: Vec<String>, done: usize, finished: bool }
///
/// #[handler(TodoEvent)]
/// impl Todo {
///     fn add(&mut self, event: &TaskAdded) {
///         self.tasks.push(event.title.clone());
///     }
///     fn complete(&mut self, _: &TaskCompleted) -> Emit {
///         self.done += 1;
///         if self.done == self.tasks.len() { Emit::one(AllDone) } else { Emit::none() }
///     }
///     fn finish(&mut self, _: &AllDone) {
///         self.finished = true;
///     }
/// }
///
/// let mut todo = Todo::default();
/// assert!(todo.apply(&TaskAdded { title: "pack".into() }.into()).is_empty());
/// assert_eq!(todo.apply(&TaskCompleted { index: 0 }.into()).len(), 1);
/// ```
///
/// Every event of the enum needs a handler: one without is an error that names it, pointing at
/// the attribute, and says how to add one ("`Todo` has no handler for the event
/// `TaskCompleted`"). The generated `apply` is one `match` over the enum, with no wildcard.
/// Write `#[handler(TodoEvent, partial)]` to ignore events without a handler instead.
///
/// ```compile_fail
/// use openharness::prelude::*;
/// #[event] #[derive(Clone)] pub struct TaskAdded;
/// #[event] #[derive(Clone)] pub struct TaskCompleted;
/// #[event] pub enum TodoEvent { TaskAdded, TaskCompleted }
/// #[derive(Clone)] pub struct Todo;
/// #[handler(TodoEvent)] // error: `Todo` has no handler for the event `TaskCompleted`
/// impl Todo {
///     fn add(&mut self, _: &TaskAdded) {}
/// }
/// ```
///
/// Signatures are checked: `&mut self`, exactly one event taken by shared reference, no
/// `async`, no generics, one handler per event.
///
/// ```compile_fail
/// use openharness::prelude::*;
/// #[event] #[derive(Clone)] pub struct TaskAdded;
/// #[event] pub enum TodoEvent { TaskAdded }
/// #[derive(Clone)] pub struct Todo;
/// #[handler(TodoEvent)]
/// impl Todo {
///     async fn add(&mut self, _: &TaskAdded) {} // error: handlers must be synchronous: remove `async` ...
/// }
/// ```
///
/// The attribute also goes on an inline module of free functions taking
/// `(state: &mut State, event: &SomeEvent)`; every function must take the same state type,
/// and the `impl Handler` is generated inside the module:
///
/// ```
/// use openharness::prelude::*;
///
/// #[event]
/// #[derive(Debug, Clone)]
/// pub struct ClockTicked;
///
/// #[event]
/// #[derive(Debug, Clone)]
/// pub enum ClockEvent { ClockTicked }
///
/// #[derive(Debug, Clone, Default)]
/// pub struct Clock { ticks: u64 }
///
/// #[handler(ClockEvent)]
/// mod clock {
///     use super::*;
///     fn tick(clock: &mut Clock, _: &ClockTicked) {
///         clock.ticks += 1;
///     }
/// }
///
/// # fn main() {
/// let mut clock = Clock::default();
/// clock.apply(&ClockTicked.into());
/// assert_eq!(clock.ticks, 1);
/// # }
/// ```
///
/// A handler may take a third parameter, `undo: &mut Undo<Self>`, and record how to take its
/// change back. A tape then steps backwards over its events in the time the change takes,
/// instead of copying the state (which, for plain `Vec`s and `HashMap`s, costs as much as the
/// whole state at every step). Live runs pass an `Undo` that records nothing. Handlers without
/// it still work; the tape steps back over their events the slower way.
///
/// ```
/// use openharness::prelude::*;
///
/// #[event]
/// #[derive(Debug, Clone)]
/// pub struct TaskAdded { pub title: String }
///
/// #[event]
/// #[derive(Debug, Clone)]
/// pub struct TasksCleared;
///
/// #[event]
/// #[derive(Debug, Clone)]
/// pub enum TodoEvent { TaskAdded, TasksCleared }
///
/// #[derive(Debug, Clone, Default, PartialEq)]
/// pub struct Todo { tasks: Vec<String> }
///
/// #[handler(TodoEvent)]
/// impl Todo {
///     fn add(&mut self, event: &TaskAdded, undo: &mut Undo<Self>) {
///         self.tasks.push(event.title.clone());
///         undo.record(|todo| {
///             todo.tasks.pop();
///         });
///     }
///     fn clear(&mut self, _: &TasksCleared, undo: &mut Undo<Self>) {
///         let before = std::mem::take(&mut self.tasks);
///         undo.record(move |todo| todo.tasks = before);
///     }
/// }
///
/// let mut todo = Todo::default();
/// let mut undo = Undo::recording();
/// undo.begin_event();
/// todo.apply_undoable(&TaskAdded { title: "pack".into() }.into(), &mut undo);
/// undo.begin_event();
/// todo.apply_undoable(&TasksCleared.into(), &mut undo);
/// assert!(todo.tasks.is_empty());
/// undo.revert(&mut todo);
/// assert_eq!(todo.tasks, ["pack"]);
/// undo.revert(&mut todo);
/// assert_eq!(todo, Todo::default());
/// ```
#[proc_macro_attribute]
pub fn handler(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand_with("handler", attr, item, handler::expand)
}

/// Implements `openharness::Agent` from an `impl` block with `prompt` and `on_output`.
///
/// Arguments (`output` and `emits` are required):
///
/// - `output = T`: the structured output the model must produce (`T: Deserialize + JsonSchema`);
/// - `emits = [A, B, ...]`: the event types `on_output` may emit;
/// - `tools = [t1, t2, ...]`: the tools the model may call, each a value that implements
///   `openharness::Tool` (an `FnTool`, a unit struct, a function call; `self` is in scope);
/// - `name = "planner"`: the agent's name (default: the type name in kebab-case,
///   `TaskExecutor` is `task-executor`);
/// - `model = "claude-sonnet-4-5"`: the model to ask for (default: the provider's);
/// - `reply = field` (or `reply = "jsonName"`): the field of the output that is the agent's chat
///   reply, the text chat clients show and stream as the model writes it (`/api/chat`,
///   `?shape=ui`, the platform's messages); without it the reply is inferred from the output
///   (see `openharness::Agent::reply`).
///
/// Methods the block must have (other methods are left alone):
///
/// - `fn prompt(&self, state: &State, trigger: &Trigger) -> String`: the prompt; its parameter
///   types give the agent's state type and the event that triggers it;
/// - `fn on_output(&self, output: T, trigger: &Trigger) -> R`, `R` being `()`, one of the
///   events in `emits` or `Emit` (the trigger parameter may be left out);
/// - optionally `fn when(&self, state: &State) -> bool`: whether to activate;
/// - optionally `fn model(&self) -> &str` (or `-> Option<&str>`), instead of `model = "..."`,
///   for a model chosen at run time (a field of the agent, say);
/// - optionally `fn tools(&self) -> Vec<Arc<dyn Tool>>`, instead of `tools = [...]`, for tools
///   built some other way (shared `Arc`s, a list decided at run time);
/// - optionally `fn max_turns(&self) -> u32`: how many model turns one call may take in the
///   tool loop (default `openharness::adapter::DEFAULT_MAX_TURNS`);
/// - optionally `fn system(&self, state: &State, trigger: &Trigger) -> Option<String>` (or
///   `-> String`): the system prompt;
/// - optionally `fn messages(&self, state: &State, trigger: &Trigger) -> Vec<ChatMessage>`: the
///   conversation sent before the prompt, each message with its role (an agent that sends its
///   whole conversation this way may return an empty prompt);
/// - optionally `fn images(&self, state: &State, trigger: &Trigger) -> Vec<Image>` and
///   `fn reasoning(&self, state: &State, trigger: &Trigger) -> Option<ReasoningEffort>`: the
///   prompt's images and the reasoning effort to ask for.
///
/// An output of type `String` is asked for as plain text: the model's final text is the output.
///
/// The output type derives `serde::Deserialize` and `schemars::JsonSchema`; with
/// `use openharness::schemars;` in scope the derive uses the schemars Open Harness checks
/// outputs with, so no version of it has to be kept in step.
///
/// ```
/// use openharness::prelude::*;
/// use openharness::schemars;
///
/// #[event]
/// #[derive(Debug, Clone)]
/// pub struct PlanCreated { pub tasks: Vec<String> }
///
/// #[event]
/// #[derive(Debug, Clone)]
/// pub enum PlannerEvent { UserInput, PlanCreated }
///
/// #[derive(Debug, Clone, Default)]
/// pub struct PlanState { goal: Option<String>, tasks: Vec<String> }
///
/// #[handler(PlannerEvent)]
/// impl PlanState {
///     fn input(&mut self, e: &UserInput) { self.goal = Some(e.text.clone()); }
///     fn plan(&mut self, e: &PlanCreated) { self.tasks = e.tasks.clone(); }
/// }
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// pub struct Plan { tasks: Vec<String> }
///
/// pub struct Planner;
///
/// #[agent(output = Plan, emits = [PlanCreated], model = "claude-sonnet-4-5")]
/// impl Planner {
///     fn prompt(&self, _state: &PlanState, input: &UserInput) -> String {
///         format!("Break this goal into tasks: {}", input.text)
///     }
///     fn on_output(&self, plan: Plan, _input: &UserInput) -> PlanCreated {
///         PlanCreated { tasks: plan.tasks }
///     }
///     fn when(&self, state: &PlanState) -> bool {
///         state.tasks.is_empty()
///     }
/// }
///
/// assert_eq!(Planner::NAME, "planner");
/// assert_eq!(Planner::EMITS, ["plan:created"]);
/// ```
///
/// # Tools
///
/// An agent offers its model tools with `tools = [...]`. `FnTool::new` makes a tool from an
/// async function, with the argument schema derived from the argument type; implement
/// `openharness::Tool` for anything else. The runtime runs the tool loop: the model calls a
/// tool, the tool runs, its result (recorded as `tool:result`) goes back to the model, until
/// the model answers with its output.
///
/// ```
/// use openharness::prelude::*;
/// use openharness::provider::tools::CurrentTime;
/// use openharness::{FnTool, schemars};
///
/// #[event]
/// #[derive(Debug, Clone)]
/// pub struct ReplySent { pub text: String }
///
/// #[event]
/// pub enum SupportEvent { UserInput, ReplySent }
///
/// #[derive(Debug, Clone, Default)]
/// pub struct Desk;
///
/// #[handler(SupportEvent, partial)]
/// impl Desk {}
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// pub struct Reply { text: String }
///
/// /// Arguments of `lookup_order`; the doc comments are the schema's descriptions.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// pub struct OrderId {
///     /// The order's id, such as `A-17`.
///     order: String,
/// }
///
/// fn lookup_order() -> FnTool<OrderId> {
///     FnTool::new("lookup_order", "Finds an order by its id.", |args: OrderId| async move {
///         // A real lookup goes here; an `Err` is shown to the model as the tool's error.
///         Ok::<_, String>(serde_json::json!({ "order": args.order, "status": "shipped" }))
///     })
/// }
///
/// pub struct Support;
///
/// #[agent(output = Reply, emits = [ReplySent], tools = [lookup_order(), CurrentTime])]
/// impl Support {
///     fn prompt(&self, _desk: &Desk, input: &UserInput) -> String {
///         format!("Answer the customer, looking up their order: {}", input.text)
///     }
///     fn on_output(&self, reply: Reply) -> ReplySent {
///         ReplySent { text: reply.text }
///     }
///     fn max_turns(&self) -> u32 {
///         4
///     }
/// }
///
/// let names: Vec<String> = Support.tools().iter().map(|t| t.name().to_owned()).collect();
/// assert_eq!(names, ["lookup_order", "current_time"]);
/// assert_eq!(Support.max_turns(), 4);
/// ```
///
/// Each entry must be a tool, and the tools are given in one place, `tools = [...]` or
/// `fn tools`:
///
/// ```compile_fail,E0277
/// use openharness::prelude::*;
/// # #[event] #[derive(Clone)] pub struct ReplySent;
/// # #[event] pub enum E { UserInput, ReplySent }
/// # #[derive(Clone)] pub struct S;
/// # #[handler(E, partial)] impl S {}
/// pub struct Weather;
/// pub struct Support;
/// #[agent(output = String, emits = [ReplySent], tools = [Weather])] // error: `Weather` is not a tool
/// impl Support {
///     fn prompt(&self, _: &S, input: &UserInput) -> String { input.text.clone() }
///     fn on_output(&self, _: String) -> ReplySent { ReplySent }
/// }
/// ```
///
/// # What `on_output` emits is checked at compile time
///
/// An `on_output` that returns an event returns one listed in `emits`, or the agent does not
/// compile. An `on_output` returning `Emit` (several events, or a choice of them) is checked
/// when it runs: an event outside `emits` is refused and recorded as an error.
///
/// ```compile_fail,E0277
/// use openharness::prelude::*;
/// # #[event] #[derive(Clone)] pub struct PlanCreated;
/// # #[event] #[derive(Clone)] pub struct PlanDropped;
/// # #[event] pub enum E { UserInput, PlanCreated, PlanDropped }
/// # #[derive(Clone)] pub struct S;
/// # #[handler(E, partial)] impl S {}
/// pub struct Planner;
/// #[agent(output = String, emits = [PlanCreated])]
/// impl Planner {
///     fn prompt(&self, _: &S, input: &UserInput) -> String { input.text.clone() }
///     // error: `on_output` returns `PlanDropped`, which is not in this agent's `emits = [PlanCreated]`
///     fn on_output(&self, _: String) -> PlanDropped { PlanDropped }
/// }
/// ```
///
/// The output type is mandatory:
///
/// ```compile_fail
/// use openharness::prelude::*;
/// # #[event] #[derive(Clone)] pub struct TaskDone;
/// # #[event] pub enum E { UserInput, TaskDone }
/// # #[derive(Clone)] pub struct S;
/// # #[handler(E, partial)] impl S {}
/// pub struct Planner;
/// #[agent(emits = [TaskDone])] // error: agents need a structured output: add `output = YourType` ...
/// impl Planner {
///     fn prompt(&self, _: &S, input: &UserInput) -> String { input.text.clone() }
///     fn on_output(&self, _: String, _: &UserInput) -> TaskDone { TaskDone }
/// }
/// ```
#[proc_macro_attribute]
pub fn agent(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand_with("agent", attr, item, agent::expand)
}

type Expand =
    fn(proc_macro2::TokenStream, proc_macro2::TokenStream) -> syn::Result<proc_macro2::TokenStream>;

/// Runs one macro. On error the item is emitted unchanged next to the errors, so that the
/// rest of the program still sees its name and the user sees only the errors that matter.
fn expand_with(
    macro_name: &str,
    attr: TokenStream,
    item: TokenStream,
    expand: Expand,
) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let expanded = match expand(attr.into(), item.clone()) {
        Ok(expanded) => expanded,
        Err(err) => {
            let err = err.into_compile_error();
            quote::quote! { #item #err }
        }
    };
    if std::env::var_os("OPENHARNESS_MACROS_DEBUG").is_some() {
        eprintln!("// #[{macro_name}] expands to:\n{expanded}\n");
    }
    expanded.into()
}
