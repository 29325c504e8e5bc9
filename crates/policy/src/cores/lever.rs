//! Whether an app's DoP lever acts: the one rule every policy that sets a DoP
//! uses (auto, NuPoCo and the Scalability baseline;
//! `docs/policies/auto.md`, `docs/policies/nupoco.md`).
//!
//! Problem: OpenMP applies a DoP when a parallel region starts (NuPoCo §5.2
//! sizes the *next* region), so a DoP asked of an app reaches it only if its
//! regions end. A program whose work is one long region (worksharing loops
//! inside it) keeps the team it started with: shrinking it strands a small
//! team after its co-runners leave, and shrinking its cores stacks its
//! threads. A policy must know which apps a DoP will reach soon.
//!
//! Approach: from the shim's report (`OmpSample`), per app, the regions
//! completed so far and how long the app has been in its current state — since
//! the last region ended, or since its current region was first seen,
//! whichever is later. Three outcomes:
//! - [`Lever::Stuck`]: the app is inside a region, a whole interval passed
//!   without a region ending, and either fewer than [`MIN_REGIONS`] regions
//!   ever ended (a one-region program, or one with a handful of long regions)
//!   or it has been in this region for its patience: [`PATIENCE`], or
//!   [`LONGEST_FACTOR`] times the longest region seen to end, when that is
//!   longer (an app whose every region lasts 400 ms is not stuck at 250 ms:
//!   its next region comes, and takes the DoP);
//! - [`Lever::Acts`]: otherwise, once at least [`MIN_REGIONS`] regions ended —
//!   including in a serial section, since its next region takes the DoP (a
//!   library such as OpenBLAS at a DoP of 1 runs serially and starts no
//!   region at all while it stays there);
//! - [`Lever::Unknown`]: too few regions so far, and [`Lever::NoChannel`] when
//!   the runtime does not answer through the DoP channel at all.
//!
//! auto steers only apps whose lever [`Lever::Acts`]; the core allocation
//! gives a *stuck* app in a region placement for its team instead of a DoP.
//! The patience was measured on the simulator: treating every region that
//! outlasts one 50 ms epoch as stuck made nupoco alternate between a DoP and
//! the team's placement on BT+SP (nupoco-amd64, half work: total turnaround
//! 26.4 s, against 22.2 s with this patience and native's 23.9 s;
//! `docs/simulator.md`).

use std::time::Duration;

use coloc_model::AppSample;

/// Regions an app must have completed before its lever counts as acting: the
/// evidence that its regions end often.
pub const MIN_REGIONS: u64 = 3;

/// How long an app may go without a region ending (or stay in one region)
/// before its lever counts as stuck: five 50 ms epochs, longer than the
/// regions of programs built from many loop-nest regions, far shorter than a
/// program whose whole computation is one region.
pub const PATIENCE: Duration = Duration::from_millis(250);

/// How many times the longest region seen to end an app may stay in one
/// region before its lever counts as stuck (when that is beyond
/// [`PATIENCE`]): observed region lengths vary by a factor of about 2 with
/// the input and the co-runners.
pub const LONGEST_FACTOR: u32 = 2;

/// What a DoP asked now would do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lever {
    /// The runtime does not answer through the DoP channel.
    NoChannel,
    /// Too little evidence either way.
    Unknown,
    /// A new DoP takes effect at the app's next region, soon.
    Acts,
    /// The app keeps its team for now whatever DoP is asked.
    Stuck,
}

/// One app's region clock, updated at each observation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegionClock {
    /// The app reports through the DoP channel.
    pub steerable: bool,
    pub regions: u64,
    /// Whether the app was inside a region at the last observation.
    pub in_parallel: bool,
    /// When the current state began: the observation that saw the last
    /// region end, or the one that first saw the current region.
    pub since: Option<Duration>,
    /// Whether `regions` grew at the last observation (a region ended during
    /// the last interval).
    pub ended_last: bool,
    /// When the last observation was taken.
    pub seen: Option<Duration>,
    /// The longest span seen from a region's first sighting (or the previous
    /// region's end) to its end: an upper bound on the app's regions.
    pub longest: Duration,
}

impl RegionClock {
    /// Takes the app's sample of the observation made at `at`.
    pub fn update(&mut self, sample: &AppSample, at: Duration) {
        if self.seen == Some(at) {
            return;
        }
        self.seen = Some(at);
        let Some(omp) = &sample.omp else {
            self.steerable = false;
            self.ended_last = false;
            return;
        };
        self.steerable = omp.dop_seen.is_some();
        self.ended_last = omp.regions_completed > self.regions || self.since.is_none();
        if self.ended_last && self.in_parallel {
            if let Some(since) = self.since {
                self.longest = self.longest.max(at.saturating_sub(since));
            }
        }
        let entered = omp.in_parallel && !self.in_parallel;
        if self.ended_last || entered {
            self.since = Some(at);
        }
        self.regions = omp.regions_completed;
        self.in_parallel = omp.in_parallel;
    }

    /// How long the app has been in its current state, at the last
    /// observation.
    pub fn quiet(&self) -> Duration {
        match (self.seen, self.since) {
            (Some(seen), Some(since)) => seen.saturating_sub(since),
            _ => Duration::ZERO,
        }
    }

    /// How long the app may stay in one region before its lever counts as
    /// stuck (module docs).
    pub fn patience(&self) -> Duration {
        PATIENCE.max(self.longest * LONGEST_FACTOR)
    }

    /// The rule (module docs).
    pub fn lever(&self) -> Lever {
        lever(
            self.steerable,
            self.regions,
            self.in_parallel,
            self.ended_last,
            self.quiet(),
            self.patience(),
        )
    }

    /// Why the lever does or does not act, as data for the plan's reasons.
    pub fn reason(&self) -> coloc_model::reason::Lever {
        use coloc_model::reason::LeverState;
        coloc_model::reason::Lever {
            state: match self.lever() {
                Lever::NoChannel => LeverState::NoChannel,
                Lever::Acts => LeverState::Acts,
                Lever::Unknown => LeverState::Unknown,
                Lever::Stuck => LeverState::Stuck,
            },
            regions: self.regions,
            needed: MIN_REGIONS,
            quiet_secs: self.quiet().as_secs_f64(),
        }
    }
}

/// The rule on its inputs: whether the runtime answers on the DoP channel,
/// the regions completed so far, whether the app is inside a region, whether
/// one ended during the last interval, how long the app has been in its
/// current state, and its patience (module docs).
pub fn lever(
    steerable: bool,
    regions: u64,
    in_parallel: bool,
    ended_last: bool,
    quiet: Duration,
    patience: Duration,
) -> Lever {
    if !steerable {
        Lever::NoChannel
    } else if in_parallel && !ended_last && (regions < MIN_REGIONS || quiet >= patience) {
        Lever::Stuck
    } else if regions >= MIN_REGIONS {
        Lever::Acts
    } else {
        Lever::Unknown
    }
}

#[cfg(test)]
mod tests {
    use coloc_model::OmpSample;

    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn the_rule_over_its_inputs() {
        // (steerable, regions, in a region, ended in the last interval,
        // quiet ms, lever)
        let cases = [
            (false, 100, true, true, 0, Lever::NoChannel),
            (true, 0, true, true, 0, Lever::Unknown),
            (true, 2, true, true, 0, Lever::Unknown),
            // Before MIN_REGIONS, one whole interval in a region is stuck.
            (true, 0, true, false, 50, Lever::Stuck),
            (true, 2, true, false, 50, Lever::Stuck),
            (true, MIN_REGIONS, true, true, 0, Lever::Acts),
            // After MIN_REGIONS, patience.
            (true, 10, true, false, 50, Lever::Acts),
            (true, 10, true, false, 249, Lever::Acts),
            (true, 10, true, false, 250, Lever::Stuck),
            (true, 10, true, false, 5000, Lever::Stuck),
            // A region ended in the last interval: never stuck.
            (true, 10, true, true, 5000, Lever::Acts),
            // In a serial section the next region takes the DoP, however
            // long it has been; before MIN_REGIONS it is unknown.
            (true, 10, false, false, 5000, Lever::Acts),
            (true, 0, false, false, 5000, Lever::Unknown),
            (true, 2, false, false, 50, Lever::Unknown),
        ];
        for (steerable, regions, par, ended, quiet, want) in cases {
            assert_eq!(
                lever(steerable, regions, par, ended, MS(quiet), PATIENCE),
                want,
                "{steerable} {regions} {par} {ended} {quiet}"
            );
        }
    }

    fn sample(regions: u64, in_parallel: bool) -> AppSample {
        AppSample {
            omp: Some(OmpSample {
                in_parallel,
                team_size: 2,
                regions_completed: regions,
                iterations_completed: 0,
                parallel_ns: 0,
                max_threads_asked: 0,
                dop_seen: Some(2),
            }),
            ..AppSample::default()
        }
    }

    /// The clock over a scripted run, 50 ms observations: (regions,
    /// in_parallel) per observation and the lever after it.
    #[test]
    fn the_clock_over_observations() {
        let script = [
            // The first observation is no evidence of a long region.
            ((0, true), Lever::Unknown),
            ((0, true), Lever::Stuck),
            ((3, true), Lever::Acts),
            ((6, true), Lever::Acts),
            // Quiet in one region: acts until PATIENCE has passed.
            ((6, true), Lever::Acts),
            ((6, true), Lever::Acts),
            ((6, true), Lever::Acts),
            ((6, true), Lever::Acts),
            ((6, true), Lever::Stuck),
            // The region ends: acts again; a serial section counts from the
            // region's end, and a new region restarts the clock.
            ((7, false), Lever::Acts),
            ((7, false), Lever::Acts),
            ((7, true), Lever::Acts),
        ];
        let mut c = RegionClock::default();
        for (k, ((regions, par), want)) in script.into_iter().enumerate() {
            c.update(&sample(regions, par), MS(50 * k as u64));
            assert_eq!(c.lever(), want, "observation {k}: {c:?}");
        }
        // The same observation twice changes nothing.
        let before = c.clone();
        c.update(&sample(99, false), MS(50 * 11));
        assert_eq!(c, before);
        // Regions of 400 ms: once one was seen to end, the patience is twice
        // that, so the next 400 ms region does not count as stuck.
        let mut c = RegionClock::default();
        let mut regions = 0;
        for k in 0..40u64 {
            // A region ends every 8th observation (400 ms).
            if k % 8 == 7 {
                regions += 1;
            }
            c.update(&sample(regions, true), MS(50 * k));
            if regions >= MIN_REGIONS {
                assert_eq!(c.lever(), Lever::Acts, "observation {k}: {c:?}");
            }
        }
        assert!(c.patience() >= MS(800), "{c:?}");
        // No OpenMP report: no channel.
        c.update(&AppSample::default(), MS(50 * 12));
        assert_eq!(c.lever(), Lever::NoChannel);
    }
}
