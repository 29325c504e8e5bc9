//! Policies (DESIGN.md, The policies): each is a pure function of a [`View`] — plus
//! state it keeps itself — returning a [`Plan`]. No policy touches /proc, a clock or
//! a syscall, so the same code is unit-tested with tables, runs on Linux and runs in
//! the simulator.

use std::fmt;

use coloc_model::{Plan, View};

pub mod auto;
pub mod baseline;
pub mod bench;
pub mod invariants;
pub mod nupoco;
pub mod queueing;
pub mod resense;
pub mod scalability;

/// What a policy may know beyond the View: knowledge measured before the run (the
/// machine's calibration, apps' characterizations from the profile store). The CLI
/// fills it from the store; tests and the simulator fill it directly. Policies stay
/// pure: the context is plain data handed over at construction.
#[derive(Debug, Clone, Default)]
pub struct PolicyContext {
    /// Service rates of this machine's memory controllers and links (`coloc
    /// calibrate`, NuPoCo §4.3); policies check its fingerprint before use.
    pub calibration: Option<coloc_model::calibration::MemoryCalibration>,
    /// The apps' profiles measured on this platform (ReSense §2.2); `resense`
    /// matches them to apps by what they run, then by name.
    pub profiles: Vec<coloc_model::profile::AppProfile>,
    /// What `auto` optimizes (`--objective`).
    pub objective: auto::Objective,
}

/// A placement / parallelism / scheduling policy.
pub trait Policy: fmt::Debug + Send {
    /// The name users select it by (`--policy NAME`).
    fn name(&self) -> &'static str;

    /// Decides for every app in the view. Must return one [`coloc_model::AppPlan`]
    /// per app in `view.apps`.
    fn decide(&mut self, view: &View<'_>) -> Plan;
}

/// A policy users can select, with a one-line description for `--help`.
#[derive(Debug, Clone, Copy)]
pub struct PolicyInfo {
    pub name: &'static str,
    pub about: &'static str,
    make: fn(&PolicyContext) -> Box<dyn Policy>,
}

impl PolicyInfo {
    pub fn make(&self, ctx: &PolicyContext) -> Box<dyn Policy> {
        (self.make)(ctx)
    }
}

/// Every policy, in the order tables list them.
pub const POLICIES: &[PolicyInfo] = &[
    PolicyInfo {
        name: "auto",
        about: "the default: per app, NuPoCo-style DoP space sharing where the app's DoP lever acts and the machine is oversubscribed, else Linux alone; kept only where measured no slower than Linux; --objective makespan|art|latency adds nice values",
        make: |ctx| Box::new(auto::Auto::new(ctx.objective)),
    },
    PolicyInfo {
        name: "native",
        about: "change nothing: Linux places every thread (the baseline)",
        make: |_| Box::new(baseline::Native),
    },
    PolicyInfo {
        name: "batch",
        about: "one app at a time with all CPUs, the others queued (exclusive batch queue)",
        make: |_| Box::new(baseline::Batch),
    },
    PolicyInfo {
        name: "equal",
        about: "equal exclusive CPU partitions per running app, one CPU per thread (static CPU manager)",
        make: |_| Box::new(baseline::Equal),
    },
    PolicyInfo {
        name: "static",
        about: "the mapping given by each app's `cpus` in the workload file",
        make: |_| Box::new(baseline::Static),
    },
    PolicyInfo {
        name: "resense",
        about: "ReSense: per-thread mapping from each app's solo sensitivity scores (ReSensor, TACO 2013)",
        make: |ctx| Box::new(resense::ReSense::new(ctx.profiles.clone())),
    },
    PolicyInfo {
        name: "resense-positive",
        about: "ReSensor with every score fixed positive: every app shares (TACO 2013 Table VII ablation)",
        make: |_| Box::new(resense::ReSense::fixed_positive()),
    },
    PolicyInfo {
        name: "resense-negative",
        about: "ReSensor with every score fixed negative: every app spreads (TACO 2013 Table VII ablation)",
        make: |_| Box::new(resense::ReSense::fixed_negative()),
    },
    PolicyInfo {
        name: "nupoco",
        about: "NuPoCo: DoP per OpenMP section maximizing CPU + memory-controller utilization (queueing model), with core swaps",
        make: |ctx| Box::new(nupoco::Nupoco::from_context(ctx, nupoco::Variant::Full)),
    },
    PolicyInfo {
        name: "nupoco-greedy",
        about: "NuPoCo's DoP computation only: no core swaps, cores in topology order",
        make: |ctx| Box::new(nupoco::Nupoco::from_context(ctx, nupoco::Variant::Greedy)),
    },
    PolicyInfo {
        name: "scalability",
        about: "C3PO-style hill climbing: each OpenMP app's DoP follows its measured progress rate",
        make: |_| Box::new(scalability::Scalability::default()),
    },
];

/// The selectable policy names, comma-separated, for error messages.
pub fn policy_names() -> String {
    POLICIES
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A `--policy` value that names no policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown policy `{0}` (expected one of: {names})", names = policy_names())]
pub struct UnknownPolicy(pub String);

/// Looks a policy up by name, with an empty context (no calibration, no profiles).
pub fn by_name(name: &str) -> Result<Box<dyn Policy>, UnknownPolicy> {
    by_name_with(name, &PolicyContext::default())
}

/// Looks a policy up by name and builds it with what is known about the machine and
/// the apps.
pub fn by_name_with(name: &str, ctx: &PolicyContext) -> Result<Box<dyn Policy>, UnknownPolicy> {
    POLICIES
        .iter()
        .find(|p| p.name == name)
        .map(|p| p.make(ctx))
        .ok_or_else(|| UnknownPolicy(name.to_string()))
}
