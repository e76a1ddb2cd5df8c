//! What the macros generate, used the way a workflow uses them: through `openharness` only.
#![allow(clippy::unwrap_used)]

use openharness::adapter::{Decoded, Fold};
use openharness::prelude::*;
use serde_json::json;

mod events {
    //! Events in another module, named by path in the event set.
    use openharness::prelude::*;

    #[event]
    #[derive(Debug, Clone, PartialEq)]
    pub(crate) struct TaskCompleted {
        pub(crate) index: usize,
        pub(crate) summary: String,
    }
}

use events::TaskCompleted;

#[event]
#[derive(Debug, Clone, PartialEq)]
struct PlanCreated {
    tasks: Vec<String>,
}

#[event("task:started")]
#[derive(Debug, Clone, PartialEq)]
struct TaskBegun(usize);

#[event]
#[derive(Debug, Clone, PartialEq)]
struct ToolCallRequested;

#[event]
#[derive(Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
struct ReviewFinished {
    all_passed: bool,
    #[serde(default)]
    notes: Option<String>,
}

/// The planner's event set: unit variants, a path variant and a tuple variant.
#[event]
#[derive(Debug, Clone, PartialEq)]
enum PlannerEvent {
    UserInput,
    PlanCreated,
    TaskBegun(TaskBegun),
    TaskCompleted(events::TaskCompleted),
    ReviewFinished,
}

#[test]
fn struct_events_have_derived_and_explicit_names() {
    assert_eq!(PlanCreated::NAME, "plan:created");
    assert_eq!(TaskCompleted::NAME, "task:completed");
    assert_eq!(ToolCallRequested::NAME, "tool_call:requested");
    assert_eq!(TaskBegun::NAME, "task:started");
    assert_eq!(ReviewFinished::NAME, "review:finished");
}

#[test]
fn struct_events_serialize_with_their_serde_attributes() {
    let review = ReviewFinished {
        all_passed: true,
        notes: None,
    };
    let json = serde_json::to_value(&review).unwrap();
    assert_eq!(json, json!({ "allPassed": true, "notes": null }));
    let back: ReviewFinished = serde_json::from_value(json!({ "allPassed": false })).unwrap();
    assert!(!back.all_passed);
    assert_eq!(serde_json::to_value(TaskBegun(3)).unwrap(), json!(3));
    assert_eq!(
        serde_json::to_value(ToolCallRequested).unwrap(),
        json!(null)
    );
}

#[test]
fn struct_events_have_a_json_schema() {
    let schema = schemars::schema_for!(ReviewFinished).to_value();
    assert!(schema["properties"]["allPassed"].is_object(), "{schema}");
}

#[test]
fn event_set_lists_names_in_declaration_order() {
    assert_eq!(
        PlannerEvent::NAMES,
        [
            "user:input",
            "plan:created",
            "task:started",
            "task:completed",
            "review:finished"
        ]
    );
    assert!(PlannerEvent::contains("plan:created"));
    assert!(!PlannerEvent::contains("workflow:started"));
}

#[test]
fn event_set_converts_from_each_event_and_names_it() {
    let plan: PlannerEvent = PlanCreated {
        tasks: vec!["pack".into()],
    }
    .into();
    assert_eq!(plan.name(), "plan:created");
    let input = PlannerEvent::from(UserInput::new("go"));
    assert_eq!(input.name(), "user:input");
    assert!(matches!(
        PlannerEvent::from(TaskBegun(1)),
        PlannerEvent::TaskBegun(TaskBegun(1))
    ));
}

#[test]
fn event_set_decodes_known_names() {
    let decoded =
        PlannerEvent::decode("task:completed", &json!({ "index": 2, "summary": "done" })).unwrap();
    assert_eq!(
        decoded,
        Decoded::Known(PlannerEvent::TaskCompleted(TaskCompleted {
            index: 2,
            summary: "done".into()
        }))
    );
    let decoded = PlannerEvent::decode("task:started", &json!(7)).unwrap();
    assert_eq!(
        decoded,
        Decoded::Known(PlannerEvent::TaskBegun(TaskBegun(7)))
    );
}

#[test]
fn event_set_skips_unknown_names() {
    let decoded = PlannerEvent::decode("plan:abandoned", &json!({})).unwrap();
    assert_eq!(decoded, Decoded::Unknown);
    let decoded = PlannerEvent::decode("workflow:started", &json!({ "workflow": "x" })).unwrap();
    assert_eq!(decoded, Decoded::Unknown);
}

#[test]
fn event_set_rejects_a_bad_payload_for_a_known_name() {
    let err = PlannerEvent::decode("plan:created", &json!({ "tasks": 3 })).unwrap_err();
    assert!(err.to_string().contains("invalid type"), "{err}");
}

#[test]
fn event_set_payloads_round_trip() {
    let events = [
        PlannerEvent::from(UserInput::new("plan")),
        PlanCreated {
            tasks: vec!["a".into(), "b".into()],
        }
        .into(),
        TaskBegun(0).into(),
        TaskCompleted {
            index: 0,
            summary: "ok".into(),
        }
        .into(),
        ReviewFinished {
            all_passed: true,
            notes: Some("fine".into()),
        }
        .into(),
    ];
    for event in events {
        let payload = event.to_payload().unwrap();
        let back = PlannerEvent::decode(event.name(), &payload).unwrap();
        assert_eq!(back, Decoded::Known(event));
    }
}

// ---- handlers -------------------------------------------------------------------------------

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct PlanState {
    goal: Option<String>,
    tasks: Vec<String>,
    started: Vec<usize>,
    completed: Vec<usize>,
    reviewed: bool,
}

#[handler(PlannerEvent)]
impl PlanState {
    fn on_input(&mut self, input: &UserInput) {
        self.goal = Some(input.text.clone());
    }

    fn on_plan(&mut self, plan: &PlanCreated) -> Emit {
        self.tasks = plan.tasks.clone();
        plan.tasks
            .iter()
            .enumerate()
            .map(|(index, _)| TaskBegun(index))
            .collect()
    }

    fn on_begun(&mut self, begun: &TaskBegun) {
        self.started.push(begun.0);
    }

    fn on_done(&mut self, done: &events::TaskCompleted) -> Emit {
        self.completed.push(done.index);
        if self.completed.len() == self.tasks.len() {
            Emit::one(ReviewFinished {
                all_passed: true,
                notes: None,
            })
        } else {
            Emit::none()
        }
    }

    // An explicit `-> ()` is a unit handler too.
    #[allow(clippy::unused_unit)]
    fn on_review(&mut self, _: &ReviewFinished) -> () {
        self.reviewed = true;
    }
}

fn envelope<E: Event>(event: &E) -> Envelope {
    Envelope::typed(event, None).unwrap()
}

#[test]
fn handler_impl_block_folds_a_log() {
    let log = vec![
        envelope(&UserInput::new("ship it")),
        envelope(&PlanCreated {
            tasks: vec!["build".into(), "test".into()],
        }),
        envelope(&TaskBegun(0)),
        envelope(&TaskBegun(1)),
        envelope(&TaskCompleted {
            index: 0,
            summary: "built".into(),
        }),
        envelope(&TaskCompleted {
            index: 1,
            summary: "tested".into(),
        }),
        envelope(&ReviewFinished {
            all_passed: true,
            notes: None,
        }),
    ];
    let mut fold = Fold::new(PlanState::default());
    let mut emitted = Vec::new();
    for event in &log {
        if let openharness::adapter::Applied::Handled(emit) = fold.apply(event, &log) {
            emitted.extend(emit.into_pending().into_iter().map(|p| p.name));
        }
    }
    let state = fold.state();
    assert_eq!(state.goal.as_deref(), Some("ship it"));
    assert_eq!(state.tasks, ["build", "test"]);
    assert_eq!(state.started, [0, 1]);
    assert_eq!(state.completed, [0, 1]);
    assert!(state.reviewed);
    assert_eq!(emitted, ["task:started", "task:started", "review:finished"]);
}

#[test]
fn handler_returns_the_emitted_events() {
    let mut state = PlanState::default();
    let emit = state.apply(
        &PlanCreated {
            tasks: vec!["a".into()],
        }
        .into(),
    );
    assert_eq!(emit.len(), 1);
    assert_eq!(emit.pending()[0].name, "task:started");
    assert_eq!(emit.pending()[0].payload, json!(0));
}

/// A partial handler: events without a handler are ignored.
#[derive(Debug, Clone, Default)]
struct TaskCounter {
    completed: usize,
}

#[handler(PlannerEvent, partial)]
impl TaskCounter {
    fn count(&mut self, _: &TaskCompleted) {
        self.completed += 1;
    }
}

#[test]
fn partial_handler_ignores_events_without_a_handler() {
    let mut counter = TaskCounter::default();
    assert!(counter.apply(&TaskBegun(0).into()).is_empty());
    assert!(
        counter
            .apply(&PlanCreated { tasks: vec![] }.into())
            .is_empty()
    );
    counter.apply(
        &TaskCompleted {
            index: 0,
            summary: String::new(),
        }
        .into(),
    );
    assert_eq!(counter.completed, 1);
    // Which events it has a handler for: a fold skips the others without calling `apply`.
    assert!(!TaskCounter::handles(&TaskBegun(0).into()));
    assert!(TaskCounter::handles(
        &TaskCompleted {
            index: 0,
            summary: String::new(),
        }
        .into()
    ));
}

/// A partial handler that happens to handle everything still compiles cleanly.
#[event("pinged:pinged")]
#[derive(Debug, Clone)]
struct Pinged;

#[event]
#[derive(Debug, Clone)]
enum PingEvent {
    Pinged,
}

#[derive(Debug, Clone, Default)]
struct Pings(u32);

#[handler(PingEvent, partial)]
impl Pings {
    fn ping(&mut self, _: &Pinged) -> Pinged {
        self.0 += 1;
        Pinged
    }
}

#[test]
fn partial_handler_covering_everything_works() {
    let mut pings = Pings::default();
    let emit = pings.apply(&Pinged.into());
    assert_eq!(pings.0, 1);
    assert_eq!(emit.pending()[0].name, "pinged:pinged");
    assert!(Pings::handles(&Pinged.into()));
}

/// A module of handler functions.
#[derive(Debug, Clone, Default)]
struct Journal {
    lines: Vec<String>,
}

#[handler(PlannerEvent)]
mod journal {
    use super::*;

    fn input(journal: &mut Journal, input: &UserInput) {
        journal.lines.push(format!("goal: {}", input.text));
    }

    fn plan(journal: &mut Journal, plan: &PlanCreated) {
        journal.lines.push(format!("{} tasks", plan.tasks.len()));
    }

    fn begun(journal: &mut Journal, begun: &TaskBegun) {
        journal.lines.push(format!("started {}", begun.0));
    }

    fn done(journal: &mut Journal, done: &TaskCompleted) -> Emit {
        journal.lines.push(format!("done {}", done.index));
        Emit::none()
    }

    fn review(journal: &mut Journal, _: &ReviewFinished) {
        journal.lines.push("reviewed".into());
    }

    /// Other items in the module are left alone.
    #[allow(dead_code)]
    pub(super) const TITLE: &str = "journal";
}

#[test]
fn handler_module_folds_events() {
    let mut journal = Journal::default();
    journal.apply(&UserInput::new("x").into());
    journal.apply(&PlanCreated { tasks: vec![] }.into());
    journal.apply(&TaskBegun(4).into());
    assert_eq!(journal.lines, ["goal: x", "0 tasks", "started 4"]);
}

// ---- agents ---------------------------------------------------------------------------------

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Plan {
    tasks: Vec<String>,
}

struct Planner {
    style: &'static str,
}

#[agent(output = Plan, emits = [PlanCreated, TaskBegun], model = "claude-sonnet-4-5")]
impl Planner {
    fn prompt(&self, state: &PlanState, input: &UserInput) -> String {
        format!(
            "{} plan for {:?} ({} tasks so far)",
            self.style,
            input.text,
            state.tasks.len()
        )
    }

    fn on_output(&self, plan: Plan, _input: &UserInput) -> Emit {
        let count = plan.tasks.len();
        Emit::one(PlanCreated { tasks: plan.tasks }).and(TaskBegun(count))
    }

    fn when(&self, state: &PlanState) -> bool {
        state.tasks.is_empty()
    }

    /// A helper: left alone by the macro.
    fn describe(&self) -> String {
        format!("planner ({})", self.style)
    }
}

/// The name and trigger-less `on_output` forms; no `when`, no model.
struct TaskExecutor;

#[agent(output = String, emits = [], name = "executor-1")]
impl TaskExecutor {
    fn prompt(&self, _state: &PlanState, begun: &TaskBegun) -> String {
        format!("do task {}", begun.0)
    }

    fn on_output(&self, _summary: String) {}
}

/// The default name is the type name in kebab-case.
struct TaskReviewer;

#[agent(output = bool, emits = [events::TaskCompleted])]
impl TaskReviewer {
    fn prompt(&self, _: &PlanState, done: &TaskCompleted) -> String {
        format!("review task {}", done.index)
    }

    fn on_output(&self, passed: bool, done: &TaskCompleted) -> Emit {
        if passed {
            Emit::none()
        } else {
            Emit::one(done.clone())
        }
    }
}

/// Calls through the trait, as the runtime does.
fn prompt_of<A: Agent>(agent: &A, state: &A::State, trigger: &A::Trigger) -> String {
    agent.prompt(state, trigger)
}

#[test]
fn agent_constants_come_from_the_attribute() {
    assert_eq!(Planner::NAME, "planner");
    assert_eq!(Planner::EMITS, ["plan:created", "task:started"]);
    assert_eq!(TaskExecutor::NAME, "executor-1");
    assert!(TaskExecutor::EMITS.is_empty());
    assert_eq!(TaskReviewer::NAME, "task-reviewer");
    assert_eq!(TaskReviewer::EMITS, ["task:completed"]);
}

#[test]
fn agent_model_and_when() {
    let planner = Planner { style: "terse" };
    assert_eq!(Agent::model(&planner), Some("claude-sonnet-4-5"));
    assert_eq!(Agent::model(&TaskExecutor), None);
    let mut state = PlanState::default();
    assert!(Agent::when(&planner, &state));
    state.tasks.push("x".into());
    assert!(!Agent::when(&planner, &state));
    assert!(Agent::when(&TaskExecutor, &state));
    assert_eq!(planner.describe(), "planner (terse)");
}

#[test]
fn agent_prompt_and_on_output_are_the_methods_written() {
    let planner = Planner { style: "terse" };
    let input = UserInput::new("trip");
    assert_eq!(
        prompt_of(&planner, &PlanState::default(), &input),
        "terse plan for \"trip\" (0 tasks so far)"
    );
    let emit = Agent::on_output(
        &planner,
        Plan {
            tasks: vec!["a".into(), "b".into()],
        },
        &input,
    );
    let names: Vec<_> = emit.pending().iter().map(|p| p.name.as_ref()).collect();
    assert_eq!(names, ["plan:created", "task:started"]);
    assert_eq!(emit.pending()[0].payload, json!({ "tasks": ["a", "b"] }));

    assert_eq!(
        prompt_of(&TaskExecutor, &PlanState::default(), &TaskBegun(2)),
        "do task 2"
    );
    assert!(Agent::on_output(&TaskExecutor, "done".into(), &TaskBegun(2)).is_empty());

    let done = TaskCompleted {
        index: 1,
        summary: "s".into(),
    };
    assert!(Agent::on_output(&TaskReviewer, true, &done).is_empty());
    assert_eq!(Agent::on_output(&TaskReviewer, false, &done).len(), 1);
}

/// Handlers under different `#[cfg]`s are alternatives, not duplicates.
#[derive(Debug, Clone, Default)]
struct Build(&'static str);

#[handler(PingEvent)]
impl Build {
    #[cfg(test)]
    fn tested(&mut self, _: &Pinged) {
        self.0 = "test";
    }

    #[cfg(not(test))]
    fn released(&mut self, _: &Pinged) {
        self.0 = "release";
    }
}

#[test]
fn cfg_gated_handlers_are_alternatives() {
    let mut build = Build::default();
    build.apply(&Pinged.into());
    assert_eq!(build.0, "test");
}

// ---- agents with tools ----------------------------------------------------------------------

#[event]
#[derive(Debug, Clone, PartialEq)]
struct QuestionAnswered {
    text: String,
}

#[event]
#[derive(Debug, Clone)]
enum SupportEvent {
    UserInput,
    QuestionAnswered,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Desk {
    answers: Vec<String>,
}

#[handler(SupportEvent, partial)]
impl Desk {
    fn answered(&mut self, answered: &QuestionAnswered) {
        self.answers.push(answered.text.clone());
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Answer {
    text: String,
}

/// A `Desk` workflow named `name` with `agent` alone, on a fresh memory store, asking
/// `provider`.
fn desk(
    name: &str,
    agent: impl Agent<State = Desk>,
    provider: &openharness::provider::ScriptedProvider,
) -> Result<Workflow<Desk>, openharness::Error> {
    Workflow::builder(name)
        .initial_state(Desk::default())
        .agent(agent)
        .store(openharness::store::MemoryStore::new())
        .provider(provider.clone())
        .build()
}

/// Arguments of `lookup_order`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct OrderId {
    /// The order's id, such as `A-17`.
    order: String,
}

fn lookup_order() -> openharness::FnTool<OrderId> {
    openharness::FnTool::new(
        "lookup_order",
        "Finds an order by its id.",
        |args: OrderId| async move {
            Ok::<_, String>(json!({ "order": args.order, "status": "shipped" }))
        },
    )
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// Tools listed in the attribute: a function's value, a unit struct, and one built from `self`.
struct Support {
    shop: &'static str,
}

impl Support {
    fn opening_hours(&self) -> openharness::FnTool<NoArgs> {
        let shop = self.shop;
        openharness::FnTool::new(
            "opening_hours",
            "When the shop is open.",
            move |_: NoArgs| async move { Ok::<_, String>(format!("{shop}: 9 to 5")) },
        )
    }
}

#[agent(
    output = Answer,
    emits = [QuestionAnswered],
    tools = [lookup_order(), openharness::provider::tools::CurrentTime, self.opening_hours()],
)]
impl Support {
    fn prompt(&self, _desk: &Desk, input: &UserInput) -> String {
        format!("{} support: {}", self.shop, input.text)
    }

    fn on_output(&self, answer: Answer) -> QuestionAnswered {
        QuestionAnswered { text: answer.text }
    }
}

/// Tools from a `fn tools` in the block, and `max_turns` from a `fn max_turns`.
struct Researcher;

#[agent(output = Answer, emits = [QuestionAnswered])]
impl Researcher {
    fn prompt(&self, _desk: &Desk, input: &UserInput) -> String {
        input.text.clone()
    }

    fn on_output(&self, answer: Answer) -> QuestionAnswered {
        QuestionAnswered { text: answer.text }
    }

    fn tools(&self) -> Vec<std::sync::Arc<dyn openharness::Tool>> {
        vec![std::sync::Arc::new(lookup_order())]
    }

    fn max_turns(&self) -> u32 {
        2
    }
}

fn tool_names<A: Agent>(agent: &A) -> Vec<String> {
    agent.tools().iter().map(|t| t.name().to_owned()).collect()
}

#[test]
fn agent_tools_come_from_the_attribute_or_the_method() {
    let support = Support { shop: "Acme" };
    assert_eq!(
        tool_names(&support),
        ["lookup_order", "current_time", "opening_hours"]
    );
    assert_eq!(
        Agent::max_turns(&support),
        openharness::adapter::DEFAULT_MAX_TURNS,
        "the default, as no `max_turns` is written"
    );
    assert_eq!(tool_names(&Researcher), ["lookup_order"]);
    assert_eq!(Agent::max_turns(&Researcher), 2);
    assert!(tool_names(&TaskExecutor).is_empty());
}

#[tokio::test]
async fn an_agent_offers_its_tools_to_the_model() {
    use openharness::provider::{Reply, ScriptedProvider};

    let provider = ScriptedProvider::new().respond(
        "support",
        Reply::output(json!({ "text": "It has shipped." })),
    );
    let workflow = desk("support", Support { shop: "Acme" }, &provider).unwrap();
    let outcome = workflow
        .run(RunOptions::new().input("Where is A-17?"))
        .await
        .unwrap();
    assert_eq!(outcome.state.answers, ["It has shipped."]);

    let requests = provider.requests();
    assert_eq!(requests.len(), 1);
    let tools = &requests[0].tools;
    assert_eq!(
        tools.names(),
        ["lookup_order", "current_time", "opening_hours"]
    );
    let lookup = tools.get("lookup_order").unwrap();
    assert_eq!(lookup.description(), "Finds an order by its id.");
    assert_eq!(lookup.input_schema()["required"], json!(["order"]));
    // The tools offered are the real ones.
    assert_eq!(
        tools
            .call("lookup_order", json!({ "order": "A-17" }))
            .await
            .unwrap(),
        json!({ "order": "A-17", "status": "shipped" })
    );
    assert_eq!(
        tools.call("opening_hours", json!({})).await.unwrap(),
        json!("Acme: 9 to 5")
    );
}

/// The model from a `fn model` in the block: a field, chosen at run time.
struct Concierge {
    model: String,
}

#[agent(output = Answer, emits = [QuestionAnswered])]
impl Concierge {
    fn prompt(&self, _desk: &Desk, input: &UserInput) -> String {
        input.text.clone()
    }

    fn on_output(&self, answer: Answer) -> QuestionAnswered {
        QuestionAnswered { text: answer.text }
    }

    fn model(&self) -> &str {
        &self.model
    }
}

/// `fn model` may also say "the provider's choice" with `None`.
struct Doorman {
    model: Option<&'static str>,
}

#[agent(output = Answer, emits = [QuestionAnswered])]
impl Doorman {
    fn prompt(&self, _desk: &Desk, input: &UserInput) -> String {
        input.text.clone()
    }

    fn on_output(&self, answer: Answer) -> QuestionAnswered {
        QuestionAnswered { text: answer.text }
    }

    fn model(&self) -> Option<&str> {
        self.model
    }
}

#[tokio::test]
async fn the_model_from_fn_model_reaches_the_provider_request() {
    use openharness::provider::{Reply, ScriptedProvider};

    assert_eq!(Agent::model(&Doorman { model: None }), None);
    assert_eq!(
        Agent::model(&Doorman {
            model: Some("gpt-test")
        }),
        Some("gpt-test")
    );

    let provider =
        ScriptedProvider::new().respond("concierge", Reply::output(json!({ "text": "Room 12." })));
    let workflow = desk(
        "concierge",
        Concierge {
            model: "claude-test-7".into(),
        },
        &provider,
    )
    .unwrap();
    let outcome = workflow
        .run(RunOptions::new().input("Which room?"))
        .await
        .unwrap();
    assert_eq!(outcome.state.answers, ["Room 12."]);
    let requests = provider.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].model.as_deref(), Some("claude-test-7"));
}

/// Images and a reasoning effort from `fn images` and `fn reasoning` in the block, derived
/// from the state and the trigger.
struct Appraiser;

#[agent(output = Answer, emits = [QuestionAnswered])]
impl Appraiser {
    fn prompt(&self, _desk: &Desk, input: &UserInput) -> String {
        input.text.clone()
    }

    fn on_output(&self, answer: Answer) -> QuestionAnswered {
        QuestionAnswered { text: answer.text }
    }

    fn images(&self, _desk: &Desk, input: &UserInput) -> Vec<openharness::Image> {
        vec![openharness::Image::url(format!(
            "https://example.com/{}.png",
            input.text.len()
        ))]
    }

    fn reasoning(&self, desk: &Desk, _input: &UserInput) -> Option<openharness::ReasoningEffort> {
        desk.answers
            .is_empty()
            .then_some(openharness::ReasoningEffort::High)
    }
}

#[tokio::test]
async fn images_and_reasoning_from_the_block_reach_the_provider_request() {
    use openharness::provider::{Reply, ScriptedProvider};

    let provider = ScriptedProvider::new()
        .respond("appraiser", Reply::output(json!({ "text": "Old." })))
        .respond("appraiser", Reply::output(json!({ "text": "Older." })));
    let workflow = desk("appraiser", Appraiser, &provider).unwrap();
    let outcome = workflow
        .run(RunOptions::new().input("How old?"))
        .await
        .unwrap();
    workflow
        .send(&outcome.session, "And now?", RunOptions::new())
        .await
        .unwrap();
    let requests = provider.requests();
    assert_eq!(
        requests[0].images,
        [openharness::Image::url("https://example.com/8.png")]
    );
    assert_eq!(
        requests[0].reasoning,
        Some(openharness::ReasoningEffort::High)
    );
    assert_eq!(requests[1].reasoning, None, "the desk had an answer");
}

/// An output with two string fields: the reply is named.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Cited {
    answer: String,
    source: String,
}

struct CitingAssistant;

#[agent(output = Cited, emits = [QuestionAnswered], reply = answer)]
impl CitingAssistant {
    fn prompt(&self, _desk: &Desk, input: &UserInput) -> String {
        input.text.clone()
    }

    fn on_output(&self, cited: Cited) -> QuestionAnswered {
        QuestionAnswered {
            text: format!("{} ({})", cited.answer, cited.source),
        }
    }
}

/// A reply named by its JSON name, which is not an output field: the workflow does not build.
struct MisnamedReply;

#[agent(output = Cited, emits = [QuestionAnswered], reply = "answerText")]
impl MisnamedReply {
    fn prompt(&self, _desk: &Desk, input: &UserInput) -> String {
        input.text.clone()
    }

    fn on_output(&self, cited: Cited) -> QuestionAnswered {
        QuestionAnswered { text: cited.answer }
    }
}

#[test]
fn agent_reply_comes_from_the_attribute_or_is_inferred() {
    use openharness::adapter::ReplySource;
    assert_eq!(CitingAssistant.reply(), ReplySource::Field("answer"));
    assert_eq!(MisnamedReply.reply(), ReplySource::Field("answerText"));
    assert_eq!(TaskExecutor.reply(), ReplySource::Inferred);
    let schema = openharness::schemars::schema_for!(Cited).to_value();
    assert_eq!(
        ReplySource::Field("answer").pointer(&schema),
        Ok(Some("/answer".to_owned()))
    );
    assert_eq!(ReplySource::Inferred.pointer(&schema), Ok(None));

    fn desk_with(agent: impl Agent<State = Desk>) -> Result<Workflow<Desk>, openharness::Error> {
        desk(
            "desk",
            agent,
            &openharness::provider::ScriptedProvider::new(),
        )
    }
    assert!(desk_with(CitingAssistant).is_ok());
    let Err(err) = desk_with(MisnamedReply) else {
        panic!("a reply that names no field builds");
    };
    assert!(err.to_string().contains("no field `answerText`"), "{err}");
}

/// A chat agent from the block: `fn system` (returning a bare `String`) and `fn messages` give
/// the system prompt and the conversation, the prompt is empty, and the output is plain text.
struct Receptionist;

#[agent(output = String, emits = [QuestionAnswered])]
impl Receptionist {
    fn prompt(&self, _desk: &Desk, _input: &UserInput) -> String {
        String::new()
    }

    fn system(&self, desk: &Desk, _input: &UserInput) -> String {
        format!("You answered {} questions so far.", desk.answers.len())
    }

    fn messages(&self, desk: &Desk, input: &UserInput) -> Vec<openharness::ChatMessage> {
        let mut messages: Vec<openharness::ChatMessage> = desk
            .answers
            .iter()
            .map(openharness::ChatMessage::assistant)
            .collect();
        messages.push(openharness::ChatMessage::user(input.text.clone()));
        messages
    }

    fn on_output(&self, answer: String) -> QuestionAnswered {
        QuestionAnswered { text: answer }
    }
}

#[tokio::test]
async fn system_and_messages_from_the_block_reach_the_request_and_are_recorded() {
    use openharness::builtin::AgentStarted;
    use openharness::provider::{Reply, ScriptedProvider};

    let provider = ScriptedProvider::new().respond(
        "receptionist",
        Reply::output(json!("Room \"12\".\nUpstairs.")).text("Room \"12\".\nUpstairs."),
    );
    let workflow = desk("receptionist", Receptionist, &provider).unwrap();
    let outcome = workflow
        .run(RunOptions::new().input("Which room?"))
        .await
        .unwrap();
    assert_eq!(outcome.state.answers, ["Room \"12\".\nUpstairs."]);
    let request = &provider.requests()[0];
    assert!(request.wants_text(), "a String output asks for text");
    assert_eq!(
        request.system.as_deref(),
        Some("You answered 0 questions so far.")
    );
    assert_eq!(
        request.messages,
        [openharness::ChatMessage::user("Which room?")]
    );
    let events = workflow.session_events(&outcome.session).await.unwrap();
    let started = events
        .iter()
        .find_map(|e| e.decode::<AgentStarted>().ok())
        .unwrap();
    assert_eq!(
        started.system, request.system,
        "the recording shows what was sent"
    );
    assert_eq!(started.messages, request.messages);
    assert_eq!(started.prompt, "");
}

/// `crate = path` says where Open Harness is; here the facade under another name, so the
/// generated code must use the path given and not `::openharness`.
mod crate_path {
    use openharness as oh;
    use openharness::prelude::*;

    #[event("bell:rung", crate = oh)]
    #[derive(Debug, Clone, PartialEq)]
    pub(crate) struct BellRung {
        pub(crate) times: u32,
    }

    #[event(crate = oh)]
    #[derive(Debug, Clone)]
    pub(crate) enum BellEvent {
        UserInput,
        BellRung,
    }

    #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
    pub(crate) struct Belfry {
        rung: u32,
    }

    #[handler(BellEvent, partial, crate = oh)]
    impl Belfry {
        fn rung(&mut self, bell: &BellRung, undo: &mut oh::Undo<Self>) {
            self.rung += bell.times;
            let times = bell.times;
            undo.record(move |belfry| belfry.rung -= times);
        }
    }

    struct Ringer;

    #[agent(output = u32, emits = [BellRung], crate = oh)]
    impl Ringer {
        fn prompt(&self, _state: &Belfry, input: &UserInput) -> String {
            input.text.clone()
        }
        fn on_output(&self, times: u32) -> BellRung {
            BellRung { times }
        }
    }

    #[test]
    fn the_three_macros_generate_code_against_the_path_given() {
        assert_eq!(BellRung::NAME, "bell:rung");
        assert_eq!(BellEvent::NAMES, ["user:input", "bell:rung"]);
        let mut belfry = Belfry::default();
        let mut undo = oh::Undo::recording();
        undo.begin_event();
        belfry.apply_undoable(&BellRung { times: 3 }.into(), &mut undo);
        assert_eq!(belfry.rung, 3);
        undo.revert(&mut belfry);
        assert_eq!(belfry.rung, 0);
        assert_eq!(<Ringer as oh::Agent>::NAME, "ringer");
        assert_eq!(<Ringer as oh::Agent>::EMITS, ["bell:rung"]);
    }
}
