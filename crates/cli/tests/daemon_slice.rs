//! `coloc daemon --cgroup-slice` on the real machine (docs/service.md, cgroup
//! slices): apps in cpuset cgroups of their own with the plan's CPUs, back in
//! their own cgroup after the daemon is killed and a new one starts, and
//! when it stops, with coloc's cgroups removed. Root and a cpuset
//! controller (cgroup v2's, else v1's) needed; checked in /proc and the
//! cgroup files.

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use coloc_daemon::protocol::Status;
use coloc_linux::cgroup::Cpusets;
use coloc_linux::machine::SLICE;
use common::allowed_here;
use common::service::{
    affinities, is_root, placed_by_plan, running_their_commands, wait_for, Service, Started,
};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// Whether every app is in a cgroup of `coloc.slice` whose CPUs are its plan's.
fn in_slice_by_plan(sets: &Cpusets, s: &Status) -> bool {
    s.apps.iter().all(|a| {
        let Ok(rel) = sets.cgroup_of(Path::new("/proc"), a.pid) else {
            return false;
        };
        let planned = a.plan.as_ref().map(|p| p.placement.cpus());
        rel.starts_with(SLICE) && sets.effective_cpus(&rel).ok() == planned
    })
}

#[test]
fn apps_in_the_slice_go_back_to_their_cgroup_after_a_kill_and_a_stop() {
    if !is_root() {
        return;
    }
    let sets = match Cpusets::detect(Path::new("/proc")) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    if sets.dir(Path::new(SLICE)).exists() {
        eprintln!("skipped: {SLICE} exists (another daemon uses it)");
        return;
    }
    // The commands start in this test's cgroup.
    let home: PathBuf = sets
        .cgroup_of(Path::new("/proc"), std::process::id())
        .unwrap();
    let svc = Service::new();
    let mut started = Started::default();
    let first = svc.start_with("equal", &["--cgroup-slice"], &mut started);
    assert!(svc.log().contains(&sets.describe()), "{}", svc.log());
    for name in ["s1", "s2"] {
        svc.exec_kernel(&["--name", name], Stdio::null(), &mut started);
    }
    let mut status = Status::default();
    wait_for(
        "two commands running in the slice, placed by the plan",
        || {
            status = svc.status();
            status.apps.len() == 2
                && running_their_commands(&status)
                && placed_by_plan(&status)
                && in_slice_by_plan(&sets, &status)
        },
    );
    let pids: Vec<u32> = status.apps.iter().map(|a| a.pid).collect();
    started.pids.extend(&pids);

    // Killed: the apps run on in coloc's cgroups. The next coloc to start
    // (the new daemon, or another test's: they share the journal directory)
    // takes them back to theirs and removes coloc's; the new daemon re-adopts
    // them into cgroups made anew (other inodes, maybe the same names).
    let cgroup_of = |pid: u32| {
        sets.cgroup_of(Path::new("/proc"), pid)
            .unwrap_or_else(|e| panic!("{e}: {}", svc.log()))
    };
    let inode = |rel: &Path| std::fs::metadata(sets.dir(rel)).unwrap().ino();
    let before: Vec<u64> = pids.iter().map(|&p| inode(&cgroup_of(p))).collect();
    let daemon = &mut started.children[first];
    daemon.kill().unwrap();
    daemon.wait().unwrap();
    for &pid in &pids {
        let rel = cgroup_of(pid);
        assert!(
            rel.starts_with(SLICE),
            "app {pid} left coloc's cgroup: {rel:?}"
        );
    }
    let second = svc.start_with("equal", &["--cgroup-slice"], &mut started);
    wait_for("both re-adopted into the slice", || {
        status = svc.status();
        status.apps.len() == 2
            && status.apps.iter().all(|a| a.kind == "readopted")
            && placed_by_plan(&status)
            && in_slice_by_plan(&sets, &status)
    });
    for (&pid, old) in pids.iter().zip(before) {
        assert_ne!(
            inode(&cgroup_of(pid)),
            old,
            "app {pid}'s cgroup was not made anew"
        );
    }

    // Stopped: the apps are back where they came from, their CPUs theirs,
    // and coloc's cgroups are gone.
    let daemon = &mut started.children[second];
    kill(Pid::from_raw(daemon.id() as i32), Signal::SIGTERM).unwrap();
    assert!(daemon.wait().unwrap().success(), "{}", svc.log());
    let here = allowed_here();
    for &pid in &pids {
        assert_eq!(sets.cgroup_of(Path::new("/proc"), pid).unwrap(), home);
        for (tid, cpus) in affinities(pid) {
            assert_eq!(cpus, here, "thread {tid} of {pid} kept coloc's CPUs");
        }
    }
    assert!(
        !sets.dir(Path::new(SLICE)).exists(),
        "{SLICE} outlived the daemon"
    );
}

/// Without `--cgroup-slice`, no cgroup is made: apps are placed by affinity.
#[test]
fn without_the_option_apps_stay_in_their_cgroup() {
    if !is_root() {
        return;
    }
    let Ok(sets) = Cpusets::detect(Path::new("/proc")) else {
        eprintln!("skipped: no cpuset controller");
        return;
    };
    let home = sets
        .cgroup_of(Path::new("/proc"), std::process::id())
        .unwrap();
    let svc = Service::new();
    let mut started = Started::default();
    svc.start("equal", &mut started);
    svc.exec_kernel(&[], Stdio::null(), &mut started);
    let mut status = Status::default();
    wait_for("the app placed", || {
        status = svc.status();
        status.apps.len() == 1 && placed_by_plan(&status)
    });
    let pid = status.apps[0].pid;
    started.pids.push(pid);
    assert_eq!(sets.cgroup_of(Path::new("/proc"), pid).unwrap(), home);
}
