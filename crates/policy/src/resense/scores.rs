//! Each app's sensitivity vector for the levels ReSensor walks (ReSense §2.2–2.3).

use coloc_model::profile::{self, AppProfile};
use coloc_model::topology::SharedResource;
use coloc_model::{AppId, View};

/// Where scores come from.
#[derive(Clone, Debug)]
pub(crate) enum ScoreSource {
    /// Measured profiles (the `resense` policy).
    Profiles(Vec<AppProfile>),
    /// The same score for every app and level: the paper's ablation of Table VII,
    /// all fixed positive (`[C+]` mappings) or all fixed negative (`[C−]`).
    Fixed(f64),
}

/// Scores (Equation 1, percent of the baseline) smaller than this in magnitude
/// count as 0. The paper reads only the sign and the order of scores, but a
/// score of a few hundredths of a percent says that the level does not matter
/// to the app, not which way it leans: taking its sign would pack an
/// insensitive app into one instance (a memory-bound app scoring +0.00 at the
/// socket level, because the socket configurations of §2.2 keep the memory
/// controllers equal, would sit on one socket's controllers even when alone).
/// 1% is also about the run-to-run spread of real measurements. coloc's choice;
/// the paper leaves it open.
pub(crate) const INSENSITIVE: f64 = 1.0;

/// One score per app of the view and per level, and the names of the apps that
/// have no profile.
///
/// An app without a profile scores 0 at every level, and so does a level its
/// profile could not characterize or where it scores below [`INSENSITIVE`]: Algorithm 1 then maps it "on any core", which
/// here is the least loaded instance — Linux's balancing (§3.5: with all scores 0
/// ReSense performs like the native OS). Being the least sensitive, such apps are
/// placed last and paired with the most sensitive app in case 2.
pub(crate) fn vectors(
    view: &View<'_>,
    levels: &[SharedResource],
    source: &ScoreSource,
) -> (Vec<Vec<f64>>, Vec<AppId>) {
    let mut missing = Vec::new();
    let vectors = view
        .apps
        .iter()
        .map(|app| match source {
            ScoreSource::Fixed(s) => vec![*s; levels.len()],
            ScoreSource::Profiles(profiles) => match profile::find(profiles, &app.spec) {
                Some((p, _)) => levels
                    .iter()
                    .map(|l| {
                        p.score(l)
                            .filter(|s| s.is_finite() && s.abs() >= INSENSITIVE)
                            .unwrap_or(0.0)
                    })
                    .collect(),
                None => {
                    missing.push(app.id);
                    vec![0.0; levels.len()]
                }
            },
        })
        .collect();
    (vectors, missing)
}

/// An insensitive level (score 0) outside a level the app wants to share
/// takes that wish: an instance of an inner level lies inside one instance of
/// each outer level, so sharing the inner one is sharing the outer ones too
/// (Opteron's dies inside its sockets, Harpertown's L2s inside its FSBs).
/// Algorithm 1 reads only the sign of a score, and every score of the
/// paper's Tables IV and V has one; "any core" at the outer level (what a 0
/// means here, [`INSENSITIVE`]) spreads the threads by load over its
/// instances before the inner level could pack them, which Algorithm 1 with
/// the measured sign would not do when the inner level decides. The score
/// becomes the smallest positive number, so the app still sorts as the
/// least sensitive at that level. `scores` hold one vector per app, levels
/// outermost first, as ReSensor walks them.
pub(crate) fn share_outward(scores: &mut [Vec<f64>]) {
    for levels in scores {
        let mut inner_shares = false;
        for s in levels.iter_mut().rev() {
            if *s == 0.0 {
                if inner_shares {
                    *s = f64::MIN_POSITIVE;
                }
            } else {
                inner_shares = *s > 0.0;
            }
        }
    }
}
