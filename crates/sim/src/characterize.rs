//! ReSense's characterization (§2.2) and Tang et al.'s characteristics (§5)
//! on a simulated platform straight on the engine, without the Manager: what
//! the simulator's own tests characterize their models with. `coloc profile
//! --sim PLATFORM` makes the same pinned runs as a measurement procedure
//! through the Manager (docs/trace-format.md, Measurement procedures), and
//! its integration test checks that the two agree.
//!
//! For every level of [`characterization_plan`], the model runs alone twice — its
//! threads pinned one per CPU of the baseline configuration, then of the contention
//! configuration — and Equation 1 compares the two runs' total cycles, the paper's
//! signal, which the simulator counts for every thread.
//!
//! Reading the cycles of a run that has ended: the engine forgets an app when it
//! exits, as a kernel forgets a task, so a run is made twice. The first pass finds
//! the exit time; the second, identical (a pinned run is a pure function of its
//! inputs), stops [`TAIL_NS`] before it, reads the counters and adds the tail at
//! the rate of the threads then running, one CPU each (as in every configuration
//! of the plan). Pinned runs do not depend on the
//! seed, so repetitions give identical scores (a spread of 0); they are still
//! honoured, with seeds `seed, seed + 1, …`, so that the profile says how many
//! runs it rests on.

use std::sync::Arc;

use coloc_model::profile::{
    characterization_plan, counter_run_cpus, AppIdentity, AppProfile, CounterTotals, LevelProfile,
    LevelResult, NotCharacterizable, PlatformFingerprint, Sensitivity, SharingCharacteristics,
    SharingError, SharingSignal, Signal,
};
use coloc_model::{AppId, Cpu, CpuSet, MemPolicy, Placement, SchedSettings, Tid};

use crate::engine::{AppLaunch, Engine, EngineEvent};
use crate::model::AppModel;
use crate::platform::{Platform, LINE_BYTES};

/// A finished solo run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SoloRun {
    /// From launch to exit, ns of simulated time.
    pub elapsed_ns: u64,
    /// Cycles of all its threads together.
    pub cycles: f64,
    /// LLC requests, misses and requests to data its threads share, all
    /// threads together, up to [`TAIL_NS`] before its exit (the tail is not
    /// extrapolated: these feed rates over the whole run).
    pub llc_refs: f64,
    pub llc_misses: f64,
    pub llc_shared_refs: f64,
}

/// Runs `model` alone on `platform` with thread i pinned to `cpus[i]` (threads
/// beyond the list wrap around) and returns its run time and total cycles.
/// `cpus` must not be empty; its length is the team size.
pub fn solo_run(platform: &Platform, model: &AppModel, cpus: &[Cpu], seed: u64) -> SoloRun {
    let model = Arc::new(model.clone());
    let (_, exit_ns) = pinned_run(platform, &model, cpus, seed, u64::MAX);
    let stop_ns = exit_ns.saturating_sub(TAIL_NS);
    let (engine, _) = pinned_run(platform, &model, cpus, seed, stop_ns);
    let total = |f: fn(&crate::engine::ThreadStats) -> f64| -> f64 {
        engine
            .apps()
            .iter()
            .flat_map(|a| &a.threads)
            .map(|t| f(&t.stats))
            .sum()
    };
    let counted = total(|s| s.cycles);
    let running = engine.apps().iter().map(|a| a.team).sum::<usize>();
    let tail = running as f64 * platform.params.freq_ghz * (exit_ns - stop_ns) as f64;
    SoloRun {
        elapsed_ns: exit_ns,
        cycles: counted + tail,
        llc_refs: total(|s| s.llc_refs),
        llc_misses: total(|s| s.llc_misses),
        llc_shared_refs: total(|s| s.llc_shared_refs),
    }
}

/// How long before its exit a run's counters are read: more than the engine's
/// one-nanosecond tolerance on phase ends (a run stopped closer to its end would
/// finish there), short enough that the threads running are those of the end.
pub const TAIL_NS: u64 = 1_000;

/// The pinned run up to `stop_ns` or the app's exit; returns the engine and the
/// exit time (`stop_ns` when it did not exit).
fn pinned_run(
    platform: &Platform,
    model: &Arc<AppModel>,
    cpus: &[Cpu],
    seed: u64,
    stop_ns: u64,
) -> (Engine, u64) {
    let id = AppId::default();
    let mut engine = Engine::new(platform.clone(), seed);
    // The main thread starts on the first CPU, so it touches its memory there in
    // both configurations; workers start there too and are pinned before they run.
    let first: CpuSet = cpus.iter().take(1).copied().collect();
    engine.launch(AppLaunch {
        id,
        model: model.clone(),
        threads: cpus.len() as u32,
        placement: Placement::PerThread {
            threads: Vec::new(),
            rest: first.clone(),
        },
        memory: MemPolicy::Default,
        sched: SchedSettings::default(),
        malleable: false,
    });
    let tids: Vec<Tid> = engine.apps()[0].threads.iter().map(|t| t.tid).collect();
    engine.set_placement(id, pin(&tids, cpus, &first));
    loop {
        for event in engine.advance_until(stop_ns) {
            match event {
                EngineEvent::ThreadsChanged { tids, .. } => {
                    engine.set_placement(id, pin(&tids, cpus, &first));
                }
                EngineEvent::Exited { at_ns, .. } => return (engine, at_ns),
            }
        }
        if engine.now_ns() >= stop_ns {
            return (engine, stop_ns);
        }
    }
}

fn pin(tids: &[Tid], cpus: &[Cpu], rest: &CpuSet) -> Placement {
    Placement::PerThread {
        threads: tids
            .iter()
            .zip(cpus.iter().cycle())
            .map(|(t, c)| (*t, CpuSet::single(*c)))
            .collect(),
        rest: rest.clone(),
    }
}

/// How to characterize.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CharacterizeOptions {
    /// Runs of each configuration (at least one).
    pub repetitions: u32,
    pub seed: u64,
}

impl Default for CharacterizeOptions {
    fn default() -> Self {
        Self {
            repetitions: 1,
            seed: 1,
        }
    }
}

/// The profile of `model` on `platform`: one level per shared level of its
/// topology, scored from cycles, or the reason it could not be.
pub fn characterize(
    platform: &Platform,
    model: &AppModel,
    opts: CharacterizeOptions,
) -> AppProfile {
    let levels = characterization_plan(&platform.topology)
        .into_iter()
        .map(|plan| {
            let result = match plan.setup {
                Err(reason) => LevelResult::NotCharacterizable { reason },
                Ok(config) => {
                    let runs = |cpus: &[Cpu]| -> Vec<f64> {
                        (0..opts.repetitions.max(1))
                            .map(|rep| {
                                solo_run(platform, model, cpus, opts.seed + u64::from(rep)).cycles
                            })
                            .collect()
                    };
                    match Sensitivity::from_runs(
                        Signal::Cycles,
                        config.threads as u32,
                        runs(&config.baseline),
                        runs(&config.contention),
                    ) {
                        Ok(s) => LevelResult::Scored(s),
                        Err(e) => LevelResult::NotCharacterizable {
                            reason: NotCharacterizable::Failed {
                                reason: e.to_string(),
                            },
                        },
                    }
                }
            };
            LevelProfile {
                level: plan.level,
                result,
            }
        })
        .collect();
    AppProfile {
        identity: AppIdentity::model(&model.name, &model.name),
        platform: PlatformFingerprint::of(&platform.topology),
        sharing: characterize_sharing(platform, model, opts.seed).ok(),
        levels,
    }
}

/// Tang et al.'s characteristics (§5, Figures 21–22) of `model` on `platform`
/// from one solo run's simulated counters: as many threads as there are cores
/// under one instance of the outermost shared level (4 on Clovertown, 6 on
/// Westmere: the paper's per-socket runs), pinned in scatter order (one per
/// last-level cache before any shares one), so each figure is the app's own
/// demand rather than its contention with itself. Shared requests are the
/// requests to the model's shared working set while its team runs.
pub fn characterize_sharing(
    platform: &Platform,
    model: &AppModel,
    seed: u64,
) -> Result<SharingCharacteristics, SharingError> {
    let cpus = counter_run_cpus(&platform.topology);
    let run = solo_run(platform, model, &cpus, seed);
    SharingCharacteristics::from_counters(
        SharingSignal::SimCounters,
        CounterTotals {
            threads: cpus.len() as u32,
            elapsed_ms: run.elapsed_ns as f64 * 1e-6,
            llc_requests: run.llc_refs,
            llc_misses: run.llc_misses,
            shared_requests: run.llc_shared_refs,
            line_bytes: LINE_BYTES,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{model, Phase};
    use crate::platform::platform;

    /// A compute-only model (CPI 0.5, no cache or memory traffic) with 2 threads
    /// on kvm-2cpu at 2.45 GHz: 10e9 parallel instructions take
    /// 10e9 × 0.5 / (2 × 2.45e9) = 1.0204 s and 2 × 1.0204 × 2.45e9 = 5e9 cycles,
    /// wherever it runs.
    #[test]
    fn solo_run_counts_cycles_to_the_end() {
        let m = AppModel {
            phases: vec![Phase::parallel(10.0)],
            cpi: 0.5,
            llc_apki: 0.0,
            barriers_per_ginstr: 0.0,
            lock_fraction: 0.0,
            lock_acquires_per_ginstr: 0.0,
            ..model("swaptions").unwrap()
        };
        let mut p = platform("kvm-2cpu").unwrap();
        p.params.freq_ghz = 2.45;
        for cpus in [[0, 1], [1, 0]] {
            let r = solo_run(&p, &m, &cpus, 1);
            assert!(
                (r.elapsed_ns as f64 * 1e-9 - 10.0 * 0.5 / 4.9).abs() < 1e-6,
                "{r:?}"
            );
            assert!((r.cycles / 5e9 - 1.0).abs() < 1e-6, "{r:?}");
        }
    }

    /// A model whose serial phase comes first and whose team appears later: the
    /// main thread stays on the first CPU and workers are pinned as they appear,
    /// so the run is the same for any seed.
    #[test]
    fn pinned_runs_ignore_the_seed() {
        let m = model("streamcluster").unwrap();
        let p = platform("westmere").unwrap();
        let cpus = [0, 1, 2, 6, 7, 8];
        assert_eq!(solo_run(&p, &m, &cpus, 1), solo_run(&p, &m, &cpus, 99));
    }

    /// The characteristics order Tang et al.'s apps on Clovertown as Figures
    /// 21–22 do: bigtable shares the most data, contentAnalyzer the least;
    /// stitcher draws the most bandwidth, protobuf the least; contentAnalyzer's
    /// footprint exceeds webSearch's. Each run is 4 threads, one per L2.
    #[test]
    fn tang_characteristics_on_clovertown() {
        let p = platform("clovertown").unwrap();
        assert_eq!(counter_run_cpus(&p.topology).len(), 4);
        let c = |name: &str| {
            let m = model(name).unwrap().scaled(0.05);
            characterize_sharing(&p, &m, 1).unwrap()
        };
        let (bt, ca, ws, st, pb) = (
            c("bigtable"),
            c("content-analyzer"),
            c("websearch"),
            c("stitcher"),
            c("protobuf"),
        );
        let sharing = |x: &SharingCharacteristics| x.data_sharing.unwrap();
        let bw = |x: &SharingCharacteristics| x.bandwidth_gbs.unwrap();
        let fp = |x: &SharingCharacteristics| x.llc_footprint.unwrap();
        assert!(sharing(&bt) > sharing(&ws) && sharing(&ws) > sharing(&ca));
        for other in [&bt, &ca, &ws, &pb] {
            assert!(bw(&st) > bw(other));
        }
        for other in [&bt, &ca, &ws, &st] {
            assert!(bw(&pb) < bw(other));
        }
        assert!(fp(&ca) > fp(&ws), "{ca:?} {ws:?}");
        assert_eq!(bt.signal, SharingSignal::SimCounters);
    }
}
