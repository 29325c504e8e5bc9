//! The last step of auto's decision: each app's plan from the steps'
//! numbers, with its memory policy (`auto/placement/`) and the reasons for
//! what it got (`coloc_model::reason`).

use std::collections::BTreeMap;

use coloc_model::reason::{
    Admission, Dop, DopWhy, Gang, Lever, LeverState, NoGang, Partition, Reason, ToLinux,
};
use coloc_model::{AppId, AppPlan, AppView, CpuSet, Objective, Placement, View};

use super::admission::Admission as Admitted;
use super::arrange::Loan;
use super::{arrange, gang, Arranged, Auto, Cut, Shape, Stock};

/// The numbers of the earlier steps (`auto/mod.rs`).
#[derive(Debug)]
pub(super) struct Steps<'a, 'v> {
    pub stock: &'a Stock<'v>,
    pub arranged: &'a Arranged,
    pub admission: &'a Admitted,
    pub shape: &'a Shape<'v>,
    pub cut: &'a Cut,
    pub used: &'a BTreeMap<AppId, (f64, bool)>,
}

impl Auto {
    /// The plan of one app of the view.
    pub(super) fn plan_app(&self, view: &View<'_>, a: &AppView, s: &Steps<'_, '_>) -> AppPlan {
        if a.is_running() {
            self.plan_running(view, a, s)
        } else {
            self.plan_pending(view, a, s)
        }
    }

    /// A pending app: held, or admitted into its partition when the own
    /// arrangement applies (else left to Linux).
    fn plan_pending(&self, view: &View<'_>, a: &AppView, s: &Steps<'_, '_>) -> AppPlan {
        let rule = s.admission.why.get(&a.id).cloned();
        let admission = |admitted| {
            rule.clone()
                .map(|rule| Reason::Admission(Admission { admitted, rule }))
        };
        if s.admission.held.contains(&a.id) {
            let mut p = AppPlan::hold(a.id);
            p.reasons.extend(admission(false));
            return p;
        }
        let mut p = AppPlan::native(a.id);
        p.reasons.extend(admission(true));
        if let Some(slice) = s.cut.slices.get(&a.id).filter(|_| s.shape.own) {
            p.placement = Placement::Shared(slice.clone());
            p.reasons.push(self.partition(a, slice, s));
            p.reasons.extend(tang(a.id, s));
            self.set_memory(view, a, slice, &mut p);
        }
        p
    }

    /// A running app: left to Linux, gang time-shared, or on its partition
    /// (with a DoP where auto steers it).
    fn plan_running(&self, view: &View<'_>, a: &AppView, s: &Steps<'_, '_>) -> AppPlan {
        let mut p = AppPlan::native(a.id);
        if let Some((sched, why)) = s.arranged.sched.get(&a.id) {
            p.sched = *sched;
            p.reasons.push(Reason::Sched(why.clone()));
        }
        let steered = s.stock.steered.contains(&a.id);
        let team = &s.stock.teams[&a.id];
        if !s.shape.own {
            if let Some(smaller) = &team.smaller {
                // A steered app's smaller team is judged by its solo times,
                // not by the trial: it holds in both arrangements
                // (`auto/team.rs`).
                p.dop = Some(team.threads);
                p.reasons.push(dop(team.threads, smaller.clone()));
            } else if steered {
                // Its whole team back, once its next region starts.
                let whole = a.threads_requested.max(1);
                p.dop = Some(whole);
                p.reasons.push(dop(whole, DopWhy::WholeTeam));
            }
            keep_whole(a, s, &mut p);
            p.reasons.push(Reason::Linux(to_linux(s)));
            p.reasons.push(self.lever(a));
            return p;
        }
        let slice = s.cut.slices.get(&a.id).cloned().unwrap_or_default();
        if s.shape.gang {
            return self.gang_turn(view, a, s, p);
        }
        // An OpenMP team inside a region: its threads (`arrange::loan_pays`).
        let in_region = view.region_team(a.id).map(|n| n.max(1));
        let (cpus_of, loan) = arrange::with_lent(a.id, &slice, s.used, &s.cut.lent, in_region);
        p.placement = Placement::Shared(cpus_of);
        p.reasons.push(self.partition(a, &slice, s));
        p.reasons.extend(tang(a.id, s));
        if steered {
            let d = (slice.len() as u32).clamp(1, team.threads);
            p.dop = Some(d);
            let why = match &team.smaller {
                Some(smaller) if d == team.threads => smaller.clone(),
                _ => DopWhy::Partition,
            };
            p.reasons.push(dop(d, why));
        }
        keep_whole(a, s, &mut p);
        p.reasons.push(self.lever(a));
        if !steered && self.objective == Objective::Makespan {
            p.reasons.push(Reason::NoGang(no_gang(a.id, s)));
        }
        match loan {
            Loan::NoNeed => {}
            Loan::Borrows => p.reasons.push(Reason::Borrowed {
                cpus: s.cut.lent.clone(),
            }),
            Loan::Refused { team, own, with } => p.reasons.push(Reason::NotLent {
                cpus: s.cut.lent.difference(&slice),
                team,
                own,
                with,
            }),
        }
        self.set_memory(view, a, &slice, &mut p);
        p
    }

    /// A gang app's turn (`auto/gang.rs`): its threads spread over every
    /// CPU, at nice 0 in the foreground, else in the background.
    fn gang_turn(
        &self,
        view: &View<'_>,
        a: &AppView,
        s: &Steps<'_, '_>,
        mut p: AppPlan,
    ) -> AppPlan {
        let fore = s.arranged.foreground == Some(a.id);
        let sample = view.last.and_then(|o| o.app(a.id));
        let offset = s.arranged.offsets.get(&a.id).copied().unwrap_or(0);
        let (placement, sched) = gang::arrange(a, sample, (&s.stock.order, offset), fore);
        p.placement = placement;
        p.sched = sched;
        // The gang's nice value replaces the objective's.
        p.reasons.retain(|r| !matches!(r, Reason::Sched(_)));
        p.reasons.push(Reason::Gang(Gang {
            foreground: fore,
            nice: sched.nice.unwrap_or_default(),
            threads: Self::fixed_threads(a),
            cpus: p.placement.cpus(),
            demand: s.stock.demand,
            on: s.stock.cpus,
            sleeps: Some(self.evidence.get(&a.id).map_or(0.0, |e| e.sleeps)),
        }));
        p.reasons.push(self.lever(a));
        p
    }

    /// The app's partition, as a reason.
    fn partition(&self, a: &AppView, slice: &CpuSet, s: &Steps<'_, '_>) -> Reason {
        Reason::Partition(Partition {
            cpus: slice.clone(),
            threads: s.stock.team(a),
            demand: s.shape.demand,
            on: s.stock.cpus,
        })
    }

    /// The memory policy of an app on its partition, and why.
    fn set_memory(&self, view: &View<'_>, a: &AppView, slice: &CpuSet, p: &mut AppPlan) {
        let (policy, why) = self.placer.memory(view, a, slice);
        p.memory = policy;
        p.reasons.extend(why.map(Reason::Memory));
    }

    /// Whether the app's DoP lever acts, as a reason.
    fn lever(&self, a: &AppView) -> Reason {
        let lever = match self.evidence.get(&a.id) {
            Some(e) if a.spec.malleable => e.lever_reason(),
            _ => Lever {
                state: LeverState::NotMalleable,
                regions: 0,
                needed: 0,
                quiet_secs: 0.0,
            },
        };
        Reason::Lever(lever)
    }
}

/// Tang's choice for a latency app whose partition it placed.
fn tang(id: AppId, s: &Steps<'_, '_>) -> Option<Reason> {
    s.cut
        .tang
        .iter()
        .find(|(t, _)| *t == id)
        .map(|(_, c)| Reason::Tang(c.clone()))
}

/// Reversible first (`cores/reversible.rs`): an app whose lever acts but
/// whose cut the rule forbids keeps its whole team, and says why; a cut made
/// before (when its regions still seemed short) is taken back at its next
/// region.
fn keep_whole(a: &AppView, s: &Steps<'_, '_>, p: &mut AppPlan) {
    let Some(&found) = s.stock.whole.get(&a.id) else {
        return;
    };
    p.reasons.push(Reason::Whole(found));
    let team = s.stock.teams[&a.id].threads;
    let before = a.current.as_ref().and_then(|c| c.dop);
    if before.is_some_and(|d| d < team) {
        p.dop = Some(team);
        p.reasons.push(dop(team, DopWhy::WholeTeam));
    }
}

fn dop(dop: u32, why: DopWhy) -> Reason {
    Reason::Dop(Dop { dop, why })
}

/// Why the own arrangement does not apply.
fn to_linux(s: &Steps<'_, '_>) -> ToLinux {
    if s.arranged.srpt.is_some() {
        ToLinux::ShortestFirst
    } else if s.shape.launching || !s.stock.applicable() {
        ToLinux::NothingToActOn {
            apps: s.shape.members.len() as u32,
            demand: s.shape.demand,
            cpus: s.stock.cpus,
        }
    } else {
        ToLinux::Trial
    }
}

/// Why a fixed app on its partition is not gang time-shared.
fn no_gang(id: AppId, s: &Steps<'_, '_>) -> NoGang {
    match s.arranged.gang_why.get(&id) {
        Some(Err(r)) => r.clone(),
        _ if s.stock.running.len() <= s.stock.cpus as usize => NoGang::CpuOfItsOwn,
        _ => NoGang::CoRunner,
    }
}
