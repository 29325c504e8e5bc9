//! Shortfalls and violations on the 2-CPU fixture machine, over 100 ms
//! intervals (run and wait times in ms, turned into ns).

use std::time::Duration;

use coloc_model::testutils::{fixture_topologies, running_app};
use coloc_model::{AppId, AppPlan, AppSample, AppView, CpuSet, Observation, Placement};
use coloc_model::{ThreadSample, Topology, TraceEvent};

use super::{shortfalls, Conservation};

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
        .is_empty());
    let v = c.check(&topo, &app, &stacked(200), &stacked(300));
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
        .is_empty());
    assert!(c
        .check(&topo, &app, &stacked(400), &stacked(500))
        .is_empty());
}
