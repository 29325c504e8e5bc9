//! Memory-intensive or CPU-intensive (Thread Tranquilizer §3, Figure 7's first
//! branch), and which signal judges the trial (docs/signals.md).
//!
//! Problem: the paper classifies by the mean LLC miss rate against a threshold
//! Δ and judges a memory trial by the miss rate, a CPU trial by the ICX rate.
//! Machines without hardware counters (VMs, containers) have no miss rate, and
//! some KVM guests report the host's whole L3 in sysfs (480 MiB on this
//! development VM, where a 192 MiB stream already runs at memory speed), so a
//! resident set compared with that says nothing.
//!
//! Approach: with counters, the paper's rule (mean misses per 1000
//! instructions above Δ). Without, documented substitutes; the app is
//! memory-intensive when either says so:
//! - its resident set is larger than the LLC capacity — the one `coloc
//!   calibrate` measured for one thread where it is stored, else what sysfs
//!   reports (all LLC instances): its data cannot stay in cache;
//! - the memory bandwidth per thread stored in its profile (Tang et al.'s
//!   characteristic; `coloc profile` measures it here by co-runs with the
//!   `stream` kernel) is above [`TranquilizerConfig::substitute_gbs`].
//!
//! Neither proves the contrary: a co-run shows no bandwidth taken where the
//! machine has bandwidth to spare, and an app can stream through a small
//! resident set. The shim's progress rate judges the memory trial; an app
//! without progress reports has nothing to judge interleaving by. The ICX
//! rate, read from every thread's `nonvoluntary_ctxt_switches`, is always
//! there. The note names every figure the class came from and where each
//! came from, so the trace says which signal was used.

use coloc_model::profile::SharingSignal;
use coloc_model::reason::{ClassBy, MemoryClass};
use coloc_model::MemPolicy;

use super::setting::Setting;
use super::window::{Profile, Rates, Signal};
use super::TranquilizerConfig;

/// Figure 7's two branches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Memory,
    Cpu,
}

impl Class {
    pub fn label(self) -> &'static str {
        match self {
            Class::Memory => "memory-intensive",
            Class::Cpu => "CPU-intensive",
        }
    }

    /// What the class tries: interleaved memory and the long fixed slice, or
    /// the short fixed slice alone (memory as it is).
    pub fn target(self, current: Setting, cfg: &TranquilizerConfig) -> Setting {
        match self {
            Class::Memory => Setting {
                memory: MemPolicy::Interleave,
                slice_us: Some(cfg.memory_slice_us),
            },
            Class::Cpu => Setting {
                memory: current.memory,
                slice_us: Some(cfg.cpu_slice_us),
            },
        }
    }

    /// Where a failed trial goes: local memory keeping the long slice, or
    /// back to what was in force before the trial.
    pub fn fallback(self, current: Setting, cfg: &TranquilizerConfig) -> Setting {
        match self {
            Class::Memory => Setting {
                memory: MemPolicy::Local,
                slice_us: Some(cfg.memory_slice_us),
            },
            Class::Cpu => current,
        }
    }
}

/// A baseline profile's verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct Classified {
    pub class: Class,
    /// The signal that judges the trial; None when the machine has none.
    pub judge: Option<Signal>,
    /// For the plan: the class and the signal it came from.
    pub why: MemoryClass,
}

impl Classified {
    /// Why there is no judge (only called when `judge` is None).
    pub fn no_judge_reason(&self) -> &'static str {
        "no LLC counters and no progress reports to judge interleaving by"
    }
}

/// What classification reads besides the samples, for machines without
/// counters.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Known {
    /// The LLC capacity resident sets are compared with, bytes.
    pub llc_bytes: u64,
    /// Whether `llc_bytes` was measured (`coloc calibrate`) rather than read
    /// from sysfs.
    pub llc_measured: bool,
    /// The app's memory bandwidth per thread stored in its profile, GB/s,
    /// and what it was measured with.
    pub stored_gbs: Option<(f64, SharingSignal)>,
}

/// Classifies an app from its baseline samples; `known` is read only without
/// counters.
pub fn classify(samples: &[Rates], known: &Known, cfg: &TranquilizerConfig) -> Classified {
    if let Some(p) = Profile::of(samples, Signal::LlcMisses) {
        let memory = p.mean > cfg.delta_mpki;
        let class = if memory { Class::Memory } else { Class::Cpu };
        return Classified {
            class,
            judge: Some(if memory {
                Signal::LlcMisses
            } else {
                Signal::Icx
            }),
            why: MemoryClass {
                memory,
                by: ClassBy::LlcMisses {
                    mpki: p.mean,
                    delta: cfg.delta_mpki,
                },
            },
        };
    }
    let rss = samples.iter().map(|r| r.rss_bytes).max().unwrap_or(0);
    let big = known.llc_bytes > 0 && rss > known.llc_bytes;
    let streams = known
        .stored_gbs
        .is_some_and(|(gbs, _)| gbs > cfg.substitute_gbs);
    let memory = big || streams;
    let class = if memory { Class::Memory } else { Class::Cpu };
    let judge = if !memory {
        Some(Signal::Icx)
    } else if Profile::of(samples, Signal::Progress).is_some() {
        Some(Signal::Progress)
    } else {
        None
    };
    Classified {
        class,
        judge,
        why: MemoryClass {
            memory,
            by: ClassBy::Substitutes {
                rss_bytes: rss,
                llc_bytes: known.llc_bytes,
                llc_measured: known.llc_measured,
                stored_gbs: known.stored_gbs.map(|(gbs, _)| gbs),
                stored_signal: known.stored_gbs.map(|(_, signal)| signal.to_string()),
                threshold_gbs: cfg.substitute_gbs,
            },
        },
    }
}
