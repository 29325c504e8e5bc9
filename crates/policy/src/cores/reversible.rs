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
//! of phase within two observation intervals (the one in which the change
//! began and the one that shows it: idle CPUs are lent on an interval's
//! evidence). A cut is as reversible as that when every region of the app
//! lasts at most [`REACTION_INTERVALS`] intervals: then it is undone no later
//! than a partition would react, whatever happens, and its gain (a team that
//! fits its CPUs instead of one packed onto them) comes at no risk beyond the
//! partition's. Where a region may be longer, a cut's worst case grows with
//! the region and has no bound the policy knows, while waiting costs at most
//! the packing overhead of the partition for as long as it lasts; the rule
//! partitions. The bound on an app's regions comes from
//! - earlier runs of the same program, whole (`RegionRecord::bound`): the
//!   regions still to come of a run are not known from the run so far;
//! - this run, which can only show a region longer than the bound: a region
//!   seen to outlast one interval (from its first sighting, or the previous
//!   region's end, to the observation that saw it end) may have lasted up to
//!   two, and one still running after an interval longer.
//!
//! No constant is tuned: the bound is the partition's own reaction time.

use std::time::Duration;

use coloc_model::metrics::RegionRecord;
pub use coloc_model::reason::Reversibility;

use super::lever::RegionClock;

/// Observation intervals a partition needs, at most, to react to a change of
/// phase: the one in which it began and the one that shows it.
pub const REACTION_INTERVALS: u32 = 2;

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
    if let Some(interval) = interval {
        // This run: the longest region seen to end, and the one it is in.
        let inside = if clock.in_parallel && !clock.ended_last {
            clock.quiet()
        } else {
            Duration::ZERO
        };
        let seen = clock.longest.max(inside);
        if seen > interval {
            return Reversibility::Long {
                bound_secs: secs(seen + interval),
                reaction_secs: secs(interval * REACTION_INTERVALS),
                recorded: false,
            };
        }
    }
    let Some(r) = record else {
        return Reversibility::Unknown;
    };
    let reaction = interval.unwrap_or(r.epoch) * REACTION_INTERVALS;
    if r.bound() > reaction {
        Reversibility::Long {
            bound_secs: secs(r.bound()),
            reaction_secs: secs(reaction),
            recorded: true,
        }
    } else {
        Reversibility::Short {
            bound_secs: secs(r.bound()),
            reaction_secs: secs(reaction),
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
        let cases = [
            // No earlier run: the regions to come are unknown, however short
            // those seen so far (the first regions of a program whose main
            // computation is one long region are short).
            (None, Reversibility::Unknown),
            // Never seen at two observations in an earlier run at 100 ms:
            // under 200 ms, the partition's reaction at 100 ms.
            (
                Some(record(0, 100)),
                Reversibility::Short {
                    bound_secs: 0.2,
                    reaction_secs: 0.2,
                },
            ),
            // Seen inside at two observations 100 ms apart: up to 300 ms.
            (
                Some(record(100, 100)),
                Reversibility::Long {
                    bound_secs: 0.3,
                    reaction_secs: 0.2,
                    recorded: true,
                },
            ),
            // Recorded at a 50 ms epoch: under 100 ms, reversible at 100 ms.
            (
                Some(record(0, 50)),
                Reversibility::Short {
                    bound_secs: 0.1,
                    reaction_secs: 0.2,
                },
            ),
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
    fn a_region_this_run_saw_outlast_an_interval_forbids_cuts_whatever_the_record() {
        let r = record(0, 100);
        // In one region at three observations, 200 ms: at least that long.
        let inside = clock(&[(3, true), (3, true), (3, true)]);
        assert_eq!(
            reversibility(Some(&r), &inside, Some(MS(100))),
            Reversibility::Long {
                bound_secs: 0.3,
                reaction_secs: 0.2,
                recorded: false,
            }
        );
        // The same region, once it ended, is remembered.
        let ended = clock(&[(3, true), (3, true), (3, true), (4, false)]);
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
