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
//!    the longest region seen to end). Auto steers it only where the
//!    reversible-first rule (`cores/reversible.rs`) allows a cut: its
//!    program's regions are known, from whole earlier runs, to last at most
//!    four observation intervals; otherwise it keeps its whole team.
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
//! Every plan says, per app, what auto chose and why as data
//! (`coloc_model::reason`): the admission rule and its numbers, the partition
//! and the demand it was cut from, the DoP and the lever's state, why an app
//! is left to Linux, gang turns, borrowed CPUs, memory and nice values; and
//! the trial's verdict.
//!
//! A decision is a pipeline of steps, each with numbers in and numbers out:
//! take stock (evidence, teams: `Auto::take_stock`), arrange (gang or
//! partitions, the objective's order and nice values, the trial:
//! `Auto::arrange`), admit (`auto/admission.rs`), shape (which apps the own
//! arrangement covers: `shape`), cut the partitions and place them
//! (`Auto::cut`), and each app's plan with its memory policy
//! (`auto/plans.rs`).
//!
//! Not done yet: partitions are sized by the threads each app runs, not by
//! how much a CPU more speeds it up.

mod admission;
mod arrange;
pub(crate) mod evidence;
pub mod gang;
mod objective;
mod placement;
mod plans;
mod team;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::time::Duration;

use coloc_model::metrics::{CoRuns, RegionRecords, SoloCurves};
use coloc_model::profile::AppProfile;
use coloc_model::reason::{
    DopWhy, Judge, NoGang, PlanReason, Reversibility, Sched, TrialState, Verdict,
};
pub use coloc_model::reason::{Objective, UnknownObjective};
use coloc_model::{AppClass, AppId, AppView, CpuSet, Plan, SchedSettings, View};

use self::admission::{Admission, Cpus};
pub(crate) use self::arrange::partitions;
use self::evidence::Evidence;
pub use self::objective::{ART_NICE_STEP, LATENCY_NICE, SRPT_NICE};
use self::placement::Placer;
use crate::baseline::topology_order;
use crate::cores::reversible::Stakes;
use crate::trial::{Trial, Trials};
use crate::Policy;

/// The auto policy.
#[derive(Debug, Default)]
pub struct Auto {
    objective: Objective,
    evidence: BTreeMap<AppId, Evidence>,
    trial: Trials,
    /// Time of the last observation taken in.
    seen: Option<Duration>,
    /// Stored solo times per thread count, by app name (team sizes,
    /// admission).
    solo: SoloCurves,
    /// How fast apps ran beside others in earlier runs (admission).
    coruns: CoRuns,
    /// How long the apps' regions lasted in whole earlier runs, by app name
    /// (reversible first: `cores/reversible.rs`).
    regions: RegionRecords,
    /// Which records those come from (named in the reasons).
    provenance: coloc_model::knowledge::provenance::Provenance,
    /// Placement from stored profiles and memory policy from observed rates.
    placer: Placer,
    /// Observations taken in: under gang time sharing, the app in the
    /// foreground is the running app of this index, modulo their count
    /// (`auto/gang.rs`).
    turn: u64,
}

/// The threads an app runs under auto, in either arrangement, and why when
/// fewer than it asked for.
#[derive(Clone, Debug, PartialEq)]
struct Team {
    threads: u32,
    /// Its stored solo times say this smaller team is faster
    /// ([`DopWhy::FastestAlone`]).
    smaller: Option<DopWhy>,
}

/// The first step's numbers: the CPUs, the running apps and the threads
/// every app runs under auto.
#[derive(Debug)]
struct Stock<'v> {
    /// The usable CPUs in topology order, and their count (at least 1).
    order: Vec<u32>,
    cpus: u32,
    /// The running apps, oldest first.
    running: Vec<&'v AppView>,
    /// Every app's team.
    teams: BTreeMap<AppId, Team>,
    /// The running apps whose DoP auto steers.
    steered: Vec<AppId>,
    /// The running apps whose DoP auto could set but whose cut the
    /// reversible-first rule forbids, and what it found: they keep their
    /// whole team, placed by affinity (`cores/reversible.rs`).
    whole: BTreeMap<AppId, Reversibility>,
    /// Threads the running apps run.
    demand: u32,
    /// Whether the view's last observation was new.
    fresh: bool,
}

impl Stock<'_> {
    fn team(&self, a: &AppView) -> u32 {
        self.teams[&a.id].threads
    }

    /// Whether the own arrangement has anything to act on: at least two
    /// apps whose threads oversubscribe the CPUs.
    fn applicable(&self) -> bool {
        self.demand > self.cpus && self.running.len() > 1
    }
}

/// The arrangement step's numbers: gang time sharing or partitions, the
/// objective's order and nice values, and the trial's standing.
#[derive(Debug)]
struct Arranged {
    /// Gang time sharing, before admission (`auto/gang.rs`).
    gang: bool,
    /// Why each running app may or may not be gang time-shared.
    gang_why: BTreeMap<AppId, Result<(), NoGang>>,
    /// Under gang time sharing: the app in the foreground, and where each
    /// app's threads start.
    foreground: Option<AppId>,
    offsets: BTreeMap<AppId, usize>,
    /// `art` with solo times: the apps' estimated times left, shortest
    /// first.
    srpt: Option<Vec<(f64, AppId)>>,
    /// The objective's scheduling settings per running app, and why.
    sched: BTreeMap<AppId, (SchedSettings, Sched)>,
    /// The trial's verdict on the running set.
    verdict: Verdict,
    /// The trial settled on Linux for the running set.
    linux: bool,
    /// The trial runs the own arrangement now.
    space: bool,
}

/// Which apps the own arrangement covers this decision.
#[derive(Debug)]
struct Shape<'v> {
    /// The running apps and those admitted now, in that order.
    members: Vec<&'v AppView>,
    /// Apps are admitted now (their set is tried afresh, own first).
    launching: bool,
    /// Gang time sharing applies.
    gang: bool,
    /// The own arrangement applies.
    own: bool,
    /// Threads the members run.
    demand: u32,
}

/// The partitions of the members and what placed them.
#[derive(Debug)]
struct Cut {
    slices: BTreeMap<AppId, CpuSet>,
    /// Plan-wide reasons of placement by profiles, when it placed them.
    placed_by: Vec<PlanReason>,
    /// Tang's choices for latency members.
    tang: Vec<(AppId, coloc_model::reason::TangChoice)>,
    /// Idle CPUs of partitions lent to apps whose threads wait.
    lent: CpuSet,
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

    /// With how long the apps' regions lasted in whole earlier runs, which
    /// say where a DoP cut is undone soon enough to be made
    /// (`cores/reversible.rs`).
    pub fn with_regions(mut self, regions: RegionRecords) -> Self {
        self.regions = regions;
        self
    }

    /// With which records the solo times, rates and region records come
    /// from, to name in the reasons of the decisions that use them.
    pub fn with_provenance(
        mut self,
        provenance: coloc_model::knowledge::provenance::Provenance,
    ) -> Self {
        self.provenance = provenance;
        self
    }

    /// With the stored pairs of earlier trials of the sets the apps can form:
    /// a set's trial starts from them (docs/knowledge.md, Trials of a set of
    /// programs).
    pub fn with_trials(mut self, trials: coloc_model::knowledge::trials::TrialPriors) -> Self {
        self.trial.stored(trials);
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

    /// Whether auto may set this app's DoP at all: malleable, answering on
    /// the DoP channel, and under `latency` not a latency app.
    fn dop_settable(&self, a: &AppView) -> bool {
        a.spec.malleable
            && !(self.objective == Objective::Latency && a.spec.class == AppClass::Latency)
            && self.evidence.get(&a.id).is_some_and(|e| e.clock.steerable)
    }

    /// Whether a DoP asked of this app now reaches it soon: it may be set
    /// and its lever acts.
    fn lever_acts(&self, a: &AppView) -> bool {
        self.dop_settable(a) && self.evidence.get(&a.id).is_some_and(|e| e.lever_acts())
    }

    /// Reversible first (`cores/reversible.rs`): whether a cut of this app
    /// is worth what it risks, by its program's region records, what this
    /// run saw of its regions and the expected life of its set, as its
    /// trial estimates it.
    fn reversible(&self, view: &View<'_>, a: &AppView) -> Reversibility {
        let clock = self
            .evidence
            .get(&a.id)
            .map(|e| e.clock.clone())
            .unwrap_or_default();
        let cpus = crate::baseline::topology_cpus(view);
        let stakes = Stakes::equal_share(view, a, cpus, self.trial.ahead(view.now));
        crate::cores::reversible::of_app(&self.regions, &clock, view, a, &stakes)
    }

    /// Threads an app runs under auto, in either arrangement: a steered app
    /// whose stored solo times say a smaller team is faster runs that team
    /// (`auto/team.rs`), any other app its threads.
    fn team(&self, a: &AppView) -> Team {
        if self.lever_acts(a) {
            let (k, why) = team::fastest(&self.solo, &a.spec.name, a.threads_requested.max(1));
            if why.is_some() {
                return Team {
                    threads: k,
                    smaller: why,
                };
            }
        }
        Team {
            threads: Self::fixed_threads(a),
            smaller: None,
        }
    }

    /// Step 1: the evidence of the running apps (it decides which levers
    /// act, so it comes first) and every app's team.
    fn take_stock<'v>(&mut self, view: &View<'v>) -> Stock<'v> {
        let order = topology_order(view);
        let cpus = order.len().max(1) as u32;
        self.evidence
            .retain(|id, _| view.apps.iter().any(|a| a.id == *id));
        let mut running: Vec<&AppView> = view.running().collect();
        running.sort_by_key(|a| (a.started_at, a.id));
        for a in &running {
            self.evidence.entry(a.id).or_default();
        }
        let fresh = self.observe(view);
        self.turn += u64::from(fresh);
        // Reversible first: an app the rule forbids to cut keeps its whole
        // team; of the others, those whose lever acts are steered.
        let mut steered = Vec::new();
        let mut whole = BTreeMap::new();
        for a in running.iter().filter(|a| self.dop_settable(a)) {
            let found = self.reversible(view, a);
            if !found.allows_cut() {
                whole.insert(a.id, found);
            } else if self.lever_acts(a) {
                steered.push(a.id);
            }
        }
        let teams: BTreeMap<AppId, Team> = view.apps.iter().map(|a| (a.id, self.team(a))).collect();
        let demand = running.iter().map(|a| teams[&a.id].threads).sum();
        Stock {
            order,
            cpus,
            running,
            teams,
            steered,
            whole,
            demand,
            fresh,
        }
    }

    /// Step 2: gang time sharing or partitions for the running apps, the
    /// objective's order and nice values, and the trial of the running set.
    fn arrange(&mut self, view: &View<'_>, stock: &Stock<'_>) -> Arranged {
        let (cpus, running) = (stock.cpus, &stock.running);
        // Gang time sharing (`auto/gang.rs`) when every running app may take
        // part.
        let gang_why: BTreeMap<AppId, Result<(), NoGang>> = running
            .iter()
            .map(|a| {
                let steer = stock.steered.contains(&a.id);
                let e = self.evidence.get(&a.id);
                (a.id, gang::candidate(steer, stock.team(a), cpus, e))
            })
            .collect();
        // Only where partitions cannot give every app a CPU of its own:
        // measured on the simulator's `kvm-2cpu` machine, two such teams on
        // as many CPUs ran slower gang time-shared than partitioned
        // (`auto/gang.rs`).
        let gang = self.objective == Objective::Makespan
            && stock.applicable()
            && running.len() > cpus as usize
            && gang_why.values().all(Result::is_ok);
        let round = if gang { running.len() as u32 } else { 1 };
        let foreground = running
            .get((self.turn % running.len().max(1) as u64) as usize)
            .map(|a| a.id);
        // `art` with solo times: shortest time left first, over the apps
        // running and pending.
        let arriving: Vec<&AppView> = running.iter().copied().chain(view.pending()).collect();
        let team = |a: &AppView| stock.team(a);
        let srpt =
            objective::shortest_first(self.objective, &self.solo, view.now, &arriving, team, cpus);
        let sched =
            objective::nice_values(self.objective, running, srpt.as_deref(), &self.evidence);
        // Shortest first is an order, not a rate: the trial, which compares
        // the apps' progress rates with Linux's, cannot judge it (it slows the
        // longer apps on purpose), so it is not tried against Linux.
        let tried = stock.applicable() && srpt.is_none();
        let mut set: Vec<AppId> = running.iter().map(|a| a.id).collect();
        set.sort();
        let trial = Trial::follow(&mut self.trial, view, (set, round), stock.fresh, tried);
        let verdict = match &srpt {
            Some(order) => {
                let mut apps: Vec<AppId> = order.iter().map(|(_, id)| *id).collect();
                apps.sort();
                Verdict {
                    judge: Judge::Auto,
                    apps,
                    state: TrialState::NotTried,
                    estimate: None,
                    cost: None,
                    round: 1,
                    pair: None,
                    stored: None,
                }
            }
            None => trial.verdict(Judge::Auto),
        };
        Arranged {
            gang,
            gang_why,
            foreground,
            offsets: gang::offsets(running),
            sched,
            verdict,
            linux: trial.linux(),
            space: trial.space(),
            srpt,
        }
    }

    /// Step 3: which pending apps start now (`auto/admission.rs`), given how
    /// the running apps used the CPUs over the last interval.
    fn admit(
        &self,
        view: &View<'_>,
        stock: &Stock<'_>,
        arranged: &Arranged,
        used: &BTreeMap<AppId, (f64, bool)>,
    ) -> Admission {
        admission::admit(
            self.objective,
            view,
            &stock.running,
            admission::Stored {
                solo: &self.solo,
                coruns: &self.coruns,
            },
            Cpus {
                count: stock.cpus,
                demand: stock.demand,
                idle: arrange::idle(used, stock.running.len(), stock.cpus),
            },
            arranged.linux,
            |a| stock.team(a),
        )
    }

    /// Step 5: the members' partitions, in proportion to the threads each
    /// runs (a steered app: the team it asked for, or the smaller one its
    /// solo times say is faster); where they lie: by the stored profiles
    /// where the machine has several LLCs or nodes (`auto/placement/`), else
    /// contiguous. Only the own arrangement uses where they lie: the
    /// placement search (ReSensor, Tang) runs only then.
    fn cut(
        &self,
        view: &View<'_>,
        stock: &Stock<'_>,
        shape: &Shape<'_>,
        used: &BTreeMap<AppId, (f64, bool)>,
    ) -> Cut {
        let weights: Vec<u32> = shape.members.iter().map(|a| stock.team(a)).collect();
        let contiguous = partitions(&stock.order, &weights);
        let placed = if shape.own {
            self.placer.place(view, &shape.members, &contiguous)
        } else {
            None
        };
        let (cuts, placed_by, tang) = match placed {
            Some(p) => (p.cuts, p.reasons, p.tang),
            None => (contiguous, Vec::new(), Vec::new()),
        };
        let slices: BTreeMap<AppId, CpuSet> =
            shape.members.iter().map(|a| a.id).zip(cuts).collect();
        let lent = arrange::lent(&stock.running, used, &slices);
        Cut {
            slices,
            placed_by,
            tang,
            lent,
        }
    }
}

/// Step 4: the apps the own arrangement covers: the running ones and those
/// admitted now, which start in their partition (their set is tried
/// afresh, auto's arrangement first); gang time sharing only while no app
/// launches.
fn shape<'v>(
    view: &View<'v>,
    stock: &Stock<'v>,
    arranged: &Arranged,
    admission: &Admission,
) -> Shape<'v> {
    let mut members = stock.running.clone();
    members.extend(view.pending().filter(|a| !admission.held.contains(&a.id)));
    let launching = members.len() > stock.running.len();
    let demand = if launching {
        members.iter().map(|a| stock.team(a)).sum()
    } else {
        stock.demand
    };
    let own = arranged.srpt.is_none()
        && if launching {
            demand > stock.cpus && members.len() > 1
        } else {
            stock.applicable() && arranged.space
        };
    Shape {
        gang: arranged.gang && !launching,
        members,
        launching,
        own,
        demand,
    }
}

impl Policy for Auto {
    fn name(&self) -> &'static str {
        "auto"
    }

    fn learned(&mut self, learned: &coloc_model::knowledge::derive::Learned) {
        self.solo = learned.solo.clone();
        self.coruns = learned.coruns.clone();
        self.regions = learned.regions.clone();
        self.provenance = learned.provenance.clone();
        self.trial.stored(learned.trials.clone());
    }

    fn decide(&mut self, view: &View<'_>) -> Plan {
        let stock = self.take_stock(view);
        let arranged = self.arrange(view, &stock);
        let used = arrange::used(view, &stock.running);
        let admission = self.admit(view, &stock, &arranged, &used);
        let shape = shape(view, &stock, &arranged, &admission);
        let cut = self.cut(view, &stock, &shape, &used);
        let steps = plans::Steps {
            stock: &stock,
            arranged: &arranged,
            admission: &admission,
            shape: &shape,
            cut: &cut,
            used: &used,
        };
        let apps = view
            .apps
            .iter()
            .map(|a| self.plan_app(view, a, &steps))
            .collect();
        let mut reasons = vec![PlanReason::Objective {
            objective: self.objective,
        }];
        if let Some(order) = &arranged.srpt {
            reasons.push(PlanReason::ShortestFirst {
                left: order.iter().map(|(t, id)| (*id, *t)).collect(),
            });
        }
        reasons.extend(cut.placed_by.iter().cloned());
        let mut plan = Plan {
            apps,
            reasons,
            verdicts: vec![arranged.verdict.clone()],
            legacy_note: None,
        };
        self.provenance.annotate(view, &mut plan);
        plan
    }
}
