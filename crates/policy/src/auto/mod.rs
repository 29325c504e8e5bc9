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
//! 1. Levers: an app's DoP lever *acts* by the rule shared with the core
//!    allocation (`cores/lever.rs`): malleable, its runtime answers
//!    through the DoP channel, at least `MIN_REGIONS` regions ended, and it is
//!    not stuck inside one region beyond its patience (`PATIENCE`, or twice
//!    the longest region seen to end).
//! 2. Team size (`auto/team.rs`): an app whose lever acts runs at most the
//!    thread count its stored solo times say is fastest (when more than 5%
//!    faster than its team), in both arrangements: the trial cannot compare
//!    team sizes of apps that spin while they wait.
//! 3. Own arrangement, while at least two apps' threads oversubscribe the
//!    CPUs: every running app gets an exclusive CPU partition (`partitions`:
//!    one CPU each, the rest in proportion to its threads), and an app whose
//!    lever acts gets a DoP of its partition's size. Apps whose thread count
//!    cannot change thus stop sharing CPUs with other apps' threads (equal's
//!    gain on barrier-heavy teams; libgomp also throttles its spin-waiting when
//!    it starts with fewer CPUs than threads). Work conserving across apps:
//!    partitions are recomputed at every decision, so an exit frees its CPUs
//!    at once; inside a partition Linux balances the app's threads.
//!    Gang time sharing instead (`auto/gang.rs`, `makespan` only) when every
//!    running app's team cannot change, fits the CPUs and sleeps often (a
//!    barrier waiter whose teammate is descheduled): each team in turn has
//!    all CPUs at nice 0 for an observation interval, the others at nice 19
//!    soaking up what it leaves.
//! 4. Admission (`auto/admission.rs`; under `art`, shortest first with solo
//!    times, see 6; `latency` holds no app): under `makespan` an arriving app
//!    starts at once while some CPU has no app of its own, CPUs idle, or the
//!    running set's trial settled on Linux; otherwise, with stored solo times,
//!    when starting it now does not lengthen the estimated makespan; else it
//!    waits (equal's rule) until an app exits. An admitted app launches into
//!    its partition.
//! 5. Checked against outcomes (`auto/trial.rs`): for every set of co-running
//!    apps, auto measures their progress under its own arrangement and left
//!    to Linux in alternating windows, and keeps its arrangement only while
//!    the pairs' confidence bound says it is not slower than Linux by more
//!    than 2%; settled, it re-checks within a bounded share of the time. A
//!    new set (arrival, exit) is tried afresh. Progress is work reported
//!    through the DoP channel, else library calls (`omp_get_max_threads()`
//!    calls, which OpenBLAS makes before each BLAS call), else CPU time.
//! 6. Objective ([`Objective`]): `makespan` (the default) sets no scheduling
//!    settings; `art`, with stored solo times of every app, runs the shortest
//!    first: a longer arrival waits while the CPUs are full (item 4) and the
//!    running app with the least time left runs at nice 0, the others at nice
//!    19 (shortest remaining processing time first); without them it never
//!    holds an app back and favours the apps that have had the least CPU
//!    (least attained service, which shortens response times when lengths are
//!    unknown) by nice value; `latency` lowers the
//!    priority of batch apps while a latency-class app runs and never shrinks
//!    a latency app's team.
//!
//! 7. Placement and memory (`auto/placement/`): on a machine with several
//!    LLCs or NUMA nodes, the partitions lie where ReSense's scores (Tang's
//!    heuristic for a latency app) put them when profiles are stored, and an
//!    app spanning several nodes that Thread Tranquilizer's rule calls
//!    memory-intensive gets interleaved memory (one within a node, local).
//!
//! Every plan's note says, per app, what auto chose and why.
//!
//! Not done yet: partitions are sized by the threads each app runs, not by
//! how much a CPU more speeds it up.

mod admission;
pub(crate) mod evidence;
pub mod gang;
mod placement;
mod team;
#[cfg(test)]
mod tests;
pub(crate) mod trial;

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::str::FromStr;
use std::time::Duration;

use coloc_model::metrics::{CoRuns, SoloCurves};
use coloc_model::profile::AppProfile;
use coloc_model::{
    AppClass, AppId, AppPlan, AppView, CpuSet, Placement, Plan, SchedSettings, View,
};

use self::admission::Cpus;
use self::evidence::{usage, Evidence};
use self::placement::Placer;
pub use self::trial::measured_against_linux;
use self::trial::Trial;
use crate::baseline::topology_order;
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

/// A partition counts as leaving a CPU idle when its app used at most this
/// much less than a whole CPU of it over the last interval (the Manager's
/// work-conservation check counts a CPU busy less than 10% as idle,
/// `docs/architecture.md`).
const IDLE_SLACK: f64 = 0.1;

/// Nice value of batch apps while a latency-class app runs (`latency`).
pub const LATENCY_NICE: i8 = 10;
/// Nice step between apps ranked by attained CPU time (`art`): the app that has
/// had the least CPU runs at nice 0, the next at this, and so on up to 19.
pub const ART_NICE_STEP: i8 = 3;
/// Nice value of every app but the one with the least time left, under `art`
/// with stored solo times (shortest remaining time first): the lowest
/// priority, so that the shortest app has the CPUs it can use and the others
/// only what it leaves.
pub const SRPT_NICE: i8 = 19;

/// The auto policy.
#[derive(Debug, Default)]
pub struct Auto {
    objective: Objective,
    evidence: BTreeMap<AppId, Evidence>,
    trial: Option<Trial>,
    /// Time of the last observation taken in.
    seen: Option<Duration>,
    /// Stored solo times per thread count, by app name (team sizes,
    /// admission).
    solo: SoloCurves,
    /// How fast apps ran beside others in earlier runs (admission).
    coruns: CoRuns,
    /// Placement from stored profiles and memory policy from observed rates.
    placer: Placer,
    /// Observations taken in: under gang time sharing, the app in the
    /// foreground is the running app of this index, modulo their count
    /// (`auto/gang.rs`).
    turn: u64,
}

impl Auto {
    pub fn new(objective: Objective) -> Self {
        Self {
            objective,
            ..Self::default()
        }
    }

    /// With the apps' stored solo times (`coloc solo --threads`), which cap a
    /// team that runs slower than a smaller one (`auto/team.rs`) and let
    /// admission start an app that would not slow the mix (`auto/admission.rs`).
    pub fn with_solo(mut self, solo: SoloCurves) -> Self {
        self.solo = solo;
        self
    }

    /// With the rates apps ran at beside others in earlier runs
    /// (`coloc_model::metrics::corun`), by which admission holds an app that
    /// would share the machine worse than it would run after the other
    /// (`auto/admission.rs`).
    pub fn with_coruns(mut self, coruns: CoRuns) -> Self {
        self.coruns = coruns;
        self
    }

    /// With the apps' stored profiles (`coloc profile`), which place the
    /// partitions on machines with several LLCs or nodes
    /// (`auto/placement/`).
    pub fn with_profiles(mut self, profiles: Vec<AppProfile>) -> Self {
        self.placer = Placer::new(profiles);
        self
    }

    /// Takes in the view's last observation, once: each app's evidence.
    /// Returns whether it was new.
    fn observe(&mut self, view: &View<'_>) -> bool {
        let Some(last) = view.last else { return false };
        if self.seen == Some(last.at) {
            return false;
        }
        self.seen = Some(last.at);
        self.placer.observe(view);
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
    fn steer(&self, a: &AppView) -> bool {
        a.spec.malleable
            && !(self.objective == Objective::Latency && a.spec.class == AppClass::Latency)
            && self.evidence.get(&a.id).is_some_and(|e| e.lever_acts())
    }

    /// Threads an app runs under auto, in either arrangement, and why when
    /// fewer than it asked for: a steered app whose stored solo times say a
    /// smaller team is faster runs that team (`auto/team.rs`), any other app
    /// its threads.
    fn team(&self, a: &AppView) -> (u32, Option<String>) {
        if self.steer(a) {
            let (k, why) = team::fastest(&self.solo, &a.spec.name, a.threads_requested.max(1));
            if why.is_some() {
                return (k, why);
            }
        }
        (Self::fixed_threads(a), None)
    }

    /// Under `art`, the apps' estimated times left, shortest first, when every
    /// app running or arriving has stored solo times and they oversubscribe
    /// the CPUs: each app's solo time at the threads it runs less the time
    /// since it started (`auto/admission.rs`). Shortest remaining processing
    /// time first minimizes the mean response time when lengths are known; the
    /// apps' lengths are what their solo times say. None otherwise (least
    /// attained service then, [`ART_NICE_STEP`]).
    fn srpt(
        &self,
        view: &View<'_>,
        members: &[&AppView],
        team: impl Fn(&AppView) -> u32,
        cpus: u32,
    ) -> Option<Vec<(f64, AppId)>> {
        let demand: u32 = members.iter().map(|a| team(a)).sum();
        if self.objective != Objective::Art || members.len() < 2 || demand <= cpus {
            return None;
        }
        let mut order = members
            .iter()
            .map(|a| admission::time_left(&self.solo, a, team(a), view.now).map(|t| (t, a.id)))
            .collect::<Option<Vec<_>>>()?;
        order.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        Some(order)
    }

    /// Scheduling settings the objective asks for, per running app; `srpt`
    /// is the order of [`Auto::srpt`], when there is one.
    fn sched(
        &self,
        running: &[&AppView],
        srpt: Option<&[(f64, AppId)]>,
    ) -> BTreeMap<AppId, SchedSettings> {
        let nice = |n: i8| SchedSettings {
            nice: Some(n),
            ..SchedSettings::default()
        };
        match (self.objective, srpt) {
            (Objective::Makespan, _) => BTreeMap::new(),
            (Objective::Latency, _) => {
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
            (Objective::Art, Some(order)) => {
                let first = order
                    .iter()
                    .map(|(_, id)| *id)
                    .find(|id| running.iter().any(|a| a.id == *id));
                running
                    .iter()
                    .map(|a| {
                        let n = if Some(a.id) == first { 0 } else { SRPT_NICE };
                        (a.id, nice(n))
                    })
                    .collect()
            }
            (Objective::Art, None) => {
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

/// Cuts `cpus` (in topology order) into one contiguous slice per weight,
/// sized in proportion to the weights, each at least one CPU: every slice gets
/// one CPU, the rest go by largest remainder of `rest · weight / total` (ties
/// to the earlier app). With more weights than CPUs, each CPU is one slice and
/// each app, in order, shares the slice whose apps have the least weight so
/// far.
pub(crate) fn partitions(cpus: &[u32], weights: &[u32]) -> Vec<CpuSet> {
    let n = weights.len();
    if n == 0 || cpus.is_empty() {
        return vec![CpuSet::new(); n];
    }
    if n > cpus.len() {
        let mut load = vec![0u64; cpus.len()];
        return weights
            .iter()
            .map(|&w| {
                let k = (0..cpus.len()).min_by_key(|&k| (load[k], k)).expect("cpus");
                load[k] += u64::from(w.max(1));
                CpuSet::single(cpus[k])
            })
            .collect();
    }
    let rest = (cpus.len() - n) as u64;
    let total: u64 = weights.iter().map(|&w| u64::from(w.max(1))).sum();
    let mut size: Vec<u64> = weights
        .iter()
        .map(|&w| 1 + rest * u64::from(w.max(1)) / total)
        .collect();
    let mut left = cpus.len() as u64 - size.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| {
        (
            std::cmp::Reverse(rest * u64::from(weights[i].max(1)) % total),
            i,
        )
    });
    for &i in order.iter().cycle() {
        if left == 0 {
            break;
        }
        size[i] += 1;
        left -= 1;
    }
    let mut start = 0usize;
    size.iter()
        .map(|&len| {
            let slice = cpus[start..start + len as usize].iter().copied().collect();
            start += len as usize;
            slice
        })
        .collect()
}

impl Policy for Auto {
    fn name(&self) -> &'static str {
        "auto"
    }

    fn decide(&mut self, view: &View<'_>) -> Plan {
        let order = topology_order(view);
        let cpus = order.len().max(1) as u32;
        self.evidence
            .retain(|id, _| view.apps.iter().any(|a| a.id == *id));
        let mut running: Vec<&AppView> = view.running().collect();
        running.sort_by_key(|a| (a.started_at, a.id));
        for a in &running {
            self.evidence.entry(a.id).or_default();
        }
        let mut set: Vec<AppId> = running.iter().map(|a| a.id).collect();
        set.sort();

        // Evidence first (it decides which levers act), then the trial.
        let fresh = self.observe(view);
        self.turn += u64::from(fresh);
        let steered: Vec<AppId> = running
            .iter()
            .filter(|a| self.steer(a))
            .map(|a| a.id)
            .collect();
        // Threads each app runs under auto, and why when fewer than asked.
        let teams: BTreeMap<AppId, (u32, Option<String>)> =
            view.apps.iter().map(|a| (a.id, self.team(a))).collect();
        let team = |a: &AppView| teams[&a.id].0;
        let demand: u32 = running.iter().map(|a| team(a)).sum();
        let applicable = demand > cpus && running.len() > 1;
        // Gang time sharing (`auto/gang.rs`) when every running app may take
        // part; why each may or may not, for the note.
        let gang_why: BTreeMap<AppId, Result<(), String>> = running
            .iter()
            .map(|a| {
                let steer = steered.contains(&a.id);
                let e = self.evidence.get(&a.id);
                (a.id, gang::candidate(steer, team(a), cpus, e))
            })
            .collect();
        // Only where partitions cannot give every app a CPU of its own:
        // measured on this project's machine, two such teams on as many CPUs
        // ran slower gang time-shared than partitioned (`auto/gang.rs`).
        let gang = self.objective == Objective::Makespan
            && applicable
            && running.len() > cpus as usize
            && gang_why.values().all(Result::is_ok);
        let round = if gang { running.len() as u32 } else { 1 };
        let foreground = running
            .get((self.turn % running.len().max(1) as u64) as usize)
            .map(|a| a.id);
        let gang_offsets = gang::offsets(&running);
        // `art` with solo times: shortest time left first, over the apps
        // running and pending.
        let arriving: Vec<&AppView> = running.iter().copied().chain(view.pending()).collect();
        let srpt = self.srpt(view, &arriving, team, cpus);
        let sched = self.sched(&running, srpt.as_deref());
        // Shortest first is an order, not a rate: the trial, which compares
        // the apps' progress rates with Linux's, cannot judge it (it slows the
        // longer apps on purpose), so it is not tried against Linux.
        let tried = applicable && srpt.is_none();
        let trial = Trial::follow(&mut self.trial, view, (set, round), fresh, tried);
        let stage = match &srpt {
            Some(order) => {
                let mut ids: Vec<AppId> = order.iter().map(|(_, id)| *id).collect();
                ids.sort();
                let ids: Vec<String> = ids.iter().map(AppId::to_string).collect();
                let left: Vec<String> = order
                    .iter()
                    .map(|(t, id)| format!("{id} ~{t:.2} s"))
                    .collect();
                format!(
                    "[{}] shortest time left first (solo times: {} left), not tried against Linux",
                    ids.join(" "),
                    left.join(", ")
                )
            }
            None => trial.describe(),
        };
        let linux = trial.linux();
        // How the running apps used the CPUs over the last interval.
        let used: BTreeMap<AppId, (f64, bool)> = match (view.prev, view.last) {
            (Some(prev), Some(last)) => running
                .iter()
                .filter_map(|a| usage(prev, last, a.id).map(|u| (a.id, u)))
                .collect(),
            _ => BTreeMap::new(),
        };
        // CPUs left idle, counted only from an observation of every running
        // app (before the first one, nothing is known to idle).
        let idle = if !running.is_empty()
            && used.len() == running.len()
            && used.values().all(|(_, waiting)| !waiting)
        {
            let rate: f64 = used.values().map(|(rate, _)| rate).sum();
            (f64::from(cpus) - rate + IDLE_SLACK).floor().max(0.0) as u32
        } else {
            0
        };
        let admission = admission::admit(
            self.objective,
            view,
            &running,
            admission::Stored {
                solo: &self.solo,
                coruns: &self.coruns,
            },
            Cpus {
                count: cpus,
                demand,
                idle,
            },
            linux,
            team,
        );
        let held = &admission.held;
        // Apps admitted now start in their partition: their set is tried
        // afresh, auto's arrangement first.
        let mut members = running.clone();
        members.extend(view.pending().filter(|a| !held.contains(&a.id)));
        let launching = members.len() > running.len();
        let gang = gang && !launching;
        let own = srpt.is_none()
            && if launching {
                let demand: u32 = members.iter().map(|a| team(a)).sum();
                demand > cpus && members.len() > 1
            } else {
                applicable && trial.space()
            };

        // Auto's arrangement: a partition per app, in proportion to the
        // threads it runs (a steered app: the team it asked for, or the
        // smaller one its solo times say is faster).
        // Where they lie: by the stored profiles where the machine has
        // several LLCs or nodes (`auto/placement/`), else contiguous. Only
        // the own arrangement uses where they lie: the placement search
        // (ReSensor, Tang) runs only then.
        let weights: Vec<u32> = members.iter().map(|a| team(a)).collect();
        let contiguous = partitions(&order, &weights);
        let placed = if own {
            self.placer.place(view, &members, &contiguous)
        } else {
            None
        };
        let (cuts, placed_by) = match placed {
            Some((cuts, why)) => (cuts, Some(why)),
            None => (contiguous, None),
        };
        let slices: BTreeMap<AppId, CpuSet> = members.iter().map(|a| a.id).zip(cuts).collect();
        // Work conservation inside the own arrangement: the CPUs of a
        // partition its app left idle over the last interval are lent to the
        // apps whose threads waited for a CPU, until it uses them again.
        let lent: CpuSet = running
            .iter()
            .filter_map(|a| {
                let (rate, _) = used.get(&a.id)?;
                let slice = slices.get(&a.id)?;
                let spare = (slice.len() as f64 - rate + IDLE_SLACK).floor().max(0.0) as usize;
                Some(slice.iter().rev().take(spare).collect::<Vec<_>>())
            })
            .flatten()
            .collect();
        // The CPUs an app runs on in auto's arrangement: its partition, and
        // the lent CPUs when its threads waited (a steered app keeps the DoP
        // of its partition: its waiting thread may move, its team stays).
        let placed = |id: &AppId, slice: &CpuSet| {
            let borrows = used.get(id).is_some_and(|(_, waiting)| *waiting)
                && !lent.difference(slice).is_empty();
            if borrows {
                slice.union(&lent)
            } else {
                slice.clone()
            }
        };

        let mut note = format!("auto ({}): {stage}", self.objective);
        if let Some(why) = placed_by {
            let _ = write!(note, "; {why}");
        }
        // The memory policy of an app on its partition, said in the note.
        let placer = &self.placer;
        let memory = |a: &AppView, slice: &CpuSet, note: &mut String| {
            let (policy, why) = placer.memory(view, a, slice);
            if let Some(why) = why {
                let _ = write!(note, ", {why}");
            }
            policy
        };
        let apps = view
            .apps
            .iter()
            .map(|a| {
                let mut p = AppPlan::native(a.id);
                if !a.is_running() {
                    let why = admission.why.get(&a.id);
                    if held.contains(&a.id) {
                        let _ = write!(note, "; {} {}", a.id, why.map_or("waits", |w| w));
                        return AppPlan::hold(a.id);
                    }
                    match slices.get(&a.id).filter(|_| own) {
                        Some(slice) => {
                            p.placement = Placement::Shared(slice.clone());
                            let _ = write!(note, "; {} admitted on CPUs {}", a.id, slice.to_list());
                            p.memory = memory(a, slice, &mut note);
                        }
                        None => {
                            let _ = write!(note, "; {} admitted", a.id);
                        }
                    }
                    if let Some(w) = why {
                        let _ = write!(note, ", {w}");
                    }
                    return p;
                }
                p.sched = sched.get(&a.id).copied().unwrap_or_default();
                let why = if a.spec.malleable {
                    self.evidence
                        .get(&a.id)
                        .map(|e| format!("DoP lever: {}", e.lever_reason()))
                        .unwrap_or_default()
                } else {
                    "not malleable".to_string()
                };
                let slice = slices.get(&a.id).cloned().unwrap_or_default();
                let (team, smaller) = &teams[&a.id];
                let team = *team;
                if !own {
                    if let Some(smaller) = smaller {
                        // A steered app's smaller team is judged by its solo
                        // times, not by the trial: it holds in both
                        // arrangements (`auto/team.rs`).
                        p.dop = Some(team);
                        let _ = write!(note, "; {} dop {team}, left to Linux ({smaller})", a.id);
                    } else if steered.contains(&a.id) {
                        // Its whole team back, once its next region starts.
                        p.dop = Some(a.threads_requested.max(1));
                        let _ = write!(note, "; {} full team, left to Linux", a.id);
                    } else {
                        let _ = write!(note, "; {} left to Linux ({why})", a.id);
                    }
                } else if gang {
                    let fore = foreground == Some(a.id);
                    let sample = view.last.and_then(|o| o.app(a.id));
                    let offset = gang_offsets.get(&a.id).copied().unwrap_or(0);
                    let (placement, sched) = gang::arrange(a, sample, (&order, offset), fore);
                    let nice = sched.nice.unwrap_or_default();
                    p.placement = placement;
                    p.sched = sched;
                    let _ = write!(
                        note,
                        "; {} gang {}ground (nice {nice}): {} thread(s) spread over CPUs {} \
                         ({demand} threads wanted on {cpus} CPUs; {why}; {:.0} sleeps per CPU-second)",
                        a.id,
                        if fore { "fore" } else { "back" },
                        Self::fixed_threads(a),
                        p.placement.cpus().to_list(),
                        self.evidence.get(&a.id).map_or(0.0, |e| e.sleeps),
                    );
                    return p;
                } else if steered.contains(&a.id) {
                    let dop = (slice.len() as u32).clamp(1, team);
                    let cpus_of = placed(&a.id, &slice);
                    p.dop = Some(dop);
                    p.placement = Placement::Shared(cpus_of.clone());
                    let _ = write!(
                        note,
                        "; {} dop {dop} on CPUs {} ({demand} threads wanted on {cpus} CPUs; {why}",
                        a.id,
                        cpus_of.to_list()
                    );
                    if let Some(smaller) = smaller {
                        let _ = write!(note, "; {smaller}");
                    }
                    note.push(')');
                    if cpus_of != slice {
                        let _ = write!(note, ", borrowing idle CPUs {}", lent.to_list());
                    }
                    p.memory = memory(a, &slice, &mut note);
                } else {
                    let cpus_of = placed(&a.id, &slice);
                    p.placement = Placement::Shared(cpus_of.clone());
                    let _ = write!(
                        note,
                        "; {} {} thread(s) on CPUs {} ({demand} threads wanted on {cpus} CPUs; {why}",
                        a.id,
                        Self::fixed_threads(a),
                        cpus_of.to_list()
                    );
                    if self.objective == Objective::Makespan {
                        let _ = match gang_why.get(&a.id) {
                            Some(Err(r)) => write!(note, "; no gang: {r}"),
                            _ if running.len() <= cpus as usize => {
                                write!(note, "; no gang: a CPU of its own is faster")
                            }
                            _ => write!(note, "; no gang: not every co-runner can"),
                        };
                    }
                    note.push(')');
                    if cpus_of != slice {
                        let _ = write!(note, ", borrowing idle CPUs {}", lent.to_list());
                    }
                    p.memory = memory(a, &slice, &mut note);
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
