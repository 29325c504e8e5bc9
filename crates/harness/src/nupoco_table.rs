//! NuPoCo's evaluation (PACT 2018 §7) reproduced in the simulator: the runs
//! behind `coloc bench paper nupoco` ([`nupoco_table`]; the CLI renders the
//! table, docs/simulator.md, Reproducing the papers).
//!
//! Problem: the simulator's policy comparisons mean something only as far as
//! they agree with the papers on the papers' own experiments, and a reader
//! must be able to see where they do not.
//!
//! Approach: the ten co-location scenarios of Table 2
//! (`examples/sim/nupoco-table2/`, compiled in) on the paper's two machines
//! (`nupoco-amd64`, `nupoco-intel72`, §7.1), under its six execution modes
//! (§7.3), each run as `coloc compare --sim` runs it ([`crate::compare`]);
//! NTT against native and the Hmean of speedups over solo runs (§7.4,
//! Figures 11 and 12), with the paper's figures beside ours wherever its text
//! gives one.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use coloc_manager::DEFAULT_EPOCH;
use coloc_model::metrics::{Comparison, PolicyStats, SoloTimes};
use coloc_model::workload::parse_workload;
use coloc_model::Workload;

use crate::compare::{Compare, Contender, Plan, Registry};
use crate::papers::pick;
use crate::solo::Solo;
use crate::watch::Watch;
use crate::{resolve_platform, HarnessError, Target};

/// Table 2's scenarios, as example workloads.
pub const SCENARIOS: [(&str, &str); 10] = [
    (
        "s01-bt-ft",
        include_str!("../../../examples/sim/nupoco-table2/s01-bt-ft.toml"),
    ),
    (
        "s02-bt-sp",
        include_str!("../../../examples/sim/nupoco-table2/s02-bt-sp.toml"),
    ),
    (
        "s03-ft-sp",
        include_str!("../../../examples/sim/nupoco-table2/s03-ft-sp.toml"),
    ),
    (
        "s04-bt-ft-sp",
        include_str!("../../../examples/sim/nupoco-table2/s04-bt-ft-sp.toml"),
    ),
    (
        "s05-bt-ft-ep",
        include_str!("../../../examples/sim/nupoco-table2/s05-bt-ft-ep.toml"),
    ),
    (
        "s06-bt-sp-ep",
        include_str!("../../../examples/sim/nupoco-table2/s06-bt-sp-ep.toml"),
    ),
    (
        "s07-ft-sp-ep",
        include_str!("../../../examples/sim/nupoco-table2/s07-ft-sp-ep.toml"),
    ),
    (
        "s08-bt-kmeans",
        include_str!("../../../examples/sim/nupoco-table2/s08-bt-kmeans.toml"),
    ),
    (
        "s09-ft-kmeans",
        include_str!("../../../examples/sim/nupoco-table2/s09-ft-kmeans.toml"),
    ),
    (
        "s10-sp-kmeans",
        include_str!("../../../examples/sim/nupoco-table2/s10-sp-kmeans.toml"),
    ),
];

/// The execution modes of §7.3, native (the baseline) first.
pub const MODES: [&str; 6] = [
    "native",
    "batch",
    "equal",
    "scalability",
    "nupoco-greedy",
    "nupoco",
];

/// What §7.4's text reports for NuPoCo on one machine.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PaperFigures {
    pub platform: &'static str,
    /// Geometric mean of NuPoCo's NTT over the ten scenarios.
    pub ntt_gmean: f64,
    /// NuPoCo's best scenario and its NTT ("up to 20%", "35%").
    pub best: (usize, f64),
    /// NuPoCo's Hmean speedup over native's (13.2%, 10.8% better).
    pub hmean_gain: f64,
}

/// §7.4: AMD NTT 0.91, best scenario 4 (20%), Hmean +13.2%; Intel NTT 0.81,
/// best scenario 10 (35%), Hmean +10.8%.
pub const PAPER: [PaperFigures; 2] = [
    PaperFigures {
        platform: "nupoco-amd64",
        ntt_gmean: 0.91,
        best: (4, 0.80),
        hmean_gain: 0.132,
    },
    PaperFigures {
        platform: "nupoco-intel72",
        ntt_gmean: 0.81,
        best: (10, 0.65),
        hmean_gain: 0.108,
    },
];

/// One scenario's comparison.
#[derive(Debug)]
pub struct ScenarioResult {
    pub name: String,
    pub comparison: Comparison,
}

/// One machine's table.
#[derive(Debug)]
pub struct NupocoTable {
    pub paper: PaperFigures,
    pub repeat: u32,
    pub scenarios: Vec<ScenarioResult>,
}

/// The workloads of `SCENARIOS` whose names contain one of `only` (all when
/// empty).
pub fn scenarios(only: &[String]) -> Result<Vec<Workload>, HarnessError> {
    let picked = SCENARIOS
        .iter()
        .filter(|(name, _)| only.is_empty() || only.iter().any(|o| name.contains(o.as_str())))
        .map(|(name, text)| {
            parse_workload(&format!("examples/sim/nupoco-table2/{name}.toml"), text)
                .map_err(HarnessError::from)
        })
        .collect::<Result<Vec<_>, _>>()?;
    if picked.is_empty() {
        return Err(HarnessError::NoScenario {
            only: only.join(","),
        });
    }
    Ok(picked)
}

/// How the table's runs go: the flag a signal sets to stop them, what
/// watches the comparisons' runs and what watches the solo runs, and
/// whether they read the knowledge store and add to it (as
/// [`Compare::learn`]).
#[derive(Clone, Copy, Debug)]
pub struct Watched<'a> {
    pub stop: &'a Arc<AtomicBool>,
    pub runs: &'a dyn Watch,
    pub solo: &'a dyn Watch,
    pub learn: bool,
}

/// The paper's figures of each platform named (both of the paper's
/// machines when none), every name checked before anything runs.
pub fn paper_platforms(names: &[String]) -> Result<Vec<PaperFigures>, HarnessError> {
    pick(
        &PAPER,
        names,
        |p| p.platform,
        "the paper's (nupoco-amd64, nupoco-intel72)",
    )
}

/// Runs the scenarios on `paper.platform` (seed 1) under every mode,
/// `repeat` seeds each, with solo times of every model for Hmean speedup
/// (stored as the models' solo runs with `on.learn`); traces under `out`; `progress` hears
/// of each step.
pub fn nupoco_table(
    paper: PaperFigures,
    workloads: &[Workload],
    repeat: u32,
    out: &Path,
    on: Watched<'_>,
    progress: &dyn Fn(&str),
) -> Result<NupocoTable, HarnessError> {
    let target = Target::Sim {
        platform: resolve_platform(paper.platform)?,
        seed: 1,
    };
    let workloads: Vec<Workload> = workloads
        .iter()
        .map(|w| target.resolve(w.clone()))
        .collect::<Result<_, _>>()?;
    // Every model alone once (apps are named after their model in every
    // scenario, so one set of solo times serves them all).
    let mut all = Workload {
        name: "nupoco-table2-solo".into(),
        epoch: workloads.first().and_then(|w| w.epoch),
        apps: Vec::new(),
    };
    for app in workloads.iter().flat_map(|w| &w.apps) {
        if !all.apps.iter().any(|a| a.name == app.name) {
            all.apps.push(app.clone());
        }
    }
    progress(&format!("{}: solo runs", paper.platform));
    let solo: SoloTimes = Solo {
        target: &target,
        stop: on.stop,
        watch: on.solo,
        learn: on.learn,
    }
    .measure(&all, 1, &out.join("solo"))?;
    let policies: Vec<String> = MODES.iter().map(|m| m.to_string()).collect();
    let modes: Vec<Registry> = policies.iter().map(|m| Registry(m.clone())).collect();
    let contenders: Vec<&dyn Contender> = modes.iter().map(|m| m as &dyn Contender).collect();
    let compare = Compare {
        target: &target,
        stop: on.stop,
        watch: on.runs,
        learn: on.learn,
    };
    let mut scenarios = Vec::new();
    for w in &workloads {
        progress(&format!("{}: {}", paper.platform, w.name));
        let comparison = compare.run(
            &Plan {
                workload: w,
                policies: &policies,
                baseline: MODES[0],
                repeat,
                out: &out.join(&w.name),
                epoch: w.epoch.unwrap_or(DEFAULT_EPOCH),
                solo: Some(&solo),
                objective: Default::default(),
                fresh: None,
            },
            &contenders,
        )?;
        scenarios.push(ScenarioResult {
            name: w.name.clone(),
            comparison,
        });
    }
    Ok(NupocoTable {
        paper,
        repeat,
        scenarios,
    })
}

impl NupocoTable {
    /// `figure` of `mode`'s statistics in every scenario (None where it has
    /// none).
    pub fn of(&self, mode: &str, figure: impl Fn(&PolicyStats) -> Option<f64>) -> Vec<Option<f64>> {
        self.scenarios
            .iter()
            .map(|s| {
                s.comparison
                    .policies
                    .iter()
                    .find(|p| p.policy == mode)
                    .and_then(&figure)
            })
            .collect()
    }

    /// NTT of `mode` in every scenario.
    pub fn ntt(&self, mode: &str) -> Vec<Option<f64>> {
        self.of(mode, |p| p.ntt)
    }

    /// Mean Hmean speedup of `mode` (over its seeds) in every scenario.
    pub fn hmean(&self, mode: &str) -> Vec<Option<f64>> {
        self.of(mode, |p| p.hmean_speedup.as_ref().map(|h| h.mean))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::seen::Seen;

    /// Table 2 of the paper, scenario by scenario.
    const TABLE2: [&[&str]; 10] = [
        &["bt", "ft"],
        &["bt", "sp"],
        &["ft", "sp"],
        &["bt", "ft", "sp"],
        &["bt", "ft", "ep"],
        &["bt", "sp", "ep"],
        &["ft", "sp", "ep"],
        &["bt", "kmeans"],
        &["ft", "kmeans"],
        &["sp", "kmeans"],
    ];

    /// The compiled-in scenarios are Table 2's, every app a malleable model
    /// with one thread per CPU, and every example file of the directory is
    /// one of them.
    #[test]
    fn the_scenarios_are_table_2() {
        let all = scenarios(&[]).unwrap();
        assert_eq!(all.len(), TABLE2.len());
        for (w, models) in all.iter().zip(TABLE2) {
            let got: Vec<&str> = w.apps.iter().filter_map(|a| a.model.as_deref()).collect();
            assert_eq!(got, models, "{}", w.name);
            assert!(
                w.apps.iter().all(|a| a.malleable && a.threads == 0),
                "{}",
                w.name
            );
        }
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/sim/nupoco-table2"
        );
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        let names: Vec<String> = SCENARIOS.iter().map(|(n, _)| format!("{n}.toml")).collect();
        assert_eq!(files, names);
    }

    /// One scenario through the library alone, on kvm-2cpu rather than the
    /// paper's 64 cores (a test of seconds): the models alone first, then
    /// the six modes in §7.3's order, each watched; every mode has an NTT
    /// against native (native's is 1) and, from the solo runs, an Hmean
    /// speedup.
    #[test]
    fn a_scenario_runs_under_every_mode_against_its_solo_runs() {
        let dir = tempfile::tempdir().unwrap();
        let (runs, solo) = (Seen::default(), Seen::default());
        let steps = std::sync::Mutex::new(Vec::new());
        let kvm = PaperFigures {
            platform: "kvm-2cpu",
            ..PAPER[0]
        };
        let table = nupoco_table(
            kvm,
            &scenarios(&["s02".into()]).unwrap(),
            1,
            dir.path(),
            Watched {
                stop: &Arc::new(AtomicBool::new(false)),
                runs: &runs,
                solo: &solo,
                learn: false,
            },
            &|s| steps.lock().unwrap().push(s.to_string()),
        )
        .unwrap();
        assert_eq!(
            steps.into_inner().unwrap(),
            ["kvm-2cpu: solo runs", "kvm-2cpu: nupoco-s02-bt-sp"]
        );
        let solo: Vec<String> = solo.runs().into_iter().map(|r| r.label).collect();
        assert_eq!(solo, ["solo bt", "solo sp"]);
        let labels: Vec<String> = runs.runs().into_iter().map(|r| r.label).collect();
        let want: Vec<String> = MODES
            .iter()
            .enumerate()
            .map(|(i, m)| format!("{}/6 {m} #1", i + 1))
            .collect();
        assert_eq!(labels, want);
        assert_eq!(table.scenarios.len(), 1);
        let ntt = table.ntt("native");
        assert_eq!(ntt, [Some(1.0)]);
        for m in MODES {
            assert!(table.ntt(m)[0].is_some_and(|n| n > 0.0), "{m}");
            assert!(table.hmean(m)[0].is_some_and(|h| h > 0.0), "{m}");
        }
    }

    #[test]
    fn a_filter_picks_scenarios_by_name() {
        let picked = scenarios(&["s02".into(), "s10".into()]).unwrap();
        let names: Vec<&str> = picked.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["nupoco-s02-bt-sp", "nupoco-s10-sp-kmeans"]);
        let e = scenarios(&["s99".into()]).unwrap_err().to_string();
        assert_eq!(
            e,
            "--scenarios s99: no scenario of Table 2 matches (s01 … s10)"
        );
        let e = paper_platforms(&["nowhere".into()])
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--platforms: `nowhere` is not one of the paper's (nupoco-amd64, nupoco-intel72)"
        );
        let both: Vec<&str> = paper_platforms(&[])
            .unwrap()
            .iter()
            .map(|p| p.platform)
            .collect();
        assert_eq!(both, ["nupoco-amd64", "nupoco-intel72"]);
        let intel = paper_platforms(&["nupoco-intel72".into()]).unwrap();
        assert_eq!(intel[0].platform, "nupoco-intel72");
    }
}
