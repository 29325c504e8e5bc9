//! Apps that limit their own CPUs, under the node service (docs/service.md,
//! The loop): coloc places them within what they allow
//! themselves, never beyond, and leaves an app that keeps moving its threads
//! back to itself, shown as self-managed. Checked in /proc; root only.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use coloc_linux::cgroup::Cpusets;
use coloc_model::CpuSet;
use common::service::{affinities, is_root, wait_for, Service, Started, KERNEL};
use common::{allowed_here, cpus_allowed, status_of, text};

/// Two CPUs or more to choose from, else a reason to skip.
fn two_cpus() -> Option<CpuSet> {
    let here = allowed_here();
    if here.len() < 2 {
        eprintln!("skipped: needs two CPUs, this test may use {here}");
        return None;
    }
    Some(here)
}

/// `coloc exec --name NAME -- ARGS`, its output discarded, behind `prefix`
/// (`taskset -c 1`).
fn exec(svc: &Service, prefix: &[&str], name: &str, args: &[&str]) -> Child {
    let mut exec = svc.coloc(&["exec", "--name", name]);
    exec.arg("--").args(args);
    let mut c = match prefix.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(exec.get_program()).args(exec.get_args());
            c
        }
        None => exec,
    };
    c.stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Every thread of `pid` checked for `for_` (several times, while the
/// daemon's epochs pass): none may run on a CPU outside `allowed`.
fn never_beyond(pid: u32, allowed: &CpuSet, for_: Duration) {
    let until = Instant::now() + for_;
    while Instant::now() < until {
        for (tid, cpus) in affinities(pid) {
            assert!(
                cpus.is_subset(allowed),
                "thread {tid} of {pid} may run on {cpus}, beyond {allowed}"
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A command started under `taskset -c <last CPU>` is placed on that CPU
/// alone, whatever the plan gives it: coloc narrows, never widens.
#[test]
fn an_app_started_under_taskset_is_never_given_another_cpu() {
    if !is_root() {
        return;
    }
    let Some(here) = two_cpus() else { return };
    let last = here.iter().next_back().unwrap();
    let only = CpuSet::single(last);
    let svc = Service::new();
    let mut started = Started::default();
    svc.start("equal", &mut started);
    let list = only.to_list();
    let pinned = exec(&svc, &["taskset", "-c", &list], "pinned", KERNEL);
    started.children.push(pinned);
    let free = exec(&svc, &[], "free", KERNEL);
    started.children.push(free);
    // Admitted (a self-managed one fails the check below, with its notes).
    wait_for("both apps admitted", || {
        let s = svc.status();
        s.apps.len() == 2 && s.apps.iter().all(|a| a.state != "waiting")
    });
    let s = svc.status();
    started.pids.extend(s.apps.iter().map(|a| a.pid));
    let pid = s.apps.iter().find(|a| a.name == "pinned").unwrap().pid;
    let app = s.apps.iter().find(|a| a.name == "pinned").unwrap();
    assert_eq!(app.allowed.as_deref(), Some(list.as_str()), "{app:?}");
    let planned = app.plan.as_ref().unwrap().placement.cpus();
    assert!(
        planned.is_subset(&only),
        "planned {planned}, allowed {only}"
    );
    never_beyond(pid, &only, Duration::from_secs(2));
    assert_ne!(app.state, "self-managed", "{app:?}");
}

/// An app that moves its own thread back to every CPU, again and again, is
/// put back up to 3 times, then shown as self-managed and left alone: once
/// it stops, its thread keeps the CPUs it chose, not the plan's.
#[test]
fn an_app_that_resets_its_own_affinity_is_left_to_it() {
    if !is_root() {
        return;
    }
    let Some(here) = two_cpus() else { return };
    let svc = Service::new();
    let mut started = Started::default();
    svc.start("equal", &mut started);
    // Two apps: equal gives each CPUs of its own, fewer than all.
    let other = exec(&svc, &[], "other", KERNEL);
    started.children.push(other);
    let list = here.to_list();
    let fight = format!(
        "i=0; while [ $i -lt 15 ]; do taskset -p -c {list} $$ >/dev/null; sleep 0.2; \
         i=$((i+1)); done; exec sleep 60"
    );
    let fighter = exec(&svc, &[], "fighter", &["sh", "-c", &fight]);
    started.children.push(fighter);
    wait_for("the fighter shown as self-managed", || {
        let s = svc.status();
        for a in &s.apps {
            if !started.pids.contains(&a.pid) {
                started.pids.push(a.pid);
            }
        }
        s.apps
            .iter()
            .any(|a| a.name == "fighter" && a.state == "self-managed")
    });
    let s = svc.status();
    let app = s.apps.iter().find(|a| a.name == "fighter").unwrap();
    let pid = app.pid;
    assert!(
        app.notes.iter().any(|n| n.contains("left to the app")),
        "{app:?}"
    );
    let planned = app.plan.as_ref().unwrap().placement.cpus();
    assert_ne!(planned, here, "the plan must differ from its own choice");
    // Its loop ends (exec sleep keeps the thread): coloc does not put it back.
    wait_for("the fighter's loop to end", || {
        std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep")
    });
    let until = Instant::now() + Duration::from_secs(1);
    while Instant::now() < until {
        let cpus = status_of(pid, pid).and_then(|s| cpus_allowed(&s));
        assert_eq!(cpus.as_ref(), Some(&here), "coloc fought back");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(svc.log().contains("self-managed"), "{}", svc.log());
    let out = svc.coloc(&["status"]).output().unwrap();
    assert!(text(&out).0.contains("self-managed"), "{}", text(&out).0);
}

/// A cgroup of the cpuset hierarchy made for one test, removed with it
/// (after the processes in it ended: declare it before [`Started`]).
struct TestCgroup {
    sets: Cpusets,
    rel: PathBuf,
    /// cgroup v2's cpuset was turned on below the root for the test.
    enabled: bool,
}

impl TestCgroup {
    fn make(cpus: &CpuSet) -> Option<TestCgroup> {
        let sets = match Cpusets::detect(Path::new("/proc")) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("skipped: {e}");
                return None;
            }
        };
        let enabled = sets.enable_below(Path::new("")).unwrap();
        let rel = PathBuf::from(format!("coloc-test-{}", std::process::id()));
        sets.make(&rel).unwrap();
        let mems = sets.effective_mems(Path::new("")).unwrap();
        sets.limit(&rel, cpus, &mems).unwrap();
        Some(TestCgroup { sets, rel, enabled })
    }

    fn limit(&self, cpus: &CpuSet) {
        let mems = self.sets.effective_mems(&self.rel).unwrap();
        self.sets.limit(&self.rel, cpus, &mems).unwrap();
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        for pid in self.sets.procs(&self.rel).unwrap_or_default() {
            let _ = self.sets.attach(Path::new(""), pid);
        }
        let _ = self.sets.remove(&self.rel);
        if self.enabled {
            let _ = self.sets.disable_below(Path::new(""));
        }
    }
}

/// An app in a cpuset cgroup whose CPUs shrink while coloc manages it: the
/// plan follows the cpuset at the next epoch, and the kernel's narrowing is
/// not taken for the app moving itself.
#[test]
fn a_cpuset_that_shrinks_narrows_the_plan_and_is_not_a_fight() {
    if !is_root() {
        return;
    }
    let Some(here) = two_cpus() else { return };
    let Some(cgroup) = TestCgroup::make(&here) else {
        return;
    };
    let svc = Service::new();
    let mut started = Started::default();
    svc.start("equal", &mut started);
    let pid = started.sleeper();
    cgroup.sets.attach(&cgroup.rel, pid).unwrap();
    let out = svc.coloc(&["attach", &pid.to_string()]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    wait_for("the app placed on every CPU", || {
        let s = svc.status();
        s.apps
            .first()
            .and_then(|a| a.plan.as_ref())
            .map(|p| p.placement.cpus())
            == Some(here.clone())
    });

    let last = CpuSet::single(here.iter().next_back().unwrap());
    cgroup.limit(&last);
    wait_for("the plan narrowed to the cpuset", || {
        let s = svc.status();
        let a = &s.apps[0];
        a.allowed.as_deref() == Some(last.to_list().as_str())
            && a.plan
                .as_ref()
                .is_some_and(|p| p.placement.cpus().is_subset(&last))
    });
    never_beyond(pid, &last, Duration::from_secs(1));
    let s = svc.status();
    assert_eq!(s.apps[0].state, "running", "{:?}", s.apps[0]);
}
