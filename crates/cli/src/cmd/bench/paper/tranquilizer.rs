//! `coloc bench paper tranquilizer`: Thread Tranquilizer's Tables I and V and
//! Figure 9 in the simulator (`coloc_sim::papers::tranquilizer`), beside the
//! paper's.

use std::fmt;

use coloc_sim::papers::tranquilizer::{
    cut, mean_cv, ProgramRow, PAPER_CV_CUT_MEAN, PAPER_SPEEDUP_MEAN, PLATFORM,
};

use coloc_harness::papers::TranquilizerRuns;

use super::pct;

/// The results as the paper's tables, our figures beside the paper's.
pub struct Tranquilizer<'a>(pub &'a TranquilizerRuns);

impl fmt::Display for Tranquilizer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.0;
        writeln!(
            f,
            "Thread Tranquilizer Tables I and V on {PLATFORM}: each program alone with its OPT threads, {} seeds per policy; CV = coefficient of variation of its execution time",
            r.seeds
        )?;
        writeln!(f, "| program | threads | type | paper: native CV | ours: native CV | paper: tranquilizer CV | ours: tranquilizer CV | paper: CV cut | ours: CV cut | paper: time change | ours: time change | ours: native mean s |")?;
        writeln!(f, "|---|---|---|---|---|---|---|---|---|---|---|---|")?;
        for r in &r.programs {
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
        let n = r.programs.len().max(1) as f64;
        let cv_cut = r.programs.iter().map(ProgramRow::cv_cut).sum::<f64>() / n;
        let change = r.programs.iter().map(ProgramRow::time_change).sum::<f64>() / n;
        let native_cv = r.programs.iter().map(|r| r.native.1).sum::<f64>() / n;
        let paper_cv = r
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
            r.seeds
        )?;
        writeln!(f, "| app | native CV | tranquilizer CV | CV cut | native mean s | tranquilizer mean s | time change |")?;
        writeln!(f, "|---|---|---|---|---|---|---|")?;
        let fig = &r.figure9;
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
