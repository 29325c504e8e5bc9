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
        in_place: false,
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
        note: String::new(),
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
        note: String::new(),
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
