//! LinuxMachine on this machine: the Manager loop with real apps, thread
//! tracking, restoring on exit and on finish, vanished threads, launch errors.
//! Each test checks what /proc says, not what the machine believes.

mod support;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::time::Duration;

use coloc_linux::machine::LinuxMachine;
use coloc_manager::{run, Machine, MachineError, MachineEvent, Recorder, RunOptions};
use coloc_model::trace::ExitStatus;
use coloc_model::{AppId, Placement, Plan, TraceEvent, Workload};
use support::*;

/// Checks, each time a plan has been applied, that every thread of every
/// running app is on exactly the CPUs the plan gave it.
struct PlacementChecker {
    plan: Option<Plan>,
    pids: BTreeMap<AppId, u32>,
    /// (apps running together, threads checked) per check.
    checks: RefCell<Vec<(usize, usize)>>,
    events: Vec<TraceEvent>,
}

impl Recorder for PlacementChecker {
    fn record(&mut self, event: &TraceEvent) -> io::Result<()> {
        self.events.push(event.clone());
        match event {
            TraceEvent::Plan { plan, .. } => self.plan = Some(plan.clone()),
            TraceEvent::Start { app, pid, .. } => {
                self.pids.insert(*app, *pid);
            }
            TraceEvent::Exit { app, .. } => {
                self.pids.remove(app);
            }
            TraceEvent::Applied { .. } => {
                let plan = self.plan.as_ref().expect("a plan before it is applied");
                let mut threads = 0;
                for (app, pid) in &self.pids {
                    let placement = &plan
                        .for_app(*app)
                        .expect("running apps are planned")
                        .placement;
                    for tid in tids_of(*pid) {
                        let Some(on) = cpus_of(*pid, tid) else {
                            continue;
                        };
                        assert_eq!(
                            Some(&on),
                            placement.cpus_of(tid),
                            "app {app} thread {tid} runs on {on}, planned {placement:?}"
                        );
                        threads += 1;
                    }
                }
                self.checks.borrow_mut().push((self.pids.len(), threads));
            }
            _ => {}
        }
        Ok(())
    }
}

#[test]
fn equal_policy_pins_two_real_apps_and_restores_everything() {
    if two_cpus().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    let workload = Workload {
        name: "two".into(),
        epoch: None,
        apps: vec![
            spec("a", 2, &["kernel:compute", "--iters", "6000000"]),
            spec("b", 2, &["kernel:compute", "--iters", "6000000"]),
        ],
    };
    let mut policy = coloc_policy::by_name("equal").unwrap();
    let mut rec = PlacementChecker {
        plan: None,
        pids: BTreeMap::new(),
        checks: RefCell::new(Vec::new()),
        events: Vec::new(),
    };
    let opts = RunOptions {
        epoch: Duration::from_millis(100),
        seed: None,
        started_unix: 0.0,
        stop: None,
    };
    let summary = run(&mut m, policy.as_mut(), &workload, &opts, &mut rec).unwrap();
    assert_eq!(summary.instances, 2);
    assert_eq!(summary.failed, 0, "{:?}", rec.events);
    let checks = rec.checks.into_inner();
    assert!(
        checks
            .iter()
            .any(|&(apps, threads)| apps == 2 && threads >= 4),
        "both apps with both threads were checked while running together: {checks:?}"
    );
    let exits: Vec<_> = rec
        .events
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Exit { status, .. } => Some(status.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(exits, [ExitStatus::Code(0), ExitStatus::Code(0)]);
    let out = std::fs::read_to_string(dir.path().join("out/a-0.out")).unwrap();
    assert!(out.contains("coloc-threads: 2"), "{out}");
    assert!(
        journals(dir.path()).is_empty(),
        "{:?}",
        journals(dir.path())
    );
    assert!(summary.usage.wall > Duration::ZERO);
    assert!(summary.usage.cpu > Duration::ZERO);
}

#[test]
fn threads_created_later_are_reported_and_placed() {
    let Some(cpus) = two_cpus() else { return };
    let (c0, c1) = (cpus.first().unwrap(), cpus.iter().nth(1).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    // One thread for ~0.5 s (serial part), then an OpenMP team of two.
    let app = spec(
        "late",
        2,
        &[
            "kernel:compute",
            "--serial-iters",
            "2000000",
            "--iters",
            "8000000",
        ],
    );
    let l = launch(&mut m, id(0), &app, &shared(id(0), &c0.to_string()));
    assert_eq!(l.tids, [l.pid]);
    assert_eq!(cpus_of(l.pid, l.pid), Some(c0.to_string().parse().unwrap()));
    let tids = wait_for(&mut m, Duration::from_secs(10), |e| match e {
        MachineEvent::ThreadsChanged { tids, .. } if tids.len() >= 2 => Some(tids.clone()),
        _ => None,
    });
    assert_eq!(tids[0], l.pid, "oldest first");
    // The new thread inherited CPU c0; the plan moves it alone to c1.
    let plan = Plan {
        apps: vec![coloc_model::AppPlan {
            placement: Placement::PerThread {
                threads: vec![(l.pid, c0.to_string().parse().unwrap())],
                rest: c1.to_string().parse().unwrap(),
            },
            ..coloc_model::AppPlan::native(id(0))
        }],
        ..Plan::default()
    };
    let out = m.apply(&plan);
    assert_eq!(out[0].threads_set, 1, "{out:?}");
    assert_eq!(out[0].threads_vanished, 0);
    assert_eq!(cpus_of(l.pid, l.pid).unwrap().to_string(), c0.to_string());
    assert_eq!(cpus_of(l.pid, tids[1]).unwrap().to_string(), c1.to_string());
    // Applying the same plan again changes nothing.
    assert_eq!(m.apply(&plan)[0].threads_set, 0);
    let (status, usage) = wait_for(&mut m, Duration::from_secs(30), |e| match e {
        MachineEvent::Exited {
            status,
            output,
            usage,
            ..
        } => {
            assert!(output.as_deref().unwrap_or("").contains("coloc-metric"));
            Some((status.clone(), *usage))
        }
        _ => None,
    });
    assert_eq!(status, ExitStatus::Code(0));
    // Its whole life's CPU time, from wait4: both threads computed.
    let usage = usage.expect("a child's exit carries its usage");
    assert!(usage.cpu_ns > 0, "{usage:?}");
    assert_eq!(usage.cycles, None);
    m.finish().unwrap();
    assert!(journals(dir.path()).is_empty());
}

#[test]
fn a_descendant_that_outlives_its_app_gets_its_cpus_back() {
    let Some(cpus) = two_cpus() else { return };
    let one = cpus.first().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    let (l, tids, bg) = launch_with_background(&mut m, dir.path(), &one);
    assert!(
        tids.contains(&bg),
        "the background sleep {bg} is tracked: {tids:?}"
    );
    assert_eq!(cpus_of(bg, bg).unwrap().to_string(), one, "inherited");
    wait_for(&mut m, Duration::from_secs(5), |e| {
        matches!(e, MachineEvent::Exited { app, .. } if *app == id(0)).then_some(())
    });
    // The main process is gone; its child still runs, with the CPUs it would
    // have had without coloc.
    assert_eq!(cpus_of(bg, bg), Some(cpus.clone()));
    assert_ne!(l.pid, bg);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(bg as i32),
        nix::sys::signal::SIGKILL,
    )
    .unwrap();
    m.finish().unwrap();
    assert!(journals(dir.path()).is_empty());
}

#[test]
fn finish_ends_running_apps_and_escaped_descendants() {
    let Some(cpus) = two_cpus() else { return };
    let one = cpus.first().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    // `setsid` puts the second sleep in its own session: SIGTERM to the app's
    // process group does not reach it, so it survives finish().
    let pidfile = dir.path().join("escaped.pid");
    let script = format!(
        "setsid sh -c 'echo $$ > {}; exec sleep 30' & sleep 30",
        pidfile.display()
    );
    let app = spec("interrupted", 1, &["sh", "-c", &script]);
    let l = launch(&mut m, id(0), &app, &shared(id(0), &one));
    wait_for(&mut m, Duration::from_secs(5), |e| match e {
        MachineEvent::ThreadsChanged { tids, .. } if tids.len() >= 3 => Some(()),
        _ => None,
    });
    // Three tasks can be seen before the escaped shell has written its pid.
    let escaped = read_pid_file(&pidfile);
    assert_eq!(cpus_of(escaped, escaped).unwrap().to_string(), one);
    assert!(!journals(dir.path()).is_empty(), "changes are journaled");
    let usage = m.finish().unwrap();
    assert!(usage.wall > Duration::ZERO);
    // The app is gone, the escaped process ended too (its settings restored
    // first), the journal removed.
    assert!(!std::path::Path::new(&format!("/proc/{}", l.pid)).exists());
    assert!(!running(escaped), "the escaped process is ended");
    assert!(journals(dir.path()).is_empty());
}

/// A process the app started and left running when it exited is restored at
/// the app's exit and ended with the run: nothing coloc started outlives it.
#[test]
fn descendants_that_outlive_their_app_end_with_the_run() {
    let Some(cpus) = two_cpus() else { return };
    let one = cpus.first().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    let (_, _, bg) = launch_with_background(&mut m, dir.path(), &one);
    wait_for(&mut m, Duration::from_secs(5), |e| {
        matches!(e, MachineEvent::Exited { app, .. } if *app == id(0)).then_some(())
    });
    assert!(running(bg), "still running while the run goes on");
    m.finish().unwrap();
    assert!(!running(bg), "ended with the run");
}

/// Launches app 0: a shell pinned to `cpus` that starts `sleep 30` in the
/// background and exits half a second later. Returns the launch, the app's
/// tasks once both are seen, and the background sleep's pid.
fn launch_with_background(
    m: &mut LinuxMachine,
    dir: &std::path::Path,
    cpus: &str,
) -> (coloc_manager::Launched, Vec<u32>, u32) {
    let pidfile = dir.join("bg.pid");
    let script = format!("sleep 30 & echo $! > {}; sleep 0.5", pidfile.display());
    let app = spec("parent", 1, &["sh", "-c", &script]);
    let l = launch(m, id(0), &app, &shared(id(0), cpus));
    let tids = wait_for(m, Duration::from_secs(5), |e| match e {
        MachineEvent::ThreadsChanged { tids, .. } if tids.len() >= 2 => Some(tids.clone()),
        _ => None,
    });
    // The shell may be seen before it has written the pid.
    (l, tids, read_pid_file(&pidfile))
}

/// The pid a test's shell writes to `path`, waiting up to 5 s for it: the
/// shell's tasks can be seen before it has written the file.
fn read_pid_file(path: &std::path::Path) -> u32 {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let pid = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| t.trim().parse().ok());
        match pid {
            Some(pid) => return pid,
            None if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10))
            }
            None => panic!("{} was never written", path.display()),
        }
    }
}

/// Whether `pid` exists and is not a zombie.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        let state = s[s.rfind(')').unwrap() + 2..].chars().next();
        !matches!(state, Some('Z' | 'X'))
    })
}

#[test]
fn a_thread_that_exited_counts_as_vanished() {
    let Some(cpus) = two_cpus() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    let app = spec("short", 1, &["sh", "-c", "sleep 0.3"]);
    let l = launch(&mut m, id(0), &app, &coloc_model::AppPlan::native(id(0)));
    // Let it exit, but do not poll: the machine still believes it runs.
    while std::path::Path::new(&format!("/proc/{}/task/{}/stat", l.pid, l.pid)).exists()
        && std::fs::read_to_string(format!("/proc/{}/stat", l.pid))
            .is_ok_and(|s| !s.contains(") Z "))
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let one = cpus.first().unwrap().to_string();
    let out = m.apply(&Plan {
        apps: vec![shared(id(0), &one)],
        ..Plan::default()
    });
    assert_eq!(
        (out[0].threads_set, out[0].threads_vanished),
        (0, 1),
        "{out:?}"
    );
    assert!(out[0].refused.is_empty(), "{out:?}");
    m.finish().unwrap();
}

#[test]
fn a_command_that_does_not_exist_is_a_launch_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut m: LinuxMachine = machine(dir.path());
    let app = spec("ghost", 1, &["/nonexistent/coloc-no-such-program", "x"]);
    let err = m
        .launch(coloc_manager::LaunchRequest {
            id: id(3),
            spec: &app,
            threads: 1,
            plan: &shared(id(3), "0"),
        })
        .unwrap_err();
    match &err {
        MachineError::Launch { app, name, .. } => {
            let reason = err.launch_reason().unwrap();
            assert_eq!(*app, id(3));
            assert_eq!(name, "ghost");
            assert!(
                reason.contains("/nonexistent/coloc-no-such-program")
                    && reason.contains("No such file or directory"),
                "{reason}"
            );
        }
        e => panic!("not a launch error: {e}"),
    }
    assert!(
        err.chain().starts_with("starting 3.0 (ghost): "),
        "{}",
        err.chain()
    );
    m.finish().unwrap();
    assert!(
        journals(dir.path()).is_empty(),
        "the journal of a failed launch is removed"
    );
}

/// An app that sets its own threads' affinity silently defeated the plan:
/// coloc compared with what it last wrote, not with the kernel. Now each apply
/// finds the drift, puts the thread back up to MAX_REAPPLY times, then leaves
/// its affinity to the app, and counts every drift.
#[test]
fn an_app_that_sets_its_own_affinity_is_put_back_then_respected() {
    use coloc_linux::machine::MAX_REAPPLY;
    let Some(cpus) = two_cpus() else { return };
    let (first, last) = (cpus.first().unwrap(), cpus.iter().last().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    let app = spec("self-pinning", 1, &["sleep", "30"]);
    let planned = shared(id(0), &last.to_string());
    let l = launch(&mut m, id(0), &app, &planned);
    let plan = Plan {
        apps: vec![planned],
        ..Plan::default()
    };
    let out = m.apply(&plan);
    assert_eq!(out[0].affinity_drift, 0);
    let moves_itself = || {
        let mut set = nix::sched::CpuSet::new();
        set.set(first as usize).unwrap();
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(l.pid as i32), &set).unwrap();
    };
    for round in 1..=MAX_REAPPLY {
        moves_itself();
        let out = m.apply(&plan);
        assert_eq!(out[0].affinity_drift, 1, "round {round}");
        assert_eq!(
            cpus_of(l.pid, l.pid).unwrap().to_string(),
            last.to_string(),
            "put back, round {round}"
        );
    }
    moves_itself();
    let out = m.apply(&plan);
    assert_eq!(out[0].affinity_drift, 1);
    assert!(
        out[0].refused.iter().any(|r| r.contains("left to the app")),
        "{:?}",
        out[0].refused
    );
    assert_eq!(
        cpus_of(l.pid, l.pid).unwrap().to_string(),
        first.to_string()
    );
    // From now on the app's choice stands, and is no longer a drift.
    let out = m.apply(&plan);
    assert_eq!(out[0].affinity_drift, 0);
    assert_eq!(
        cpus_of(l.pid, l.pid).unwrap().to_string(),
        first.to_string()
    );
    m.finish().unwrap();
    assert!(journals(dir.path()).is_empty());
}
