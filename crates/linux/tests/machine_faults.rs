//! Faults of the machine itself. A launch whose journal cannot be written fails
//! at once, naming the journal directory, and leaves no forked child behind;
//! the CPU coloc reports as its own is the run's. In a test binary of its own:
//! it counts this process's children and CPU time, which other tests would add
//! to.

mod support;

use std::sync::mpsc;
use std::time::Duration;

use coloc_linux::machine::{LinuxMachine, LinuxOptions};
use coloc_manager::{LaunchRequest, Machine, MachineError};
use support::{id, shared, spec, two_cpus};

/// Children of this process still there (zombies included: an unreaped child
/// is one left behind too).
fn children() -> Vec<u32> {
    let me = std::process::id();
    let mut kids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let ppid: u32 = after.split(' ').nth(1).unwrap().parse().unwrap();
        if ppid == me {
            kids.push(pid);
        }
    }
    kids
}

#[test]
fn an_unwritable_journal_fails_the_launch() {
    let Some(cpus) = two_cpus() else { return };
    let dir = tempfile::tempdir().unwrap();
    // A file where the journal directory's parent should be: no one, root
    // included, can create the directory.
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, "").unwrap();
    let journal_dir = blocker.join("journal");
    let topology = coloc_linux::topology::host_topology().unwrap();
    let out = dir.path().join("out");
    let (tx, rx) = mpsc::channel();
    // In a thread, so that a hang fails the test instead of hanging it.
    let jd = journal_dir.clone();
    std::thread::spawn(move || {
        let mut m = LinuxMachine::new(
            topology,
            LinuxOptions {
                out_dir: out,
                journal_dir: jd,
                ..LinuxOptions::default()
            },
        )
        .unwrap();
        let app = spec("a", 1, &["sleep", "30"]);
        let first = cpus.iter().next().unwrap();
        let plan = shared(id(0), &first.to_string());
        let r = m.launch(LaunchRequest {
            id: id(0),
            spec: &app,
            threads: 1,
            plan: &plan,
        });
        let r = r.map(|l| l.pid);
        drop(m);
        tx.send(r).unwrap();
    });
    let result = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the launch returned within 30 s instead of hanging");
    match result {
        Err(e @ MachineError::Launch { .. }) => {
            let reason = e.launch_reason().unwrap();
            assert!(
                reason.contains(&blocker.display().to_string()),
                "the reason names the journal directory: {reason}"
            )
        }
        other => panic!("expected a launch error, got {other:?}"),
    }
    assert_eq!(children(), Vec::<u32>::new(), "no child is left behind");
}

/// CPU time of this process so far.
fn cpu_so_far() -> Duration {
    let u = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF).unwrap();
    let tv =
        |t: nix::sys::time::TimeVal| Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000);
    tv(u.user_time()) + tv(u.system_time())
}

/// coloc's "CPU % of a core" divided CPU time since the process started by
/// the run's wall time, so start-up work (or an earlier run of `compare`)
/// showed as thousands of percent.
#[test]
fn self_usage_counts_the_run_not_what_came_before() {
    let burned = Duration::from_secs(1);
    let mut x = 0u64;
    while cpu_so_far() < burned {
        for i in 0..100_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let mut m = support::machine(dir.path());
    let usage = m.finish().unwrap();
    assert!(
        usage.cpu < burned,
        "the run itself did nothing, yet {:?} of CPU is counted",
        usage.cpu
    );
}
