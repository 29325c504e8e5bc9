//! ReSense (TACO 2013) §3.6 in the simulator: resense against the
//! experimentally determined optimal mapping, on static mixes of its PARSEC
//! programs — ten pairs on Yorkfield and Harpertown (2 and 4 threads each),
//! ten four-app mixes on the Xeon and the Opteron (8 and 6 threads each), all
//! apps starting together and running once (§3.1, §3.6).
//!
//! Per mix: native (the Linux balancer, over seeds, its mean), resense (pinned
//! by the profiles `characterize` measures on the platform, as `coloc
//! profile --sim` does; deterministic) and the oracle's best static
//! configuration for average response time and, separately, for throughput
//! (the paper's "minimum ART and maximum throughput among all possible
//! thread-to-core mapping configurations"). The oracle searches every sharing
//! configuration where the space holds at most `max_configs` of them,
//! otherwise a bounded sample, and the row says which. The paper's figure is
//! the mean over the mixes of resense's distance from the optimum, both
//! normalized to native's (Figures 10–11: ART 0.27%, 0.18%, 1.49%, 0.05%;
//! throughput 0.49%, 0.10%, 2.08%, 0.49%).

use coloc_model::Workload;
use coloc_policy::{by_name_with, PolicyContext};

use super::{run_instances, run_times, scaled_models, PaperError};
use crate::characterize::{characterize, CharacterizeOptions};
use crate::gen::{dynamic, static_mix, GenSpec, Size, RESENSE_PARSEC};
use crate::model::AppModel;
use crate::oracle::{self, Metric, OracleOptions, Scores};
use crate::platform::{platform, Platform};

/// One platform of §3.6.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Section36 {
    pub platform: &'static str,
    /// Apps per mix.
    pub apps: usize,
    /// Threads per app (§3.1).
    pub threads: u32,
    /// The paper's mean ART and throughput distance from the optimum, % of
    /// native's.
    pub paper_art_pct: f64,
    pub paper_tp_pct: f64,
}

/// §3.6's four platforms and figures.
pub const SECTION_3_6: [Section36; 4] = [
    Section36 {
        platform: "yorkfield",
        apps: 2,
        threads: 2,
        paper_art_pct: 0.27,
        paper_tp_pct: 0.49,
    },
    Section36 {
        platform: "harpertown",
        apps: 2,
        threads: 4,
        paper_art_pct: 0.18,
        paper_tp_pct: 0.10,
    },
    Section36 {
        platform: "xeon32",
        apps: 4,
        threads: 8,
        paper_art_pct: 1.49,
        paper_tp_pct: 2.08,
    },
    Section36 {
        platform: "opteron48",
        apps: 4,
        threads: 6,
        paper_art_pct: 0.05,
        paper_tp_pct: 0.49,
    },
];

/// The paper's bound on the distance, % ("within 1.5–2%": the largest of
/// its figures).
pub const PAPER_BOUND_PCT: f64 = 2.08;

/// The mixes of `s`: `n` static mixes of ReSense's twelve PARSEC programs,
/// seeds `1..=n` (`coloc gen --static N --apps K --threads T --pool
/// PARSEC-of-Table-IV --seed 1` writes the same files).
pub fn mixes(s: &Section36, n: u64) -> Result<Vec<Workload>, PaperError> {
    let pool: Vec<String> = RESENSE_PARSEC.iter().map(|m| m.to_string()).collect();
    (1..=n)
        .map(|seed| {
            static_mix(&pool, s.apps, s.threads, 1, seed)
                .map_err(|e| PaperError::Setup(e.to_string()))
        })
        .collect()
}

/// How to run one platform's comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// Seeds of native's runs (its mean is the reference).
    pub native_seeds: u64,
    /// The oracle's budget: exhaustive up to this many configurations.
    pub max_configs: usize,
    /// Every model's work times this (1: the library's).
    pub scale: f64,
    /// The oracle's worker threads.
    pub threads: usize,
}

/// One mix's outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct MixResult {
    /// The mix's models, in workload order.
    pub models: Vec<String>,
    /// Native's mean ART (s) and throughput (1/s) over its seeds.
    pub native: (f64, f64),
    pub resense: (f64, f64),
    /// The oracle's best ART and best throughput.
    pub optimal: (f64, f64),
    /// Whether the search was bounded (then `optimal` is a bound).
    pub bounded: bool,
    pub evaluated: usize,
    /// Sharing configurations in the space (None: too many to count).
    pub configurations: Option<f64>,
}

impl MixResult {
    /// resense's ART above the optimum, % of native's (negative: below a
    /// bounded search's best).
    pub fn art_gap_pct(&self) -> f64 {
        (self.resense.0 - self.optimal.0) / self.native.0 * 100.0
    }

    /// resense's throughput below the optimum, % of native's.
    pub fn tp_gap_pct(&self) -> f64 {
        (self.optimal.1 - self.resense.1) / self.native.1 * 100.0
    }
}

/// ART and throughput of one run's apps.
fn scores(exits: &[f64]) -> (f64, f64) {
    let s = Scores::new(exits.to_vec(), None);
    (s.art, s.throughput)
}

/// One mix on `p`.
pub fn compare_mix(p: &Platform, w: &Workload, opts: &Options) -> Result<MixResult, PaperError> {
    let models = scaled_models(w, opts.scale)?;
    let mut native = Vec::new();
    for seed in 1..=opts.native_seeds.max(1) {
        let mut pol = by_name_with("native", &PolicyContext::default())
            .map_err(|e| PaperError::Setup(e.to_string()))?;
        let t = run_times(p, &models, w, pol.as_mut(), seed)?;
        native.push(scores(&t.iter().map(|t| t.exit_s).collect::<Vec<_>>()));
    }
    let n = native.len() as f64;
    let native = (
        native.iter().map(|s| s.0).sum::<f64>() / n,
        native.iter().map(|s| s.1).sum::<f64>() / n,
    );
    let ctx = profiles(p, &models);
    let mut pol = by_name_with("resense", &ctx).map_err(|e| PaperError::Setup(e.to_string()))?;
    let t = run_times(p, &models, w, pol.as_mut(), 1)?;
    let resense = scores(&t.iter().map(|t| t.exit_s).collect::<Vec<_>>());
    let report = oracle::search(
        p,
        w,
        &OracleOptions {
            max_configs: opts.max_configs,
            threads: opts.threads.max(1),
            models: &models,
            ..OracleOptions::default()
        },
    )
    .map_err(|e| PaperError::Setup(e.to_string()))?;
    let best = |m: Metric| -> Result<f64, PaperError> {
        report
            .best_for(m)
            .map(|b| b.value)
            .ok_or_else(|| PaperError::Setup(format!("the oracle found no {}", m.name())))
    };
    Ok(MixResult {
        models: w.apps.iter().filter_map(|a| a.model.clone()).collect(),
        native,
        resense,
        optimal: (best(Metric::Art)?, best(Metric::Throughput)?),
        bounded: report.bounded,
        evaluated: report.evaluated,
        configurations: report.configurations,
    })
}

/// One platform's §3.6: its ten mixes (or `n`).
pub fn section_3_6(
    s: &Section36,
    n: u64,
    opts: &Options,
    progress: &dyn Fn(&str),
) -> Result<Vec<MixResult>, PaperError> {
    let p = platform(s.platform)
        .ok_or_else(|| PaperError::Setup(format!("no platform {}", s.platform)))?;
    mixes(s, n)?
        .iter()
        .map(|w| {
            progress(&format!("{}: {}", s.platform, w.name));
            compare_mix(&p, w, opts)
        })
        .collect()
}

/// One cell pair of Table VI: ReSense's mean improvement over native with
/// its confidence interval, x ± y (%), for ART and throughput.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TableVi {
    pub platform: &'static str,
    pub size: Size,
    pub threads: u32,
    pub paper_art: (f64, f64),
    pub paper_tp: (f64, f64),
}

const fn vi(
    platform: &'static str,
    size: Size,
    threads: u32,
    paper_art: (f64, f64),
    paper_tp: (f64, f64),
) -> TableVi {
    TableVi {
        platform,
        size,
        threads,
        paper_art,
        paper_tp,
    }
}

/// Table VI, every cell the paper filled (threads per app as in §3.1).
pub const TABLE_VI: [TableVi; 8] = [
    vi("yorkfield", Size::Small, 2, (2.25, 1.58), (2.70, 1.64)),
    vi("harpertown", Size::Small, 4, (3.73, 2.68), (3.27, 3.95)),
    vi("xeon32", Size::Small, 8, (14.15, 13.4), (4.89, 4.03)),
    vi("opteron48", Size::Small, 6, (7.45, 6.18), (11.70, 6.39)),
    vi("xeon32", Size::Medium, 8, (4.94, 4.18), (9.005, 9.74)),
    vi("opteron48", Size::Medium, 6, (11.70, 7.45), (16.17, 14.80)),
    vi("xeon32", Size::Large, 8, (3.67, 3.37), (4.95, 4.45)),
    vi("opteron48", Size::Large, 6, (17.60, 14.19), (10.58, 10.8)),
];

/// ReSense's metrics of one run (§3): each app's execution time is the mean
/// wall time of its instances; ART is their mean, throughput the sum of
/// their inverses.
fn dynamic_scores(instances: &[Vec<super::AppTime>]) -> (f64, f64) {
    let per_app: Vec<f64> = instances
        .iter()
        .map(|v| v.iter().map(|t| t.run_s).sum::<f64>() / v.len().max(1) as f64)
        .collect();
    (super::mean(&per_app), per_app.iter().map(|t| 1.0 / t).sum())
}

/// One dynamic workload's gains: (ART gain, throughput gain), fractions
/// (1 − resense's ART / native's; resense's throughput / native's − 1).
#[derive(Clone, Debug, PartialEq)]
pub struct DynamicResult {
    pub workload: String,
    pub native: (f64, f64),
    pub resense: (f64, f64),
}

impl DynamicResult {
    pub fn art_gain(&self) -> f64 {
        1.0 - self.resense.0 / self.native.0
    }

    pub fn tp_gain(&self) -> f64 {
        self.resense.1 / self.native.1 - 1.0
    }
}

/// One cell of Table VI: `workloads` dynamic workloads of the size (`coloc
/// gen --size SIZE --threads T --seed K`, K = 1..=workloads), native over
/// `opts.native_seeds` seeds against resense.
pub fn table_vi_cell(
    t: &TableVi,
    workloads: u64,
    opts: &Options,
    progress: &dyn Fn(&str),
) -> Result<Vec<DynamicResult>, PaperError> {
    let p = platform(t.platform)
        .ok_or_else(|| PaperError::Setup(format!("no platform {}", t.platform)))?;
    (1..=workloads)
        .map(|seed| {
            let w = dynamic(&GenSpec::resense(t.size, t.threads, seed), &p)
                .map_err(|e| PaperError::Setup(e.to_string()))?;
            progress(&format!(
                "{}: {} ({} apps)",
                t.platform,
                w.name,
                w.apps.len()
            ));
            let models = scaled_models(&w, opts.scale)?;
            let mut native = Vec::new();
            for s in 1..=opts.native_seeds.max(1) {
                let mut pol = by_name_with("native", &PolicyContext::default())
                    .map_err(|e| PaperError::Setup(e.to_string()))?;
                native.push(dynamic_scores(&run_instances(
                    &p,
                    &models,
                    &w,
                    pol.as_mut(),
                    s,
                )?));
            }
            let n = native.len() as f64;
            let native = (
                native.iter().map(|s| s.0).sum::<f64>() / n,
                native.iter().map(|s| s.1).sum::<f64>() / n,
            );
            let ctx = profiles(&p, &models);
            let mut pol =
                by_name_with("resense", &ctx).map_err(|e| PaperError::Setup(e.to_string()))?;
            let resense = dynamic_scores(&run_instances(&p, &models, &w, pol.as_mut(), 1)?);
            Ok(DynamicResult {
                workload: w.name.clone(),
                native,
                resense,
            })
        })
        .collect()
}

/// A context holding every model's profile on `p`, as `coloc profile --sim`
/// would store them.
fn profiles(p: &Platform, models: &[AppModel]) -> PolicyContext {
    PolicyContext {
        profiles: models
            .iter()
            .map(|m| characterize(p, m, CharacterizeOptions::default()))
            .collect(),
        ..PolicyContext::default()
    }
}
