//! What LinuxMachine observes and sets beyond placement: samples from /proc,
//! the DoP of a malleable OpenMP app through the shim, nice, slice and memory
//! policy at launch and later.

mod support;

use std::time::{Duration, Instant};

use coloc_manager::Machine;
use coloc_model::{AppPlan, CpuSet, MemPolicy, OmpSample, Plan, SchedSettings};
use support::*;

fn plan(p: AppPlan) -> Plan {
    Plan {
        apps: vec![p],
        ..Plan::default()
    }
}

/// Observes until `done` accepts the OpenMP sample of the `app`th app
/// launched (10 s at most).
fn omp_until(
    m: &mut coloc_linux::machine::LinuxMachine,
    app: usize,
    what: &str,
    done: impl Fn(&OmpSample) -> bool,
) -> OmpSample {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        m.wait_until(m.now() + Duration::from_millis(20)).unwrap();
        let obs = m.observe().unwrap();
        let omp = obs.apps[app]
            .omp
            .clone()
            .expect("a malleable libgomp app has a channel");
        if done(&omp) {
            return omp;
        }
        assert!(Instant::now() < until, "{what}: last sample {omp:?}");
    }
}

#[test]
fn dop_of_a_malleable_app_follows_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    let mut app = spec(
        "malleable",
        2,
        &["kernel:barrier", "--regions", "1000000", "--work", "2000"],
    );
    app.malleable = true;
    // Waiting threads sleep instead of spinning, so the test does not need
    // both CPUs to itself.
    app.env.insert("OMP_WAIT_POLICY".into(), "passive".into());
    let p1 = AppPlan {
        dop: Some(1),
        ..AppPlan::native(id(0))
    };
    let l = launch(&mut m, id(0), &app, &p1);
    let environ = std::fs::read(format!("/proc/{}/environ", l.pid)).unwrap();
    let environ = String::from_utf8_lossy(&environ);
    assert!(environ.contains("libcoloc_omp"), "LD_PRELOAD is set");
    assert!(environ.contains("OMP_NUM_THREADS=2"));
    let one = omp_until(&mut m, 0, "team of 1", |o| {
        o.team_size == 1 && o.regions_completed > 10
    });
    assert_eq!(one.dop_seen, Some(1));
    let out = m.apply(&plan(AppPlan {
        dop: Some(2),
        ..AppPlan::native(id(0))
    }));
    assert!(out[0].refused.is_empty(), "{out:?}");
    let two = omp_until(&mut m, 0, "team of 2", |o| o.team_size == 2);
    assert!(two.regions_completed > one.regions_completed);
    omp_until(&mut m, 0, "DoP 2 acknowledged", |o| o.dop_seen == Some(2));
    let records = || {
        std::fs::read_dir("/dev/shm")
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                name.to_string_lossy()
                    .starts_with(&format!("coloc-{}-", std::process::id()))
            })
            .count()
    };
    assert!(records() >= 1);
    m.finish().unwrap();
    assert!(journals(dir.path()).is_empty());
}

/// A malleable app run through a shell, which links no OpenMP runtime: the
/// shim is offered to the programs the shell starts. A shell that starts
/// none reports no DoP seen (its lever has no channel); the libgomp program
/// another shell starts takes the channel and follows the plan's DoP.
#[test]
fn a_shell_hands_the_dop_channel_to_the_openmp_program_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    let mut idle = spec("script", 1, &["sh", "-c", "sleep 5"]);
    idle.malleable = true;
    let barrier = ["kernel:barrier", "--regions", "1000000", "--work", "2000"];
    let kernel = coloc_workloads::resolve_argv(&barrier.map(String::from))
        .expect("kernel installed")
        .join(" ");
    // `; true`: the shell starts the kernel as its child instead of
    // becoming it.
    let mut wrapped = spec("wrapped", 2, &["sh", "-c", &format!("{kernel}; true")]);
    wrapped.malleable = true;
    wrapped
        .env
        .insert("OMP_WAIT_POLICY".into(), "passive".into());
    let at = |app, dop| AppPlan {
        dop: Some(dop),
        ..AppPlan::native(id(app))
    };
    let l = launch(&mut m, id(0), &idle, &at(0, 1));
    let environ = std::fs::read(format!("/proc/{}/environ", l.pid)).unwrap();
    assert!(String::from_utf8_lossy(&environ).contains("libcoloc_omp"));
    launch(&mut m, id(1), &wrapped, &at(1, 1));
    let one = omp_until(&mut m, 1, "team of 1", |o| {
        o.team_size == 1 && o.regions_completed > 10
    });
    assert_eq!(one.dop_seen, Some(1));
    let out = m.apply(&Plan {
        apps: vec![at(0, 1), at(1, 2)],
        ..Plan::default()
    });
    assert!(out.iter().all(|o| o.refused.is_empty()), "{out:?}");
    omp_until(&mut m, 1, "team of 2", |o| o.team_size == 2);
    let idle = m.observe().unwrap().apps[0].omp.clone().expect("a channel");
    assert_eq!(idle.dop_seen, None, "{idle:?}");
    assert_eq!(idle.regions_completed, 0, "{idle:?}");
    m.finish().unwrap();
    assert!(journals(dir.path()).is_empty());
}

#[test]
fn samples_come_from_proc_and_say_which_signals() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    let app = spec("busy", 2, &["kernel:compute", "--iters", "100000000"]);
    let l = launch(&mut m, id(0), &app, &AppPlan::native(id(0)));
    until_threads(l.pid, 2);
    std::thread::sleep(Duration::from_millis(200));
    // Threads are found while waiting, as in the Manager loop.
    m.wait_until(m.now() + Duration::from_millis(20)).unwrap();
    let obs = m.observe().unwrap();
    assert!(obs.signals.schedstat);
    let a = &obs.apps[0];
    assert_eq!(a.pid, l.pid);
    assert!(a.rss_bytes > 0);
    assert!(a.threads.len() >= 2, "{a:?}");
    let main = a.thread(l.pid).unwrap();
    assert!(main.run_ns > 0 && main.cpu.is_some(), "{main:?}");
    assert!(main.minor_faults > 0, "{main:?}");
    if obs.signals.hw_counters {
        assert!(main.counters.is_some());
    } else {
        assert!(a.threads.iter().all(|t| t.counters.is_none()));
    }
    // Cumulative: a later sample has at least as much run time.
    std::thread::sleep(Duration::from_millis(100));
    let later = m.observe().unwrap();
    let again = later.apps[0]
        .threads
        .iter()
        .find(|t| t.tid == l.pid)
        .unwrap();
    assert!(again.run_ns > main.run_ns);
    assert!(later.at > obs.at);
    m.finish().unwrap();
}

fn stat_field(pid: u32, index: usize) -> i64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split(' ').nth(index - 3).unwrap().parse().unwrap()
}

fn slice_ns(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/sched")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("se.slice"))
        .and_then(|v| v.trim_start_matches([' ', ':']).trim().parse().ok())
}

#[test]
fn nice_slice_and_memory_policy_at_launch_and_after() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    let app = spec("tuned", 1, &["sleep", "30"]);
    let p = AppPlan {
        memory: MemPolicy::Interleave,
        sched: SchedSettings {
            nice: Some(5),
            slice_us: Some(8000),
        },
        ..AppPlan::native(id(0))
    };
    let l = launch(&mut m, id(0), &app, &p);
    let original_slice = slice_ns(std::process::id());
    assert_eq!(stat_field(l.pid, 19), 5, "nice in force from the start");
    let numa = std::fs::read_to_string(format!("/proc/{}/numa_maps", l.pid)).unwrap();
    assert!(numa.contains("interleave:"), "{numa}");
    let first = m.apply(&plan(p.clone()));
    // The launch's refusals (a kernel without custom slices) come with the first apply.
    let slice_refused = first[0].refused.iter().any(|r| r.contains("slice"));
    if slice_refused {
        eprintln!("this kernel keeps its own slice: {first:?}");
    } else if slice_ns(l.pid).is_some() {
        assert_eq!(slice_ns(l.pid), Some(8_000_000));
    }
    assert_eq!(first[0].threads_set, 0, "already in force: {first:?}");
    let later = m.apply(&plan(AppPlan {
        memory: MemPolicy::Local,
        sched: SchedSettings {
            nice: Some(2),
            slice_us: None,
        },
        ..AppPlan::native(id(0))
    }));
    assert_eq!(later[0].threads_set, 1, "{later:?}");
    assert!(
        later[0]
            .refused
            .iter()
            .any(|r| r.contains("the policy set at launch cannot be changed")),
        "{later:?}"
    );
    assert_eq!(stat_field(l.pid, 19), 2);
    assert_eq!(slice_ns(l.pid), original_slice, "slice back to coloc's own");
    // Native: nice back to the original (coloc's own, 0 here).
    m.apply(&plan(AppPlan::native(id(0))));
    assert_eq!(stat_field(l.pid, 19), stat_field(std::process::id(), 19));
    m.finish().unwrap();
    assert!(journals(dir.path()).is_empty());
}

/// Every thread's memory policy for new allocations, as the kernel shows it
/// in the thread's numa_maps for a mapping without a policy of its own (the
/// first, the program's text): `default` or `interleave:NODES`.
fn thread_mempolicies(pid: u32) -> Vec<String> {
    tids_of(pid)
        .iter()
        .filter_map(|t| std::fs::read_to_string(format!("/proc/{pid}/task/{t}/numa_maps")).ok())
        .filter_map(|maps| Some(maps.lines().next()?.split_whitespace().nth(1)?.to_string()))
        .collect()
}

/// A running shim app's later allocations follow `Interleave` (Thread
/// Tranquilizer's memory setting, docs/policies/tranquilizer.md): its own
/// threads set MPOL_INTERLEAVE over the nodes of its CPUs at their next
/// region, and go back to the policy they started with when the plan does
/// (a removed record does the same: the shim's own test).
#[test]
fn a_shim_apps_threads_interleave_later_allocations_and_go_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    let mut app = spec(
        "interleaved",
        2,
        &["kernel:barrier", "--regions", "1000000", "--work", "2000"],
    );
    app.malleable = true;
    app.env.insert("OMP_WAIT_POLICY".into(), "passive".into());
    let l = launch(&mut m, id(0), &app, &AppPlan::native(id(0)));
    omp_until(&mut m, 0, "a team of 2", |o| o.team_size == 2);
    let all = |want: &str| {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let policies = thread_mempolicies(l.pid);
            if policies.len() >= 2 && policies.iter().all(|p| p.starts_with(want)) {
                return;
            }
            assert!(Instant::now() < until, "want {want}: {policies:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    all("default");
    let out = m.apply(&plan(AppPlan {
        memory: MemPolicy::Interleave,
        ..AppPlan::native(id(0))
    }));
    assert!(out[0].refused.is_empty(), "{out:?}");
    all("interleave:");
    m.apply(&plan(AppPlan::native(id(0))));
    all("default");
    m.finish().unwrap();
    assert!(journals(dir.path()).is_empty());
}

/// A shim app launched on one CPU, its threads pinned there by the shim, gets
/// every CPU back when the plan leaves it to Linux: the shim restores the
/// affinity the app had before coloc placed it (`COLOC_OMP_AFFINITY`), not
/// the placement it found when it attached, which left a team of two on one
/// CPU of an idle machine.
#[test]
fn a_shim_app_left_to_linux_gets_its_own_cpus_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    let own = cpus_of(std::process::id(), std::process::id()).unwrap();
    assert!(own.len() >= 2, "needs 2 CPUs: {own}");
    let mut app = spec(
        "pinned",
        2,
        &["kernel:barrier", "--regions", "1000000", "--work", "2000"],
    );
    app.malleable = true;
    app.env.insert("OMP_WAIT_POLICY".into(), "passive".into());
    let one = own.iter().next().unwrap().to_string();
    let l = launch(&mut m, id(0), &app, &shared(id(0), &one));
    omp_until(&mut m, 0, "a team of 2", |o| {
        o.team_size == 2 && o.regions_completed > 10
    });
    let on_one: CpuSet = one.parse().unwrap();
    assert!(
        tids_of(l.pid)
            .iter()
            .all(|t| cpus_of(l.pid, *t) == Some(on_one.clone())),
        "placed on {one}"
    );
    // Left to Linux with a full team, as auto plans it: the record asks for
    // no pinning.
    let out = m.apply(&plan(AppPlan {
        dop: Some(2),
        ..AppPlan::native(id(0))
    }));
    assert!(out[0].refused.is_empty(), "{out:?}");
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let regions = m.observe().unwrap().apps[0]
            .omp
            .clone()
            .unwrap()
            .regions_completed;
        m.wait_until(m.now() + Duration::from_millis(50)).unwrap();
        let later = m.observe().unwrap().apps[0]
            .omp
            .clone()
            .unwrap()
            .regions_completed;
        let cpus: Vec<_> = tids_of(l.pid).iter().map(|t| cpus_of(l.pid, *t)).collect();
        if later > regions && cpus.iter().all(|c| c.as_ref() == Some(&own)) {
            break;
        }
        assert!(Instant::now() < until, "threads on {cpus:?}, want {own}");
    }
    m.finish().unwrap();
}
