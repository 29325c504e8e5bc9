//! Statistics over repeated runs: centre, spread, intervals and a rank test that
//! fit run times.
//!
//! Run-to-run variation is one of the things coloc is judged on (Thread
//! Tranquilizer keeps a change only if both the mean and the standard deviation
//! improve), and the papers report improvements with a test and intervals over
//! repeated runs (ReSense §3.5, Table VI). Run times are positive, skewed and
//! heavy-tailed: one barrier collapse under the plain scheduler can make a run
//! 30× slower than its siblings. A normal interval around the arithmetic mean
//! then reaches below zero, and a t-test sees so much variance that a 14×
//! difference is "not significant". So:
//!
//! - **Intervals are on the log scale**: the 95% Student-t interval of the mean
//!   of ln(x), exponentiated, i.e. an interval for the *geometric mean*. It is
//!   always positive and multiplicative (×/÷), as ratios of run times are.
//! - **Ratios** of two policies' geometric means (NTT) get the Welch interval of
//!   the difference of mean logs, exponentiated: the two sides need not share a
//!   variance.
//! - **p-values come from the Mann–Whitney U test** (Wilcoxon rank-sum), which
//!   assumes no distribution: exact for small samples without ties (counted
//!   here), statrs's normal approximation with tie and continuity corrections
//!   otherwise. With three runs
//!   per side the smallest two-sided p it can give is 0.1; that is what three
//!   runs can show, and the table says how many runs there were.
//!
//! Moments come from statrs's Welford accumulator, quantiles from its Student's
//! t distribution and the approximate rank test from its `mannwhitneyu`; the
//! exact null distribution of U is counted here with Mann and Whitney's own
//! recurrence, because statrs's exact method is wrong in the tails.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};
use statrs::statistics::{Accumulate, Data, OnlineMoments, OrderStatistics};
use statrs::stats_tests::mannwhitneyu::{mannwhitneyu, MannWhitneyUMethod};
use statrs::stats_tests::Alternative;

/// Centre and spread of a sample, e.g. the makespans of one policy's repeated runs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (divided by n - 1); None for a single value.
    pub sd: Option<f64>,
    /// Coefficient of variation, sd / |mean|; None for a single value or a zero mean.
    pub cv: Option<f64>,
    pub median: f64,
    /// Geometric mean; None unless every value is positive.
    pub gmean: Option<f64>,
    /// Two-sided 95% interval of the geometric mean: Student's t interval of the
    /// mean of ln(x) with n - 1 degrees of freedom, exponentiated. None for a
    /// single value or when a value is not positive.
    pub ci95: Option<(f64, f64)>,
}

impl Summary {
    /// Summarises `values` (finite numbers); None when there are none.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let m = moments(values);
        let mean = m.mean()?;
        let sd = m.std_dev();
        let logs = logs(values);
        let log_moments = logs.as_deref().map(moments);
        let ci95 = log_moments.as_ref().and_then(|m| {
            let half = t_quantile(0.975, (values.len() - 1) as f64)? * m.std_dev()?
                / (values.len() as f64).sqrt();
            let centre = m.mean()?;
            Some(((centre - half).exp(), (centre + half).exp()))
        });
        Some(Summary {
            n: values.len(),
            mean,
            sd,
            cv: sd.filter(|_| mean != 0.0).map(|sd| sd / mean.abs()),
            median: Data::new(values.to_vec()).median(),
            gmean: log_moments.and_then(|m| m.mean()).map(f64::exp),
            ci95,
        })
    }
}

/// Welford's running moments (statrs), numerically stable for values far from 0.
fn moments(values: &[f64]) -> OnlineMoments<2> {
    values
        .iter()
        .copied()
        .fold(OnlineMoments::default(), OnlineMoments::push)
}

/// Natural logarithms of `values`, or None when one is not positive (or none given).
fn logs(values: &[f64]) -> Option<Vec<f64>> {
    (!values.is_empty() && values.iter().all(|v| *v > 0.0))
        .then(|| values.iter().map(|v| v.ln()).collect())
}

/// The `p` quantile of Student's t with `df` degrees of freedom.
fn t_quantile(p: f64, df: f64) -> Option<f64> {
    Some(StudentsT::new(0.0, 1.0, df).ok()?.inverse_cdf(p))
}

/// Welch's comparison of two means: their difference, its standard error and
/// the Welch–Satterthwaite degrees of freedom. None when a sample has fewer than
/// two values. With both variances zero, `se` is 0 and `df` undefined (NaN).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Welch {
    diff: f64,
    se: f64,
    df: f64,
}

fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    let (ma, mb) = (moments(a), moments(b));
    // Squared standard errors of the two means.
    let sa = ma.variance()? / a.len() as f64;
    let sb = mb.variance()? / b.len() as f64;
    let se2 = sa + sb;
    let df = se2 * se2 / (sa * sa / (a.len() - 1) as f64 + sb * sb / (b.len() - 1) as f64);
    Some(Welch {
        diff: ma.mean()? - mb.mean()?,
        se: se2.sqrt(),
        df,
    })
}

/// Two-sided 95% interval of gmean(`a`) / gmean(`b`): Welch's interval of the
/// difference of mean logs, exponentiated. None when either sample has fewer than
/// two values or a value that is not positive. Two constant samples give the
/// ratio itself at both ends (no spread, no uncertainty the data can show).
pub fn ratio_ci95(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    let w = welch(&logs(a)?, &logs(b)?)?;
    let half = if w.se == 0.0 {
        0.0
    } else {
        t_quantile(0.975, w.df)? * w.se
    };
    Some(((w.diff - half).exp(), (w.diff + half).exp()))
}

/// Largest sample (each side) for which the exact null distribution is used.
const EXACT_MAX: usize = 8;

/// Two-sided p-value of the Mann–Whitney U test that `a` and `b` come from the
/// same distribution.
///
/// Exact when both samples have at most 8 values and no value is tied: twice the
/// upper tail of U's null distribution at max(U1, U2), capped at 1, as scipy
/// does. Otherwise statrs's `mannwhitneyu` with the normal approximation and tie
/// and continuity corrections. (statrs's own exact method is not used: in 0.19 it
/// returns 1 for completely separated samples.) None when either sample has fewer
/// than two values or holds a NaN. When every value of both samples is the same
/// the ranks cannot tell them apart: p = 1. Symmetric in its arguments.
pub fn rank_p_value(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() < 2 || b.len() < 2 || a.iter().chain(b).any(|v| v.is_nan()) {
        return None;
    }
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(f64::total_cmp);
    if all[0] == all[all.len() - 1] {
        return Some(1.0);
    }
    let ties = all.windows(2).any(|w| w[0] == w[1]);
    if a.len() <= EXACT_MAX && b.len() <= EXACT_MAX && !ties {
        // U1 counts the pairs (x in a, y in b) with x > y.
        let u1 = a
            .iter()
            .map(|x| b.iter().filter(|y| x > y).count())
            .sum::<usize>();
        let u = u1.max(a.len() * b.len() - u1);
        return Some((2.0 * u_upper_tail(u, a.len(), b.len())).min(1.0));
    }
    let method = MannWhitneyUMethod::AsymptoticInclContinuityCorrection;
    let (_, p) = mannwhitneyu(a, b, method, Alternative::TwoSided).ok()?;
    p.is_finite().then_some(p)
}

/// P(U >= u) under the null hypothesis for samples of `m` and `n` values without
/// ties: the share of the C(m + n, m) equally likely rank splits with at least
/// `u` pairs in order. Counts by the recurrence on the largest rank (Mann and
/// Whitney 1947): f(m, n, u) = f(m - 1, n, u - n) + f(m, n - 1, u).
fn u_upper_tail(u: usize, m: usize, n: usize) -> f64 {
    // counts[i][j][k]: rank splits of i and j values with U = k.
    let mut counts = vec![vec![Vec::<f64>::new(); n + 1]; m + 1];
    for i in 0..=m {
        for j in 0..=n {
            counts[i][j] = if i == 0 || j == 0 {
                vec![1.0]
            } else {
                (0..=i * j)
                    .map(|k| {
                        let top = k
                            .checked_sub(j)
                            .map_or(0.0, |k| counts[i - 1][j].get(k).copied().unwrap_or(0.0));
                        top + counts[i][j - 1].get(k).copied().unwrap_or(0.0)
                    })
                    .collect()
            };
        }
    }
    let dist = &counts[m][n];
    dist.iter().skip(u).sum::<f64>() / dist.iter().sum::<f64>()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// R's `sleep` data set (Cushny and Peebles), the example of `?t.test`.
    const SLEEP1: [f64; 10] = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0];
    const SLEEP2: [f64; 10] = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4];

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn welch_matches_r_on_the_sleep_data() {
        // R: t.test(extra ~ group, data = sleep)
        //   t = -1.8608, df = 17.776
        let w = welch(&SLEEP1, &SLEEP2).unwrap();
        assert!(close(w.diff / w.se, -1.8608, 5e-5), "t = {}", w.diff / w.se);
        assert!(close(w.df, 17.776, 5e-4), "df = {}", w.df);
    }

    #[test]
    fn welch_by_hand_with_exact_arithmetic() {
        // a = [1, 2, 3]: mean 2, variance 1; b = [4, 6, 8]: mean 6, variance 4.
        // se^2 = 1/3 + 4/3 = 5/3; df = (5/3)^2 / ((1/3)^2 / 2 + (4/3)^2 / 2)
        // = (25/9) / (17/18) = 50/17.
        let w = welch(&[1.0, 2.0, 3.0], &[4.0, 6.0, 8.0]).unwrap();
        assert_eq!(w.diff, -4.0);
        assert!(close(w.se, (5.0f64 / 3.0).sqrt(), 1e-12));
        assert!(close(w.df, 50.0 / 17.0, 1e-12));
    }

    #[test]
    fn summary_centres_and_log_interval() {
        // ln [1, 10, 100] = [0, 2.302585, 4.605170]: mean ln 10, so gmean 10; sd of
        // the logs = ln 10 = 2.302585; se = 2.302585 / sqrt(3) = 1.329398;
        // qt(0.975, 2) = 4.302653, half = 5.719929;
        // exp(2.302585 -+ 5.719929) = [0.0327991, 3048.862] (Python's math).
        let s = Summary::of(&[1.0, 10.0, 100.0]).unwrap();
        assert_eq!((s.n, s.mean, s.median), (3, 37.0, 10.0));
        assert!(close(s.gmean.unwrap(), 10.0, 1e-12));
        let (lo, hi) = s.ci95.unwrap();
        assert!(close(lo, 0.0327991, 5e-7), "lo = {lo}");
        assert!(close(hi, 3048.862, 5e-3), "hi = {hi}");
        // The arithmetic t interval of the same data, 37 -+ 4.302653 * 54.0833 /
        // sqrt(3) = [-97.3, 171.3], would reach below zero; this one cannot.
        assert!(lo > 0.0);
    }

    #[test]
    fn summary_matches_r_on_sleep_group_one() {
        // mean = 7.5 / 10 = 0.75; sum of squared deviations = 28.805,
        // sd = sqrt(28.805 / 9) = 1.789010. Values <= 0: no geometric mean or
        // log interval. Median of the sorted ten: (0.7 + 0.0) / 2 = 0.35.
        let s = Summary::of(&SLEEP1).unwrap();
        assert_eq!(s.n, 10);
        assert!(close(s.mean, 0.75, 1e-12));
        assert!(close(s.sd.unwrap(), 1.789010, 5e-7));
        assert!(close(s.cv.unwrap(), 1.789010 / 0.75, 1e-6));
        assert!(close(s.median, 0.35, 1e-12));
        assert_eq!((s.gmean, s.ci95), (None, None));
    }

    #[test]
    fn rank_test_matches_scipy() {
        // scipy.stats.mannwhitneyu's documented example (Conover): male vs
        // female ages, U = 17, exact two-sided p = 0.1111111 (14 / 126).
        let male = [19.0, 22.0, 16.0, 29.0, 24.0];
        let female = [20.0, 11.0, 17.0, 12.0];
        let p = rank_p_value(&male, &female).unwrap();
        assert!(close(p, 14.0 / 126.0, 1e-12), "p = {p}");
        // Three runs each, completely separated: the most extreme of C(6, 3) = 20
        // equally likely rank splits, twice for two sides: p = 2 / 20.
        let p = rank_p_value(&[1.0, 2.0, 3.0], &[14.0, 28.0, 42.0]).unwrap();
        assert!(close(p, 0.1, 1e-12), "p = {p}");
    }

    #[test]
    fn rank_test_with_ties_uses_the_normal_approximation() {
        // a = [1, 2, 2], b = [2, 3, 4]: ranks 1, 3, 3 | 3, 5, 6 (the three 2s share
        // rank 3); U1 = 7 - 6 = 1, U2 = 8, mu = 4.5; tie term 3^3 - 3 = 24;
        // sigma^2 = 9 / 12 * (7 - 24 / 30) = 4.65; z = (8 - 4.5 - 0.5) / 2.156386
        // = 1.391217; p = 2 (1 - Phi(z)) = 0.1641597 (Python's math.erf).
        let p = rank_p_value(&[1.0, 2.0, 2.0], &[2.0, 3.0, 4.0]).unwrap();
        assert!(close(p, 0.1641597, 5e-7), "p = {p}");
    }

    #[test]
    fn a_fourteen_fold_difference_is_not_drowned_by_its_own_tail() {
        // The shape that misled the old table: two native runs collapsed (barrier
        // spinning), three did not; equal is steady and 14x faster on average.
        let native = [30.0, 31.0, 420.0, 29.0, 610.0];
        let equal = [14.0, 15.0, 14.5, 15.5, 14.8];
        // Ranks separate completely: the exact p is 2 / C(10, 5) = 2 / 252.
        let p = rank_p_value(&native, &equal).unwrap();
        assert!(close(p, 2.0 / 252.0, 1e-12), "p = {p}");
        let s = Summary::of(&native).unwrap();
        assert!(s.ci95.unwrap().0 > 0.0);
        // Geometric means: equal / native = exp(-1.839894) = 0.1588. Welch on the
        // logs: se = 0.695031, df = 4.0048, so the interval is wide ([0.02, 1.09])
        // but positive and around the ratio.
        let ratio = Summary::of(&equal).unwrap().gmean.unwrap() / s.gmean.unwrap();
        assert!(close(ratio, (-1.839894f64).exp(), 1e-6), "{ratio}");
        let (lo, hi) = ratio_ci95(&equal, &native).unwrap();
        assert!(0.0 < lo && lo < ratio && ratio < hi, "[{lo}, {hi}]");
    }

    #[test]
    fn ratio_interval_by_hand() {
        // a = [1, e^2], b = [e, e^3] (logs [0, 2] and [1, 3]): diff = -1, each
        // variance 2, se = sqrt(2/2 + 2/2) = sqrt 2, df = 4 / (1/1 + 1/1) = 2;
        // qt(0.975, 2) = 4.302653, half = 6.084875: exp(-1 -+ half) = [0.000836, 161.39].
        let e = std::f64::consts::E;
        let (lo, hi) = ratio_ci95(&[1.0, e * e], &[e, e * e * e]).unwrap();
        let half = 4.302652729749464 * 2f64.sqrt();
        assert!(close(lo, (-1.0 - half).exp(), 1e-9), "lo = {lo}");
        assert!(close(hi, (-1.0 + half).exp(), 1e-6), "hi = {hi}");
        // Constant samples: the ratio itself.
        assert_eq!(ratio_ci95(&[4.0, 4.0], &[2.0, 2.0]), Some((2.0, 2.0)));
    }

    #[test]
    fn u_distribution_by_hand() {
        // m = 2, n = 2: the C(4, 2) = 6 splits give U = 0 1 2 2 3 4, so
        // P(U >= 4) = 1/6, P(U >= 2) = 4/6, P(U >= 0) = 1.
        assert!(close(u_upper_tail(4, 2, 2), 1.0 / 6.0, 1e-12));
        assert!(close(u_upper_tail(2, 2, 2), 4.0 / 6.0, 1e-12));
        assert_eq!(u_upper_tail(0, 2, 2), 1.0);
        // The distribution is symmetric in the sample sizes.
        for u in 0..=15 {
            assert_eq!(u_upper_tail(u, 3, 5), u_upper_tail(u, 5, 3), "u = {u}");
        }
    }

    #[test]
    fn degenerate_samples() {
        type Case = (&'static [f64], &'static [f64], Option<f64>);
        let cases: [Case; 6] = [
            (&[], &[1.0, 2.0], None),
            (&[1.0], &[1.0, 2.0], None),
            (&[1.0, 2.0], &[3.0], None),
            // Everything equal: the ranks cannot tell the samples apart.
            (&[5.0, 5.0], &[5.0, 5.0, 5.0], Some(1.0)),
            (&[1.0, f64::NAN], &[1.0, 2.0], None),
            // Identical samples: U sits at its mean.
            (&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0], Some(1.0)),
        ];
        for (a, b, want) in cases {
            let got = rank_p_value(a, b);
            match (got, want) {
                (Some(g), Some(w)) => assert!(close(g, w, 1e-12), "{a:?} {b:?}: {g}"),
                _ => assert_eq!(got, want, "{a:?} {b:?}"),
            }
        }
        assert_eq!(ratio_ci95(&[1.0], &[1.0, 2.0]), None);
        assert_eq!(ratio_ci95(&[0.0, 1.0], &[1.0, 2.0]), None);
    }

    #[test]
    fn summary_of_few_values() {
        assert_eq!(Summary::of(&[]), None);
        let one = Summary::of(&[3.0]).unwrap();
        assert_eq!(
            (one.n, one.mean, one.sd, one.cv, one.median, one.ci95),
            (1, 3.0, None, None, 3.0, None)
        );
        assert!(close(one.gmean.unwrap(), 3.0, 1e-12));
        // A zero mean has no coefficient of variation.
        let zero = Summary::of(&[-1.0, 1.0]).unwrap();
        assert_eq!(zero.mean, 0.0);
        assert_eq!(zero.cv, None);
        // Constant samples: sd 0, the interval collapses onto the value.
        let flat = Summary::of(&[2.0, 2.0, 2.0]).unwrap();
        assert_eq!(flat.sd, Some(0.0));
        assert_eq!(flat.cv, Some(0.0));
        let (lo, hi) = flat.ci95.unwrap();
        assert!(close(lo, 2.0, 1e-12) && close(hi, 2.0, 1e-12));
        // A naive sum / n gives 0.30000000000000004 / 3 > 0.1 here; Welford does not.
        assert_eq!(Summary::of(&[0.1; 3]).unwrap().mean, 0.1);
    }

    proptest! {
        #[test]
        fn centres_lie_within_the_sample(v in prop::collection::vec(1e-6f64..1e9, 1..40)) {
            let s = Summary::of(&v).unwrap();
            let min = v.iter().copied().fold(f64::INFINITY, f64::min);
            let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let tol = 1e-9 * max;
            for c in [s.mean, s.median, s.gmean.unwrap()] {
                prop_assert!(min - tol <= c && c <= max + tol, "{min} <= {c} <= {max}");
            }
            prop_assert!(s.gmean.unwrap() <= s.mean + tol, "AM-GM");
        }

        #[test]
        fn log_interval_is_positive_and_holds_the_gmean(
            v in prop::collection::vec(1e-3f64..1e6, 2..40),
        ) {
            let s = Summary::of(&v).unwrap();
            let (lo, hi) = s.ci95.unwrap();
            let g = s.gmean.unwrap();
            prop_assert!(0.0 < lo && lo <= g * (1.0 + 1e-9) && g <= hi * (1.0 + 1e-9));
        }

        #[test]
        fn rank_p_is_a_symmetric_probability(
            a in prop::collection::vec(-1e6f64..1e6, 0..12),
            b in prop::collection::vec(-1e6f64..1e6, 0..12),
        ) {
            let p = rank_p_value(&a, &b);
            prop_assert_eq!(p.is_some(), a.len() >= 2 && b.len() >= 2);
            if let Some(p) = p {
                prop_assert!((0.0..=1.0).contains(&p), "p = {p}");
                let q = rank_p_value(&b, &a).unwrap();
                prop_assert!((p - q).abs() < 1e-12, "{p} vs {q}");
            }
        }
    }
}
