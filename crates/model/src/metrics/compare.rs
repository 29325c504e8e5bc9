//! Repeated runs of several policies side by side (DESIGN.md: measured against the
//! plain Linux scheduler; ReSense §3.5 and NuPoCo §6 for the statistics).

use serde::Serialize;

use super::run::RunMetrics;
use super::table::{finish, fixed, interval, new_table, p_value};
use crate::stats::{welch_p_value, Summary};

/// One policy's repeated runs, summarised.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PolicyStats {
    pub policy: String,
    pub runs: usize,
    /// Failed instances over all runs.
    pub failed: usize,
    /// Makespan in seconds over the runs that have one.
    pub makespan: Option<Summary>,
    /// Average response time in seconds, one value per run.
    pub art: Option<Summary>,
    /// Throughput per second, one value per run.
    pub throughput: Option<Summary>,
    /// Hmean speedup; None unless every run has one.
    pub hmean_speedup: Option<Summary>,
    /// Normalized total turnaround time: mean makespan over the baseline's mean
    /// makespan (NuPoCo §6). 1 for the baseline; below 1 is better.
    pub ntt: Option<f64>,
    /// Two-sided Welch t-test p-values against the baseline's runs (ReSense §3.5);
    /// None for the baseline itself and when either side has fewer than two runs.
    pub p_makespan: Option<f64>,
    pub p_art: Option<f64>,
}

/// Several policies' runs of one workload, compared with a baseline policy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub baseline: String,
    /// In the order given.
    pub policies: Vec<PolicyStats>,
}

/// The per-run values a comparison is made of.
struct Samples {
    makespan: Vec<f64>,
    art: Vec<f64>,
    throughput: Vec<f64>,
}

impl Samples {
    fn of(runs: &[RunMetrics]) -> Samples {
        Samples {
            makespan: runs.iter().filter_map(RunMetrics::makespan_secs).collect(),
            art: runs.iter().filter_map(|r| r.figures.art_secs).collect(),
            throughput: runs.iter().filter_map(|r| r.figures.throughput).collect(),
        }
    }
}

impl Comparison {
    /// Summarises each policy's runs (policy name, its runs in order). If
    /// `baseline` is not among the policies, nothing can be normalised or tested
    /// against it: every NTT and p-value is None and [`Comparison::render`] says so.
    pub fn new(baseline: &str, runs: Vec<(String, Vec<RunMetrics>)>) -> Comparison {
        let base = runs
            .iter()
            .find(|(p, _)| p == baseline)
            .map(|(_, r)| Samples::of(r));
        let base_mean = base
            .as_ref()
            .and_then(|b| Summary::of(&b.makespan))
            .map(|s| s.mean)
            .filter(|m| *m > 0.0);
        let policies = runs
            .iter()
            .map(|(policy, runs)| {
                let mine = Samples::of(runs);
                let makespan = Summary::of(&mine.makespan);
                let vs_base = base.as_ref().filter(|_| policy != baseline);
                let hmeans: Option<Vec<f64>> =
                    runs.iter().map(|r| r.figures.hmean_speedup).collect();
                PolicyStats {
                    policy: policy.clone(),
                    runs: runs.len(),
                    failed: runs.iter().map(|r| r.figures.failed).sum(),
                    ntt: makespan.zip(base_mean).map(|(m, b)| m.mean / b),
                    makespan,
                    art: Summary::of(&mine.art),
                    throughput: Summary::of(&mine.throughput),
                    hmean_speedup: hmeans.and_then(|h| Summary::of(&h)),
                    p_makespan: vs_base.and_then(|b| welch_p_value(&mine.makespan, &b.makespan)),
                    p_art: vs_base.and_then(|b| welch_p_value(&mine.art, &b.art)),
                }
            })
            .collect();
        Comparison {
            baseline: baseline.to_string(),
            policies,
        }
    }

    /// Whether the baseline policy is among those compared.
    pub fn has_baseline(&self) -> bool {
        self.policies.iter().any(|p| p.policy == self.baseline)
    }

    /// One row per policy, then a one-line legend of the columns.
    pub fn render(&self) -> String {
        let mut table = new_table(&[
            "policy",
            "runs",
            "failed",
            "makespan s",
            "sd",
            "CV %",
            "makespan 95% CI",
            "p makespan",
            "ART s",
            "ART 95% CI",
            "p ART",
            "throughput /s",
            "NTT",
            "Hmean speedup",
        ]);
        for p in &self.policies {
            let base = p.policy == self.baseline;
            // The baseline is not tested against itself: blank, not "-".
            let p_cell = |v| if base { String::new() } else { p_value(v) };
            let mean = |s: Option<Summary>| s.map(|s| s.mean);
            table.add_row(vec![
                p.policy.clone(),
                p.runs.to_string(),
                p.failed.to_string(),
                fixed(mean(p.makespan), 3),
                fixed(p.makespan.and_then(|s| s.sd), 3),
                fixed(p.makespan.and_then(|s| s.cv).map(|c| c * 100.0), 1),
                interval(p.makespan.and_then(|s| s.ci95), 3),
                p_cell(p.p_makespan),
                fixed(mean(p.art), 3),
                interval(p.art.and_then(|s| s.ci95), 3),
                p_cell(p.p_art),
                fixed(mean(p.throughput), 4),
                fixed(p.ntt, 3),
                fixed(mean(p.hmean_speedup), 3),
            ]);
        }
        let mut out = finish(&table);
        out += &format!(
            "makespan: first arrival to last exit (mean, sd, CV = sd/mean, 95% t interval \
             over runs); ART: mean arrival-to-exit time; p: two-sided Welch t-test against \
             {b}; throughput: sum of 1/wall time; NTT: mean makespan / {b}'s; Hmean speedup: \
             harmonic mean of solo / co-located wall time; failed: failed instances over all \
             runs; -: not available (fewer than two runs, or no data)\n",
            b = self.baseline
        );
        if !self.has_baseline() {
            out += &format!(
                "baseline {} is not among the compared policies: no NTT or p-values\n",
                self.baseline
            );
        }
        out
    }
}
