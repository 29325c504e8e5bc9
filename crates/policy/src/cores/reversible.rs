//! Reversible first: whether a DoP cut is worth what it risks, weighed
//! against keeping the team whole in an affinity partition — the rule every
//! policy that sets a DoP applies before cutting a team
//! (`docs/policies/auto.md`, Reversible first).
//!
//! Problem: a DoP reaches a program when its next region starts and lasts as
//! long as that region. When the reason for a cut goes away (a co-runner
//! exits or goes serial) during a region the cut team started, the team stays
//! cut until the region ends, with CPUs idle that it could use; a program
//! whose main computation is one long region pays that for the rest of its
//! run. An affinity partition takes effect at once and is undone at the next
//! decision, but a team packed into fewer CPUs than threads loses part of
//! them (it runs at its slowest member's pace, and spins at its barriers)
//! for as long as it is packed.
//!
//! Approach: the rule weighs the two costs, in CPU-seconds, for a region of
//! length `L` (docs/policies/auto.md, Reversible first, has the derivation):
//! - **a cut** costs, if its reason goes away within the region, the time it
//!   outlasts it beyond a partition's own reaction, `(L/2 − R)⁺` (the change
//!   falls at a uniform moment of the region; a partition reacts within `R` =
//!   [`REACTION_INTERVALS`] observation intervals), times the CPUs it then
//!   leaves idle, `min(n, C) − c` for a team of `n` cut to its share `c` of
//!   `C` CPUs. The chance of that is `L / (L + T)`, `T` the time the set of
//!   co-running apps has ahead (`lives.rs`: the mean life of the run's
//!   earlier sets, or the set's age when longer — the trial's expected life,
//!   its age alone before any set ended);
//! - **keeping the team whole** costs the packed team's overhead `h` on its
//!   share until the next chance to cut, the next region: `h · c · L`. `h`
//!   comes from the barrier model ([`packing_overhead`]): a team runs at its
//!   slowest member's pace, one of `⌈n/c⌉` threads on the most crowded CPU,
//!   `1 − n / (c · ⌈n/c⌉)`, and loses libgomp's spin-then-sleep wait at each
//!   barrier its last interval passed. It is not measured from the team's
//!   own progress per CPU (docs/policies/auto.md, Reversible first, Not
//!   done).
//!
//! A cut is made where its expected cost is below keeping's. Regions that
//! end within `2R` cost a cut nothing beyond the partition's reaction and are
//! cut as before. `L` is the bound from whole earlier runs of the same
//! program (`RegionRecord::bound`), raised by this run once it saw a region
//! outlast an interval (from its first sighting, or the previous region's
//! end, to the observation that saw it end, plus one interval; one still
//! running counts as long as it already lasted) beyond `2R`: this run can
//! show a region long, never short (beside co-runners a region runs longer
//! than alone). A program no whole run recorded is never cut: its regions
//! to come are bounded by nothing — the first regions of a program whose
//! main computation is one long region are short, and a long one seen may
//! be that computation, with more of it to come — and a cut's cost grows
//! with the square of the region's length.
//!
//! No constant is tuned: `R` is the partition's own reaction time, the
//! factor 2 the mean of a uniform moment in a region, `L / (L + T)` Gott's
//! rule for a life with `T` ahead to end within `L`.

use std::time::Duration;

use coloc_model::barrier::spin_wait_s;
use coloc_model::metrics::{RegionRecord, RegionRecords};
pub use coloc_model::reason::{CutCosts, OverheadFrom, Reversibility};
use coloc_model::{AppView, View};

use super::lever::RegionClock;

/// Observation intervals a partition needs, at most, to react to a change of
/// phase: the one in which it began and the one that shows it.
pub const REACTION_INTERVALS: u32 = 2;

/// What a cut of one app puts at stake: its team `team`, its share
/// `share` of the machine's `cpus` CPUs (the DoP a cut gives it), the time
/// `ahead_secs` its set of co-runners has ahead (`lives.rs`), and the
/// overhead of its team packed into that share.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stakes {
    pub team: u32,
    pub share: u32,
    pub cpus: u32,
    pub ahead_secs: f64,
    pub overhead: (f64, OverheadFrom),
}

impl Stakes {
    /// For `app` among the view's running apps on `cpus` CPUs: its team,
    /// an equal share (the policies split the CPUs after the rule, so the
    /// rule takes the split of equals), and the barrier model's overhead at
    /// the barrier rate of its last interval.
    pub fn equal_share(view: &View<'_>, app: &AppView, cpus: u32, ahead_secs: f64) -> Self {
        let running = view.running().count().max(1) as u32;
        let team = app.threads_requested.max(app.threads.len() as u32).max(1);
        let share = (cpus / running).max(1);
        let rate = barrier_rate(view, app);
        Self {
            team,
            share,
            cpus: cpus.max(1),
            ahead_secs,
            overhead: (
                packing_overhead(team, share, cpus, rate.unwrap_or(0.0)),
                OverheadFrom::Model {
                    barriers_per_sec: rate,
                },
            ),
        }
    }
}

/// CPUs' worth of work a bulk-synchronous team of `n` threads gets done on
/// `c` CPUs: all `n` when they fit; packed, it runs at its slowest member's
/// pace, one of `⌈n/c⌉` threads on the most crowded CPU, so `n / ⌈n/c⌉`.
pub fn paced_cpus(n: u32, c: u32) -> f64 {
    if c == 0 {
        return 0.0;
    }
    f64::from(n) / f64::from(n.div_ceil(c).max(1))
}

/// The fraction of `c` CPUs a bulk-synchronous team of `n` threads packed
/// onto them loses: one less its CPUs' worth done ([`paced_cpus`]) over
/// `c`.
pub fn pace_overhead(n: u32, c: u32) -> f64 {
    if c == 0 || n <= c {
        return 0.0;
    }
    1.0 - paced_cpus(n, c) / f64::from(c)
}

/// The clock the rule assumes, GHz: the policy does not see the CPU's, and
/// the papers' machines run at 2.0–3.0 (docs/policies/auto.md, Reversible
/// first).
pub const ASSUMED_GHZ: f64 = 2.4;

/// Linux's time slice for a CPU `cpus` CPUs share out, seconds: the base
/// slice, 0.75 ms, scaled by 1 + ⌊log₂ min(cpus, 8)⌋ (the kernel's default
/// logarithmic tunable scaling): 3 ms from 8 CPUs on.
pub fn linux_slice_s(cpus: u32) -> f64 {
    0.000_75 * f64::from(1 + cpus.clamp(1, 8).ilog2())
}

/// The barrier model's overhead of a team of `n` threads packed onto `c`
/// of `cpus` CPUs, passing `barriers` barriers a second: its slowest
/// member's pace ([`pace_overhead`]) and, at each barrier, libgomp's
/// spin-then-sleep wait for a descheduled teammate
/// ([`coloc_model::barrier::spin_wait_s`], `w`): `b·w` of every `1 + b·w`
/// seconds. Not packed, nothing lost.
pub fn packing_overhead(n: u32, c: u32, cpus: u32, barriers: f64) -> f64 {
    if c == 0 || n <= c {
        return 0.0;
    }
    let bw = barriers.max(0.0) * spin_wait_s(linux_slice_s(cpus), ASSUMED_GHZ);
    1.0 - (1.0 - pace_overhead(n, c)) * (1.0 - bw / (1.0 + bw))
}

/// Barriers a second `app` passed over the view's last interval: its
/// team's steps inside regions (barriers, worksharing ends, chunks and
/// tasks: docs/signals.md, Progress inside a region) and its regions' ends.
/// None where the view has no interval or the app no OpenMP sample.
pub fn barrier_rate(view: &View<'_>, app: &AppView) -> Option<f64> {
    let (prev, last) = view.prev.zip(view.last)?;
    let secs = last.at.saturating_sub(prev.at).as_secs_f64();
    let (p, l) = prev.app(app.id).zip(last.app(app.id))?;
    let (po, lo) = p.omp.as_ref().zip(l.omp.as_ref())?;
    let steps = l
        .omp_steps
        .unwrap_or(0)
        .saturating_sub(p.omp_steps.unwrap_or(0));
    let regions = lo.regions_completed.saturating_sub(po.regions_completed);
    (secs > 0.0).then(|| (steps + regions) as f64 / secs)
}

/// The rule for `app` in `view`, by its program's `records`, its region
/// `clock` in this run, the view's last observation interval and what a
/// cut puts at `stakes`.
pub fn of_app(
    records: &RegionRecords,
    clock: &RegionClock,
    view: &View<'_>,
    app: &AppView,
    stakes: &Stakes,
) -> Reversibility {
    let interval = view
        .prev
        .zip(view.last)
        .map(|(p, l)| l.at.saturating_sub(p.at));
    reversibility(records.get(&app.spec.name), clock, interval, stakes)
}

/// The rule (module docs): `record` is what whole earlier runs of the
/// program said, `clock` what this run saw, `interval` the current
/// observation interval (None before two observations: the record is then
/// judged at the epoch of the run that made it, and this run has seen
/// nothing yet).
pub fn reversibility(
    record: Option<&RegionRecord>,
    clock: &RegionClock,
    interval: Option<Duration>,
    stakes: &Stakes,
) -> Reversibility {
    let seen = interval.and_then(|i| this_run_bound(clock, i));
    let recorded = record.map(RegionRecord::bound);
    // This run can show a region long, never short: its regions to come
    // may be longer than any seen so far.
    let (bound, from_record) = match (recorded, seen) {
        (None, None) => return Reversibility::Unknown,
        // No whole run bounds the regions: the long one seen may be the
        // main computation, with more to come, and a cut's cost grows with
        // the square of a region's length; nothing to weigh it with.
        (None, Some(s)) => {
            return Reversibility::Long {
                bound_secs: s.as_secs_f64(),
                limit_secs: None,
                recorded: false,
                costs: None,
            }
        }
        (Some(r), Some(s)) if s > r => (s, false),
        (Some(r), _) => (r, true),
    };
    let Some(interval) = interval.or(record.map(|r| r.epoch)) else {
        return Reversibility::Unknown;
    };
    let reaction = interval * REACTION_INTERVALS;
    let costs = weigh(bound, reaction, stakes);
    let bound_secs = bound.as_secs_f64();
    // Within 2R a cut risks nothing a partition does not; beyond, it is
    // made only where it saves more than it risks (nothing to save, as for
    // a team that fits its share, is no reason to risk anything).
    if bound <= risk_free(interval) || costs.cut_cpu_secs < costs.keep_cpu_secs {
        Reversibility::Short {
            bound_secs,
            limit_secs: None,
            costs: Some(costs),
        }
    } else {
        Reversibility::Long {
            bound_secs,
            limit_secs: None,
            recorded: from_record,
            costs: Some(costs),
        }
    }
}

/// What this run says of the app's regions: a bound once one was seen to
/// outlast an interval (it may have lasted one interval more) and a cut
/// made in it would outlast a partition's reaction (beyond `2R`); None
/// while every region seen was shorter.
fn this_run_bound(clock: &RegionClock, interval: Duration) -> Option<Duration> {
    let inside = if clock.in_parallel && !clock.ended_last {
        clock.quiet()
    } else {
        Duration::ZERO
    };
    let seen = clock.longest.max(inside);
    (seen > interval && seen + interval > risk_free(interval)).then_some(seen + interval)
}

/// The longest regions a cut risks nothing in beyond a partition's
/// reaction `R` (module docs): `2R`, a cut outlasting its reason by half a
/// region at most.
fn risk_free(interval: Duration) -> Duration {
    2 * interval * REACTION_INTERVALS
}

/// The two costs (module docs) for regions of up to `bound`, a partition
/// reacting within `reaction`.
pub fn weigh(bound: Duration, reaction: Duration, stakes: &Stakes) -> CutCosts {
    let l = bound.as_secs_f64();
    let outlasts = (l / 2.0 - reaction.as_secs_f64()).max(0.0);
    let chance = if l > 0.0 {
        l / (l + stakes.ahead_secs.max(0.0))
    } else {
        0.0
    };
    let idle_cpus = stakes.team.min(stakes.cpus).saturating_sub(stakes.share);
    let (overhead, overhead_from) = stakes.overhead;
    CutCosts {
        ahead_secs: stakes.ahead_secs,
        chance,
        idle_cpus,
        cut_cpu_secs: chance * outlasts * f64::from(idle_cpus),
        overhead,
        overhead_from,
        share_cpus: stakes.share,
        keep_cpu_secs: overhead * f64::from(stakes.share) * l,
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

    /// Two apps of 2 threads on 2 CPUs, sets that live 10 s: a cut to one
    /// CPU leaves one idle; packed, two threads on one CPU lose nothing to
    /// the pace model (h = 0).
    fn pair() -> Stakes {
        Stakes {
            team: 2,
            share: 1,
            cpus: 2,
            ahead_secs: 10.0,
            overhead: (
                pace_overhead(2, 1),
                OverheadFrom::Model {
                    barriers_per_sec: None,
                },
            ),
        }
    }

    /// Three apps of 64 threads on 64 CPUs: a share of 21, h = 1 − 64/84.
    fn three(ahead_secs: f64) -> Stakes {
        Stakes {
            team: 64,
            share: 21,
            cpus: 64,
            ahead_secs,
            overhead: (
                pace_overhead(64, 21),
                OverheadFrom::Model {
                    barriers_per_sec: None,
                },
            ),
        }
    }

    #[test]
    fn the_pace_model_by_threads_and_cpus() {
        // (n, c, h): n/⌈n/c⌉ CPUs' worth of work on c.
        let cases = [
            (2, 2, 0.0),
            (2, 1, 0.0),
            (64, 32, 0.0),
            (64, 21, 1.0 - 64.0 / 84.0),
            (64, 48, 1.0 - 64.0 / 96.0),
            (3, 2, 0.25),
        ];
        for (n, c, h) in cases {
            assert!((pace_overhead(n, c) - h).abs() < 1e-12, "{n} on {c}");
        }
        // (n, c, CPUs' worth): a team of 4 gets 2 CPUs' worth on 2 and on
        // 3 (⌈4/3⌉ = 2 on the most crowded), 4 on 4; one that fits, all.
        let cases = [
            (4, 2, 2.0),
            (4, 3, 2.0),
            (4, 4, 4.0),
            (4, 6, 4.0),
            (3, 2, 1.5),
            (2, 1, 1.0),
            (5, 4, 2.5),
            (1, 0, 0.0),
        ];
        for (n, c, w) in cases {
            assert_eq!(paced_cpus(n, c), w, "{n} on {c}");
        }
    }

    /// The barrier model: at 3 ms slices (8 CPUs and more) and 2.4 GHz a
    /// barrier loses w = 1.25 − 1.25²/6 = 0.990 ms; at 1.5 ms (2 CPUs),
    /// 1.25 − 1.25²/3 = 0.729 ms.
    #[test]
    fn the_barrier_model_by_threads_cpus_and_barriers() {
        assert_eq!(linux_slice_s(2), 0.0015);
        assert_eq!(linux_slice_s(64), 0.003);
        let w64 = 0.00125 - 0.00125 * 0.00125 / 0.006;
        let w2 = 0.00125 - 0.00125 * 0.00125 / 0.003;
        // (n, c, cpus, barriers/s, overhead)
        let cases = [
            // Fits: nothing lost, whatever the barriers.
            (64, 64, 64, 500.0, 0.0),
            // 2 per CPU, no barriers: the pace alone loses nothing.
            (64, 32, 64, 0.0, 0.0),
            // 2 per CPU, 170 barriers/s: b·w / (1 + b·w).
            (64, 32, 64, 170.0, 170.0 * w64 / (1.0 + 170.0 * w64)),
            // 4 on the most crowded CPU of 21: 20/84 lost to the pace, then
            // the spin on what is left.
            (
                64,
                21,
                64,
                170.0,
                1.0 - (64.0 / 84.0) * (1.0 / (1.0 + 170.0 * w64)),
            ),
            // Two threads on one of kvm-2cpu's CPUs, 100 barriers/s.
            (2, 1, 2, 100.0, 100.0 * w2 / (1.0 + 100.0 * w2)),
        ];
        for (n, c, cpus, b, want) in cases {
            let got = packing_overhead(n, c, cpus, b);
            assert!(
                (got - want).abs() < 1e-9,
                "{n} on {c} of {cpus} at {b}/s: {got}"
            );
        }
    }

    #[test]
    fn the_two_costs_of_a_region() {
        // L = 0.5 s, R = 0.1 s: a cut outlasts its reason by 0.15 s beyond
        // the partition; T = 1 s: chance 0.5/1.5; 43 CPUs idle.
        let c = weigh(MS(500), MS(100), &three(1.0));
        assert!((c.chance - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(c.idle_cpus, 43);
        assert!((c.cut_cpu_secs - 0.15 * 43.0 / 3.0).abs() < 1e-9, "{c:?}");
        // Keeping it whole: h · 21 · 0.5 = (20/84) · 10.5 = 2.5.
        assert!((c.keep_cpu_secs - 2.5).abs() < 1e-9, "{c:?}");
        // 2.15 ≤ 2.5: cut. At L = 0.7 s: 0.7/1.7 · 0.25 · 43 = 4.43 against
        // 3.5: keep, until the set has 1.4 s ahead (0.7/2.1 · 0.25 · 43 =
        // 3.58, still above; 2 s: 0.7/2.7 · 0.25 · 43 = 2.79, below).
        let long = |ahead| weigh(MS(700), MS(100), &three(ahead));
        assert!(long(1.0).cut_cpu_secs > long(1.0).keep_cpu_secs);
        assert!(long(1.4).cut_cpu_secs > long(1.4).keep_cpu_secs);
        assert!(long(2.0).cut_cpu_secs <= long(2.0).keep_cpu_secs);
        // Regions within 2R cost a cut nothing beyond the partition's.
        assert_eq!(weigh(MS(200), MS(100), &three(0.0)).cut_cpu_secs, 0.0);
    }

    #[test]
    fn the_rule_over_records_and_this_run() {
        // Regions end at every 100 ms observation so far.
        let short = clock(&[(1, true), (3, true), (6, true), (9, true)]);
        let cases = [
            // No earlier run, none long in this one: the regions to come are
            // unknown, however short those seen so far (the first regions of
            // a program whose main computation is one long region are
            // short).
            (None, None),
            // At 100 ms intervals a partition reacts within 200 ms, so a cut
            // costs nothing more in regions of up to 400 ms. Never seen at
            // two observations in an earlier run at 100 ms: under 200 ms.
            (Some(record(0, 100)), Some((0.2, true))),
            // Seen inside at three observations 200 ms apart: up to 400 ms.
            (Some(record(200, 100)), Some((0.4, true))),
            // At four, 300 ms apart: up to 500 ms: the cut risks
            // 0.5/10.5 · 0.05 · 1 CPU-s, and the pace model sees nothing
            // to save on one CPU: keep.
            (Some(record(300, 100)), Some((0.5, false))),
            // Recorded at a 50 ms epoch: under 100 ms.
            (Some(record(0, 50)), Some((0.1, true))),
        ];
        for (rec, want) in cases {
            let got = reversibility(rec.as_ref(), &short, Some(MS(100)), &pair());
            match (got, want) {
                (Reversibility::Unknown, None) => {}
                (Reversibility::Short { bound_secs, .. }, Some((b, true)))
                | (Reversibility::Long { bound_secs, .. }, Some((b, false))) => {
                    assert!((bound_secs - b).abs() < 1e-9, "{rec:?}: {got:?}");
                }
                _ => panic!("{rec:?}: {got:?}, want {want:?}"),
            }
        }
        // With 64 threads in a share of 21 the same 500 ms record is cut:
        // 0.5/10.5 · 0.05 · 43 = 0.10 against 20/84 · 21 · 0.5 = 2.5.
        let r = record(300, 100);
        assert!(reversibility(Some(&r), &short, Some(MS(100)), &three(10.0)).allows_cut());
    }

    #[test]
    fn a_region_this_run_saw_outlast_the_limit_is_weighed_whatever_the_record() {
        let r = record(0, 100);
        // In one region at five observations, 400 ms: up to 500 ms.
        let inside = clock(&[(3, true), (3, true), (3, true), (3, true), (3, true)]);
        let got = reversibility(Some(&r), &inside, Some(MS(100)), &pair());
        assert!(
            matches!(got, Reversibility::Long { bound_secs, recorded: false, .. } if (bound_secs - 0.5).abs() < 1e-9),
            "{got:?}"
        );
        // With 64 threads in a share of 21 the same region is weighed, at
        // this run's 500 ms, and cut (0.10 CPU-s risked against 2.5 saved).
        let got = reversibility(Some(&r), &inside, Some(MS(100)), &three(10.0));
        assert!(
            matches!(got, Reversibility::Short { bound_secs, costs: Some(_), .. } if (bound_secs - 0.5).abs() < 1e-9),
            "{got:?}"
        );
        // Without a record: long, and not weighed (nothing bounds it).
        assert_eq!(
            reversibility(None, &inside, Some(MS(100)), &three(10.0)),
            Reversibility::Long {
                bound_secs: 0.5,
                limit_secs: None,
                recorded: false,
                costs: None,
            }
        );
        // At three, 200 ms: up to 300 ms, no more than the partition's.
        let three_ = clock(&[(3, true), (3, true), (3, true)]);
        assert!(reversibility(Some(&r), &three_, Some(MS(100)), &pair()).allows_cut());
        // Without a record it is no evidence of short regions: unknown.
        assert_eq!(
            reversibility(None, &three_, Some(MS(100)), &pair()),
            Reversibility::Unknown
        );
        // The long region, once it ended, is remembered.
        let ended = clock(&[
            (3, true),
            (3, true),
            (3, true),
            (3, true),
            (3, true),
            (4, false),
        ]);
        assert!(!reversibility(Some(&r), &ended, Some(MS(100)), &pair()).allows_cut());
        // A region seen once and ended by the next observation is short.
        let once = clock(&[(3, false), (3, true), (4, false)]);
        assert!(reversibility(Some(&r), &once, Some(MS(100)), &pair()).allows_cut());
        // Before two observations, the record alone, at its own epoch.
        let none = RegionClock::default();
        assert!(reversibility(Some(&r), &none, None, &pair()).allows_cut());
        assert_eq!(
            reversibility(None, &none, None, &pair()),
            Reversibility::Unknown
        );
    }
}
