//! Gang time sharing on this machine (`docs/policies/auto.md`, "Gang time
//! sharing"): two `kernel:barrier` apps that are not malleable, each with as
//! many threads as this process may use CPUs, run under `gang`, the
//! mechanism auto uses where such apps outnumber the CPUs (two of them on as
//! many CPUs, auto partitions: measured faster).
//! While they run, every thread's nice value is read from
//! `/proc/<pid>/task/<tid>/stat`: each app must be seen in the foreground
//! (nice 0) while the other is in the background (nice 19), both ways round;
//! once the shorter app has exited, the other's threads must be back at the
//! nice value they started with. No timing is asserted.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use coloc_model::reason::Reason;
use coloc_model::trace::TraceEvent;
use coloc_model::{AppId, Plan};
use common::{
    allowed_here, apps_by_pid, children, finished, read_trace, run_command, stat_field, tids_of,
};

const SHORT: AppId = AppId { app: 0, rep: 0 };
const LONG: AppId = AppId { app: 1, rep: 0 };
/// `stat` field of the nice value.
const NICE: usize = 19;

#[test]
fn barrier_teams_take_turns_in_the_foreground_and_get_their_nice_back() {
    let here = allowed_here();
    if here.len() < 2 {
        eprintln!("skipped: needs 2 CPUs, this process may use {here}");
        return;
    }
    // Apps inherit this process's nice (the test may itself run under
    // `nice`): that is what a thread coloc has not set, or has restored,
    // shows.
    let me = std::process::id();
    let start_nice: i64 = stat_field(me, me, NICE).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let workload = dir.path().join("w.toml");
    // The second app has twice the regions: it runs alone once the first
    // has exited.
    std::fs::write(
        &workload,
        r#"
name = "gang"
[[app]]
name = "short"
command = ["kernel:barrier", "--regions", "40000", "--work", "20000"]
threads = 0

[[app]]
name = "long"
command = ["kernel:barrier", "--regions", "80000", "--work", "20000"]
threads = 0
"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let mut child = run_command(&workload, "gang", &out).spawn().unwrap();
    // Per sampling round, per pid, the nice values of its threads.
    let mut rounds: Vec<BTreeMap<u32, Vec<i64>>> = Vec::new();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(600) {
        let mut round = BTreeMap::new();
        for pid in children(child.id()) {
            let nice: Vec<i64> = tids_of(pid)
                .into_iter()
                .filter_map(|tid| stat_field(pid, tid, NICE))
                .collect();
            if !nice.is_empty() {
                round.insert(pid, nice);
            }
        }
        rounds.push(round);
        std::thread::sleep(Duration::from_millis(20));
    }
    finished(child);
    let trace = read_trace(&out);
    let plans: Vec<&Plan> = trace
        .events
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Plan { plan, .. } => Some(plan),
            _ => None,
        })
        .collect();
    assert!(
        plans
            .iter()
            .flat_map(|p| &p.apps)
            .flat_map(|a| &a.reasons)
            .any(|r| matches!(r, Reason::Gang(g) if g.nice == 19)),
        "gang time sharing: {plans:#?}"
    );
    let app_of = apps_by_pid(&trace);
    // Per round, each app's nice when all its threads agree.
    let per_app: Vec<BTreeMap<AppId, i64>> = rounds
        .iter()
        .map(|round| {
            round
                .iter()
                .filter_map(|(pid, nice)| {
                    let app = *app_of.get(pid)?;
                    nice.iter().all(|n| *n == nice[0]).then_some((app, nice[0]))
                })
                .collect()
        })
        .collect();
    let seen = |short: i64, long: i64| {
        per_app
            .iter()
            .any(|r| r.get(&SHORT) == Some(&short) && r.get(&LONG) == Some(&long))
    };
    assert!(seen(0, 19), "short in the foreground: {per_app:?}");
    assert!(seen(19, 0), "long in the foreground: {per_app:?}");
    // Alone, the long app's threads fit the CPUs: left to Linux, its nice is
    // back.
    let last_long = rounds
        .iter()
        .rev()
        .find_map(|round| {
            round
                .iter()
                .find(|(pid, _)| app_of.get(pid) == Some(&LONG))
                .map(|(_, nice)| nice.clone())
        })
        .expect("the long app was seen");
    assert!(
        last_long.iter().all(|n| *n == start_nice),
        "long app's threads at its end: {last_long:?}, started at {start_nice}"
    );
}
