//! The options of a run and what a run or a recorded session reports: [`RunOptions`],
//! [`RunOutcome`], [`StopReason`], [`Continuation`] (where a fork continues from) and
//! [`Unfinished`]. Shared by [`Workflow`](crate::Workflow), which starts runs, and the
//! runtime, which carries them out.

use std::fmt;
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::emit::Pending;
use crate::event::{Envelope, EventId, SessionId};
use crate::provider::Usage;
use crate::renderer::Renderer;

/// Options for one run.
///
/// ```
/// use std::time::Duration;
/// use openharness_core::RunOptions;
/// let options = RunOptions::new()
///     .input("plan a three-day trip to Lisbon")
///     .max_events(5_000)
///     .deadline(Duration::from_secs(300));
/// # let _ = options;
/// ```
#[must_use]
pub struct RunOptions {
    pub(crate) input: Option<String>,
    pub(crate) input_fields: serde_json::Map<String, serde_json::Value>,
    pub(crate) input_id: Option<EventId>,
    pub(crate) session: Option<SessionId>,
    pub(crate) cancel: CancellationToken,
    pub(crate) max_events: u64,
    pub(crate) max_agent_calls: u64,
    pub(crate) max_cost: Option<f64>,
    pub(crate) deadline: Option<Duration>,
    pub(crate) renderers: Vec<Box<dyn Renderer>>,
    pub(crate) on_busy: Option<crate::control::BusyPolicy>,
    pub(crate) control: Option<crate::control::TurnInbox>,
    pub(crate) agents: std::collections::HashMap<String, AgentSettings>,
    pub(crate) client_tools: Vec<std::sync::Arc<dyn crate::Tool>>,
    pub(crate) acknowledge: Option<Acknowledge>,
    pub(crate) scheduled: Vec<(u64, crate::control::TurnCommand)>,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            input: None,
            input_fields: serde_json::Map::new(),
            input_id: None,
            session: None,
            cancel: CancellationToken::new(),
            max_events: u64::MAX,
            max_agent_calls: u64::MAX,
            max_cost: None,
            deadline: None,
            renderers: Vec::new(),
            on_busy: None,
            control: None,
            agents: std::collections::HashMap::new(),
            client_tools: Vec::new(),
            acknowledge: None,
            scheduled: Vec::new(),
        }
    }
}

impl RunOptions {
    /// Default options: no input, a fresh session id, and no guard: a legitimate run is never
    /// stopped by a default limit (a 10 000-task plan makes 10 001 agent calls). Set
    /// [`max_events`](Self::max_events), [`max_agent_calls`](Self::max_agent_calls),
    /// [`max_cost`](Self::max_cost) or [`deadline`](Self::deadline) to bound a run; one that
    /// trips ends with that [`StopReason`], recorded in `workflow:completed` and warned about.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `text` as `user:input` right after `workflow:started`.
    pub fn input(mut self, text: impl Into<String>) -> Self {
        self.input = Some(text.into());
        self
    }

    /// Records `fields` in the payload of the turn's `user:input` (or, for an answer, its
    /// `input:received`), beside its own fields (which a field of the same name does not
    /// replace): data an application keeps with a message, such
    /// as the platform's controls, metadata and tags. [`UserInput`](crate::builtin::UserInput)
    /// ignores them, so the workflow folds the input as before; readers of the log find them
    /// in the event's payload.
    ///
    /// ```
    /// use openharness_core::RunOptions;
    /// let mut fields = serde_json::Map::new();
    /// fields.insert("tags".into(), serde_json::json!(["urgent"]));
    /// let options = RunOptions::new().input("Hi").input_fields(fields);
    /// # let _ = options;
    /// ```
    pub fn input_fields(mut self, fields: serde_json::Map<String, serde_json::Value>) -> Self {
        self.input_fields = fields;
        self
    }

    /// The fields these options add to the turn's input event ([`input_fields`](Self::input_fields)).
    ///
    /// ```
    /// use openharness_core::RunOptions;
    /// let mut fields = serde_json::Map::new();
    /// fields.insert("via".into(), "open-responses".into());
    /// let options = RunOptions::new().input_fields(fields.clone());
    /// assert_eq!(options.given_input_fields(), &fields);
    /// ```
    pub fn given_input_fields(&self) -> &serde_json::Map<String, serde_json::Value> {
        &self.input_fields
    }

    /// Records who gives the turn's input or answer: the `by` field of its `user:input` or
    /// `input:received` (and of an `input:queued`, when the input waits), which traces show as
    /// `openharness.input.answered_by`. Call it after [`input_fields`](Self::input_fields),
    /// which sets the fields anew.
    ///
    /// ```
    /// use openharness_core::RunOptions;
    /// let options = RunOptions::new().by("ana@example.com");
    /// assert_eq!(options.recorded_fields()["by"], "ana@example.com");
    /// ```
    pub fn by(mut self, who: impl Into<String>) -> Self {
        self.input_fields
            .insert(BY_FIELD.to_owned(), serde_json::Value::String(who.into()));
        self
    }

    /// The fields set with [`input_fields`](Self::input_fields) (and [`by`](Self::by)).
    pub fn recorded_fields(&self) -> &serde_json::Map<String, serde_json::Value> {
        &self.input_fields
    }

    /// Records the turn's `user:input` with this event id instead of a fresh one, so that the
    /// caller knows it before the run starts: a server that answers a posted message once its
    /// input is recorded waits for this id on the session's tail. Ids must be unique in the
    /// session (a store refuses a batch repeating one it holds).
    ///
    /// ```
    /// use openharness_core::{EventId, RunOptions};
    /// let input = EventId::new();
    /// let options = RunOptions::new().input("Hi").input_id(input);
    /// # let _ = options;
    /// ```
    pub fn input_id(mut self, id: EventId) -> Self {
        self.input_id = Some(id);
        self
    }

    /// Records into this (new, empty) session instead of a fresh one. Ignored by turns on a
    /// recorded session ([`Workflow::send`](crate::Workflow::send), [`Workflow::respond`](crate::Workflow::respond), [`Workflow::resume`](crate::Workflow::resume)).
    pub fn session(mut self, session: SessionId) -> Self {
        self.session = Some(session);
        self
    }

    /// The session chosen with [`RunOptions::session`], if any.
    pub fn session_id(&self) -> Option<&SessionId> {
        self.session.as_ref()
    }

    /// Cancels the run when this token is cancelled; running agents end as `interrupted`.
    pub fn cancel_token(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// The token that cancels the run (a fresh one unless [`cancel_token`](Self::cancel_token)
    /// set one).
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Stops the turn after it has recorded this many events (the turn's own, not the
    /// session's: a turn on a long session is not stopped by what earlier turns recorded).
    pub fn max_events(mut self, max: u64) -> Self {
        self.max_events = max;
        self
    }

    /// Stops instead of starting more than this many agent calls.
    pub fn max_agent_calls(mut self, max: u64) -> Self {
        self.max_agent_calls = max;
        self
    }

    /// Stops once the agents' reported cost exceeds this many US dollars.
    pub fn max_cost(mut self, dollars: f64) -> Self {
        self.max_cost = Some(dollars);
        self
    }

    /// Stops after this much wall-clock time.
    pub fn deadline(mut self, after: Duration) -> Self {
        self.deadline = Some(after);
        self
    }

    /// Fails at once with [`Error::SessionBusy`](crate::Error::SessionBusy) when another turn of this process is running
    /// on the session, instead of waiting for it to end (the default): the same as
    /// [`on_busy`](Self::on_busy)`(BusyPolicy::Reject)`.
    pub fn refuse_if_busy(self) -> Self {
        self.on_busy(crate::control::BusyPolicy::Reject)
    }

    /// What this input gets when a turn is already running on the session (see
    /// [`BusyPolicy`](crate::BusyPolicy)): a host records it as the policy says; a
    /// [`Workflow`](crate::Workflow) used alone refuses it under `reject` and otherwise waits
    /// for the running turn. Unset, a host applies its default and a workflow waits.
    ///
    /// ```
    /// use openharness_core::{BusyPolicy, RunOptions};
    /// let options = RunOptions::new().on_busy(BusyPolicy::Enqueue);
    /// assert_eq!(options.busy_policy(), Some(BusyPolicy::Enqueue));
    /// ```
    pub fn on_busy(mut self, policy: crate::control::BusyPolicy) -> Self {
        self.on_busy = Some(policy);
        self
    }

    /// Whether a workflow used alone refuses a busy session rather than wait.
    pub(crate) fn refuses_if_busy(&self) -> bool {
        self.on_busy == Some(crate::control::BusyPolicy::Reject)
    }

    /// The policy set with [`on_busy`](Self::on_busy), if any.
    pub fn busy_policy(&self) -> Option<crate::control::BusyPolicy> {
        self.on_busy
    }

    /// Adds a renderer for this run.
    pub fn renderer(mut self, renderer: impl Renderer) -> Self {
        self.renderers.push(Box::new(renderer));
        self
    }

    /// Gives agent `agent` these settings for this run instead of its own (see
    /// [`AgentSettings`]): a host that picks the model, the instructions and the tools per turn
    /// runs one registered workflow for every configuration. What they choose is recorded in
    /// each call's `agent:started`, as the agent's own choices are. A second call for one
    /// agent replaces the first.
    ///
    /// ```
    /// use openharness_core::{AgentSettings, RunOptions};
    /// let options = RunOptions::new().agent(
    ///     "assistant",
    ///     AgentSettings::new().model("claude-haiku-4-5").system("Answer in French."),
    /// );
    /// # let _ = options;
    /// ```
    pub fn agent(mut self, agent: impl Into<String>, settings: AgentSettings) -> Self {
        self.agents.insert(agent.into(), settings);
        self
    }

    /// Offers the client's tools to every agent call of the run, beside the agent's own: a
    /// model's call of one is not run here; it ends the agent's call and the turn, recorded as
    /// `tool:called` with `client: true`, and the client sends its result with its next input
    /// (see [`ClientTool`](crate::ClientTool)). Not recorded: a turn resumed after a crash is
    /// offered only the agent's own tools.
    ///
    /// ```
    /// use openharness_core::{ClientTool, RunOptions};
    /// let options = RunOptions::new().input("What's the weather in Lisbon?").client_tools(vec![
    ///     ClientTool::new("get_weather", "The weather in a city.", serde_json::json!({ "type": "object" })),
    /// ]);
    /// # let _ = options;
    /// ```
    pub fn client_tools(mut self, tools: Vec<crate::ClientTool>) -> Self {
        self.client_tools = tools
            .into_iter()
            .map(|tool| std::sync::Arc::new(tool) as std::sync::Arc<dyn crate::Tool>)
            .collect();
        self
    }

    /// Whether these options give any agent settings of their own ([`RunOptions::agent`]).
    ///
    /// ```
    /// use openharness_core::{AgentSettings, RunOptions};
    /// assert!(!RunOptions::new().sets_agents());
    /// assert!(RunOptions::new().agent("assistant", AgentSettings::new()).sets_agents());
    /// ```
    pub fn sets_agents(&self) -> bool {
        !self.agents.is_empty()
    }

    /// Gives each agent that `defaults` sets and these options do not the settings `defaults`
    /// gives it: a host fills in what a workflow's owner knows (the platform's agent for a
    /// fork of its session) without overriding what the caller chose.
    ///
    /// ```
    /// use openharness_core::{AgentSettings, RunOptions};
    /// let owner = RunOptions::new()
    ///     .agent("assistant", AgentSettings::new().model("small"))
    ///     .agent("critic", AgentSettings::new().model("small"));
    /// let options = RunOptions::new()
    ///     .agent("critic", AgentSettings::new().model("large"))
    ///     .agents_or(&owner);
    /// # let _ = options;
    /// ```
    pub fn agents_or(mut self, defaults: &RunOptions) -> Self {
        for (agent, settings) in &defaults.agents {
            self.agents
                .entry(agent.clone())
                .or_insert_with(|| settings.clone());
        }
        self
    }

    /// Lets whoever holds the other half of `inbox` reach the turn while it runs: a second
    /// input, a steer or a stop, each recorded by the turn at its next safe point (see
    /// [`TurnControl`](crate::adapter::TurnControl)). A host gives every turn one.
    ///
    /// ```
    /// use openharness_core::RunOptions;
    /// use openharness_core::adapter::turn_control;
    /// let (control, inbox) = turn_control();
    /// let options = RunOptions::new().control(inbox);
    /// # let _ = (control, options);
    /// ```
    pub fn control(mut self, inbox: crate::control::TurnInbox) -> Self {
        self.control = Some(inbox);
        self
    }

    /// Drops the provider each agent's settings name, keeping the rest (model, instructions,
    /// tools): a re-execution answers every call from its recording, whatever provider the
    /// host would give the turn, so it never calls a model.
    ///
    /// ```
    /// use openharness_core::{AgentSettings, RunOptions};
    /// let options = RunOptions::new()
    ///     .agent("assistant", AgentSettings::new().model("small"))
    ///     .without_agent_providers();
    /// # let _ = options;
    /// ```
    pub fn without_agent_providers(mut self) -> Self {
        for settings in self.agents.values_mut() {
            settings.provider = None;
        }
        self
    }

    /// Gives the turn each of `commands` at the first safe point where it has recorded (or
    /// staged) `seq` events, before anything else happens there: a re-execution sends the
    /// recording's second inputs and stops where the recording took them, so the position of
    /// each `input:queued` or `stop:requested` does not depend on timing. Commands still
    /// waiting when the turn ends are recorded before its `workflow:completed`, as a control's
    /// are ([`RunOptions::control`]).
    ///
    /// ```
    /// use openharness_core::RunOptions;
    /// use openharness_core::adapter::TurnCommand;
    /// let (stop, _recorded) = TurnCommand::stop(Some("as recorded".into()));
    /// let options = RunOptions::new().commands_at(vec![(4, stop)]);
    /// # let _ = options;
    /// ```
    pub fn commands_at(mut self, commands: Vec<(u64, crate::control::TurnCommand)>) -> Self {
        self.scheduled.extend(commands);
        self.scheduled.sort_by_key(|(seq, _)| *seq);
        self
    }

    /// Tells `recorded` the turn's first event (its seq and id) once the append that holds it is
    /// durable: for a server that answers a request only once its input is recorded. Dropped
    /// unsent when the turn records nothing (it failed first, or a resume found nothing to do).
    ///
    /// ```
    /// use openharness_core::RunOptions;
    /// let (recorded, first) = tokio::sync::oneshot::channel();
    /// let options = RunOptions::new().input("Hi").acknowledge(recorded);
    /// # let _ = (options, first);
    /// ```
    pub fn acknowledge(
        self,
        recorded: tokio::sync::oneshot::Sender<crate::control::CommandRecorded>,
    ) -> Self {
        self.on_acknowledged(move |first| {
            let _ = recorded.send(first);
        })
    }

    /// Calls `acknowledged` with the turn's first event (its seq and id) once the append that
    /// holds it is durable, on the turn's own thread, before anything else is recorded: the
    /// callback form of [`acknowledge`](Self::acknowledge), for a host that answers a request
    /// from there. Not called when the turn records nothing.
    ///
    /// ```
    /// use openharness_core::RunOptions;
    /// let options = RunOptions::new().on_acknowledged(|first| println!("recorded at {}", first.seq));
    /// # let _ = options;
    /// ```
    pub fn on_acknowledged(
        mut self,
        acknowledged: impl FnOnce(crate::control::CommandRecorded) + Send + 'static,
    ) -> Self {
        self.acknowledge = Some(Box::new(acknowledged));
        self
    }
}

/// What a run gives one agent instead of the agent's own ([`RunOptions::agent`]). Each field
/// left unset keeps the agent's: its [`model`](crate::Agent::model), its
/// [`system`](crate::Agent::system) prompt, its [`tools`](crate::Agent::tools) (these are
/// added to them) and the workflow's provider. A call a crash cut off runs again with the
/// prompt and model its `agent:started` recorded, and with these tools and provider.
#[derive(Clone, Default)]
#[must_use]
pub struct AgentSettings {
    pub(crate) model: Option<String>,
    pub(crate) system: Option<String>,
    pub(crate) system_template: Option<String>,
    pub(crate) prompt_template: Option<String>,
    pub(crate) reasoning: Option<crate::ReasoningEffort>,
    pub(crate) tools: Vec<std::sync::Arc<dyn crate::Tool>>,
    pub(crate) provider: Option<crate::BoxedProvider>,
}

impl AgentSettings {
    /// The agent's own settings.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks this model instead of the agent's.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Gives this system prompt instead of the agent's (`""` for none).
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Wraps the system prompt (the agent's, or the one [`AgentSettings::system`] gives):
    /// `{system}` in `template` stands for it, so `"Be terse.\n\n{system}"` adds a line before
    /// it; a template without `{system}` replaces it.
    ///
    /// ```
    /// use openharness_core::AgentSettings;
    /// let settings = AgentSettings::new().wrap_system("{system}\n\nAnswer in French.");
    /// # let _ = settings;
    /// ```
    pub fn wrap_system(mut self, template: impl Into<String>) -> Self {
        self.system_template = Some(template.into());
        self
    }

    /// Rewrites the prompt the agent's code renders: `{prompt}` in `template` stands for it
    /// (`"{prompt}\n\nAnswer in one line."`); a template without `{prompt}` replaces it. So
    /// an experiment tries a prompt without rebuilding the workflow.
    ///
    /// ```
    /// use openharness_core::AgentSettings;
    /// let settings = AgentSettings::new().prompt("{prompt}\n\nAnswer in one line.");
    /// # let _ = settings;
    /// ```
    pub fn prompt(mut self, template: impl Into<String>) -> Self {
        self.prompt_template = Some(template.into());
        self
    }

    /// Asks the model for this reasoning effort instead of the agent's.
    pub fn reasoning(mut self, effort: crate::ReasoningEffort) -> Self {
        self.reasoning = Some(effort);
        self
    }

    /// Offers these tools too, beside the agent's own.
    pub fn tools(mut self, tools: Vec<std::sync::Arc<dyn crate::Tool>>) -> Self {
        self.tools = tools;
        self
    }

    /// Asks this provider instead of the workflow's.
    pub fn provider(mut self, provider: crate::BoxedProvider) -> Self {
        self.provider = Some(provider);
        self
    }
}

impl fmt::Debug for AgentSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentSettings")
            .field("model", &self.model)
            .field("system", &self.system.as_ref().map(String::len))
            .field(
                "system_template",
                &self.system_template.as_ref().map(String::len),
            )
            .field(
                "prompt_template",
                &self.prompt_template.as_ref().map(String::len),
            )
            .field("reasoning", &self.reasoning)
            .field("tools", &self.tools.len())
            .field(
                "provider",
                &self.provider.as_ref().map(|p| p.name().to_owned()),
            )
            .finish()
    }
}

/// What a turn calls once its first event is durable ([`RunOptions::on_acknowledged`]).
pub(crate) type Acknowledge = Box<dyn FnOnce(crate::control::CommandRecorded) + Send>;

/// Where a run continues from instead of the workflow's initial state (a fork), for
/// [`Workflow::run_from`](crate::Workflow::run_from).
///
/// The run starts with `state` at position 0 of a new session and records `first`. A
/// continuation made by [`Workflow::continuation_at`](crate::Workflow::continuation_at)
/// then finishes what the parent had under way at the fork point, as a resume finishes a
/// cut-off turn: the events its handlers had emitted and not recorded yet are recorded, agent
/// calls it had started and not completed are closed as `interrupted` and run again from their
/// start, and the requests it had open stay open. One made by hand with [`Continuation::new`]
/// queues `queued` (caused by `first`) and starts the agents that `redeliver` activates in
/// `state`, as if that event had just been recorded (under the id of `first`).
#[must_use]
pub struct Continuation<S> {
    pub(crate) state: S,
    pub(crate) first: Pending,
    pub(crate) queued: Vec<Pending>,
    pub(crate) redeliver: Option<Envelope>,
    pub(crate) open_requests: Vec<EventId>,
    pub(crate) unfinished: Option<Box<ForkUnfinished>>,
}

/// What the parent had under way at a fork point (see [`Continuation`]).
#[derive(Clone)]
pub(crate) struct ForkUnfinished {
    /// The parent and the fork point, for the record of the calls the fork cut.
    pub(crate) parent: SessionId,
    pub(crate) position: u64,
    /// The rest of an agent call's final record the fork point cut, as the parent recorded it.
    pub(crate) completing: Vec<(Pending, Option<EventId>)>,
    /// What the parent's turn had not recorded yet at the fork point.
    pub(crate) unrecorded: Vec<crate::recover::Unrecorded>,
    /// Agent calls open at the fork point: closed as interrupted and run again.
    pub(crate) open_calls: Vec<crate::recover::OpenCall>,
    /// Inputs queued in the parent and not answered at the fork point: the fork queues them
    /// again (its own `input:queued`, the same payload), to answer them as the parent would.
    pub(crate) queued: Vec<Envelope>,
}

impl<S> Continuation<S> {
    /// Continues from `state`, recording `first` as the new session's first event.
    pub fn new(state: S, first: Pending) -> Self {
        Self {
            state,
            first,
            queued: Vec::new(),
            redeliver: None,
            open_requests: Vec::new(),
            unfinished: None,
        }
    }

    /// Events to record right after `first` (what a handler had emitted at the fork point).
    pub fn queue(mut self, events: Vec<Pending>) -> Self {
        self.queued = events;
        self
    }

    /// An event whose agents start again once `first` is recorded.
    pub fn redeliver(mut self, event: Envelope) -> Self {
        self.redeliver = Some(event);
        self
    }

    /// Records `first` as the new session's first event instead (a `session:forked` naming
    /// another variant of the workflow, for example).
    pub fn first(mut self, first: Pending) -> Self {
        self.first = first;
        self
    }

    /// The state the run starts from.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// Starts the run from `state` instead: a fork that changes the state it inherits (an
    /// eval's variant). What was under way at the fork point is finished all the same.
    pub fn with_state(mut self, state: S) -> Self {
        self.state = state;
        self
    }

    /// The `input:requested` events open at the fork point: the run waits for them as the
    /// parent did (a `session:forked` should list them, so answers continue the fork).
    pub fn open_requests(&self) -> &[EventId] {
        &self.open_requests
    }

    /// How many agent calls the parent had started and not completed at the fork point: the
    /// run closes them as `interrupted` and runs them again from their start.
    pub fn cut_calls(&self) -> usize {
        self.unfinished.as_ref().map_or(0, |u| u.open_calls.len())
    }
}

impl<S: Clone> Clone for Continuation<S> {
    fn clone(&self) -> Self {
        Self {
            state: self.state.clone(),
            first: self.first.clone(),
            queued: self.queued.clone(),
            redeliver: self.redeliver.clone(),
            open_requests: self.open_requests.clone(),
            unfinished: self.unfinished.clone(),
        }
    }
}

impl<S> fmt::Debug for Continuation<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Continuation")
            .field("first", &self.first)
            .field("queued", &self.queued)
            .field("redeliver", &self.redeliver.as_ref().map(|e| &e.name))
            .field("open_requests", &self.open_requests)
            .field("cut_calls", &self.cut_calls())
            .finish_non_exhaustive()
    }
}

/// What a recorded session is doing and what a resume would finish: see
/// [`Workflow::unfinished`](crate::Workflow::unfinished).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Unfinished {
    /// The session.
    pub session: SessionId,
    /// Its length.
    pub len: u64,
    /// What it is doing, from its last event.
    pub status: crate::SessionStatus,
    /// The snapshot the derivation started from (0 for none): it read the events after it.
    pub snapshot_at: u64,
    /// `input:requested` events not answered yet.
    pub open_requests: Vec<EventId>,
    /// Agent calls started and never completed: a resume closes them as `interrupted` and
    /// runs them again.
    pub open_calls: Vec<OpenCallReport>,
    /// Names of the events a cut-off turn should have recorded and did not (what handlers
    /// emitted, agents that never started): a resume records them.
    pub unrecorded: Vec<String>,
}

/// An agent call a resume would run again.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct OpenCallReport {
    /// The agent.
    pub agent: String,
    /// The prompt it was started with.
    pub prompt: String,
    /// The event that activated it.
    pub trigger: Option<EventId>,
}

impl Unfinished {
    pub(crate) fn of<S>(session: &SessionId, derived: &crate::recover::Derived<S>) -> Self {
        use crate::recover::Unrecorded;
        Self {
            session: session.clone(),
            len: derived.len,
            status: derived.status,
            snapshot_at: derived.snapshot_at,
            open_requests: derived.open_requests.clone(),
            open_calls: derived
                .open_calls
                .iter()
                .map(|call| OpenCallReport {
                    agent: call.started.agent.clone(),
                    prompt: call.started.prompt.clone(),
                    trigger: call.trigger_id,
                })
                .collect(),
            unrecorded: derived
                .unrecorded
                .iter()
                .map(|item| match item {
                    Unrecorded::Event(pending, _) => pending.name.to_string(),
                    Unrecorded::Start { .. } => {
                        <crate::builtin::AgentStarted as crate::Event>::NAME.to_owned()
                    }
                })
                .collect(),
        }
    }

    /// Whether a turn was cut off, so a resume has something to finish.
    pub fn needs_resume(&self) -> bool {
        self.status.is_running()
    }
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// `until(state)` held.
    Until,
    /// No events were queued and no agent was running.
    Idle,
    /// The cancellation token was cancelled.
    Cancelled,
    /// The wall-clock deadline passed.
    Deadline,
    /// `max_events` events were recorded.
    MaxEvents,
    /// Another agent call would have exceeded `max_agent_calls`.
    MaxAgentCalls,
    /// The reported cost exceeded `max_cost`.
    MaxCost,
    /// Nothing was left to do and an `input:requested` is open: the session waits for a
    /// person's answer ([`Workflow::respond`](crate::Workflow::respond)).
    WaitingForInput,
    /// [`Workflow::resume`](crate::Workflow::resume) found nothing unfinished; nothing was recorded.
    NothingUnfinished,
    /// A second input in mode `interrupt` stopped the turn at its next safe point; the next
    /// turn answers it.
    Interrupted,
    /// A second input in mode `rollback` abandoned the turn: `turn:rolled_back` put the state
    /// back to what it was before it, and the next turn answers the input.
    RolledBack,
}

impl StopReason {
    /// The reason as recorded in `workflow:completed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Until => "until",
            Self::Idle => "idle",
            Self::Cancelled => "cancelled",
            Self::Deadline => "deadline",
            Self::MaxEvents => "max_events",
            Self::MaxAgentCalls => "max_agent_calls",
            Self::MaxCost => "max_cost",
            Self::WaitingForInput => "waiting_for_input",
            Self::NothingUnfinished => "nothing_unfinished",
            Self::Interrupted => "interrupted",
            Self::RolledBack => "rolled_back",
        }
    }
}

/// The result of a run that ended without a store failure.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RunOutcome<S> {
    /// The session the run was recorded in.
    pub session: SessionId,
    /// The final state.
    pub state: S,
    /// Number of events in the session's log.
    pub len: u64,
    /// The seq of this turn's first event (0 for a new session; the session's earlier length
    /// for a turn that continued it).
    pub first_seq: u64,
    /// Why the run ended.
    pub reason: StopReason,
    /// Tokens used by all agents.
    pub usage: Usage,
    /// Cost reported by all agents, in US dollars.
    pub cost: f64,
    /// The `input:requested` events still unanswered (their ids), to answer with
    /// [`Workflow::respond`](crate::Workflow::respond).
    pub open_requests: Vec<EventId>,
    /// How many `error:occurred` events the turn recorded (a handler panicked, an agent failed
    /// for good, ...): the turn ended with errors when this is not 0.
    pub errors: u64,
    /// Inputs queued while the turn ran (or before it) and not answered yet, oldest first:
    /// [`Workflow::resume`](crate::Workflow::resume) answers the next one. Empty unless a host
    /// sent the turn a second input ([`RunOptions::control`]).
    pub queued: Vec<crate::builtin::QueuedRef>,
}

/// The payload field naming who gave an input or an answer ([`RunOptions::by`]).
const BY_FIELD: &str = "by";
