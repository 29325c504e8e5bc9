//! Online profiling (NuPoCo §5.1): the per-app state machine that notices a new
//! parallel section, gives it a profiling window and turns what the window
//! showed into the app's memory request rate (MRR).
//!
//! Sections. coloc sees an app's OpenMP state through the DoP channel
//! (`AppSample::omp`), not the loop being run, so it cannot tell one loop from
//! another as NuPoCo's runtime can. A section starts when an observation shows
//! the app in a parallel region after it was last seen serial, or when its
//! thread count grows (an OpenMP team is being created). Regions that follow
//! each other without a serial sample in between count as one section. NuPoCo
//! profiles each new loop once and skips profiling on later invocations; coloc
//! profiles an app's first section and then any section that starts when its
//! estimate is older than `reprofile_after` (a stand-in for "a loop not seen
//! before").
//!
//! Methods. With hardware counters (`Signals::hw_counters`), one interval in the
//! window at the profiling allocation is enough: its LLC misses per second of
//! CPU time are MRR · CPU Util under the model, which is inverted for MRR
//! (`NumaSystem::mrr_from_request_rate`). Without counters (VMs, containers,
//! this development machine), the FALLBACK fits the model to progress rates at
//! two degrees of parallelism: the window runs at the full share, a second
//! window at half of it (half of each node's cores, so the memory nodes stay the
//! same and only the load per node changes), and the ratio of the two progress
//! rates (iterations per second from consecutive observations, else regions,
//! else progress inside regions: `cores::sample::Unit`; the two in one unit)
//! is matched by the model's speedup (`NumaSystem::mrr_from_speedup`). The method used is
//! kept with the estimate and shown in every plan note. A DoP change reaches an
//! OpenMP app at its next parallel region, so the half window waits (up to
//! `profile_timeout`) for a sample with fewer busy cores; if none comes, the app
//! is marked unmeasured and treated as CPU-bound (MRR 0) until it is profiled
//! again — progress alone cannot say more. A section in one long region,
//! whose DoP lever is stuck, gets its windows by placement instead (its team
//! on half the cores: `Nupoco::profiling`), so its busy cores shrink at once;
//! its progress then comes from inside the region.
//!
//! Memory placement. The window gives the app cores on every memory node so
//! that first touch spreads its data as a solo run would (§5.1); the model then
//! sends an app's requests evenly to all memory nodes, wherever its cores are.
//!
//! One window at a time. §5.1 assigns "all cores of the system" to the new
//! section, and §4 infers a core's rate from a node that holds "only threads
//! of one application", so two sections are never profiled together: a section
//! that wants a window while another app's is open waits for it (on one core,
//! as every other app does during a window) and then gets its own, in the order
//! they asked ([`open_next`]). Two windows at once would put two apps' threads
//! on each node, whose LLC rate §4 divides by its cores, and give each app
//! only part of the machine, so first touch would not spread its data as a
//! solo run does. A window whose section ends before it closes waits again,
//! for the app's next section.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use coloc_model::{AppId, AppView, Trigger, View};

use super::Model;
use crate::cores::sample::{section_sample, SectionSample, Unit};

/// How an app's memory request rate was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// LLC misses per CPU second during the profiling window (§5.1).
    HwCounters,
    /// The model fitted to progress rates at two DoPs (no counters).
    ProgressFit,
    /// The window showed no usable rate; treated as CPU-bound.
    Unmeasured,
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Method::HwCounters => "hw-counters",
            Method::ProgressFit => "progress-fit",
            Method::Unmeasured => "unmeasured",
        })
    }
}

/// An app's memory request rate: requests per second of compute time of one
/// core, to all memory nodes together.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub mrr: f64,
    pub method: Method,
    /// When it was obtained.
    pub at: Duration,
}

/// The two windows of the fallback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The app's whole profiling share.
    Full,
    /// Half of each node's cores of that share.
    Half,
}

impl Step {
    pub fn label(self) -> &'static str {
        match self {
            Step::Full => "full share",
            Step::Half => "half share",
        }
    }
}

/// A progress rate at a layout (busy cores per node), and what it counts.
#[derive(Clone, Debug, PartialEq)]
struct Point {
    layout: Vec<u32>,
    progress: f64,
    unit: Option<Unit>,
}

#[derive(Clone, Debug, PartialEq)]
struct Window {
    /// When the section asked for a window (the order windows open in).
    asked: Duration,
    /// Whether it holds the machine now; false while it waits for another
    /// app's window or for the app's next section.
    open: bool,
    /// When the window first opened (for the timeout).
    began: Option<Duration>,
    /// When the current step's window opened.
    since: Duration,
    step: Step,
    /// The full-share point, once measured (fallback only).
    full: Option<Point>,
}

/// Where an app is in its life as NuPoCo sees it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Phase {
    Serial,
    Profiling(Step),
    /// In a parallel section waiting for another app's window to close.
    Waiting,
    /// In a parallel section with this MRR.
    Parallel(f64),
}

/// The per-app state machine.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Track {
    /// Whether the runtime has ever reported through the DoP channel.
    pub reported: bool,
    parallel: bool,
    threads: usize,
    /// Time of the last observation consumed.
    seen: Option<Duration>,
    window: Option<Window>,
    pub estimate: Option<Estimate>,
}

impl Track {
    /// What the allocator must do for the app now.
    pub fn phase(&self) -> Phase {
        match (&self.window, self.parallel) {
            (_, false) => Phase::Serial,
            (Some(w), true) if w.open => Phase::Profiling(w.step),
            (Some(_), true) => Phase::Waiting,
            (None, true) => Phase::Parallel(self.estimate.map_or(0.0, |e| e.mrr)),
        }
    }

    /// Whether a section starting now is profiled: the app has no estimate, or
    /// an old one.
    fn stale(&self, now: Duration, reprofile_after: Duration) -> bool {
        self.estimate
            .is_none_or(|e| now.saturating_sub(e.at) >= reprofile_after)
    }

    /// Consumes what is new in `view` for `app`.
    pub fn update(&mut self, model: &Model<'_>, view: &View<'_>, app: &AppView) {
        let cfg = model.cfg;
        let last_at = view.last.map(|o| o.at);
        let fresh = last_at.is_some() && last_at != self.seen;
        let omp = view
            .last
            .and_then(|o| o.app(app.id))
            .and_then(|s| s.omp.as_ref());
        // A team forms when the app has more than its main thread: the
        // decision that follows a launch is triggered by the main thread
        // appearing, which is not a parallel section.
        let grew = view.trigger == Trigger::ThreadsChanged(app.id)
            && app.threads.len() > self.threads.max(1);
        self.threads = app.threads.len();
        let was = self.parallel;
        if fresh {
            self.seen = last_at;
            if let Some(o) = omp {
                self.reported = true;
                self.parallel = o.in_parallel;
            }
        }
        self.parallel |= grew;
        let entered = self.parallel && !was;
        let now = view.now;
        if let Some(w) = self.window.as_mut().filter(|_| !self.parallel) {
            w.open = false;
        }
        if entered && self.window.is_none() && self.stale(now, cfg.reprofile_after) {
            self.window = Some(Window {
                asked: now,
                open: false,
                began: None,
                since: now,
                step: Step::Full,
                full: None,
            });
        }
        let Some(w) = self.window.as_mut().filter(|w| w.open) else {
            return;
        };
        let sample = (fresh && self.parallel && now >= w.since + cfg.profile_window)
            .then(|| section_sample(model.map, view, app.id))
            .flatten()
            .filter(|s| s.from >= w.since);
        if let Some(s) = sample {
            if let Some(e) = Self::measure(model, w, &s, now) {
                self.estimate = Some(e);
                self.window = None;
                return;
            }
        }
        let began = w.began.unwrap_or(now);
        if now.saturating_sub(began) >= cfg.profile_timeout {
            self.estimate = Some(Estimate {
                mrr: 0.0,
                method: Method::Unmeasured,
                at: now,
            });
            self.window = None;
        }
    }

    /// Advances the window with a clean sample; returns the estimate once the
    /// method has what it needs.
    fn measure(
        model: &Model<'_>,
        w: &mut Window,
        s: &SectionSample,
        now: Duration,
    ) -> Option<Estimate> {
        let spread = model.spread();
        if let Some(rate) = s.request_rate.filter(|_| model.cfg.use_counters) {
            return Some(Estimate {
                mrr: model.system.mrr_from_request_rate(&s.layout, &spread, rate),
                method: Method::HwCounters,
                at: now,
            });
        }
        let point = Point {
            layout: s.layout.clone(),
            progress: s.progress?,
            unit: s.unit,
        };
        // Rates in different units say nothing of each other: a section
        // that counted regions at the full share and only steps inside a
        // region at the half is measured again from the full share.
        if w.full.as_ref().is_some_and(|f| f.unit != point.unit) {
            w.full = None;
            w.step = Step::Full;
            w.since = now;
            return None;
        }
        match (w.step, &w.full) {
            (Step::Full, _) | (Step::Half, None) => {
                w.full = Some(point);
                w.step = Step::Half;
                w.since = now;
                None
            }
            (Step::Half, Some(full)) => {
                let busy = |l: &[u32]| l.iter().sum::<u32>();
                if busy(&point.layout) >= busy(&full.layout) {
                    // The team has not shrunk yet (DoP changes at a region start).
                    return None;
                }
                Some(Estimate {
                    mrr: model.system.mrr_from_speedup(
                        &full.layout,
                        &point.layout,
                        &spread,
                        full.progress / point.progress,
                    ),
                    method: Method::ProgressFit,
                    at: now,
                })
            }
        }
    }
}

/// Opens the window of the section that asked first, unless one is open
/// (§5.1: the machine goes to one new section at a time). Only a section that
/// is running can open one; its step resumes where it stopped, and its
/// timeout counts from the first time it opened.
pub(crate) fn open_next(tracks: &mut BTreeMap<AppId, Track>, now: Duration) {
    let open = |t: &Track| t.window.as_ref().is_some_and(|w| w.open);
    if tracks.values().any(open) {
        return;
    }
    let next = tracks
        .values_mut()
        .filter(|t| t.parallel)
        .filter_map(|t| t.window.as_mut())
        .min_by_key(|w| w.asked);
    if let Some(w) = next {
        w.began.get_or_insert(now);
        w.open = true;
        w.since = now;
    }
}
