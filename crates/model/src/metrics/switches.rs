//! How often a trial switched arrangements, against how often the apps'
//! co-runners changed (docs/policies/auto.md, "Hysteresis: a verdict stays
//! decided"): from the typed trial states the plans of a trace carry. A
//! trial that decides and stays decided switches at most once per change of
//! co-runners.
//!
//! What counts is what a verdict does, not how the trial measures: the
//! windows of an open trial (own and Linux alternating, about 7 switches
//! per set) and a settled trial's re-check windows are its measurements,
//! bounded by the trial's own rules (4 pairs; 10% of the time since the
//! verdict). A switch is the one a verdict makes (from the arrangement its
//! last window ran to the one it settles on) and every later turn of the
//! settled arrangement (a re-check that reverses the verdict, or a reopened
//! trial that settles the other way).

use crate::reason::{Arrangement, Judge, TrialState, Verdict};
use crate::{AppId, TraceEvent};

/// What a trace's verdicts of one judge say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrialSwitches {
    /// Changes of the running set (an arrival or an exit changes every
    /// other app's co-runners).
    pub changes: usize,
    /// Sets of two or more co-running apps that a trial ran an arrangement
    /// for.
    pub sets: usize,
    /// Switches its verdicts made within one set: the one a verdict makes,
    /// and each turn of a settled arrangement (module doc).
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

/// The arrangement a state's verdict settled on (None: no verdict).
/// A re-check measures the other arrangement under a standing verdict.
pub fn settled(s: TrialState) -> Option<Arrangement> {
    match s {
        TrialState::OwnKept | TrialState::Rechecking(Arrangement::Linux) => Some(Arrangement::Own),
        TrialState::BackToLinux | TrialState::Rechecking(Arrangement::Own) => {
            Some(Arrangement::Linux)
        }
        TrialState::Open(_)
        | TrialState::Waiting
        | TrialState::NothingToActOn
        | TrialState::NotTried => None,
    }
}

/// One set's trial as its verdicts went.
struct SetTrial {
    apps: Vec<AppId>,
    /// The arrangement its last state ran.
    running: Option<Arrangement>,
    /// The arrangement its last verdict settled on.
    settled: Option<Arrangement>,
}

impl SetTrial {
    fn new(v: &Verdict) -> Self {
        Self {
            apps: v.apps.clone(),
            running: arrangement(v.state),
            settled: settled(v.state),
        }
    }

    /// Takes the set's next state; whether its verdict switched.
    fn step(&mut self, state: TrialState) -> bool {
        let now = settled(state);
        let switched = match (self.settled, now) {
            // The verdict's own switch: from what its last window ran.
            (None, Some(s)) => self.running.is_some_and(|r| r != s),
            // A settled arrangement turned.
            (Some(was), Some(s)) => was != s,
            (_, None) => false,
        };
        self.settled = now.or(self.settled);
        self.running = arrangement(state);
        switched
    }
}

/// Counts, over the plans of `trace`, the changes of co-runners and the
/// switches of `judge`'s verdicts.
pub fn trial_switches(trace: &[TraceEvent], judge: Judge) -> TrialSwitches {
    let verdicts = trace.iter().flat_map(|e| match e {
        TraceEvent::Plan { plan, .. } => plan.verdicts.as_slice(),
        _ => &[],
    });
    let mut set: Option<SetTrial> = None;
    let mut out = TrialSwitches::default();
    for v in verdicts.filter(|v| v.judge == judge) {
        match set.as_mut() {
            Some(s) if s.apps == v.apps => out.switches += usize::from(s.step(v.state)),
            was => {
                out.changes += usize::from(was.is_some());
                out.sets += usize::from(arrangement(v.state).is_some() && v.apps.len() > 1);
                set = Some(SetTrial::new(v));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::plan::Plan;
    use crate::view::Trigger;

    use Arrangement::{Linux, Own};
    use TrialState::{BackToLinux, NothingToActOn, Open, OwnKept, Rechecking, Waiting};

    fn ids(apps: &[u32]) -> Vec<AppId> {
        apps.iter().map(|&app| AppId { app, rep: 0 }).collect()
    }

    /// One plan per epoch, each with `judge`'s verdict on the set `apps`.
    fn trace(plans: &[(&[u32], TrialState)]) -> Vec<TraceEvent> {
        plans
            .iter()
            .enumerate()
            .map(|(i, (apps, state))| TraceEvent::Plan {
                t: Duration::from_millis(100 * i as u64),
                trigger: Trigger::Epoch,
                plan: Plan {
                    verdicts: vec![Verdict {
                        judge: Judge::Auto,
                        apps: ids(apps),
                        state: *state,
                        estimate: None,
                        cost: None,
                        round: 1,
                        pair: None,
                        stored: None,
                    }],
                    ..Plan::default()
                },
                decide: Duration::ZERO,
            })
            .collect()
    }

    fn counted(plans: &[(&[u32], TrialState)]) -> (usize, usize, usize) {
        let s = trial_switches(&trace(plans), Judge::Auto);
        (s.changes, s.sets, s.switches)
    }

    const AB: &[u32] = &[0, 1];
    const ABC: &[u32] = &[0, 1, 2];
    const BC: &[u32] = &[1, 2];
    const C: &[u32] = &[2];

    /// (case, plans, (changes, sets, switches)).
    #[test]
    fn only_what_a_verdict_does_counts() {
        #[allow(clippy::type_complexity)]
        let cases: &[(&str, &[(&[u32], TrialState)], (usize, usize, usize))] = &[
            (
                // 7 window switches while measuring, then the verdict's
                // own switch from the last (Linux) window to own: 1.
                "a trial that measures and keeps own",
                &[
                    (AB, Open(Own)),
                    (AB, Open(Linux)),
                    (AB, Open(Own)),
                    (AB, Open(Linux)),
                    (AB, Open(Own)),
                    (AB, Open(Linux)),
                    (AB, Open(Own)),
                    (AB, Open(Linux)),
                    (AB, OwnKept),
                    (AB, OwnKept),
                ],
                (0, 1, 1),
            ),
            (
                // Its last window ran Linux: the verdict switches nothing.
                "a verdict for the arrangement running",
                &[(AB, Open(Own)), (AB, Open(Linux)), (AB, BackToLinux)],
                (0, 1, 0),
            ),
            (
                // Re-check windows measure; a re-check that confirms the
                // verdict switches nothing.
                "re-checks that confirm",
                &[
                    (AB, Open(Linux)),
                    (AB, OwnKept),
                    (AB, Rechecking(Linux)),
                    (AB, OwnKept),
                    (AB, Rechecking(Linux)),
                    (AB, OwnKept),
                ],
                (0, 1, 1),
            ),
            (
                // A re-check that turns the verdict: the verdict's switch
                // and the turn.
                "a re-check that turns",
                &[
                    (AB, Open(Linux)),
                    (AB, OwnKept),
                    (AB, Rechecking(Linux)),
                    (AB, BackToLinux),
                ],
                (0, 1, 2),
            ),
            (
                // A trial that settles and turns at every epoch: every
                // plan after the first is a switch, 5 over no change of
                // co-runners.
                "a verdict that flips every epoch",
                &[
                    (AB, OwnKept),
                    (AB, BackToLinux),
                    (AB, OwnKept),
                    (AB, BackToLinux),
                    (AB, OwnKept),
                    (AB, BackToLinux),
                ],
                (0, 1, 5),
            ),
            (
                // Reopened (no verdict) and settled the other way: a turn.
                "a reopened trial that settles the other way",
                &[
                    (AB, OwnKept),
                    (AB, Open(Own)),
                    (AB, Open(Linux)),
                    (AB, BackToLinux),
                ],
                (0, 1, 1),
            ),
            (
                // Each set starts afresh; a lone app is no set; waiting
                // runs own unmeasured.
                "sets come and go",
                &[
                    (AB, Open(Own)),
                    (AB, Open(Linux)),
                    (AB, OwnKept),
                    (ABC, Waiting),
                    (ABC, Waiting),
                    (BC, Open(Own)),
                    (BC, Open(Linux)),
                    (BC, BackToLinux),
                    (C, NothingToActOn),
                ],
                (3, 3, 1),
            ),
        ];
        for (case, plans, want) in cases {
            assert_eq!(counted(plans), *want, "{case}");
        }
    }
}
