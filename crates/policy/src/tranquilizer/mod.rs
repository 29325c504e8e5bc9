//! Thread Tranquilizer (Pusukuri, Gupta, Bhuyan, TACO 2012;
//! docs/policies/tranquilizer.md): less run-to-run variation by changing a
//! running app's memory placement and scheduling, not its placement.
//!
//! Problem (§1–2): multithreaded programs vary from run to run even alone —
//! memory-intensive ones because threads migrate away from the memory they
//! first touched and into cold caches, so their miss rate varies; CPU-intensive
//! ones because their involuntary context-switch (ICX) rate varies. Pinning
//! removes migrations but costs throughput on many cores (§3.2.1).
//!
//! Approach (§3, Figure 7): every pass (5 s), once an app's workers exist, a
//! profile of 10 samples 100 ms apart of its miss rate and ICX rate
//! ([`window`]); memory-intensive apps (mean miss rate above Δ) try interleaved
//! memory with a fixed 100 ms slice, CPU-intensive ones a fixed 20 ms slice
//! ([`classify`]); a second profile decides keep or revert ([`pass`]).
//! Placement and DoP are left to Linux, or to the placement policy it is
//! layered on (`crates/policy/src/layer.rs`). Every decision's signal is in the plan's note, so
//! the trace says what each used (docs/signals.md).

pub mod classify;
pub mod pass;
pub mod setting;
#[cfg(test)]
mod tests;
pub mod window;

use std::collections::BTreeMap;
use std::time::Duration;

use coloc_model::profile::{self, AppProfile};
use coloc_model::reason::{Reason, TranquilizerStep};
use coloc_model::{AppId, AppPlan, AppView, Observation, Plan, Topology, View};

use self::classify::Known;
use self::pass::AppPass;
use crate::Policy;

/// Thread Tranquilizer's settings, with the paper's values as defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct TranquilizerConfig {
    /// Δ: an app whose mean LLC miss rate (misses per 1000 instructions) is
    /// above it is memory-intensive. The paper does not print its Δ; 3
    /// separates the simulator's memory-bound models (≥ 5) from its compute
    /// ones (≤ 1).
    pub delta_mpki: f64,
    /// Without counters, an app whose stored memory bandwidth per thread
    /// (its profile's Tang characteristic; `coloc profile` measures it by
    /// co-runs with the `stream` kernel where there are no counters) is above
    /// this many GB/s is memory-intensive ([`classify`]). 1.0 lies between
    /// what this development VM measured for `kernel:stream` (1.30) and for
    /// the cache-resident `kernel:compute` (0.53, the co-runs' noise floor;
    /// docs/policies/tang-atom.md).
    pub substitute_gbs: f64,
    /// Samples per profile (§3: 10).
    pub samples: usize,
    /// Time between samples (§3: 100 ms). Samples are taken at the policy's
    /// epochs, so an epoch longer than this stretches it.
    pub interval: Duration,
    /// Length of a pass (§3: 5 s).
    pub pass: Duration,
    /// Fixed slice of memory-intensive apps, µs (§2.3: 100 ms).
    pub memory_slice_us: u32,
    /// Fixed slice of CPU-intensive apps, µs (§2.3: 20 ms).
    pub cpu_slice_us: u32,
}

impl Default for TranquilizerConfig {
    fn default() -> Self {
        Self {
            delta_mpki: 3.0,
            substitute_gbs: 1.0,
            samples: 10,
            interval: Duration::from_millis(100),
            pass: Duration::from_secs(5),
            memory_slice_us: 100_000,
            cpu_slice_us: 20_000,
        }
    }
}

/// The `tranquilizer` policy.
#[derive(Debug, Default)]
pub struct Tranquilizer {
    cfg: TranquilizerConfig,
    /// The apps' stored profiles: their memory bandwidth classifies them on a
    /// machine without counters ([`classify`]).
    profiles: Vec<AppProfile>,
    /// The LLC capacity one thread gets as `coloc calibrate` measured it
    /// (the machine's calibration), compared with resident sets instead of
    /// sysfs's figure ([`classify`]).
    llc_measured: Option<u64>,
    apps: BTreeMap<AppId, AppPass>,
    /// The observation the last samples ended at.
    last_sample: Option<Observation>,
}

impl Tranquilizer {
    pub fn new(
        cfg: TranquilizerConfig,
        profiles: Vec<AppProfile>,
        llc_measured: Option<u64>,
    ) -> Self {
        Self {
            cfg,
            profiles,
            llc_measured,
            ..Self::default()
        }
    }

    /// The state of every app it follows (for tests and reports).
    pub fn passes(&self) -> &BTreeMap<AppId, AppPass> {
        &self.apps
    }
}

/// What classification knows of `app` besides its samples: the LLC capacity
/// measured by `coloc calibrate` where given, else sysfs's, and the memory
/// bandwidth its stored profile holds. `auto` classifies by the same rule
/// (`auto/placement/`).
pub(crate) fn known(
    profiles: &[AppProfile],
    llc_measured: Option<u64>,
    app: &AppView,
    topology: &Topology,
) -> Known {
    Known {
        llc_bytes: llc_measured.unwrap_or_else(|| llc_bytes(topology)),
        llc_measured: llc_measured.is_some(),
        stored_gbs: profile::find(profiles, &app.spec)
            .and_then(|(p, _)| p.sharing.as_ref())
            .and_then(|s| Some((s.bandwidth_gbs?, s.signal))),
    }
}

/// Whether the app's worker threads exist: it runs, with at least two threads
/// when it asked for two or more.
fn workers_exist(a: &AppView) -> bool {
    a.is_running() && a.threads.len() >= a.threads_requested.clamp(1, 2) as usize
}

/// The machine's last-level cache capacity: every cache of the highest level.
pub fn llc_bytes(topology: &Topology) -> u64 {
    topology
        .last_level_caches()
        .iter()
        .map(|c| c.size_bytes)
        .sum()
}

impl Policy for Tranquilizer {
    fn name(&self) -> &'static str {
        "tranquilizer"
    }

    fn decide(&mut self, view: &View<'_>) -> Plan {
        self.apps
            .retain(|id, _| view.apps.iter().any(|a| a.id == *id));
        let mut steps: Vec<(AppId, TranquilizerStep)> = Vec::new();
        let mut say = |id: AppId, step: TranquilizerStep| steps.push((id, step));
        for a in view.running() {
            let p = self.apps.entry(a.id).or_default();
            if let Some(t) = p.tick(view.now, workers_exist(a)) {
                say(a.id, t);
            }
        }
        // A sample is due when the newest observation is an interval (less a
        // tenth, for epochs that arrive a little early) after the last one.
        let due = view.last.filter(|last| {
            self.last_sample
                .as_ref()
                .is_none_or(|s| last.at.saturating_sub(s.at) >= self.cfg.interval.mul_f64(0.9))
        });
        if let Some(last) = due {
            if let Some(prev) = &self.last_sample {
                for a in view.running() {
                    let known = known(&self.profiles, self.llc_measured, a, view.topology);
                    let (Some(p), Some(r)) =
                        (self.apps.get_mut(&a.id), window::rates(prev, last, a.id))
                    else {
                        continue;
                    };
                    let cfg = &self.cfg;
                    if let Some(t) = p.sample(r, cfg, |s| classify::classify(s, &known, cfg)) {
                        say(a.id, t);
                    }
                }
            }
            self.last_sample = Some(last.clone());
        }
        let apps = view
            .apps
            .iter()
            .map(|a| {
                let mut plan = AppPlan::native(a.id);
                if let Some(p) = self.apps.get(&a.id) {
                    plan.memory = p.setting.memory;
                    plan.sched = p.setting.sched();
                }
                plan.reasons.extend(
                    steps
                        .iter()
                        .filter(|(id, _)| *id == a.id)
                        .map(|(_, s)| Reason::Tranquilizer(s.clone())),
                );
                plan
            })
            .collect();
        Plan::of(apps)
    }
}
