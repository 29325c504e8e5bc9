//! NuPoCo (Cho, Celis Guzman, Egger, PACT 2018): parallelism management that
//! maximizes the utilization of both the CPU cores and the memory controllers.
//!
//! Problem: co-located OpenMP apps each want every core. Giving cores to the
//! most scalable app maximizes CPU utilization but leaves the memory system idle
//! and ends in a congested tail when only memory-bound apps remain (§3.4,
//! Figures 5–6). NuPoCo instead picks degrees of parallelism (DoP) that maximize
//! the *system* utilization, CPU plus memory-controller utilization summed over
//! nodes (NuUtil, eq. 7), predicted by an M/M/1/N/N queueing network of the
//! memory controllers and links (§4, [`coloc_model::queueing`]).
//!
//! Approach, per decision (§5):
//! 1. Online profiling (`nupoco/profile.rs`): a malleable app entering a new parallel
//!    section gets all cores — all but one per other running app, which coloc
//!    never stops — for a window (150 ms), and its memory request rate (MRR) is
//!    measured from LLC-miss counters or, without counters, fitted to its
//!    progress rates at two DoPs. One section is profiled at a time; a
//!    section that starts during another's window waits for it on one core.
//! 2. DoP computation (`nupoco/dop.rs`, Algorithm 1): the free units go greedily to the
//!    app that raises the predicted NuUtil most.
//! 3. Thread placement (`nupoco/placement.rs`, Algorithm 2): every 50 ms, cores are
//!    swapped between the busiest and the idlest LLC groups. The `nupoco-greedy`
//!    variant skips this step and gives each app its DoP in free cores in
//!    topology order.
//!
//! Serial sections get one core (and keep their idle ones while no other app
//! wants them); every core runs at most one active thread
//! (cores are allocated whole and threads pinned one per core); apps whose DoP
//! coloc cannot change get placement only (`cores/board.rs`). A serial app's
//! DoP is left unchanged (the plan gives none): it keeps the DoP of its last
//! parallel section for its next one, and no plan ever asks for more threads
//! than the CPUs it gives. OpenMP applies a DoP when a region starts while
//! placement changes at once, so a team can briefly have more threads than
//! cores after a decision — until its next region or the next decision.
//!
//! Service rates come from the machine's calibration (`coloc calibrate`, §4.3)
//! when the [`crate::PolicyContext`] has one for this machine; otherwise from
//! [`MemoryCalibration::assumed`], and every plan note says which.

mod dop;
mod placement;
mod profile;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::time::Duration;

use coloc_model::calibration::MemoryCalibration;
use coloc_model::reason::{
    Admission, AdmissionRule, PlanReason, RatesFrom, Reason, Section, SectionPhase,
};
use coloc_model::{AppId, AppPlan, AppView, CpuSet, Plan, Topology, View};

use self::dop::Contest;
use self::placement::{Round, Swaps};
use self::profile::{open_next, Phase, Track};
pub use self::profile::{Estimate, Method, Step};
use coloc_model::queueing::NumaSystem;

use crate::cores::board::{current_cores, reserve, Board, Levers, Need};
pub use crate::cores::sample::{SectionSample, Unit};
pub use crate::cores::Level;
use crate::cores::{pin_team, CoreMap};
use crate::per_topology::PerTopology;
use crate::{Policy, PolicyContext};

/// NuPoCo's parameters (§7.3 gives the defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct NupocoConfig {
    /// Length of a profiling window (§5.1: 150 ms).
    pub profile_window: Duration,
    /// A profile that has not completed after this long ends unmeasured.
    pub profile_timeout: Duration,
    /// A section starting later than this after the app's last estimate is
    /// profiled again (coloc cannot tell loops apart; see `nupoco/profile.rs`).
    pub reprofile_after: Duration,
    /// Period of Algorithm 2 (§5.3: 50 ms).
    pub placement_period: Duration,
    /// LLC-access ratio above which Algorithm 2 swaps (§5.3: 2).
    pub swap_threshold: f64,
    /// Cores exchanged per swap (§5.3: 2).
    pub swap_cores: usize,
    /// Use hardware counters when the observation has them; false forces the
    /// progress-rate fallback (for comparing the two methods).
    pub use_counters: bool,
}

impl Default for NupocoConfig {
    fn default() -> Self {
        Self {
            profile_window: Duration::from_millis(150),
            profile_timeout: Duration::from_secs(3),
            reprofile_after: Duration::from_secs(10),
            placement_period: Duration::from_millis(50),
            swap_threshold: 2.0,
            swap_cores: 2,
            use_counters: true,
        }
    }
}

/// NuPoCo proper, or its Greedy variant (§7.3: DoP computation only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Full,
    Greedy,
}

/// What the queueing model needs during one decision.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Model<'a> {
    pub cfg: &'a NupocoConfig,
    pub map: &'a CoreMap,
    pub system: &'a NumaSystem,
}

impl Model<'_> {
    /// Where an app's requests go: evenly to every memory node, where the
    /// all-core profiling window spread its data (§5.1).
    pub fn spread(&self) -> Vec<f64> {
        vec![1.0 / self.map.nodes as f64; self.map.nodes]
    }
}

/// The NuPoCo policy.
#[derive(Debug)]
pub struct Nupoco {
    cfg: NupocoConfig,
    variant: Variant,
    calibration: Option<MemoryCalibration>,
    tracks: BTreeMap<AppId, Track>,
    swaps: Swaps,
    levers: Levers,
    /// The core map and the network of the machine it last decided on
    /// (`per_topology.rs`); the calibration is the policy's own, fixed at
    /// construction.
    machine: PerTopology<Machine>,
}

/// What NuPoCo derives from the topology and its calibration alone.
#[derive(Debug)]
struct Machine {
    map: CoreMap,
    system: NumaSystem,
    rates: RatesFrom,
}

impl Nupoco {
    pub fn new(
        cfg: NupocoConfig,
        variant: Variant,
        calibration: Option<MemoryCalibration>,
    ) -> Self {
        Self {
            cfg,
            variant,
            calibration,
            tracks: BTreeMap::new(),
            swaps: Swaps::default(),
            levers: Levers::default(),
            machine: PerTopology::default(),
        }
    }

    /// With the default parameters, the context's calibration and its
    /// region records of earlier runs, which say where a DoP cut can be taken
    /// back (`cores/reversible.rs`).
    pub fn from_context(ctx: &PolicyContext, variant: Variant) -> Self {
        Self::new(NupocoConfig::default(), variant, ctx.calibration.clone()).with_context(ctx)
    }

    /// With the context's region records of earlier runs, which say where a
    /// DoP cut can be taken back (`cores/reversible.rs`), and where they
    /// come from, named in the reasons of the decisions that rest on them
    /// (docs/knowledge.md).
    pub fn with_context(mut self, ctx: &PolicyContext) -> Self {
        self.levers = Levers::from_context(ctx);
        self
    }

    /// The app's current MRR estimate and how it was obtained.
    pub fn estimate(&self, app: AppId) -> Option<Estimate> {
        self.tracks.get(&app).and_then(|t| t.estimate)
    }

    fn need(&self, app: &AppView) -> Need {
        let fixed = Need::Fixed {
            threads: app.threads.len().max(app.threads_requested as usize) as u32,
        };
        match self.tracks.get(&app.id) {
            None => fixed,
            Some(t) if !t.reported && app.threads.len() > 1 => fixed,
            Some(t) if t.phase() == Phase::Serial => Need::Serial,
            Some(_) => Need::Parallel,
        }
    }
}

/// The network to predict with, and where its rates come from: the
/// calibration when it was measured on this machine, else the assumed
/// figures.
fn network(
    topology: &Topology,
    map: &CoreMap,
    calibration: Option<&MemoryCalibration>,
) -> (NumaSystem, RatesFrom) {
    let cores = map.per_node(&(0..map.len()).collect::<Vec<_>>());
    let (cal, from) = match calibration {
        Some(c) if c.fits(topology) => (
            c.clone(),
            RatesFrom::Calibrated {
                measured_at: c.measured_at.clone(),
            },
        ),
        Some(_) => (
            MemoryCalibration::assumed(topology),
            RatesFrom::OtherMachine,
        ),
        None => (MemoryCalibration::assumed(topology), RatesFrom::Assumed),
    };
    (NumaSystem::from_calibration(&cal, cores), from)
}

/// Algorithm 1 on its own, on a machine whose cores are all free, for apps in
/// steady parallel sections with the given MRRs (requests per second of
/// compute time): the CPUs each app gets, in `mrr` order, at the unit level
/// the rule picks. What `decide` runs for its steady apps, without the
/// profiling and placement around it — for explaining a split and for
/// measuring the cost of the DoP computation (§7.5 reports 1.8 ms).
pub fn compute_dop(
    topology: &Topology,
    calibration: Option<&MemoryCalibration>,
    mrr: &[f64],
) -> Vec<CpuSet> {
    let map = CoreMap::new(topology);
    let (system, _) = network(topology, &map, calibration);
    let free: Vec<usize> = (0..map.len()).collect();
    let units = map.units(&free, map.level_for(&free, mrr.len()));
    let spread = vec![1.0 / map.nodes as f64; map.nodes];
    Contest {
        system: &system,
        map: &map,
        mrr,
        spread: &spread,
    }
    .allocate(&units)
    .iter()
    .map(|cores| map.cpus(cores))
    .collect()
}

/// LLC accesses per LLC group over the last observation interval, from the
/// counters; None when the observations have none.
fn measured_access(map: &CoreMap, view: &View<'_>) -> Option<Vec<f64>> {
    let (prev, last) = (view.prev?, view.last?);
    if !(prev.signals.hw_counters && last.signals.hw_counters) {
        return None;
    }
    let mut access = vec![0.0; map.llcs];
    for s in &last.apps {
        let before = prev.app(s.app);
        for t in &s.threads {
            let refs = |x: &coloc_model::ThreadSample| x.counters.and_then(|c| c.llc_references);
            let old = before
                .and_then(|b| b.thread(t.tid))
                .and_then(refs)
                .unwrap_or(0);
            if let (Some(now), Some(core)) = (refs(t), t.cpu.and_then(|c| map.core_of(c))) {
                access[map.llc[core]] += now.saturating_sub(old) as f64;
            }
        }
    }
    Some(access)
}

impl Policy for Nupoco {
    fn name(&self) -> &'static str {
        match self.variant {
            Variant::Full => "nupoco",
            Variant::Greedy => "nupoco-greedy",
        }
    }

    /// The region records of what was learned (the node service's apps
    /// arrive while it runs): where a cut can be taken back.
    fn learned(&mut self, learned: &coloc_model::knowledge::derive::Learned) {
        self.levers.set_learned(learned);
    }

    /// One decision (§5): profile and size the apps' sections, reserve what the
    /// shared rules give (`cores::board`), then either split the free
    /// cores among steady sections (Algorithms 1 and 2) or hand them to the
    /// sections being profiled.
    fn decide(&mut self, view: &View<'_>) -> Plan {
        let calibration = self.calibration.as_ref();
        let machine = self.machine.get(view.topology, |topology| {
            let map = CoreMap::new(topology);
            let (system, rates) = network(topology, &map, calibration);
            Machine { map, system, rates }
        });
        let (map, rates) = (&machine.map, machine.rates.clone());
        let cfg = self.cfg.clone();
        let model = Model {
            cfg: &cfg,
            map,
            system: &machine.system,
        };
        let needs = self.needs(&model, view);
        let pending: Vec<&AppView> = view.pending().collect();
        let mut board = Board::new(map);
        let admitted = reserve(map, &mut board, &needs, &pending);
        let (profiling, steady) = self.sections(&needs);
        let mut reasons = vec![PlanReason::Rates(rates)];
        if profiling.is_empty() {
            self.split_steady(&model, view, &steady, &mut board, &mut reasons);
        } else {
            share_for_profiling(map, &steady, &profiling, &mut board);
        }
        board.finish(map, view, &needs);
        let mut plan = self.plan(view, map, &needs, &admitted, &board);
        plan.reasons = reasons;
        self.levers.restore(view, &mut plan);
        self.levers.name_records(view, &mut plan);
        plan
    }
}

impl Nupoco {
    /// What each running app needs this decision, after its section track
    /// (§5.1) and its DoP lever have seen the latest observation: an app whose
    /// lever has not acted keeps cores for the team it runs, unless its
    /// section is being profiled.
    fn needs<'v>(&mut self, model: &Model<'_>, view: &View<'v>) -> Vec<(&'v AppView, Need)> {
        self.tracks
            .retain(|id, _| view.apps.iter().any(|a| a.id == *id));
        for a in view.running().filter(|a| a.spec.malleable) {
            self.tracks.entry(a.id).or_default().update(model, view, a);
        }
        open_next(&mut self.tracks, view.now);
        self.levers.retain(view);
        view.running()
            .map(|a| {
                let stuck = self.levers.stuck(model.map, view, a);
                let profiling = self.profiling(a.id);
                match stuck.filter(|_| !profiling) {
                    Some(team) => (a, Need::Fixed { threads: team }),
                    None => {
                        let need = self.need(a);
                        (a, self.levers.reversible_first(view, a, need, profiling))
                    }
                }
            })
            .collect()
    }

    /// Whether the app's section holds the profiling window. A section whose
    /// DoP lever is stuck (one long region: the half window's DoP cannot
    /// reach its team) is profiled all the same, by placement: the window
    /// puts its team on the share's cores, the half window on half of them,
    /// at once, and its progress inside the region (`Unit::Steps` where
    /// nothing else moves) gives the two rates the fit compares.
    fn profiling(&self, app: AppId) -> bool {
        self.tracks
            .get(&app)
            .is_some_and(|t| matches!(t.phase(), Phase::Profiling(_)))
    }

    /// The apps in parallel sections, split into those being profiled (with
    /// their step) and the others (with their MRR; a section waiting for a
    /// window has the app's last estimate, and only waits while another app
    /// profiles, when every other section keeps one core).
    #[allow(clippy::type_complexity)]
    fn sections<'v>(
        &self,
        needs: &[(&'v AppView, Need)],
    ) -> (Vec<(&'v AppView, Step)>, Vec<(&'v AppView, f64)>) {
        let mut profiling = Vec::new();
        let mut steady = Vec::new();
        for (a, _) in needs.iter().filter(|(_, n)| *n == Need::Parallel) {
            match self.tracks[&a.id].phase() {
                Phase::Profiling(s) => profiling.push((*a, s)),
                Phase::Parallel(mrr) => steady.push((*a, mrr)),
                Phase::Waiting => steady.push((*a, self.estimate(a.id).map_or(0.0, |e| e.mrr))),
                Phase::Serial => {}
            }
        }
        (profiling, steady)
    }

    /// Algorithm 1 gives the free units to the steady sections; Algorithm 2
    /// (or, for `nupoco-greedy`, topology order) decides which cores they are.
    fn split_steady(
        &mut self,
        model: &Model<'_>,
        view: &View<'_>,
        steady: &[(&AppView, f64)],
        board: &mut Board,
        reasons: &mut Vec<PlanReason>,
    ) {
        let map = model.map;
        let free = board.free();
        let level = map.level_for(&free, steady.len());
        let units = map.units(&free, level);
        let mrr: Vec<f64> = steady.iter().map(|s| s.1).collect();
        let spread = model.spread();
        let got = Contest {
            system: model.system,
            map,
            mrr: &mrr,
            spread: &spread,
        }
        .allocate(&units);
        if !steady.is_empty() {
            reasons.push(PlanReason::Unit {
                level: level.label().to_string(),
            });
        }
        let mut base = vec![None; map.len()];
        for ((a, _), cores) in steady.iter().zip(&got) {
            for &c in cores {
                base[c] = Some(a.id);
            }
        }
        let mrr_of = |id: AppId| steady.iter().find(|s| s.0.id == id).map_or(0.0, |s| s.1);
        let owners = match self.variant {
            Variant::Full => {
                let access = measured_access(map, view).unwrap_or_else(|| {
                    let mut v = vec![0.0; map.llcs];
                    for (c, o) in base.iter().enumerate() {
                        if let Some(id) = o {
                            v[map.llc[c]] += mrr_of(*id);
                        }
                    }
                    v
                });
                let round = Round {
                    map,
                    access: &access,
                    mrr: mrr_of,
                    threshold: self.cfg.swap_threshold,
                    count: self.cfg.swap_cores,
                };
                let (owners, swapped) =
                    self.swaps
                        .place(base, view.now, self.cfg.placement_period, &round);
                if swapped > 0 {
                    reasons.push(PlanReason::Swapped {
                        pairs: swapped as u32,
                    });
                }
                owners
            }
            Variant::Greedy => {
                // Same counts, cores in topology order.
                let mut pool = (0..map.len()).filter(|&c| base[c].is_some());
                let mut owners = vec![None; map.len()];
                for ((a, _), cores) in steady.iter().zip(&got) {
                    for c in pool.by_ref().take(cores.len()) {
                        owners[c] = Some(a.id);
                    }
                }
                owners
            }
        };
        for (c, o) in owners.into_iter().enumerate() {
            if o.is_some() {
                board.owner[c] = o;
            }
        }
    }

    /// The plan: held apps wait, every other app's team is pinned one thread
    /// per owned core, parallel sections get their core count as DoP; each
    /// app's reasons say what it got and why ([`Section`]).
    fn plan(
        &self,
        view: &View<'_>,
        map: &CoreMap,
        needs: &[(&AppView, Need)],
        admitted: &[AppId],
        board: &Board,
    ) -> Plan {
        let mut apps = Vec::with_capacity(view.apps.len());
        for a in view.apps {
            if !a.is_running() && !admitted.contains(&a.id) {
                apps.push(AppPlan::hold(a.id).because(Admission {
                    admitted: false,
                    rule: AdmissionRule::NoFreeCore,
                }));
                continue;
            }
            let cores = map.interleave(&board.owned(a.id));
            // Lent cores serve the team running now, not the next region.
            let own = board.own_count(a.id);
            let need = needs.iter().find(|(x, _)| x.id == a.id).map(|n| n.1);
            let phase = self.tracks.get(&a.id).map(Track::phase);
            let dop = (need == Some(Need::Parallel)).then_some(own.max(1) as u32);
            let phase = match (need, phase) {
                (None, _) => SectionPhase::Start,
                (Some(Need::Fixed { .. }), _) => SectionPhase::Fixed,
                (_, Some(Phase::Profiling(s))) => SectionPhase::Profiling {
                    step: s.label().to_string(),
                },
                (_, Some(Phase::Waiting)) => SectionPhase::Waiting,
                (_, Some(Phase::Serial)) | (Some(Need::Serial), _) => SectionPhase::Serial,
                _ => SectionPhase::Sized,
            };
            let estimate = self.estimate(a.id);
            let section = Section {
                phase,
                cores: own.min(cores.len()) as u32,
                lent: cores.len().saturating_sub(own) as u32,
                mrr: estimate.as_ref().map(|e| e.mrr),
                method: estimate.map(|e| e.method.to_string()),
            };
            apps.push(AppPlan {
                placement: pin_team(map, a, &cores),
                dop,
                reasons: vec![Reason::Section(section)],
                ..AppPlan::native(a.id)
            });
        }
        Plan::of(apps)
    }
}

/// While sections are being profiled (§5.1), steady sections keep one core
/// each where they are and the profiled sections split the rest, each over
/// every memory node.
fn share_for_profiling(
    map: &CoreMap,
    steady: &[(&AppView, f64)],
    profiling: &[(&AppView, Step)],
    board: &mut Board,
) {
    for (a, _) in steady {
        board.take(a.id, 1, &current_cores(map, a));
    }
    let free = map.interleave(&board.free());
    let n = profiling.len();
    for (j, (a, step)) in profiling.iter().enumerate() {
        let share: Vec<usize> = free.iter().skip(j).step_by(n).copied().collect();
        let keep = match step {
            Step::Full => share.len(),
            Step::Half => share.len().div_ceil(2),
        };
        for &c in &share[..keep.max(1).min(share.len())] {
            board.owner[c] = Some(a.id);
        }
    }
}
