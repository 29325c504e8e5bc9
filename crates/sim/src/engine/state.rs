//! Simulated apps and threads, with the cumulative counters an observation reports.

use std::sync::Arc;

use coloc_model::{AppId, MemPolicy, OmpSample, Placement, SchedSettings, Tid};

use super::layout::CpuIdx;
use super::AppLaunch;
use crate::model::{AppModel, PhaseKind};
use crate::platform::Params;

/// Cumulative per-thread counters, in the units Linux reports after conversion.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThreadStats {
    pub run_s: f64,
    /// Runnable but not running (time-shared CPU).
    pub wait_s: f64,
    pub involuntary: f64,
    /// Sleeps: a worker's at the end of each parallel region, and a waiter's
    /// at each barrier it could not spin through (`Engine::integrate`).
    pub voluntary: f64,
    pub migrations: u64,
    pub instructions: f64,
    pub cycles: f64,
    pub llc_refs: f64,
    pub llc_misses: f64,
    /// LLC requests that went to data the app's threads share (the share-state
    /// hits of Tang et al. Figure 22).
    pub llc_shared_refs: f64,
}

#[derive(Clone, Debug)]
pub struct SimThread {
    pub tid: Tid,
    /// Index of its CPU in the layout ([`super::Engine::cpu_of`] names it).
    pub(crate) cpu: CpuIdx,
    /// Memory node of its first CPU, where its private data was first touched.
    pub(crate) first_node: usize,
    /// The CPUs its app's placement allows it (indices; empty when the
    /// placement names none of the platform's), kept with the placement so
    /// that the balancer does not look them up at every event.
    pub(crate) allowed: Vec<CpuIdx>,
    pub stats: ThreadStats,
}

impl SimThread {
    pub(crate) fn new(tid: Tid, cpu: CpuIdx, first_node: usize, allowed: Vec<CpuIdx>) -> Self {
        Self {
            tid,
            cpu,
            first_node,
            allowed,
            stats: ThreadStats::default(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct SimApp {
    pub id: AppId,
    pub pid: u32,
    pub model: Arc<AppModel>,
    /// Threads in creation order; the first `team` are runnable.
    pub threads: Vec<SimThread>,
    pub(crate) placement: Placement,
    pub(crate) memory: MemPolicy,
    pub(crate) sched: SchedSettings,
    pub(crate) malleable: bool,
    /// Team size for the next parallel phases.
    pub(crate) dop: u32,
    /// Runnable threads in the current phase.
    pub(crate) team: usize,
    pub(crate) phase: usize,
    /// Instructions left in the current phase.
    pub(crate) remaining: f64,
    /// Seconds the team still stalls refilling caches after migrations.
    pub(crate) debt_s: f64,
    /// Memory node of the main thread at launch, where shared data lives.
    pub(crate) home_node: usize,
    pub(crate) started_ns: u64,
    /// Waits passively at barriers (see `runner::Team::passive`).
    pub(crate) passive: bool,
    /// Time spent in parallel phases, ns (what an OpenMP runtime reports).
    pub(crate) parallel_ns: u64,
}

impl SimApp {
    pub(crate) fn new(l: AppLaunch, pid: u32, now_ns: u64) -> Self {
        Self {
            id: l.id,
            pid,
            model: l.model,
            threads: Vec::new(),
            placement: l.placement,
            memory: l.memory,
            sched: l.sched,
            malleable: l.malleable,
            dop: l.threads.max(1),
            team: 1,
            phase: 0,
            remaining: 0.0,
            debt_s: 0.0,
            home_node: 0,
            started_ns: now_ns,
            passive: false,
            parallel_ns: 0,
        }
    }

    pub(crate) fn runnable(&self) -> impl Iterator<Item = &SimThread> {
        self.threads.iter().take(self.team)
    }

    /// The app's time slice: its plan's `slice_us`, else the platform's.
    pub(crate) fn slice_s(&self, p: &Params) -> f64 {
        self.sched
            .slice_us
            .map_or(p.slice_us * 1e-6, |us| f64::from(us) * 1e-6)
    }

    /// Bytes of memory it holds: every thread's private set plus the shared set.
    pub fn rss_bytes(&self) -> u64 {
        let mib = 1024.0 * 1024.0;
        (self.model.private_mb * mib * self.threads.len() as f64 + self.model.shared_mb * mib)
            as u64
    }

    /// Whether its threads are running a parallel phase.
    pub fn in_parallel_phase(&self) -> bool {
        self.team > 1
    }

    /// What its OpenMP runtime would report through the DoP channel: whether it
    /// is in a parallel region (the current phase's kind), the team size,
    /// regions (parallel phases) completed, progress in worksharing iterations
    /// — one iteration per 10^6 instructions of parallel work, since models
    /// count work in instructions — and time in parallel regions. None for
    /// models that are not OpenMP programs.
    pub fn omp(&self) -> Option<OmpSample> {
        if !self.model.openmp {
            return None;
        }
        let phases = &self.model.phases;
        let current = phases.get(self.phase);
        let in_parallel = current.is_some_and(|p| p.kind == PhaseKind::Parallel);
        let done = phases[..self.phase.min(phases.len())]
            .iter()
            .filter(|p| p.kind == PhaseKind::Parallel);
        let mut instructions: f64 = done.clone().map(|p| p.ginstr * 1e9).sum();
        if let Some(p) = current.filter(|_| in_parallel) {
            instructions += (p.ginstr * 1e9 - self.remaining).max(0.0);
        }
        Some(OmpSample {
            in_parallel,
            team_size: self.team as u32,
            regions_completed: done.count() as u64,
            iterations_completed: (instructions / 1e6) as u64,
            parallel_ns: self.parallel_ns,
            max_threads_asked: 0,
            dop_seen: self.malleable.then_some(self.dop),
        })
    }

    /// Progress inside parallel regions as the DoP channel counts it
    /// (docs/signals.md, Progress inside a region): the barriers each thread
    /// passed, and the team's count, which member 0 keeps (the main thread
    /// here, as in the shim). A thread passes `barriers_per_ginstr` barriers
    /// per 10^9 of its instructions in parallel phases; the main thread's
    /// instructions include the serial phases', which it ran alone, so those
    /// are taken off. Models without barriers count nothing, as a region
    /// without barriers or worksharing constructs shows nothing on Linux.
    /// Each thread's count is in the order of `threads`. None for models
    /// that are not OpenMP programs.
    pub fn omp_steps(&self) -> Option<(u64, Vec<u64>)> {
        if !self.model.openmp {
            return None;
        }
        let phases = &self.model.phases;
        let done = &phases[..self.phase.min(phases.len())];
        let mut serial: f64 = done
            .iter()
            .filter(|p| p.kind == PhaseKind::Serial)
            .map(|p| p.ginstr * 1e9)
            .sum();
        if let Some(p) = phases
            .get(self.phase)
            .filter(|p| p.kind == PhaseKind::Serial)
        {
            serial += (p.ginstr * 1e9 - self.remaining).max(0.0);
        }
        let per_instr = self.model.barriers_per_ginstr * 1e-9;
        let threads: Vec<u64> = self
            .threads
            .iter()
            .enumerate()
            .map(|(k, t)| {
                let own = if k == 0 { serial } else { 0.0 };
                ((t.stats.instructions - own).max(0.0) * per_instr) as u64
            })
            .collect();
        let team = threads.first().copied().unwrap_or(0);
        Some((team, threads))
    }
}
