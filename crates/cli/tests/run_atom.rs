//! `coloc run --policy atom` with a real latency-sensitive service: nginx and
//! its wrk client (bench/programs/nginx-wrk.sh, printing its throughput every
//! second) next to a batch kernel that runs through AToM's competition.
//! Checked from /proc (/proc/<pid>/task/*/status, Cpus_allowed_list; stat's
//! nice and scheduling policy), sampled every 50 ms:
//! - during the competition, in every slot, every thread of the service's
//!   process tree is on exactly that slot's mapping (its CPUs, or its original
//!   affinity while Linux's placement competes) and every thread of the batch
//!   kernel on what the slot leaves it, never on the service's CPUs;
//! - after it, in the execution phase, the same for the winner, which is the
//!   mapping of one of the slots;
//! - nothing is left changed: no thread's nice or scheduling policy ever moved
//!   (atom changes neither), a process the service leaves behind (a `sleep`
//!   it started with `nice -n 3`, placed with the service while it ran) has
//!   its original affinity, its own nice and its policy after the run, coloc's journal
//!   and DoP records are gone, and no nginx or wrk outlives the run.
//!
//! No timing is asserted. Needs root (nginx's workers run as another user,
//! whose affinity only root may change) and the `nginx` and `wrk` programs
//! (`scripts/setup --bench`); without them it says why and passes.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use coloc_model::explain;
use coloc_model::reason::{AtomSignal, CompetitionPhase, Reason};
use coloc_model::{AppId, CpuSet, Plan};
use common::{apps_by_pid, decisions, in_force, planned, repo, stat_field, tids_of, Decision};

const SERVICE: AppId = AppId { app: 0, rep: 0 };
const BATCH: AppId = AppId { app: 1, rep: 0 };

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        || Path::new("/usr/sbin").join(program).is_file()
}

/// Every descendant of `pid`, depth first.
fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for c in common::children(pid) {
        out.push(c);
        out.extend(descendants(c));
    }
    out
}

/// One thread of an app's process tree as /proc showed it.
#[derive(Clone, Debug)]
struct Seen {
    /// Unix seconds.
    at: f64,
    /// The process coloc started, whose tree the thread is in.
    top: u32,
    tid: u32,
    cpus: CpuSet,
    nice: i64,
    policy: u32,
}

/// A thread's affinity, nice value and scheduling policy, if it still exists.
fn seen(at: f64, top: u32, pid: u32, tid: u32) -> Option<Seen> {
    Some(Seen {
        at,
        top,
        tid,
        cpus: common::status_of(pid, tid)
            .as_deref()
            .and_then(common::cpus_allowed)?,
        nice: stat_field(pid, tid, 19)?,
        policy: stat_field(pid, tid, 41)?,
    })
}

/// A stretch of the run under one AToM phase of the service: its note's
/// phase (`learning (Corunners), slot 1/2`, `executing the winner 1/2 (…)`)
/// and mapping (`CPUs 0`, `Linux placing every app`), and when it was in
/// force on the threads, trace seconds.
struct Window {
    phase: CompetitionPhase,
    mapping: Option<CpuSet>,
    from: f64,
    to: f64,
}

/// The service's competition in an atom plan: its phase (the winner's score
/// left out, it changes every window) and the candidate in force (None:
/// Linux placing every app), and the signal judging it; None while it waits
/// for an earlier app's competition.
fn competition_of(plan: &Plan) -> Option<(CompetitionPhase, Option<CpuSet>, AtomSignal)> {
    plan.for_app(SERVICE)?.reasons.iter().find_map(|r| match r {
        Reason::Competition(c) => {
            let phase = match c.phase.clone() {
                CompetitionPhase::Executing { winner, of, .. } => CompetitionPhase::Executing {
                    winner,
                    of,
                    score: 0.0,
                },
                p => p,
            };
            Some((phase, c.cpus.clone(), c.signal?))
        }
        _ => None,
    })
}

/// The windows of the service's phases, consecutive plans of one phase and
/// mapping together, each from its first plan's application (plus the time a
/// loaded machine may take to apply it) to the next window's plan (less the
/// clock's slack), the last one up to the service's exit.
fn windows(plans: &[Decision<'_>], exit: f64) -> Vec<Window> {
    let mut out: Vec<Window> = Vec::new();
    for d in plans {
        let Some((phase, mapping, _)) = competition_of(d.plan) else {
            continue;
        };
        if out
            .last()
            .is_some_and(|w| w.phase == phase && w.mapping == mapping)
        {
            continue;
        }
        if let Some(last) = out.last_mut() {
            last.to = d.t - common::CLOCK_SLACK;
        }
        out.push(Window {
            phase,
            mapping,
            from: d.applied + common::APPLY_SLACK,
            to: exit - common::APPLY_SLACK,
        });
    }
    out
}

#[test]
fn atom_places_a_real_service_during_and_after_its_competition() {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to set the affinity of nginx's workers");
        return;
    }
    if let Some(missing) = ["nginx", "wrk"].into_iter().find(|p| !on_path(p)) {
        eprintln!("skipped: `{missing}` is not installed (scripts/setup --bench installs it)");
        return;
    }
    let here = common::allowed_here();
    let dir = tempfile::tempdir().unwrap();
    let script = repo("bench/programs/nginx-wrk.sh");
    let keeper = dir.path().join("keeper.pid");
    let w = dir.path().join("w.toml");
    // The batch kernel: about 16 s of CPU time here, so it runs through the
    // service's warm-up and competition whatever CPUs it gets.
    std::fs::write(
        &w,
        format!(
            r#"
name = "atom-nginx"
epoch = "200ms"

[[app]]
name = "nginx"
command = ["sh", "-c", "nice -n 3 sleep 3600 & echo $! > {}; exec {}"]
threads = 1
class = "latency"
env = {{ ROUNDS = "16" }}

[app.metric]
regex = 'coloc-metric: ([0-9.eE+-]+)'

[[app]]
name = "batch"
command = ["kernel:compute", "--iters", "200000000"]
threads = 2
"#,
            keeper.display(),
            script.display()
        ),
    )
    .unwrap();

    // Sample every process tree coloc started (the service's: the shell,
    // the sleep, the script, nginx, its workers, wrk; the batch kernel's).
    let out = dir.path().join("out");
    let mut samples: Vec<Seen> = Vec::new();
    let mut cmd = common::run_command(&w, "atom", &out);
    let journal_dir = common::journal_of(&cmd);
    let mut child = cmd.spawn().unwrap();
    let coloc_pid = child.id();
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(900) {
        let at = common::unix_now();
        for top in common::children(coloc_pid) {
            for pid in std::iter::once(top).chain(descendants(top)) {
                samples.extend(
                    tids_of(pid)
                        .into_iter()
                        .filter_map(|t| seen(at, top, pid, t)),
                );
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    common::finished(child);
    let run = common::read_trace(&out);
    // The sleep the service left behind, as it is after the run; then gone.
    let keeper: u32 = std::fs::read_to_string(&keeper)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let after = seen(0.0, keeper, keeper, keeper);
    let _ = std::process::Command::new("kill")
        .arg(keeper.to_string())
        .status();
    let app_of: BTreeMap<u32, AppId> = apps_by_pid(&run);
    let plans = decisions(&run);
    let notes: Vec<String> = plans.iter().map(|d| explain::plan_line(d.plan)).collect();
    assert!(
        plans
            .iter()
            .filter_map(|d| competition_of(d.plan))
            .any(|(_, _, signal)| matches!(signal, AtomSignal::Metric { .. })),
        "the live metric is the signal: {notes:?}"
    );
    // The service's metric arrived live, line by line.
    let lines = run
        .observations()
        .filter_map(|o| o.app(SERVICE)?.metric)
        .map(|m| m.lines)
        .max()
        .unwrap_or(0);
    assert!(lines >= 3, "live metric lines seen: {lines}");

    let t0 = run.header.started_unix;
    let exit = run
        .events
        .iter()
        .find_map(|e| match e {
            coloc_model::TraceEvent::Exit { t, app, .. } if *app == SERVICE => {
                Some(t.as_secs_f64())
            }
            _ => None,
        })
        .expect("the service exits");
    let windows = windows(&plans, exit);
    let learning: Vec<&Window> = windows
        .iter()
        .filter(|w| matches!(w.phase, CompetitionPhase::Learning { .. }))
        .collect();
    assert!(
        learning.len() >= 2,
        "AToM never competed (two candidates at least): {notes:?}"
    );
    assert!(
        windows
            .iter()
            .any(|w| matches!(w.phase, CompetitionPhase::Executing { .. })),
        "AToM never executed a winner: {notes:?}"
    );

    // In each window every sampled thread is on the mapping of a plan in
    // force: what it gives the thread's app, or its original affinity
    // (everything usable here) where it leaves the app to Linux.
    let mut sampled: BTreeMap<(usize, AppId), usize> = BTreeMap::new();
    for s in &samples {
        let at = s.at - t0;
        let Some(app) = app_of.get(&s.top) else {
            continue;
        };
        let Some(i) = windows.iter().position(|w| w.from <= at && at <= w.to) else {
            continue;
        };
        let want: Vec<CpuSet> = in_force(&plans, at)
            .map(|d| planned(d.plan, *app, s.tid).unwrap_or_else(|| here.clone()))
            .collect();
        assert!(
            want.contains(&s.cpus),
            "thread {} of {app} at {at:.2} s on {}, {:?}: {:?} gives {want:?}",
            s.tid,
            s.cpus,
            windows[i].phase,
            windows[i].mapping
        );
        *sampled.entry((i, *app)).or_default() += 1;
    }
    // Every slot and the execution phase were seen, the batch kernel beside
    // the service at least in the first slot, and never on its CPUs when the
    // service was pinned.
    for (i, w) in windows.iter().enumerate() {
        if w.to - w.from < 1.0 {
            continue; // Cut short (a competition restarted): maybe unsampled.
        }
        assert!(
            sampled.contains_key(&(i, SERVICE)),
            "no sample of the service in {:?}: {:?} ({:.2} .. {:.2} s)",
            w.phase,
            w.mapping,
            w.from,
            w.to
        );
    }
    for d in &plans {
        if let (Some(service), Some(batch)) =
            (planned(d.plan, SERVICE, 0), planned(d.plan, BATCH, 0))
        {
            assert!(
                service.is_disjoint(&batch),
                "{}",
                explain::plan_line(d.plan)
            );
        }
    }
    let first = windows
        .iter()
        .position(|w| matches!(w.phase, CompetitionPhase::Learning { .. }));
    assert!(
        first.is_some_and(|i| sampled.contains_key(&(i, BATCH))),
        "the batch kernel was not running in the first slot: {sampled:?}"
    );
    // The winner is one of the slots: its mapping is the one learned in the
    // slot of its number.
    for w in &windows {
        let CompetitionPhase::Executing { winner, .. } = w.phase else {
            continue;
        };
        assert!(
            learning.iter().any(|l| matches!(l.phase,
                CompetitionPhase::Learning { slot, .. } if slot == winner)
                && l.mapping == w.mapping),
            "the winner {winner} ({:?}) was not a slot's mapping",
            w.mapping
        );
    }

    // Nice and scheduling policy: as each thread had them when first seen
    // (but the sleep's, which `nice -n 3` sets after its fork: below).
    let mut first_seen: BTreeMap<u32, (i64, u32)> = BTreeMap::new();
    for s in samples.iter().filter(|s| s.tid != keeper) {
        let was = *first_seen.entry(s.tid).or_insert((s.nice, s.policy));
        assert_eq!(
            (s.nice, s.policy),
            was,
            "thread {}'s nice and policy changed",
            s.tid
        );
    }
    // The sleep the service left behind: placed with the service while it
    // ran, everything back after the run.
    let was_pinned = samples.iter().any(|s| s.tid == keeper && s.cpus != here);
    let after = after.expect("the sleep outlives the service");
    assert!(was_pinned || here.len() < 2, "the sleep was never placed");
    // `nice -n 3` adds to what it inherits from this test (19 at most).
    let me = std::process::id();
    let nice = (stat_field::<i64>(me, me, 19).unwrap() + 3).min(19);
    assert_eq!(
        (after.cpus, after.nice, after.policy),
        (here.clone(), nice, 0),
        "the sleep's affinity, nice and policy (SCHED_OTHER) after the run"
    );
    let journal = journal_dir.join(format!("{coloc_pid}.journal"));
    assert!(!journal.exists(), "{} left behind", journal.display());
    let records: Vec<String> = std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with(&format!("coloc-{coloc_pid}-")))
                .collect()
        })
        .unwrap_or_default();
    assert!(records.is_empty(), "DoP records left behind: {records:?}");
    // Nothing else the run started outlives it.
    for s in samples.iter().filter(|s| s.tid != keeper) {
        assert!(
            !Path::new(&format!("/proc/{}", s.tid)).exists()
                || std::fs::read_to_string(format!("/proc/{}/comm", s.tid))
                    .is_ok_and(|c| !["nginx", "wrk"].contains(&c.trim())),
            "thread {} outlived the run",
            s.tid
        );
    }
}
