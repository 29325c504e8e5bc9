//! The adversarial search (docs/simulator.md, Adversarial search): random
//! mixes of apps auto has never seen (`mix.rs`), each run on a modeled
//! platform under `auto` and under the two plain arrangements it must not
//! lose to, `native` (Linux alone) and `equal` (a CPU partition per app),
//! with nothing stored beforehand. A mix where auto's makespan exceeds
//! [`LIMIT`] times either one's is a counterexample, named by its seed.
//!
//! Mixes run in parallel (rayon), each one alone in its own simulator
//! seeded by the mix's seed, and are reported in seed order: the outcome is
//! the same whatever the number of worker threads.
//!
//! The Manager logs each waste it flags (docs/policies/auto.md, case 3: a
//! CPU idle for more than an epoch while an app waits or runs below what it
//! could use) as a warning. Over thousands of mixes those warnings would be
//! the search's whole output, so a mix runs with no log subscriber and its
//! waste is counted into its [`Outcome`] instead, per policy, from the
//! run's summary (`coloc_manager::WasteSeen`: each episode one warning).

pub mod mix;

use std::sync::atomic::{AtomicUsize, Ordering};

use coloc_manager::{run, RunOptions, WasteSeen, DEFAULT_EPOCH};
use coloc_model::metrics::RunMetrics;
use coloc_model::trace::TraceError;
use coloc_model::Trace;
use coloc_policy::by_name;
use rayon::prelude::*;

pub use self::mix::{mix, Mix, MixSpec, Structure};
use crate::platform::Platform;
use crate::SimMachine;

/// Auto's makespan may exceed native's and equal's by at most this factor
/// (issue's bound: 1.02).
pub const LIMIT: f64 = 1.02;

/// The policies every mix runs under: auto, and the two it is judged against.
pub const POLICIES: [&str; 3] = ["auto", "native", "equal"];

/// Why a mix could not be judged.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("mix {seed} under {policy}: {source}")]
    Run {
        seed: u64,
        policy: &'static str,
        source: coloc_manager::ManagerError,
    },
    #[error("mix {seed} under {policy}: {failed} app instance(s) failed")]
    Failed {
        seed: u64,
        policy: &'static str,
        failed: usize,
    },
    #[error("mix {seed} under {policy}: its trace: {source}")]
    Trace {
        seed: u64,
        policy: &'static str,
        source: TraceError,
    },
    #[error("no worker threads: {0}")]
    Pool(String),
}

/// One mix's makespans, seconds: auto's, native's and equal's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outcome {
    pub seed: u64,
    pub auto: f64,
    pub native: f64,
    pub equal: f64,
    /// The waste the Manager flagged in each run, in [`POLICIES`] order.
    pub waste: [WasteSeen; 3],
}

/// What one policy's run of a mix gave: its makespan, seconds, and the
/// waste the Manager flagged.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunOutcome {
    pub makespan: f64,
    pub waste: WasteSeen,
}

impl Outcome {
    /// Auto's makespan over native's.
    pub fn vs_native(&self) -> f64 {
        self.auto / self.native
    }

    /// Auto's makespan over equal's.
    pub fn vs_equal(&self) -> f64 {
        self.auto / self.equal
    }

    /// Whether auto lost to either by more than [`LIMIT`].
    pub fn counterexample(&self) -> bool {
        self.vs_native() > LIMIT || self.vs_equal() > LIMIT
    }
}

/// The makespan (first arrival at 0 to last exit), seconds, of `m` under
/// `policy` on `platform`, and the waste flagged on the way; the Manager's
/// log is silent (module docs).
pub fn run_mix(
    platform: &Platform,
    m: &Mix,
    policy: &'static str,
) -> Result<RunOutcome, SearchError> {
    let mut machine = SimMachine::new(platform.clone(), m.seed).with_models(m.models.clone());
    let mut p = by_name(policy).expect("a registry policy");
    let opts = RunOptions::simulated(m.workload.epoch.unwrap_or(DEFAULT_EPOCH), m.seed);
    let mut trace = Vec::new();
    let silent = tracing::subscriber::NoSubscriber::default();
    let summary = tracing::subscriber::with_default(silent, || {
        run(&mut machine, p.as_mut(), &m.workload, &opts, &mut trace)
    })
    .map_err(|source| SearchError::Run {
        seed: m.seed,
        policy,
        source,
    })?;
    if summary.failed > 0 {
        return Err(SearchError::Failed {
            seed: m.seed,
            policy,
            failed: summary.failed,
        });
    }
    let trace = Trace::from_events(trace).map_err(|source| SearchError::Trace {
        seed: m.seed,
        policy,
        source,
    })?;
    let makespan = RunMetrics::from_trace(&trace, None)
        .makespan_secs()
        .unwrap_or(0.0);
    Ok(RunOutcome {
        makespan,
        waste: summary.waste,
    })
}

/// The outcome of the mix of `seed`.
pub fn judge(platform: &Platform, spec: &MixSpec, seed: u64) -> Result<Outcome, SearchError> {
    let m = mix(spec, seed);
    let [auto, native, equal] = POLICIES.map(|p| run_mix(platform, &m, p));
    let [auto, native, equal] = [auto?, native?, equal?];
    Ok(Outcome {
        seed,
        auto: auto.makespan,
        native: native.makespan,
        equal: equal.makespan,
        waste: [auto.waste, native.waste, equal.waste],
    })
}

/// Waste episodes summed over mixes, per kind (each one warning the
/// Manager logs when it runs alone), and the mixes that had any.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WasteCount {
    pub idle_while_waiting: usize,
    pub underused: usize,
    pub no_progress: usize,
    pub spinning: usize,
    pub mixes: usize,
}

impl WasteCount {
    /// One run's waste.
    pub fn of(w: &WasteSeen) -> Self {
        let mut c = Self::default();
        c.add(w);
        c
    }

    fn add(&mut self, w: &WasteSeen) {
        self.idle_while_waiting += w.idle_while_waiting.episodes;
        self.underused += w.underused.episodes;
        self.no_progress += w.no_progress.episodes;
        self.spinning += w.spinning.episodes;
        self.mixes += usize::from(!w.is_empty());
    }
}

/// What a search found.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Every mix's outcome, in seed order.
    pub outcomes: Vec<Outcome>,
}

impl Report {
    /// The mix with the largest auto / native.
    pub fn worst_vs_native(&self) -> Option<&Outcome> {
        self.outcomes
            .iter()
            .max_by(|a, b| a.vs_native().total_cmp(&b.vs_native()))
    }

    /// The mix with the largest auto / equal.
    pub fn worst_vs_equal(&self) -> Option<&Outcome> {
        self.outcomes
            .iter()
            .max_by(|a, b| a.vs_equal().total_cmp(&b.vs_equal()))
    }

    /// Per policy ([`POLICIES`] order): the waste episodes flagged over
    /// every mix, and how many mixes flagged any.
    pub fn waste(&self) -> [WasteCount; 3] {
        std::array::from_fn(|i| {
            self.outcomes
                .iter()
                .fold(WasteCount::default(), |mut sum, o| {
                    sum.add(&o.waste[i]);
                    sum
                })
        })
    }

    /// The counterexamples, worst first.
    pub fn counterexamples(&self) -> Vec<&Outcome> {
        let mut v: Vec<&Outcome> = self
            .outcomes
            .iter()
            .filter(|o| o.counterexample())
            .collect();
        let worst = |o: &Outcome| o.vs_native().max(o.vs_equal());
        v.sort_by(|a, b| worst(b).total_cmp(&worst(a)));
        v
    }
}

/// Judges the mixes of seeds `first..first + mixes` on `platform` with
/// `threads` workers; `progress` is called with the count done after each
/// mix (from any worker).
pub fn search(
    platform: &Platform,
    spec: &MixSpec,
    (first, mixes): (u64, u64),
    threads: usize,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<Report, SearchError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .map_err(|e| SearchError::Pool(e.to_string()))?;
    let done = AtomicUsize::new(0);
    let outcomes = pool.install(|| {
        (first..first.saturating_add(mixes))
            .into_par_iter()
            .map(|seed| {
                let o = judge(platform, spec, seed);
                progress(done.fetch_add(1, Ordering::Relaxed) + 1);
                o
            })
            .collect::<Result<Vec<_>, _>>()
    })?;
    Ok(Report { outcomes })
}
