//! `coloc bench paper tranquilizer`: Thread Tranquilizer's Tables I and V and
//! Figure 9 in the simulator (`coloc_sim::papers::tranquilizer`), beside the
//! paper's.

use std::fmt;

use anyhow::Result;
use coloc_sim::papers::tranquilizer::{
    cut, figure9_runs, mean_cv, table_v, Figure9, ProgramRow, PAPER_CV_CUT_MEAN,
    PAPER_SPEEDUP_MEAN, PLATFORM, TABLE_V,
};

use super::{pct, PaperArgs};

/// The paper's runs per configuration (§2.1.1).
const SEEDS: u64 = 10;

pub struct TranquilizerBench {
    pub seeds: u64,
    pub programs: Vec<ProgramRow>,
    pub figure9: Figure9,
}

pub fn run(args: &PaperArgs, progress: &dyn Fn(&str)) -> Result<TranquilizerBench> {
    let seeds = args.seeds.unwrap_or(SEEDS).max(2);
    let chosen: Vec<_> = TABLE_V
        .iter()
        .filter(|p| {
            args.programs.is_empty() || args.programs.iter().any(|n| p.model.contains(n.as_str()))
        })
        .copied()
        .collect();
    anyhow::ensure!(
        !chosen.is_empty(),
        "--programs {}: none of Table V's programs matches",
        args.programs.join(",")
    );
    let mut programs = Vec::new();
    for p in &chosen {
        progress(&format!("{} alone, {} threads", p.model, p.threads));
        programs.extend(table_v(std::slice::from_ref(p), seeds, args.scale)?);
    }
    progress("Figure 9");
    let figure9 = figure9_runs(seeds, args.scale)?;
    Ok(TranquilizerBench {
        seeds,
        programs,
        figure9,
    })
}

impl fmt::Display for TranquilizerBench {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "Thread Tranquilizer Tables I and V on {PLATFORM}: each program alone with its OPT threads, {} seeds per policy; CV = coefficient of variation of its execution time",
            self.seeds
        )?;
        writeln!(f, "| program | threads | type | paper: native CV | ours: native CV | paper: tranquilizer CV | ours: tranquilizer CV | paper: CV cut | ours: CV cut | paper: time change | ours: time change | ours: native mean s |")?;
        writeln!(f, "|---|---|---|---|---|---|---|---|---|---|---|---|")?;
        for r in &self.programs {
            let p = &r.program;
            writeln!(
                f,
                "| {} | {} | {} | {:.2}% | {:.2}% | {:.2}% | {:.2}% | {:.0}% | {:.0}% | {} | {} | {:.2} |",
                p.model,
                p.threads,
                if p.memory { "Mem" } else { "CPU" },
                p.default_cv() * 100.0,
                r.native.1 * 100.0,
                p.tranquilizer_cv() * 100.0,
                r.tranquilizer.1 * 100.0,
                cut(p.default_cv(), p.tranquilizer_cv()) * 100.0,
                r.cv_cut() * 100.0,
                pct(p.tranquilizer.0 / p.default.0 - 1.0),
                pct(r.time_change()),
                r.native.0
            )?;
        }
        let n = self.programs.len().max(1) as f64;
        let cv_cut = self.programs.iter().map(ProgramRow::cv_cut).sum::<f64>() / n;
        let change = self
            .programs
            .iter()
            .map(ProgramRow::time_change)
            .sum::<f64>()
            / n;
        let native_cv = self.programs.iter().map(|r| r.native.1).sum::<f64>() / n;
        let paper_cv = self
            .programs
            .iter()
            .map(|r| r.program.default_cv())
            .sum::<f64>()
            / n;
        writeln!(
            f,
            "mean native CV: ours {:.2}%, paper {:.2}% (these programs); mean CV cut: ours {:.0}%, paper {:.0}% (all 15 programs); mean time change: ours {}, paper {}",
            native_cv * 100.0,
            paper_cv * 100.0,
            cv_cut * 100.0,
            PAPER_CV_CUT_MEAN * 100.0,
            pct(change),
            pct(-PAPER_SPEEDUP_MEAN)
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "Thread Tranquilizer Figure 9 on {PLATFORM}: swim (48 threads), equake (12), facesim (17) and streamcluster (13) together, 90 threads on 24 cores, {} seeds per policy (paper: every program steadier and the total running time shorter under Random + FX)",
            self.seeds
        )?;
        writeln!(f, "| app | native CV | tranquilizer CV | CV cut | native mean s | tranquilizer mean s | time change |")?;
        writeln!(f, "|---|---|---|---|---|---|---|")?;
        let fig = &self.figure9;
        let mut changes = Vec::new();
        let rows = fig
            .native
            .by_app
            .iter()
            .map(|(app, v)| {
                (
                    app.as_str(),
                    v.as_slice(),
                    fig.tranquilizer.by_app[app].as_slice(),
                )
            })
            .chain(std::iter::once((
                "(makespan)",
                fig.native.makespan.as_slice(),
                fig.tranquilizer.makespan.as_slice(),
            )));
        for (app, native, tranq) in rows {
            let (nm, ncv) = mean_cv(native);
            let (tm, tcv) = mean_cv(tranq);
            if app != "(makespan)" {
                changes.push(tm / nm - 1.0);
            }
            writeln!(
                f,
                "| {app} | {:.2}% | {:.2}% | {:.0}% | {nm:.2} | {tm:.2} | {} |",
                ncv * 100.0,
                tcv * 100.0,
                cut(ncv, tcv) * 100.0,
                pct(tm / nm - 1.0)
            )?;
        }
        writeln!(
            f,
            "mean time change of the four under tranquilizer: {} (the target: no slower than native on average)",
            pct(coloc_sim::papers::mean(&changes))
        )
    }
}
