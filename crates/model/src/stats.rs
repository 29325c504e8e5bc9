//! Statistics over repeated runs: mean, spread, confidence intervals and Welch's
//! t-test.
//!
//! Run-to-run variation is one of the things coloc is judged on (DESIGN.md; Thread
//! Tranquilizer keeps a change only if both the mean and the standard deviation
//! improve), and the papers report their improvements with a t-test and confidence
//! intervals over repeated runs (ReSense §3.5, Table VI). Repeated runs of two
//! policies have no reason to share a variance, so the comparison uses Welch's
//! unequal-variance test rather than Student's pooled one.
//!
//! Moments come from statrs's Welford accumulator and quantiles and tail
//! probabilities from its Student's t distribution; nothing here is hand-rolled
//! beyond the textbook formulas that combine them.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};
use statrs::statistics::{Accumulate, OnlineMoments};

/// Mean and spread of a sample, e.g. the makespans of one policy's repeated runs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (divided by n - 1); None for a single value.
    pub sd: Option<f64>,
    /// Coefficient of variation, sd / |mean|; None for a single value or a zero mean.
    pub cv: Option<f64>,
    /// Two-sided 95% confidence interval of the mean from Student's t with n - 1
    /// degrees of freedom; None for a single value.
    pub ci95: Option<(f64, f64)>,
}

impl Summary {
    /// Summarises `values` (finite numbers); None when there are none.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let moments = moments(values);
        let mean = moments.mean()?;
        let sd = moments.std_dev();
        let n = values.len();
        let ci95 = sd.and_then(|sd| {
            let t = t_quantile(0.975, (n - 1) as f64)?;
            let half = t * sd / (n as f64).sqrt();
            Some((mean - half, mean + half))
        });
        Some(Summary {
            n,
            mean,
            sd,
            cv: sd.filter(|_| mean != 0.0).map(|sd| sd / mean.abs()),
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

/// The `p` quantile of Student's t with `df` degrees of freedom.
fn t_quantile(p: f64, df: f64) -> Option<f64> {
    Some(StudentsT::new(0.0, 1.0, df).ok()?.inverse_cdf(p))
}

/// Welch's t statistic and Welch–Satterthwaite degrees of freedom, or None when a
/// sample has fewer than two values or both have zero variance (t undefined).
fn welch_t_df(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    let (ma, mb) = (moments(a), moments(b));
    // Squared standard errors of the two means.
    let sa = ma.variance()? / a.len() as f64;
    let sb = mb.variance()? / b.len() as f64;
    let se2 = sa + sb;
    if se2 == 0.0 {
        return None;
    }
    let t = (ma.mean()? - mb.mean()?) / se2.sqrt();
    let df = se2 * se2 / (sa * sa / (a.len() - 1) as f64 + sb * sb / (b.len() - 1) as f64);
    Some((t, df))
}

/// Two-sided p-value of Welch's t-test that `a` and `b` have the same mean.
///
/// None when either sample has fewer than two values (no variance estimate).
/// When both samples are constant the t statistic is 0/0; the p-value is then the
/// limit as both variances shrink to zero: 1.0 if the means are equal (nothing
/// tells the samples apart) and 0.0 if they differ (a nonzero difference is
/// infinitely many standard errors away). Symmetric in its arguments.
pub fn welch_p_value(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    match welch_t_df(a, b) {
        Some((t, df)) => {
            let dist = StudentsT::new(0.0, 1.0, df).ok()?;
            Some((2.0 * dist.sf(t.abs())).min(1.0))
        }
        None => {
            let same = moments(a).mean() == moments(b).mean();
            Some(if same { 1.0 } else { 0.0 })
        }
    }
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
        //   t = -1.8608, df = 17.776, p-value = 0.07939
        let (t, df) = welch_t_df(&SLEEP1, &SLEEP2).unwrap();
        assert!(close(t, -1.8608, 5e-5), "t = {t}");
        assert!(close(df, 17.776, 5e-4), "df = {df}");
        let p = welch_p_value(&SLEEP1, &SLEEP2).unwrap();
        assert!(close(p, 0.07939, 5e-6), "p = {p}");
    }

    #[test]
    fn summary_matches_r_on_sleep_group_one() {
        // mean = 7.5 / 10 = 0.75; sum of squared deviations = 28.805,
        // sd = sqrt(28.805 / 9) = 1.789010; se = sd / sqrt(10) = 0.5657345;
        // qt(0.975, 9) = 2.262157, so the interval is 0.75 -+ 1.279780.
        // R: t.test(sleep$extra[1:10]) gives -0.5297804 2.0297804.
        let s = Summary::of(&SLEEP1).unwrap();
        assert_eq!(s.n, 10);
        assert!(close(s.mean, 0.75, 1e-12));
        assert!(close(s.sd.unwrap(), 1.789010, 5e-7));
        assert!(close(s.cv.unwrap(), 1.789010 / 0.75, 1e-6));
        let (lo, hi) = s.ci95.unwrap();
        assert!(close(lo, -0.5297804, 5e-7), "lo = {lo}");
        assert!(close(hi, 2.0297804, 5e-7), "hi = {hi}");
    }

    #[test]
    fn welch_by_hand_with_exact_arithmetic() {
        // a = [1, 2, 3]: mean 2, variance 1; b = [4, 6, 8]: mean 6, variance 4.
        // se^2 = 1/3 + 4/3 = 5/3; t = -4 / sqrt(5/3) = -3.0983867.
        // df = (5/3)^2 / ((1/3)^2 / 2 + (4/3)^2 / 2) = (25/9) / (17/18) = 50/17.
        // p = 2 P(T_{50/17} > 3.0983867) = I_{df/(df+t^2)}(df/2, 1/2) = 0.0547868
        // (the regularized incomplete beta evaluated with mpmath at 30 digits).
        let (t, df) = welch_t_df(&[1.0, 2.0, 3.0], &[4.0, 6.0, 8.0]).unwrap();
        assert!(close(t, -4.0 / (5.0f64 / 3.0).sqrt(), 1e-12));
        assert!(close(df, 50.0 / 17.0, 1e-12));
        let p = welch_p_value(&[1.0, 2.0, 3.0], &[4.0, 6.0, 8.0]).unwrap();
        assert!(close(p, 0.0547868, 5e-7), "p = {p}");
    }

    #[test]
    fn degenerate_samples() {
        type Case = (&'static [f64], &'static [f64], Option<f64>);
        let cases: [Case; 6] = [
            (&[], &[1.0, 2.0], None),
            (&[1.0], &[1.0, 2.0], None),
            (&[1.0, 2.0], &[3.0], None),
            // Both constant: equal means cannot be told apart, distinct ones always can.
            (&[5.0, 5.0], &[5.0, 5.0, 5.0], Some(1.0)),
            (&[5.0, 5.0], &[6.0, 6.0], Some(0.0)),
            // Identical samples: t = 0, p = 1.
            (&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0], Some(1.0)),
        ];
        for (a, b, want) in cases {
            let got = welch_p_value(a, b);
            match (got, want) {
                (Some(g), Some(w)) => assert!(close(g, w, 1e-12), "{a:?} {b:?}: {g}"),
                _ => assert_eq!(got, want, "{a:?} {b:?}"),
            }
        }
    }

    #[test]
    fn summary_of_few_values() {
        assert_eq!(Summary::of(&[]), None);
        let one = Summary::of(&[3.0]).unwrap();
        assert_eq!(
            one,
            Summary {
                n: 1,
                mean: 3.0,
                sd: None,
                cv: None,
                ci95: None
            }
        );
        // A zero mean has no coefficient of variation.
        let zero = Summary::of(&[-1.0, 1.0]).unwrap();
        assert_eq!(zero.mean, 0.0);
        assert_eq!(zero.cv, None);
        // Constant samples: sd 0, the interval collapses onto the mean.
        let flat = Summary::of(&[2.0, 2.0, 2.0]).unwrap();
        assert_eq!(flat.sd, Some(0.0));
        assert_eq!(flat.cv, Some(0.0));
        assert_eq!(flat.ci95, Some((2.0, 2.0)));
        // A naive sum / n gives 0.30000000000000004 / 3 > 0.1 here; Welford does not.
        assert_eq!(Summary::of(&[0.1; 3]).unwrap().mean, 0.1);
    }

    proptest! {
        #[test]
        fn mean_lies_within_the_sample(v in prop::collection::vec(-1e9f64..1e9, 1..40)) {
            let s = Summary::of(&v).unwrap();
            let min = v.iter().copied().fold(f64::INFINITY, f64::min);
            let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            prop_assert!(min <= s.mean && s.mean <= max, "{min} <= {} <= {max}", s.mean);
        }

        #[test]
        fn interval_contains_the_mean(v in prop::collection::vec(-1e6f64..1e6, 2..40)) {
            let s = Summary::of(&v).unwrap();
            let (lo, hi) = s.ci95.unwrap();
            prop_assert!(lo <= s.mean && s.mean <= hi);
            prop_assert!(s.sd.unwrap() >= 0.0);
        }

        #[test]
        fn welch_p_is_a_symmetric_probability(
            a in prop::collection::vec(-1e6f64..1e6, 0..20),
            b in prop::collection::vec(-1e6f64..1e6, 0..20),
        ) {
            let p = welch_p_value(&a, &b);
            prop_assert_eq!(p.is_some(), a.len() >= 2 && b.len() >= 2);
            if let Some(p) = p {
                prop_assert!((0.0..=1.0).contains(&p), "p = {p}");
            }
            prop_assert_eq!(p, welch_p_value(&b, &a));
        }
    }
}
