//! `coloc run --policy equal` on real kernels (docs/policies/baselines.md): while the run
//! goes on, every thread of every app is on the CPUs the plan in force put it on
//! (read from /proc/<pid>/task/*/status), and after the run every setting coloc
//! changed is restored, including on a process that outlives its app.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use coloc_model::CpuSet;
use common::{
    allowed_at, allowed_here, apps_by_pid, cpus_allowed, decisions, run_sampled, status_of,
    SampledRun,
};

fn write_workload(dir: &Path, apps: &[(&str, &str)]) -> std::path::PathBuf {
    let mut text = String::from("name = \"it\"\n");
    for (name, cmd) in apps {
        text.push_str(&format!(
            "[[app]]\nname = \"{name}\"\ncommand = {cmd}\nthreads = 2\n"
        ));
    }
    let path = dir.join("w.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn equal_pins_every_thread_where_the_plan_says_and_restores_after() {
    let here = allowed_here();
    if here.len() < 2 {
        eprintln!("skipped: needs 2 CPUs, this process may use {here}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // Each app is a shell that starts a long sleep in the background (it inherits the
    // app's placement and outlives the app) and then runs a barrier kernel.
    let keeper = dir.path().join("keeper.pid");
    let barrier = coloc_workloads::kernel_path("barrier").unwrap();
    let workload = write_workload(
        dir.path(),
        &[
            (
                "a",
                &format!(
                    "[\"sh\", \"-c\", \"sleep 60 & echo $! > {}; exec {} --regions 4000 --work 20000\"]",
                    keeper.display(),
                    barrier.display()
                ),
            ),
            ("b", "[\"kernel:barrier\", \"--regions\", \"4000\", \"--work\", \"20000\"]"),
        ],
    );
    // Sample the apps' threads while the run goes on.
    let SampledRun {
        coloc_pid,
        journal,
        samples,
        trace,
    } = run_sampled(
        &workload,
        "equal",
        &out,
        Duration::from_millis(20),
        Duration::from_secs(60),
    );
    let pid_of = apps_by_pid(&trace);
    assert_eq!(pid_of.len(), 2, "two instances started");

    // While both ran, each app's threads were on one CPU of its own (equal: 2 apps on
    // 2 CPUs, one CPU each), and the CPUs were those of the plan in force then (when
    // one app exits, the other gets both CPUs).
    let decisions = decisions(&trace);
    let pinned: Vec<_> = samples
        .iter()
        .filter(|s| pid_of.contains_key(&s.pid) && s.cpus.len() == 1)
        .collect();
    assert!(
        !pinned.is_empty(),
        "no thread was ever seen pinned: {samples:?}"
    );
    let mut rounds: BTreeMap<usize, BTreeMap<u32, CpuSet>> = BTreeMap::new();
    for s in &pinned {
        let at = s.at_unix - trace.header.started_unix;
        let allowed = allowed_at(&decisions, pid_of[&s.pid], s.tid, at);
        assert!(
            allowed.is_empty() || allowed.iter().any(|p| s.cpus.is_subset(p)),
            "thread {} of {} on {} at {at:.3} s, plans in force say {allowed:?}",
            s.tid,
            s.pid,
            s.cpus
        );
        let e = rounds.entry(s.round).or_default().entry(s.pid).or_default();
        *e = e.union(&s.cpus);
    }
    for apps in rounds.values().filter(|apps| apps.len() == 2) {
        let sets: Vec<&CpuSet> = apps.values().collect();
        assert!(
            sets[0].is_disjoint(sets[1]),
            "two apps shared a CPU under equal: {apps:?}"
        );
    }
    // No CPU outside this machine's usable set was ever named.
    for s in &samples {
        assert!(s.cpus.is_subset(&here), "{} outside {here}", s.cpus);
    }

    // After the run: the background sleep outlived app `a`; coloc restored its
    // affinity to what it had before coloc changed it (everything usable here).
    let keeper_pid: u32 = std::fs::read_to_string(&keeper)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let status = status_of(keeper_pid, keeper_pid).expect("the background sleep is still alive");
    let restored = cpus_allowed(&status).unwrap();
    let _ = Command::new("kill").arg(keeper_pid.to_string()).status();
    assert_eq!(
        restored, here,
        "affinity of a surviving process not restored"
    );
    // And coloc's journal is gone.
    let journal = journal.join(format!("{coloc_pid}.journal"));
    assert!(
        !journal.exists(),
        "journal {} left behind",
        journal.display()
    );
}
