//! Every check's findings and violations on the 2-CPU fixture machine, over 100 ms
//! intervals (run and wait times in ms, turned into ns).

use std::time::Duration;

use coloc_model::testutils::{fixture_topologies, running_app};
use coloc_model::{AppId, AppPlan, AppSample, AppView, CpuSet, Observation, OmpSample, Placement};
use coloc_model::{Shortage, ThreadSample, Topology, TraceEvent};

use super::{shortfalls, underuses, Conservation, Episode, Findings, Underuse, Waste};
use super::{WasteSeen, WasteTally};

fn kvm() -> Topology {
    fixture_topologies()
        .pop()
        .expect("kvm-2cpu is the last fixture")
}

fn cpus(list: &str) -> CpuSet {
    list.parse().unwrap()
}

/// A thread of `app` last seen on `cpu`, with cumulative run and wait in ms.
fn thread(tid: u32, cpu: u32, run_ms: u64, wait_ms: u64) -> ThreadSample {
    ThreadSample {
        pid: 1,
        tid,
        cpu: Some(cpu),
        run_ns: run_ms * 1_000_000,
        wait_ns: wait_ms * 1_000_000,
        ..ThreadSample::default()
    }
}

fn obs(at_ms: u64, apps: Vec<(AppId, Vec<ThreadSample>)>) -> Observation {
    Observation {
        at: Duration::from_millis(at_ms),
        apps: apps
            .into_iter()
            .map(|(app, threads)| AppSample {
                app,
                pid: 1,
                threads,
                ..AppSample::default()
            })
            .collect(),
        ..Observation::default()
    }
}

fn placed(tids: &[u32], placement: Placement) -> AppView {
    let mut a = running_app(0, tids);
    a.current = Some(AppPlan {
        placement,
        ..AppPlan::native(a.id)
    });
    a
}

/// Two threads pinned to CPU 0, each running half of every 100 ms and waiting
/// the other half; CPU 1 runs nothing.
fn stacked(at_ms: u64) -> Observation {
    let half = at_ms / 2;
    obs(
        at_ms,
        vec![(
            AppId::default(),
            vec![thread(1, 0, half, half), thread(2, 0, half, half)],
        )],
    )
}

#[test]
fn two_threads_pinned_to_one_cpu_beside_an_idle_one_fall_short() {
    let app = placed(&[1, 2], Placement::Shared(cpus("0")));
    let got = shortfalls(&kvm(), &[app], &stacked(100), &stacked(200));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].idle, cpus("1"));
    assert_eq!(got[0].waiting, vec![1, 2]);
}

#[test]
fn the_same_threads_unmanaged_never_fall_short() {
    let app = placed(&[1, 2], Placement::Unmanaged);
    assert!(shortfalls(&kvm(), &[app], &stacked(100), &stacked(200)).is_empty());
}

#[test]
fn a_thread_allowed_on_the_idle_cpu_does_not_fall_short() {
    // Both threads may use both CPUs: waiting there is Linux's doing.
    let app = placed(&[1, 2], Placement::Shared(cpus("0-1")));
    assert!(shortfalls(&kvm(), &[app], &stacked(100), &stacked(200)).is_empty());
}

#[test]
fn per_thread_pins_onto_one_cpu_fall_short_even_when_the_app_owns_both() {
    // Thread 3 pinned to CPU 1 sleeps; 1 and 2 share CPU 0.
    let app = placed(
        &[1, 2, 3],
        Placement::PerThread {
            threads: vec![(1, cpus("0")), (2, cpus("0")), (3, cpus("1"))],
            rest: cpus("0-1"),
        },
    );
    let with_sleeper = |at| {
        let mut o = stacked(at);
        o.apps[0].threads.push(thread(3, 1, 0, 0));
        o
    };
    let got = shortfalls(&kvm(), &[app], &with_sleeper(100), &with_sleeper(200));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].idle, cpus("1"));
}

#[test]
fn a_busy_machine_has_no_idle_cpu() {
    // Thread 3 keeps CPU 1 busy: 80 ms of every 100.
    let app = placed(&[1, 2, 3], Placement::Shared(cpus("0")));
    let busy = |at: u64| {
        let mut o = stacked(at);
        o.apps[0].threads.push(thread(3, 1, at * 8 / 10, 0));
        o
    };
    assert!(shortfalls(&kvm(), &[app], &busy(100), &busy(200)).is_empty());
}

#[test]
fn a_shortfall_is_a_violation_only_once_it_outlasts_an_epoch() {
    let topo = kvm();
    let app = [placed(&[1, 2], Placement::Shared(cpus("0")))];
    let mut c = Conservation::default();
    assert!(c
        .check(&topo, &app, &stacked(100), &stacked(200))
        .events
        .is_empty());
    let v = c.check(&topo, &app, &stacked(200), &stacked(300)).events;
    assert_eq!(
        v,
        vec![TraceEvent::IdleWhileWaiting {
            t: Duration::from_millis(300),
            since: Duration::from_millis(100),
            app: AppId::default(),
            idle: cpus("1"),
            waiting: vec![1, 2],
        }]
    );
    // It ends when the plan lets the threads onto CPU 1; a new shortfall then
    // starts its own epoch of grace.
    let spread = [placed(&[1, 2], Placement::Shared(cpus("0-1")))];
    assert!(c
        .check(&topo, &spread, &stacked(300), &stacked(400))
        .events
        .is_empty());
    assert!(c
        .check(&topo, &app, &stacked(400), &stacked(500))
        .events
        .is_empty());
}

/// `obs` with the app's DoP-channel report: inside a region or not, its team,
/// regions and iterations so far, and the DoP it acknowledged.
fn with_omp(
    mut o: Observation,
    in_parallel: bool,
    team: u32,
    regions: u64,
    iterations: u64,
) -> Observation {
    o.apps[0].omp = Some(OmpSample {
        in_parallel,
        team_size: team,
        regions_completed: regions,
        iterations_completed: iterations,
        dop_seen: Some(team),
        ..OmpSample::default()
    });
    o
}

/// One thread of a team of 1 (its DoP) computing on CPU 0 all the time;
/// CPU 1 runs nothing.
fn team_of_one(at_ms: u64) -> Observation {
    let o = obs(
        at_ms,
        vec![(AppId::default(), vec![thread(1, 0, at_ms, 0)])],
    );
    with_omp(o, true, 1, 3, at_ms)
}

/// A team of 2 inside a region on an app that asked for 2 threads.
fn asked_for_two(placement: Placement) -> AppView {
    let mut a = placed(&[1, 2], placement);
    a.threads_requested = 2;
    a
}

/// The waste of the first case: a DoP of 1 set before one long
/// region, whose team of 1 then runs beside an idle CPU. It has no waiting
/// thread, so the check that counts waiting threads never saw it.
#[test]
fn a_team_held_to_one_thread_beside_an_idle_cpu_is_underused() {
    let app = asked_for_two(Placement::Unmanaged);
    let (prev, last) = (team_of_one(100), team_of_one(200));
    assert!(shortfalls(&kvm(), std::slice::from_ref(&app), &prev, &last).is_empty());
    let got = underuses(&kvm(), &[app], &prev, &last);
    assert_eq!(
        got,
        vec![Underuse {
            app: AppId::default(),
            idle: cpus("1"),
            short: Shortage::Team { team: 1, wanted: 2 },
        }]
    );
}

#[test]
fn a_whole_team_a_serial_section_or_an_unsteered_app_is_not_underused() {
    let app = asked_for_two(Placement::Unmanaged);
    let serial = |at| with_omp(team_of_one(at), false, 1, 3, at);
    assert!(underuses(
        &kvm(),
        std::slice::from_ref(&app),
        &serial(100),
        &serial(200)
    )
    .is_empty());
    let unsteered = |at| {
        let mut o = team_of_one(at);
        o.apps[0].omp.as_mut().unwrap().dop_seen = None;
        o
    };
    assert!(underuses(
        &kvm(),
        std::slice::from_ref(&app),
        &unsteered(100),
        &unsteered(200)
    )
    .is_empty());
    // Asked for 1: a team of 1 is all it wants.
    let mut one = app;
    one.threads_requested = 1;
    assert!(underuses(&kvm(), &[one], &team_of_one(100), &team_of_one(200)).is_empty());
}

/// Two threads pinned to CPU 0 that take turns there, sleeping at their
/// barriers instead of queueing (libgomp's passive wait): half of every
/// 100 ms each, no run delay.
fn packed_sleepers(at_ms: u64) -> Observation {
    let half = at_ms / 2;
    obs(
        at_ms,
        vec![(
            AppId::default(),
            vec![thread(1, 0, half, 0), thread(2, 0, half, 0)],
        )],
    )
}

#[test]
fn a_packed_team_that_sleeps_at_its_barriers_is_underused_on_cpus() {
    let app = asked_for_two(Placement::Shared(cpus("0")));
    let (prev, last) = (packed_sleepers(100), packed_sleepers(200));
    assert!(shortfalls(&kvm(), std::slice::from_ref(&app), &prev, &last).is_empty());
    let got = underuses(&kvm(), &[app], &prev, &last);
    assert_eq!(
        got,
        vec![Underuse {
            app: AppId::default(),
            idle: cpus("1"),
            short: Shortage::Cpus {
                allowed: cpus("0"),
                busy: 2,
            },
        }]
    );
}

#[test]
fn threads_that_wait_are_left_to_the_waiting_check() {
    let app = asked_for_two(Placement::Shared(cpus("0")));
    let (prev, last) = (stacked(100), stacked(200));
    assert_eq!(
        shortfalls(&kvm(), std::slice::from_ref(&app), &prev, &last).len(),
        1
    );
    assert!(underuses(&kvm(), &[app], &prev, &last).is_empty());
}

#[test]
fn with_no_cpu_idle_nothing_is_underused() {
    // A second app keeps CPU 1 busy: a team of 1 there is the policy's
    // choice between apps, not waste.
    let other = running_app(1, &[9]);
    let other_id = other.id;
    let busy = |at: u64| {
        let mut o = team_of_one(at);
        o.apps.push(AppSample {
            app: other_id,
            threads: vec![thread(9, 1, at, 0)],
            ..AppSample::default()
        });
        o
    };
    let app = asked_for_two(Placement::Unmanaged);
    assert!(underuses(&kvm(), &[app, other], &busy(100), &busy(200)).is_empty());
}

/// A team of 2 on both CPUs inside region 5: its iterations so far, and each
/// thread's run time, ms.
fn in_region(at_ms: u64, iterations: u64, run_ms: u64) -> Observation {
    let o = obs(
        at_ms,
        vec![(
            AppId::default(),
            vec![thread(1, 0, run_ms, 0), thread(2, 1, run_ms, 0)],
        )],
    );
    with_omp(o, true, 2, 5, iterations)
}

/// A team of 2 on both CPUs inside region 5 that reports no iterations, only
/// its progress inside the region (`omp_steps`, docs/signals.md).
fn in_region_steps(at_ms: u64, steps: u64, run_ms: u64) -> Observation {
    let mut o = in_region(at_ms, 0, run_ms);
    o.apps[0].omp_steps = Some(steps);
    o
}

/// Progress inside one long region counts: a team whose steps move is not
/// burning CPU for nothing, and steps seen to move are the evidence that a
/// team whose steps stop (spinning at a barrier) is. Before, such a team's
/// counters never moved inside its region and it was never judged.
#[test]
fn progress_inside_a_region_is_a_progress_counter() {
    let topo = kvm();
    let app = [asked_for_two(Placement::Unmanaged)];
    let mut c = Conservation::default();
    for (from, to, a, b) in [(100, 200, 10, 20), (200, 300, 20, 30)] {
        let found = c.check(
            &topo,
            &app,
            &in_region_steps(from, a, from),
            &in_region_steps(to, b, to),
        );
        assert!(found.events.is_empty(), "{from}: {:?}", found.events);
    }
    let stalled = |c: &mut Conservation, at: u64| {
        c.check(
            &topo,
            &app,
            &in_region_steps(at - 100, 30, at - 100),
            &in_region_steps(at, 30, at),
        )
    };
    assert!(
        stalled(&mut c, 400).events.is_empty(),
        "one interval of grace"
    );
    let found = stalled(&mut c, 500);
    assert_eq!(found.started, vec![(AppId::default(), Waste::NoProgress)]);
}

/// The waste of a spinning team: both threads busy inside one region and no
/// counter moving, once the counters have been seen to move inside a region.
#[test]
fn a_team_burning_both_cpus_with_no_progress_is_found_after_an_epoch() {
    let topo = kvm();
    let app = [asked_for_two(Placement::Unmanaged)];
    let mut c = Conservation::default();
    // Iterations move inside the region: the evidence that they would.
    let found = c.check(
        &topo,
        &app,
        &in_region(100, 10, 100),
        &in_region(200, 20, 200),
    );
    assert!(found.events.is_empty());
    // They stop, while both threads keep running: one interval of grace...
    let found = c.check(
        &topo,
        &app,
        &in_region(200, 20, 200),
        &in_region(300, 20, 300),
    );
    assert!(found.events.is_empty());
    // ...then a violation, with the CPU time of the last interval (2 × 100 ms).
    let found = c.check(
        &topo,
        &app,
        &in_region(300, 20, 300),
        &in_region(400, 20, 400),
    );
    assert_eq!(
        found.events,
        vec![TraceEvent::NoProgress {
            t: Duration::from_millis(400),
            since: Duration::from_millis(200),
            app: AppId::default(),
            cpu: Duration::from_millis(200),
        }]
    );
    assert_eq!(found.started, vec![(AppId::default(), Waste::NoProgress)]);
    // It moves again: the violation ended, having held from 200 to 400 ms.
    let found = c.check(
        &topo,
        &app,
        &in_region(400, 20, 400),
        &in_region(500, 30, 500),
    );
    assert!(found.events.is_empty());
    assert_eq!(
        found.ended,
        vec![Episode {
            app: AppId::default(),
            waste: Waste::NoProgress,
            since: Duration::from_millis(200),
            until: Duration::from_millis(400),
        }]
    );
}

#[test]
fn silence_is_not_judged_without_evidence_or_with_one_thread_busy() {
    let topo = kvm();
    let app = [asked_for_two(Placement::Unmanaged)];
    // Never seen to move inside a region (libgomp adds iterations at a
    // region's end): silence there says nothing.
    let mut c = Conservation::default();
    for at in [100, 200, 300] {
        let found = c.check(
            &topo,
            &app,
            &in_region(at, 0, at),
            &in_region(at + 100, 0, at + 100),
        );
        assert!(found.events.is_empty(), "at {at} ms");
    }
    // Seen to move, then one thread computing alone (a `single` section)
    // while the other sleeps: 100 ms of CPU over 100 ms is not waste.
    let mut c = Conservation::default();
    c.check(
        &topo,
        &app,
        &in_region(100, 10, 100),
        &in_region(200, 20, 200),
    );
    let alone = |at: u64| {
        let mut o = in_region(at, 20, 200);
        o.apps[0].threads[0].run_ns = (at - 100) * 1_000_000;
        o
    };
    for at in [200, 300] {
        let found = c.check(&topo, &app, &alone(at), &alone(at + 100));
        assert!(found.events.is_empty(), "at {at} ms");
    }
}

#[test]
fn the_tally_counts_observations_episodes_and_time() {
    let topo = kvm();
    let app = [placed(&[1, 2], Placement::Shared(cpus("0")))];
    let mut c = Conservation::default();
    let mut seen = WasteSeen::default();
    for at in [100, 200, 300] {
        seen.add(&c.check(&topo, &app, &stacked(at), &stacked(at + 100)));
    }
    seen.add(&Findings {
        ended: c.close(),
        ..Findings::default()
    });
    // Held from 100 to 400 ms; recorded at 300 and 400 ms.
    assert_eq!(
        seen.idle_while_waiting,
        WasteTally {
            observations: 2,
            episodes: 1,
            time: Duration::from_millis(300),
        }
    );
    assert!(seen.underused == WasteTally::default() && seen.no_progress == WasteTally::default());
}

/// A team of 2 inside a region: its regions so far and each thread's CPU,
/// run and wait so far, ms.
fn team(at_ms: u64, regions: u64, threads: [(u32, u64, u64); 2]) -> Observation {
    let [(c1, r1, w1), (c2, r2, w2)] = threads;
    let o = obs(
        at_ms,
        vec![(
            AppId::default(),
            vec![thread(1, c1, r1, w1), thread(2, c2, r2, w2)],
        )],
    );
    with_omp(o, true, 2, regions, 0)
}

/// Spread over both CPUs for 100 ms from `at_ms`: 1,000 regions per 100 ms,
/// 200 ms of CPU (5,000 regions per CPU-second).
fn spread(at_ms: u64) -> Observation {
    team(at_ms, 10 * at_ms, [(0, at_ms, 0), (1, at_ms, 0)])
}

/// Packed on CPU 0 from 200 ms, each thread running half of every 100 ms and
/// waiting the other half, with `regions_per_100ms` regions per interval.
fn packed(at_ms: u64, regions_per_100ms: u64) -> Observation {
    let since = at_ms - 200;
    let run = 200 + since / 2;
    team(
        at_ms,
        2_000 + regions_per_100ms * since / 100,
        [(0, run, since / 2), (0, run, since / 2)],
    )
}

fn spinning_events(found: &Findings) -> Vec<&TraceEvent> {
    found
        .events
        .iter()
        .filter(|e| matches!(e, TraceEvent::Spinning { .. }))
        .collect()
}

/// A team that made 5,000 regions per CPU-second with a CPU per thread,
/// packed on one CPU: at 250 regions per 100 ms (2,500 per CPU-second) its
/// progress took 50 ms of the interval's 100 ms of CPU, so 50 ms were burnt
/// (above the 10 ms bound); at 460 (4,600 per CPU-second: 92 ms useful, 8 ms
/// burnt) it is not spinning: a team that sleeps at its barriers keeps about
/// its rate. Found from the second such interval on, as every check.
#[test]
fn a_packed_team_below_its_own_rate_is_spinning_after_an_epoch() {
    let topo = kvm();
    // (regions per 100 ms packed, spinning events at 400 ms)
    let cases = [(250, 1), (460, 0)];
    for (rate, want) in cases {
        let app = [asked_for_two(Placement::Shared(cpus("0")))];
        let mut c = Conservation::default();
        assert!(c
            .check(&topo, &app, &spread(100), &spread(200))
            .events
            .is_empty());
        let grace = c.check(&topo, &app, &spread(200), &packed(300, rate));
        assert!(
            spinning_events(&grace).is_empty(),
            "{rate}: one interval of grace"
        );
        let found = c.check(&topo, &app, &packed(300, rate), &packed(400, rate));
        let events = spinning_events(&found);
        assert_eq!(events.len(), want, "{rate}: {:?}", found.events);
        if want > 0 {
            assert_eq!(
                events[0],
                &TraceEvent::Spinning {
                    t: Duration::from_millis(400),
                    since: Duration::from_millis(200),
                    app: AppId::default(),
                    cpu: Duration::from_millis(100),
                    useful: Duration::from_millis(50),
                }
            );
            // Alone on CPU 0 beside an idle CPU 1, its threads also waited
            // off an idle CPU: that check's own event.
            assert!(found.started.contains(&(AppId::default(), Waste::Spinning)));
        }
    }
}

/// Not judged: a team never seen with a CPU per thread (no reference), a
/// serial section, a team of 1, an app found making no progress at all
/// (that check's event, not two).
#[test]
fn spinning_is_judged_only_against_the_apps_own_rate_inside_a_region() {
    let topo = kvm();
    let app = [asked_for_two(Placement::Shared(cpus("0")))];
    let judge = |c: &mut Conservation, prev: &Observation, last: &Observation| {
        spinning_events(&c.check(&topo, &app, prev, last)).len()
    };
    // No reference: packed from the start.
    let mut c = Conservation::default();
    for at in [300, 400, 500] {
        assert_eq!(judge(&mut c, &packed(at, 100), &packed(at + 100, 100)), 0);
    }
    // A reference, then a serial section or a team of 1 while queued.
    for (in_parallel, size) in [(false, 2), (true, 1)] {
        let mut c = Conservation::default();
        c.check(&topo, &app, &spread(100), &spread(200));
        let other = |at: u64| {
            let mut o = packed(at, 100);
            let omp = o.apps[0].omp.as_mut().unwrap();
            (omp.in_parallel, omp.team_size) = (in_parallel, size);
            o
        };
        for at in [200, 300, 400] {
            assert_eq!(
                judge(&mut c, &other(at), &other(at + 100)),
                0,
                "{in_parallel} {size}"
            );
        }
    }
    // Counters that stop altogether, both CPUs busy and a thread queued:
    // no_progress, not spinning. Its steps moved inside the region before
    // (the evidence that check needs), each thread on a CPU of its own.
    let mut c = Conservation::default();
    let steps = |at: u64, steps: u64, wait: u64| {
        let mut o = team(at, 5, [(0, at, 0), (1, at, wait)]);
        o.apps[0].omp_steps = Some(steps);
        o
    };
    c.check(&topo, &app, &steps(100, 100, 0), &steps(200, 200, 0));
    let mut kinds = Vec::new();
    for at in [200, 300, 400] {
        let found = c.check(
            &topo,
            &app,
            &steps(at, 200, at - 200),
            &steps(at + 100, 200, at - 100),
        );
        kinds.extend(found.started);
    }
    assert_eq!(kinds, vec![(AppId::default(), Waste::NoProgress)]);
}
