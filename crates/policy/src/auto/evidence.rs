//! What the observations say about one app: whether its DoP lever acts (the
//! rule shared with the core allocation, [`crate::cores::lever`]), how fast it
//! progresses, and how much CPU it has had.

use std::time::Duration;

use coloc_model::{AppId, AppSample, Observation};

use crate::cores::lever::{Lever, RegionClock};

/// One app's evidence, updated at each new observation.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Evidence {
    /// Its regions, for the rule shared with the core allocation
    /// ([`crate::cores::lever`]).
    pub clock: RegionClock,
    /// CPU time all its threads have had, ns (attained service).
    pub cpu_ns: u64,
    /// Voluntary context switches its threads have made (`status`'s
    /// `voluntary_ctxt_switches`: sleeps in a barrier, a lock, I/O).
    pub switches: u64,
    /// The most voluntary switches per second of CPU time seen over one
    /// interval (of at least [`MIN_CPU_NS`] of CPU): how often its threads
    /// sleep, kept once seen (`auto/gang.rs`).
    pub sleeps: f64,
}

/// CPU time over an interval below which its switches say too little to
/// count.
pub(super) const MIN_CPU_NS: u64 = 10_000_000;

impl Evidence {
    /// Takes the app's sample of an observation made at `at`.
    pub fn update(&mut self, sample: &AppSample, at: Duration) {
        let cpu_ns: u64 = sample.threads.iter().map(|t| t.run_ns).sum();
        let switches: u64 = sample.threads.iter().map(|t| t.voluntary_switches).sum();
        let cpu = cpu_ns.saturating_sub(self.cpu_ns);
        if cpu >= MIN_CPU_NS {
            let rate = switches.saturating_sub(self.switches) as f64 / (cpu as f64 * 1e-9);
            self.sleeps = self.sleeps.max(rate);
        }
        self.cpu_ns = cpu_ns;
        self.switches = switches;
        self.clock.update(sample, at);
    }

    /// Whether a DoP asked now would reach the app soon.
    pub fn lever_acts(&self) -> bool {
        self.clock.lever() == Lever::Acts
    }

    /// Why the lever does or does not act, for the plan's reasons.
    pub fn lever_reason(&self) -> coloc_model::reason::Lever {
        self.clock.reason()
    }
}

/// A thread that waited for a CPU more than this fraction of an interval
/// counts as wanting one (the Manager's work-conservation check uses the same
/// threshold, `docs/architecture.md`).
pub(crate) const WAITING_ABOVE: f64 = 0.25;

/// How an app used the CPUs between two observations: CPUs' worth of run
/// time, and whether some thread of it waited for a CPU (schedstat's run
/// delay) more than [`WAITING_ABOVE`] of the interval. None when either
/// observation misses the app.
pub(crate) fn usage(prev: &Observation, last: &Observation, app: AppId) -> Option<(f64, bool)> {
    let (a, b) = (prev.app(app)?, last.app(app)?);
    let dt = last.at.saturating_sub(prev.at).as_nanos() as f64;
    if dt <= 0.0 {
        return None;
    }
    let before = |tid| a.thread(tid);
    let mut run = 0u64;
    let mut waiting = false;
    for t in &b.threads {
        let (r0, w0) = before(t.tid).map_or((0, 0), |x| (x.run_ns, x.wait_ns));
        run += t.run_ns.saturating_sub(r0);
        waiting |= t.wait_ns.saturating_sub(w0) as f64 > WAITING_ABOVE * dt;
    }
    Some((run as f64 / dt, waiting))
}
