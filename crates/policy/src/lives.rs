//! How long a set of co-running apps is expected to last, from the run's
//! earlier sets (docs/policies/auto.md, "The cost of trying" and "Reversible
//! first").
//!
//! Problem: two decisions pay off only over the rest of a set's life: a
//! trial of auto's arrangement against Linux (`trial.rs`, the cost of trying)
//! and a DoP cut whose reason (a co-runner) may leave before the region the
//! cut team started ends (`cores/reversible.rs`). Neither can know the
//! future of the set.
//!
//! Approach: the time a set still has ahead is the mean life of the run's
//! earlier sets, or the set's age when that is longer (Gott: at the median, a
//! life observed at a random moment has as much ahead of it as behind).
//! Before any set ended only the age is known, and both callers take it.

use std::time::Duration;

use coloc_model::{AppId, View};

/// The lives of the sets that ended so far in a run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Lives {
    /// Sets that ended, and their lives summed, seconds.
    sets: u32,
    lived: f64,
}

impl Lives {
    /// `sets` sets that lived `lived` seconds in all.
    #[cfg(test)]
    pub(crate) fn of(sets: u32, lived: f64) -> Self {
        Self { sets, lived }
    }

    /// Counts a set that lived `secs` seconds.
    pub(crate) fn ended(&mut self, secs: f64) {
        self.sets += 1;
        self.lived += secs;
    }

    /// The time ahead of a set of age `age_secs` (module docs): the mean
    /// life of the earlier sets, or its age when longer; None before any set
    /// ended.
    pub(crate) fn ahead(&self, age_secs: f64) -> Option<f64> {
        (self.sets > 0).then(|| (self.lived / f64::from(self.sets)).max(age_secs))
    }

    /// The time ahead of a set of age `age_secs`, its age alone before any
    /// set ended: what a DoP cut weighs (`cores/reversible.rs`) and the
    /// trial's cost of trying (`trial.rs`).
    pub(crate) fn ahead_or_age(&self, age_secs: f64) -> f64 {
        self.ahead(age_secs).unwrap_or(age_secs)
    }
}

/// The set of apps running together, since when, and the lives of the
/// run's earlier sets of at least two apps (a lone app has no co-runner to
/// lose): what a policy without a trial follows to know a set's expected
/// life.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct SetClock {
    set: Vec<AppId>,
    born: Duration,
    lives: Lives,
}

impl SetClock {
    /// Follows the view's running apps: a change of them ends the set.
    pub(crate) fn follow(&mut self, view: &View<'_>) {
        let mut set: Vec<AppId> = view.running().map(|a| a.id).collect();
        set.sort();
        if set != self.set {
            if self.set.len() >= 2 {
                self.lives
                    .ended(view.now.saturating_sub(self.born).as_secs_f64());
            }
            self.set = set;
            self.born = view.now;
        }
    }

    /// The time the running set has ahead at `now` (module docs), its age
    /// before any earlier set ended.
    pub(crate) fn ahead(&self, now: Duration) -> f64 {
        self.lives
            .ahead_or_age(now.saturating_sub(self.born).as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ahead_is_the_mean_life_or_the_age_when_longer() {
        // (sets, lived s, age s, ahead)
        let cases = [
            (0, 0.0, 3.0, None),
            // Two sets of 5 s on average: a set of 1 s has 5 s ahead.
            (2, 10.0, 1.0, Some(5.0)),
            // One of 12 s has as much ahead as behind.
            (2, 10.0, 12.0, Some(12.0)),
        ];
        for (sets, lived, age, want) in cases {
            assert_eq!(
                Lives::of(sets, lived).ahead(age),
                want,
                "{sets} {lived} {age}"
            );
        }
    }
}
