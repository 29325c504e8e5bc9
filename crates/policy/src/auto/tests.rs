//! auto over scripted observations on the 2-CPU fixture machine, 100 ms epochs.
//! Each script says, per tick, how much each app progressed given the DoP auto
//! last asked of it, and checks the plans.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use coloc_model::reason::{
    AdmissionRule, Arrangement, CoRunFrom, DopWhy, Judge, LevelCases, LeverState, Memory,
    PlanReason, Reason, TrialState,
};
use coloc_model::testutils::{fixture_topologies, pending_app, running_app};
use coloc_model::{
    AppClass, AppId, AppSample, AppState, AppView, Observation, OmpSample, Placement, Plan,
    ThreadSample, Topology, Trigger, View,
};

use coloc_model::metrics::RegionRecords;
use coloc_model::reason::Reversibility;

use super::{partitions, Auto, Objective, ART_NICE_STEP, LATENCY_NICE};
use crate::cores::lever::{MIN_REGIONS, PATIENCE};
use crate::trial::{MIN_PAIRS, SETTLE, WINDOW};
use crate::{invariants, note, Policy};

const TICK: Duration = Duration::from_millis(100);

/// Records of earlier runs in which every region of apps 0 to 9 ended
/// within an interval: their DoP may be cut (`cores/reversible.rs`). Every
/// script runs with them unless it says otherwise.
fn short_regions() -> RegionRecords {
    crate::short_regions(TICK)
}

/// What an app did over one tick: regions ended, iterations done, whether it
/// is in a region at the end, and its team.
#[derive(Clone, Copy, Debug)]
struct Tick {
    regions: u64,
    iterations: u64,
    in_parallel: bool,
    team: u32,
    /// CPU time over the tick, ms, of an app without the DoP channel (None:
    /// an OpenMP app reporting through it, CPU time from its team).
    pthreads_cpu_ms: Option<u64>,
    /// Time its threads waited for a CPU over the tick, ms.
    wait_ms: u64,
    /// Voluntary switches its threads made over the tick (sleeps).
    sleeps: u64,
}

/// A pthreads app (no DoP channel) that had `cpu_ms` of CPU over the tick.
fn pthreads(cpu_ms: u64) -> Tick {
    Tick {
        regions: 0,
        iterations: 0,
        in_parallel: false,
        team: 0,
        pthreads_cpu_ms: Some(cpu_ms),
        wait_ms: 0,
        sleeps: 0,
    }
}

/// An app with many short regions: 5 per tick, `iters` iterations, the team it
/// was asked for.
fn loops(iters: u64, team: u32) -> Tick {
    Tick {
        regions: 5,
        iterations: iters,
        in_parallel: true,
        team,
        pthreads_cpu_ms: None,
        wait_ms: 0,
        sleeps: 0,
    }
}

/// An app inside one long region: iterations but no region end.
fn one_region(iters: u64, team: u32) -> Tick {
    Tick {
        regions: 0,
        iterations: iters,
        in_parallel: true,
        team,
        pthreads_cpu_ms: None,
        wait_ms: 0,
        sleeps: 0,
    }
}

struct Script {
    auto: Auto,
    topo: Topology,
    apps: Vec<AppView>,
    prev: Option<Observation>,
    last: Option<Observation>,
    now: Duration,
    /// Cumulative (regions, iterations, run ns, wait ns, sleeps) per app.
    counters: BTreeMap<AppId, (u64, u64, u64, u64, u64)>,
}

impl Script {
    fn new(objective: Objective) -> Self {
        Self {
            auto: Auto::new(objective).with_regions(short_regions()),
            topo: fixture_topologies().pop().expect("kvm-2cpu"),
            apps: Vec::new(),
            prev: None,
            last: None,
            now: Duration::ZERO,
            counters: BTreeMap::new(),
        }
    }

    /// Adds a running app `index` with `threads` threads.
    fn start(&mut self, index: u32, threads: u32, malleable: bool) -> AppId {
        let tids: Vec<u32> = (0..threads).map(|k| 100 * (index + 1) + k).collect();
        let mut a = running_app(index, &tids);
        let mut spec = (*a.spec).clone();
        spec.malleable = malleable;
        a.spec = Arc::new(spec);
        a.arrived_at = self.now;
        a.started_at = Some(self.now);
        self.apps.push(a);
        self.decide(Trigger::Arrival(AppId { app: index, rep: 0 }));
        AppId { app: index, rep: 0 }
    }

    /// App `index` with `threads` threads arrives and waits to be admitted:
    /// the decision its arrival triggers.
    fn arrive(&mut self, index: u32, threads: u32) -> Plan {
        self.apps.push(pending_app(index, threads));
        self.decide(Trigger::Arrival(AppId { app: index, rep: 0 }))
    }

    fn exit(&mut self, id: AppId) -> Plan {
        self.apps.retain(|a| a.id != id);
        self.decide(Trigger::Exit(id))
    }

    fn app_mut(&mut self, id: AppId) -> &mut AppView {
        self.apps.iter_mut().find(|a| a.id == id).unwrap()
    }

    /// The DoP auto asked of `id` last (None: never asked).
    fn asked(&self, id: AppId) -> Option<u32> {
        self.apps
            .iter()
            .find(|a| a.id == id)
            .and_then(|a| a.current.as_ref())
            .and_then(|p| p.dop)
    }

    /// One tick: every app progresses as `f` says, given what was asked of it.
    fn tick(&mut self, f: impl Fn(AppId, Option<u32>) -> Option<Tick>) -> Plan {
        self.tick_placed(|id, asked, _| f(id, asked))
    }

    /// One tick: every running app progresses as `f` says, given the DoP and
    /// the CPUs ("" when left to Linux) its plan in force gives it.
    fn tick_placed(&mut self, f: impl Fn(AppId, Option<u32>, &str) -> Option<Tick>) -> Plan {
        self.now += TICK;
        let mut samples = Vec::new();
        for a in self.apps.iter().filter(|a| a.state == AppState::Running) {
            let asked = self.asked(a.id);
            let placed = a
                .current
                .as_ref()
                .map(|p| p.placement.cpus().to_list())
                .unwrap_or_default();
            let Some(t) = f(a.id, asked, &placed) else {
                continue;
            };
            let c = self.counters.entry(a.id).or_default();
            c.0 += t.regions;
            c.1 += t.iterations;
            c.2 += match t.pthreads_cpu_ms {
                Some(ms) => ms * 1_000_000,
                None => u64::from(t.team.min(2)) * TICK.as_nanos() as u64 / 2,
            };
            c.3 += t.wait_ms * 1_000_000;
            c.4 += t.sleeps;
            samples.push(AppSample {
                app: a.id,
                pid: a.threads[0],
                threads: vec![ThreadSample {
                    tid: a.threads[0],
                    run_ns: c.2,
                    wait_ns: c.3,
                    voluntary_switches: c.4,
                    ..ThreadSample::default()
                }],
                omp: t.pthreads_cpu_ms.is_none().then(|| OmpSample {
                    in_parallel: t.in_parallel,
                    team_size: t.team,
                    regions_completed: c.0,
                    iterations_completed: c.1,
                    parallel_ns: 0,
                    max_threads_asked: 0,
                    dop_seen: Some(asked.unwrap_or(t.team)),
                }),
                ..AppSample::default()
            });
        }
        self.prev = self.last.take();
        self.last = Some(Observation {
            at: self.now,
            apps: samples,
            ..Observation::default()
        });
        self.decide(Trigger::Epoch)
    }

    fn decide(&mut self, trigger: Trigger) -> Plan {
        let view = View {
            now: self.now,
            trigger,
            topology: &self.topo,
            apps: &self.apps,
            last: self.last.as_ref(),
            prev: self.prev.as_ref(),
        };
        let plan = self.auto.decide(&view);
        invariants::check(&view, &plan).expect("auto's plans pass the invariants");
        for p in &plan.apps {
            if let Some(a) = self.apps.iter_mut().find(|a| a.id == p.app) {
                if a.state == AppState::Running {
                    a.current = Some(p.clone());
                }
            }
        }
        plan
    }
}

fn dop(plan: &Plan, id: AppId) -> Option<u32> {
    plan.for_app(id).unwrap().dop
}

/// Every plan auto makes leaves placement to Linux (work conserving).
fn unmanaged(plan: &Plan) -> bool {
    plan.apps
        .iter()
        .all(|p| p.placement == Placement::Unmanaged)
}

/// Ticks until the trial of a run's first set whose apps progress steadily
/// has its verdict: it waits until the set's age pays for a trial (the
/// least a verdict takes, MIN_PAIRS pairs of windows, over twice the chance
/// one half that Linux wins: as long), then MIN_PAIRS pairs of windows (own,
/// then Linux), plus the interval that straddles the set's start and one for
/// the lever's evidence.
const TRIAL_TICKS: u32 = 2 * MIN_PAIRS as u32 * 2 * (SETTLE + WINDOW) + 2;

/// Whether one of the reasons auto gave app `id` is as `f` says.
fn has(plan: &Plan, id: AppId, f: impl Fn(&Reason) -> bool) -> bool {
    plan.for_app(id).is_some_and(|p| p.reasons.iter().any(f))
}

/// Whether some app has a reason as `f` says.
fn any_has(plan: &Plan, f: impl Fn(&Reason) -> bool) -> bool {
    plan.apps.iter().flat_map(|p| &p.reasons).any(f)
}

/// Whether auto admitted app `id`, and by which rule.
fn admission(plan: &Plan, id: AppId) -> Option<(bool, AdmissionRule)> {
    plan.for_app(id)?.reasons.iter().find_map(|r| match r {
        Reason::Admission(a) => Some((a.admitted, a.rule.clone())),
        _ => None,
    })
}

/// Where auto's trial stands.
fn state(plan: &Plan) -> TrialState {
    plan.verdict(Judge::Auto).expect("auto's verdict").state
}

/// Whether auto's verdict is `state` with this ratio over `pairs` pairs.
fn verdict_is(plan: &Plan, state: TrialState, ratio: f64, pairs: usize) -> bool {
    plan.verdict(Judge::Auto).is_some_and(|v| {
        v.state == state
            && v.estimate
                .is_some_and(|e| close(e.ratio, ratio) && e.pairs == pairs)
    })
}

/// Equal to the two decimals a person reads.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 0.005
}

/// The CPUs an app's plan gives it ("" when left to Linux).
fn cpus(plan: &Plan, id: AppId) -> String {
    plan.for_app(id).unwrap().placement.cpus().to_list()
}

/// An app that cannot be made malleable keeps its threads and gets a CPU
/// partition of its own; the malleable one beside it, whose regions end
/// often, is shrunk to the other CPU (2 CPUs, partitions in proportion to 4
/// and 2 threads, at least one CPU each: 1 and 1) as soon as its lever acts.
/// Then Linux alone is measured, and the partitions are kept because the
/// malleable app progresses as well under them (1000 iterations a tick either
/// way).
#[test]
fn a_malleable_app_beside_one_that_cannot_be_made_malleable() {
    let mut s = Script::new(Objective::Makespan);
    let fixed = s.start(0, 4, false);
    let mall = s.start(1, 2, true);
    let mut plans = Vec::new();
    for _ in 0..TRIAL_TICKS + 3 {
        plans.push(s.tick(|id, asked| (id == mall).then(|| loops(1000, asked.unwrap_or(2)))));
    }
    for p in &plans {
        assert_eq!(dop(p, fixed), None, "{}", note(p));
    }
    // Its own arrangement first, then Linux alone with the whole team.
    assert_eq!(dop(&plans[0], mall), Some(1), "{}", note(&plans[0]));
    assert_eq!(cpus(&plans[0], fixed), "0", "{}", note(&plans[0]));
    let linux = plans.iter().find(|p| unmanaged(p)).expect("Linux measured");
    assert_eq!(dop(linux, mall), Some(2), "{}", note(linux));
    let last = plans.last().unwrap();
    assert_eq!(dop(last, mall), Some(1), "{}", note(last));
    assert_eq!(
        (cpus(last, fixed), cpus(last, mall)),
        ("0".into(), "1".into())
    );
    assert_eq!(state(last), TrialState::OwnKept, "{}", note(last));
    assert!(
        has(last, fixed, |r| matches!(r, Reason::Partition(p)
            if p.cpus.to_list() == "0" && p.threads == 4))
            && has(last, fixed, |r| matches!(r, Reason::Lever(l)
                if l.state == LeverState::NotMalleable)),
        "{}",
        note(last)
    );
}

/// A malleable program whose work is one long region never has its DoP
/// lowered (it would keep the smaller team for the rest of its run): it gets
/// placement for its whole team instead, and is left to Linux with its whole
/// team the moment its co-runner exits.
#[test]
fn one_region_that_outlives_its_co_runner_keeps_its_team() {
    let mut s = Script::new(Objective::Makespan);
    let long = s.start(0, 2, true);
    let early = s.start(1, 2, true);
    for _ in 0..TRIAL_TICKS {
        let p = s.tick(|id, asked| {
            Some(if id == long {
                one_region(500, 2)
            } else {
                loops(1000, asked.unwrap_or(2))
            })
        });
        assert!(dop(&p, long).is_none_or(|d| d == 2), "{}", note(&p));
    }
    let p = s.exit(early);
    assert!(dop(&p, long).is_none_or(|d| d == 2), "{}", note(&p));
    assert!(unmanaged(&p), "{}", note(&p));
    for _ in 0..3 {
        let p = s.tick(|_, _| Some(one_region(1000, 2)));
        assert!(dop(&p, long).is_none_or(|d| d == 2), "{}", note(&p));
        assert!(
            has(&p, long, |r| matches!(r, Reason::Linux(_)))
                && has(&p, long, |r| matches!(r, Reason::Lever(l)
                    if l.state == LeverState::Stuck && l.regions == 0)),
            "{}",
            note(&p)
        );
    }
}

/// Reversible first (`cores/reversible.rs`): on a first run, with no record
/// of how long the programs' regions last, auto cuts no team though both
/// levers act (a program's first regions say nothing of its main
/// computation's), partitions them instead, and says why.
#[test]
fn a_first_run_cuts_no_team_and_partitions_instead() {
    let mut s = Script::new(Objective::Makespan);
    s.auto = Auto::new(Objective::Makespan);
    let a = s.start(0, 2, true);
    let b = s.start(1, 2, true);
    let mut plans = Vec::new();
    for _ in 0..TRIAL_TICKS + 3 {
        plans.push(s.tick(|_, asked| Some(loops(1000, asked.unwrap_or(2)))));
    }
    for p in &plans {
        for id in [a, b] {
            assert!(dop(p, id).is_none_or(|d| d == 2), "{}", note(p));
        }
    }
    let last = plans.last().unwrap();
    assert_eq!(
        (cpus(last, a), cpus(last, b)),
        ("0".into(), "1".into()),
        "{}",
        note(last)
    );
    for id in [a, b] {
        assert!(
            has(last, id, |r| matches!(
                r,
                Reason::Whole(Reversibility::Unknown)
            )),
            "{}",
            note(last)
        );
    }
}

/// An app that arrives mid-run starts a new trial: it is launched into a
/// partition of its own beside the running app's, both are shrunk to one CPU
/// each once their levers act, Linux alone is measured, and the partitions
/// are kept.
#[test]
fn a_mid_run_arrival_is_tried_afresh() {
    let mut s = Script::new(Objective::Makespan);
    let first = s.start(0, 2, true);
    for _ in 0..4 {
        let p = s.tick(|_, asked| Some(loops(1000, asked.unwrap_or(2))));
        // Alone, it is not oversubscribed: whole team.
        assert_eq!(dop(&p, first), Some(2), "{}", note(&p));
    }
    let mut late = pending_app(1, 2);
    late.spec = Arc::new(coloc_model::AppSpec {
        malleable: true,
        ..(*late.spec).clone()
    });
    s.apps.push(late);
    let p = s.decide(Trigger::Arrival(AppId { app: 1, rep: 0 }));
    let second = AppId { app: 1, rep: 0 };
    assert!(p.for_app(second).unwrap().admit);
    // Launched into its partition, next to the first app's.
    assert_eq!(
        (cpus(&p, first), cpus(&p, second)),
        ("0".into(), "1".into())
    );
    {
        let now = s.now;
        let a = s.app_mut(second);
        a.state = AppState::Running;
        a.started_at = Some(now);
        a.threads = vec![200, 201];
    }
    let p = s.decide(Trigger::ThreadsChanged(second));
    assert_eq!(
        state(&p),
        TrialState::Open(Arrangement::Own),
        "{}",
        note(&p)
    );
    let mut last = p;
    for _ in 0..TRIAL_TICKS + 1 {
        last = s.tick(|_, asked| Some(loops(1000, asked.unwrap_or(2))));
    }
    assert_eq!(dop(&last, first), Some(1), "{}", note(&last));
    assert_eq!(dop(&last, second), Some(1), "{}", note(&last));
}

/// When one of two space-shared apps exits early, the other is asked for its
/// whole team at once (no longer oversubscribed).
#[test]
fn an_early_exit_gives_the_other_app_its_whole_team() {
    let mut s = Script::new(Objective::Makespan);
    let a = s.start(0, 2, true);
    let b = s.start(1, 2, true);
    let mut p = Plan::default();
    for _ in 0..TRIAL_TICKS + 1 {
        p = s.tick(|_, asked| Some(loops(1000, asked.unwrap_or(2))));
    }
    assert_eq!((dop(&p, a), dop(&p, b)), (Some(1), Some(1)), "{}", note(&p));
    let p = s.exit(b);
    assert_eq!(dop(&p, a), Some(2), "{}", note(&p));
}

/// Decisions are checked against outcomes: two apps that progress 20% slower
/// with one thread each than sharing the CPUs with two are given back to Linux
/// (full teams); at 10% faster, space sharing is kept.
#[test]
fn space_sharing_is_kept_only_where_it_does_not_slow_the_apps() {
    for (space_iters, kept) in [(800, false), (1100, true)] {
        let mut s = Script::new(Objective::Makespan);
        let a = s.start(0, 2, true);
        let b = s.start(1, 2, true);
        let mut p = Plan::default();
        for _ in 0..TRIAL_TICKS + 3 {
            p = s.tick(|_, asked| {
                Some(match asked {
                    Some(1) => loops(space_iters, 1),
                    _ => loops(1000, 2),
                })
            });
        }
        let want = if kept { Some(1) } else { Some(2) };
        assert_eq!((dop(&p, a), dop(&p, b)), (want, want), "{}", note(&p));
        let verdict = if kept {
            TrialState::OwnKept
        } else {
            TrialState::BackToLinux
        };
        assert_eq!(state(&p), verdict, "{}", note(&p));
    }
}

/// The lever evidence: regions must have ended, and recently.
#[test]
fn a_lever_acts_only_while_regions_end() {
    let mut s = Script::new(Objective::Makespan);
    let a = s.start(0, 2, true);
    let mut ticks = 0;
    while s.auto.evidence[&a].clock.regions < MIN_REGIONS {
        s.tick(|_, _| Some(loops(10, 2)));
        ticks += 1;
    }
    assert_eq!(ticks, 1, "5 regions a tick");
    assert!(s.auto.evidence[&a].lever_acts());
    let silent = PATIENCE.as_millis() / TICK.as_millis() + 1;
    for _ in 0..silent {
        s.tick(|_, _| Some(one_region(10, 2)));
    }
    assert!(!s.auto.evidence[&a].lever_acts());
}

/// `latency`: batch apps run at nice 10 while a latency-class app runs, and a
/// latency app's team is never shrunk. `art`: nice grows with the CPU time an
/// app has had (the app that had more runs at nice ART_NICE_STEP).
#[test]
fn objectives_set_nice_values() {
    let mut s = Script::new(Objective::Latency);
    let batch = s.start(0, 2, true);
    let lat = AppId { app: 1, rep: 0 };
    s.apps.push(AppView {
        spec: Arc::new(coloc_model::AppSpec {
            class: AppClass::Latency,
            malleable: true,
            ..(*running_app(1, &[200, 201]).spec).clone()
        }),
        ..running_app(1, &[200, 201])
    });
    let mut p = Plan::default();
    for _ in 0..TRIAL_TICKS + 1 {
        p = s.tick(|_, asked| Some(loops(1000, asked.unwrap_or(2))));
    }
    let nice = |p: &Plan, id| p.for_app(id).unwrap().sched.nice;
    assert_eq!(nice(&p, batch), Some(LATENCY_NICE), "{}", note(&p));
    assert_eq!(nice(&p, lat), Some(0));
    assert_eq!(dop(&p, lat), None, "{}", note(&p));
    let p = s.exit(lat);
    assert_eq!(
        nice(&p, batch),
        Some(0),
        "back to nice 0 once the latency app left"
    );

    let mut s = Script::new(Objective::Art);
    let old = s.start(0, 2, true);
    s.tick(|_, _| Some(loops(1000, 2)));
    let young = s.start(1, 1, false);
    let p = s.tick(|id, _| (id == old).then(|| loops(1000, 2)));
    assert_eq!(nice(&p, young), Some(0), "{}", note(&p));
    assert_eq!(nice(&p, old), Some(ART_NICE_STEP), "{}", note(&p));
}

#[test]
fn objectives_parse_by_name() {
    for o in Objective::ALL {
        assert_eq!(o.name().parse::<Objective>(), Ok(o));
    }
    let e = "speed".parse::<Objective>().unwrap_err();
    assert!(e.to_string().contains("`speed`"), "{e}");
    assert_eq!(Objective::default(), Objective::Makespan);
}

/// Two pthreads apps (no DoP channel) whose threads oversubscribe the CPUs get
/// a CPU each from their start; the trial then measures Linux alone and judges
/// by CPU time (their only progress): kept when they had as much CPU on their
/// own CPUs (100 ms a tick each either way), back to Linux when they had 20%
/// less (80 ms on their CPU against 100 ms under Linux).
#[test]
fn pthreads_apps_that_oversubscribe_get_partitions_judged_by_cpu_time() {
    for (own_ms, kept) in [(100, true), (80, false)] {
        let mut s = Script::new(Objective::Makespan);
        let a = s.start(0, 2, false);
        let b = s.start(1, 2, false);
        let first =
            s.tick_placed(|_, _, cpus| Some(pthreads(if cpus.is_empty() { 100 } else { own_ms })));
        assert_eq!(
            (cpus(&first, a), cpus(&first, b)),
            ("0".into(), "1".into()),
            "{}",
            note(&first)
        );
        let mut p = first;
        for _ in 0..TRIAL_TICKS + 2 {
            p = s.tick_placed(|_, _, cpus| {
                Some(pthreads(if cpus.is_empty() { 100 } else { own_ms }))
            });
        }
        if kept {
            assert_eq!(
                (cpus(&p, a), cpus(&p, b)),
                ("0".into(), "1".into()),
                "{}",
                note(&p)
            );
            assert!(verdict_is(&p, TrialState::OwnKept, 1.0, 2), "{}", note(&p));
        } else {
            assert!(unmanaged(&p), "{}", note(&p));
            assert!(
                verdict_is(&p, TrialState::BackToLinux, 0.8, 2),
                "{}",
                note(&p)
            );
        }
        assert!(p.apps.iter().all(|x| x.dop.is_none()), "{}", note(&p));
    }
}

/// Work conservation on an exit: the partitions of two fixed apps end with
/// the decision on the exit of one of them, and the other gets every CPU
/// (left to Linux: its threads no longer oversubscribe them).
#[test]
fn an_early_exit_gives_its_cpus_back_at_once() {
    let mut s = Script::new(Objective::Makespan);
    let a = s.start(0, 2, false);
    let b = s.start(1, 2, false);
    let mut p = Plan::default();
    for _ in 0..TRIAL_TICKS + 1 {
        p = s.tick(|_, _| Some(pthreads(100)));
    }
    assert_eq!(cpus(&p, a), "0", "{}", note(&p));
    let p = s.exit(b);
    assert!(unmanaged(&p), "{}", note(&p));
    assert_eq!(dop(&p, a), None, "{}", note(&p));
}

/// Admission under `makespan`: with every CPU already an app's own, a third
/// app that arrives waits while the running pair's trial is under way or kept
/// its partitions, and is admitted into the CPU freed when one of them exits.
/// Under `art` it starts at once. Once the pair's trial settled on Linux, a
/// newcomer is admitted at once too.
#[test]
fn an_arrival_beyond_the_cpus_waits_for_a_partition() {
    let third = AppId { app: 2, rep: 0 };
    // Kept partitions: the newcomer waits, then takes the freed CPU.
    let mut s = Script::new(Objective::Makespan);
    let a = s.start(0, 2, false);
    let b = s.start(1, 2, false);
    for _ in 0..TRIAL_TICKS + 1 {
        s.tick(|_, _| Some(pthreads(100)));
    }
    let p = s.arrive(2, 2);
    assert!(!p.for_app(third).unwrap().admit, "{}", note(&p));
    assert!(
        matches!(admission(&p, third), Some((false, _))),
        "{}",
        note(&p)
    );
    let p = s.tick(|_, _| Some(pthreads(100)));
    assert!(!p.for_app(third).unwrap().admit, "{}", note(&p));
    let p = s.exit(a);
    assert!(p.for_app(third).unwrap().admit, "{}", note(&p));
    assert_eq!(
        (cpus(&p, b), cpus(&p, third)),
        ("0".into(), "1".into()),
        "{}",
        note(&p)
    );

    // Settled on Linux (20% less CPU on their own CPUs): admitted at once.
    let mut s = Script::new(Objective::Makespan);
    s.start(0, 2, false);
    s.start(1, 2, false);
    for _ in 0..TRIAL_TICKS + 1 {
        s.tick_placed(|_, _, cpus| Some(pthreads(if cpus.is_empty() { 100 } else { 80 })));
    }
    let p = s.arrive(2, 2);
    assert!(p.for_app(third).unwrap().admit, "{}", note(&p));

    // `art` never holds an app back.
    let mut s = Script::new(Objective::Art);
    s.start(0, 2, false);
    s.start(1, 2, false);
    s.tick(|_, _| Some(pthreads(100)));
    let p = s.arrive(2, 2);
    assert!(p.for_app(third).unwrap().admit, "{}", note(&p));
}

/// The partition rule: one CPU each, the rest in proportion to the threads
/// (largest remainder, ties to the earlier app); more apps than CPUs share the
/// least loaded CPU.
#[test]
fn partitions_follow_the_threads() {
    let cases: [(&[u32], &[u32], &[&str]); 6] = [
        (&[0, 1], &[2, 2], &["0", "1"]),
        (&[0, 1], &[4, 2], &["0", "1"]),
        (&[0, 1, 2, 3, 4, 5, 6, 7], &[6, 2], &["0-5", "6-7"]),
        (
            &[0, 1, 2, 3, 4, 5, 6, 7],
            &[1, 1, 1],
            &["0-2", "3-5", "6-7"],
        ),
        (&[0, 1, 2, 3], &[8, 1, 1], &["0-1", "2", "3"]),
        (&[0, 1], &[2, 1, 2], &["0", "1", "1"]),
    ];
    for (cpus, weights, want) in cases {
        let got: Vec<String> = partitions(cpus, weights)
            .iter()
            .map(|c| c.to_list())
            .collect();
        assert_eq!(got, want, "{cpus:?} {weights:?}");
    }
}

/// Work conservation inside the own arrangement: when one of two fixed apps
/// leaves its CPU idle (no CPU time over a tick) while the other's threads
/// wait, the waiting app's partition takes the idle CPU, until the idle app
/// runs again. A third app that arrives while a CPU is idle and no thread
/// waits is admitted at once. A steered app borrows the same way.
#[test]
fn idle_partitions_are_lent_and_let_an_arrival_in() {
    let mut s = Script::new(Objective::Makespan);
    let a = s.start(0, 4, false);
    let b = s.start(1, 2, false);
    let busy = |cpu_ms| Tick {
        wait_ms: 60,
        ..pthreads(cpu_ms)
    };
    let p = s.tick(|id, _| Some(if id == a { busy(100) } else { pthreads(100) }));
    assert_eq!(
        (cpus(&p, a), cpus(&p, b)),
        ("0".into(), "1".into()),
        "{}",
        note(&p)
    );
    let p = s.tick(|id, _| Some(if id == a { busy(100) } else { pthreads(0) }));
    assert_eq!(
        (cpus(&p, a), cpus(&p, b)),
        ("0-1".into(), "1".into()),
        "{}",
        note(&p)
    );
    assert!(
        has(
            &p,
            a,
            |r| matches!(r, Reason::Borrowed { cpus } if cpus.to_list() == "1")
        ),
        "{}",
        note(&p)
    );
    let p = s.tick(|id, _| Some(if id == a { busy(100) } else { pthreads(100) }));
    assert_eq!(cpus(&p, a), "0", "{}", note(&p));

    // An idle CPU and no waiting thread: the newcomer starts at once.
    let third = AppId { app: 2, rep: 0 };
    s.tick(|id, _| Some(pthreads(if id == a { 100 } else { 0 })));
    let p = s.arrive(2, 2);
    assert!(p.for_app(third).unwrap().admit, "{}", note(&p));

    // A steered app borrows too, and keeps its partition's DoP: OpenBLAS at
    // a DoP of 1 whose thread waits on its CPU while its co-runner's idles.
    let mut s = Script::new(Objective::Makespan);
    let blas = s.start(0, 2, true);
    let fixed = s.start(1, 2, false);
    let waits = |asked: Option<u32>| Tick {
        wait_ms: 60,
        ..loops(1000, asked.unwrap_or(2))
    };
    let p = s.tick(|id, asked| {
        Some(if id == blas {
            waits(asked)
        } else {
            pthreads(100)
        })
    });
    assert_eq!(
        (dop(&p, blas), cpus(&p, blas)),
        (Some(1), "0".into()),
        "{}",
        note(&p)
    );
    let p = s.tick(|id, asked| {
        Some(if id == blas {
            waits(asked)
        } else {
            pthreads(0)
        })
    });
    assert_eq!(
        (dop(&p, blas), cpus(&p, blas), cpus(&p, fixed)),
        (Some(1), "0-1".into(), "1".into()),
        "{}",
        note(&p)
    );
    assert!(
        has(
            &p,
            blas,
            |r| matches!(r, Reason::Borrowed { cpus } if cpus.to_list() == "1")
        ),
        "{}",
        note(&p)
    );
}

/// Which loans raise a waiting app's pace (`arrange::loan_pays`): an
/// OpenMP team inside a region gets n / ⌈n/c⌉ CPUs' worth done on c.
#[test]
fn a_loan_is_made_where_it_raises_the_borrowers_pace() {
    // (team inside a region, its CPUs, with the loan, lent)
    let cases = [
        // yorkfield's 4-thread team on a partition of 2: 4/⌈4/3⌉ = 2 on 3,
        // as on 2; 4/⌈4/4⌉ = 4 on 4.
        (Some(4), 2, 3, false),
        (Some(4), 2, 4, true),
        // kvm-2cpu's team of 2 on one CPU: 2/⌈2/2⌉ = 2 on 2 against 1.
        (Some(2), 1, 2, true),
        // 3 on 1: 3/⌈3/2⌉ = 1.5 on 2 against 1.
        (Some(3), 1, 2, true),
        // 8 on 3: 8/⌈8/3⌉ = 2.67; on 4, 8/2 = 4; on 5, 8/⌈8/5⌉ = 4 too
        // (from 4).
        (Some(8), 3, 4, true),
        (Some(8), 4, 5, false),
        // A team that fits waits behind another app's threads: lent.
        (Some(2), 2, 3, true),
        // A pthreads team, or an OpenMP one in a serial phase: one more
        // thread runs per CPU lent.
        (None, 2, 3, true),
    ];
    for (team, own, with, pays) in cases {
        assert_eq!(
            super::arrange::loan_pays(team, own, with),
            pays,
            "{team:?} on {own}, {with} with the loan"
        );
    }
}

/// Idle CPUs let a held app in only when an observation of the running apps
/// shows them: three apps arriving together on 2 CPUs, nothing running yet,
/// start two (a CPU each) and hold the third; and every admitted app fills an
/// idle CPU, so one idle CPU lets one app in.
#[test]
fn idle_cpus_admit_one_app_each_and_only_when_observed() {
    let mut s = Script::new(Objective::Makespan);
    let ids: Vec<AppId> = (0..3).map(|k| AppId { app: k, rep: 0 }).collect();
    for k in 0..3 {
        s.apps.push(pending_app(k, 2));
    }
    let p = s.decide(Trigger::Arrival(ids[2]));
    let admitted: Vec<bool> = ids.iter().map(|id| p.for_app(*id).unwrap().admit).collect();
    assert_eq!(admitted, [true, true, false], "{}", note(&p));

    // One app running on one of 2 CPUs, idle CPU 1, two arrivals: the first
    // takes the free CPU, the second waits.
    let mut s = Script::new(Objective::Makespan);
    let a = s.start(0, 1, false);
    s.tick(|_, _| Some(pthreads(100)));
    s.tick(|_, _| Some(pthreads(100)));
    s.apps.push(pending_app(1, 2));
    s.apps.push(pending_app(2, 2));
    let p = s.decide(Trigger::Arrival(ids[2]));
    assert!(p.for_app(a).is_some());
    assert!(p.for_app(ids[1]).unwrap().admit, "{}", note(&p));
    assert!(!p.for_app(ids[2]).unwrap().admit, "{}", note(&p));
}

/// Admission from stored solo times (`auto/admission.rs`): two 2-thread apps
/// keep their partitions, a third arrives at 1.9 s. It starts when the mix's
/// estimated makespan (its lower bound over the work left) is no longer
/// started now than held until the first CPU frees; without solo times of
/// every app it waits, as by thread counts alone. The newcomer's work is its
/// least solo CPU time where one was recorded (fourth curve), else `k · T(k)`.
#[test]
fn solo_times_start_an_arrival_that_does_not_slow_the_mix() {
    type Curve = &'static [(u32, f64)];
    let cases: [(Curve, Curve, Curve, Curve, bool); 6] = [
        // Beside a short and a long app that do not scale: its work fits
        // before the long one ends.
        (
            &[(1, 5.0), (2, 5.0)],
            &[(1, 20.0), (2, 20.0)],
            &[(1, 4.0), (2, 3.0)],
            &[],
            true,
        ),
        // Two apps that scale fill both CPUs for 36 s; its 30 CPU-s would
        // delay them past 51 s, held it ends by 36 s.
        (
            &[(1, 40.0), (2, 20.0)],
            &[(1, 40.0), (2, 20.0)],
            &[(1, 30.0), (2, 16.0)],
            &[],
            false,
        ),
        // The pair is nearly done: held it ends at 5.6 s, started now 7.9 s.
        (
            &[(1, 4.0), (2, 2.5)],
            &[(1, 10.0), (2, 6.0)],
            &[(1, 8.0), (2, 5.0)],
            &[],
            false,
        ),
        // No solo time of the newcomer: thread counts alone, it waits.
        (
            &[(1, 5.0), (2, 5.0)],
            &[(1, 20.0), (2, 20.0)],
            &[],
            &[],
            false,
        ),
        // Beside the short and the long app, a pipeline: 10 s alone on 1
        // thread, so 10 CPU-s by threads × time, and its work fits before the
        // long app's 18.1 s left: (3.1 + 18.1 + 10) / 2 = 15.6 s.
        (
            &[(1, 5.0), (2, 5.0)],
            &[(1, 20.0), (2, 20.0)],
            &[(1, 10.0), (2, 8.0)],
            &[],
            true,
        ),
        // The same pipeline used 16 CPU-s alone: (3.1 + 18.1 + 16) / 2 =
        // 18.6 s started now, past the 18.1 s held.
        (
            &[(1, 5.0), (2, 5.0)],
            &[(1, 20.0), (2, 20.0)],
            &[(1, 10.0), (2, 8.0)],
            &[(1, 16.0), (2, 16.0)],
            false,
        ),
    ];
    let third = AppId { app: 2, rep: 0 };
    for (a, b, c, c_cpu, starts) in cases {
        let mut solo = coloc_model::metrics::SoloCurves::default();
        for (name, curve) in [("app0", a), ("app1", b), ("app2", c)] {
            for (k, t) in curve {
                solo.add(name, *k, *t);
            }
        }
        for (k, t) in c_cpu {
            solo.add_cpu("app2", *k, *t);
        }
        let mut s = Script::new(Objective::Makespan);
        s.auto = Auto::new(Objective::Makespan)
            .with_regions(short_regions())
            .with_solo(solo);
        s.start(0, 2, false);
        s.start(1, 2, false);
        for _ in 0..TRIAL_TICKS + 1 {
            s.tick(|_, _| Some(pthreads(100)));
        }
        let p = s.arrive(2, 2);
        assert_eq!(
            p.for_app(third).unwrap().admit,
            starts,
            "{a:?} {b:?} {c:?}: {}",
            note(&p)
        );
        let rule = admission(&p, third).map(|(_, rule)| rule);
        let by_solo_times = matches!(rule, Some(AdmissionRule::SoloTimes { .. }));
        if c.is_empty() {
            assert!(
                matches!(
                    rule,
                    Some(AdmissionRule::EveryCpuTaken { apps: 2, cpus: 2 })
                ),
                "{}",
                note(&p)
            );
        } else {
            assert!(by_solo_times, "{}", note(&p));
        }
    }
}

/// What was learned while auto runs (the node service gives it as apps
/// arrive, `Policy::learned`) reaches the next decision as stored solo times
/// do: the arrival of the first case above, held by thread counts alone
/// when nothing was learned, starts by solo times once they are given.
#[test]
fn solo_times_learned_while_running_reach_admission() {
    let mut solo = coloc_model::metrics::SoloCurves::default();
    for (name, curve) in [
        ("app0", [(1, 5.0), (2, 5.0)]),
        ("app1", [(1, 20.0), (2, 20.0)]),
        ("app2", [(1, 10.0), (2, 8.0)]),
    ] {
        for (k, t) in curve {
            solo.add(name, k, t);
        }
    }
    let third = AppId { app: 2, rep: 0 };
    for learned in [false, true] {
        let mut s = Script::new(Objective::Makespan);
        s.start(0, 2, false);
        s.start(1, 2, false);
        for _ in 0..TRIAL_TICKS + 1 {
            s.tick(|_, _| Some(pthreads(100)));
        }
        if learned {
            s.auto.learned(&coloc_model::knowledge::derive::Learned {
                solo: solo.clone(),
                regions: short_regions(),
                ..Default::default()
            });
        }
        let p = s.arrive(2, 2);
        let rule = admission(&p, third).map(|(_, rule)| rule);
        assert_eq!(p.for_app(third).unwrap().admit, learned, "{}", note(&p));
        if learned {
            assert!(
                matches!(rule, Some(AdmissionRule::SoloTimes { .. })),
                "{}",
                note(&p)
            );
        } else {
            assert!(
                matches!(rule, Some(AdmissionRule::EveryCpuTaken { .. })),
                "{}",
                note(&p)
            );
        }
    }
}

/// Solo times that stopped predicting are not used, and the decision says
/// so (docs/knowledge.md, Checked against what happened next): the third
/// app's program ran alone in 10 s with one thread and 8 s with two, three
/// times each, then twice in about double (its input changed). Both of its
/// groups missed twice in a row: dropped, so its arrival is held by thread
/// counts as if nothing were known, and its plan names the dropped groups.
/// Without the change, the same records admit it by solo times and its plan
/// names the records used: how many, of which kind and arrangement.
#[test]
fn solo_times_that_stopped_predicting_are_dropped_and_named() {
    use coloc_model::knowledge::derive::{learned, KnownApp};
    use coloc_model::knowledge::{ProgramKey, Record, Source};
    use coloc_model::reason::records::RecordKind;
    let record = |name: &str, n: i64, threads: u32, wall: f64| {
        Record::solo_time(
            ProgramKey::model(name),
            name.into(),
            format!("{name}/{n}"),
            threads,
            wall,
            Source::Solo,
            1_700_000_000 + n,
        )
    };
    let app = |name: &str, walls: &[(u32, f64)]| KnownApp {
        name: name.into(),
        program: ProgramKey::model(name),
        threads: 2,
        records: walls
            .iter()
            .enumerate()
            .map(|(n, (k, w))| record(name, n as i64, *k, *w))
            .collect(),
    };
    let steady = |one: f64, two: f64| -> Vec<(u32, f64)> {
        [1, 2]
            .into_iter()
            .flat_map(|k| std::iter::repeat_n((k, if k == 1 { one } else { two }), 3))
            .collect()
    };
    let third = AppId { app: 2, rep: 0 };
    for changed in [false, true] {
        let mut walls = steady(10.0, 8.0);
        if changed {
            walls.extend([(1, 20.0), (1, 20.5), (2, 16.0), (2, 16.4)]);
        }
        let known = learned(
            &[
                app("app0", &steady(5.0, 5.0)),
                app("app1", &steady(20.0, 20.0)),
                app("app2", &walls),
            ],
            2,
        );
        assert_eq!(known.solo.curve("app2").is_none(), changed);
        let mut s = Script::new(Objective::Makespan);
        s.start(0, 2, false);
        s.start(1, 2, false);
        for _ in 0..TRIAL_TICKS + 1 {
            s.tick(|_, _| Some(pthreads(100)));
        }
        s.auto.learned(&known);
        let p = s.arrive(2, 2);
        let rule = admission(&p, third).map(|(_, rule)| rule);
        let records = crate::records_named(p.for_app(third).unwrap());
        assert_eq!(records.len(), 1, "{}", note(&p));
        let r = records[0];
        if changed {
            assert!(
                matches!(rule, Some(AdmissionRule::EveryCpuTaken { .. })),
                "{}",
                note(&p)
            );
            assert!(r.used.is_empty(), "{r:?}");
            let dropped: Vec<_> = r
                .dropped
                .iter()
                .map(|d| (d.group.kind, d.group.threads, d.missed))
                .collect();
            assert_eq!(
                dropped,
                [
                    (RecordKind::SoloTime, Some(1), 2),
                    (RecordKind::SoloTime, Some(2), 2)
                ]
            );
            assert!(
                note(&p)
                    .contains("solo times (alone, 2 thread(s)) dropped: 2 of 3 predictions missed"),
                "{}",
                note(&p)
            );
        } else {
            assert!(
                matches!(rule, Some(AdmissionRule::SoloTimes { .. })),
                "{}",
                note(&p)
            );
            assert!(r.dropped.is_empty(), "{r:?}");
            let used: Vec<_> = r
                .used
                .iter()
                .map(|u| (u.group.kind, u.group.threads, u.records))
                .collect();
            assert_eq!(
                used,
                [
                    (RecordKind::SoloTime, Some(1), 3),
                    (RecordKind::SoloTime, Some(2), 3)
                ]
            );
        }
    }
}

/// Stored solo times that say a malleable app is faster with fewer threads
/// (OpenBLAS on small matrices: 0.13 s alone with 1 thread, 1.89 s with 2)
/// cap its DoP once its lever acts, alone and beside another app, in both
/// arrangements; times that favour its team, or differ by less than the
/// margin, or are missing, leave its team (`auto/team.rs`).
#[test]
fn solo_times_cap_a_team_that_runs_slower_than_a_smaller_one() {
    type Curve = &'static [(u32, f64)];
    let cases: [(Curve, u32); 4] = [
        (&[(1, 0.13), (2, 1.89)], 1),
        (&[(1, 2.0), (2, 1.1)], 2),
        (&[(1, 1.0), (2, 1.03)], 2),
        (&[], 2),
    ];
    for (curve, want) in cases {
        let mut solo = coloc_model::metrics::SoloCurves::default();
        for (k, t) in curve {
            solo.add("app0", *k, *t);
            solo.add("app1", *k, *t);
        }
        let mut s = Script::new(Objective::Makespan);
        s.auto = Auto::new(Objective::Makespan)
            .with_regions(short_regions())
            .with_solo(solo);
        let a = s.start(0, 2, true);
        let mut p = Plan::default();
        for _ in 0..3 {
            p = s.tick(|_, asked| Some(loops(1000, asked.unwrap_or(2))));
        }
        // Alone: nothing oversubscribes, the plan leaves placement to Linux.
        assert!(unmanaged(&p), "{}", note(&p));
        assert_eq!(dop(&p, a), Some(want), "{curve:?} alone: {}", note(&p));
        if want == 1 {
            assert!(
                has(&p, a, |r| matches!(r, Reason::Dop(d)
                    if d.dop == 1 && matches!(d.why, DopWhy::FastestAlone { threads: 1, .. })))
                    && has(&p, a, |r| matches!(r, Reason::Linux(_))),
                "{}",
                note(&p)
            );
        }
        // Beside a second such app: two teams of 2 oversubscribe 2 CPUs, two
        // capped teams of 1 do not, and the trial has nothing to act on.
        let b = s.start(1, 2, true);
        for _ in 0..TRIAL_TICKS {
            p = s.tick(|_, asked| Some(loops(1000, asked.unwrap_or(2))));
        }
        if want == 1 {
            assert!(unmanaged(&p), "{}", note(&p));
            assert_eq!((dop(&p, a), dop(&p, b)), (Some(1), Some(1)), "{}", note(&p));
            assert_eq!(state(&p), TrialState::NothingToActOn, "{}", note(&p));
        } else {
            // Partitions of one CPU each, a DoP of 1 each, under auto's
            // arrangement or back to full teams under Linux: never above the
            // team.
            for id in [a, b] {
                assert!(dop(&p, id).is_some_and(|d| d <= 2), "{}", note(&p));
            }
        }
    }
}

/// On this VM (one L3, one node) stored profiles change nothing: the same
/// script gives the same plans with and without them (`auto/placement/`).
#[test]
fn profiles_change_nothing_on_one_llc_and_one_node() {
    let run = |profiles: Vec<coloc_model::profile::AppProfile>| {
        let mut s = Script::new(Objective::Makespan);
        s.auto = Auto::new(Objective::Makespan)
            .with_regions(short_regions())
            .with_profiles(profiles);
        let fixed = s.start(0, 4, false);
        s.start(1, 2, true);
        (0..TRIAL_TICKS + 3)
            .map(|_| s.tick(|id, asked| (id != fixed).then(|| loops(1000, asked.unwrap_or(2)))))
            .collect::<Vec<Plan>>()
    };
    let topo = fixture_topologies().pop().expect("kvm-2cpu");
    let profiles = super::placement::tests::profiles_for(&topo);
    let with = run(profiles);
    assert!(with.iter().any(|p| !unmanaged(p)), "own arrangement tried");
    assert_eq!(with, run(Vec::new()));
}

/// On the 8-node Opteron fixture, two malleable apps of 40 threads (80 on 48
/// CPUs): in auto's arrangement the streaming app's 24 CPUs are spread over
/// every node, 3 per node, by its ReSense scores, and its memory, whose
/// stored bandwidth (2 GB/s per thread) makes it memory-intensive, is
/// interleaved over the 8 nodes; the sharer keeps its memory as it is (0.5
/// GB/s). Linux's windows of the trial leave both as they were.
#[test]
fn placement_and_memory_in_auto_s_arrangement_only() {
    use coloc_model::MemPolicy;
    let mut s = Script::new(Objective::Makespan);
    s.topo = fixture_topologies()
        .into_iter()
        .find(|t| t.name == "amd-8node")
        .unwrap();
    let profiles = super::placement::tests::profiles_for(&s.topo);
    s.auto = Auto::new(Objective::Makespan)
        .with_regions(short_regions())
        .with_profiles(profiles);
    let stream = s.start(0, 40, true);
    let share = s.start(1, 40, true);
    let plans: Vec<Plan> = (0..TRIAL_TICKS)
        .map(|_| s.tick(|_, asked| Some(loops(1000, asked.unwrap_or(40)))))
        .collect();
    let memory = |p: &Plan, id: AppId| p.for_app(id).unwrap().memory;
    let own: Vec<&Plan> = plans.iter().filter(|p| !unmanaged(p)).collect();
    assert!(!own.is_empty());
    for p in &own {
        assert_eq!(
            cpus(p, stream),
            "0-2,6-8,12-14,18-20,24-26,30-32,36-38,42-44",
            "{}",
            note(p)
        );
        assert_eq!(
            cpus(p, share),
            "3-5,9-11,15-17,21-23,27-29,33-35,39-41,45-47"
        );
        assert_eq!(memory(p, share), MemPolicy::Default, "{}", note(p));
        assert!(
            p.reasons.contains(&PlanReason::PlacedByProfiles)
                && p.reasons.contains(&PlanReason::SharingCases {
                    levels: vec![
                        LevelCases {
                            level: "socket".into(),
                            cases: vec![1]
                        },
                        LevelCases {
                            level: "L3".into(),
                            cases: vec![1]
                        },
                    ]
                }),
            "{}",
            note(p)
        );
    }
    // Classified once two samples of its rates are in (two intervals, three
    // observations), interleaved from then on.
    let (early, classified): (Vec<&Plan>, Vec<&Plan>) = own.iter().partition(|p| {
        has(p, stream, |r| {
            matches!(r, Reason::Memory(Memory::Unclassified { .. }))
        })
    });
    assert_eq!(early.len(), 2);
    assert!(!classified.is_empty());
    for p in early {
        assert_eq!(memory(p, stream), MemPolicy::Default, "{}", note(p));
    }
    for p in classified {
        assert_eq!(memory(p, stream), MemPolicy::Interleave, "{}", note(p));
        assert!(
            has(p, stream, |r| matches!(
                r,
                Reason::Memory(Memory::Interleave { nodes: 8, .. })
            )),
            "{}",
            note(p)
        );
    }
    let linux: Vec<&Plan> = plans.iter().filter(|p| unmanaged(p)).collect();
    assert!(!linux.is_empty(), "Linux measured");
    for p in linux {
        assert_eq!(memory(p, stream), MemPolicy::Default, "{}", note(p));
    }
}

/// The nice value an app's plan gives it (0 when it sets none).
fn nice(plan: &Plan, id: AppId) -> i8 {
    plan.for_app(id).unwrap().sched.nice.unwrap_or(0)
}

/// Gang time sharing (`auto/gang.rs`), table-driven: apps of 2 threads on 2
/// CPUs, 100 ms of CPU each per tick (the trial's CPU-time measure sees no
/// difference: gang is kept, within its 2% bound), and per case how many,
/// whether they are malleable and how often they sleep. Only non-malleable
/// apps that sleep often (100 switches per 100 ms of CPU: 1000 per
/// CPU-second, at least gang::SYNC_SLEEPS) and outnumber the CPUs take turns
/// in the foreground: each tick one app at nice 0 and the others at nice 19,
/// all spread thread k on CPU k. Two such apps get a CPU each (partitions
/// were measured faster), apps that rarely sleep get partitions, and
/// malleable apps whose lever acts get DoPs.
#[test]
fn barrier_teams_that_cannot_shrink_take_turns_at_the_whole_machine() {
    use super::gang::{BACKGROUND_NICE, SYNC_SLEEPS};
    // (case, apps, malleable, sleeps per tick, gang expected)
    let cases = [
        ("3 non-malleable barrier apps", 3, false, 100, true),
        ("3 non-malleable, just at the threshold", 3, false, 10, true),
        ("3 non-malleable, rarely sleeping", 3, false, 9, false),
        ("3 non-malleable compute apps", 3, false, 0, false),
        (
            "2 non-malleable barrier apps: a CPU each",
            2,
            false,
            100,
            false,
        ),
        ("3 malleable barrier apps", 3, true, 100, false),
    ];
    assert_eq!(SYNC_SLEEPS, 100.0, "10 sleeps per 100 ms of CPU");
    for (case, n, malleable, sleeps, want) in cases {
        let mut s = Script::new(Objective::Makespan);
        let ids: Vec<AppId> = (0..n).map(|i| s.start(i, 2, malleable)).collect();
        let a = ids[0];
        let tick = |asked: Option<u32>| {
            let t = if malleable {
                loops(1000, asked.unwrap_or(2))
            } else {
                pthreads(100)
            };
            Tick { sleeps, ..t }
        };
        let plans: Vec<Plan> = (0..TRIAL_TICKS + 8)
            .map(|_| s.tick(|_, asked| Some(tick(asked))))
            .collect();
        let is_gang = |p: &Plan| any_has(p, |r| matches!(r, Reason::Gang(_)));
        let gang: Vec<&Plan> = plans.iter().filter(|p| is_gang(p)).collect();
        if !want {
            assert!(gang.is_empty(), "{case}: {}", note(gang[0]));
            let last = plans.last().unwrap();
            assert!(ids.iter().all(|id| nice(last, *id) == 0), "{case}");
            if malleable {
                assert_eq!(dop(last, a), Some(1), "{case}: {}", note(last));
            } else {
                assert_eq!(cpus(last, a), "0", "{case}: {}", note(last));
                assert!(
                    has(last, a, |r| matches!(r, Reason::NoGang(_))),
                    "{case}: {}",
                    note(last)
                );
            }
            continue;
        }
        // Every plan in the own arrangement is a gang one: one app in the
        // foreground, the others behind it, the next app every tick.
        assert!(gang.len() >= 2, "{case}: {}", note(&plans[0]));
        for p in &gang {
            let fore: Vec<AppId> = ids.iter().copied().filter(|id| nice(p, *id) == 0).collect();
            assert_eq!(fore.len(), 1, "{case}: {}", note(p));
            for &id in &ids {
                if id != fore[0] {
                    assert_eq!(nice(p, id), BACKGROUND_NICE, "{case}: {}", note(p));
                }
                let Placement::PerThread { threads, .. } = &p.for_app(id).unwrap().placement else {
                    panic!("{case}: {}", note(p))
                };
                let on: Vec<String> = threads.iter().map(|(_, c)| c.to_list()).collect();
                assert_eq!(on, ["0", "1"], "{case}: {}", note(p));
            }
        }
        let foreground = |p: &Plan| ids.iter().position(|id| nice(p, *id) == 0);
        let turns: Vec<(usize, usize)> = plans
            .windows(2)
            .filter(|w| w.iter().all(is_gang))
            .map(|w| (foreground(&w[0]).unwrap(), foreground(&w[1]).unwrap()))
            .collect();
        assert!(!turns.is_empty(), "{case}");
        assert!(
            turns.iter().all(|(x, y)| *y == (x + 1) % ids.len()),
            "{case}: the next app is in the foreground at every tick: {turns:?}"
        );
        // Linux measured in between (no placement, nice restored), and gang
        // kept: the CPU time is the same either way.
        assert!(plans.iter().any(unmanaged), "{case}");
        let last = plans.last().unwrap();
        assert_eq!(state(last), TrialState::OwnKept, "{case}: {}", note(last));
        assert!(
            any_has(
                last,
                |r| matches!(r, Reason::Gang(g) if g.foreground && g.nice == 0)
            ) && any_has(
                last,
                |r| matches!(r, Reason::Gang(g) if !g.foreground && g.nice == 19)
            ),
            "{case}: {}",
            note(last)
        );
    }
}

/// `art` with stored solo times: shortest time left first. Two 2-thread apps
/// on 2 CPUs; app0 takes 10 s alone, app1 3 s. app1 arriving at 1 s has the
/// least left: it runs at nice 0 and app0 at SRPT_NICE, both placed by Linux,
/// with no trial against Linux. Arriving at 8 s, when app0 has 2 s left, it
/// waits behind app0 at SRPT_NICE. Without a solo time of app1, least
/// attained service ranks them (app1 has had less CPU).
#[test]
fn art_with_solo_times_runs_the_shortest_time_left_first() {
    use super::SRPT_NICE;
    let (old, young) = (AppId { app: 0, rep: 0 }, AppId { app: 1, rep: 0 });
    let cases = [
        (10, true, [(old, SRPT_NICE), (young, 0)]),
        (80, true, [(old, 0), (young, SRPT_NICE)]),
        (10, false, [(old, ART_NICE_STEP), (young, 0)]),
    ];
    for (ticks, young_solo, want) in cases {
        let mut solo = coloc_model::metrics::SoloCurves::default();
        solo.add("app0", 2, 10.0);
        if young_solo {
            solo.add("app1", 2, 3.0);
        }
        let mut s = Script::new(Objective::Art);
        s.auto = Auto::new(Objective::Art)
            .with_regions(short_regions())
            .with_solo(solo);
        s.start(0, 2, false);
        for _ in 0..ticks {
            s.tick(|_, _| Some(pthreads(200)));
        }
        s.start(1, 2, false);
        let p = s.tick(|_, _| Some(pthreads(100)));
        for (id, n) in want {
            assert_eq!(nice(&p, id), n, "{ticks} {young_solo}: {}", note(&p));
        }
        assert!(unmanaged(&p) || !young_solo, "{}", note(&p));
        assert_eq!(
            p.reasons
                .iter()
                .any(|r| matches!(r, PlanReason::ShortestFirst { .. })),
            young_solo,
            "{}",
            note(&p)
        );
        assert!(
            state(&p) == TrialState::NotTried || !young_solo,
            "{}",
            note(&p)
        );
    }
}

/// `art` admission with solo times (`auto/admission.rs`, shortest first):
/// app0 (10 s alone with 2 threads) has run 1 s. An arrival that needs 12 s
/// alone waits while app0 keeps both CPUs busy, and starts when app0 leaves a
/// CPU idle; one that needs 3 s starts at once; without its solo time it
/// starts, as every app does under `art` without them.
#[test]
fn art_with_solo_times_holds_an_arrival_longer_than_the_time_left() {
    let arrival = AppId { app: 2, rep: 0 };
    let cases = [
        (200, Some(12.0), false),
        (100, Some(12.0), true),
        (200, Some(3.0), true),
        (200, None, true),
    ];
    for (cpu_ms, need, starts) in cases {
        let mut solo = coloc_model::metrics::SoloCurves::default();
        solo.add("app0", 2, 10.0);
        if let Some(t) = need {
            solo.add("app2", 2, t);
        }
        let mut s = Script::new(Objective::Art);
        s.auto = Auto::new(Objective::Art)
            .with_regions(short_regions())
            .with_solo(solo);
        s.start(0, 2, false);
        for _ in 0..10 {
            s.tick(|_, _| Some(pthreads(cpu_ms)));
        }
        let p = s.arrive(2, 2);
        assert_eq!(
            p.for_app(arrival).unwrap().admit,
            starts,
            "{cpu_ms} {need:?}: {}",
            note(&p)
        );
        if !starts {
            let first = AppId { app: 0, rep: 0 };
            assert!(
                matches!(admission(&p, arrival), Some((false, AdmissionRule::ShortestFirst {
                    needs_secs, least, left_secs,
                })) if close(needs_secs, 12.0) && least == first && close(left_secs, 9.0)),
                "{}",
                note(&p)
            );
        }
    }
}

/// Admission by the rates two apps ran at beside each other in earlier runs
/// (`auto/admission.rs`, `pair`): app0 (3.4 s alone on 2 CPUs) has started,
/// app1 (5.26 s) arrives. Held, they end in 8.66 s. At rates 0.53 and 0.45
/// (0.98 of a machine, the blas-xz pair) sharing ends later and app1 waits
/// until app0 exits; at 0.9 and 0.5 it starts. The same rates measured for
/// each app beside other apps (never beside each other) decide the same.
/// Without rates for the pair, or without solo times, equal's rule starts it
/// (a CPU has no app of its own).
#[test]
fn rates_of_a_pair_measured_before_hold_an_arrival_that_shares_worse() {
    use coloc_model::metrics::corun::{CoRun, CoRuns, PairRun, SharedRun};
    // (rates of app0 and app1, measured as a pair (else each beside
    // others), solo times stored, starts, the mix's end started now and held
    // when the rates decide)
    type Case = (Option<(f64, f64)>, bool, bool, bool, Option<(f64, f64)>);
    let cases: [Case; 6] = [
        // Held: 8.79 s shared against 8.66 s one after the other.
        (Some((0.53, 0.45)), true, true, false, Some((8.79, 8.66))),
        (Some((0.9, 0.5)), true, true, true, Some((7.15, 8.66))),
        (Some((0.53, 0.45)), false, true, false, Some((8.79, 8.66))),
        (Some((0.9, 0.5)), false, true, true, Some((7.15, 8.66))),
        (None, true, true, true, None),
        (Some((0.53, 0.45)), true, false, true, None),
    ];
    let second = AppId { app: 1, rep: 0 };
    for (rates, as_pair, with_solo, starts, why) in cases {
        let mut solo = coloc_model::metrics::SoloCurves::default();
        if with_solo {
            for (name, one, two) in [("app0", 6.2, 3.4), ("app1", 7.76, 5.26)] {
                solo.add(name, 1, one);
                solo.add(name, 2, two);
            }
        }
        let shared = |app: &str, rate| {
            CoRun::Shared(SharedRun {
                app: app.into(),
                rate,
            })
        };
        let coruns = CoRuns::of(match rates {
            None => Vec::new(),
            Some((r0, r1)) if as_pair => vec![CoRun::Pair(PairRun {
                apps: ["app0".into(), "app1".into()],
                rates: [r0, r1],
            })],
            Some((r0, r1)) => vec![shared("app0", r0), shared("app1", r1)],
        });
        let mut s = Script::new(Objective::Makespan);
        s.auto = Auto::new(Objective::Makespan)
            .with_regions(short_regions())
            .with_solo(solo)
            .with_coruns(coruns);
        let first = s.start(0, 2, true);
        let p = s.arrive(1, 2);
        let admitted = p.for_app(second).unwrap().admit;
        assert_eq!(
            admitted,
            starts,
            "{rates:?} {as_pair} {with_solo}: {}",
            note(&p)
        );
        let rule = admission(&p, second).map(|(_, rule)| rule);
        match (why, rates) {
            (Some((now, held)), Some((r0, r1))) => assert!(
                matches!(rule, Some(AdmissionRule::CoRun {
                    with, rate, with_rate, from, now_secs, held_secs,
                }) if with == first && close(rate, r1) && close(with_rate, r0)
                    && from == if as_pair {
                        CoRunFrom::Pairs { runs: 1 }
                    } else {
                        CoRunFrom::Shared { with_runs: 1, runs: 1 }
                    }
                    && close(now_secs, now) && close(held_secs, held)),
                "{}",
                note(&p)
            ),
            _ => assert!(
                !matches!(rule, Some(AdmissionRule::CoRun { .. })),
                "{}",
                note(&p)
            ),
        }
        if !starts {
            let p = s.exit(first);
            assert!(p.for_app(second).unwrap().admit, "{}", note(&p));
        }
    }
}
