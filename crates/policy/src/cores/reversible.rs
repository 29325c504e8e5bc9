//! Reversible first: whether a DoP cut can be taken back as soon as an
//! affinity partition can — the rule every policy that sets a DoP applies
//! before cutting a team (`docs/policies/auto.md`, Reversible first).
//!
//! Problem: a DoP reaches a program when its next region starts and lasts as
//! long as that region. When the reason for a cut goes away (a co-runner
//! exits or goes serial) during a region the cut team started, the team stays
//! cut until the region ends: a wrong cut costs the region's remaining length
//! times the CPUs it leaves idle, and a program whose main computation is one
//! long region pays it for the rest of its run. An affinity partition takes
//! effect at once and is undone at the next decision.
//!
//! Approach: a partition reacts to a co-runner's exit at once and to a change
//! of phase within `R` = [`REACTION_INTERVALS`] observation intervals (the
//! one in which the change began and the one that shows it: idle CPUs are
//! lent on an interval's evidence). A cut reacts when the region it started
//! ends: with the change equally likely at any moment of a region of length
//! `L`, it outlasts its reason by `L/2` on average. A cut is made where that
//! is no longer than the partition's reaction, `L/2 ≤ R`: where every region
//! of the app is known to last at most [`LIMIT_REACTIONS`]` · R` (four
//! intervals). Then a wrong cut is, on average, undone no later than a
//! partition would react, and its gain (a team that fits its CPUs instead of
//! one packed onto them, spinning at its barriers) comes at no cost beyond the
//! partition's. Where a region may be longer, a wrong cut's cost grows with
//! the region and has no bound the policy knows (a program whose main
//! computation is one long region pays it for the rest of its run), while
//! waiting costs at most the packing overhead of the partition for as long as
//! it lasts; the rule partitions. The bound `L` on an app's regions comes from
//! - earlier runs of the same program, whole (`RegionRecord::bound`): the
//!   regions still to come of a run are not known from the run so far;
//! - this run, which can only show a region longer than the bound: a region
//!   seen to outlast one interval (from its first sighting, or the previous
//!   region's end, to the observation that saw it end) may have lasted one
//!   interval more, and one still running at least as long already.
//!
//! No constant is tuned: `R` is the partition's own reaction time, and the
//! factor 2 is the mean of a uniform moment in a region.

use std::time::Duration;

use coloc_model::metrics::{RegionRecord, RegionRecords};
pub use coloc_model::reason::Reversibility;
use coloc_model::{AppView, View};

use super::lever::RegionClock;

/// Observation intervals a partition needs, at most, to react to a change of
/// phase: the one in which it began and the one that shows it.
pub const REACTION_INTERVALS: u32 = 2;

/// The longest region a cut may be made in, in partition reactions: a wrong
/// cut outlasts its reason by half a region on average (module docs).
pub const LIMIT_REACTIONS: u32 = 2;

/// The rule for `app` in `view`, by its program's `records`, its region
/// `clock` in this run and the view's last observation interval.
pub fn of_app(
    records: &RegionRecords,
    clock: &RegionClock,
    view: &View<'_>,
    app: &AppView,
) -> Reversibility {
    let interval = view
        .prev
        .zip(view.last)
        .map(|(p, l)| l.at.saturating_sub(p.at));
    reversibility(records.get(&app.spec.name), clock, interval)
}

/// The rule (module docs): `record` is what whole earlier runs of the
/// program said, `clock` what this run saw, `interval` the current
/// observation interval (None before two observations: the record is then
/// judged against the epoch of the run that made it, and this run has seen
/// nothing yet).
pub fn reversibility(
    record: Option<&RegionRecord>,
    clock: &RegionClock,
    interval: Option<Duration>,
) -> Reversibility {
    let secs = |d: Duration| d.as_secs_f64();
    let limit = |i: Duration| i * REACTION_INTERVALS * LIMIT_REACTIONS;
    if let Some(interval) = interval {
        // This run: the longest region seen to end, and the one it is in.
        let inside = if clock.in_parallel && !clock.ended_last {
            clock.quiet()
        } else {
            Duration::ZERO
        };
        let seen = clock.longest.max(inside);
        if seen > interval && seen + interval > limit(interval) {
            return Reversibility::Long {
                bound_secs: secs(seen + interval),
                limit_secs: secs(limit(interval)),
                recorded: false,
            };
        }
    }
    let Some(r) = record else {
        return Reversibility::Unknown;
    };
    let limit = limit(interval.unwrap_or(r.epoch));
    if r.bound() > limit {
        Reversibility::Long {
            bound_secs: secs(r.bound()),
            limit_secs: secs(limit),
            recorded: true,
        }
    } else {
        Reversibility::Short {
            bound_secs: secs(r.bound()),
            limit_secs: secs(limit),
        }
    }
}

#[cfg(test)]
mod tests {
    use coloc_model::{AppSample, OmpSample};

    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    fn record(longest_ms: u64, epoch_ms: u64) -> RegionRecord {
        RegionRecord {
            runs: 1,
            longest: MS(longest_ms),
            epoch: MS(epoch_ms),
        }
    }

    /// A clock that saw, at 100 ms observations, these (regions ended,
    /// inside a region) samples.
    fn clock(samples: &[(u64, bool)]) -> RegionClock {
        let mut c = RegionClock::default();
        for (k, &(regions, inside)) in samples.iter().enumerate() {
            let s = AppSample {
                omp: Some(OmpSample {
                    in_parallel: inside,
                    regions_completed: regions,
                    dop_seen: Some(2),
                    ..OmpSample::default()
                }),
                ..AppSample::default()
            };
            c.update(&s, MS(100 * k as u64));
        }
        c
    }

    #[test]
    fn the_rule_over_records_and_this_run() {
        // Regions end at every 100 ms observation so far.
        let short = clock(&[(1, true), (3, true), (6, true), (9, true)]);
        let short_ = |bound_secs| Reversibility::Short {
            bound_secs,
            limit_secs: 0.4,
        };
        let cases = [
            // No earlier run: the regions to come are unknown, however short
            // those seen so far (the first regions of a program whose main
            // computation is one long region are short).
            (None, Reversibility::Unknown),
            // At 100 ms intervals a partition reacts within 200 ms, so a cut
            // is made in regions of up to 400 ms. Never seen at two
            // observations in an earlier run at 100 ms: under 200 ms.
            (Some(record(0, 100)), short_(0.2)),
            // Seen inside at three observations 200 ms apart: up to 400 ms.
            (Some(record(200, 100)), short_(0.4)),
            // At four, 300 ms apart: up to 500 ms, too long.
            (
                Some(record(300, 100)),
                Reversibility::Long {
                    bound_secs: 0.5,
                    limit_secs: 0.4,
                    recorded: true,
                },
            ),
            // Recorded at a 50 ms epoch: under 100 ms.
            (Some(record(0, 50)), short_(0.1)),
        ];
        for (rec, want) in cases {
            assert_eq!(
                reversibility(rec.as_ref(), &short, Some(MS(100))),
                want,
                "{rec:?}"
            );
        }
    }

    #[test]
    fn a_region_this_run_saw_outlast_the_limit_forbids_cuts_whatever_the_record() {
        let r = record(0, 100);
        // In one region at five observations, 400 ms: up to 500 ms.
        let inside = clock(&[(3, true), (3, true), (3, true), (3, true), (3, true)]);
        assert_eq!(
            reversibility(Some(&r), &inside, Some(MS(100))),
            Reversibility::Long {
                bound_secs: 0.5,
                limit_secs: 0.4,
                recorded: false,
            }
        );
        // At three, 200 ms: up to 300 ms, still within the limit.
        let three = clock(&[(3, true), (3, true), (3, true)]);
        assert!(reversibility(Some(&r), &three, Some(MS(100))).allows_cut());
        // The long region, once it ended, is remembered.
        let ended = clock(&[
            (3, true),
            (3, true),
            (3, true),
            (3, true),
            (3, true),
            (4, false),
        ]);
        assert!(!reversibility(Some(&r), &ended, Some(MS(100))).allows_cut());
        // A region seen once and ended by the next observation is short.
        let once = clock(&[(3, false), (3, true), (4, false)]);
        assert!(reversibility(Some(&r), &once, Some(MS(100))).allows_cut());
        // Before two observations, the record alone, at its own epoch.
        let none = RegionClock::default();
        assert!(reversibility(Some(&r), &none, None).allows_cut());
        assert_eq!(reversibility(None, &none, None), Reversibility::Unknown);
    }
}
