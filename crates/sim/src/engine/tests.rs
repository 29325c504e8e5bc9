//! Engine basics with hand-computable answers: kvm-2cpu's topology with
//! fixed figures (2.45 GHz, 0.5 µs barrier levels, 3 ms slices) and a
//! compute-only model (CPI 0.5, no LLC traffic) that retires 2.45e9 / 0.5 =
//! 4.9e9 instructions per second on a CPU of its own.

use std::sync::Arc;

use coloc_model::{AppId, CpuSet, MemPolicy, Placement, SchedSettings};

use super::*;
use crate::model::Phase;
use crate::platform::platform;

/// kvm-2cpu's two CPUs under one L3, with the figures the comments use
/// rather than the calibrated ones.
fn two_cpus() -> crate::platform::Platform {
    let mut p = platform("kvm-2cpu").unwrap();
    p.params.freq_ghz = 2.45;
    p.params.barrier_ns = 500.0;
    p.params.slice_us = 3000.0;
    p
}

/// A compute-only model: CPI 0.5, no LLC traffic, nothing shared.
fn compute(phases: Vec<Phase>, barriers_per_ginstr: f64) -> Arc<AppModel> {
    Arc::new(AppModel {
        name: "unit-compute".into(),
        about: "engine tests: CPI 0.5, no memory traffic".into(),
        phases,
        cpi: 0.5,
        llc_apki: 0.0,
        reuse: 1.0,
        private_mb: 0.01,
        shared_mb: 0.0,
        shared_fraction: 0.0,
        write_sharing: 0.0,
        mlp: 4.0,
        barriers_per_ginstr,
        lock_fraction: 0.0,
        lock_acquires_per_ginstr: 0.0,
        openmp: true,
    })
}

/// Launches an app whose thread i is pinned to the i-th CPU of `cpus` (the
/// last one for the rest).
fn launch(e: &mut Engine, app: u32, model: Arc<AppModel>, threads: u32, cpus: &str) {
    let id = AppId { app, rep: 0 };
    let cpus: Vec<u32> = CpuSet::parse_list(cpus).unwrap().iter().collect();
    let last = CpuSet::single(*cpus.last().unwrap());
    e.launch(AppLaunch {
        id,
        model,
        threads,
        // The app starts on all of its CPUs (its OpenMP runtime sees them).
        placement: Placement::Shared(cpus.iter().copied().collect()),
        memory: MemPolicy::Default,
        sched: SchedSettings::default(),
        malleable: false,
    });
    let tids: Vec<u32> = e
        .apps()
        .iter()
        .find(|a| a.id == id)
        .unwrap()
        .threads
        .iter()
        .map(|t| t.tid)
        .collect();
    let threads = tids
        .iter()
        .zip(
            cpus.iter()
                .map(|&c| CpuSet::single(c))
                .chain(std::iter::repeat(last.clone())),
        )
        .map(|(t, c)| (*t, c))
        .collect();
    e.set_placement(
        id,
        Placement::PerThread {
            threads,
            rest: last,
        },
    );
}

/// Runs to completion, returning (app, exit time in seconds) in exit order.
fn run(e: &mut Engine) -> Vec<(u32, f64)> {
    let mut exits = Vec::new();
    while !e.apps().is_empty() {
        for ev in e.advance_until(u64::MAX) {
            if let EngineEvent::Exited { app, at_ns, .. } = ev {
                exits.push((app.app, at_ns as f64 * 1e-9));
            }
        }
    }
    exits
}

fn assert_close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 1e-6 * want.max(1.0),
        "{what}: got {got}, want {want}"
    );
}

/// (case, apps as (threads, cpus, work in 1e9 instructions), expected exit times).
/// - alone: 4.9e9 instructions at 4.9e9/s take 1 s;
/// - two apps on one CPU share it: each progresses at 2.45e9/s, both end at 2 s;
/// - two apps on two CPUs: 1 s each;
/// - a 2-thread team of 9.8e9 instructions on 2 CPUs: 4.9e9 each, 1 s;
/// - the same team on one CPU: each member at half speed, 2 s;
/// - a team on CPUs 0-1 and a single-thread app on CPU 1: the team member on
///   CPU 1 runs at half speed and the team follows its slowest member, so the
///   team needs 4.9e9 / 2.45e9 = 2 s; meanwhile the single app also gets half of
///   CPU 1 and ends at 2 s too.
#[test]
fn time_sharing_and_slowest_member() {
    type App = (u32, &'static str, f64);
    let cases: Vec<(&str, Vec<App>, Vec<f64>)> = vec![
        ("alone", vec![(1, "0", 4.9)], vec![1.0]),
        (
            "one cpu",
            vec![(1, "0", 4.9), (1, "0", 4.9)],
            vec![2.0, 2.0],
        ),
        (
            "two cpus",
            vec![(1, "0", 4.9), (1, "1", 4.9)],
            vec![1.0, 1.0],
        ),
        ("team spread", vec![(2, "0-1", 9.8)], vec![1.0]),
        ("team on one cpu", vec![(2, "0", 9.8)], vec![2.0]),
        (
            "team and intruder",
            vec![(2, "0-1", 9.8), (1, "1", 4.9)],
            vec![2.0, 2.0],
        ),
    ];
    for (name, apps, want) in cases {
        let mut e = Engine::new(two_cpus(), 1);
        for (i, (threads, cpus, work)) in apps.iter().enumerate() {
            let phase = if *threads > 1 {
                Phase::parallel(*work)
            } else {
                Phase::serial(*work)
            };
            launch(&mut e, i as u32, compute(vec![phase], 0.0), *threads, cpus);
        }
        let mut exits = run(&mut e);
        exits.sort_by_key(|(a, _)| *a);
        for ((app, t), w) in exits.iter().zip(&want) {
            assert_close(*t, *w, &format!("{name}: app {app}"));
        }
        assert_eq!(exits.len(), want.len(), "{name}");
    }
}

/// Barriers cost ⌈log2 n⌉ levels of `barrier_ns` (0.5 µs), plus, when a member
/// shares its CPU and its teammates spin, the spin: the teammate returns after
/// U · 3 ms (U uniform) and libgomp's waiter sleeps after T = 300,000 spins ×
/// 10 cycles / 2.45 GHz = 1.2245 ms, so a barrier loses E[min(U · 3 ms, T)] =
/// T − T²/(2 · 3 ms) = 0.9746 ms (half the slice, 1.5 ms, were the waiter to
/// spin until its teammate runs). A 2-thread team doing 9.8e9 instructions
/// with 1000 barriers per 1e9 instructions of each thread:
/// - spread: per thread 4.9e9 instructions, time = 4.9e9/4.9e9 + 4.9 · 1000 ·
///   0.5e-6 = 1 + 0.00245 s;
/// - with an intruder on CPU 1: 4.9e9/2.45e9 + 4900 · (0.5e-6 + 0.9746e-3) =
///   2 + 4.778 s — oversubscribed barrier-heavy teams collapse;
/// - both threads started on CPU 0 alone: the OpenMP runtime saw one CPU for
///   two threads and waits passively, so no slice is lost: 4.9e9/2.45e9 +
///   4900 · 0.5e-6 = 2.00245 s;
/// - a team of plain threads (not OpenMP) with the intruder: it sleeps in
///   `pthread_barrier_wait`, so no slice is lost either: 2.00245 s.
#[test]
fn barriers_and_oversubscription() {
    let spin = 300_000.0 * 10.0 / 2.45e9;
    let spin_wait = spin - spin * spin / (2.0 * 3e-3);
    // (cpus, intruder, OpenMP, want)
    let cases = [
        ("0-1", false, true, 1.00245),
        ("0-1", true, true, 2.0 + 4900.0 * (0.5e-6 + spin_wait)),
        ("0", false, true, 2.00245),
        ("0-1", true, false, 2.00245),
    ];
    for (cpus, intruder, openmp, want) in cases {
        let mut e = Engine::new(two_cpus(), 1);
        let mut team = (*compute(vec![Phase::parallel(9.8)], 1000.0)).clone();
        team.openmp = openmp;
        launch(&mut e, 0, Arc::new(team), 2, cpus);
        if intruder {
            launch(&mut e, 1, compute(vec![Phase::serial(100.0)], 0.0), 1, "1");
        }
        let exits = run(&mut e);
        let t = exits.iter().find(|(a, _)| *a == 0).unwrap().1;
        assert_close(
            t,
            want,
            &format!("cpus {cpus}, intruder={intruder}, openmp={openmp}"),
        );
    }
}

/// A lock-bound team (90% of its work inside one mutex) of 2 threads, 9.8e9
/// instructions, on CPUs 0-1; τ = 1/4.9e9 s per instruction (engine/lock.rs):
/// - alone, no handoff cost: each member needs 1.9τ per instruction, 4.9e9
///   instructions each: 1.9 s;
/// - 1e7 acquisitions per 1e9 instructions, xfer_near_ns 50: both waiters
///   have a CPU of their own, so half the acquisitions move 2 lines:
///   1e-2 · 0.5 · 2 · 50 ns = 0.5 ns per instruction, paid by both
///   contenders: 4.9e9 · (1.9τ + 2 · 0.5e-9) = 1.9 + 4.9 = 6.8 s;
/// - the same with a single-thread intruder on each CPU: no waiter is alone,
///   so no transfers; each member uses 1/1.9 of its CPU but gets 1/2, so it
///   runs at 0.5/τ: 2 s (spinning waiters would have made it 3.8 s);
/// - an intruder on CPU 1 only: one waiter alone is no handoff (it has no
///   one to compete with); the member on CPU 1 sets the pace: 2 s.
#[test]
fn lock_waiters_sleep_and_handoffs_move_lines() {
    let cases = [
        (0.0, "", 1.9),
        (1e7, "", 6.8),
        (1e7, "0,1", 2.0),
        (1e7, "1", 2.0),
    ];
    for (acquires, intruders, want) in cases {
        let mut p = two_cpus();
        p.params.xfer_near_ns = 50.0;
        let mut e = Engine::new(p, 1);
        let mut m = (*compute(vec![Phase::parallel(9.8)], 0.0)).clone();
        m.lock_fraction = 0.9;
        m.lock_acquires_per_ginstr = acquires;
        launch(&mut e, 0, Arc::new(m), 2, "0-1");
        for (i, cpu) in intruders.split(',').filter(|c| !c.is_empty()).enumerate() {
            let app = i as u32 + 1;
            launch(
                &mut e,
                app,
                compute(vec![Phase::serial(100.0)], 0.0),
                1,
                cpu,
            );
        }
        let exits = run(&mut e);
        let t = exits.iter().find(|(a, _)| *a == 0).unwrap().1;
        assert_close(
            t,
            want,
            &format!("acquires {acquires}, intruders {intruders:?}"),
        );
    }
}

/// A serial phase then a parallel one: the team is created at the parallel
/// phase (one ThreadsChanged event with the main thread and 1 worker, at
/// 4.9e9/4.9e9 = 1 s), then 9.8e9 instructions over 2 CPUs take 1 s more.
#[test]
fn team_created_at_first_parallel_phase() {
    let mut e = Engine::new(two_cpus(), 1);
    launch(
        &mut e,
        0,
        compute(vec![Phase::serial(4.9), Phase::parallel(9.8)], 0.0),
        2,
        "0-1",
    );
    let first = e.advance_until(u64::MAX);
    assert_eq!(e.now_ns(), 1_000_000_000);
    match &first[..] {
        [EngineEvent::ThreadsChanged { tids, .. }] => assert_eq!(tids.len(), 2),
        other => panic!("{other:?}"),
    }
    let exits = run(&mut e);
    assert_close(exits[0].1, 2.0, "exit");
    // The deadline is honoured exactly when nothing happens before it.
    let mut e = Engine::new(two_cpus(), 1);
    launch(&mut e, 0, compute(vec![Phase::serial(4.9)], 0.0), 1, "0");
    assert!(e.advance_until(250_000_000).is_empty());
    assert_eq!(e.now_ns(), 250_000_000);
}

/// A migration refills only what the thread held in the LLC it left. BT (64 MiB
/// private per thread) alone and unpinned on nupoco-intel72, 72 threads: 18
/// threads under each 45 MB L3 hold 1/26 of their sets, so a move across
/// sockets refills ~2.5 MB (~1 ms at MLP 4), not the whole L3 (~17 ms).
/// Charged the whole L3, the balancer's jitter (0.5 moves per thread per
/// second, each stalling the bulk-synchronous team) made the run 7.5 times
/// slower than the same run without jitter (one thread per CPU throughout);
/// now the seeded moves and the remote memory they leave behind cost it less
/// than half again.
#[test]
fn unpinned_team_near_unmoved_on_many_caches() {
    let bt = Arc::new(crate::model::model("bt").unwrap().scaled(0.1));
    let exit = |jitter_per_s: f64| {
        let mut platform = crate::platform::platform("nupoco-intel72").unwrap();
        platform.params.jitter_per_s = jitter_per_s;
        let mut e = Engine::new(platform, 1);
        e.launch(AppLaunch {
            id: AppId { app: 0, rep: 0 },
            model: bt.clone(),
            threads: 72,
            placement: Placement::Unmanaged,
            memory: MemPolicy::Default,
            sched: SchedSettings::default(),
            malleable: false,
        });
        run(&mut e)[0].1
    };
    let (moved, unmoved) = (exit(0.5), exit(0.0));
    assert!(
        moved < 1.5 * unmoved,
        "with jitter {moved:.3} s, without {unmoved:.3} s"
    );
}

/// Four NPB and PARSEC models of different memory-level parallelism (ft 5,
/// mg 6, is 2, canneal 1.5), 24 threads each, unpinned on nupoco-amd64's
/// 64 CPUs under the balancer model: CPUs time-share threads of two
/// models, so their streams' count moves with activity, and rounded it
/// chattered across a whole customer in some intervals, which then ran to
/// the round cap. Every fixed point of their first 2 s now reaches the
/// tolerance (`memory.rs`, `Chatter`; docs/simulator.md, Speed).
#[test]
fn a_time_shared_mix_reaches_every_fixed_point() {
    let p = platform("nupoco-amd64").unwrap();
    let mut e = Engine::new(p, 7);
    for (app, name) in ["ft", "mg", "is", "canneal"].into_iter().enumerate() {
        let mut m = crate::model::model(name).unwrap();
        m.phases = vec![Phase::parallel(1e3)];
        e.launch(AppLaunch {
            id: AppId {
                app: app as u32,
                rep: 0,
            },
            model: Arc::new(m),
            threads: 24,
            placement: Placement::Unmanaged,
            memory: MemPolicy::Default,
            sched: SchedSettings::default(),
            malleable: false,
        });
    }
    e.advance_until(2_000_000_000);
    assert!(e.solves() > 10, "{} solves", e.solves());
    assert_eq!(e.unconverged(), 0, "of {} solves", e.solves());
}
