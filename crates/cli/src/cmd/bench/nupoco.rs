//! `coloc bench nupoco`'s lines: the cost of NuPoCo's decisions at NuPoCo's
//! scale as [`coloc_harness::timing::nupoco`] measures it, beside what
//! NuPoCo §7.5 reports (1.8 ms per thread-count selection, 1.5 ms per
//! placement round).

use coloc_harness::timing::nupoco::{NupocoCost, Timing, APPS};
use coloc_model::explain;

/// A timed call's mean and fastest, in milliseconds.
fn timing(t: &Timing) -> String {
    format!(
        "mean {:.3} ms, fastest {:.3} ms",
        t.mean.as_secs_f64() * 1e3,
        t.fastest.as_secs_f64() * 1e3
    )
}

/// Every figure, and the steady plan the decision made.
pub fn render(cost: &NupocoCost) -> String {
    let mut out = format!(
        "NuPoCo decision cost on {} cores / {} nodes, {} calls each (NuPoCo §7.5: 1.8 ms per thread-count selection, 1.5 ms per placement round)\n",
        cost.cores, cost.nodes, cost.runs
    );
    for (apps, t) in &cost.algorithm1 {
        out += &format!("Algorithm 1 (compute_dop), {apps} apps: {}\n", timing(t));
    }
    out += &format!(
        "nupoco decide, {APPS} apps (steady: Algorithm 1 + an Algorithm 2 round): {}\n",
        timing(&cost.decide)
    );
    out += &format!(
        "steady plan: {}\n",
        explain::note("nupoco", &cost.steady_plan)
    );
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use coloc_model::Plan;

    use super::*;

    /// One line per app count, the steady decision's, and the plan's note.
    #[test]
    fn every_figure_is_a_line() {
        let ms = |m| Timing {
            mean: Duration::from_millis(m),
            fastest: Duration::from_millis(1),
        };
        let cost = NupocoCost {
            cores: 64,
            nodes: 8,
            runs: 2,
            algorithm1: vec![(2, ms(2)), (8, ms(3))],
            decide: ms(4),
            steady_plan: Plan::default(),
        };
        let text = render(&cost);
        assert!(text.contains("64 cores / 8 nodes, 2 calls each"), "{text}");
        assert!(
            text.contains("Algorithm 1 (compute_dop), 8 apps: mean 3.000 ms, fastest 1.000 ms\n"),
            "{text}"
        );
        assert!(text.contains("nupoco decide, 8 apps"), "{text}");
        assert!(text.contains("steady plan: "), "{text}");
    }
}
