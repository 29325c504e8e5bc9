//! `BASE+guard`: any policy, checked against Linux by the apps' progress, as
//! `auto` checks its own arrangement (`docs/policies/auto.md`, "Checked
//! against outcomes"; Thread Tranquilizer §3's keep-or-revert, judged by the
//! apps' own progress as AToM judges by an app metric, Tang et al. §5).
//!
//! Problem: a policy that runs its apps slower than leaving them to Linux
//! does not know it, and neither does its user: nupoco shrinking a team that
//! never reaches its next region, equal giving a busy-waiting team one CPU.
//!
//! Approach: the base decides on every view as usual; for each set of running
//! apps, the guard alternates windows of the base's plan and of Linux (every
//! running app unmanaged, a DoP the base set back to the app's whole team, no
//! memory or scheduling settings), and keeps the base's plan only while the
//! pairs' confidence bound says it is not slower than Linux by more than 2%
//! (the trial of `auto/trial.rs`, with its re-checks). Admission stays the
//! base's: a started app cannot be taken back, so the guard judges the
//! arrangement of the apps that run. Each plan carries the trial's verdict as
//! data (`coloc_model::reason::Verdict`, judged by the guard: the set, the
//! state, the pairs' estimate), which `coloc run` prints per app set at the
//! end.
//!
//! The base sees observations of the arrangement in force, not only of its
//! own: a policy that learns from outcomes (nupoco's hill climb) learns from
//! the Linux windows too.

use std::time::Duration;

use coloc_model::reason::{Judge, ToLinux};
use coloc_model::{AppId, AppPlan, MemPolicy, Placement, Plan, SchedSettings, View};

use crate::trial::{Trial, Trials};
use crate::Policy;

/// The layer name that makes a guarded policy (`BASE+guard`).
pub const GUARD: &str = "guard";

/// A base policy checked against Linux.
#[derive(Debug)]
pub struct Guarded {
    name: &'static str,
    base: Box<dyn Policy>,
    trial: Trials,
    /// Time of the last observation counted.
    seen: Option<Duration>,
}

impl Guarded {
    pub fn new(base: Box<dyn Policy>, name: &'static str) -> Self {
        Self {
            name,
            base,
            trial: Trials::default(),
            seen: None,
        }
    }
}

/// Whether a plan for a running app changes anything Linux would do.
fn acts(p: &AppPlan, threads_requested: u32) -> bool {
    p.placement != Placement::Unmanaged
        || p.dop.is_some_and(|d| d != threads_requested)
        || p.memory != MemPolicy::Default
        || p.sched != SchedSettings::default()
}

impl Policy for Guarded {
    fn name(&self) -> &'static str {
        self.name
    }

    fn learned(&mut self, learned: &coloc_model::knowledge::derive::Learned) {
        self.base.learned(learned);
    }

    fn decide(&mut self, view: &View<'_>) -> Plan {
        let mut plan = self.base.decide(view);
        let fresh = view.last.is_some_and(|l| self.seen != Some(l.at));
        self.seen = view.last.map(|l| l.at);
        let mut set: Vec<AppId> = view.running().map(|a| a.id).collect();
        set.sort();
        let applicable = view.running().any(|a| {
            plan.for_app(a.id)
                .is_some_and(|p| acts(p, a.threads_requested))
        });
        let trial = Trial::follow(&mut self.trial, view, (set, 1), fresh, applicable);
        if !trial.space() {
            for p in &mut plan.apps {
                let Some(a) = view.running().find(|a| a.id == p.app) else {
                    continue;
                };
                let dop = p.dop.map(|_| a.threads_requested.max(1));
                *p = AppPlan {
                    dop,
                    ..AppPlan::native(a.id)
                }
                .because(ToLinux::Trial);
            }
        }
        plan.verdicts.push(trial.verdict(Judge::Guard));
        plan
    }
}
