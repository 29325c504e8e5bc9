//! `atom`: AToM, Tang et al.'s adaptive thread-to-core mapper (ISCA 2011 §5.2;
//! docs/policies/tang-atom.md).
//!
//! Problem: Algorithm 1 needs every app characterized and a rule per
//! architecture; AToM instead learns the latency app's best sharing
//! configuration online, judged by the app's own metric rather than IPC (§3.1).
//!
//! Approach, for each latency-class app, one at a time in arrival order:
//! - **one at a time**: the earliest-arrived app learns first; each later one
//!   waits, spread over the cores left (Algorithm 1's mapping without
//!   information), until every app before it executes its winner, then learns
//!   on the cores those winners leave. When an app competes again, every later
//!   app waits and competes again after it (its cores depend on the earlier
//!   winners), even when the earlier winner comes out the same. Any app
//!   arriving or leaving changes every app's co-runners, so all compete again
//!   in that order, each keeping its competition's history (no new warm-up).
//! - **candidates**: for the first app, the distinct sharing configurations of
//!   its threads, one per core, up to topology symmetry
//!   ([`coloc_model::topology::symmetry`], the enumeration the simulator's
//!   oracle searches), on as many cores as [`crate::tang`] would give it (one
//!   core is kept for each later latency app and one for the batch apps, which
//!   share every core the latency apps do not use); for a later app, whose
//!   cores left break the topology's symmetry, the distinct layouts of
//!   [`Levels::place`] on them for the four share/distribute choices at the
//!   LLC and bus levels. Then, with one latency app only, the status quo:
//!   Linux placing everything (with several it would undo the others'
//!   winners). At most [`Params::max_candidates`] configurations, in
//!   enumeration order.
//! - **warm-up**: an app's first [`Params::min_slot`] after its start runs on
//!   the first candidate unmeasured, whatever starts a competition in it (a
//!   co-runner arriving, an earlier app's competition ending), so that its
//!   initialization is not scored as that candidate's performance (the paper
//!   measures "stable behavior after the initialization phase", §3.1); a
//!   competition starting later learns at once.
//! - **learning phase**: each candidate runs for one slot, all slots equal;
//!   the first sample of a slot is dropped (it straddles the switch). The slot
//!   is [`Params::min_slot`] long, or as long as the first slot took to gather
//!   [`Params::min_samples`] samples when the signal is sparser (a service
//!   printing every few seconds): the slot adapts to the signal's rate, and
//!   stays equal across the competition.
//! - **execution phase**: the best mean wins and runs; every slot-long window
//!   is compared with the winner's learned score, and a change beyond
//!   [`Params::drift`] in two windows in a row starts a new competition, as
//!   does any change of the running co-runners or of the app's core budget.
//! - **signal** ([`Signal`]): the app's metric read live where the workload
//!   gives one, else OpenMP progress from the shim, else instructions retired,
//!   else CPU time; every plan's note says which, so the trace records it.

mod signal;
#[cfg(test)]
mod tests;

use std::time::Duration;

use coloc_model::reason::{self, CompetitionPhase, PlanReason, Reason};
use coloc_model::topology::symmetry::{Space, SymTree};
use coloc_model::{AppId, AppPlan, AppView, Plan, View};

pub use self::signal::Signal;
use crate::per_topology::PerTopology;
use crate::tang::levels::{Choice, Levels, Sharing};
use crate::tang::{core_budget, latency_apps, plan_with, wanted};
use crate::Policy;

/// AToM's knobs (docs/policies/tang-atom.md, AToM).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Shortest slot of the learning phase (the paper used 10 minutes for
    /// services running for weeks; coloc's runs are minutes long).
    pub min_slot: Duration,
    /// Samples a slot needs at least, which lengthens slots for sparse signals.
    pub min_samples: usize,
    /// Relative change of the execution phase's score, against the learned one,
    /// that counts as drift.
    pub drift: f64,
    /// Most sharing configurations competing.
    pub max_candidates: usize,
    /// Whether Linux's own placement competes too.
    pub with_linux: bool,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            min_slot: Duration::from_secs(2),
            min_samples: 3,
            drift: 0.15,
            max_candidates: 16,
            with_linux: true,
        }
    }
}

/// One competitor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Candidate {
    /// The latency app on these cores (indices into [`Levels::cores`]).
    Cores(Vec<usize>),
    /// Every app left to Linux.
    Linux,
}

#[derive(Clone, Debug, PartialEq)]
enum Phase {
    /// An earlier latency app competes: this one runs spread over the cores
    /// left and competes again once that one executes its winner.
    Waiting,
    WarmUp {
        started: Duration,
    },
    Learning {
        index: usize,
        started: Duration,
        samples: Vec<f64>,
        scores: Vec<f64>,
    },
    Executing {
        winner: usize,
        reference: f64,
        started: Duration,
        samples: Vec<f64>,
        drifted: u32,
    },
}

/// Why the last competition started, for notes and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    Start,
    Corunners,
    Budget,
    Drift,
    /// It waited for an earlier latency app's competition.
    Earlier,
}

impl Cause {
    /// The cause as the plan's reasons say it.
    fn kind(self) -> reason::CompetitionCause {
        use reason::CompetitionCause as C;
        match self {
            Cause::Start => C::Start,
            Cause::Corunners => C::Corunners,
            Cause::Budget => C::Budget,
            Cause::Drift => C::Drift,
            Cause::Earlier => C::Earlier,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
struct Competition {
    app: AppId,
    corunners: Vec<AppId>,
    cores: usize,
    /// The cores it chose among (those the earlier latency apps left).
    free: Vec<usize>,
    candidates: Vec<Candidate>,
    signal: Signal,
    /// Fixed after the first slot; None while it runs.
    slot: Option<Duration>,
    phase: Phase,
    cause: Cause,
    /// Samples dropped at the start of the current slot or window.
    skipped: bool,
    /// Time of the last observation sampled.
    seen: Option<Duration>,
    /// The most cores the app has wanted (see [`crate::tang`]'s budget).
    peak: usize,
}

/// The `atom` policy.
#[derive(Debug, Clone, Default)]
pub struct Atom {
    params: Params,
    /// Per latency app, in arrival order: its competition, None while it waits
    /// for an earlier app's.
    comps: Vec<Option<Competition>>,
    /// Competitions held so far.
    pub competitions: u32,
    /// The levels of the machine it last decided on (`per_topology.rs`).
    levels: PerTopology<Levels>,
}

impl Atom {
    pub fn with_params(params: Params) -> Self {
        Self {
            params,
            ..Self::default()
        }
    }

    /// The first latency app's candidate running now and phase, for tests.
    pub fn state(&self) -> Option<(&Candidate, bool, Cause)> {
        self.state_of(0)
    }

    /// The `i`-th latency app's (in arrival order) candidate running now, whether
    /// it is learning, and why its competition started; None while it waits.
    pub fn state_of(&self, i: usize) -> Option<(&Candidate, bool, Cause)> {
        let c = self.comps.get(i)?.as_ref()?;
        let (i, learning) = match &c.phase {
            Phase::Waiting => return None,
            Phase::WarmUp { .. } => (0, true),
            Phase::Learning { index, .. } => (*index, true),
            Phase::Executing { winner, .. } => (*winner, false),
        };
        Some((&c.candidates[i], learning, c.cause))
    }
}

/// The four share/distribute choices at the LLC and bus levels.
const CHOICES: [Choice; 4] = [
    Choice {
        llc: Sharing::Share,
        bus: Sharing::Share,
    },
    Choice {
        llc: Sharing::Share,
        bus: Sharing::Distribute,
    },
    Choice {
        llc: Sharing::Distribute,
        bus: Sharing::Share,
    },
    Choice {
        llc: Sharing::Distribute,
        bus: Sharing::Distribute,
    },
];

/// Where a latency app waits for an earlier one's competition (Algorithm 1's
/// line 20, its mapping without information).
const WAITING: Choice = CHOICES[3];

/// The configurations of `n` threads, one per core, among the cores `free`:
/// up to symmetry when every core is free, else the distinct layouts of the
/// four level choices; at most `max_candidates`, then Linux if `linux`.
pub fn candidates(
    levels: &Levels,
    view: &View<'_>,
    n: usize,
    free: &[usize],
    p: &Params,
    linux: bool,
) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    if free.len() < levels.cores.len() {
        for choice in CHOICES {
            let mut cores = levels.place(free, n, choice);
            cores.sort_unstable();
            let c = Candidate::Cores(cores);
            if !out.contains(&c) && out.len() < p.max_candidates {
                out.push(c);
            }
        }
        return out;
    }
    let tree = SymTree::new(view.topology);
    if let Ok(n16) = u16::try_from(n) {
        for form in Space::new(&tree, vec![n16]).enumerate() {
            let mut cores: Vec<usize> = form
                .iter()
                .zip(&tree.leaves)
                .filter(|(k, _)| **k > 0)
                .filter_map(|(_, cpu)| levels.cores.iter().position(|c| c.contains(*cpu)))
                .collect();
            cores.sort_unstable();
            cores.dedup();
            let c = Candidate::Cores(cores);
            if matches!(&c, Candidate::Cores(v) if v.len() == n) && !out.contains(&c) {
                out.push(c);
            }
            if out.len() >= p.max_candidates {
                break;
            }
        }
    }
    if (p.with_linux && linux) || out.is_empty() {
        out.push(Candidate::Linux);
    }
    out
}

/// What a latency app's competition chooses among.
#[derive(Clone, Copy, Debug)]
struct On<'a> {
    /// Cores it gets ([`core_budget`]).
    budget: usize,
    /// Cores the earlier latency apps left.
    free: &'a [usize],
    /// Whether it is the only latency app (then Linux competes too).
    alone: bool,
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        f64::NEG_INFINITY
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

impl Atom {
    /// Starts the `i`-th latency app's competition when it has none or its
    /// last one is stale: other co-runners, budget or cores to choose among.
    fn check(&mut self, i: usize, view: &View<'_>, levels: &Levels, app: &AppView, on: On<'_>) {
        let mut corunners: Vec<AppId> = view
            .running()
            .filter(|a| a.id != app.id)
            .map(|a| a.id)
            .collect();
        corunners.sort_unstable();
        let cause = match &self.comps[i] {
            None => Some(Cause::Start),
            Some(c) if c.phase == Phase::Waiting => Some(Cause::Earlier),
            Some(c) if c.corunners != corunners => Some(Cause::Corunners),
            Some(c) if c.cores != on.budget || c.free != on.free => Some(Cause::Budget),
            Some(_) => None,
        };
        if let Some(cause) = cause {
            self.start(i, view, levels, app, on, corunners, cause);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn start(
        &mut self,
        i: usize,
        view: &View<'_>,
        levels: &Levels,
        app: &AppView,
        on: On<'_>,
        corunners: Vec<AppId>,
        cause: Cause,
    ) {
        self.competitions += 1;
        // The first slot after the app's start is its warm-up, whatever starts
        // the competition: a batch app started with the service arrives an
        // epoch after it, and that new co-runner must not turn the warm-up
        // into a scored slot of the service's initialization.
        let begun = app.started_at.unwrap_or(view.now);
        self.comps[i] = Some(Competition {
            app: app.id,
            corunners,
            cores: on.budget,
            free: on.free.to_vec(),
            candidates: candidates(levels, view, on.budget, on.free, &self.params, on.alone),
            signal: Signal::for_app(app, view.last),
            slot: None,
            phase: if view.now.saturating_sub(begun) < self.params.min_slot {
                Phase::WarmUp { started: begun }
            } else {
                Phase::Learning {
                    index: 0,
                    started: view.now,
                    samples: Vec::new(),
                    scores: Vec::new(),
                }
            },
            cause,
            skipped: false,
            seen: view.last.map(|o| o.at),
            peak: on.budget,
        });
    }

    /// Feeds this epoch's sample to the `i`-th latency app's competition and
    /// moves it through the phases.
    fn step(&mut self, i: usize, view: &View<'_>) {
        let params = self.params;
        let Some(c) = self.comps[i].as_mut() else {
            return;
        };
        // One sample per new observation, whatever the trigger (an epoch's
        // observation may arrive with a thread change as the trigger).
        let fresh = view.last.map(|o| o.at).filter(|&at| c.seen != Some(at));
        let sample = fresh.and_then(|at| {
            c.seen = Some(at);
            c.signal.sample(c.app, view.prev, view.last)
        });
        let mut restart = false;
        match &mut c.phase {
            Phase::Waiting => {}
            Phase::WarmUp { started } => {
                if view.now.saturating_sub(*started) >= params.min_slot {
                    c.phase = Phase::Learning {
                        index: 0,
                        started: view.now,
                        samples: Vec::new(),
                        scores: Vec::new(),
                    };
                }
            }
            Phase::Learning {
                index,
                started,
                samples,
                scores,
            } => {
                if let Some(s) = sample {
                    if c.skipped {
                        samples.push(s);
                    } else {
                        c.skipped = true;
                    }
                }
                let elapsed = view.now.saturating_sub(*started);
                let done = match c.slot {
                    Some(slot) => elapsed >= slot,
                    None => elapsed >= params.min_slot && samples.len() >= params.min_samples,
                };
                if done {
                    c.slot.get_or_insert(elapsed);
                    scores.push(mean(samples));
                    samples.clear();
                    c.skipped = false;
                    *started = view.now;
                    *index += 1;
                    if *index == c.candidates.len() {
                        let (winner, reference) = scores.iter().copied().enumerate().fold(
                            (0, f64::NEG_INFINITY),
                            |best, (i, s)| if s > best.1 { (i, s) } else { best },
                        );
                        c.phase = Phase::Executing {
                            winner,
                            reference,
                            started: view.now,
                            samples: Vec::new(),
                            drifted: 0,
                        };
                    }
                }
            }
            Phase::Executing {
                reference,
                started,
                samples,
                drifted,
                ..
            } => {
                if let Some(s) = sample {
                    samples.push(s);
                }
                let slot = c.slot.unwrap_or(params.min_slot);
                if view.now.saturating_sub(*started) >= slot && !samples.is_empty() {
                    let score = mean(samples);
                    let change = (score - *reference).abs() / reference.abs().max(f64::EPSILON);
                    *drifted = if change > params.drift {
                        *drifted + 1
                    } else {
                        0
                    };
                    samples.clear();
                    *started = view.now;
                    restart = *drifted >= 2;
                }
            }
        }
        if restart {
            c.cause = Cause::Drift;
            c.phase = Phase::Learning {
                index: 0,
                started: view.now,
                samples: Vec::new(),
                scores: Vec::new(),
            };
            c.skipped = false;
            c.slot = None;
            self.competitions += 1;
        }
    }
}

/// The plan with each latency app's competition among its reasons.
fn with_competitions(mut plan: Plan, said: Vec<(AppId, reason::Competition)>) -> Plan {
    for (id, c) in said {
        if let Some(p) = plan.apps.iter_mut().find(|p| p.app == id) {
            p.reasons.push(Reason::Competition(c));
        }
    }
    plan
}

impl Policy for Atom {
    fn name(&self) -> &'static str {
        "atom"
    }

    fn decide(&mut self, view: &View<'_>) -> Plan {
        let latency = latency_apps(view);
        if latency.is_empty() {
            self.comps.clear();
            let mut plan = Plan::of(view.apps.iter().map(|a| AppPlan::native(a.id)).collect());
            plan.reasons.push(PlanReason::NoLatencyApp);
            return plan;
        }
        let levels = self.levels.get(view.topology, Levels::new);
        // Each app keeps its own competition when an earlier one leaves (it
        // then competes again for its new co-runners, not as a new app).
        let mut old = std::mem::take(&mut self.comps);
        self.comps = latency
            .iter()
            .map(|a| {
                old.iter_mut()
                    .find(|c| c.as_ref().is_some_and(|c| c.app == a.id))
                    .and_then(Option::take)
            })
            .collect();
        let mut free: Vec<usize> = (0..levels.cores.len()).collect();
        let mut pinned: Vec<(AppId, Vec<usize>)> = Vec::new();
        let mut said: Vec<(AppId, reason::Competition)> = Vec::new();
        // Whether every earlier latency app executes its winner.
        let mut settled = true;
        for (i, app) in latency.iter().enumerate() {
            // The most threads the app has run with: a service whose helpers
            // come and go does not change its budget, and so its competition,
            // each time.
            let peak = self.comps[i]
                .as_ref()
                .map_or(wanted(app), |c| c.peak.max(wanted(app)));
            let budget = core_budget(view, &latency, i, free.len(), peak);
            if !settled {
                if let Some(c) = self.comps[i].as_mut() {
                    c.phase = Phase::Waiting;
                }
                let cores = levels.place(&free, budget, WAITING);
                said.push((
                    app.id,
                    reason::Competition {
                        phase: CompetitionPhase::Waiting,
                        cpus: Some(levels.cpus(&cores)),
                        signal: None,
                    },
                ));
                free.retain(|c| !cores.contains(c));
                pinned.push((app.id, cores));
                continue;
            }
            let on = On {
                budget,
                free: &free,
                alone: latency.len() == 1,
            };
            self.check(i, view, &levels, app, on);
            let c = self.comps[i].as_mut().expect("check starts a competition");
            c.peak = c.peak.max(peak);
            self.step(i, view);
            let c = self.comps[i].as_ref().expect("check starts a competition");
            let of = c.candidates.len() as u32;
            let (index, phase) = match &c.phase {
                Phase::Waiting => unreachable!("check ends the wait"),
                Phase::WarmUp { .. } => (0, CompetitionPhase::WarmUp),
                Phase::Learning { index, .. } => (
                    *index,
                    CompetitionPhase::Learning {
                        cause: c.cause.kind(),
                        slot: *index as u32 + 1,
                        of,
                    },
                ),
                Phase::Executing {
                    winner, reference, ..
                } => (
                    *winner,
                    CompetitionPhase::Executing {
                        winner: *winner as u32 + 1,
                        of,
                        score: *reference,
                    },
                ),
            };
            settled = matches!(c.phase, Phase::Executing { .. });
            said.push((
                c.app,
                reason::Competition {
                    phase,
                    cpus: match &c.candidates[index] {
                        Candidate::Cores(cores) => Some(levels.cpus(cores)),
                        Candidate::Linux => None,
                    },
                    signal: Some(c.signal.kind()),
                },
            ));
            match &c.candidates[index] {
                Candidate::Cores(cores) => {
                    free.retain(|f| !cores.contains(f));
                    pinned.push((c.app, cores.clone()));
                }
                // Offered only to a lone latency app.
                Candidate::Linux => {
                    let plan = Plan::of(view.apps.iter().map(|a| AppPlan::native(a.id)).collect());
                    return with_competitions(plan, said);
                }
            }
        }
        with_competitions(plan_with(view, &levels, &pinned), said)
    }
}
