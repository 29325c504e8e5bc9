//! Thread Tranquilizer (TACO 2012) in the simulator: run-to-run variation of
//! the paper's programs alone on its machine (Table I, "Default" of Table V)
//! and under Thread Tranquilizer (Table V), and Figure 9's four programs
//! together — each over seeds, the seed being all that differs between two
//! runs (the balancer's choices and what follows from them,
//! docs/simulator.md, Run-to-run variation).
//!
//! The machine is `opteron-8431` (Table II); every program runs with its OPT
//! thread count (Table I) as its library model (`swim`, `equake`, … ;
//! TATP and SPECjbb2005 have none). Performance variation is the
//! coefficient of variation of a program's execution time over the seeds,
//! as Figure 8 plots it.

use std::collections::BTreeMap;

use coloc_model::stats::Summary;
use coloc_model::workload::parse_workload;
use coloc_model::Workload;
use coloc_policy::PolicyContext;

use super::{run_times, scaled_models, PaperError};
use crate::platform::platform;

/// The paper's machine.
pub const PLATFORM: &str = "opteron-8431";

/// One program of Tables I and V.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Program {
    /// The library model standing for it (named as the program).
    pub model: &'static str,
    /// OPT threads (Table I).
    pub threads: u32,
    /// Table I's type: memory-intensive (else CPU-intensive).
    pub memory: bool,
    /// Table V, Default: mean time (s) and standard deviation.
    pub default: (f64, f64),
    /// Table V, Thread Tranquilizer: mean time (s) and standard deviation.
    pub tranquilizer: (f64, f64),
}

impl Program {
    /// The paper's coefficient of variation under the default policies.
    pub fn default_cv(&self) -> f64 {
        self.default.1 / self.default.0
    }

    pub fn tranquilizer_cv(&self) -> f64 {
        self.tranquilizer.1 / self.tranquilizer.0
    }
}

const fn program(
    model: &'static str,
    threads: u32,
    memory: bool,
    default: (f64, f64),
    tranquilizer: (f64, f64),
) -> Program {
    Program {
        model,
        threads,
        memory,
        default,
        tranquilizer,
    }
}

/// Tables I and V, less TATP and SPECjbb2005 (no models), in the paper's
/// order.
pub const TABLE_V: [Program; 13] = [
    program("swim", 48, true, (296.6, 25.1), (294.6, 0.6)),
    program("wupwise", 72, true, (162.5, 17.4), (154.2, 6.5)),
    program("equake", 12, true, (195.7, 12.8), (112.3, 0.3)),
    program("gafort", 24, true, (238.9, 12.0), (230.5, 1.8)),
    program("streamcluster", 13, true, (214.8, 10.2), (127.9, 1.6)),
    program("facesim", 17, true, (186.3, 7.7), (121.7, 2.4)),
    program("mgrid", 24, false, (32.1, 3.4), (26.1, 0.6)),
    program("canneal", 43, true, (97.4, 3.0), (79.2, 0.1)),
    program("x264", 64, false, (56.2, 1.4), (53.5, 0.5)),
    program("fluidanimate", 21, true, (65.5, 1.4), (64.1, 0.4)),
    program("bodytrack", 26, false, (44.0, 0.7), (42.5, 0.2)),
    program("swaptions", 33, false, (21.7, 0.5), (21.2, 0.4)),
    program("ferret", 42, false, (42.3, 0.5), (41.8, 0.4)),
];

/// The paper's summary (abstract, §3.1): variation cut by up to 98% (68% on
/// average), performance up to 43% (15% on average) better.
pub const PAPER_CV_CUT_MEAN: f64 = 0.68;
pub const PAPER_SPEEDUP_MEAN: f64 = 0.15;

/// Figure 9's co-run: swim, equake, facesim and streamcluster started
/// together with their OPT threads, 90 threads on 24 cores.
pub const FIGURE9: &str = include_str!("../../../../examples/sim/tranquilizer-figure9.toml");

/// One program alone with its OPT threads.
pub fn alone(p: &Program) -> Result<Workload, PaperError> {
    let text = format!(
        "name = \"{m}-{t}\"\n[[app]]\nname = \"{m}\"\nmodel = \"{m}\"\nthreads = {t}\n",
        m = p.model,
        t = p.threads
    );
    parse_workload("tranquilizer.toml", &text).map_err(|e| PaperError::Setup(e.to_string()))
}

/// Figure 9's workload.
pub fn figure9() -> Result<Workload, PaperError> {
    parse_workload("examples/sim/tranquilizer-figure9.toml", FIGURE9)
        .map_err(|e| PaperError::Setup(e.to_string()))
}

/// The execution times of every app of `w` under `policy` over seeds
/// `1..=seeds`, by app name, and the makespan of each run.
#[derive(Clone, Debug, PartialEq)]
pub struct Runs {
    pub by_app: BTreeMap<String, Vec<f64>>,
    pub makespan: Vec<f64>,
}

/// Mean and coefficient of variation of `values`.
pub fn mean_cv(values: &[f64]) -> (f64, f64) {
    Summary::of(values).map_or((0.0, 0.0), |s| (s.mean, s.cv.unwrap_or(0.0)))
}

/// Runs `w` under `policy` on the paper's machine once per seed.
pub fn runs(w: &Workload, policy: &str, seeds: u64, scale: f64) -> Result<Runs, PaperError> {
    let p =
        platform(PLATFORM).ok_or_else(|| PaperError::Setup(format!("no platform {PLATFORM}")))?;
    let models = scaled_models(w, scale)?;
    let mut out = Runs {
        by_app: BTreeMap::new(),
        makespan: Vec::new(),
    };
    for seed in 1..=seeds {
        let mut pol = coloc_policy::build(policy, &PolicyContext::default())
            .map_err(|e| PaperError::Setup(e.to_string()))?;
        let times = run_times(&p, &models, w, pol.as_mut(), seed)?;
        out.makespan
            .push(times.iter().map(|t| t.exit_s).fold(0.0, f64::max));
        for (a, t) in w.apps.iter().zip(times) {
            out.by_app.entry(a.name.clone()).or_default().push(t.run_s);
        }
    }
    Ok(out)
}

/// One program's row: native's and tranquilizer's (mean, CV).
#[derive(Clone, Debug, PartialEq)]
pub struct ProgramRow {
    pub program: Program,
    pub native: (f64, f64),
    pub tranquilizer: (f64, f64),
}

impl ProgramRow {
    /// Relative cut of the CV (0.68 = 68% less variation).
    pub fn cv_cut(&self) -> f64 {
        cut(self.native.1, self.tranquilizer.1)
    }

    /// Relative change of the mean time (negative: faster).
    pub fn time_change(&self) -> f64 {
        self.tranquilizer.0 / self.native.0 - 1.0
    }
}

/// 1 − after / before, 0 when there was nothing to cut.
pub fn cut(before: f64, after: f64) -> f64 {
    if before > 0.0 {
        1.0 - after / before
    } else {
        0.0
    }
}

/// Table V: each of `programs` alone under native and tranquilizer, `seeds`
/// seeds each, models' work times `scale`.
pub fn table_v(
    programs: &[Program],
    seeds: u64,
    scale: f64,
) -> Result<Vec<ProgramRow>, PaperError> {
    programs
        .iter()
        .map(|p| {
            let w = alone(p)?;
            let of = |policy: &str| -> Result<(f64, f64), PaperError> {
                let r = runs(&w, policy, seeds, scale)?;
                Ok(mean_cv(&r.by_app[p.model]))
            };
            Ok(ProgramRow {
                program: *p,
                native: of("native")?,
                tranquilizer: of("tranquilizer")?,
            })
        })
        .collect()
}

/// Figure 9 under native and tranquilizer.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure9 {
    pub native: Runs,
    pub tranquilizer: Runs,
}

/// Figure 9's four programs, `seeds` runs under each policy.
pub fn figure9_runs(seeds: u64, scale: f64) -> Result<Figure9, PaperError> {
    let w = figure9()?;
    Ok(Figure9 {
        native: runs(&w, "native", seeds, scale)?,
        tranquilizer: runs(&w, "tranquilizer", seeds, scale)?,
    })
}
