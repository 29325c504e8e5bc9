//! `coloc bench paper resense`: ReSense §3.6 in the simulator
//! (`coloc_sim::papers::resense`), beside the paper's Figures 10–11.

use std::fmt;

use coloc_sim::papers::resense::{DynamicResult, MixResult, PAPER_BOUND_PCT};

use coloc_harness::papers::ResenseRuns;

/// The results as the paper's tables, our figures beside the paper's.
pub struct Resense<'a>(pub &'a ResenseRuns);

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = v.collect();
    coloc_sim::papers::mean(&v)
}

impl fmt::Display for Resense<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.0;
        writeln!(
            f,
            "ReSense §3.6: resense against the best static mapping the oracle finds (exhaustive up to {} sharing configurations, else a bounded search of that many), static mixes of its PARSEC programs; distances in % of native's figure (native: mean of {} seeds)",
            r.opts.max_configs, r.opts.native_seeds
        )?;
        writeln!(f, "| platform | mixes | apps x threads | search | ours: ART distance (mean, largest) | paper: ART | ours: throughput distance (mean, largest) | paper: throughput |")?;
        writeln!(f, "|---|---|---|---|---|---|---|---|")?;
        for (s, rs) in &r.platforms {
            let bounded = rs.iter().filter(|r| r.bounded).count();
            let search = if bounded == 0 {
                "exhaustive".to_string()
            } else {
                format!("bounded in {bounded} of {} (a bound)", rs.len())
            };
            let largest =
                |g: fn(&MixResult) -> f64| rs.iter().map(g).fold(f64::NEG_INFINITY, f64::max);
            writeln!(
                f,
                "| {} | {} | {} x {} | {search} | {:.2}%, {:.2}% | {:.2}% | {:.2}%, {:.2}% | {:.2}% |",
                s.platform,
                rs.len(),
                s.apps,
                s.threads,
                mean(rs.iter().map(MixResult::art_gap_pct)),
                largest(MixResult::art_gap_pct),
                s.paper_art_pct,
                mean(rs.iter().map(MixResult::tp_gap_pct)),
                largest(MixResult::tp_gap_pct),
                s.paper_tp_pct
            )?;
        }
        writeln!(
            f,
            "(paper: within {PAPER_BOUND_PCT:.2}% of the optimum on every platform; a negative distance is resense ahead of a bounded search's best)"
        )?;
        writeln!(f)?;
        writeln!(f, "Per mix: ART (s) and throughput (1/s) of native, resense and the oracle's best of each, normalized to native's as Figures 10–11 plot them")?;
        writeln!(f, "| platform | mix | configurations (evaluated) | native ART, TP | resense ART/native | optimal ART/native | resense TP/native | optimal TP/native |")?;
        writeln!(f, "|---|---|---|---|---|---|---|---|")?;
        for (s, rs) in &r.platforms {
            for r in rs {
                let space = r
                    .configurations
                    .map_or_else(|| "too many to count".into(), |c| format!("{c:.0}"));
                writeln!(
                    f,
                    "| {} | {} | {space} ({}{}) | {:.2}, {:.4} | {:.4} | {:.4} | {:.4} | {:.4} |",
                    s.platform,
                    r.models.join("+"),
                    r.evaluated,
                    if r.bounded { ", bound" } else { "" },
                    r.native.0,
                    r.native.1,
                    r.resense.0 / r.native.0,
                    r.optimal.0 / r.native.0,
                    r.resense.1 / r.native.1,
                    r.optimal.1 / r.native.1
                )?;
            }
        }
        if r.table_vi.is_empty() {
            return Ok(());
        }
        writeln!(f)?;
        writeln!(
            f,
            "ReSense Table VI: dynamic workloads (`coloc gen --size SIZE --threads T --seed 1..`), resense's improvement over native (native: mean of {} seeds), mean over the workloads [their range], the paper's mean ± its interval",
            r.opts.native_seeds
        )?;
        writeln!(f, "| size | platform | workloads | ours: ART | paper: ART | ours: throughput | paper: throughput |")?;
        writeln!(f, "|---|---|---|---|---|---|---|")?;
        for (cell, rs) in &r.table_vi {
            let cellf = |g: fn(&DynamicResult) -> f64, paper: (f64, f64)| {
                let v: Vec<f64> = rs.iter().map(g).collect();
                let m = coloc_sim::papers::mean(&v) * 100.0;
                let lo = v.iter().copied().fold(f64::INFINITY, f64::min) * 100.0;
                let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max) * 100.0;
                let inside = (m - paper.0).abs() <= paper.1;
                (
                    format!(
                        "{m:+.1}% [{lo:+.1}, {hi:+.1}]{}",
                        if inside { "" } else { " outside" }
                    ),
                    format!("{:.2} ± {:.2}%", paper.0, paper.1),
                )
            };
            let (art, part) = cellf(DynamicResult::art_gain, cell.paper_art);
            let (tp, ptp) = cellf(DynamicResult::tp_gain, cell.paper_tp);
            writeln!(
                f,
                "| {} | {} | {} | {art} | {part} | {tp} | {ptp} |",
                cell.size,
                cell.platform,
                rs.len()
            )?;
        }
        Ok(())
    }
}
