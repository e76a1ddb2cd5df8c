//! Online scores: scorers attached to a served workflow score every turn it finishes, in the
//! background, onto the session's feedback log; the turn never waits for them.

#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use openharness::prelude::*;
use openharness::store::MemoryStore;
use openharness_eval::{OnlineScorers, RunView, Score, ScoreError, Scorer, scorers};
use openharness_example_planner_executor as example;
use openharness_host::{Host, SessionQuery, SessionSort};
use serde_json::Value;
use tokio::sync::Semaphore;

fn host() -> Host {
    let store = MemoryStore::new();
    let workflow = example::workflow(store.clone(), example::scripted_provider()).unwrap();
    Host::new(store).workflow(workflow).unwrap()
}

fn published() -> openharness_eval::scorers::BuiltinScorer {
    scorers::predicate("published", |state: &Value| state["release"] == "published")
}

/// Says which events it was shown: the turn's own, starting with its input.
struct FirstEvent;

#[async_trait::async_trait]
impl Scorer for FirstEvent {
    fn name(&self) -> &str {
        "first-event"
    }
    async fn score(&self, run: &RunView<'_>) -> Result<Score, ScoreError> {
        let events = run.events().await?;
        let first = events.first().map_or("", |e| e.name.as_ref()).to_owned();
        let inputs = run.case().inputs.join("|");
        Ok(Score::measured(events.len() as f64, true).because(format!("{first} {inputs}")))
    }
}

/// Waits for a permit before it scores: a scorer slower than any turn.
struct Held(Arc<Semaphore>);

#[async_trait::async_trait]
impl Scorer for Held {
    fn name(&self) -> &str {
        "held"
    }
    async fn score(&self, _run: &RunView<'_>) -> Result<Score, ScoreError> {
        let _permit = self
            .0
            .acquire()
            .await
            .map_err(|e| ScoreError::new(e.to_string()))?;
        Ok(Score::check(true))
    }
}

/// Never scores.
struct Broken;

#[async_trait::async_trait]
impl Scorer for Broken {
    fn name(&self) -> &str {
        "broken"
    }
    async fn score(&self, _run: &RunView<'_>) -> Result<Score, ScoreError> {
        Err(ScoreError::new("cannot read the reply"))
    }
}

async fn scores_of(
    host: &Host,
    session: &SessionId,
    want: usize,
) -> openharness_host::feedback::Feedback {
    openharness_testkit::eventually(Duration::from_secs(10), "the turns' scores", || async {
        let feedback = host.feedback(session).await.map_err(|e| e.to_string())?;
        if feedback.scores.len() >= want {
            Ok(feedback)
        } else {
            Err(format!("{} of {want} scores", feedback.scores.len()))
        }
    })
    .await
}

#[tokio::test]
async fn every_finished_turn_is_scored_on_the_sessions_feedback_log() {
    let host = host();
    let scoring = OnlineScorers::new()
        .scorer(example::WORKFLOW_NAME, published())
        .scorer(example::WORKFLOW_NAME, FirstEvent)
        .scorer(example::WORKFLOW_NAME, Broken)
        .start(&host);
    let first = host
        .run(
            example::WORKFLOW_NAME,
            Some(example::DEMO_GOAL.into()),
            RunOptions::new(),
        )
        .await
        .unwrap();
    let len_before = host.store().all_events(&first.session).await.unwrap().len();
    let done = host
        .respond(
            &first.session,
            first.open_requests[0],
            "yes".into(),
            RunOptions::new(),
        )
        .await
        .unwrap();
    let feedback = scores_of(&host, &first.session, 6).await;
    let of = |scorer: &str, turn: u64| {
        feedback
            .scores
            .iter()
            .find(|s| s.event.scorer == scorer && s.event.turn == turn)
            .unwrap_or_else(|| panic!("no {scorer} score of turn {turn}: {feedback:?}"))
            .event
            .clone()
    };
    // The first turn waits for approval: not published; the second publishes.
    assert_eq!(of("published", first.len).value, Some(0.0));
    assert_eq!(of("published", done.len).value, Some(1.0));
    assert!(of("published", done.len).passed);
    // Each turn's scorer saw that turn's events only, and its input.
    let shown = of("first-event", first.len);
    assert_eq!(shown.value, Some(first.len as f64));
    assert_eq!(
        shown.detail.as_deref(),
        Some(format!("workflow:started {}", example::DEMO_GOAL).as_str())
    );
    let shown = of("first-event", done.len);
    assert_eq!(shown.first_seq, done.first_seq);
    assert_eq!(shown.value, Some((done.len - done.first_seq) as f64));
    assert_eq!(shown.detail.as_deref(), Some("input:received yes"));
    // A scorer that cannot score records why, and no value.
    let broken = of("broken", done.len);
    assert_eq!((broken.value, broken.passed), (None, false));
    assert_eq!(broken.detail.as_deref(), Some("cannot read the reply"));
    // The session's own log did not move for it.
    assert_eq!(
        host.store().all_events(&first.session).await.unwrap().len() as u64,
        done.len
    );
    assert!(len_before as u64 <= done.len);
    assert_eq!(scoring.stats().scored, 2);
    assert_eq!(scoring.stats().missed, 0);
    // Lists read the latest score.
    let page = host
        .query_sessions(
            &SessionQuery::default()
                .scorer("published")
                .sort(SessionSort::Score),
        )
        .await
        .unwrap();
    assert_eq!(page.sessions[0].scores["published"], 1.0);
}

#[tokio::test]
async fn a_turn_never_waits_for_its_scorers() {
    let host = host();
    let gate = Arc::new(Semaphore::new(0));
    let scoring = OnlineScorers::new()
        .scorer(example::WORKFLOW_NAME, Held(Arc::clone(&gate)))
        .concurrency(1)
        .start(&host);
    // Three turns end while the first turn's scorer is still held.
    let mut sessions = Vec::new();
    for _ in 0..3 {
        let ran = host
            .run(
                example::WORKFLOW_NAME,
                Some(example::DEMO_GOAL.into()),
                RunOptions::new(),
            )
            .await
            .unwrap();
        sessions.push(ran.session);
    }
    assert_eq!(scoring.stats().scored, 0);
    gate.add_permits(3);
    for session in &sessions {
        let feedback = scores_of(&host, session, 1).await;
        assert_eq!(feedback.scores[0].event.scorer, "held");
    }
    assert_eq!(scoring.stats().scored, 3);
}

#[tokio::test]
async fn workflows_without_scorers_are_not_scored() {
    let host = host();
    let scoring = OnlineScorers::new()
        .scorer("another", published())
        .start(&host);
    let ran = host
        .run(
            example::WORKFLOW_NAME,
            Some(example::DEMO_GOAL.into()),
            RunOptions::new(),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(host.feedback(&ran.session).await.unwrap().scores.is_empty());
    assert_eq!(scoring.stats().scored, 0);
}

#[test]
fn an_online_scorers_file_names_workflows_and_their_scorers() {
    let file = openharness_eval::OnlineScorersFile::from_toml(
        r#"
concurrency = 4
[[workflow]]
name = "chat"
[[workflow.scorer]]
kind = "cost"
name = "cheap"
max = 0.01
"#,
    )
    .unwrap();
    let scorers = file.build().unwrap();
    assert!(scorers.scores("chat"));
    assert!(!scorers.scores("other"));
    let empty =
        openharness_eval::OnlineScorersFile::from_toml("[[workflow]]\nname = \"chat\"\n").unwrap();
    assert!(
        empty
            .build()
            .unwrap_err()
            .contains("no `[[workflow.scorer]]`")
    );
    assert!(openharness_eval::OnlineScorersFile::from_toml("[[workflow]]\nnam = \"x\"\n").is_err());
}

#[tokio::test]
async fn peoples_thumbs_on_runs_are_scores_in_a_comparison() {
    use openharness_eval::{
        Case, Comparison, Experiment, ExperimentRecord, THUMBS_SCORER, Variant,
    };
    use openharness_host::feedback::{AnnotatedRun, AnnotationAdded, Thumbs};
    let host = host();
    let ran = Experiment::new("thumbs", host.clone())
        .case(Case::input("release", example::DEMO_GOAL).answers(["yes"]))
        .variant(Variant::new("baseline"))
        .variant(Variant::new("other"))
        .repeats(2)
        .scorer(published())
        .run()
        .await
        .unwrap();
    // People liked the baseline's runs and not the other's; one run nobody annotated.
    for (key, entry) in &ran.record.runs {
        if key.variant == "other" && key.repeat == 1 {
            continue;
        }
        let thumbs = if key.variant == "baseline" {
            Thumbs::Up
        } else {
            Thumbs::Down
        };
        let run = AnnotatedRun {
            experiment: "thumbs".into(),
            case: key.case.clone(),
            variant: key.variant.clone(),
            repeat: key.repeat,
        };
        host.annotate(
            entry.run.session.as_ref().unwrap(),
            AnnotationAdded::by("ana").thumbs(thumbs).run(run),
        )
        .await
        .unwrap();
    }
    let record = ExperimentRecord::load(host.store().as_ref(), "thumbs")
        .await
        .unwrap();
    let (record, annotated) = record.with_annotations(&host).await.unwrap();
    assert_eq!(annotated, 3);
    let comparison = Comparison::of(&record, "other", None, 0.05).unwrap();
    let thumbs = comparison
        .scorers
        .iter()
        .find(|s| s.scorer == THUMBS_SCORER)
        .expect("people's thumbs are compared");
    assert_eq!(thumbs.losses, 1, "{thumbs:?}");
    assert!(thumbs.regressed);
    assert!(comparison.gate().is_err());
    // Each arm is what people said of its runs; the run nobody annotated is left out.
    let mean = |arm: &openharness_eval::Arm| arm.mean.as_ref().map(|m| (m.mean, m.n));
    assert_eq!(mean(&thumbs.baseline), Some((1.0, 2)));
    assert_eq!(mean(&thumbs.variant), Some((0.0, 1)));
    assert_eq!((thumbs.baseline.runs, thumbs.variant.runs), (2, 1));
    assert_eq!(thumbs.baseline.pass_rate, 1.0);
    assert_eq!(thumbs.variant.pass_rate, 0.0);
}
