//! Who owns which core while a decision is being built, and the reservations
//! that NuPoCo and the Scalability baseline make the same way before they
//! divide the rest among apps in parallel sections.
//!
//! Rules shared by both (NuPoCo §5.2, §7.3):
//! - an app in a serial section gets one core ("applications in serial sections
//!   are assigned a single core");
//! - an app whose thread count coloc cannot change (not malleable, or malleable
//!   but its runtime reports nothing through the DoP channel) gets placement
//!   only: one core per thread up to an equal share of the machine among all
//!   running and pending apps, since
//!   NuPoCo pins the threads of non-malleable sections to assigned cores
//!   (§3.2) and cannot shrink them;
//! - a pending app is admitted while a core is free for it after every running
//!   app has one, and starts on one core (its first section is serial until its
//!   OpenMP team forms); the others wait;
//! - cores that no app takes in a decision stay with the serial app that had
//!   them ([`Board::keep_idle`]): its team sleeps there and resumes in place
//!   when its next region starts, instead of starting piled on one core and
//!   migrating out with cold caches. They are the first to go to any app that
//!   needs them;
//! - an app whose DoP lever has not acted ([`Levers`]) gets placement for the
//!   team it runs, like a fixed app, until its region ends;
//! - cores left over after every app got its share go to fixed apps that have
//!   more threads than cores ([`Board::finish`]), so that no core idles while
//!   their threads queue (work conservation), before serial apps keep theirs.

use std::collections::BTreeMap;
use std::time::Duration;

use coloc_model::{AppId, AppView, View};

use super::{Core, CoreMap};

/// What an app needs from the allocator this decision.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Need {
    /// One core.
    Serial,
    /// Placement only: `threads` cores at most.
    Fixed { threads: u32 },
    /// A share decided by the policy.
    Parallel,
}

/// Core ownership under construction.
#[derive(Clone, Debug)]
pub(crate) struct Board {
    pub owner: Vec<Option<AppId>>,
}

impl Board {
    pub fn new(map: &CoreMap) -> Self {
        Self {
            owner: vec![None; map.len()],
        }
    }

    pub fn free(&self) -> Vec<Core> {
        (0..self.owner.len())
            .filter(|&c| self.owner[c].is_none())
            .collect()
    }

    pub fn owned(&self, app: AppId) -> Vec<Core> {
        (0..self.owner.len())
            .filter(|&c| self.owner[c] == Some(app))
            .collect()
    }

    /// Gives `app` up to `n` free cores: first those of `prefer` (where it runs
    /// now, so nothing moves), then the free ones in topology order.
    pub fn take(&mut self, app: AppId, n: usize, prefer: &[Core]) -> Vec<Core> {
        let mut got = Vec::with_capacity(n);
        let order = prefer.iter().copied().chain(0..self.owner.len());
        for c in order {
            if got.len() == n {
                break;
            }
            if self.owner[c].is_none() {
                self.owner[c] = Some(app);
                got.push(c);
            }
        }
        got
    }
}

impl Board {
    /// Ends a decision: cores nobody took go one at a time, in turn, to fixed
    /// apps with more live threads than cores (where they run now first); the rest
    /// stay with the serial apps that had them.
    pub fn finish(&mut self, map: &CoreMap, needs: &[(&AppView, Need)]) {
        loop {
            let mut lent = false;
            for (app, need) in needs {
                let Need::Fixed { threads } = need else {
                    continue;
                };
                if self.free().is_empty() {
                    break;
                }
                // Threads it has now: a team not formed yet cannot use a core.
                let live = (*threads as usize).min(app.threads.len());
                if self.owned(app.id).len() < live {
                    lent |= !self.take(app.id, 1, &current_cores(map, app)).is_empty();
                }
            }
            if !lent {
                break;
            }
        }
        for (app, need) in needs {
            if *need == Need::Serial {
                self.keep_idle(map, app);
            }
        }
    }

    /// Gives `app` back the cores of its current plan that nobody took.
    fn keep_idle(&mut self, map: &CoreMap, app: &AppView) {
        for c in current_cores(map, app) {
            if self.owner[c].is_none() {
                self.owner[c] = Some(app.id);
            }
        }
    }
}

/// The cores an app's current plan gives it (whole cores only).
pub(crate) fn current_cores(map: &CoreMap, app: &AppView) -> Vec<Core> {
    let Some(p) = &app.current else {
        return Vec::new();
    };
    let cpus = p.placement.cpus();
    (0..map.len())
        .filter(|&c| !map.cores[c].is_empty() && map.cores[c].is_subset(&cpus))
        .collect()
}

/// Reserves cores for serial and fixed apps and admits pending ones; returns
/// the admitted pending apps. `needs` lists every running app with its need;
/// apps needing [`Need::Parallel`] are only counted (each is kept one core).
pub(crate) fn reserve(
    map: &CoreMap,
    board: &mut Board,
    needs: &[(&AppView, Need)],
    pending: &[&AppView],
) -> Vec<AppId> {
    // Pending apps count too, so that fixed apps leave room for arrivals.
    let fair = (map.len() / (needs.len() + pending.len()).max(1)).max(1);
    for (app, need) in needs {
        let n = match need {
            Need::Serial => 1,
            Need::Fixed { threads } => (*threads as usize).clamp(1, fair),
            Need::Parallel => continue,
        };
        board.take(app.id, n, &current_cores(map, app));
    }
    let parallel = needs.iter().filter(|(_, n)| *n == Need::Parallel).count();
    let mut room = board.free().len().saturating_sub(parallel);
    let mut admitted = Vec::new();
    for app in pending {
        if room == 0 {
            break;
        }
        board.take(app.id, 1, &[]);
        admitted.push(app.id);
        room -= 1;
    }
    admitted
}

/// Which apps' DoP lever has not acted. OpenMP applies a DoP when a parallel
/// region starts, so a program whose work is one long region (worksharing
/// loops inside it) keeps the team it started with: shrinking its cores to a
/// smaller DoP stacks its threads, and growing its DoP after a co-runner left
/// never comes. An app is *stuck* when a whole observation interval passed
/// inside one region (no region completed, the shim's report) — before its
/// [`PATIENT_AFTER_REGIONS`]th region, or one seen for [`REGION_PATIENCE`] — with a team other than the
/// cores its plan gives it — larger: its threads queue; smaller: cores
/// idle that others could use; it stays stuck until that region ends, and
/// meanwhile needs placement for its team ([`Need::Fixed`]), not a DoP.
/// Programs with many regions (NPB's loop nests) take a new DoP at their next
/// region, usually within a few epochs; treating each of their regions that
/// outlasts one epoch as stuck made nupoco alternate between a DoP and the
/// team's placement on BT+SP (nupoco-amd64, the mix at half its work: total
/// turnaround 26.4 s, against 22.2 s with the patience and native's 23.9 s).
#[derive(Clone, Debug, Default)]
pub(crate) struct Levers {
    /// Stuck apps, with their regions completed when they were found stuck.
    stuck: BTreeMap<AppId, u64>,
    /// Apps in a parallel region: their regions completed and when that
    /// count was first observed (the region's start, to one observation).
    region: BTreeMap<AppId, (u64, Duration)>,
}

/// How long one region must have been running before a team that differs from
/// its cores counts as stuck: five 50 ms epochs, longer than the regions of
/// programs built from many loop-nest regions, far shorter than a program
/// whose whole computation is one region.
pub(crate) const REGION_PATIENCE: Duration = Duration::from_millis(250);

/// Regions an app must have completed before [`REGION_PATIENCE`] applies: the
/// evidence that its regions end often. An app with fewer (a one-region
/// program, or one with a handful of long regions) is stuck after one interval.
pub(crate) const PATIENT_AFTER_REGIONS: u64 = 3;

impl Levers {
    /// Forgets apps that left.
    pub fn retain(&mut self, view: &View<'_>) {
        self.stuck
            .retain(|id, _| view.apps.iter().any(|a| a.id == *id));
        self.region
            .retain(|id, _| view.apps.iter().any(|a| a.id == *id));
    }

    /// The team size of `app` while its DoP lever is stuck; None otherwise.
    pub fn stuck(&mut self, map: &CoreMap, view: &View<'_>, app: &AppView) -> Option<u32> {
        let omp = |o: Option<&coloc_model::Observation>| {
            o.and_then(|o| o.app(app.id))
                .and_then(|s| s.omp.clone())
                .filter(|s| s.in_parallel)
        };
        let Some(last) = omp(view.last) else {
            self.stuck.remove(&app.id);
            self.region.remove(&app.id);
            return None;
        };
        let seen = view.last.map_or(view.now, |o| o.at);
        let (_, since) = *self
            .region
            .entry(app.id)
            .and_modify(|r| {
                if r.0 != last.regions_completed {
                    *r = (last.regions_completed, seen);
                }
            })
            .or_insert((last.regions_completed, seen));
        match self.stuck.get(&app.id) {
            Some(&r) if r == last.regions_completed => return Some(last.team_size),
            Some(_) => {
                self.stuck.remove(&app.id);
            }
            None => {}
        }
        let prev = omp(view.prev)?;
        let long = prev.regions_completed == last.regions_completed
            && (last.regions_completed < PATIENT_AFTER_REGIONS
                || seen.saturating_sub(since) >= REGION_PATIENCE);
        let cores = current_cores(map, app).len();
        let managed = app.spec.malleable
            && app
                .current
                .as_ref()
                .is_some_and(|p| !p.placement.cpus().is_empty());
        if managed && long && last.team_size as usize != cores {
            self.stuck.insert(app.id, last.regions_completed);
            return Some(last.team_size);
        }
        None
    }
}
