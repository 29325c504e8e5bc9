//! The policy registry: every policy users can select, with what it reads from
//! the [`PolicyContext`] (docs/architecture.md, Policies). It is the one place a
//! policy name becomes an object.

use crate::{
    atom, auto, baseline, nupoco, resense, scalability, tang, tranquilizer, Policy, PolicyContext,
};

/// What of the [`PolicyContext`] a policy's construction reads, so that the
/// CLI looks up (and warns about) only what the chosen policies need.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reads {
    /// [`PolicyContext::profiles`]: apps' stored characterizations.
    pub profiles: bool,
    /// Whether an app without a stored profile is worth a warning: the policy
    /// places it blindly (resense, tang, tranquilizer). `auto` uses profiles
    /// where stored and does without them elsewhere, as it does without solo
    /// times.
    pub warn_unprofiled: bool,
    /// [`PolicyContext::calibration`]: the machine's memory service rates.
    pub calibration: bool,
    /// [`PolicyContext::solo`]: the apps' stored solo times per thread count.
    pub solo: bool,
    /// [`PolicyContext::regions`]: how long the apps' regions lasted in
    /// earlier runs (every policy that sets a DoP).
    pub regions: bool,
}

impl Reads {
    pub const NOTHING: Reads = Reads {
        profiles: false,
        warn_unprofiled: false,
        calibration: false,
        solo: false,
        regions: false,
    };
    pub const PROFILES: Reads = Reads {
        profiles: true,
        warn_unprofiled: true,
        ..Reads::NOTHING
    };
    pub const CALIBRATION: Reads = Reads {
        calibration: true,
        ..Reads::NOTHING
    };
    pub const SOLO: Reads = Reads {
        solo: true,
        ..Reads::NOTHING
    };
    pub const REGIONS: Reads = Reads {
        regions: true,
        ..Reads::NOTHING
    };
    pub const CALIBRATION_REGIONS: Reads = Reads {
        calibration: true,
        regions: true,
        ..Reads::NOTHING
    };

    /// What either reads.
    pub fn union(self, other: Reads) -> Reads {
        Reads {
            profiles: self.profiles || other.profiles,
            warn_unprofiled: self.warn_unprofiled || other.warn_unprofiled,
            calibration: self.calibration || other.calibration,
            solo: self.solo || other.solo,
            regions: self.regions || other.regions,
        }
    }
}

/// A policy users can select: its name, a one-line description for `--help`,
/// what it reads, and how to build it. Adding a policy is one module and one
/// entry in [`POLICIES`]; the CLI, the simulator's benchmarks and the
/// conformance tests take every policy from here.
#[derive(Debug, Clone, Copy)]
pub struct PolicyInfo {
    pub name: &'static str,
    pub about: &'static str,
    /// The paper section it implements, or what it stands for (for `coloc
    /// policies` and the docs).
    pub source: &'static str,
    pub reads: Reads,
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
        about: "the default; combines equal's CPU partitions, NuPoCo's DoP, admission and Thread Tranquilizer's keep-or-revert: while apps' threads oversubscribe the CPUs, an exclusive CPU partition per app (sized by its threads; under makespan an arrival waits for one unless stored solo times say starting it now does not slow the mix, and waits beside the one app running when the rates the two ran at together in earlier runs, or else each one's rate beside other apps, say sharing ends later than one after the other) and NuPoCo-style DoP where the app's DoP lever acts, never above the team its stored solo times say is fastest; on machines with several LLCs or nodes, partitions placed by ReSense's stored scores (Tang's heuristic for latency apps) and interleaved memory for memory-intensive apps spanning nodes; teams that cannot shrink and sleep at barriers take turns at all CPUs instead (gang time sharing by nice values); kept only where measured no slower than Linux alone; --objective makespan|art|latency (art with stored solo times: shortest time left first by nice values)",
        source: "coloc's own: NuPoCo §5 space sharing and equal's partitions, placed by ReSense §2.3 and Tang et al. §5.1, memory by Thread Tranquilizer §3, kept or reverted by outcome against Linux as Thread Tranquilizer §3",
        reads: Reads {
            profiles: true,
            regions: true,
            ..Reads::SOLO
        },
        make: |ctx| {
            Box::new(
                auto::Auto::new(ctx.objective)
                    .with_solo(ctx.solo.clone())
                    .with_coruns(ctx.coruns.clone())
                    .with_regions(ctx.regions.clone())
                    .with_provenance(ctx.provenance.clone())
                    .with_trials(ctx.trials.clone())
                    .with_profiles(ctx.profiles.clone()),
            )
        },
    },
    PolicyInfo {
        name: "native",
        about: "change nothing: Linux places every thread (the baseline)",
        source: "Linux CFS/EEVDF and its load balancer, untouched",
        reads: Reads::NOTHING,
        make: |_| Box::new(baseline::Native),
    },
    PolicyInfo {
        name: "batch",
        about: "one app at a time with all CPUs, the others queued (exclusive batch queue)",
        source: "an exclusive batch queue (NuPoCo §7.3 baseline)",
        reads: Reads::NOTHING,
        make: |_| Box::new(baseline::Batch),
    },
    PolicyInfo {
        name: "equal",
        about: "equal exclusive CPU partitions per running app, one CPU per thread (static CPU manager)",
        source: "a static CPU manager's equal exclusive partitions (NuPoCo §7.3 baseline)",
        reads: Reads::NOTHING,
        make: |_| Box::new(baseline::Equal),
    },
    PolicyInfo {
        name: "static",
        about: "the mapping given by each app's `cpus` in the workload file",
        source: "the workload file's `cpus` per app",
        reads: Reads::NOTHING,
        make: |_| Box::new(baseline::Static),
    },
    PolicyInfo {
        name: "gang",
        about: "gang time sharing: while apps' threads oversubscribe the CPUs, each app in turn runs at nice 0 for an epoch and the others at nice 19, every app's threads spread over all CPUs (auto uses it only where apps outnumber the CPUs)",
        source: "coscheduling (Ousterhout, ICDCS 1982) by CFS weights instead of stopping processes; docs/policies/auto.md",
        reads: Reads::NOTHING,
        make: |_| Box::new(auto::gang::Gang::default()),
    },
    PolicyInfo {
        name: "resense",
        about: "ReSense: per-thread mapping from each app's solo sensitivity scores (ReSensor, TACO 2013)",
        source: "ReSense, TACO 2013: §2.2 scores, §2.3 ReSensor (Algorithm 1)",
        reads: Reads::PROFILES,
        make: |ctx| Box::new(resense::ReSense::new(ctx.profiles.clone())),
    },
    PolicyInfo {
        name: "resense-positive",
        about: "ReSensor with every score fixed positive: every app shares (TACO 2013 Table VII ablation)",
        source: "ReSense, TACO 2013: Table VII ablation",
        reads: Reads::NOTHING,
        make: |_| Box::new(resense::ReSense::fixed_positive()),
    },
    PolicyInfo {
        name: "resense-negative",
        about: "ReSensor with every score fixed negative: every app spreads (TACO 2013 Table VII ablation)",
        source: "ReSense, TACO 2013: Table VII ablation",
        reads: Reads::NOTHING,
        make: |_| Box::new(resense::ReSense::fixed_negative()),
    },
    PolicyInfo {
        name: "nupoco",
        about: "NuPoCo: DoP per OpenMP section maximizing CPU + memory-controller utilization (queueing model), with core swaps",
        source: "NuPoCo, PACT 2018: §4 model, Algorithms 1 and 2",
        reads: Reads::CALIBRATION_REGIONS,
        make: |ctx| Box::new(nupoco::Nupoco::from_context(ctx, nupoco::Variant::Full)),
    },
    PolicyInfo {
        name: "nupoco-greedy",
        about: "NuPoCo's DoP computation only: no core swaps, cores in topology order",
        source: "NuPoCo, PACT 2018: §7.3 Greedy baseline (Algorithm 1 only)",
        reads: Reads::CALIBRATION_REGIONS,
        make: |ctx| Box::new(nupoco::Nupoco::from_context(ctx, nupoco::Variant::Greedy)),
    },
    PolicyInfo {
        name: "scalability",
        about: "C3PO-style hill climbing: each OpenMP app's DoP follows its measured progress rate",
        source: "NuPoCo, PACT 2018: §7.3 Scalability baseline (C3PO hill climbing)",
        reads: Reads::REGIONS,
        make: |ctx| Box::new(scalability::Scalability::default().with_context(ctx)),
    },
    PolicyInfo {
        name: "tang",
        about: "Tang et al.'s heuristic: each latency-class app shares or spreads over LLCs and memory buses by its and its co-runners' sharing characteristics; batch apps get the other cores",
        source: "Tang et al., ISCA 2011: §5 characteristics, §5.1 Algorithm 1",
        reads: Reads::PROFILES,
        make: |ctx| Box::new(tang::Tang::new(ctx.profiles.clone())),
    },
    PolicyInfo {
        name: "atom",
        about: "AToM: the first latency-class app's sharing configurations (and Linux's placement) compete for equal slots judged by its own live metric; the winner runs until co-runners change or it drifts",
        source: "Tang et al., ISCA 2011: §5.2 AToM (competition heuristic)",
        reads: Reads::NOTHING,
        make: |_| Box::new(atom::Atom::default()),
    },
    PolicyInfo {
        name: "tranquilizer",
        about: "Thread Tranquilizer: per app, interleaved memory + 100 ms slice (memory-intensive) or a 20 ms slice (CPU-intensive), kept only if the miss or ICX rate's mean and spread fell; placement left to Linux or to BASE in BASE+tranquilizer",
        source: "Thread Tranquilizer, TACO 2012: §3, Figure 7",
        reads: Reads {
            calibration: true,
            ..Reads::PROFILES
        },
        make: |ctx| {
            Box::new(tranquilizer::Tranquilizer::new(
                tranquilizer::TranquilizerConfig::default(),
                ctx.profiles.clone(),
                ctx.calibration.as_ref().and_then(|c| c.llc_bytes),
            ))
        },
    },
];

/// What the named policies read together (both sides of a `BASE+LAYER`); names
/// not in the registry read nothing (the CLI's `oracle` is built elsewhere).
pub fn reads_of<S: AsRef<str>>(names: &[S]) -> Reads {
    names
        .iter()
        .flat_map(|n| n.as_ref().split('+'))
        .filter_map(|n| POLICIES.iter().find(|p| p.name == n))
        .fold(Reads::NOTHING, |acc, p| acc.union(p.reads))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every policy, what it reads, in the order tables list them. A new policy
    /// is added here and in [`POLICIES`], nowhere else.
    #[test]
    fn the_registry_lists_each_policy_and_what_it_reads() {
        let p = Reads::PROFILES;
        let n = Reads::NOTHING;
        let want: &[(&str, Reads)] = &[
            (
                "auto",
                Reads {
                    profiles: true,
                    regions: true,
                    ..Reads::SOLO
                },
            ),
            ("native", n),
            ("batch", n),
            ("equal", n),
            ("static", n),
            ("gang", n),
            ("resense", p),
            ("resense-positive", n),
            ("resense-negative", n),
            ("nupoco", Reads::CALIBRATION_REGIONS),
            ("nupoco-greedy", Reads::CALIBRATION_REGIONS),
            ("scalability", Reads::REGIONS),
            ("tang", p),
            ("atom", n),
            (
                "tranquilizer",
                Reads {
                    calibration: true,
                    ..Reads::PROFILES
                },
            ),
        ];
        let got: Vec<(&str, Reads)> = POLICIES.iter().map(|p| (p.name, p.reads)).collect();
        assert_eq!(got, want);
        for info in POLICIES {
            assert_eq!(info.make(&PolicyContext::default()).name(), info.name);
            assert!(
                !info.about.is_empty() && !info.source.is_empty(),
                "{}",
                info.name
            );
        }
    }

    #[test]
    fn reads_of_is_the_union() {
        let cases: [(&[&str], Reads); 6] = [
            (&["native", "equal"], Reads::NOTHING),
            (&["resense-positive"], Reads::NOTHING),
            (&["resense", "oracle"], Reads::PROFILES),
            (&["native", "nupoco-greedy"], Reads::CALIBRATION_REGIONS),
            (
                &["nupoco+tranquilizer"],
                Reads {
                    calibration: true,
                    regions: true,
                    ..Reads::PROFILES
                },
            ),
            (
                &["nupoco", "resense"],
                Reads {
                    calibration: true,
                    regions: true,
                    ..Reads::PROFILES
                },
            ),
        ];
        for (names, want) in cases {
            assert_eq!(reads_of(names), want, "{names:?}");
        }
    }

    #[test]
    fn an_unknown_name_lists_the_policies() {
        let e = by_name("nope").unwrap_err().to_string();
        assert!(e.contains("`nope`") && e.contains("nupoco-greedy"), "{e}");
    }
}
