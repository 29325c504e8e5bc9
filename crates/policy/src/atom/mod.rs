//! `atom`: AToM, Tang et al.'s adaptive thread-to-core mapper (ISCA 2011 §5.2;
//! docs/policies/tang-atom.md).
//!
//! Problem: Algorithm 1 needs every app characterized and a rule per
//! architecture; AToM instead learns the latency app's best sharing
//! configuration online, judged by the app's own metric rather than IPC (§3.1).
//!
//! Approach, for the earliest-arrived latency-class app (later latency apps
//! count as its co-runners):
//! - **candidates**: the distinct sharing configurations of its threads, one
//!   per core, up to topology symmetry ([`coloc_model::topology::symmetry`], the
//!   enumeration the simulator's oracle searches), on as many cores as
//!   [`crate::tang`] would give it (one core is kept for the batch apps, which
//!   share every core it does not use), then the status quo: Linux placing
//!   everything. At most [`Params::max_candidates`] configurations, in
//!   enumeration order.
//! - **warm-up**: a newly started app first runs one [`Params::min_slot`] on
//!   the first candidate unmeasured, so that its initialization is not scored
//!   as that candidate's performance (the paper measures "stable behavior
//!   after the initialization phase", §3.1).
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

use coloc_model::topology::symmetry::{Space, SymTree};
use coloc_model::{AppId, AppPlan, AppView, Plan, View};

pub use self::signal::Signal;
use crate::tang::levels::Levels;
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
}

#[derive(Clone, Debug, PartialEq)]
struct Competition {
    app: AppId,
    corunners: Vec<AppId>,
    cores: usize,
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
    comp: Option<Competition>,
    /// Competitions held so far.
    pub competitions: u32,
}

impl Atom {
    pub fn with_params(params: Params) -> Self {
        Self {
            params,
            ..Self::default()
        }
    }

    /// The candidate running now and the phase, for tests and notes.
    pub fn state(&self) -> Option<(&Candidate, bool, Cause)> {
        let c = self.comp.as_ref()?;
        let (i, learning) = match &c.phase {
            Phase::WarmUp { .. } => (0, true),
            Phase::Learning { index, .. } => (*index, true),
            Phase::Executing { winner, .. } => (*winner, false),
        };
        Some((&c.candidates[i], learning, c.cause))
    }
}

/// The sharing configurations of `n` threads, one per core, up to symmetry,
/// as core lists (at most `max`), then Linux if asked.
pub fn candidates(levels: &Levels, view: &View<'_>, n: usize, p: &Params) -> Vec<Candidate> {
    let tree = SymTree::new(view.topology);
    let mut out: Vec<Candidate> = Vec::new();
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
    if p.with_linux || out.is_empty() {
        out.push(Candidate::Linux);
    }
    out
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        f64::NEG_INFINITY
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

impl Atom {
    /// Starts a competition when there is none or the last one is stale.
    fn check(&mut self, view: &View<'_>, levels: &Levels, app: &AppView, budget: usize) {
        let mut corunners: Vec<AppId> = view
            .running()
            .filter(|a| a.id != app.id)
            .map(|a| a.id)
            .collect();
        corunners.sort_unstable();
        let cause = match &self.comp {
            None => Some(Cause::Start),
            Some(c) if c.app != app.id => Some(Cause::Start),
            Some(c) if c.corunners != corunners => Some(Cause::Corunners),
            Some(c) if c.cores != budget => Some(Cause::Budget),
            Some(_) => None,
        };
        if let Some(cause) = cause {
            self.start(view, levels, app, budget, corunners, cause);
        }
    }

    fn start(
        &mut self,
        view: &View<'_>,
        levels: &Levels,
        app: &AppView,
        budget: usize,
        corunners: Vec<AppId>,
        cause: Cause,
    ) {
        self.competitions += 1;
        // A co-runner that arrives (or a budget that changes) while the app
        // still initializes must not end its warm-up: the first candidate's
        // slot would score the initialization (a batch app started with the
        // service arrives one epoch after it).
        let warming = self.comp.as_ref().and_then(|c| match c.phase {
            Phase::WarmUp { started } if c.app == app.id => Some(started),
            _ => None,
        });
        self.comp = Some(Competition {
            app: app.id,
            corunners,
            cores: budget,
            candidates: candidates(levels, view, budget, &self.params),
            signal: Signal::for_app(app, view.last),
            slot: None,
            phase: if let Some(started) = warming {
                Phase::WarmUp { started }
            } else if cause == Cause::Start {
                Phase::WarmUp { started: view.now }
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
            peak: budget,
        });
    }

    /// Feeds this epoch's sample and moves through the phases.
    fn step(&mut self, view: &View<'_>) {
        let params = self.params;
        let Some(c) = self.comp.as_mut() else { return };
        // One sample per new observation, whatever the trigger (an epoch's
        // observation may arrive with a thread change as the trigger).
        let fresh = view.last.map(|o| o.at).filter(|&at| c.seen != Some(at));
        let sample = fresh.and_then(|at| {
            c.seen = Some(at);
            c.signal.sample(c.app, view.prev, view.last)
        });
        let mut restart = false;
        match &mut c.phase {
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

impl Policy for Atom {
    fn name(&self) -> &'static str {
        "atom"
    }

    fn decide(&mut self, view: &View<'_>) -> Plan {
        let latency = latency_apps(view);
        let Some(app) = latency.first() else {
            self.comp = None;
            return Plan {
                apps: view.apps.iter().map(|a| AppPlan::native(a.id)).collect(),
                note: "atom: no latency app; Linux places every app".into(),
            };
        };
        let levels = Levels::new(view.topology);
        // The most threads the app has run with: a service whose helpers come
        // and go does not change its budget, and so its competition, each time.
        let peak = match &self.comp {
            Some(c) if c.app == app.id => c.peak.max(wanted(app)),
            _ => wanted(app),
        };
        let budget = core_budget(view, &latency, 0, levels.cores.len(), peak);
        self.check(view, &levels, app, budget);
        if let Some(c) = self.comp.as_mut() {
            c.peak = c.peak.max(peak);
        }
        self.step(view);
        let c = self.comp.as_ref().expect("check starts a competition");
        let (index, phase) = match &c.phase {
            Phase::WarmUp { .. } => (0, "warming up (unmeasured)".to_string()),
            Phase::Learning { index, .. } => (
                *index,
                format!(
                    "learning ({:?}), slot {}/{}",
                    c.cause,
                    index + 1,
                    c.candidates.len()
                ),
            ),
            Phase::Executing {
                winner, reference, ..
            } => (
                *winner,
                format!(
                    "executing the winner {}/{} (score {reference:.4})",
                    winner + 1,
                    c.candidates.len()
                ),
            ),
        };
        let what = match &c.candidates[index] {
            Candidate::Cores(cores) => format!("CPUs {}", levels.cpus(cores).to_list()),
            Candidate::Linux => "Linux placing every app".into(),
        };
        let note = format!("atom: {} {phase}: {what}; signal {}", c.app, c.signal);
        match &c.candidates[index] {
            Candidate::Cores(cores) => plan_with(view, &levels, &[(c.app, cores.clone())], note),
            Candidate::Linux => Plan {
                apps: view.apps.iter().map(|a| AppPlan::native(a.id)).collect(),
                note,
            },
        }
    }
}
