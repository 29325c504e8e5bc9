//! How often a trial switched arrangements, against how often the apps'
//! co-runners changed (docs/policies/auto.md, "Hysteresis: a verdict stays
//! decided"): from the verdicts the plans of a trace carry. A trial that
//! decides and stays decided switches at most once per change of
//! co-runners.

use crate::reason::{Arrangement, Judge, TrialState};
use crate::TraceEvent;

/// What a trace's verdicts of one judge say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrialSwitches {
    /// Changes of the running set (an arrival or an exit changes every
    /// other app's co-runners).
    pub changes: usize,
    /// Sets of two or more co-running apps that a trial ran an arrangement
    /// for.
    pub sets: usize,
    /// Switches between the two arrangements within one set.
    pub switches: usize,
}

/// The arrangement a trial runs in a state (None: no trial runs).
pub fn arrangement(s: TrialState) -> Option<Arrangement> {
    match s {
        TrialState::Open(a) => Some(a),
        TrialState::OwnKept | TrialState::Waiting | TrialState::Rechecking(Arrangement::Linux) => {
            Some(Arrangement::Own)
        }
        TrialState::BackToLinux | TrialState::Rechecking(Arrangement::Own) => {
            Some(Arrangement::Linux)
        }
        TrialState::NothingToActOn | TrialState::NotTried => None,
    }
}

/// Counts, over the plans of `trace`, the changes of co-runners and the
/// switches of `judge`'s trials.
pub fn trial_switches(trace: &[TraceEvent], judge: Judge) -> TrialSwitches {
    let mut last: Option<(Vec<crate::AppId>, Option<Arrangement>)> = None;
    let mut out = TrialSwitches::default();
    let verdicts = trace.iter().flat_map(|e| match e {
        TraceEvent::Plan { plan, .. } => plan.verdicts.clone(),
        _ => Vec::new(),
    });
    for v in verdicts.filter(|v| v.judge == judge) {
        let now = arrangement(v.state);
        match &last {
            Some((apps, was)) if *apps == v.apps => {
                out.switches += usize::from(was.is_some() && now.is_some() && *was != now);
            }
            Some(_) => {
                out.changes += 1;
                out.sets += usize::from(now.is_some() && v.apps.len() > 1);
            }
            None => out.sets += usize::from(now.is_some() && v.apps.len() > 1),
        }
        last = Some((v.apps.clone(), now));
    }
    out
}
