//! Helpers of the LinuxMachine tests: a machine in a temporary directory,
//! plans, and what /proc says about a thread.

#![allow(dead_code)] // each test file uses its own subset

use std::path::Path;
use std::time::Duration;

use coloc_linux::machine::{LinuxMachine, LinuxOptions};
use coloc_manager::{LaunchRequest, Launched, Machine, MachineEvent};
use coloc_model::testutils::app_spec;
use coloc_model::{AppId, AppPlan, AppSpec, CpuSet, Placement, Tid};

/// The CPUs this test may use, or None (with the reason printed) when fewer
/// than two: placements then cannot be told apart from the original.
pub fn two_cpus() -> Option<CpuSet> {
    let cpus = coloc_linux::topology::allowed_cpus().expect("sched_getaffinity");
    if cpus.len() < 2 {
        eprintln!("skipped: needs 2 allowed CPUs, this process may use {cpus}");
        return None;
    }
    Some(cpus)
}

/// A machine with its output and journal in `dir`.
pub fn machine(dir: &Path) -> LinuxMachine {
    let topology = coloc_linux::topology::host_topology().expect("host topology");
    LinuxMachine::new(
        topology,
        LinuxOptions {
            out_dir: dir.join("out"),
            journal_dir: dir.join("journal"),
            ..LinuxOptions::default()
        },
    )
    .expect("LinuxMachine::new")
}

/// Journal files left in `dir`'s journal directory.
pub fn journals(dir: &Path) -> Vec<String> {
    match std::fs::read_dir(dir.join("journal")) {
        Ok(d) => d
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// An app running `argv` (a `kernel:` argv\[0\] is resolved here, as the CLI does).
pub fn spec(name: &str, threads: u32, argv: &[&str]) -> AppSpec {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    let mut s = app_spec(name, threads);
    s.command = Some(coloc_workloads::resolve_argv(&argv).expect("kernel installed"));
    s
}

pub fn id(app: u32) -> AppId {
    AppId { app, rep: 0 }
}

pub fn shared(app: AppId, cpus: &str) -> AppPlan {
    AppPlan {
        placement: Placement::Shared(cpus.parse().unwrap()),
        ..AppPlan::native(app)
    }
}

pub fn launch(m: &mut LinuxMachine, app: AppId, spec: &AppSpec, plan: &AppPlan) -> Launched {
    m.launch(LaunchRequest {
        id: app,
        spec,
        threads: spec.threads,
        plan,
    })
    .expect("launch")
}

/// Waits (up to `limit`) for an event `pick` accepts; panics on timeout.
pub fn wait_for<T>(
    m: &mut LinuxMachine,
    limit: Duration,
    mut pick: impl FnMut(&MachineEvent) -> Option<T>,
) -> T {
    let until = m.now() + limit;
    loop {
        let now = m.now();
        assert!(now < until, "no expected event within {limit:?}");
        for e in m
            .wait_until((now + Duration::from_millis(50)).min(until))
            .unwrap()
        {
            if let Some(t) = pick(&e) {
                return t;
            }
        }
    }
}

/// `Cpus_allowed_list` of a thread, from /proc.
pub fn cpus_of(pid: u32, tid: Tid) -> Option<CpuSet> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().parse().unwrap())
}

/// Thread ids of a process, from /proc.
pub fn tids_of(pid: u32) -> Vec<Tid> {
    let mut tids: Vec<Tid> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    tids.sort_unstable();
    tids
}

/// Waits until `pid` has `n` threads or more (a child process of the test).
pub fn until_threads(pid: u32, n: usize) {
    for _ in 0..500 {
        if tids_of(pid).len() >= n {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{pid} never had {n} threads");
}

#[path = "users.rs"]
mod users;
#[allow(unused_imports)] // each test file uses its own subset
pub use users::TestUser;
