//! Figure 7's state machine, table-driven, with the arithmetic in comments;
//! then the policy over scripted observations and the combining rule.

use crate::note;
use coloc_model::reason::{ClassBy, Climb, PlanReason, Reason, TranquilizerStep};
use std::time::Duration;

use coloc_model::observation::{Counters, Signals};
use coloc_model::profile::SharingSignal;
use coloc_model::testutils::{fixture_topologies, pending_app, running_app};
use coloc_model::{
    AppPlan, AppSample, MemPolicy, Observation, OmpSample, Placement, Plan, SchedSettings,
    ThreadSample, Trigger, View,
};

use super::classify::{classify, Class, Known};
use super::pass::{improved, AppPass, Stage};
use super::setting::Setting;
use super::window::{Profile, Rates, Signal};
use super::*;
use crate::layer::combine;
use crate::{build, invariants, LayerError, Policy};
use coloc_model::profile;

const MIB: u64 = 1024 * 1024;

fn cfg() -> TranquilizerConfig {
    TranquilizerConfig::default()
}

/// A machine whose sysfs reports an LLC of `llc_bytes`; no stored bandwidth.
fn llc(llc_bytes: u64) -> Known {
    Known {
        llc_bytes,
        llc_measured: false,
        stored_gbs: None,
    }
}

/// A sample with counters.
fn hw(mpki: f64, icx: f64) -> Rates {
    Rates {
        icx_per_s: icx,
        mpki: Some(mpki),
        progress_per_s: None,
        rss_bytes: 0,
    }
}

/// A sample without counters.
fn soft(icx: f64, progress: Option<f64>, rss_bytes: u64) -> Rates {
    Rates {
        icx_per_s: icx,
        mpki: None,
        progress_per_s: progress,
        rss_bytes,
    }
}

/// Ten samples alternating a − d and a + d: mean a, sample sd
/// d·√(10/9) ≈ 1.054·d.
fn ten(a: f64, d: f64, f: impl Fn(f64) -> Rates) -> Vec<Rates> {
    (0..10)
        .map(|k| f(if k % 2 == 0 { a - d } else { a + d }))
        .collect()
}

#[test]
fn a_profile_is_the_mean_and_sample_sd() {
    // 9, 11, 9, 11, ... : mean 10, Σ(x − 10)² = 10 · 1 = 10, sd = √(10/9) = 1.0541.
    let p = Profile::of(&ten(10.0, 1.0, |m| hw(m, 0.0)), Signal::LlcMisses).unwrap();
    assert!((p.mean - 10.0).abs() < 1e-12);
    assert!((p.sd - (10.0f64 / 9.0).sqrt()).abs() < 1e-12);
    // A sample without the signal: no profile.
    let mut s = ten(10.0, 1.0, |m| hw(m, 0.0));
    s[3].mpki = None;
    assert_eq!(Profile::of(&s, Signal::LlcMisses), None);
}

/// (what, samples, known, class, judge, what the note says)
type ClassCase = (
    &'static str,
    Vec<Rates>,
    Known,
    Class,
    Option<Signal>,
    &'static str,
);

#[test]
fn classification_by_miss_rate_or_its_substitutes() {
    let small_llc = llc(32 * MIB);
    // This VM's sysfs: the host's whole L3.
    let host_llc = llc(480 * MIB);
    // This VM's LLC as `coloc calibrate` measured it for one thread.
    let measured = Known {
        llc_bytes: 96 * MIB,
        llc_measured: true,
        stored_gbs: None,
    };
    let stored = |known: Known, gbs| Known {
        stored_gbs: Some((gbs, SharingSignal::StreamCoRuns)),
        ..known
    };
    let stream = |rss| ten(100.0, 10.0, move |p| soft(1.0, Some(p), rss));
    let cases: Vec<ClassCase> = vec![
        // Mean 12 misses/kinstr > Δ 3: memory, judged by the miss rate; the
        // substitutes are not read when there are counters.
        (
            "stream-like",
            ten(12.0, 2.0, |m| hw(m, 5.0)),
            stored(host_llc, 0.1),
            Class::Memory,
            Some(Signal::LlcMisses),
            "memory-intensive (LLC misses 12.00/kinstr > Δ 3.00)",
        ),
        // Mean 3 = Δ is not above it: CPU, judged by ICX.
        (
            "at Δ",
            ten(3.0, 0.0, |m| hw(m, 5.0)),
            small_llc,
            Class::Cpu,
            Some(Signal::Icx),
            "LLC misses 3.00/kinstr ≤ Δ 3.00",
        ),
        // Mean 0.5: CPU.
        (
            "compute",
            ten(0.5, 0.1, |m| hw(m, 50.0)),
            small_llc,
            Class::Cpu,
            Some(Signal::Icx),
            "0.50/kinstr ≤ Δ",
        ),
        // No counters: 256 MiB resident > 32 MiB LLC, with progress reports.
        (
            "big, shim",
            stream(256 * MIB),
            small_llc,
            Class::Memory,
            Some(Signal::Progress),
            "substitutes resident set 256 MiB > LLC 32 MiB (as sysfs reports it), no stored \
             bandwidth",
        ),
        // No counters, no progress: memory-intensive but nothing judges.
        (
            "big, no shim",
            ten(1.0, 0.5, |i| soft(i, None, 256 * MIB)),
            small_llc,
            Class::Memory,
            None,
            "> LLC 32 MiB",
        ),
        // 8 MiB ≤ 32 MiB: CPU, judged by ICX (always read).
        (
            "small",
            ten(30.0, 5.0, |i| soft(i, None, 8 * MIB)),
            small_llc,
            Class::Cpu,
            Some(Signal::Icx),
            "resident set 8 MiB ≤ LLC 32 MiB",
        ),
        // The defect: 192 MiB of streamed arrays under the host's 480 MiB L3
        // count as CPU-intensive by sysfs's figure.
        (
            "192 MiB stream, sysfs",
            stream(192 * MIB),
            host_llc,
            Class::Cpu,
            Some(Signal::Icx),
            "resident set 192 MiB ≤ LLC 480 MiB (as sysfs reports it)",
        ),
        // Calibrated: one thread gets 96 MiB; 192 MiB > 96 MiB: memory.
        (
            "192 MiB stream, measured LLC",
            stream(192 * MIB),
            measured,
            Class::Memory,
            Some(Signal::Progress),
            "resident set 192 MiB > LLC 96 MiB (measured by coloc calibrate)",
        ),
        // Profiled where co-runs show it: one thread took 1.30 GB/s from the
        // stream probe > 1.00: memory, whatever sysfs says.
        (
            "192 MiB stream, stored bandwidth",
            stream(192 * MIB),
            stored(host_llc, 1.30),
            Class::Memory,
            Some(Signal::Progress),
            "≤ LLC 480 MiB (as sysfs reports it), stored memory bandwidth 1.30 GB/s per thread \
             > 1.00 [substitute: co-runs with the stream kernel]",
        ),
        // This VM: the co-runs saw nothing taken (0.00 ≤ 1.00: bandwidth to
        // spare), the measured LLC still says memory.
        (
            "192 MiB stream, both",
            stream(192 * MIB),
            stored(measured, 0.0),
            Class::Memory,
            Some(Signal::Progress),
            "> LLC 96 MiB (measured by coloc calibrate), stored memory bandwidth 0.00 GB/s per \
             thread ≤ 1.00",
        ),
        // A cache-resident kernel: 2 MiB ≤ 96 MiB and 0.53 ≤ 1.00: CPU.
        (
            "compute, both",
            ten(30.0, 5.0, |i| soft(i, None, 2 * MIB)),
            stored(measured, 0.53),
            Class::Cpu,
            Some(Signal::Icx),
            "CPU-intensive (no LLC counters: substitutes resident set 2 MiB ≤ LLC 96 MiB",
        ),
        // Exactly at the threshold is not above it.
        (
            "at the threshold",
            ten(30.0, 5.0, |i| soft(i, None, 8 * MIB)),
            stored(small_llc, 1.0),
            Class::Cpu,
            Some(Signal::Icx),
            "1.00 GB/s per thread ≤ 1.00",
        ),
        // Profiled memory-bound, no progress reports: nothing judges.
        (
            "stored bandwidth, no shim",
            ten(1.0, 0.5, |i| soft(i, None, 8 * MIB)),
            stored(small_llc, 2.0),
            Class::Memory,
            None,
            "2.00 GB/s per thread > 1.00",
        ),
    ];
    for (what, samples, known, class, judge, says) in cases {
        let c = classify(&samples, &known, &cfg());
        assert_eq!((c.class, c.judge), (class, judge), "{what}: {}", c.why);
        assert_eq!(c.why.memory, class == Class::Memory, "{what}");
        // The figures compared are the ones known, and the rendering says
        // them.
        match &c.why.by {
            ClassBy::LlcMisses { delta, .. } => assert_eq!(*delta, cfg().delta_mpki),
            ClassBy::Substitutes {
                llc_bytes,
                llc_measured,
                stored_gbs,
                ..
            } => assert_eq!(
                (*llc_bytes, *llc_measured, *stored_gbs),
                (
                    known.llc_bytes,
                    known.llc_measured,
                    known.stored_gbs.map(|(g, _)| g)
                ),
                "{what}"
            ),
        }
        assert!(c.why.to_string().contains(says), "{what}: {}", c.why);
    }
}

#[test]
fn keep_needs_both_mean_and_sd_to_improve() {
    let p = |mean, sd| Profile { mean, sd };
    // (signal, before, after, keep)
    let cases = [
        // Misses 12 ± 2 → 9 ± 1: both fell, keep.
        (Signal::LlcMisses, p(12.0, 2.0), p(9.0, 1.0), true),
        // 12 ± 2 → 9 ± 3: mean fell, sd rose: revert.
        (Signal::LlcMisses, p(12.0, 2.0), p(9.0, 3.0), false),
        // 12 ± 2 → 13 ± 1: sd fell, mean rose: revert.
        (Signal::LlcMisses, p(12.0, 2.0), p(13.0, 1.0), false),
        // Equal is not better: revert.
        (Signal::Icx, p(50.0, 5.0), p(50.0, 5.0), false),
        // ICX 50 ± 5 → 10 ± 1: keep.
        (Signal::Icx, p(50.0, 5.0), p(10.0, 1.0), true),
        // Progress is better higher: 100 ± 10 → 120 ± 4: keep.
        (Signal::Progress, p(100.0, 10.0), p(120.0, 4.0), true),
        // 100 ± 10 → 90 ± 4: slower: revert.
        (Signal::Progress, p(100.0, 10.0), p(90.0, 4.0), false),
    ];
    for (s, before, after, keep) in cases {
        assert_eq!(
            improved(s, &before, &after),
            keep,
            "{s:?} {before:?} → {after:?}"
        );
    }
}

const INTERLEAVE_100: Setting = Setting {
    memory: MemPolicy::Interleave,
    slice_us: Some(100_000),
};
const LOCAL_100: Setting = Setting {
    memory: MemPolicy::Local,
    slice_us: Some(100_000),
};
const SLICE_20: Setting = Setting {
    memory: MemPolicy::Default,
    slice_us: Some(20_000),
};
const DEFAULT: Setting = Setting {
    memory: MemPolicy::Default,
    slice_us: None,
};

/// Runs one pass from `start`: 10 baseline samples, then 10 trial samples,
/// classifying with a 32 MiB LLC. Returns the setting during the trial and
/// after the pass.
fn one_pass(p: &mut AppPass, baseline: &[Rates], trial: &[Rates]) -> (Setting, Setting) {
    let c = cfg();
    let start = p.pass_start.max(Duration::from_secs(1));
    assert!(p.tick(start, true).is_some() || matches!(p.stage, Stage::Baseline { .. }));
    for r in baseline {
        p.sample(*r, &c, |s| classify(s, &llc(32 * MIB), &c));
    }
    let during = p.setting;
    for r in trial {
        p.sample(*r, &c, |s| classify(s, &llc(32 * MIB), &c));
    }
    (during, p.setting)
}

/// (what, setting before, baseline, trial, setting tried, setting after)
type PassCase = (
    &'static str,
    Setting,
    Vec<Rates>,
    Vec<Rates>,
    Setting,
    Setting,
);

#[test]
fn figure_7_one_pass_per_branch() {
    let cases: Vec<PassCase> = vec![
        // Misses 12 ± 2.1 → 8 ± 1.05: memory-intensive, interleave kept.
        (
            "memory, better",
            DEFAULT,
            ten(12.0, 2.0, |m| hw(m, 5.0)),
            ten(8.0, 1.0, |m| hw(m, 5.0)),
            INTERLEAVE_100,
            INTERLEAVE_100,
        ),
        // 12 ± 2.1 → 8 ± 4.2: sd rose: local memory, keeping the 100 ms slice.
        (
            "memory, noisier",
            DEFAULT,
            ten(12.0, 2.0, |m| hw(m, 5.0)),
            ten(8.0, 4.0, |m| hw(m, 5.0)),
            INTERLEAVE_100,
            LOCAL_100,
        ),
        // Misses 0.5; ICX 50 ± 10.5 → 20 ± 2.1: CPU-intensive, 20 ms kept.
        (
            "cpu, better",
            DEFAULT,
            ten(50.0, 10.0, |i| hw(0.5, i)),
            ten(20.0, 2.0, |i| hw(0.5, i)),
            SLICE_20,
            SLICE_20,
        ),
        // ICX 50 ± 10.5 → 60 ± 2.1: mean rose: back to the default.
        (
            "cpu, worse",
            DEFAULT,
            ten(50.0, 10.0, |i| hw(0.5, i)),
            ten(60.0, 2.0, |i| hw(0.5, i)),
            SLICE_20,
            DEFAULT,
        ),
        // A CPU phase after interleave was kept: memory stays, slice tried;
        // failing goes back to interleave + 100 ms, not to the default.
        (
            "cpu after memory",
            INTERLEAVE_100,
            ten(50.0, 10.0, |i| hw(0.5, i)),
            ten(60.0, 2.0, |i| hw(0.5, i)),
            Setting {
                memory: MemPolicy::Interleave,
                slice_us: Some(20_000),
            },
            INTERLEAVE_100,
        ),
        // No counters, 256 MiB > 32 MiB, progress 100 ± 10.5 → 120 ± 2.1: keep.
        (
            "substitute, faster",
            DEFAULT,
            ten(100.0, 10.0, |p| soft(1.0, Some(p), 256 * MIB)),
            ten(120.0, 2.0, |p| soft(1.0, Some(p), 256 * MIB)),
            INTERLEAVE_100,
            INTERLEAVE_100,
        ),
        // No counters and no progress: nothing to judge by, so no trial:
        // Figure 7's fallback (local memory + 100 ms) at once.
        (
            "substitute, no judge",
            DEFAULT,
            ten(1.0, 0.5, |i| soft(i, None, 256 * MIB)),
            vec![],
            LOCAL_100,
            LOCAL_100,
        ),
        // Already in the target: nothing is tried.
        (
            "already there",
            SLICE_20,
            ten(50.0, 10.0, |i| hw(0.5, i)),
            vec![],
            SLICE_20,
            SLICE_20,
        ),
    ];
    for (what, before, baseline, trial, tried, after) in cases {
        let mut p = AppPass {
            setting: before,
            ..AppPass::default()
        };
        let (during, end) = one_pass(&mut p, &baseline, &trial);
        assert_eq!((during, end), (tried, after), "{what}");
        assert_eq!(
            p.stage,
            Stage::Hold {
                until: Duration::from_secs(6)
            },
            "{what}: holds until the pass (1 s + 5 s) ends"
        );
    }
}

#[test]
fn a_pass_waits_for_workers_and_repeats_every_5_s() {
    let c = cfg();
    let mut p = AppPass::default();
    // No workers yet: stays waiting, samples are ignored.
    assert_eq!(p.tick(Duration::from_millis(300), false), None);
    assert_eq!(
        p.sample(hw(12.0, 1.0), &c, |s| classify(s, &llc(0), &c)),
        None
    );
    assert_eq!(p.stage, Stage::Waiting);
    // Workers at 0.5 s: pass 1 begins.
    assert!(p.tick(Duration::from_millis(500), true).is_some());
    assert_eq!((p.passes, p.pass_start), (1, Duration::from_millis(500)));
    let all = [
        ten(12.0, 2.0, |m| hw(m, 5.0)),
        ten(8.0, 1.0, |m| hw(m, 5.0)),
    ]
    .concat();
    for r in all {
        p.sample(r, &c, |s| classify(s, &llc(0), &c));
    }
    assert_eq!(p.setting, INTERLEAVE_100);
    // Held until 0.5 + 5 = 5.5 s; at 5.4 s nothing begins.
    assert_eq!(p.tick(Duration::from_millis(5400), true), None);
    assert!(p.tick(Duration::from_millis(5500), true).is_some());
    assert_eq!(p.passes, 2);
    // Pass 2 (a phase change): the app is now CPU-intensive, ICX 50 → 20:
    // the 20 ms slice is tried on top of the interleaved memory and kept.
    let all = [
        ten(50.0, 10.0, |i| hw(0.5, i)),
        ten(20.0, 2.0, |i| hw(0.5, i)),
    ]
    .concat();
    for r in all {
        p.sample(r, &c, |s| classify(s, &llc(0), &c));
    }
    assert_eq!(
        p.setting,
        Setting {
            memory: MemPolicy::Interleave,
            slice_us: Some(20_000)
        }
    );
}

/// Observations of one app, 2 threads, with counters: each tick adds
/// `mpki` misses per 1000 of 10^8 instructions and `icx` switches per thread.
struct Script {
    policy: Tranquilizer,
    /// Whether the machine has hardware counters.
    hw: bool,
    now: Duration,
    misses: u64,
    icx: u64,
    prev: Option<Observation>,
    last: Option<Observation>,
}

impl Script {
    fn new() -> Self {
        Self::with(Tranquilizer::default(), true)
    }

    fn with(policy: Tranquilizer, hw: bool) -> Self {
        Self {
            policy,
            hw,
            now: Duration::ZERO,
            misses: 0,
            icx: 0,
            prev: None,
            last: None,
        }
    }

    /// One 100 ms epoch with the given per-tick misses and switches; returns the plan.
    fn tick(&mut self, mpki: u64, icx: u64) -> Plan {
        self.now += Duration::from_millis(100);
        self.misses += mpki * 100_000;
        self.icx += icx;
        let instructions = self.now.as_millis() as u64 * 1_000_000;
        let thread = |tid| ThreadSample {
            tid,
            pid: 100,
            involuntary_switches: self.icx,
            counters: self.hw.then_some(Counters {
                llc_misses: Some(self.misses),
                instructions: Some(instructions),
                ..Counters::default()
            }),
            ..ThreadSample::default()
        };
        let app = running_app(0, &[100, 101]);
        let obs = Observation {
            at: self.now,
            signals: Signals {
                hw_counters: self.hw,
                schedstat: true,
            },
            apps: vec![AppSample {
                app: app.id,
                pid: 100,
                threads: vec![thread(100), thread(101)],
                rss_bytes: 0,
                metric: None,
                omp: None::<OmpSample>,
                omp_steps: None,
            }],
        };
        self.prev = self.last.replace(obs);
        let topo = fixture_topologies().pop().unwrap();
        let apps = [app, pending_app(1, 2)];
        let view = View {
            now: self.now,
            trigger: Trigger::Epoch,
            topology: &topo,
            apps: &apps,
            last: self.last.as_ref(),
            prev: self.prev.as_ref(),
        };
        let plan = self.policy.decide(&view);
        invariants::check(&view, &plan).unwrap();
        plan
    }
}

#[test]
fn the_policy_samples_every_100_ms_and_applies_figure_7() {
    let mut s = Script::new();
    // Tick 1 starts the pass and is the first reading; ticks 2..=11 are the
    // ten baseline samples. Per tick: 10^8 instructions (1 ms = 10^6), misses
    // 15·10^5 → 15 misses/kinstr > Δ 3, ICX 2 threads × 4 / 0.1 s = 80/s.
    let mut plan = s.tick(15, 4);
    assert!(
        step(&plan, |t| matches!(
            t,
            TranquilizerStep::Profiling { pass: 1, .. }
        )),
        "{}",
        note(&plan)
    );
    for k in 0..10 {
        // Alternating 13 and 17 misses/kinstr: mean 15, sd 2.1.
        plan = s.tick(if k % 2 == 0 { 13 } else { 17 }, 4);
    }
    let app = plan.apps[0].clone();
    assert_eq!(app.memory, MemPolicy::Interleave, "{}", note(&plan));
    assert_eq!(
        app.sched,
        SchedSettings {
            nice: None,
            slice_us: Some(100_000)
        }
    );
    assert!(
        step(
            &plan,
            |t| matches!(t, TranquilizerStep::Trying { class, .. }
            if class.memory && matches!(class.by, ClassBy::LlcMisses { mpki, delta }
                if (mpki - 15.0).abs() < 1e-9 && delta == 3.0))
        ),
        "{}",
        note(&plan)
    );
    assert_eq!(app.placement, Placement::Unmanaged);
    // The pending app is admitted and untouched.
    assert_eq!(plan.apps[1], AppPlan::native(plan.apps[1].app));
    // Trial: misses 9 and 11 (mean 10, sd 1.05): both fell, keep.
    for k in 0..10 {
        plan = s.tick(if k % 2 == 0 { 9 } else { 11 }, 4);
    }
    assert!(
        step(&plan, |t| matches!(
            t,
            TranquilizerStep::Judged { keep: true, .. }
        )),
        "{}",
        note(&plan)
    );
    assert_eq!(plan.apps[0].memory, MemPolicy::Interleave);
}

/// Without counters the app's stored memory bandwidth (its profile found by
/// the app's name) or the LLC capacity the calibration measured classify it;
/// sysfs's LLC otherwise. No progress reports: a memory-intensive app cannot
/// be judged, so it gets local memory and the 100 ms slice at once.
#[test]
fn without_counters_stored_figures_classify_and_the_note_says_so() {
    let topo = fixture_topologies().pop().unwrap();
    let profile = |gbs| AppProfile {
        identity: profile::AppIdentity::program("app0", vec!["other".into()], "h"),
        platform: profile::PlatformFingerprint::of(&topo),
        levels: Vec::new(),
        sharing: Some(profile::SharingCharacteristics {
            bandwidth_gbs: Some(gbs),
            ..profile::SharingCharacteristics::not_measured("test".into())
        }),
    };
    // The script's app has 0 bytes resident; a measured LLC of 0 bytes is
    // not exceeded either, so only the bandwidth can make it memory.
    // (stored profile, measured LLC, memory, slice tried, the note says)
    let cases = [
        (
            Some(profile(1.3)),
            None,
            MemPolicy::Local,
            Some(100_000),
            "stored memory bandwidth 1.30 GB/s per thread > 1.00 [substitute: co-runs with \
             the stream kernel]); no LLC counters and no progress reports",
        ),
        (
            Some(profile(0.5)),
            Some(64 * MIB),
            MemPolicy::Default,
            Some(20_000),
            "resident set 0 B ≤ LLC 64 MiB (measured by coloc calibrate), stored memory \
             bandwidth 0.50 GB/s per thread ≤ 1.00",
        ),
        (
            None,
            None,
            MemPolicy::Default,
            Some(20_000),
            "(as sysfs reports it), no stored bandwidth",
        ),
    ];
    for (stored, measured, memory, slice_us, says) in cases {
        let policy = Tranquilizer::new(cfg(), stored.into_iter().collect(), measured);
        let mut s = Script::with(policy, false);
        let mut notes = String::new();
        let mut plan = s.tick(0, 4);
        for _ in 0..10 {
            plan = s.tick(0, 4);
            notes += &note(&plan);
        }
        assert_eq!(
            (plan.apps[0].memory, plan.apps[0].sched.slice_us),
            (memory, slice_us),
            "{notes}"
        );
        assert!(notes.contains(says), "{notes}");
    }
}

#[test]
fn combine_takes_placement_from_the_base_and_memory_sched_from_the_layer() {
    let topo = fixture_topologies().pop().unwrap();
    let app = running_app(0, &[100, 101]).id;
    let pinned = Placement::Shared(topo.cpus().clone());
    let base = Plan {
        apps: vec![AppPlan {
            placement: pinned.clone(),
            dop: Some(2),
            sched: SchedSettings {
                nice: Some(5),
                slice_us: None,
            },
            ..AppPlan::native(app)
        }
        .because(Climb {
            dop: 2,
            last: None,
            keeps: 0,
        })],
        reasons: vec![PlanReason::Unit {
            level: "core".into(),
        }],
        ..Plan::default()
    };
    // (layer's memory, layer's sched, memory, sched)
    let cases = [
        // The layer sets both: they win; the base's placement and DoP stay.
        (
            MemPolicy::Interleave,
            SchedSettings {
                nice: Some(0),
                slice_us: Some(100_000),
            },
            MemPolicy::Interleave,
            SchedSettings {
                nice: Some(0),
                slice_us: Some(100_000),
            },
        ),
        // The layer leaves everything default: the base's nice stays.
        (
            MemPolicy::Default,
            SchedSettings::default(),
            MemPolicy::Default,
            SchedSettings {
                nice: Some(5),
                slice_us: None,
            },
        ),
    ];
    for (lm, ls, m, sched) in cases {
        let layer = Plan {
            apps: vec![AppPlan {
                memory: lm,
                sched: ls,
                ..AppPlan::native(app)
            }
            .because(TranquilizerStep::Profiling {
                pass: 1,
                setting: "default".into(),
            })],
            reasons: vec![PlanReason::ThreadsFit],
            ..Plan::default()
        };
        let out = combine(base.clone(), &layer);
        let p = &out.apps[0];
        assert_eq!((&p.placement, p.dop, p.admit), (&pinned, Some(2), true));
        assert_eq!((p.memory, p.sched), (m, sched));
        // Reasons are the base's, then the layer's.
        assert!(matches!(
            &out.apps[0].reasons[..],
            [Reason::Climb(_), Reason::Tranquilizer(_)]
        ));
        assert_eq!(
            out.reasons,
            [
                PlanReason::Unit {
                    level: "core".into()
                },
                PlanReason::ThreadsFit
            ]
        );
    }
}

#[test]
fn base_plus_layer_names_build_and_bad_ones_are_refused() {
    let ctx = crate::PolicyContext::default();
    assert_eq!(
        build("equal+tranquilizer", &ctx).unwrap().name(),
        "equal+tranquilizer"
    );
    assert_eq!(build("tranquilizer", &ctx).unwrap().name(), "tranquilizer");
    let bad = [
        ("tranquilizer+equal", "is a layer"),
        ("equal+native", "cannot be a layer"),
        ("equal+", "one `+`"),
        ("a+b+tranquilizer", "one `+`"),
        ("nope+tranquilizer", "unknown policy `nope`"),
    ];
    for (name, says) in bad {
        let e: LayerError = build(name, &ctx).unwrap_err();
        assert!(e.to_string().contains(says), "{name}: {e}");
    }
}

/// Whether the plan's first app took a step of its pass as `f` says.
fn step(plan: &Plan, f: impl Fn(&TranquilizerStep) -> bool) -> bool {
    plan.apps[0].reasons.iter().any(|r| match r {
        Reason::Tranquilizer(t) => f(t),
        _ => false,
    })
}
