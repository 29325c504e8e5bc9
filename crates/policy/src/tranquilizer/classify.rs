//! Memory-intensive or CPU-intensive (Thread Tranquilizer §3, Figure 7's first
//! branch), and which signal judges the trial (docs/signals.md).
//!
//! Problem: the paper classifies by the mean LLC miss rate against a threshold
//! Δ and judges a memory trial by the miss rate, a CPU trial by the ICX rate.
//! Machines without hardware counters (VMs, containers) have no miss rate.
//!
//! Approach: with counters, the paper's rule (mean misses per 1000
//! instructions above Δ). Without, a documented substitute — the app's
//! resident set larger than the machine's last-level cache capacity (its data
//! cannot stay in cache, so it streams from memory) — and the shim's progress
//! rate judges the memory trial; an app without progress reports has nothing
//! to judge interleaving by, and the trace says so. The ICX rate, read from
//! every thread's `nonvoluntary_ctxt_switches`, is always there.

use coloc_model::topology::human_bytes;
use coloc_model::MemPolicy;

use super::pass::Setting;
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
    /// For the trace: the class and the signal it came from.
    pub why: String,
}

impl Classified {
    /// Why there is no judge (only called when `judge` is None).
    pub fn no_judge_reason(&self) -> &'static str {
        "no LLC counters and no progress reports to judge interleaving by"
    }
}

/// Classifies an app from its baseline samples. `llc_bytes` is the machine's
/// last-level cache capacity (all LLC instances), used only without counters.
pub fn classify(samples: &[Rates], llc_bytes: u64, cfg: &TranquilizerConfig) -> Classified {
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
            why: format!(
                "{} (LLC misses {:.2}/kinstr {} Δ {:.2})",
                class.label(),
                p.mean,
                if memory { ">" } else { "≤" },
                cfg.delta_mpki
            ),
        };
    }
    let rss = samples.iter().map(|r| r.rss_bytes).max().unwrap_or(0);
    let memory = llc_bytes > 0 && rss > llc_bytes;
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
        why: format!(
            "{} (no LLC counters: substitute resident set {} {} LLC {})",
            class.label(),
            human_bytes(rss),
            if memory { ">" } else { "≤" },
            human_bytes(llc_bytes)
        ),
    }
}
