//! `auto`: the policy coloc uses when none is given (`docs/policies/auto.md`).
//!
//! Problem: no single policy wins on real co-located programs. Space sharing
//! (per-app DoP, NuPoCo PACT 2018 §5) wins when teams oversubscribe the machine
//! and synchronize, and loses when an app's DoP cannot change: OpenMP applies a
//! DoP when a region starts, so a program whose work is one long region keeps a
//! shrunken team after its co-runner left, and an app without the DoP channel
//! cannot be shrunk at all. Plain Linux is work conserving and never strands a
//! team. A default policy must never be worse than doing nothing, and must know
//! when it is.
//!
//! Approach, per decision:
//! 1. Admission: every app starts when it arrives. Holding one back only pays
//!    with its length known in advance, which auto does not assume.
//! 2. Levers: an app's DoP lever *acts* when it is malleable, its runtime
//!    answers through the DoP channel, and regions end often (at least
//!    `evidence::MIN_REGIONS` so far, the last within
//!    `evidence::LEVER_WINDOW`). Apps whose lever does not act are left to
//!    Linux with their whole team.
//! 3. Space sharing: while the apps' threads outnumber the CPUs and some lever
//!    acts, each such app gets a DoP of an equal share of the CPUs left by the
//!    apps whose threads are fixed. Placement stays with Linux (work
//!    conserving: no CPU is kept from a waiting thread), and a DoP never goes
//!    below 1.
//! 4. Checked against outcomes (`auto/trial.rs`): for every set of co-running apps,
//!    auto measures their progress left to Linux, then under space sharing,
//!    and goes back to Linux for that set if space sharing measurably slowed
//!    them; a new set (arrival, exit) is tried afresh.
//! 5. Objective ([`Objective`]): `makespan` (the default) sets no scheduling
//!    settings; `art` favours the apps that have had the least CPU (least
//!    attained service, which shortens response times when lengths are
//!    unknown) by nice value; `latency` lowers the priority of batch apps while
//!    a latency-class app runs and never shrinks a latency app's team.
//!
//! Every plan's note says, per app, what auto chose and why.
//!
//! Not done yet: placement by ReSense's scores and Tang's heuristic from
//! stored profiles, memory policy, and co-scheduling whole teams of
//! non-malleable apps (time sharing by gangs); auto leaves those to Linux.

pub(crate) mod evidence;
#[cfg(test)]
mod tests;
mod trial;

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::str::FromStr;
use std::time::Duration;

use coloc_model::{AppClass, AppId, AppPlan, AppView, Plan, SchedSettings, View};

use self::evidence::{progress, Evidence};
use self::trial::{Stage, Trial};
use crate::Policy;

/// What auto optimizes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Objective {
    /// The time until the last app ends (the default).
    #[default]
    Makespan,
    /// The average response time of the apps.
    Art,
    /// The response of latency-class apps.
    Latency,
}

impl Objective {
    pub const ALL: [Objective; 3] = [Objective::Makespan, Objective::Art, Objective::Latency];

    pub fn name(self) -> &'static str {
        match self {
            Objective::Makespan => "makespan",
            Objective::Art => "art",
            Objective::Latency => "latency",
        }
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An `--objective` value that names no objective.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown objective `{0}` (expected one of: makespan, art, latency)")]
pub struct UnknownObjective(pub String);

impl FromStr for Objective {
    type Err = UnknownObjective;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Objective::ALL
            .into_iter()
            .find(|o| o.name() == s)
            .ok_or_else(|| UnknownObjective(s.to_string()))
    }
}

/// Nice value of batch apps while a latency-class app runs (`latency`).
pub const LATENCY_NICE: i8 = 10;
/// Nice step between apps ranked by attained CPU time (`art`): the app that has
/// had the least CPU runs at nice 0, the next at this, and so on up to 19.
pub const ART_NICE_STEP: i8 = 3;

/// The auto policy.
#[derive(Debug, Default)]
pub struct Auto {
    objective: Objective,
    evidence: BTreeMap<AppId, Evidence>,
    trial: Option<Trial>,
    /// Time of the last observation taken in.
    seen: Option<Duration>,
}

impl Auto {
    pub fn new(objective: Objective) -> Self {
        Self {
            objective,
            ..Self::default()
        }
    }

    /// Takes in the view's last observation, once: each app's evidence.
    /// Returns whether it was new.
    fn observe(&mut self, view: &View<'_>) -> bool {
        let Some(last) = view.last else { return false };
        if self.seen == Some(last.at) {
            return false;
        }
        self.seen = Some(last.at);
        for s in &last.apps {
            if let Some(e) = self.evidence.get_mut(&s.app) {
                e.update(s, last.at);
            }
        }
        true
    }

    /// Threads an app will run if auto does not change its DoP.
    fn fixed_threads(a: &AppView) -> u32 {
        (a.threads.len() as u32).max(a.threads_requested).max(1)
    }

    /// Whether this app's DoP may be set: its lever acts, and under `latency`
    /// it is not a latency app.
    fn steer(&self, a: &AppView, now: Duration) -> bool {
        a.spec.malleable
            && !(self.objective == Objective::Latency && a.spec.class == AppClass::Latency)
            && self.evidence.get(&a.id).is_some_and(|e| e.lever_acts(now))
    }

    /// Scheduling settings the objective asks for, per running app.
    fn sched(&self, running: &[&AppView]) -> BTreeMap<AppId, SchedSettings> {
        let nice = |n: i8| SchedSettings {
            nice: Some(n),
            ..SchedSettings::default()
        };
        match self.objective {
            Objective::Makespan => BTreeMap::new(),
            Objective::Latency => {
                let latency = running.iter().any(|a| a.spec.class == AppClass::Latency);
                running
                    .iter()
                    .map(|a| {
                        let n = if latency && a.spec.class == AppClass::Batch {
                            LATENCY_NICE
                        } else {
                            0
                        };
                        (a.id, nice(n))
                    })
                    .collect()
            }
            Objective::Art => {
                let mut by_service: Vec<(u64, AppId)> = running
                    .iter()
                    .map(|a| (self.evidence.get(&a.id).map_or(0, |e| e.cpu_ns), a.id))
                    .collect();
                by_service.sort();
                by_service
                    .into_iter()
                    .enumerate()
                    .map(|(rank, (_, id))| {
                        let n = (rank as i64 * i64::from(ART_NICE_STEP)).min(19) as i8;
                        (id, nice(n))
                    })
                    .collect()
            }
        }
    }
}

impl Policy for Auto {
    fn name(&self) -> &'static str {
        "auto"
    }

    fn decide(&mut self, view: &View<'_>) -> Plan {
        let now = view.now;
        let cpus = view.topology.cpus().len().max(1) as u32;
        self.evidence
            .retain(|id, _| view.apps.iter().any(|a| a.id == *id));
        let running: Vec<&AppView> = view.running().collect();
        for a in &running {
            self.evidence.entry(a.id).or_default();
        }
        let mut set: Vec<AppId> = running.iter().map(|a| a.id).collect();
        set.sort();

        // Evidence first (it decides which levers act), then the trial.
        let fresh = self.observe(view);
        let steered: Vec<AppId> = running
            .iter()
            .filter(|a| self.steer(a, now))
            .map(|a| a.id)
            .collect();
        let demand: u32 = running.iter().map(|a| Self::fixed_threads(a)).sum();
        let applicable = demand > cpus && !steered.is_empty();
        let sched = self.sched(&running);
        if self.trial.as_ref().is_none_or(|t| t.set != set) {
            self.trial = Some(Trial::new(set, now));
        }
        let trial = self.trial.as_mut().expect("set above");
        // The interval just observed counts for the trial of this set (if the
        // set was there all along).
        if let (true, Some(prev), Some(last)) = (fresh, view.prev, view.last) {
            let work: Vec<(AppId, (f64, f64))> = trial
                .set
                .iter()
                .filter_map(|&id| progress(prev, last, id).map(|p| (id, p)))
                .collect();
            trial.record(prev.at, last.at, &work, applicable);
        }
        // A set settled on Linux because nothing could act is tried again once
        // something can.
        if applicable
            && matches!(trial.stage, Stage::Settled { space: false, ref reason }
                if reason.starts_with("nothing"))
        {
            *trial = Trial::new(trial.set.clone(), now);
        }
        let space = applicable && trial.space();
        let stage = trial.describe();

        // Shares: apps whose threads are fixed keep up to an equal share each;
        // steered apps split the rest equally.
        let fair = (cpus / running.len().max(1) as u32).max(1);
        let fixed: u32 = running
            .iter()
            .filter(|a| !steered.contains(&a.id))
            .map(|a| Self::fixed_threads(a).min(fair))
            .sum();
        let left = cpus.saturating_sub(fixed).max(steered.len() as u32);

        let mut note = format!("auto ({}): {stage}", self.objective);
        let mut k = 0u32;
        let apps = view
            .apps
            .iter()
            .map(|a| {
                let mut p = AppPlan::native(a.id);
                if !a.is_running() {
                    let _ = write!(note, "; {} admitted on arrival", a.id);
                    return p;
                }
                p.sched = sched.get(&a.id).copied().unwrap_or_default();
                let why = self
                    .evidence
                    .get(&a.id)
                    .map(|e| e.lever_reason(now))
                    .unwrap_or_default();
                if !steered.contains(&a.id) {
                    let _ = if a.spec.malleable {
                        write!(note, "; {} left to Linux (DoP lever: {why})", a.id)
                    } else {
                        write!(note, "; {} left to Linux (not malleable)", a.id)
                    };
                } else if space {
                    let n = steered.len() as u32;
                    let share = (left / n + u32::from(k < left % n)).max(1);
                    k += 1;
                    let dop = share.min(a.threads_requested.max(1));
                    p.dop = Some(dop);
                    let _ = write!(
                        note,
                        "; {} dop {} ({} threads wanted on {cpus} CPUs; {why})",
                        a.id, dop, demand
                    );
                } else {
                    // Its whole team back, once its next region starts.
                    p.dop = Some(a.threads_requested.max(1));
                    let _ = write!(note, "; {} full team, left to Linux", a.id);
                }
                if let Some(n) = p.sched.nice.filter(|n| *n != 0) {
                    let _ = write!(note, " nice {n}");
                }
                p
            })
            .collect();
        Plan { apps, note }
    }
}
