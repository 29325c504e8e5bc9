//! `coloc bench paper tang`: Tang et al. Table 4 and Figures 23–24 in the
//! simulator (`coloc_sim::papers::tang`), beside the paper's.

use std::fmt::{self, Write as _};

use coloc_sim::papers::tang::{
    AtomLoad, CLOVERTOWN_MAPS, PAPER_ATOM_GAP_PCT, PAPER_ATOM_OVER_AVERAGE_PCT,
    PAPER_MISS_BOUND_PCT,
};

use coloc_harness::papers::{TangRuns, FIGURES_GINSTR, SLOT, TABLE4_GINSTR};

/// The results as the paper's tables, our figures beside the paper's.
pub struct Tang<'a>(pub &'a TangRuns);

impl fmt::Display for Tang<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.0;
        writeln!(
            f,
            "Tang et al. Table 4 on clovertown: Algorithm 1's mapping (`tang`) of the latency app's 4 threads against the best of three, the batch app on the other 4 CPUs ({:.0}·10^9 instructions of the latency app)",
            TABLE4_GINSTR * r.scale
        )?;
        let mut head = String::from("| latency app | co-runner | paper: optimal | paper: predicted | ours: best | ours: tang | tang's gap |");
        for (name, _) in CLOVERTOWN_MAPS {
            let _ = write!(head, " {name} s |");
        }
        writeln!(f, "{head}")?;
        writeln!(f, "|---|---|---|---|---|---|---|---|---|---|")?;
        let mut exact = 0;
        let mut worst: f64 = 0.0;
        let mut paper_exact = 0;
        for r in &r.table4 {
            let (best, _) = r.best();
            exact += usize::from(best == r.predicted);
            paper_exact += usize::from(r.paper.optimal == r.paper.predicted);
            worst = worst.max(r.gap_pct());
            let paper_pred = match r.paper.gap_pct {
                Some(g) => format!("{} ({g:.0}% worse)", r.paper.predicted),
                None => r.paper.predicted.to_string(),
            };
            let mut row = format!(
                "| {} | {} | {} | {paper_pred} | {best} | {} | {:+.2}% |",
                r.paper.latency,
                r.paper.batch,
                r.paper.optimal,
                r.predicted,
                r.gap_pct()
            );
            for t in r.times {
                let _ = write!(row, " {t:.3} |");
            }
            writeln!(f, "{row}")?;
        }
        writeln!(
            f,
            "exact: {exact} of {} (paper: {paper_exact} of 6); largest gap {worst:.2}% (paper: under {PAPER_MISS_BOUND_PCT:.0}%)",
            r.table4.len()
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "Tang et al. Figures 23–24: AToM ({} s slots, learning in the run) against every static mapping of the latency app's 4 threads, performance (1 / run time) as a fraction of the best static mapping's ({:.0}·10^9 instructions)",
            SLOT.as_secs(),
            FIGURES_GINSTR * r.scale
        )?;
        writeln!(
            f,
            "| platform | latency app | co-runner | atom | average | worst | atom over average |"
        )?;
        writeln!(f, "|---|---|---|---|---|---|---|")?;
        for l in &r.figures {
            writeln!(
                f,
                "| {} | {} | {} | {:.3} | {:.3} | {:.3} | {:+.1}% |",
                l.platform,
                l.load.0,
                l.load.1.unwrap_or("alone"),
                l.atom(),
                l.average(),
                l.worst(),
                (l.atom() / l.average() - 1.0) * 100.0
            )?;
        }
        let atoms: Vec<f64> = r.figures.iter().map(AtomLoad::atom).collect();
        let mean = coloc_sim::papers::mean(&atoms);
        let over = r
            .figures
            .iter()
            .map(|l| l.atom() / l.average() - 1.0)
            .fold(f64::NEG_INFINITY, f64::max);
        writeln!(
            f,
            "AToM's mean distance from the best static mapping: {:.1}% (paper: within {PAPER_ATOM_GAP_PCT:.0}% on average); largest gain over the average mapping: {:+.1}% (paper: up to {PAPER_ATOM_OVER_AVERAGE_PCT:.0}%)",
            (1.0 - mean) * 100.0,
            over * 100.0
        )
    }
}
