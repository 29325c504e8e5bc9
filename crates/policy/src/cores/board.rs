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
//! - an app in a region whose DoP cut risks more than keeping its team
//!   whole costs (`cores/reversible.rs`: its regions are not known, from
//!   whole earlier runs or a long one seen in this run, or a co-runner may
//!   leave within one, stranding the cut team beside idle CPUs, at a cost
//!   above the packed team's overhead) gets placement for its whole team,
//!   like a fixed app;
//! - cores left over after every app got its share go to fixed apps that have
//!   more threads than cores ([`Board::finish`]), so that no core idles while
//!   their threads queue (work conservation), before serial apps keep theirs;
//! - a fixed app keeps cores for the team it was asked to start (NuPoCo pins a
//!   non-malleable section's threads to its cores, §3.2), but a core reserved
//!   for a thread that does not exist yet is *lent* ([`Board::finish`]) to an
//!   app whose live team has more threads than cores — a fixed app, or a
//!   parallel section that started with the team of its last DoP before the
//!   smaller DoP of this decision applies (§5.2 sizes the *next* region). A
//!   lent core counts in no DoP, and goes back to its app at the first decision
//!   after its team formed (thread creation triggers one). Without this the
//!   core idles for as long as the team takes to form while another team
//!   queues, which the Manager's work-conservation check reports.

use std::collections::BTreeMap;

use coloc_model::knowledge::derive::{Learned, Provenance};
use coloc_model::metrics::RegionRecords;
use coloc_model::{AppId, AppView, Plan, Reason, View};

use super::lever::{Lever, RegionClock};
use super::reversible::{self, Reversibility, Stakes};
use super::{Core, CoreMap};
use crate::lives::SetClock;

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
    /// Cores reserved for threads of a fixed app that do not exist yet.
    unformed: Vec<Core>,
    /// Cores lent this decision (to their current owner).
    lent: Vec<bool>,
}

impl Board {
    pub fn new(map: &CoreMap) -> Self {
        Self {
            owner: vec![None; map.len()],
            unformed: Vec::new(),
            lent: vec![false; map.len()],
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

    /// How many cores `app` owns: [`Board::owned`]'s length, without the list.
    pub fn count(&self, app: AppId) -> usize {
        self.owner.iter().filter(|o| **o == Some(app)).count()
    }

    /// How many cores `app` owns for itself: those it owns minus those lent
    /// to it, which its DoP must not count.
    pub fn own_count(&self, app: AppId) -> usize {
        (0..self.owner.len())
            .filter(|&c| self.owner[c] == Some(app) && !self.lent[c])
            .count()
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
    /// Ends a decision: cores reserved for threads that do not exist yet go one
    /// at a time, in turn, to apps whose live team has more threads than cores
    /// ([`queued`]), and so do cores nobody took, to fixed apps only (where they
    /// run now first; a parallel section's free cores are its policy's
    /// choice); the free ones left stay with the serial apps that had them.
    /// Cores given here are lent: they count in no DoP ([`Board::own_count`]).
    pub fn finish(&mut self, map: &CoreMap, view: &View<'_>, needs: &[(&AppView, Need)]) {
        loop {
            let mut lent = false;
            for (app, need) in needs {
                if self.count(app.id) >= queued(view, app, *need) {
                    continue;
                }
                // A parallel section's free cores are its policy's choice (a
                // profiling step, a climb): it borrows only unformed ones.
                let free = match need {
                    Need::Fixed { .. } => self.take(app.id, 1, &current_cores(map, app)),
                    _ => Vec::new(),
                };
                let got = match free.first() {
                    Some(&c) => Some(c),
                    None => self.borrow_unformed(app.id),
                };
                if let Some(c) = got {
                    self.lent[c] = true;
                    lent = true;
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

    /// Lends `app`, a parallel section, free cores (where it runs now first)
    /// until it has one per thread of the team it runs now; returns how many.
    /// A policy that just lowered the app's DoP calls this after sizing every
    /// section: the OpenMP runtime applies a DoP at the next region, and until
    /// then the old team on fewer cores would queue at every barrier while the
    /// cores it gave up idle. Lent cores count in no DoP ([`Board::own_count`]).
    pub fn lend_to_team(&mut self, map: &CoreMap, view: &View<'_>, app: &AppView) -> usize {
        let short = queued(view, app, Need::Parallel).saturating_sub(self.count(app.id));
        let got = self.take(app.id, short, &current_cores(map, app));
        for &c in &got {
            self.lent[c] = true;
        }
        got.len()
    }

    /// Moves one core reserved for a team not yet formed to `app`.
    fn borrow_unformed(&mut self, app: AppId) -> Option<Core> {
        let i = self
            .unformed
            .iter()
            .position(|&c| self.owner[c] != Some(app))?;
        let c = self.unformed.remove(i);
        self.owner[c] = Some(app);
        Some(c)
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

/// How many of an app's threads want a CPU now: a serial app's one; a fixed
/// app's live threads, up to the count it is placed for; a parallel section's
/// team as last observed (its live threads when no region was seen running —
/// a region that started since).
fn queued(view: &View<'_>, app: &AppView, need: Need) -> usize {
    let live = app.threads.len();
    match need {
        Need::Serial => 1,
        Need::Fixed { threads } => (threads as usize).min(live),
        Need::Parallel => view
            .region_team(app.id)
            .map_or(live, |team| (team as usize).min(live)),
    }
}

/// The cores an app's current plan gives it (whole cores only).
pub(crate) fn current_cores(map: &CoreMap, app: &AppView) -> Vec<Core> {
    let Some(p) = &app.current else {
        return Vec::new();
    };
    let cpus = p.placement.cpus();
    // Found from its CPUs, a lookup each, rather than by testing every core
    // of the machine (this runs for every app, several times a decision):
    // cores are disjoint, so these are the non-empty cores within them.
    let mut cores: Vec<Core> = cpus
        .iter()
        .filter_map(|cpu| map.core_of(cpu))
        .filter(|&c| map.cores[c].is_subset(&cpus))
        .collect();
    cores.sort_unstable();
    cores.dedup();
    cores
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
        // Cores for the threads it has first, where they run now; the rest
        // wait for its team and are lent meanwhile (`Board::finish`).
        let live = app.threads.len().clamp(1, n);
        let here = current_cores(map, app);
        board.take(app.id, live, &here);
        let ahead = board.take(app.id, n - live, &here);
        board.unformed.extend(ahead);
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

/// Which apps' DoP lever is stuck ([`Lever::Stuck`], the rule in
/// [`super::lever`]) while they run a parallel region with a team other than
/// the DoP their plan asked for (the cores it gives, when it set none) —
/// larger: their threads queue; smaller: cores idle that others could use.
/// Such an app stays stuck until that region ends, and meanwhile needs
/// placement for its team ([`Need::Fixed`]), not a DoP.
#[derive(Clone, Debug, Default)]
pub(crate) struct Levers {
    /// Stuck apps, with their regions completed when they were found stuck.
    stuck: BTreeMap<AppId, u64>,
    /// Each app's region clock.
    clocks: BTreeMap<AppId, RegionClock>,
    /// How long the apps' regions lasted in whole earlier runs.
    records: RegionRecords,
    /// Which records those come from, and which groups were dropped for
    /// predicting badly (docs/knowledge.md): named in the plans whose DoP
    /// rested on them ([`Levers::name_records`]).
    provenance: Provenance,
    /// Apps placed with their whole team at this decision, since a cut of
    /// them would not be reversible ([`Levers::reversible_first`]), and what
    /// the rule found.
    whole: BTreeMap<AppId, Reversibility>,
    /// The running set of apps and the lives of the run's earlier sets: a
    /// cut's chance of outliving its reason (`cores/reversible.rs`).
    sets: SetClock,
}

impl Levers {
    /// With the region records of earlier runs and where they come from
    /// (`PolicyContext::regions`, `PolicyContext::provenance`).
    pub fn from_context(ctx: &crate::PolicyContext) -> Self {
        Self {
            records: ctx.regions.clone(),
            provenance: ctx.provenance.clone(),
            ..Self::default()
        }
    }

    /// Replaces the region records and where they come from (what was
    /// learned changed); the clocks of this run are kept.
    pub fn set_learned(&mut self, learned: &Learned) {
        self.records = learned.regions.clone();
        self.provenance = learned.provenance.clone();
    }

    /// Adds to each app's plan the learned records its DoP rested on (a cut
    /// made where its records say regions are short, a team kept whole by
    /// them) and the groups of its records dropped, as `auto` does
    /// (`Provenance::annotate`). After [`Levers::restore`], whose reasons it
    /// reads.
    pub fn name_records(&self, view: &View<'_>, plan: &mut Plan) {
        self.provenance.annotate(view, plan);
    }

    /// Reversible first (`cores/reversible.rs`): an app whose section would
    /// be sized by a DoP (`need` is [`Need::Parallel`]) while a cut of it
    /// would not be as reversible as a partition keeps its whole team: it is
    /// placed as a fixed app, or, while its section is profiled
    /// (`profiled`: NuPoCo's windows then go by placement), it keeps the
    /// window's cores; either way [`Levers::restore`] gives it no DoP below
    /// its team. Any other need is returned as it is.
    pub fn reversible_first(
        &mut self,
        view: &View<'_>,
        app: &AppView,
        need: Need,
        profiled: bool,
    ) -> Need {
        self.whole.remove(&app.id);
        if need != Need::Parallel || !app.spec.malleable {
            return need;
        }
        let found = self.reversible(view, app);
        if found.allows_cut() {
            return need;
        }
        self.whole.insert(app.id, found);
        if profiled {
            return need;
        }
        Need::Fixed {
            threads: app.threads.len().max(app.threads_requested as usize) as u32,
        }
    }

    /// Takes back, for every app kept whole at this decision, any cut: the
    /// plan's (a profiling window's cores) and one made before, when its
    /// regions were still thought short, which is raised to its team or to
    /// the CPUs the plan gives it, whichever is fewer (no plan asks for more
    /// threads than the CPUs it gives). Each says why ([`Reason::Whole`]).
    pub fn restore(&self, view: &View<'_>, plan: &mut Plan) {
        for p in plan.apps.iter_mut() {
            let Some(&found) = self.whole.get(&p.app) else {
                continue;
            };
            p.reasons.push(Reason::Whole(found));
            let Some(a) = view.apps.iter().find(|a| a.id == p.app) else {
                continue;
            };
            let team = a.threads_requested.max(1);
            let cpus = p.placement.cpus().len() as u32;
            let cap = if cpus == 0 { team } else { team.min(cpus) };
            let before = a.current.as_ref().and_then(|c| c.dop);
            p.dop = before.filter(|&d| d < cap).map(|_| cap);
        }
    }

    /// Whether a cut of `app` is worth what it risks, by its region clock,
    /// its records, the last observation interval and the set of running
    /// apps' expected life (`cores/reversible.rs`).
    pub fn reversible(&self, view: &View<'_>, app: &AppView) -> Reversibility {
        let clock = self.clocks.get(&app.id).cloned().unwrap_or_default();
        let cpus = crate::baseline::topology_cpus(view);
        let stakes = Stakes::equal_share(view, app, cpus, self.sets.ahead(view.now));
        reversible::of_app(&self.records, &clock, view, app, &stakes)
    }

    /// Forgets apps that left, and follows the set of running apps.
    pub fn retain(&mut self, view: &View<'_>) {
        self.sets.follow(view);
        self.whole
            .retain(|id, _| view.apps.iter().any(|a| a.id == *id));
        self.stuck
            .retain(|id, _| view.apps.iter().any(|a| a.id == *id));
        self.clocks
            .retain(|id, _| view.apps.iter().any(|a| a.id == *id));
    }

    /// The team size of `app` while its DoP lever is stuck; None otherwise.
    pub fn stuck(&mut self, map: &CoreMap, view: &View<'_>, app: &AppView) -> Option<u32> {
        let sample = view.last.and_then(|o| o.app(app.id).map(|s| (s, o.at)));
        let clock = self.clocks.entry(app.id).or_default();
        if let Some((s, at)) = sample {
            clock.update(s, at);
        }
        let Some(last) = sample
            .and_then(|(s, _)| s.omp.as_ref())
            .filter(|o| o.in_parallel)
        else {
            self.stuck.remove(&app.id);
            return None;
        };
        match self.stuck.get(&app.id) {
            Some(&r) if r == last.regions_completed => return Some(last.team_size),
            Some(_) => {
                self.stuck.remove(&app.id);
            }
            None => {}
        }
        // What the lever was asked: the plan's DoP, else its cores (cores
        // lent to a team until it shrinks are no part of a DoP).
        let asked = app
            .current
            .as_ref()
            .and_then(|p| p.dop)
            .map_or_else(|| current_cores(map, app).len(), |d| d as usize);
        let managed = app.spec.malleable
            && app
                .current
                .as_ref()
                .is_some_and(|p| !p.placement.cpus().is_empty());
        if managed && clock.lever() == Lever::Stuck && last.team_size as usize != asked {
            self.stuck.insert(app.id, last.regions_completed);
            return Some(last.team_size);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use coloc_model::testutils::running_app;
    use coloc_model::{Topology, Trigger};

    use super::*;

    /// An app's live threads and requested team, and what it needs.
    struct Setup {
        live: u32,
        requested: u32,
        /// Cores the policy's split gives a parallel app; None: a fixed app.
        share: Option<usize>,
    }

    /// One decision on an 8-core machine, three running apps (so a fixed app is
    /// reserved at most 8 / 3 = 2 cores): what each app owns after `finish`,
    /// and how many of those are its own (not lent).
    fn decide(setups: &[Setup]) -> Vec<(usize, usize)> {
        let topo =
            Topology::synthetic("eight", "package:1 numa:1 l3(8M):1 l2(256K):8 core:1").unwrap();
        let map = CoreMap::new(&topo);
        let apps: Vec<AppView> = setups
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let tids: Vec<u32> = (0..s.live).map(|k| 100 * i as u32 + k).collect();
                AppView {
                    threads_requested: s.requested,
                    ..running_app(i as u32, &tids)
                }
            })
            .collect();
        let view = View {
            now: std::time::Duration::ZERO,
            trigger: Trigger::Epoch,
            topology: &topo,
            apps: &apps,
            last: None,
            prev: None,
        };
        let needs: Vec<(&AppView, Need)> = apps
            .iter()
            .zip(setups)
            .map(|(a, s)| match s.share {
                Some(_) => (a, Need::Parallel),
                None => (
                    a,
                    Need::Fixed {
                        threads: s.live.max(s.requested),
                    },
                ),
            })
            .collect();
        let mut board = Board::new(&map);
        assert!(reserve(&map, &mut board, &needs, &[]).is_empty());
        for (a, s) in apps.iter().zip(setups) {
            if let Some(n) = s.share {
                board.take(a.id, n, &[]);
            }
        }
        board.finish(&map, &view, &needs);
        apps.iter()
            .map(|a| (board.owned(a.id).len(), board.own_count(a.id)))
            .collect()
    }

    /// Apps: a parallel section, then a fixed app whose team has not formed
    /// (or has), then a fixed app with `c` live threads. The defect: the
    /// second app's core for a thread not created yet idled while the parallel
    /// section's team (started with the last DoP, 5) queued on its 4 cores.
    #[test]
    fn a_core_reserved_for_a_team_not_yet_formed_is_lent_to_a_queued_team() {
        let par = |live, share| Setup {
            live,
            requested: live,
            share: Some(share),
        };
        let fixed = |live, requested| Setup {
            live,
            requested,
            share: None,
        };
        // (case, apps, (owned, own) per app)
        let cases = [
            (
                "the parallel team queues: it borrows the unformed core",
                [par(5, 4), fixed(1, 4), fixed(2, 2)],
                [(5, 4), (1, 1), (2, 2)],
            ),
            (
                "both queue: the first in turn borrows it, the other waits",
                [par(5, 4), fixed(1, 4), fixed(8, 8)],
                [(5, 4), (1, 1), (2, 2)],
            ),
            (
                "a fixed app queues: it borrows the unformed core",
                [par(4, 4), fixed(1, 4), fixed(8, 8)],
                [(4, 4), (1, 1), (3, 2)],
            ),
            (
                "nobody queues: the core waits for its team",
                [par(4, 4), fixed(1, 4), fixed(2, 2)],
                [(4, 4), (2, 2), (2, 2)],
            ),
            (
                "the team formed: its cores are its own",
                [par(5, 4), fixed(4, 4), fixed(2, 2)],
                [(4, 4), (2, 2), (2, 2)],
            ),
        ];
        for (case, setups, want) in cases {
            assert_eq!(decide(&setups), want, "{case}");
        }
    }
}
