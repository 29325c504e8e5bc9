//! Figures across the mixes of one bench (`coloc bench mixes`): per mix,
//! each policy's geometric-mean makespan over its runs, the best of the other
//! policies chosen in hindsight, how far the policy in focus (`auto`) is from
//! it, and its NTT and p-value against the baseline; over all mixes, each
//! policy's geometric mean, the hindsight best's and the best single
//! policy's. Mixes are listed worst first: the largest focus / best ratio.
//!
//! Geometric means throughout, as the NTT ([`super::PolicyStats::ntt`]):
//! across mixes of different lengths the geometric mean of makespans is the
//! one whose ratios do not depend on which mix is long (gm(a) / gm(b) is the
//! geometric mean of the per-mix ratios a / b).

use super::compare::{Comparison, PolicyStats};
use super::reference::{
    against_reference, geometric_mean, render_against_reference, AgainstReference, MixApp, Points,
};
use super::solo::SoloTimes;
use super::table::{finish, fixed, interval, new_table, p_value};
use super::SoloCurves;
use crate::workload::Workload;

/// One mix's comparison, as the bench ran it.
#[derive(Clone, Debug, PartialEq)]
pub struct MixOutcome {
    pub mix: String,
    /// What to say beside the name (e.g. `seed 104, held out`).
    pub note: String,
    pub comparison: Comparison,
    /// The mix's CPU-work lower bound on makespan, seconds
    /// ([`super::reference::cpu_time_lower_bound`]), where solo runs gave it.
    pub bound: Option<f64>,
}

/// One mix's row.
#[derive(Clone, Debug, PartialEq)]
pub struct MixRow {
    pub mix: String,
    pub note: String,
    /// Per policy, in the order compared: its geometric-mean makespan.
    pub makespan: Vec<Option<f64>>,
    /// Per policy: NTT against the baseline and its p-value.
    pub ntt: Vec<Option<f64>>,
    pub p: Vec<Option<f64>>,
    /// The fastest policy other than the focus, and its makespan.
    pub best_other: Option<(String, f64)>,
    /// The focus policy's makespan over the best other's.
    pub focus_over_best: Option<f64>,
    /// The focus policy's NTT 95% interval.
    pub focus_ntt_ci95: Option<(f64, f64)>,
    pub bound: Option<f64>,
}

/// The policy, of `policies`, other than `focus`, with the least
/// geometric-mean makespan: the best choice in hindsight.
pub fn best_other(policies: &[PolicyStats], focus: &str) -> Option<(String, f64)> {
    policies
        .iter()
        .filter(|p| p.policy != focus)
        .filter_map(|p| Some((p.policy.clone(), p.makespan?.gmean?)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

fn gmean_of(p: &PolicyStats) -> Option<f64> {
    p.makespan?.gmean
}

impl MixRow {
    pub fn of(o: &MixOutcome, focus: &str) -> MixRow {
        let ps = &o.comparison.policies;
        let own = ps.iter().find(|p| p.policy == focus);
        let best = best_other(ps, focus);
        let focus_over_best = own
            .and_then(gmean_of)
            .zip(best.as_ref())
            .filter(|(_, b)| b.1 > 0.0)
            .map(|(m, b)| m / b.1);
        MixRow {
            mix: o.mix.clone(),
            note: o.note.clone(),
            makespan: ps.iter().map(gmean_of).collect(),
            ntt: ps.iter().map(|p| p.ntt).collect(),
            p: ps.iter().map(|p| p.p_makespan).collect(),
            best_other: best,
            focus_over_best,
            focus_ntt_ci95: own.and_then(|p| p.ntt_ci95),
            bound: o.bound,
        }
    }
}

/// Every mix's row and the geometric means over them.
#[derive(Clone, Debug, PartialEq)]
pub struct AcrossMixes {
    pub policies: Vec<String>,
    pub focus: String,
    pub baseline: String,
    /// Worst first (largest focus / best other; mixes without one last).
    pub rows: Vec<MixRow>,
    /// Per policy: the geometric mean of its makespans over the mixes; None
    /// unless every mix has one.
    pub gmean: Vec<Option<f64>>,
    /// The same of the best other policy of each mix.
    pub hindsight_gmean: Option<f64>,
    /// The policy other than the focus with the least geometric mean.
    pub best_single: Option<(String, f64)>,
    /// Per policy: the geometric mean of makespan / CPU-work bound; None
    /// unless every mix has both.
    pub over_bound: Vec<Option<f64>>,
    pub hindsight_over_bound: Option<f64>,
}

/// Geometric mean over the rows of one value each; None if any is missing.
fn over_rows(rows: &[MixRow], value: impl Fn(&MixRow) -> Option<f64>) -> Option<f64> {
    let values: Option<Vec<f64>> = rows.iter().map(value).collect();
    geometric_mean(&values?)
}

/// The figures of [`AcrossMixes`] for `outcomes`, all comparing the same
/// policies in the same order; `focus` is the policy judged (auto).
pub fn across_mixes(outcomes: &[MixOutcome], focus: &str) -> AcrossMixes {
    let policies: Vec<String> = outcomes.first().map_or_else(Vec::new, |o| {
        o.comparison
            .policies
            .iter()
            .map(|p| p.policy.clone())
            .collect()
    });
    let baseline = outcomes
        .first()
        .map_or_else(String::new, |o| o.comparison.baseline.clone());
    let mut rows: Vec<MixRow> = outcomes.iter().map(|o| MixRow::of(o, focus)).collect();
    rows.sort_by(|a, b| {
        let key = |r: &MixRow| r.focus_over_best.unwrap_or(f64::NEG_INFINITY);
        key(b).total_cmp(&key(a))
    });
    let gmean: Vec<Option<f64>> = (0..policies.len())
        .map(|i| over_rows(&rows, |r| r.makespan.get(i).copied().flatten()))
        .collect();
    let over_bound = (0..policies.len())
        .map(|i| over_rows(&rows, |r| Some(r.makespan.get(i).copied()?? / r.bound?)))
        .collect();
    let best_single = policies
        .iter()
        .zip(&gmean)
        .filter(|(p, _)| *p != focus)
        .filter_map(|(p, g)| Some((p.clone(), (*g)?)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    AcrossMixes {
        hindsight_gmean: over_rows(&rows, |r| Some(r.best_other.as_ref()?.1)),
        hindsight_over_bound: over_rows(&rows, |r| Some(r.best_other.as_ref()?.1 / r.bound?)),
        policies,
        focus: focus.to_string(),
        baseline,
        rows,
        gmean,
        best_single,
        over_bound,
    }
}

impl AcrossMixes {
    fn focus_index(&self) -> Option<usize> {
        self.policies.iter().position(|p| *p == self.focus)
    }

    /// The mixes, worst first, then the geometric means and what they say.
    pub fn render(&self) -> String {
        let mut out = self.render_makespans();
        out += &self.render_ntt();
        out += &self.render_means();
        out
    }

    /// Makespan per mix and policy, the hindsight best and the focus's ratio.
    fn render_makespans(&self) -> String {
        let f = &self.focus;
        let mut head: Vec<String> = vec!["mix".into(), "set".into()];
        head.extend(self.policies.iter().map(|p| format!("{p} s")));
        head.extend([
            "best other".into(),
            format!("{f} / best"),
            format!("{f} NTT 95% CI"),
            "CPU-work bound s".into(),
        ]);
        let head: Vec<&str> = head.iter().map(String::as_str).collect();
        let mut table = new_table(&head);
        for r in &self.rows {
            let mut row = vec![r.mix.clone(), r.note.clone()];
            row.extend(r.makespan.iter().map(|m| fixed(*m, 3)));
            row.extend([
                r.best_other
                    .as_ref()
                    .map_or_else(|| "-".into(), |(p, m)| format!("{p} {m:.3}")),
                fixed(r.focus_over_best, 3),
                interval(r.focus_ntt_ci95, 3),
                fixed(r.bound, 2),
            ]);
            table.add_row(row);
        }
        let mut out = finish(&table);
        out += &format!(
            "makespan: geometric mean over a mix's runs, seconds; worst mix first (largest \
             {f} / best other, the fastest other policy chosen per mix in hindsight); NTT \
             95% CI: {f}'s makespan over {b}'s (Welch t on log makespans)\n",
            b = self.baseline
        );
        out
    }

    /// NTT and p against the baseline, per mix and policy.
    fn render_ntt(&self) -> String {
        let others: Vec<usize> = (0..self.policies.len())
            .filter(|&i| self.policies[i] != self.baseline)
            .collect();
        if others.is_empty() {
            return String::new();
        }
        let mut head: Vec<&str> = vec!["mix"];
        head.extend(others.iter().map(|&i| self.policies[i].as_str()));
        let mut table = new_table(&head);
        for r in &self.rows {
            let mut row = vec![r.mix.clone()];
            row.extend(others.iter().map(|&i| {
                format!(
                    "{} (p {})",
                    fixed(r.ntt.get(i).copied().flatten(), 3),
                    p_value(r.p.get(i).copied().flatten())
                )
            }));
            table.add_row(row);
        }
        let mut out = finish(&table);
        out += &format!(
            "NTT against {b} (geometric-mean makespan / {b}'s) and the two-sided \
             Mann-Whitney U p-value of the makespans (with 3 runs a side the smallest \
             possible p is 0.1)\n",
            b = self.baseline
        );
        out
    }

    /// `native 1.234, equal 1.100, …`: one value per policy.
    fn per_policy(&self, values: &[Option<f64>]) -> String {
        let parts: Vec<String> = self
            .policies
            .iter()
            .zip(values)
            .map(|(p, v)| format!("{p} {}", fixed(*v, 3)))
            .collect();
        parts.join(", ")
    }

    /// The geometric means over the mixes and the verdicts on the focus.
    fn render_means(&self) -> String {
        let f = &self.focus;
        let n = self.rows.len();
        let mut out = format!(
            "geometric-mean makespan over {n} mixes, s: {}; best per mix in hindsight {}\n",
            self.per_policy(&self.gmean),
            fixed(self.hindsight_gmean, 3)
        );
        if self.over_bound.iter().any(Option::is_some) {
            out += &format!(
                "geometric-mean makespan / CPU-work bound: {}; best per mix in hindsight {}\n",
                self.per_policy(&self.over_bound),
                fixed(self.hindsight_over_bound, 3)
            );
        }
        if let Some((p, g)) = &self.best_single {
            out += &format!("best single policy other than {f}: {p} ({g:.3} s)\n");
        }
        let Some(fi) = self.focus_index() else {
            return out;
        };
        let own = self.gmean[fi];
        let ratio = |of: Option<f64>| own.zip(of).map(|(a, b)| a / b);
        out += &format!(
            "{f}: {} x the best single policy's geometric mean, {} x the hindsight best's\n",
            fixed(ratio(self.best_single.as_ref().map(|b| b.1)), 3),
            fixed(ratio(self.hindsight_gmean), 3)
        );
        if let Some(worst) = self.rows.first().filter(|r| r.focus_over_best.is_some()) {
            out += &format!(
                "{f}'s worst mix: {} x the best other ({}, {})\n",
                fixed(worst.focus_over_best, 3),
                worst.mix,
                worst.best_other.as_ref().map_or("-", |b| b.0.as_str())
            );
        }
        let slower: Vec<&str> = self
            .rows
            .iter()
            .filter(|r| r.focus_ntt_ci95.is_some_and(|(lo, _)| lo > 1.02))
            .map(|r| r.mix.as_str())
            .collect();
        out += &format!(
            "mixes where {f} is slower than {} by more than 2% (NTT 95% CI above 1.02): {}\n",
            self.baseline,
            if slower.is_empty() {
                "none".to_string()
            } else {
                slower.join(", ")
            }
        );
        out
    }
}

/// A mix's reference points on `cpus` CPUs from its apps' solo curves.
#[derive(Clone, Debug)]
pub struct Reference {
    pub points: Points,
    /// Each app's solo time at its own thread count (for NTT).
    pub solo: SoloTimes,
}

impl Reference {
    pub fn of(workload: &Workload, curves: &SoloCurves, cpus: u32) -> Reference {
        let mut apps = Vec::new();
        let mut solo = SoloTimes::default();
        for a in &workload.apps {
            let curve = curves.curve(&a.name).unwrap_or_default();
            if let Some(t) = curve.get(&a.threads) {
                solo.add(&a.name, *t);
            }
            apps.push(MixApp {
                arrive: a.arrive_at.as_secs_f64(),
                solo: curve,
                cpu: curves.cpu_curve(&a.name).unwrap_or_default(),
            });
        }
        Reference {
            points: Points::of(&apps, cpus),
            solo,
        }
    }

    /// Each policy of `cmp` against these reference points, as a table.
    pub fn table(&self, cmp: &Comparison) -> (Vec<AgainstReference>, String) {
        let rows = against_reference(&cmp.policies, self.points);
        let text = render_against_reference(&rows, self.points);
        (rows, text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::testtrace::runs;

    fn outcome(mix: &str, by_policy: &[(&str, &[f64])], bound: Option<f64>) -> MixOutcome {
        let runs = by_policy.iter().map(|(p, m)| runs(p, m)).collect();
        MixOutcome {
            mix: mix.into(),
            note: "seed 1, tuning".into(),
            comparison: Comparison::new("native", runs),
            bound,
        }
    }

    /// Two mixes. m1: native 10, equal 8, auto 8.8 → best other equal, auto
    /// 1.1 × it. m2: native 4, equal 5.5, auto 4 → best other native, auto
    /// 1.0. Geometric means: native √40 = 6.325 (the best single policy),
    /// equal √44 = 6.633, auto √35.2 = 5.933 (0.938 × native's); hindsight
    /// best √(8 · 4) = 5.657; auto / hindsight = √(35.2 / 32) = 1.049. Over
    /// the bounds (8, 4): auto √(1.1 · 1) = 1.049.
    #[test]
    fn mixes_are_judged_by_geometric_means_worst_first() {
        let a = across_mixes(
            &[
                outcome(
                    "m2",
                    &[("native", &[4.0]), ("equal", &[5.5]), ("auto", &[4.0])],
                    Some(4.0),
                ),
                outcome(
                    "m1",
                    &[("native", &[10.0]), ("equal", &[8.0]), ("auto", &[8.8])],
                    Some(8.0),
                ),
            ],
            "auto",
        );
        let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-9;
        assert_eq!(a.rows[0].mix, "m1", "worst first");
        assert!(close(a.rows[0].focus_over_best, 1.1));
        let (best, m) = a.rows[0].best_other.clone().unwrap();
        assert_eq!(best, "equal");
        assert!(close(Some(m), 8.0));
        assert!(close(a.rows[1].focus_over_best, 1.0));
        assert!(close(a.gmean[0], 40f64.sqrt()));
        assert!(close(a.gmean[2], 35.2f64.sqrt()));
        assert!(close(a.hindsight_gmean, 32f64.sqrt()));
        assert!(close(a.over_bound[2], 1.1f64.sqrt()));
        assert!(close(a.hindsight_over_bound, 1.0));
        assert!(close(a.gmean[1], 44f64.sqrt()));
        assert_eq!(a.best_single.as_ref().unwrap().0, "native");
        let text = a.render();
        assert!(text.contains("best per mix in hindsight 5.657"), "{text}");
        assert!(text.contains("auto: 0.938 x the best single"), "{text}");
        assert!(text.contains("1.049 x the hindsight best's"), "{text}");
        assert!(
            text.contains("auto's worst mix: 1.100 x the best other (m1, equal)"),
            "{text}"
        );
        assert!(
            text.find("| m1").unwrap() < text.find("| m2").unwrap(),
            "{text}"
        );
    }

    /// A policy slower than native with an NTT interval above 1.02 is named;
    /// one whose interval reaches below is not. A mix missing a policy's
    /// makespan leaves that policy without a geometric mean.
    #[test]
    fn significant_slowdowns_are_named_and_gaps_stay_gaps() {
        let a = across_mixes(
            &[
                outcome(
                    "slow",
                    &[
                        ("native", &[10.0, 10.1, 9.9]),
                        ("auto", &[11.0, 11.1, 10.9]),
                    ],
                    None,
                ),
                outcome(
                    "noisy",
                    &[("native", &[10.0, 12.0, 8.0]), ("auto", &[10.5, 8.0, 12.5])],
                    None,
                ),
            ],
            "auto",
        );
        let text = a.render();
        assert!(
            text.contains("by more than 2% (NTT 95% CI above 1.02): slow\n"),
            "{text}"
        );
        assert_eq!(a.over_bound, [None, None]);
        assert!(!text.contains("CPU-work bound:"), "{text}");
        let gap = across_mixes(
            &[
                outcome("a", &[("native", &[1.0]), ("auto", &[1.0])], None),
                outcome("b", &[("native", &[1.0]), ("auto", &[])], None),
            ],
            "auto",
        );
        assert_eq!(gap.gmean, [Some(1.0), None]);
        assert_eq!(gap.rows.last().unwrap().mix, "b", "no ratio: last");
    }
}
