//! The team an app runs fastest with, from its stored solo times
//! (`docs/policies/auto.md`, "Team size").
//!
//! Problem: a larger team is not always faster. OpenBLAS' OpenMP build on
//! small matrices, on a machine whose CPUs other work also wants, ran 15x
//! slower alone with 2 threads than with 1 (`bench/mixes/README.md`), and its
//! team spins while it waits, so the CPU time the trial falls back on
//! (`auto/trial.rs`) favours the larger team, and at a DoP of 1 it starts no
//! region, so it reports no work to compare. NuPoCo finds such a team online
//! by profiling each DoP (PACT 2018 §5); the stored solo times per thread
//! count (`coloc solo --threads`) are the same comparison made alone, over
//! whole runs, on this machine.
//!
//! Approach: an app whose DoP lever acts runs at most the thread count whose
//! solo time is least, when that time is shorter than its time at its own
//! team by more than [`MARGIN`] (noise between near-equal times never shrinks
//! a team); else its team. Without stored times, its team.

use coloc_model::metrics::SoloCurves;
use coloc_model::reason::DopWhy;

/// A smaller team is taken only when its solo time is at least this share
/// shorter than the app's time at its own team.
pub const MARGIN: f64 = 0.05;

/// What the solo times say about an app's team: the count to run, and why
/// ([`DopWhy::FastestAlone`]), when it is smaller than `team`.
pub(super) fn fastest(solo: &SoloCurves, name: &str, team: u32) -> (u32, Option<DopWhy>) {
    let Some(curve) = solo.curve(name) else {
        return (team, None);
    };
    // Its time at its own team, or at the largest count measured below it.
    let Some((&k_team, &t_team)) = curve.range(..=team).next_back() else {
        return (team, None);
    };
    let Some((&k, &t)) = curve.range(..=team).min_by(|a, b| a.1.total_cmp(b.1)) else {
        return (team, None);
    };
    if t < t_team * (1.0 - MARGIN) {
        let why = DopWhy::FastestAlone {
            threads: k,
            secs: t,
            team: k_team,
            team_secs: t_team,
        };
        (k, Some(why))
    } else {
        (team, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_solo_time_beyond_the_margin() {
        let mut solo = SoloCurves::default();
        for (name, curve) in [
            ("small-blas", [(1, 0.13), (2, 1.89)]),
            ("scales", [(1, 2.0), (2, 1.1)]),
            ("flat", [(1, 1.0), (2, 1.03)]),
        ] {
            for (k, t) in curve {
                solo.add(name, k, t);
            }
        }
        let (k, why) = fastest(&solo, "small-blas", 2);
        assert_eq!(k, 1);
        assert_eq!(
            why,
            Some(DopWhy::FastestAlone {
                threads: 1,
                secs: 0.13,
                team: 2,
                team_secs: 1.89
            })
        );
        assert_eq!(fastest(&solo, "scales", 2), (2, None));
        // 3% apart: noise, the team stays.
        assert_eq!(fastest(&solo, "flat", 2), (2, None));
        // A team of 4 measured up to 2: compared at 2.
        assert_eq!(fastest(&solo, "small-blas", 4).0, 1);
        assert_eq!(fastest(&solo, "scales", 4), (4, None));
        // Not stored: its team.
        assert_eq!(fastest(&solo, "xz", 2), (2, None));
    }
}
