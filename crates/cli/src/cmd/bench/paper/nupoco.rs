//! NuPoCo's evaluation (PACT 2018 §7) reproduced in the simulator: `coloc
//! bench paper nupoco` prints the table of [`coloc_harness::nupoco_table`]
//! (docs/simulator.md, Reproducing the papers), which makes the runs.
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

use coloc_harness::nupoco_table::{NupocoTable, MODES};

/// A machine's table, rendered.
pub struct Table<'a>(pub &'a NupocoTable);

/// Geometric mean of the positive values; None when there are none.
fn gmean(values: &[f64]) -> Option<f64> {
    let logs: Vec<f64> = values
        .iter()
        .filter(|v| **v > 0.0)
        .map(|v| v.ln())
        .collect();
    (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

fn cell(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.3}"))
}

impl fmt::Display for Table<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.0;
        let p = &t.paper;
        writeln!(
            f,
            "NuPoCo §7.4 on {} ({} seed(s) per mode): NTT = makespan / native's (Figure 11)",
            p.platform, t.repeat
        )?;
        let mut head = String::from("| scenario |");
        let mut rule = String::from("|---|");
        for m in MODES {
            let _ = write!(head, " {m} |");
            rule.push_str("---|");
        }
        writeln!(f, "{head} paper: nupoco |")?;
        writeln!(f, "{rule}---|")?;
        let ntt: Vec<Vec<Option<f64>>> = MODES.iter().map(|m| t.ntt(m)).collect();
        for (i, s) in t.scenarios.iter().enumerate() {
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
        let hm: Vec<Vec<Option<f64>>> = MODES.iter().map(|m| t.hmean(m)).collect();
        for (i, s) in t.scenarios.iter().enumerate() {
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
