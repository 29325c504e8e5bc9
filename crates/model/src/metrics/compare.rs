//! Repeated runs of several policies side by side, measured against a baseline
//! (the plain Linux scheduler, usually). ReSense §3.5 and NuPoCo §7.3 for the
//! figures; the statistics (geometric means with log-scale intervals, rank
//! tests) and why they fit run times are in [`crate::stats`].

use serde::Serialize;
use statrs::statistics::{Data, OrderStatistics};

use super::run::RunMetrics;
use super::table::{finish, fixed, interval, new_table, p_value};
use crate::stats::{rank_p_value, ratio_ci95, Summary};

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
    /// Normalized total turnaround time (NuPoCo §7.3): geometric-mean makespan over
    /// the baseline's. 1 for the baseline; below 1 is better. Over repeated runs
    /// the geometric mean keeps one collapsed run from standing for all of them
    /// (with one run each it is the paper's ratio of makespans).
    pub ntt: Option<f64>,
    /// 95% interval of the NTT ([`ratio_ci95`]); None for the baseline and when
    /// either side has fewer than two runs.
    pub ntt_ci95: Option<(f64, f64)>,
    /// Two-sided Mann–Whitney U p-values against the baseline's runs
    /// ([`rank_p_value`]); None for the baseline itself and when either side has
    /// fewer than two runs.
    pub p_makespan: Option<f64>,
    pub p_art: Option<f64>,
    /// Per latency-class app with a metric, in workload order: the centre and
    /// tail of its live metric over every run.
    pub service: Vec<MetricTail>,
    /// Per workload app, in the order first seen: its wall time over the runs
    /// (Thread Tranquilizer §3 judges by each app's mean and CV).
    pub apps: Vec<AppStats>,
    /// The per-run values the figures above summarise (for plots).
    pub samples: Samples,
}

/// A latency-class app's metric read live (what a service prints as it runs,
/// e.g. requests per second each second), pooled over a policy's runs: the
/// service's typical and its worst-1% behaviour (Tang et al. §3.1 judge a
/// mapping by the app's own metric).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricTail {
    pub app: String,
    pub unit: Option<String>,
    /// Samples pooled.
    pub samples: usize,
    pub median: f64,
    /// The value 99% of the samples are no worse than: the 99th percentile
    /// when lower is better (a latency), the 1st when higher is better (a
    /// throughput).
    pub p99: f64,
}

impl MetricTail {
    /// One entry per latency app that reported its metric live in any run.
    fn of(runs: &[RunMetrics]) -> Vec<MetricTail> {
        let mut out: Vec<(MetricTail, Vec<f64>, bool)> = Vec::new();
        for app in runs.iter().flat_map(|r| &r.apps).filter(|a| a.latency) {
            let i = match out.iter().position(|(t, ..)| t.app == app.name) {
                Some(i) => i,
                None => {
                    let tail = MetricTail {
                        app: app.name.clone(),
                        unit: app.metric_unit.clone(),
                        samples: 0,
                        median: f64::NAN,
                        p99: f64::NAN,
                    };
                    out.push((tail, Vec::new(), app.higher_is_better));
                    out.len() - 1
                }
            };
            out[i].1.extend(app.metric_series.iter().copied());
        }
        out.into_iter()
            .filter(|(_, v, _)| !v.is_empty())
            .map(|(tail, v, higher)| {
                let n = v.len();
                let mut data = Data::new(v);
                MetricTail {
                    samples: n,
                    median: data.median(),
                    p99: data.quantile(if higher { 0.01 } else { 0.99 }),
                    ..tail
                }
            })
            .collect()
    }
}

/// One app's wall time over a policy's runs: in each run its mean over its
/// instances ([`super::AppMetrics::mean_wall_secs`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AppStats {
    pub app: String,
    pub wall: Option<Summary>,
    /// Two-sided Mann–Whitney U p-value against the baseline's runs of the
    /// same app; None for the baseline and with fewer than two runs a side.
    pub p_wall: Option<f64>,
}

/// Several policies' runs of one workload, compared with a baseline policy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub baseline: String,
    /// In the order given.
    pub policies: Vec<PolicyStats>,
}

/// The per-run values a comparison is made of, in run order (runs without a
/// value are left out).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Samples {
    pub makespan: Vec<f64>,
    pub art: Vec<f64>,
    pub throughput: Vec<f64>,
    /// Per workload app (name): its mean wall time in each run where it has one.
    pub app_wall: Vec<(String, Vec<f64>)>,
}

impl Samples {
    fn of(runs: &[RunMetrics]) -> Samples {
        let mut app_wall: Vec<(String, Vec<f64>)> = Vec::new();
        for run in runs {
            for app in &run.apps {
                let i = match app_wall.iter().position(|(n, _)| *n == app.name) {
                    Some(i) => i,
                    None => {
                        app_wall.push((app.name.clone(), Vec::new()));
                        app_wall.len() - 1
                    }
                };
                app_wall[i].1.extend(app.mean_wall_secs());
            }
        }
        Samples {
            makespan: runs.iter().filter_map(RunMetrics::makespan_secs).collect(),
            art: runs.iter().filter_map(|r| r.figures.art_secs).collect(),
            throughput: runs.iter().filter_map(|r| r.figures.throughput).collect(),
            app_wall,
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
        let base_gmean = base.as_ref().and_then(|b| Summary::of(&b.makespan)?.gmean);
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
                    ntt: makespan
                        .and_then(|m| m.gmean)
                        .zip(base_gmean)
                        .map(|(m, b)| m / b),
                    ntt_ci95: vs_base.and_then(|b| ratio_ci95(&mine.makespan, &b.makespan)),
                    makespan,
                    art: Summary::of(&mine.art),
                    throughput: Summary::of(&mine.throughput),
                    hmean_speedup: hmeans.and_then(|h| Summary::of(&h)),
                    p_makespan: vs_base.and_then(|b| rank_p_value(&mine.makespan, &b.makespan)),
                    p_art: vs_base.and_then(|b| rank_p_value(&mine.art, &b.art)),
                    service: MetricTail::of(runs),
                    apps: mine
                        .app_wall
                        .iter()
                        .map(|(app, walls)| AppStats {
                            app: app.clone(),
                            wall: Summary::of(walls),
                            p_wall: vs_base
                                .and_then(|b| b.app_wall.iter().find(|(n, _)| n == app))
                                .and_then(|(_, base)| rank_p_value(walls, base)),
                        })
                        .collect(),
                    samples: mine,
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

    /// One row per policy, then a legend of the columns.
    pub fn render(&self) -> String {
        // The latency apps' metric columns, by app, in the order first seen.
        let mut services: Vec<(&str, Option<&str>)> = Vec::new();
        for t in self.policies.iter().flat_map(|p| &p.service) {
            if !services.iter().any(|(a, _)| *a == t.app) {
                services.push((&t.app, t.unit.as_deref()));
            }
        }
        let service_header: Vec<String> = services
            .iter()
            .flat_map(|(app, unit)| {
                let unit = unit.map_or(String::new(), |u| format!(" {u}"));
                [format!("{app} median{unit}"), format!("{app} p99{unit}")]
            })
            .collect();
        let mut header = vec![
            "policy",
            "runs",
            "failed",
            "makespan s",
            "makespan 95% CI",
            "CV %",
            "p makespan",
            "ART s",
            "ART 95% CI",
            "p ART",
            "throughput /s",
        ];
        header.extend(service_header.iter().map(String::as_str));
        header.extend(["NTT", "NTT 95% CI", "Hmean speedup"]);
        let mut table = new_table(&header);
        for p in &self.policies {
            let base = p.policy == self.baseline;
            // The baseline is not tested against itself: blank, not "-".
            let blank_if_base = |cell: String| if base { String::new() } else { cell };
            let gmean = |s: Option<Summary>| s.and_then(|s| s.gmean);
            let mean = |s: Option<Summary>| s.map(|s| s.mean);
            let mut row = vec![
                p.policy.clone(),
                p.runs.to_string(),
                p.failed.to_string(),
                fixed(gmean(p.makespan), 3),
                interval(p.makespan.and_then(|s| s.ci95), 3),
                fixed(p.makespan.and_then(|s| s.cv).map(|c| c * 100.0), 1),
                blank_if_base(p_value(p.p_makespan)),
                fixed(gmean(p.art), 3),
                interval(p.art.and_then(|s| s.ci95), 3),
                blank_if_base(p_value(p.p_art)),
                fixed(mean(p.throughput), 4),
            ];
            for (app, _) in &services {
                let t = p.service.iter().find(|t| t.app == *app);
                row.push(fixed(t.map(|t| t.median), 3));
                row.push(fixed(t.map(|t| t.p99), 3));
            }
            row.extend([
                fixed(p.ntt, 3),
                blank_if_base(interval(p.ntt_ci95, 3)),
                fixed(mean(p.hmean_speedup), 3),
            ]);
            table.add_row(row);
        }
        let mut out = finish(&table);
        out += &format!(
            "makespan: first arrival to last exit; ART: mean arrival-to-exit time of a run. \
             Both: geometric mean over runs with its 95% interval (Student t on log times, \
             so never below 0); CV = sd / arithmetic mean. p: two-sided Mann-Whitney U rank \
             test against {b} (exact up to 8 runs a side, ties included; with n runs a side \
             the smallest p possible is 2 / C(2n, n): 0.1 for n = 3, 0.0079 for n = 5). NTT: geometric-mean \
             makespan / {b}'s, 95% interval by Welch t on log makespans. throughput: sum of \
             1 / wall time, mean over runs; Hmean speedup: harmonic mean of solo / \
             co-located wall time; failed: failed instances over all runs; -: not available \
             (fewer than two runs, or no data)\n",
            b = self.baseline
        );
        if !services.is_empty() {
            out += "APP median, APP p99: a latency app's metric as it printed it during the run, \
                    every sample of every run pooled; p99 is the value 99% of the samples are \
                    no worse than (the 1st percentile when higher is better, e.g. a throughput; \
                    the 99th when lower is better, e.g. a latency)\n";
        }
        out += &self.render_apps();
        if !self.has_baseline() {
            out += &format!(
                "baseline {} is not among the compared policies: no NTT or p-values\n",
                self.baseline
            );
        }
        out
    }

    /// One row per app and policy: the app's wall time over the runs.
    fn render_apps(&self) -> String {
        let mut apps: Vec<&str> = Vec::new();
        for a in self.policies.iter().flat_map(|p| &p.apps) {
            if !apps.contains(&a.app.as_str()) {
                apps.push(&a.app);
            }
        }
        if apps.is_empty() {
            return String::new();
        }
        let mut table = new_table(&["app", "policy", "runs", "mean s", "CV %", "p"]);
        for app in apps {
            for p in &self.policies {
                let Some(a) = p.apps.iter().find(|a| a.app == app) else {
                    continue;
                };
                let base = p.policy == self.baseline;
                table.add_row(vec![
                    app.to_string(),
                    p.policy.clone(),
                    a.wall.map_or(0, |w| w.n).to_string(),
                    fixed(a.wall.map(|w| w.mean), 3),
                    fixed(a.wall.and_then(|w| w.cv).map(|c| c * 100.0), 1),
                    if base {
                        String::new()
                    } else {
                        p_value(a.p_wall)
                    },
                ]);
            }
        }
        let mut out = finish(&table);
        out += &format!(
            "per app: its wall time (start to exit, the mean of its instances in a run) over \
             the runs: arithmetic mean, CV = sd / mean, p = two-sided Mann-Whitney U rank test \
             against {}'s runs of the app\n",
            self.baseline
        );
        out
    }
}
