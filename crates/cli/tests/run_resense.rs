//! `coloc run --policy resense` on real kernels (docs/policies/resense.md, Tests): ReSensor is
//! re-run on every arrival, exit and thread creation (ReSense §2.3), and each
//! resulting mapping is what the apps' threads have in /proc
//! (/proc/<pid>/task/*/status, Cpus_allowed_list) while they run.
//!
//! The workload makes each event happen once for app `a`: it starts alone with
//! one thread (a serial phase), creates its OpenMP team when its parallel part
//! begins (threads changed), `b` arrives while it runs and exits well before it.
//! The test also prints, without asserting on it, how long after its creation
//! each thread was placed: by the trace's first plan naming it, and by what
//! /proc showed.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use coloc_model::trace::{Trace, TraceEvent};
use coloc_model::{AppId, CpuSet, Placement, Plan, Trigger};
use common::{
    allowed_at, allowed_here, apps_by_pid, decisions, run_sampled, unix_now, Decision, Sample,
    SampledRun, CLOCK_SLACK,
};

/// `a`: a serial part, then a 2-thread parallel part; `b`: 2 threads arriving
/// at 1 s with a twelfth of `a`'s work, so it exits long before `a` however
/// loaded the machine is (they share the CPUs alike). Sized so that `a` is
/// still running at 1 s on a fast host (there about 0.3 s serial and 5 s in
/// all; a host five times slower takes about 25 s, within the limit below):
/// with a fifth of this work `a` ended before `b` arrived on such a host.
const WORKLOAD: &str = r#"
name = "resense-events"
epoch = "100ms"

[[app]]
name = "a"
command = ["kernel:compute", "--iters", "120000000", "--serial-iters", "7500000"]
threads = 2

[[app]]
name = "b"
command = ["kernel:compute", "--iters", "10000000"]
threads = 2
arrive_at = "1s"
"#;

const A: AppId = AppId { app: 0, rep: 0 };
const B: AppId = AppId { app: 1, rep: 0 };

/// The threads `plan` pins one by one, with their CPU.
fn pinned_threads(plan: &Plan, app: AppId) -> Vec<(u32, CpuSet)> {
    match plan.for_app(app).map(|p| &p.placement) {
        Some(Placement::PerThread { threads, .. }) => threads.clone(),
        _ => Vec::new(),
    }
}

#[test]
fn resense_pins_at_arrival_and_remaps_on_every_event() {
    let here = allowed_here();
    if here.len() < 2 {
        eprintln!("skipped: needs 2 CPUs, this process may use {here}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let workload = dir.path().join("w.toml");
    std::fs::write(&workload, WORKLOAD).unwrap();
    let SampledRun { samples, trace, .. } = run_sampled(
        &workload,
        "resense",
        &out,
        Duration::from_millis(10),
        Duration::from_secs(120),
    );
    let app_of = apps_by_pid(&trace);
    assert_eq!(app_of.values().copied().collect::<Vec<_>>(), [A, B]);
    let started = trace.header.started_unix;
    let decisions = decisions(&trace);
    let exit_of = |app: AppId| {
        trace.events.iter().find_map(|e| match e {
            TraceEvent::Exit { t, app: a, .. } if *a == app => Some(t.as_secs_f64()),
            _ => None,
        })
    };
    let (a_exit, b_exit) = (exit_of(A).unwrap(), exit_of(B).unwrap());
    assert!(
        b_exit < a_exit,
        "b exits while a runs: {b_exit} vs {a_exit}"
    );

    // ReSensor ran on each event, and every plan after a's arrival placed a.
    let triggers: Vec<Trigger> = decisions.iter().map(|d| d.trigger).collect();
    for want in [
        Trigger::Arrival(A),
        Trigger::ThreadsChanged(A),
        Trigger::Arrival(B),
        Trigger::ThreadsChanged(B),
        Trigger::Exit(B),
    ] {
        let d = decisions
            .iter()
            .find(|d| d.trigger == want)
            .unwrap_or_else(|| panic!("no plan on {want:?}: {triggers:?}"));
        assert!(
            d.plan.for_app(A).is_some(),
            "the plan on {want:?} does not map a: {}",
            coloc_model::explain::plan_line(d.plan)
        );
    }
    // The first ThreadsChanged(A) follows a's start (its main thread alone); a
    // later one sees the OpenMP team and pins both threads.
    let thread_plans: Vec<usize> = decisions
        .iter()
        .filter(|d| d.trigger == Trigger::ThreadsChanged(A))
        .map(|d| pinned_threads(d.plan, A).len())
        .collect();
    assert_eq!(
        thread_plans.first(),
        Some(&1),
        "a's main thread pinned right after it started: {thread_plans:?}"
    );
    assert!(
        thread_plans.contains(&2),
        "a's team of 2 pinned thread by thread when it appeared: {thread_plans:?}"
    );

    // Every thread, whenever /proc was read, had the CPUs of a plan in force
    // then (or just before, while the next one was being applied).
    for s in &samples {
        let Some(&app) = app_of.get(&s.pid) else {
            continue;
        };
        let at = s.at_unix - started;
        let allowed = allowed_at(&decisions, app, s.tid, at);
        assert!(
            allowed.is_empty() || allowed.iter().any(|p| s.cpus.is_subset(p)),
            "{app} thread {} at {at:.3} s on {}, plans in force say {allowed:?}",
            s.tid,
            s.cpus
        );
    }

    // After each event, /proc showed a's threads exactly where the new plan
    // pinned them, before any later plan moved them.
    let pinned_as_planned = |d: &Decision| -> bool {
        let want = pinned_threads(d.plan, A);
        let until = decisions
            .iter()
            .filter(|n| n.t > d.t && pinned_threads(n.plan, A) != want)
            .map(|n| n.t)
            .fold(a_exit, f64::min);
        let mut rounds: BTreeMap<usize, Vec<&Sample>> = BTreeMap::new();
        for s in samples.iter().filter(|s| app_of.get(&s.pid) == Some(&A)) {
            let at = s.at_unix - started;
            if at > d.applied + CLOCK_SLACK && at < until - CLOCK_SLACK {
                rounds.entry(s.round).or_default().push(s);
            }
        }
        !want.is_empty()
            && rounds.values().any(|round| {
                want.iter()
                    .all(|(tid, cpus)| round.iter().any(|s| s.tid == *tid && s.cpus == *cpus))
            })
    };
    for want in [
        Trigger::ThreadsChanged(A),
        Trigger::Arrival(B),
        Trigger::Exit(B),
    ] {
        let d = decisions.iter().find(|d| d.trigger == want).unwrap();
        assert!(
            pinned_as_planned(d),
            "after the plan on {want:?} at {:.3} s, /proc never showed a's threads at {:?}",
            d.t,
            pinned_threads(d.plan, A)
        );
    }
    // At arrival a had no thread yet; its main thread was pinned by a plan
    // made once it had started, and /proc showed it there.
    let first_pin = decisions
        .iter()
        .find(|d| !pinned_threads(d.plan, A).is_empty())
        .unwrap();
    assert!(
        pinned_as_planned(first_pin),
        "a's main thread never seen pinned"
    );

    print_placement_delays(&trace, &decisions, &samples, &app_of);
}

/// For every thread of the apps: its creation (from /proc), the first plan
/// that pinned it, and the first time /proc showed it on that plan's CPU.
fn print_placement_delays(
    trace: &Trace,
    decisions: &[Decision],
    samples: &[Sample],
    app_of: &BTreeMap<u32, AppId>,
) {
    // SAFETY: sysconf has no preconditions and only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let boot = nix::time::clock_gettime(nix::time::ClockId::CLOCK_BOOTTIME).unwrap();
    let boot_unix = unix_now() - (boot.tv_sec() as f64 + boot.tv_nsec() as f64 * 1e-9);
    let started = trace.header.started_unix;
    let poll = "50 ms /proc rescan";
    println!(
        "placement delay from thread creation (stat field 22, 1/{ticks} s resolution; {poll}, \
         epoch {} ms, /proc read every 10 ms by this test):",
        trace.header.epoch.as_millis()
    );
    println!(
        "{:>4} {:>8} {:>10} {:>14} {:>18}",
        "app", "tid", "created s", "planned +ms", "seen pinned +ms"
    );
    let mut seen: Vec<(u32, u32)> = samples.iter().map(|s| (s.pid, s.tid)).collect();
    seen.sort_unstable();
    seen.dedup();
    for (pid, tid) in seen {
        let Some(app) = app_of.get(&pid) else {
            continue;
        };
        let Some(start) = samples
            .iter()
            .find(|s| s.tid == tid)
            .and_then(|s| s.start_ticks)
        else {
            continue;
        };
        let created = boot_unix + start as f64 / ticks - started;
        let plan = decisions.iter().find_map(|d| {
            pinned_threads(d.plan, *app)
                .into_iter()
                .find(|(t, _)| *t == tid)
                .map(|(_, cpus)| (d.t, cpus))
        });
        let ms = |t: f64| format!("{:.0}", (t - created) * 1e3);
        let (planned, seen_pinned) = match plan {
            Some((t, cpus)) => (
                ms(t),
                samples
                    .iter()
                    .filter(|s| s.tid == tid && s.cpus == cpus && s.at_unix - started >= t)
                    .map(|s| ms(s.at_unix - started))
                    .next()
                    .unwrap_or_else(|| "never".into()),
            ),
            None => ("never".into(), "-".into()),
        };
        println!(
            "{:>4} {tid:>8} {created:>10.3} {planned:>14} {seen_pinned:>18}",
            app.to_string()
        );
    }
}
