//! LinuxMachine adopting processes it did not start (the node service,
//! docs/service.md): placed like launched ones, restored and left running on
//! release and at finish, their end seen in /proc, a reused pid refused.
//! Each test checks what /proc says, and ends the processes it started.

mod support;

use std::process::{Child, Command};
use std::time::Duration;

use coloc_linux::machine::{Adopt, AdoptError};
use coloc_manager::{Machine, MachineEvent};
use coloc_model::trace::ExitStatus;
use coloc_model::{MemPolicy, Plan};
use support::*;

/// A child ended (killed, reaped) when the test ends, however it ends.
struct Kept(Child);

impl Drop for Kept {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sleeper() -> Kept {
    Kept(Command::new("sleep").arg("60").spawn().unwrap())
}

fn adopt(pid: u32, app: u32) -> Adopt<'static> {
    Adopt {
        id: id(app),
        pid,
        start: None,
        malleable: false,
        program: "sleep",
        dop: 1,
        cpus: Vec::new(),
        memory: MemPolicy::Default,
        held: false,
        cap_threads: false,
        in_place: false,
        asked_by: None,
        runtime: None,
        own_threads: true,
    }
}

#[test]
fn an_adopted_process_is_placed_then_released_with_its_cpus_back() {
    let Some(all) = two_cpus() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    let s = sleeper();
    let pid = s.0.id();
    let adopted = m.adopt(adopt(pid, 0)).unwrap();
    assert_eq!(adopted.allowed, all);
    assert_eq!(adopted.launched.pid, pid);
    assert_eq!(m.instance_of(pid), Some(id(0)));
    let first = all.first().unwrap().to_string();
    m.apply(&Plan {
        apps: vec![shared(id(0), &first)],
        ..Plan::default()
    });
    assert_eq!(cpus_of(pid, pid), Some(first.parse().unwrap()));
    let refused = m.release(id(0)).unwrap().expect("it was managed");
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(cpus_of(pid, pid), Some(all), "released with coloc's CPUs");
    assert_eq!(m.release(id(0)).unwrap(), None, "released twice");
    m.finish().unwrap();
    assert!(tids_of(pid).contains(&pid), "release ended the process");
}

#[test]
fn finish_restores_an_adopted_process_and_leaves_it_running() {
    let Some(all) = two_cpus() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    let s = sleeper();
    let pid = s.0.id();
    m.adopt(adopt(pid, 0)).unwrap();
    let first = all.first().unwrap().to_string();
    m.apply(&Plan {
        apps: vec![shared(id(0), &first)],
        ..Plan::default()
    });
    m.finish().unwrap();
    assert_eq!(cpus_of(pid, pid), Some(all));
    assert!(
        journals(dir.path()).is_empty(),
        "{:?}",
        journals(dir.path())
    );
}

#[test]
fn an_adopted_process_ends_with_an_unknown_status() {
    if two_cpus().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    let mut s = sleeper();
    let pid = s.0.id();
    m.adopt(adopt(pid, 3)).unwrap();
    s.0.kill().unwrap();
    s.0.wait().unwrap();
    let status = wait_for(&mut m, Duration::from_secs(20), |e| match e {
        MachineEvent::Exited { app, status, .. } if *app == id(3) => Some(status.clone()),
        _ => None,
    });
    assert_eq!(status, ExitStatus::Unknown);
    m.finish().unwrap();
}

#[test]
fn a_reused_pid_or_a_managed_one_is_refused() {
    if two_cpus().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    let s = sleeper();
    let pid = s.0.id();
    let err = m
        .adopt(Adopt {
            start: Some(1),
            ..adopt(pid, 0)
        })
        .unwrap_err();
    assert!(
        matches!(err, AdoptError::Reused { expected: 1, .. }),
        "{err}"
    );
    m.adopt(adopt(pid, 0)).unwrap();
    let err = m.adopt(adopt(pid, 1)).unwrap_err();
    assert!(matches!(err, AdoptError::Managed { .. }), "{err}");
    let err = m.adopt(adopt(u32::MAX / 2, 2)).unwrap_err();
    assert!(matches!(err, AdoptError::Gone { .. }), "{err}");
    m.finish().unwrap();
}

/// A held process (not exec'd yet) is handed its plan's memory policy to set
/// itself; one that runs already cannot take it and is handed none.
#[test]
fn a_held_process_is_handed_its_memory_policy() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    let (held, running) = (sleeper(), sleeper());
    let adopted = m
        .adopt(Adopt {
            memory: MemPolicy::Local,
            held: true,
            ..adopt(held.0.id(), 0)
        })
        .unwrap();
    let (policy, nodes) = adopted.memory.expect("handed to the held process");
    assert_eq!(policy, MemPolicy::Local);
    assert!(!nodes.is_empty());
    let adopted = m
        .adopt(Adopt {
            memory: MemPolicy::Local,
            ..adopt(running.0.id(), 1)
        })
        .unwrap();
    assert_eq!(adopted.memory, None);
    m.finish().unwrap();
}

/// A held process with `cap_threads` is handed the runtimes' thread-count
/// variables at its DoP (the JVM's option alone: `coloc exec` puts its own
/// options before it); one that runs already, or one without
/// `cap_threads`, gets none.
#[test]
fn a_held_process_is_handed_the_launch_caps() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    let kept = [sleeper(), sleeper(), sleeper()];
    let env =
        |k: usize, held: bool, cap_threads: bool, m: &mut coloc_linux::machine::LinuxMachine| {
            let adopted = m
                .adopt(Adopt {
                    dop: 3,
                    held,
                    cap_threads,
                    ..adopt(kept[k].0.id(), k as u32)
                })
                .unwrap();
            adopted
                .set_env
                .into_iter()
                .map(|(k, v)| (k.into_string().unwrap(), v.into_string().unwrap()))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
    let capped = env(0, true, true, &mut m);
    for v in [
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "GOMAXPROCS",
        "RAYON_NUM_THREADS",
    ] {
        assert_eq!(
            capped.get(v).map(String::as_str),
            Some("3"),
            "{v}: {capped:?}"
        );
    }
    assert_eq!(
        capped.get("JAVA_TOOL_OPTIONS").map(String::as_str),
        Some("-XX:ActiveProcessorCount=3")
    );
    assert!(
        !env(1, false, true, &mut m).contains_key("GOMAXPROCS"),
        "running already"
    );
    assert!(
        !env(2, true, false, &mut m).contains_key("GOMAXPROCS"),
        "not asked"
    );
    m.finish().unwrap();
}

/// The policy a process sets itself before exec holds in the program it
/// execs: `/proc/<pid>/numa_maps` shows the task's policy on mappings that
/// have none of their own.
#[test]
fn a_memory_policy_set_before_exec_holds_after_it() {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new("sleep");
    cmd.arg("60");
    // SAFETY: MPOL_LOCAL needs no node mask: only the raw syscall runs in
    // the child, nothing is allocated.
    unsafe {
        cmd.pre_exec(|| {
            coloc_linux::machine::set_own_memory_policy(MemPolicy::Local, &[])
                .map_err(std::io::Error::from)
        });
    }
    let s = Kept(cmd.spawn().unwrap());
    let pid = s.0.id();
    let mut maps = String::new();
    for _ in 0..100 {
        maps = std::fs::read_to_string(format!("/proc/{pid}/numa_maps")).unwrap_or_default();
        if maps.contains("sleep") {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let first = maps.lines().next().unwrap_or_default();
    assert!(first.contains(" local"), "{maps}");
}

/// An OpenMP kernel whose two threads bound themselves one to each CPU
/// (`OMP_PROC_BIND`, as MPI ranks and pinned runtimes do); its pid, once
/// both threads run bound.
fn self_bound(all: &coloc_model::CpuSet) -> (Kept, u32) {
    let argv = coloc_workloads::resolve_argv(
        &["kernel:compute", "--iters", "1000000000000"].map(String::from),
    )
    .unwrap();
    let child = Command::new(&argv[0])
        .args(&argv[1..])
        .env("OMP_NUM_THREADS", "2")
        .env("OMP_PROC_BIND", "close")
        .env("OMP_PLACES", "threads")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let kept = Kept(child);
    until_threads(pid, 2);
    let until = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let own: Vec<_> = tids_of(pid)
            .iter()
            .filter_map(|t| cpus_of(pid, *t))
            .collect();
        if own.len() == 2 && own.iter().all(|c| c.len() == 1) && own[0] != own[1] {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "threads never bound: {own:?} of {all}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (kept, pid)
}

/// `release` and the daemon's stop reset every thread of an adopted process
/// to the process's CPUs: threads the app had bound itself lost their
/// binding. Each thread it had when adopted gets its own back.
#[test]
fn release_and_finish_give_each_thread_its_own_binding_back() {
    let Some(all) = two_cpus() else { return };
    for finish in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut m = machine(dir.path());
        let (_kept, pid) = self_bound(&all);
        let own: Vec<_> = tids_of(pid)
            .iter()
            .map(|t| (*t, cpus_of(pid, *t)))
            .collect();
        m.adopt(adopt(pid, 0)).unwrap();
        let plan = Plan {
            apps: vec![shared(id(0), &all.to_string())],
            ..Plan::default()
        };
        m.apply(&plan);
        // A turn of the loop: its threads rescanned, the plan applied again.
        let _ = m.wait_until(m.now() + Duration::from_millis(50));
        m.apply(&plan);
        for (tid, _) in &own {
            assert_eq!(cpus_of(pid, *tid), Some(all.clone()), "thread {tid} placed");
        }
        if finish {
            m.finish().unwrap();
        } else {
            m.release(id(0)).unwrap().expect("managed");
            m.finish().unwrap();
        }
        for (tid, cpus) in &own {
            assert_eq!(&cpus_of(pid, *tid), cpus, "thread {tid} (finish: {finish})");
        }
    }
}

/// A child of a managed process was adopted as a second app: two instances
/// managed one thread, and one was left pinned after release. Trees that
/// share a process are refused, either way round.
#[test]
fn a_process_inside_a_managed_tree_or_above_one_is_refused() {
    if two_cpus().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    let sh = Kept(
        Command::new("sh")
            .args(["-c", "sleep 60 & wait"])
            .spawn()
            .unwrap(),
    );
    let parent = sh.0.id();
    let until = std::time::Instant::now() + Duration::from_secs(10);
    let child = loop {
        let children = std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children"))
            .unwrap_or_default();
        if let Some(c) = children.split_whitespace().next() {
            break c.parse::<u32>().unwrap();
        }
        assert!(std::time::Instant::now() < until, "no child");
        std::thread::sleep(Duration::from_millis(10));
    };
    m.adopt(adopt(child, 0)).unwrap();
    let err = m.adopt(adopt(parent, 1)).unwrap_err();
    assert!(
        matches!(err, AdoptError::Overlaps { shared, .. } if shared == child),
        "{err}"
    );
    m.release(id(0)).unwrap();
    m.adopt(adopt(parent, 1)).unwrap();
    let err = m.adopt(adopt(child, 2)).unwrap_err();
    assert!(
        matches!(err, AdoptError::Overlaps { shared, .. } if shared == child),
        "{err}"
    );
    m.finish().unwrap();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
}

/// A process that runs as another user than the one who asked (it exec'd a
/// set-user-ID program since the request) is not adopted for that user.
#[test]
fn a_process_no_longer_the_askers_is_refused() {
    if two_cpus().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    let s = sleeper();
    let me = nix::unistd::geteuid().as_raw();
    let err = m
        .adopt(Adopt {
            asked_by: Some(me + 1),
            ..adopt(s.0.id(), 0)
        })
        .unwrap_err();
    assert!(matches!(err, AdoptError::Owner { .. }), "{err}");
    m.adopt(Adopt {
        asked_by: Some(me),
        ..adopt(s.0.id(), 0)
    })
    .unwrap();
    m.finish().unwrap();
}
