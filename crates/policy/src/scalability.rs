//! The Scalability baseline of NuPoCo's evaluation (PACT 2018 §7.3): "a CPU
//! scalability-based approach ... the hill-climbing algorithm proposed in C3PO
//! [Sasaki et al., PACT 2013] changes the number of assigned cores to the
//! applications based on the measured CPU utilization".
//!
//! Problem: NuPoCo has to be compared with the established way of sizing
//! co-located parallel apps, which looks at how well each app turns cores into
//! progress and ignores the memory system (§2.1; §7.4 finds it suffers from
//! memory contention and sometimes oscillates).
//!
//! Approach: each malleable app in a parallel section climbs on its own. When
//! two consecutive observations show it running at the DoP it was last given
//! (OpenMP applies a new DoP at its next region, so until then there is nothing
//! to judge), its progress rate — worksharing iterations (or regions, or, in a
//! region too long for either to move, progress inside it) per second, in the
//! same unit — is compared with the rate at its previous DoP: if it improved, the app
//! keeps going the same way, otherwise it turns around; then it moves one step
//! (`step` cores). A new app starts from an equal share. When the requests add
//! up to more than the free cores, all are scaled down in proportion. Cores are
//! handed out linearly in topology order, as C3PO and SBMP partition (§2.1),
//! one thread per core. Serial sections get one core, apps whose DoP coloc
//! cannot change get placement only, exactly as under NuPoCo
//! (`cores/board.rs`'s shared reservation rules), so the two differ only in
//! how they size parallel sections. Among those rules: an app whose DoP lever
//! has not acted (one long region, so the climb never sees its new DoP) gets
//! cores for the team it runs until that region ends, and cores nobody uses go
//! to apps whose threads queue. Cores a climb gives up stay lent to the app
//! until its runtime applies the smaller DoP at its next region
//! (`Board::lend_to_team`): NuPoCo's cooperative work scheduler (§6.1)
//! resizes a team at once, OpenMP's only between regions (docs/simulator.md,
//! Limits).

use std::collections::BTreeMap;
use std::time::Duration;

use coloc_model::reason::{self, Admission, AdmissionRule, Reason};
use coloc_model::{AppId, AppPlan, AppView, Plan, Trigger, View};

use crate::cores::board::{current_cores, reserve, Board, Levers, Need};
use crate::cores::sample::{section_sample, Unit};
use crate::cores::{pin_team, CoreMap};
use crate::per_topology::PerTopology;
use crate::Policy;

/// Parameters of the hill climb.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScalabilityConfig {
    /// Cores per step; None = one sixteenth of the machine's cores, at least 1
    /// (4 on NuPoCo's 64-core machine, so a climb crosses it in a few seconds
    /// of 50 ms epochs).
    pub step: Option<u32>,
}

/// One app's climb.
#[derive(Clone, Debug, PartialEq)]
struct Climb {
    /// The DoP it was last given.
    dop: u32,
    /// +1 or −1.
    dir: i32,
    /// The last DoP it was measured at, its progress rate there and what
    /// the rate counts.
    last: Option<(u32, f64, Option<Unit>)>,
    /// Time of the last observation used.
    seen: Option<Duration>,
}

/// C3PO-style hill climbing on the measured progress rate.
#[derive(Debug, Default)]
pub struct Scalability {
    cfg: ScalabilityConfig,
    climbs: BTreeMap<AppId, Climb>,
    levers: Levers,
    /// The core map of the machine it last decided on (`per_topology.rs`).
    map: PerTopology<CoreMap>,
}

impl Scalability {
    pub fn new(cfg: ScalabilityConfig) -> Self {
        Self {
            cfg,
            climbs: BTreeMap::new(),
            levers: Levers::default(),
            map: PerTopology::default(),
        }
    }

    /// With the context's region records of earlier runs, which say where a
    /// DoP cut can be taken back (`cores/reversible.rs`), and where they
    /// come from, named in the reasons of the decisions that rest on them
    /// (docs/knowledge.md).
    pub fn with_context(mut self, ctx: &crate::PolicyContext) -> Self {
        self.levers = Levers::from_context(ctx);
        self
    }

    /// What the app's OpenMP runtime last reported decides its need; a team
    /// forming now is a parallel section already. The decision that follows
    /// its thread creation comes before any observation shows the app in a
    /// region, and the new threads first touch their pages wherever that
    /// decision leaves them: taken for serial, a team of 64 stayed piled on
    /// the serial app's one core until the next epoch, and SP on nupoco-amd64
    /// kept 63 threads' pages on one node for its whole run (docs/simulator.md,
    /// Why `scalability` is slow). NuPoCo's section tracking has the same rule.
    fn need(view: &View<'_>, app: &AppView) -> Need {
        let fixed = Need::Fixed {
            threads: app.threads.len().max(app.threads_requested as usize) as u32,
        };
        if !app.spec.malleable {
            return fixed;
        }
        let last = view.last.and_then(|o| o.app(app.id));
        let forming = view.trigger == Trigger::ThreadsChanged(app.id)
            && app.threads.len() > last.map_or(1, |s| s.threads.len().max(1));
        match last.and_then(|s| s.omp.as_ref()) {
            Some(o) if o.in_parallel || forming => Need::Parallel,
            Some(_) => Need::Serial,
            None if app.threads.len() > 1 => fixed,
            None => Need::Serial,
        }
    }

    /// Advances the climb of `app` if the last interval measured it at its
    /// current DoP; returns the DoP it asks for next.
    fn climb(&mut self, map: &CoreMap, view: &View<'_>, app: AppId, start: u32, max: u32) -> u32 {
        let step = self.cfg.step.unwrap_or((map.len() / 16) as u32).max(1);
        let c = self.climbs.entry(app).or_insert(Climb {
            dop: start,
            dir: 1,
            last: None,
            seen: None,
        });
        let at = view.last.map(|o| o.at);
        if at.is_none() || at == c.seen {
            return c.dop;
        }
        c.seen = at;
        let sample = section_sample(map, view, app).filter(|s| s.team_size == c.dop);
        let Some((rate, unit)) = sample.and_then(|s| Some((s.progress?, s.unit))) else {
            return c.dop;
        };
        // Rates in different units are not compared: a step measured in
        // regions and the next only in progress inside a region (a longer
        // region) keeps the direction.
        if c.last
            .is_some_and(|(d, r, u)| d != c.dop && u == unit && rate <= r)
        {
            c.dir = -c.dir;
        }
        c.last = Some((c.dop, rate, unit));
        let bound = |dir: i32| {
            (i64::from(c.dop) + i64::from(dir) * i64::from(step)).clamp(1, i64::from(max.max(1)))
                as u32
        };
        if bound(c.dir) == c.dop {
            // At an end of the range: the only way is back.
            c.dir = -c.dir;
        }
        c.dop = bound(c.dir);
        c.dop
    }
}

impl Policy for Scalability {
    fn name(&self) -> &'static str {
        "scalability"
    }

    /// The region records of what was learned (the node service's apps
    /// arrive while it runs): where a cut can be taken back.
    fn learned(&mut self, learned: &coloc_model::knowledge::derive::Learned) {
        self.levers.set_learned(learned);
    }

    fn decide(&mut self, view: &View<'_>) -> Plan {
        let map = self.map.get(view.topology, CoreMap::new);
        self.climbs
            .retain(|id, _| view.apps.iter().any(|a| a.id == *id));
        let running: Vec<&AppView> = view.running().collect();
        self.levers.retain(view);
        let needs: Vec<(&AppView, Need)> = running
            .iter()
            .map(|a| match self.levers.stuck(&map, view, a) {
                Some(team) => (*a, Need::Fixed { threads: team }),
                None => (
                    *a,
                    self.levers
                        .reversible_first(view, a, Self::need(view, a), false),
                ),
            })
            .collect();
        let pending: Vec<&AppView> = view.pending().collect();
        let mut board = Board::new(&map);
        let admitted = reserve(&map, &mut board, &needs, &pending);

        let parallel: Vec<&AppView> = needs
            .iter()
            .filter(|(_, n)| *n == Need::Parallel)
            .map(|(a, _)| *a)
            .collect();
        let free = board.free().len() as u32;
        let share = (free / parallel.len().max(1) as u32).max(1);
        let asks: Vec<u32> = parallel
            .iter()
            .map(|a| self.climb(&map, view, a.id, share, free))
            .collect();
        let total: u32 = asks.iter().sum();
        let mut climbed: BTreeMap<AppId, reason::Climb> = BTreeMap::new();
        for (a, ask) in parallel.iter().zip(&asks) {
            let dop = if total > free {
                ((u64::from(*ask) * u64::from(free) / u64::from(total)) as u32).max(1)
            } else {
                *ask
            };
            let got = board.take(a.id, dop as usize, &current_cores(&map, a));
            if let Some(c) = self.climbs.get_mut(&a.id) {
                c.dop = got.len().max(1) as u32;
            }
            climbed.insert(
                a.id,
                reason::Climb {
                    dop: got.len() as u32,
                    last: self
                        .climbs
                        .get(&a.id)
                        .and_then(|c| c.last)
                        .map(|(d, r, _)| (d, r)),
                    keeps: 0,
                },
            );
        }

        // Cores a climb gave up stay with the team until it shrinks.
        for a in &parallel {
            let lent = board.lend_to_team(&map, view, a);
            if let Some(c) = climbed.get_mut(&a.id) {
                c.keeps = lent as u32;
            }
        }
        board.finish(&map, view, &needs);
        let apps = view
            .apps
            .iter()
            .map(|a| {
                if !a.is_running() && !admitted.contains(&a.id) {
                    return AppPlan::hold(a.id).because(Admission {
                        admitted: false,
                        rule: AdmissionRule::NoFreeCore,
                    });
                }
                let need = needs.iter().find(|(x, _)| x.id == a.id).map(|n| n.1);
                // Serial and fixed apps keep their DoP (none is set).
                let dop = (need == Some(Need::Parallel))
                    .then(|| self.climbs.get(&a.id).map_or(1, |c| c.dop));
                AppPlan {
                    placement: pin_team(&map, a, &board.owned(a.id)),
                    dop,
                    reasons: climbed
                        .remove(&a.id)
                        .map(Reason::Climb)
                        .into_iter()
                        .collect(),
                    ..AppPlan::native(a.id)
                }
            })
            .collect();
        let mut plan = Plan::of(apps);
        self.levers.restore(view, &mut plan);
        self.levers.name_records(view, &mut plan);
        plan
    }
}
