//! A scoring's verdicts: [`VerdictKey`] (what identifies one), [`Judging`] (those a scoring may
//! reuse, those it asked for, its tally) and [`Judged`] (the tally). Apart from the judge
//! itself, so that scorers carry a scoring's verdicts without depending on the judge.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use openharness_core::SessionId;
use serde::Serialize;

use crate::events::EvalJudged;

/// What identifies a verdict: the judge's definition, the judged run's session and the
/// judged content (both hashed).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct VerdictKey {
    pub(crate) definition: String,
    pub(crate) session: SessionId,
    pub(crate) content: String,
}

impl VerdictKey {
    /// The key of a recorded verdict.
    pub(crate) fn of(verdict: &EvalJudged) -> Self {
        Self {
            definition: verdict.definition.clone(),
            session: verdict.session.clone(),
            content: verdict.content.clone(),
        }
    }
}

/// What judges did in a scoring: verdicts given, how many were asked of a model and how
/// many reused from the log, and the model calls the asked ones took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Judged {
    /// Verdicts given (asked + reused).
    pub verdicts: usize,
    /// Verdicts a judge's model was asked for.
    pub asked: usize,
    /// Verdicts reused from the experiment's log: no model called.
    pub reused: usize,
    /// Model calls the judges made (counted in their sessions: each agent call, and each new
    /// ask after a rejected output), including those of judges that failed.
    pub model_calls: u64,
}

impl std::fmt::Display for Judged {
    /// `120 verdicts, 0 model calls (120 reused)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} verdict{}, {} model call{} ({} reused)",
            self.verdicts,
            if self.verdicts == 1 { "" } else { "s" },
            self.model_calls,
            if self.model_calls == 1 { "" } else { "s" },
            self.reused
        )
    }
}

/// The verdicts a scoring may reuse (from the experiment's log), those it asked for (to
/// record), and its tally. Shared by every run of one scoring.
#[derive(Debug, Default)]
pub(crate) struct Judging {
    known: BTreeMap<VerdictKey, EvalJudged>,
    fresh: Mutex<Vec<EvalJudged>>,
    tally: Mutex<Judged>,
}

impl Judging {
    /// A scoring that reuses `known` verdicts.
    pub(crate) fn new(known: BTreeMap<VerdictKey, EvalJudged>) -> Self {
        Self {
            known,
            ..Self::default()
        }
    }

    /// The recorded verdict for `key`, counted as reused.
    pub(super) fn reuse(&self, key: &VerdictKey) -> Option<&EvalJudged> {
        let found = self.known.get(key)?;
        let mut tally = self.tally.lock().unwrap_or_else(PoisonError::into_inner);
        tally.verdicts += 1;
        tally.reused += 1;
        Some(found)
    }

    /// A judge's model was asked, making `calls` model calls; `verdict` when it gave one.
    pub(super) fn asked(&self, verdict: Option<EvalJudged>, calls: u64) {
        let mut tally = self.tally.lock().unwrap_or_else(PoisonError::into_inner);
        tally.model_calls += calls;
        if let Some(verdict) = verdict {
            tally.verdicts += 1;
            tally.asked += 1;
            self.fresh
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(verdict);
        }
    }

    /// The verdicts asked for since the last call, to record.
    pub(crate) fn take_fresh(&self) -> Vec<EvalJudged> {
        std::mem::take(&mut *self.fresh.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The tally so far.
    pub(crate) fn tally(&self) -> Judged {
        *self.tally.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
