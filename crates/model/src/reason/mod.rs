//! Why a plan is what it is, as data (docs/trace-format.md, "Reasons and
//! verdicts"; docs/architecture.md, Conventions: decisions are data).
//!
//! A policy returns numbers, never prose: each [`AppPlan`](crate::AppPlan)
//! carries the [`Reason`]s for what the app got (one small enum per kind of
//! decision, with the rule and the numbers it compared), each
//! [`Plan`](crate::Plan) the plan-wide [`PlanReason`]s and the [`Verdict`]s
//! of the trials that measured it against Linux. The trace stores them; the
//! edges (the CLI, the HTML report, `coloc why`, the daemon's status) render
//! them with [`render`] (plans whole: the model's `explain` module). No code
//! reads the words back.
//!
//! To add a kind of decision, add a variant (or a field with a serde default)
//! and its rendering in `render.rs`: readers of older traces see the variant
//! only where it was written.

pub mod levers;
pub mod records;
pub mod render;

use serde::{Deserialize, Serialize};

use crate::cpuset::CpuSet;
use crate::ids::AppId;

/// What `auto` optimizes (`docs/policies/auto.md`, Objective).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    /// The time until the last app ends (the default).
    #[default]
    Makespan,
    /// The average response time of the apps.
    Art,
    /// The response of latency-class apps.
    Latency,
}

/// Why one app's plan is what it is: one entry per kind of decision that
/// applied to it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Reason {
    /// Started or held at admission, by which rule.
    Admission(Admission),
    /// An exclusive CPU partition of the policy's own arrangement, cut from
    /// the threads the running apps want.
    Partition(Partition),
    /// The DoP set, and why that many.
    Dop(Dop),
    /// Whether a DoP asked now would reach the app (`cores/lever.rs`).
    Lever(Lever),
    /// Reversible first (`cores/reversible.rs`): its DoP is left at its
    /// whole team, since a cut of it could not be taken back as soon as a
    /// partition can; it is placed instead.
    Whole(Reversibility),
    /// Left to Linux, and why.
    Linux(ToLinux),
    /// Gang time sharing's turn (`auto/gang.rs`).
    Gang(Gang),
    /// Why the app is not gang time-shared.
    NoGang(NoGang),
    /// Idle CPUs of other partitions lent to the app while its threads wait.
    Borrowed { cpus: CpuSet },
    /// Idle CPUs of other partitions not lent to the app although its
    /// threads wait: its team of `team` threads inside a region runs at its
    /// slowest member's pace, as fast on its `own` CPUs as it would on
    /// `with` (docs/policies/auto.md, Own arrangement).
    NotLent {
        cpus: CpuSet,
        team: u32,
        own: u32,
        with: u32,
    },
    /// The memory policy, and why.
    Memory(Memory),
    /// The scheduling settings, and why.
    Sched(Sched),
    /// Tang et al.'s Algorithm 1 for a latency app: share or spread, and the
    /// line that decided (`tang/algorithm.rs`).
    Tang(TangChoice),
    /// NuPoCo: the app's section and what it got (`nupoco/`).
    Section(Section),
    /// `scalability`'s hill climb.
    Climb(Climb),
    /// Thread Tranquilizer: a step of the app's pass (`tranquilizer/pass.rs`).
    Tranquilizer(TranquilizerStep),
    /// AToM: where the app's competition stands (`atom/`).
    Competition(Competition),
    /// The learned records the decision used, and the groups of them no
    /// longer used for predicting badly (docs/knowledge.md).
    Records(records::Records),
}

/// Plan-wide reasons: what the whole decision rested on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum PlanReason {
    /// `auto`'s objective.
    Objective { objective: Objective },
    /// `auto --objective art` with solo times: shortest time left first, not
    /// tried against Linux; each app's estimated seconds left.
    ShortestFirst { left: Vec<(AppId, f64)> },
    /// Partitions placed by stored profiles (`auto/placement/`).
    PlacedByProfiles,
    /// ReSense's cases (TACO 2013 §2.3) used per shared level.
    SharingCases { levels: Vec<LevelCases> },
    /// Apps without a stored profile: scored 0.
    Unprofiled { apps: Vec<AppId> },
    /// `equal`: this many apps over this many CPUs.
    Equal { apps: u32, cpus: u32 },
    /// NuPoCo's memory rates: where they come from.
    Rates(RatesFrom),
    /// NuPoCo's allocation unit (§5.2).
    Unit { level: String },
    /// NuPoCo's core swaps (§5.3).
    Swapped { pairs: u32 },
    /// Tang et al.'s levels on this machine.
    TangLevels { llc: String, bus: String },
    /// No latency-class app: Tang / AToM place nothing.
    NoLatencyApp,
    /// Gang: every app's threads fit the CPUs, left to Linux.
    ThreadsFit,
    /// The oracle's replayed configuration.
    Oracle { sharing: String },
}

/// One shared level's ReSense cases.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelCases {
    pub level: String,
    pub cases: Vec<u8>,
}

/// Where NuPoCo's rates come from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "from")]
pub enum RatesFrom {
    /// Measured by `coloc calibrate` at this time.
    Calibrated { measured_at: String },
    /// The stored calibration is of another machine: assumed rates.
    OtherMachine,
    /// No calibration: assumed rates.
    Assumed,
}

/// An admission decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Admission {
    pub admitted: bool,
    pub rule: AdmissionRule,
}

/// The rule that admitted or held a pending app, with its numbers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "rule")]
pub enum AdmissionRule {
    /// Started: the objective holds no app back (`latency`, `art` without
    /// solo times).
    Objective,
    /// Started: the running set's trial settled on Linux.
    TrialOnLinux,
    /// Started: CPUs went unused over the last interval with no thread
    /// waiting.
    IdleCpus { idle: u32 },
    /// Started: some CPU has no app of its own.
    FreeCpu { apps: u32, cpus: u32 },
    /// Started: its threads fit beside the running apps' (`demand` threads
    /// already wanted, it runs `threads`, on `cpus` CPUs).
    ThreadsFit {
        demand: u32,
        threads: u32,
        cpus: u32,
    },
    /// Held: every CPU has an app of its own, and no solo times to weigh.
    EveryCpuTaken { apps: u32, cpus: u32 },
    /// By stored solo times: the mix's estimated makespan started now
    /// against held until a CPU frees (`auto/admission.rs`).
    SoloTimes {
        now_secs: f64,
        held_secs: f64,
        needs_secs: f64,
        needs_cpu_secs: f64,
        frees_in_secs: f64,
    },
    /// By the rates the app and the one running app ran at beside each other
    /// in earlier runs, as shares of their speeds alone.
    CoRun {
        with: AppId,
        rate: f64,
        with_rate: f64,
        /// Clean pairs of the two (runs), or each beside other apps (runs of
        /// `with`, runs of this app).
        from: CoRunFrom,
        now_secs: f64,
        held_secs: f64,
    },
    /// `art`: shortest first; it needs this long alone, `least` has that
    /// long left.
    ShortestFirst {
        needs_secs: f64,
        least: AppId,
        left_secs: f64,
    },
    /// `batch`: one app at a time, in arrival order.
    OneAtATime,
    /// NuPoCo: no free core.
    NoFreeCore,
}

/// Where co-run rates come from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "from")]
pub enum CoRunFrom {
    Pairs { runs: u32 },
    Shared { with_runs: u32, runs: u32 },
}

/// A partition of the own arrangement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partition {
    pub cpus: CpuSet,
    /// The threads the app runs.
    pub threads: u32,
    /// Threads all running apps want, on `on` CPUs.
    pub demand: u32,
    pub on: u32,
}

/// A DoP and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dop {
    pub dop: u32,
    pub why: DopWhy,
}

/// Why this DoP.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "why")]
pub enum DopWhy {
    /// The size of its partition (at most its team).
    Partition,
    /// Its stored solo times: fastest alone with `threads` threads
    /// (`secs`), against `team_secs` with `team`.
    FastestAlone {
        threads: u32,
        secs: f64,
        team: u32,
        team_secs: f64,
    },
    /// Its whole team back, once its next region starts.
    WholeTeam,
}

/// The DoP lever's state (`cores/lever.rs`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Lever {
    pub state: LeverState,
    /// Regions ended so far, and the least that count.
    pub regions: u64,
    pub needed: u64,
    /// Seconds in its current state (inside one region, for `stuck`).
    pub quiet_secs: f64,
}

/// Whether a DoP cut of an app is worth what it risks (`cores/reversible.rs`,
/// docs/policies/auto.md, Reversible first): what is known of how long its
/// OpenMP regions last and, where that is known, the two costs the rule
/// weighs. Traces written before the rule weighed costs carry `limit_secs`
/// (the longest region a cut was made in then) and no `costs`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "regions")]
pub enum Reversibility {
    /// Its regions are known to last up to `bound_secs`, and a cut's
    /// expected cost is below that of keeping the team whole: a cut may be
    /// made.
    Short {
        bound_secs: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit_secs: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        costs: Option<CutCosts>,
    },
    /// No whole earlier run of the program was recorded and this run saw no
    /// region outlast an interval: its regions to come are not known.
    Unknown,
    /// A region may last `bound_secs` (recorded in a whole earlier run,
    /// `recorded`, or seen in this one), and a cut's expected cost is not
    /// below that of keeping the team whole.
    Long {
        bound_secs: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit_secs: Option<f64>,
        recorded: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        costs: Option<CutCosts>,
    },
}

impl Reversibility {
    /// Whether the rule allows a DoP cut.
    pub fn allows_cut(self) -> bool {
        matches!(self, Reversibility::Short { .. })
    }
}

/// The two costs reversible first weighs for a region of `bound_secs`, in
/// CPU-seconds (`cores/reversible.rs`): a cut's expected cost, `chance` ×
/// `bound_secs`/2 × `idle_cpus`, against that of keeping the team whole in
/// its share, `overhead` × `share_cpus` × `bound_secs`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CutCosts {
    /// The time the set of co-running apps has ahead, expected (the mean
    /// life of the run's earlier sets, or the set's age when longer).
    pub ahead_secs: f64,
    /// The chance that the cut's reason goes away within a region:
    /// L / (L + `ahead_secs`).
    pub chance: f64,
    /// CPUs the cut team would leave idle then.
    pub idle_cpus: u32,
    /// The cut's expected cost.
    pub cut_cpu_secs: f64,
    /// The fraction of its CPUs a team packed into its share loses, and
    /// where that comes from.
    pub overhead: f64,
    pub overhead_from: OverheadFrom,
    /// The CPUs of its share.
    pub share_cpus: u32,
    /// The cost of keeping it whole until its next region, the next chance
    /// to cut.
    pub keep_cpu_secs: f64,
}

/// Where a packed team's overhead comes from (`cores/reversible.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "from")]
pub enum OverheadFrom {
    /// The barrier model: a bulk-synchronous team runs at its slowest
    /// member's pace, one of ⌈n/c⌉ threads on the most crowded CPU, and
    /// loses libgomp's spin-then-sleep wait at each of `barriers_per_sec`
    /// barriers a second (None: no rate seen yet, the pace alone).
    Model { barriers_per_sec: Option<f64> },
}

/// Whether a DoP asked now reaches the app.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeverState {
    /// Not malleable in the workload.
    NotMalleable,
    /// Its runtime does not answer on the DoP channel.
    NoChannel,
    /// Too few regions ended to tell.
    Unknown,
    /// A new DoP takes effect at its next region, soon.
    Acts,
    /// Inside one region beyond its patience.
    Stuck,
}

/// Why an app is left to Linux.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "why")]
pub enum ToLinux {
    /// Nothing for the own arrangement to act on: one app, or threads that
    /// fit (`demand` threads on `cpus` CPUs).
    NothingToActOn { apps: u32, demand: u32, cpus: u32 },
    /// The trial runs (or settled on) Linux for this set: see the verdict.
    Trial,
    /// Shortest first arranges by nice values only.
    ShortestFirst,
}

/// A gang turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gang {
    pub foreground: bool,
    pub nice: i8,
    pub threads: u32,
    pub cpus: CpuSet,
    pub demand: u32,
    pub on: u32,
    /// Voluntary switches per CPU-second, the most seen (where the policy
    /// reads them: `auto`, not `gang`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sleeps: Option<f64>,
}

/// Why not gang time sharing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "why")]
pub enum NoGang {
    /// Its DoP lever acts: it is shrunk instead.
    LeverActs,
    /// A team of `team` cannot run at once on `cpus` CPUs, or is one thread.
    Team { team: u32, cpus: u32 },
    /// It sleeps less often than a barrier team (per CPU-second).
    Sleeps { sleeps: f64, needed: f64 },
    /// Every app has a CPU of its own: partitions are faster.
    CpuOfItsOwn,
    /// Some co-runner cannot take part.
    CoRunner,
}

/// A memory policy and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "why")]
pub enum Memory {
    /// Its CPUs lie on one node: local.
    Local,
    /// Its partition spans `nodes` nodes and it is not classified yet.
    Unclassified { nodes: u32 },
    /// Spanning `nodes`, classified memory-intensive: interleaved.
    Interleave { nodes: u32, class: MemoryClass },
    /// Spanning `nodes`, classified CPU-intensive: as it is.
    AsIs { nodes: u32, class: MemoryClass },
}

/// Thread Tranquilizer's classification of an app (§3.1) and the signal it
/// came from (`tranquilizer/classify.rs`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryClass {
    /// Memory-intensive (true) or CPU-intensive.
    pub memory: bool,
    pub by: ClassBy,
}

/// What a classification was read from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "by")]
pub enum ClassBy {
    /// LLC misses per thousand instructions against Δ.
    LlcMisses { mpki: f64, delta: f64 },
    /// Without LLC counters: the resident set against the LLC, and the
    /// stored bandwidth per thread against the threshold.
    Substitutes {
        rss_bytes: u64,
        llc_bytes: u64,
        llc_measured: bool,
        stored_gbs: Option<f64>,
        stored_signal: Option<String>,
        threshold_gbs: f64,
    },
}

/// Scheduling settings and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "why")]
pub enum Sched {
    /// `art` without solo times: least attained service, `rank` by CPU
    /// seconds had.
    LeastAttained { rank: u32, cpu_secs: f64, nice: i8 },
    /// `art` with solo times: the app with the least time left runs at nice
    /// 0, the others at the lowest priority.
    ShortestLeft { first: bool, nice: i8 },
    /// `latency`: batch apps yield while a latency app runs.
    Latency { latency_running: bool, nice: i8 },
}

/// Tang et al.'s Algorithm 1 for one latency app.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TangChoice {
    /// The choice's label (share or spread at each level).
    pub choice: String,
    /// The line of Algorithm 1 that decided.
    pub line: u8,
    pub cpus: CpuSet,
}

/// NuPoCo: where the app's section stands and what it got.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Section {
    pub phase: SectionPhase,
    /// Cores it owns, and cores lent to its running team.
    pub cores: u32,
    pub lent: u32,
    /// Its memory request rate (per second) and how it was measured.
    pub mrr: Option<f64>,
    pub method: Option<String>,
}

/// A NuPoCo section's phase.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "phase")]
pub enum SectionPhase {
    /// Just started: one core until its first section is seen.
    Start,
    /// Its DoP cannot change (not malleable, or its lever does not act).
    Fixed,
    /// Measured in a profiling window (`step`).
    Profiling {
        step: String,
    },
    /// Waiting for a profiling window.
    Waiting,
    Serial,
    /// Sized by Algorithm 1.
    Sized,
}

/// `scalability`: the DoP the climb reached and the last rate it measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Climb {
    pub dop: u32,
    /// (DoP, progress per second) measured last.
    pub last: Option<(u32, f64)>,
    /// Cores its team keeps until it shrinks.
    pub keeps: u32,
}

/// A step of Thread Tranquilizer's pass for one app.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "step")]
pub enum TranquilizerStep {
    /// Pass `pass` begins: a baseline profile under `setting`.
    Profiling { pass: u32, setting: String },
    /// The baseline classified the app; it already has the target setting.
    Already { class: MemoryClass, setting: String },
    /// The baseline classified the app; `setting` is tried, judged by
    /// `judge`, against the baseline's mean and spread.
    Trying {
        class: MemoryClass,
        setting: String,
        judge: String,
        mean: f64,
        sd: f64,
    },
    /// Nothing can judge a trial: the class's fallback is taken.
    NoJudge {
        class: MemoryClass,
        fallback: String,
    },
    /// The trial's outcome: both mean and spread improved (keep) or not
    /// (back to `now`).
    Judged {
        memory: bool,
        judge: String,
        /// (mean, sd) after; None when unmeasured.
        after: Option<(f64, f64)>,
        tried: String,
        keep: bool,
        now: String,
    },
}

/// Where an AToM competition stands for one latency app.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Competition {
    pub phase: CompetitionPhase,
    /// The candidate in force: CPUs, or None for Linux placing every app.
    pub cpus: Option<CpuSet>,
    /// The signal judging it (None while it waits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<AtomSignal>,
}

/// Why an AToM competition (re)started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompetitionCause {
    /// The app started.
    Start,
    /// Its co-runners changed.
    Corunners,
    /// Its core budget changed.
    Budget,
    /// Its signal drifted from the winner's reference.
    Drift,
    /// It waited for an earlier latency app's competition.
    Earlier,
}

/// What an AToM competition judges a latency app by (`atom/signal.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "signal")]
pub enum AtomSignal {
    /// Its own metric, read live.
    Metric { higher: bool },
    /// OpenMP progress.
    Progress,
    /// Instructions retired.
    Instructions,
    /// CPU time.
    CpuTime,
}

/// An AToM phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "phase")]
pub enum CompetitionPhase {
    /// Waiting for earlier latency apps' competitions.
    Waiting,
    WarmUp,
    /// Learning slot `slot` of `of`, begun for `cause`.
    Learning {
        cause: CompetitionCause,
        slot: u32,
        of: u32,
    },
    /// Executing the winner `winner` of `of`, with its score.
    Executing {
        winner: u32,
        of: u32,
        score: f64,
    },
}

/// A trial's verdict on one set of co-running apps: the policy's own
/// arrangement against Linux (`crates/policy/src/trial.rs`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Whose trial: `auto`'s own, or the `+guard` layer's.
    pub judge: Judge,
    /// The running apps it is about, sorted.
    pub apps: Vec<AppId>,
    pub state: TrialState,
    /// What the pairs measured so far say; None before the first pair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<Estimate>,
    /// While the trial waits ([`TrialState::Waiting`]): why it does not pay
    /// yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<TrialCost>,
    /// Observation intervals in one round of the own arrangement: 1 for
    /// partitions, the apps' count under gang time sharing (the trial of
    /// one is not evidence on the other).
    #[serde(default = "one_round", skip_serializing_if = "is_one_round")]
    pub round: u32,
    /// ln(own / Linux) of the pair of windows this decision completed, if
    /// one did: what the store keeps of the trial (docs/knowledge.md,
    /// Trials of a set of programs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair: Option<f64>,
    /// What earlier trials of the same programs, stored, gave this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored: Option<StoredTrial>,
}

fn one_round() -> u32 {
    1
}

fn is_one_round(r: &u32) -> bool {
    *r == 1
}

/// The stored evidence a trial started from: the pairs that earlier trials
/// of the same set of programs measured, under the same own arrangement
/// (`coloc_model::knowledge::trials`, docs/knowledge.md).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredTrial {
    /// Stored pairs that joined the estimate.
    pub pairs: usize,
    /// The earlier trials they come from, and the newest pair's date
    /// (seconds since the Unix epoch).
    pub trials: u32,
    pub newest_unix: i64,
    /// The verdict the stored pairs reach on their own, with which the
    /// trial started settled; None when they reach none (it measures on,
    /// the stored pairs counting among its pairs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Arrangement>,
    /// The pairs measured since contradicted that verdict (the bound on
    /// the other side, as any settled verdict turns): the stored pairs were
    /// dropped from the estimate.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dropped: bool,
}

/// The cost of trying, against what a trial can win (`crates/policy/src/trial.rs`,
/// docs/policies/auto.md, "The cost of trying"): a set of co-running apps
/// is expected to last `life_secs` (the mean life of the run's earlier sets,
/// or its own age when longer), and a trial pays for itself only where that
/// is at least `needs_secs`: its least length (the fewest pairs of windows a
/// verdict takes) over twice `linux_chance`, the chance that Linux wins it
/// (Laplace's rule over the stored verdicts on the set's programs, else the
/// run's earlier verdicts).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrialCost {
    pub life_secs: f64,
    pub needs_secs: f64,
    pub linux_chance: f64,
}

/// Who runs a trial.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Judge {
    Auto,
    Guard,
}

/// Where a trial stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "measuring")]
pub enum TrialState {
    /// Nothing for the own arrangement to act on: left to Linux.
    NothingToActOn,
    /// Not tried (shortest first is an order, not a rate).
    NotTried,
    /// No verdict yet: measuring this arrangement.
    Open(Arrangement),
    /// Settled on the own arrangement, running it.
    OwnKept,
    /// Settled on Linux, running it.
    BackToLinux,
    /// Settled, re-checking the other arrangement for one window.
    Rechecking(Arrangement),
    /// Not started: the set is not expected to last long enough for a
    /// trial to pay for itself ([`TrialCost`]); the own arrangement runs
    /// meanwhile.
    Waiting,
}

/// One of the two arrangements a trial compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrangement {
    Own,
    Linux,
}

/// What a trial's pairs say: the geometric mean of own / Linux and the
/// one-sided 95% bounds around it (None over one pair: no spread yet).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub pairs: usize,
    pub ratio: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high: Option<f64>,
}

impl Verdict {
    /// Whether the trial settled on Linux (its own arrangement was not shown
    /// within the bound).
    pub fn settled_on_linux(&self) -> bool {
        matches!(
            self.state,
            TrialState::BackToLinux | TrialState::Rechecking(Arrangement::Own)
        )
    }
}

/// `Reason::from(x)` for each kind with a type of its own, so a policy says
/// `plan.because(Dop { … })`.
macro_rules! reason_from {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        $(impl From<$ty> for Reason {
            fn from(x: $ty) -> Self {
                Reason::$variant(x)
            }
        })*
    };
}

reason_from!(
    Admission(Admission),
    Partition(Partition),
    Dop(Dop),
    Lever(Lever),
    Linux(ToLinux),
    Gang(Gang),
    NoGang(NoGang),
    Memory(Memory),
    Sched(Sched),
    Tang(TangChoice),
    Section(Section),
    Climb(Climb),
    Tranquilizer(TranquilizerStep),
    Competition(Competition),
);

/// An `--objective` value that names no objective.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown objective `{0}` (expected one of: makespan, art, latency)")]
pub struct UnknownObjective(pub String);

impl std::str::FromStr for Objective {
    type Err = UnknownObjective;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Objective::ALL
            .into_iter()
            .find(|o| o.name() == s)
            .ok_or_else(|| UnknownObjective(s.to_string()))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn app(i: u32) -> AppId {
        AppId { app: i, rep: 0 }
    }

    /// A verdict on `apps` with an estimate of `ratio` ± 0.1 over two pairs
    /// (None: not measured), for the tests of the verdicts and their
    /// rendering.
    pub(crate) fn verdict(
        judge: Judge,
        apps: &[u32],
        state: TrialState,
        ratio: Option<f64>,
    ) -> Verdict {
        Verdict {
            judge,
            apps: apps.iter().map(|&i| app(i)).collect(),
            state,
            estimate: ratio.map(|ratio| Estimate {
                pairs: 2,
                ratio,
                low: Some(ratio - 0.1),
                high: Some(ratio + 0.1),
            }),
            cost: None,
            round: 1,
            pair: None,
            stored: None,
        }
    }

    /// Stored pairs that settled Linux (4 of an earlier trial), `dropped`
    /// or not.
    fn stored_linux(dropped: bool) -> StoredTrial {
        StoredTrial {
            pairs: 4,
            trials: 1,
            newest_unix: 1_800_000_000,
            verdict: Some(Arrangement::Linux),
            dropped,
        }
    }

    /// A `whole` reason written before reversible first weighed costs (its
    /// `limit_secs`, no `costs`) still reads and renders as it did; one with
    /// the two costs round-trips and says both.
    #[test]
    fn whole_reads_old_limits_and_says_both_costs() {
        let old = r#"{"kind":"whole","regions":"long","bound_secs":0.5,"limit_secs":0.4,"recorded":true}"#;
        let r: Reason = serde_json::from_str(old).unwrap();
        assert_eq!(
            r.to_string(),
            "DoP left whole: a region of up to 500 ms in an earlier run, beyond 400 ms"
        );
        let new = Reason::Whole(Reversibility::Long {
            bound_secs: 0.7,
            limit_secs: None,
            recorded: true,
            costs: Some(CutCosts {
                ahead_secs: 1.0,
                chance: 0.7 / 1.7,
                idle_cpus: 43,
                cut_cpu_secs: 4.43,
                overhead: 20.0 / 84.0,
                overhead_from: OverheadFrom::Model {
                    barriers_per_sec: None,
                },
                share_cpus: 21,
                keep_cpu_secs: 3.5,
            }),
        });
        let text = serde_json::to_string(&new).unwrap();
        assert!(!text.contains("limit_secs"), "{text}");
        assert_eq!(serde_json::from_str::<Reason>(&text).unwrap(), new);
        assert_eq!(
            new.to_string(),
            "DoP left whole: a region of up to 700 ms in an earlier run; a cut risks 4.43 CPU-s \
             (41% chance its reason goes within a region, 1.0 s ahead, 43 CPUs idle), keeping it \
             whole costs 3.50 CPU-s (24% of 21 CPUs, pace model)"
        );
    }

    /// Verdicts in words, as `coloc run` prints them.
    #[test]
    fn verdicts_render_their_numbers() {
        let cases = [
            (
                verdict(Judge::Auto, &[0, 1], TrialState::OwnKept, Some(1.4)),
                "[0.0 1.0] own vs Linux: 1.40 ± 0.10 over 2 pair(s), own kept",
            ),
            (
                verdict(Judge::Guard, &[0, 2], TrialState::BackToLinux, Some(0.9)),
                "guard: [0.0 2.0] own vs Linux: 0.90 ± 0.10 over 2 pair(s), back to Linux",
            ),
            (
                verdict(Judge::Auto, &[1], TrialState::NothingToActOn, None),
                "[1.0] nothing for its own arrangement to act on: left to Linux",
            ),
            (
                verdict(
                    Judge::Auto,
                    &[0, 1],
                    TrialState::Open(Arrangement::Linux),
                    None,
                ),
                "[0.0 1.0] own vs Linux: not measured yet, open: measuring Linux",
            ),
            (
                Verdict {
                    cost: Some(TrialCost {
                        life_secs: 1.2,
                        needs_secs: 1.6,
                        linux_chance: 0.5,
                    }),
                    ..verdict(Judge::Auto, &[0, 1], TrialState::Waiting, None)
                },
                "[0.0 1.0] not tried against Linux yet: expected to run together ~1.20 s, \
                 a trial pays after ~1.60 s (Linux won 50% of such trials, estimated); \
                 own arrangement meanwhile",
            ),
            (
                Verdict {
                    stored: Some(stored_linux(false)),
                    ..verdict(Judge::Auto, &[0, 1], TrialState::BackToLinux, Some(0.8))
                },
                "[0.0 1.0] own vs Linux: 0.80 ± 0.10 over 2 pair(s), back to Linux; started \
                 settled on Linux from 4 stored pair(s) of these programs (1 earlier \
                 trial(s), newest 2027-01-15T08:00:00Z)",
            ),
            (
                Verdict {
                    stored: Some(stored_linux(true)),
                    ..verdict(Judge::Auto, &[0, 1], TrialState::OwnKept, Some(1.3))
                },
                "[0.0 1.0] own vs Linux: 1.30 ± 0.10 over 2 pair(s), own kept; the stored \
                 verdict (Linux, from 4 stored pair(s) of these programs (1 earlier trial(s), \
                 newest 2027-01-15T08:00:00Z)) was dropped: the pairs measured since \
                 contradict it",
            ),
        ];
        for (v, want) in cases {
            assert_eq!(v.to_string(), want);
        }
    }

    /// Every objective parses by its name, and a bad one names itself.
    #[test]
    fn objectives_parse_by_name() {
        for o in Objective::ALL {
            assert_eq!(o.name().parse::<Objective>(), Ok(o));
        }
        let e = "fast".parse::<Objective>().unwrap_err();
        assert!(e.to_string().contains("`fast`"), "{e}");
    }
}
