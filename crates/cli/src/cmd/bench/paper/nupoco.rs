//! NuPoCo's evaluation (PACT 2018 §7) reproduced in the simulator: `coloc
//! bench paper nupoco` prints [`nupoco_table`] (docs/simulator.md, Reproducing
//! the papers).
//!
//! Problem: the simulator's policy comparisons mean something only as far as
//! they agree with the papers on the papers' own experiments, and a reader
//! must be able to see where they do not.
//!
//! Approach: the ten co-location scenarios of Table 2
//! (`examples/sim/nupoco-table2/`, compiled in) on the paper's two machines
//! (`nupoco-amd64`, `nupoco-intel72`, §7.1), under its six execution modes
//! (§7.3), each run as `coloc compare --sim` runs it; NTT against native and
//! the Hmean of speedups over solo runs (§7.4, Figures 11 and 12), with the
//! paper's figure beside ours wherever its text gives one. The per-scenario
//! bars of Figures 11 and 12 are not in the text, so those rows print the
//! paper's geometric means and extremes only.

use std::fmt::{self, Write as _};
use std::path::Path;

use anyhow::{Context, Result};
use coloc_harness::compare::Plan;
use coloc_harness::solo::Solo;
use coloc_manager::DEFAULT_EPOCH;
use coloc_model::metrics::{Comparison, PolicyStats, SoloTimes};
use coloc_model::workload::parse_workload;
use coloc_model::Workload;

use crate::cmd::compare::run_comparison;
use crate::host::stop_flag;
use crate::progress::Bars;
use crate::target::MachineArgs;

/// Table 2's scenarios, as example workloads.
pub const SCENARIOS: [(&str, &str); 10] = [
    (
        "s01-bt-ft",
        include_str!("../../../../../../examples/sim/nupoco-table2/s01-bt-ft.toml"),
    ),
    (
        "s02-bt-sp",
        include_str!("../../../../../../examples/sim/nupoco-table2/s02-bt-sp.toml"),
    ),
    (
        "s03-ft-sp",
        include_str!("../../../../../../examples/sim/nupoco-table2/s03-ft-sp.toml"),
    ),
    (
        "s04-bt-ft-sp",
        include_str!("../../../../../../examples/sim/nupoco-table2/s04-bt-ft-sp.toml"),
    ),
    (
        "s05-bt-ft-ep",
        include_str!("../../../../../../examples/sim/nupoco-table2/s05-bt-ft-ep.toml"),
    ),
    (
        "s06-bt-sp-ep",
        include_str!("../../../../../../examples/sim/nupoco-table2/s06-bt-sp-ep.toml"),
    ),
    (
        "s07-ft-sp-ep",
        include_str!("../../../../../../examples/sim/nupoco-table2/s07-ft-sp-ep.toml"),
    ),
    (
        "s08-bt-kmeans",
        include_str!("../../../../../../examples/sim/nupoco-table2/s08-bt-kmeans.toml"),
    ),
    (
        "s09-ft-kmeans",
        include_str!("../../../../../../examples/sim/nupoco-table2/s09-ft-kmeans.toml"),
    ),
    (
        "s10-sp-kmeans",
        include_str!("../../../../../../examples/sim/nupoco-table2/s10-sp-kmeans.toml"),
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
pub fn scenarios(only: &[String]) -> Result<Vec<Workload>> {
    SCENARIOS
        .iter()
        .filter(|(name, _)| only.is_empty() || only.iter().any(|o| name.contains(o.as_str())))
        .map(|(name, text)| {
            parse_workload(&format!("examples/sim/nupoco-table2/{name}.toml"), text)
                .with_context(|| format!("the built-in scenario {name}"))
        })
        .collect()
}

/// Runs the scenarios on `paper.platform` under every mode, `repeat` seeds
/// each, with solo times of every model for Hmean speedup; traces under `out`.
pub fn nupoco_table(
    paper: PaperFigures,
    workloads: &[Workload],
    repeat: u32,
    out: &Path,
    progress: &dyn Fn(&str),
) -> Result<NupocoTable> {
    let target = MachineArgs {
        sim: Some(paper.platform.to_string()),
        seed: 1,
    }
    .target()?;
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
        stop: &stop_flag()?,
        watch: &Bars,
        learn: true,
    }
    .measure(&all, 1, &out.join("solo"))?;
    let policies: Vec<String> = MODES.iter().map(|m| m.to_string()).collect();
    let mut scenarios = Vec::new();
    for w in &workloads {
        progress(&format!("{}: {}", paper.platform, w.name));
        let comparison = run_comparison(
            &target,
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

/// Geometric mean of the positive values; None when there are none.
fn gmean(values: &[f64]) -> Option<f64> {
    let logs: Vec<f64> = values
        .iter()
        .filter(|v| **v > 0.0)
        .map(|v| v.ln())
        .collect();
    (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

impl NupocoTable {
    /// `figure` of `mode`'s statistics in every scenario (None where it has
    /// none).
    fn of(&self, mode: &str, figure: impl Fn(&PolicyStats) -> Option<f64>) -> Vec<Option<f64>> {
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
    fn ntt(&self, mode: &str) -> Vec<Option<f64>> {
        self.of(mode, |p| p.ntt)
    }

    /// Mean Hmean speedup of `mode` (over its seeds) in every scenario.
    fn hmean(&self, mode: &str) -> Vec<Option<f64>> {
        self.of(mode, |p| p.hmean_speedup.as_ref().map(|h| h.mean))
    }
}

fn cell(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.3}"))
}

impl fmt::Display for NupocoTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.paper;
        writeln!(
            f,
            "NuPoCo §7.4 on {} ({} seed(s) per mode): NTT = makespan / native's (Figure 11)",
            p.platform, self.repeat
        )?;
        let mut head = String::from("| scenario |");
        let mut rule = String::from("|---|");
        for m in MODES {
            let _ = write!(head, " {m} |");
            rule.push_str("---|");
        }
        writeln!(f, "{head} paper: nupoco |")?;
        writeln!(f, "{rule}---|")?;
        let ntt: Vec<Vec<Option<f64>>> = MODES.iter().map(|m| self.ntt(m)).collect();
        for (i, s) in self.scenarios.iter().enumerate() {
            let mut row = format!("| {} |", s.name);
            for col in &ntt {
                let _ = write!(row, " {} |", cell(col[i]));
            }
            let number: usize = s
                .name
                .strip_prefix("nupoco-s")
                .and_then(|r| r.get(..2))
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let paper = if number == p.best.0 {
                format!("{:.2} (its best)", p.best.1)
            } else {
                "-".into()
            };
            writeln!(f, "{row} {paper} |")?;
        }
        let mut row = String::from("| geometric mean |");
        for col in &ntt {
            let vals: Vec<f64> = col.iter().flatten().copied().collect();
            let _ = write!(row, " {} |", cell(gmean(&vals)));
        }
        writeln!(f, "{row} {:.2} |", p.ntt_gmean)?;
        writeln!(f)?;
        writeln!(
            f,
            "Hmean of speedups over solo runs (Figure 12), mean over seeds; paper: nupoco {:.1}% above native",
            p.hmean_gain * 100.0
        )?;
        writeln!(f, "{head} nupoco / native |")?;
        writeln!(f, "{rule}---|")?;
        let hm: Vec<Vec<Option<f64>>> = MODES.iter().map(|m| self.hmean(m)).collect();
        for (i, s) in self.scenarios.iter().enumerate() {
            let mut row = format!("| {} |", s.name);
            for col in &hm {
                let _ = write!(row, " {} |", cell(col[i]));
            }
            let gain = hm[5][i].zip(hm[0][i]).map(|(n, b)| n / b);
            writeln!(f, "{row} {} |", cell(gain))?;
        }
        let mut row = String::from("| geometric mean |");
        for col in &hm {
            let vals: Vec<f64> = col.iter().flatten().copied().collect();
            let _ = write!(row, " {} |", cell(gmean(&vals)));
        }
        let gains: Vec<f64> = hm[5]
            .iter()
            .zip(&hm[0])
            .filter_map(|(n, b)| n.zip(*b).map(|(n, b)| n / b))
            .collect();
        writeln!(
            f,
            "{row} {} (paper {:.3}) |",
            cell(gmean(&gains)),
            1.0 + p.hmean_gain
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_filter_picks_scenarios_by_name() {
        let picked = scenarios(&["s02".into(), "s10".into()]).unwrap();
        let names: Vec<&str> = picked.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["nupoco-s02-bt-sp", "nupoco-s10-sp-kmeans"]);
        assert!(scenarios(&["s99".into()]).unwrap().is_empty());
    }
}
