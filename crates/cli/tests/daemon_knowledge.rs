//! What the node service learns (docs/knowledge.md): every app it manages
//! leaves a record of its program in the store, which outlives the daemon
//! (stopped, or killed with SIGKILL) and is found by the next one; a store
//! file cut short is set aside with a message and the daemon goes on. What
//! it learned of a program's regions reaches its policy: auto cuts the team
//! of an OpenMP program known to have short regions, and not before it is
//! known; and the pairs its trial measured on a set of programs reach the
//! next daemon's trial of the same programs, which starts settled on them.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::service::{is_root, wait_for, Service, Started};
use common::{coloc, run_ns, text, tids_of};

/// The rows of `coloc knowledge list --db DB`: (name, records).
fn listed(db: &Path) -> Vec<(String, usize)> {
    let out = coloc()
        .args(["knowledge", "list", "--db"])
        .arg(db)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    stdout
        .lines()
        .skip(2)
        .filter(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].to_string(), cells[3].parse().unwrap())
        })
        .collect()
}

/// `coloc exec --name NAME -- sh -c 'sleep 0.2'` to its end, successfully.
fn exec(svc: &Service, name: &str) {
    let out = svc
        .coloc(&["exec", "--name", name, "--", "sh", "-c", "sleep 0.2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
}

fn signal(pid: u32, s: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), s).unwrap();
}

/// A node service learning into a store of its own: the service, its
/// store, what it started, and its daemon's index in it, started under
/// `policy`.
fn learning(policy: &str) -> (Service, PathBuf, Started, usize) {
    let svc = Service::new();
    let db = svc.dir.path().join("knowledge.sqlite");
    let mut started = Started::default();
    let daemon = start_on(&svc, &db, policy, &mut started);
    (svc, db, started, daemon)
}

/// Starts a daemon under `policy` learning into `db`; its index in `started`.
fn start_on(svc: &Service, db: &Path, policy: &str, started: &mut Started) -> usize {
    svc.start_with(policy, &["--db", db.to_str().unwrap()], started)
}

/// Kills the daemon `started.children[daemon]` with SIGKILL and reaps it.
fn kill_9(started: &mut Started, daemon: usize) {
    signal(
        started.children[daemon].id(),
        nix::sys::signal::Signal::SIGKILL,
    );
    started.children[daemon].wait().unwrap();
}

/// An app's record is in the store once it exits, whatever happens to the
/// daemon after: killed with SIGKILL, the next daemon starts knowing the
/// program and adds to it; stopped, the records stay.
#[test]
fn knowledge_survives_a_restart_and_a_kill_9() {
    if !is_root() {
        return;
    }
    let (svc, db, mut started, first) = learning("native");
    exec(&svc, "nap");
    wait_for("the record", || listed(&db) == [("nap".to_string(), 1)]);
    kill_9(&mut started, first);
    assert_eq!(listed(&db), [("nap".to_string(), 1)]);
    let second = start_on(&svc, &db, "native", &mut started);
    assert!(
        svc.log()
            .contains("knowledge: 1 program(s) known on this platform"),
        "{}",
        svc.log()
    );
    exec(&svc, "nap-again");
    wait_for("the second record", || {
        listed(&db) == [("nap-again".to_string(), 2)]
    });
    signal(
        started.children[second].id(),
        nix::sys::signal::Signal::SIGTERM,
    );
    assert!(started.children[second].wait().unwrap().success());
    assert_eq!(listed(&db), [("nap-again".to_string(), 2)]);
}

/// A store file cut in half: the daemon says it set it aside and where,
/// listens, and learns into a new store.
#[test]
fn a_truncated_store_is_set_aside_and_the_daemon_goes_on() {
    if !is_root() {
        return;
    }
    let svc = Service::new();
    let data = svc.dir.path().join("data");
    // A store with some pages: what a few simulated solo runs learn.
    let workload = svc.dir.path().join("w.toml");
    std::fs::write(
        &workload,
        "name = \"w\"\n[[app]]\nname = \"a\"\nmodel = \"kernel-compute\"\nthreads = 2\n\
         [[app]]\nname = \"b\"\nmodel = \"kernel-stream\"\nthreads = 2\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_coloc"))
        .args(["solo", "--sim", "kvm-2cpu", "--threads", "1,2", "--out"])
        .arg(svc.dir.path().join("solo"))
        .arg(&workload)
        .env("XDG_DATA_HOME", &data)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    let db = data.join("coloc/profiles.sqlite");
    let len = std::fs::metadata(&db).unwrap().len();
    let file = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
    file.set_len(len / 2).unwrap();
    drop(file);
    let mut started = Started::default();
    let daemon = svc.start_with("native", &["--db", db.to_str().unwrap()], &mut started);
    let log = svc.log();
    assert!(
        log.contains("profiles.sqlite") && log.contains("it was moved to"),
        "{log}"
    );
    let aside = std::fs::read_dir(db.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().contains(".damaged-"));
    assert!(aside, "{log}");
    exec(&svc, "after");
    wait_for("the record", || listed(&db) == [("after".to_string(), 1)]);
    assert!(started.children[daemon].try_wait().unwrap().is_none());
}

/// `kernel:barrier`: tens of thousands of short parallel regions
/// (microseconds each), a few seconds alone on two CPUs of the simulator's
/// `kvm-2cpu` when quiet (10,000 took 0.9 s there, too short to be watched
/// beside a co-runner); one run of it under the daemon leaves the record of
/// how long its regions last.
const BARRIER: &[&str] = &["kernel:barrier", "--regions", "40000"];

/// The same kernel with so many regions it runs for minutes: the first,
/// unknown instance, which the test kills once it has watched it (another
/// argv, so another program to the store).
const BARRIER_LONG: &[&str] = &["kernel:barrier", "--regions", "10000000"];

/// `coloc exec` of `barrier` ([`BARRIER`] or [`BARRIER_LONG`]) named `bar`,
/// malleable, two threads, among the test's children; its index there.
fn exec_barrier(svc: &Service, started: &mut Started, barrier: &[&str]) -> usize {
    let child = svc
        .coloc(&[
            "exec",
            "--name",
            "bar",
            "--malleable",
            "--threads",
            "2",
            "--",
        ])
        .args(barrier)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    started.children.push(child);
    started.children.len() - 1
}

/// `coloc exec` of a long one-thread kernel named `co`, once it runs; its
/// index among the test's children.
fn exec_co(svc: &Service, started: &mut Started) -> usize {
    let child = svc
        .coloc(&["exec", "--name", "co", "--threads", "1", "--"])
        .args(common::service::KERNEL)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    started.children.push(child);
    wait_for("co running", || dop_of(svc, "co").is_some());
    started.children.len() - 1
}

/// Kills the command of the app named `name` (SIGKILL), reaps its `coloc
/// exec` (`started.children[client]`) and waits until the daemon lets it go.
fn end(svc: &Service, name: &str, started: &mut Started, client: usize) {
    let (_, pid) = dop_of(svc, name).expect("running");
    signal(pid, nix::sys::signal::Signal::SIGKILL);
    let _ = started.children[client].wait();
    wait_for("the app gone", || {
        !svc.status().apps.iter().any(|a| a.name == name)
    });
}

/// The DoP the daemon's plan in force gives the app named `name`, with its
/// pid (None while it is not running or has no plan).
fn dop_of(svc: &Service, name: &str) -> Option<(Option<u32>, u32)> {
    let status = svc.status();
    let app = status
        .apps
        .iter()
        .find(|a| a.name == name && a.state == "running")?;
    Some((app.plan.as_ref()?.dop, app.pid))
}

/// How many threads of `pid` ran over `window`: those with at least a
/// quarter of the busiest one's CPU time (schedstat), when one ran 5 ms.
fn threads_that_ran(pid: u32, window: std::time::Duration) -> Option<usize> {
    let before: Vec<(u32, u64)> = tids_of(pid)
        .into_iter()
        .filter_map(|t| Some((t, run_ns(pid, t)?)))
        .collect();
    std::thread::sleep(window);
    let ran: Vec<u64> = before
        .iter()
        .filter_map(|(t, b)| Some(run_ns(pid, *t)?.saturating_sub(*b)))
        .collect();
    let max = *ran.iter().max()?;
    (max >= 5_000_000).then(|| ran.iter().filter(|&&x| x * 4 >= max).count())
}

/// Region records reach the node service's policy (docs/knowledge.md, When;
/// docs/policies/auto.md, Reversible first): beside a co-runner on two CPUs,
/// auto cuts a malleable OpenMP program's team only where its regions are
/// known to be short. The first time the daemon sees the program it does
/// not know them and keeps the team whole; once a whole run of it was
/// managed (and learned), the same program beside the same co-runner is cut
/// to one thread, and /proc shows one thread running. About 10 s.
#[test]
fn regions_learned_by_the_daemon_let_auto_cut_a_team() {
    if !is_root() {
        return;
    }
    let (svc, db, mut started, _) = learning("auto");

    // Nothing known: never cut beside a one-thread co-runner (three threads
    // on two CPUs: auto partitions), over 2 s of it running.
    let co = exec_co(&svc, &mut started);
    let first = exec_barrier(&svc, &mut started, BARRIER_LONG);
    wait_for("bar placed", || dop_of(&svc, "bar").is_some());
    let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while std::time::Instant::now() < until {
        if let Some((dop, _)) = dop_of(&svc, "bar") {
            assert!(
                dop.is_none_or(|d| d >= 2),
                "cut to {dop:?} with its regions unknown:\n{}",
                svc.log()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // Killed, neither leaves a record (failed instances).
    end(&svc, "bar", &mut started, first);
    end(&svc, "co", &mut started, co);

    // One whole run of it alone on both CPUs, learned.
    let whole = exec_barrier(&svc, &mut started, BARRIER);
    let status = started.children[whole].wait().unwrap();
    assert!(status.success(), "{}", svc.log());
    wait_for("bar's record", || {
        listed(&db).iter().any(|(name, _)| name == "bar")
    });

    // Known now: cut to one thread beside the co-runner, and over a window
    // that begins and ends with that cut, one thread of it runs. (auto's
    // trial measures Linux's arrangement in some windows, with the whole
    // team: those are not judged.)
    exec_co(&svc, &mut started);
    exec_barrier(&svc, &mut started, BARRIER);
    let mut judged = Vec::new();
    let mut seen = Vec::new();
    let mut notes = Vec::new();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while judged.len() < 3 && std::time::Instant::now() < until {
        let Some((dop, pid)) = dop_of(&svc, "bar") else {
            std::thread::sleep(std::time::Duration::from_millis(50));
            continue;
        };
        seen.push(dop);
        if dop != Some(1) {
            if let Some(a) = svc.status().apps.iter().find(|a| a.name == "bar") {
                notes = a.notes.clone();
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
            continue;
        }
        let ran = threads_that_ran(pid, std::time::Duration::from_millis(250));
        if dop_of(&svc, "bar").map(|d| d.0) == Some(Some(1)) {
            judged.extend(ran);
        }
    }
    seen.dedup();
    assert!(
        !judged.is_empty(),
        "never cut to one thread for a window: DoPs {seen:?}; the last reasons {notes:#?}\n{}",
        svc.log()
    );
    assert!(
        judged.iter().all(|&n| n == 1),
        "threads of bar that ran while cut to one, per window: {judged:?}"
    );
}

/// The trial pairs of `coloc knowledge export --db DB`, as JSON values.
fn exported_pairs(db: &Path) -> Vec<serde_json::Value> {
    let out = coloc()
        .args(["knowledge", "export", "--db"])
        .arg(db)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    v["pairs"].as_array().cloned().unwrap_or_default()
}

/// Trial evidence outlives the daemon (docs/knowledge.md, Trials of a set of
/// programs): two long kernels beside each other, three threads on two
/// CPUs, are tried by auto (own partitions against Linux) until a verdict;
/// its pairs are in the store as they are measured. The daemon is killed
/// with SIGKILL; the next one, given the same two programs (under other
/// names), starts their set's trial settled on the stored pairs, as its
/// plan's verdict says, instead of measuring from nothing. About 10 s.
#[test]
fn trial_pairs_survive_a_kill_9_and_settle_the_next_trial() {
    if !is_root() {
        return;
    }
    let (svc, db, mut started, first) = learning("auto");
    let co = exec_co(&svc, &mut started);
    let two = svc.exec_kernel(
        &["--name", "two", "--threads", "2"],
        std::process::Stdio::null(),
        &mut started,
    );
    let settled = |r: &str| r.contains("own kept") || r.contains("back to Linux");
    wait_for("a verdict on the pair", || {
        settled(&svc.status().last_reason)
    });
    wait_for("its pairs stored", || exported_pairs(&db).len() >= 2);
    end(&svc, "two", &mut started, two);
    end(&svc, "co", &mut started, co);
    kill_9(&mut started, first);
    let stored = exported_pairs(&db).len();

    start_on(&svc, &db, "auto", &mut started);
    let mut seen = String::new();
    let co = svc.exec_kernel(
        &["--name", "one-again", "--threads", "1"],
        std::process::Stdio::null(),
        &mut started,
    );
    wait_for("one-again running", || dop_of(&svc, "one-again").is_some());
    let two = svc.exec_kernel(
        &["--name", "two-again", "--threads", "2"],
        std::process::Stdio::null(),
        &mut started,
    );
    wait_for("the next trial started from the stored pairs", || {
        seen = svc.status().last_reason;
        seen.contains("started settled on") && seen.contains("stored pair(s) of these programs")
    });
    assert!(
        seen.contains(&format!("{stored} stored pair(s)")) || stored > 8,
        "{seen}"
    );
    end(&svc, "two-again", &mut started, two);
    end(&svc, "one-again", &mut started, co);
}
