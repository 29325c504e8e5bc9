//! The sensitivity score (ReSense §2.2, Equation 1) and the measurements behind it.
//!
//! ```text
//! score = (cycles_base − cycles_contend) × 100 / cycles_base
//! ```
//!
//! Positive: the app runs faster when its threads share the resource (data sharing);
//! negative: slower (intra-application contention). The magnitude says how much.
//! The paper reads total cycles from hardware counters. Where a machine has none
//! (most VMs, this development machine), total task-clock (CPU time of all threads)
//! or wall time stand in: both shrink and grow with the same runs, and the profile
//! records which one was used so nobody mistakes one for the other.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What the two configurations' performance was measured with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    /// Total CPU cycles of all threads, from hardware counters (the paper's signal).
    Cycles,
    /// Total CPU time of all threads (`task-clock`), ns.
    TaskClock,
    /// Elapsed time of the run, ns.
    Wall,
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Signal::Cycles => "cycles",
            Signal::TaskClock => "task-clock",
            Signal::Wall => "wall",
        })
    }
}

/// Why measurements cannot give a score.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScoreError {
    #[error("the baseline measurement must be a positive number, found {0}")]
    Baseline(f64),
    #[error("the contention measurement must be a finite number >= 0, found {0}")]
    Contention(f64),
    #[error("no repetitions were measured")]
    NoRuns,
    #[error(
        "{baseline} baseline runs but {contention} contention runs (each repetition runs both)"
    )]
    Unpaired { baseline: usize, contention: usize },
}

/// Equation 1 of ReSense: the change from the baseline to the contention
/// configuration, in percent of the baseline. `base` must be positive and both
/// finite (cycles, CPU time or elapsed time of one configuration).
pub fn sensitivity_score(base: f64, contend: f64) -> Result<f64, ScoreError> {
    if !(base.is_finite() && base > 0.0) {
        return Err(ScoreError::Baseline(base));
    }
    if !(contend.is_finite() && contend >= 0.0) {
        return Err(ScoreError::Contention(contend));
    }
    Ok((base - contend) * 100.0 / base)
}

/// How much the score varied over repetitions: the scores of the single
/// repetitions (repetition i's baseline against repetition i's contention run).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation (0 with one repetition).
    pub sd: f64,
}

/// An app's sensitivity to one shared resource, with the runs it came from (raw
/// measurements are kept so that a later change of the formula can recompute it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sensitivity {
    /// Equation 1 on the mean baseline and mean contention measurements.
    pub score: f64,
    pub signal: Signal,
    /// Threads the app ran with (the cores under one instance of the resource).
    pub threads: u32,
    /// One measurement per repetition, in the signal's unit.
    pub baseline: Vec<f64>,
    pub contention: Vec<f64>,
    pub spread: Spread,
}

impl Sensitivity {
    /// The score of paired repetitions: the mean of each configuration through
    /// Equation 1, and the spread of the repetitions' own scores.
    pub fn from_runs(
        signal: Signal,
        threads: u32,
        baseline: Vec<f64>,
        contention: Vec<f64>,
    ) -> Result<Self, ScoreError> {
        if baseline.len() != contention.len() {
            return Err(ScoreError::Unpaired {
                baseline: baseline.len(),
                contention: contention.len(),
            });
        }
        if baseline.is_empty() {
            return Err(ScoreError::NoRuns);
        }
        let per_rep = baseline
            .iter()
            .zip(&contention)
            .map(|(&b, &c)| sensitivity_score(b, c))
            .collect::<Result<Vec<f64>, _>>()?;
        let score = sensitivity_score(mean(&baseline), mean(&contention))?;
        let m = mean(&per_rep);
        let sd = if per_rep.len() > 1 {
            let ss: f64 = per_rep.iter().map(|s| (s - m) * (s - m)).sum();
            (ss / (per_rep.len() - 1) as f64).sqrt()
        } else {
            0.0
        };
        let spread = Spread {
            min: per_rep.iter().copied().fold(f64::INFINITY, f64::min),
            max: per_rep.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            sd,
        };
        Ok(Self {
            score,
            signal,
            threads,
            baseline,
            contention,
            spread,
        })
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Equation 1 on round numbers: 100 → 90 cycles is +10 (sharing helps),
    /// 100 → 125 is −25 (contention), equal runs score 0.
    #[test]
    fn equation_one() {
        let cases = [
            (100.0, 90.0, 10.0),
            (100.0, 125.0, -25.0),
            (4e9, 4e9, 0.0),
            (200.0, 0.0, 100.0),
        ];
        for (b, c, want) in cases {
            let got = sensitivity_score(b, c).unwrap();
            assert!((got - want).abs() < 1e-12, "{b} {c}: {got}");
        }
    }

    #[test]
    fn bad_measurements_are_errors() {
        let cases = [
            (0.0, 1.0, ScoreError::Baseline(0.0)),
            (-1.0, 1.0, ScoreError::Baseline(-1.0)),
            (1.0, -1.0, ScoreError::Contention(-1.0)),
        ];
        for (b, c, want) in cases {
            assert_eq!(sensitivity_score(b, c), Err(want));
        }
        assert!(sensitivity_score(f64::NAN, 1.0).is_err());
        assert!(sensitivity_score(1.0, f64::INFINITY).is_err());
        assert_eq!(
            Sensitivity::from_runs(Signal::Wall, 2, vec![1.0], vec![]),
            Err(ScoreError::Unpaired {
                baseline: 1,
                contention: 0
            })
        );
        assert_eq!(
            Sensitivity::from_runs(Signal::Wall, 2, vec![], vec![]),
            Err(ScoreError::NoRuns)
        );
    }

    /// Three repetitions: baselines 100, 100, 100 and contention runs 90, 95, 100
    /// give per-repetition scores 10, 5, 0 (sd 5) and, on the means (100 vs 95),
    /// a score of 5.
    #[test]
    fn repetitions_give_mean_score_and_spread() {
        let s = Sensitivity::from_runs(
            Signal::Cycles,
            4,
            vec![100.0, 100.0, 100.0],
            vec![90.0, 95.0, 100.0],
        )
        .unwrap();
        assert!((s.score - 5.0).abs() < 1e-12);
        assert_eq!((s.spread.min, s.spread.max), (0.0, 10.0));
        assert!((s.spread.sd - 5.0).abs() < 1e-12);
    }

    proptest! {
        /// The score is at most 100, has the sign of base − contend, and the
        /// spread brackets every repetition.
        #[test]
        fn score_bounds(runs in proptest::collection::vec((1.0f64..1e12, 0.0f64..1e12), 1..6)) {
            let (b, c): (Vec<f64>, Vec<f64>) = runs.iter().copied().unzip();
            let s = Sensitivity::from_runs(Signal::TaskClock, 2, b.clone(), c.clone()).unwrap();
            prop_assert!(s.score <= 100.0);
            prop_assert!(s.spread.min <= s.spread.max);
            prop_assert!(s.spread.sd >= 0.0);
            for (b, c) in b.iter().zip(&c) {
                let one = sensitivity_score(*b, *c).unwrap();
                prop_assert!(one >= s.spread.min && one <= s.spread.max);
                prop_assert_eq!(one > 0.0, b > c);
            }
        }
    }
}
