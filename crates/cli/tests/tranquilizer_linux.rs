//! Thread Tranquilizer on this machine (docs/policies/tranquilizer.md): a
//! memory-bound kernel (`kernel:stream`, three arrays together larger than
//! the machine's LLC, with the shim's progress reports) and a compute-bound
//! one (`kernel:compute`) run under `tranquilizer`. While they run, every thread's nice and EEVDF slice are read
//! from `/proc/<pid>/task/<tid>/sched` and must be what the trace's plan in
//! force says (the kernel's defaults where the plan sets nothing, so a revert
//! is seen restored); the memory-bound app's pages must be on its nodes
//! (`numa_maps`), its interleave walked in the trace. No timing is asserted.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use coloc_model::explain;
use coloc_model::reason::{Reason, TranquilizerStep};
use coloc_model::trace::TraceEvent;
use coloc_model::{AppId, MemPolicy};
use common::{children, finished, read_trace, run_command, tids_of, unix_now};

const STREAM: AppId = AppId { app: 0, rep: 0 };
const COMPUTE: AppId = AppId { app: 1, rep: 0 };

/// A sample of one thread: when (trace seconds), its nice and slice.
#[derive(Clone, Copy, Debug)]
struct Seen {
    at: f64,
    /// How long the thread had been seen by then, s.
    age: f64,
    pid: u32,
    nice: i64,
    slice_ns: u64,
}

/// `prio` and `se.slice` of a thread's `sched` file.
fn sched_of(pid: u32, tid: u32) -> Option<(i64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/sched")).ok()?;
    let field = |name: &str| {
        text.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
            .and_then(|l| l.split(':').nth(1))
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    Some((field("prio")? as i64 - 120, field("se.slice")? as u64))
}

/// Nodes holding pages of `pid` (`N<k>=` in `numa_maps`).
fn page_nodes(pid: u32) -> Vec<u32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/numa_maps")).unwrap_or_default();
    let mut nodes: Vec<u32> = text
        .split_whitespace()
        .filter_map(|t| t.strip_prefix('N')?.split_once('=')?.0.parse().ok())
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    nodes
}

fn online_nodes() -> Vec<u32> {
    let text = std::fs::read_to_string("/sys/devices/system/node/online").unwrap_or_default();
    let set: coloc_model::CpuSet = text.trim().parse().unwrap_or_default();
    set.iter().collect()
}

#[test]
fn threads_have_the_nice_slice_and_memory_the_trace_says() {
    if sched_of(std::process::id(), std::process::id()).is_none() {
        eprintln!("skipped: no se.slice in /proc/self/task/*/sched (needs an EEVDF kernel)");
        return;
    }
    // Apps inherit this process's nice and slice (the test may itself run
    // under `nice`): that is what a thread coloc has not set shows.
    let (default_nice, default_slice) = sched_of(std::process::id(), std::process::id()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let workload = dir.path().join("w.toml");
    // Three arrays of `mb` MiB must outgrow the LLC the policy's no-counter
    // substitute compares the resident set with (some KVM guests report the
    // host's whole L3, 480 MiB seen); the sweeps shrink as the arrays grow, so
    // the run stays about as long as 150 sweeps of 64 MiB.
    let topology = coloc_linux::topology::host_topology().unwrap();
    let llc_mib = coloc_policy::tranquilizer::llc_bytes(&topology) >> 20;
    let mb = (llc_mib / 3 + 32).max(64);
    let iters = (150 * 64 / mb).max(10);
    std::fs::write(
        &workload,
        format!(
            r#"
name = "tranquil"
[[app]]
name = "stream"
command = ["kernel:stream", "--mb", "{mb}", "--iters", "{iters}"]
threads = 2
malleable = true

[[app]]
name = "compute"
command = ["kernel:compute", "--iters", "15000000"]
threads = 2
"#
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let started = unix_now();
    // No stored profile (a profile store of its own, empty): the stream
    // kernel is classified by its resident set.
    let mut child = run_command(&workload, "tranquilizer", &out)
        .env("XDG_DATA_HOME", dir.path())
        .spawn()
        .unwrap();
    let mut seen: Vec<Seen> = Vec::new();
    let mut first_seen: BTreeMap<u32, f64> = BTreeMap::new();
    let mut nodes_seen: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(300) {
        let at = unix_now();
        for pid in children(child.id()) {
            for tid in tids_of(pid) {
                if let Some((nice, slice_ns)) = sched_of(pid, tid) {
                    let first = *first_seen.entry(tid).or_insert(at);
                    seen.push(Seen {
                        at,
                        age: at - first,
                        pid,
                        nice,
                        slice_ns,
                    });
                }
            }
            nodes_seen.insert(pid, page_nodes(pid));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let stderr = finished(child);
    assert!(!stderr.contains("could not restore"), "{stderr}");
    let trace = read_trace(&out);
    let t_start = trace
        .events
        .iter()
        .find_map(|e| match e {
            TraceEvent::Header(h) => Some(h.started_unix),
            _ => None,
        })
        .unwrap_or(started);

    // Each app's plans (trace time, nice, slice in ns, memory) and its pid.
    let mut plans: BTreeMap<AppId, Vec<(f64, i64, u64, MemPolicy)>> = BTreeMap::new();
    let mut pids: BTreeMap<u32, AppId> = BTreeMap::new();
    let mut walked = false;
    let mut notes = String::new();
    // The classes the passes found, per app (memory-intensive or not).
    let mut classes: BTreeMap<AppId, Vec<bool>> = BTreeMap::new();
    for e in &trace.events {
        match e {
            TraceEvent::Plan { t, plan, .. } => {
                notes.push_str(&explain::plan_line(plan));
                notes.push('\n');
                for p in &plan.apps {
                    for r in &p.reasons {
                        let class = match r {
                            Reason::Tranquilizer(
                                TranquilizerStep::Already { class, .. }
                                | TranquilizerStep::Trying { class, .. }
                                | TranquilizerStep::NoJudge { class, .. },
                            ) => class,
                            _ => continue,
                        };
                        classes.entry(p.app).or_default().push(class.memory);
                    }
                }
                for p in &plan.apps {
                    plans.entry(p.app).or_default().push((
                        t.as_secs_f64(),
                        p.sched.nice.map_or(default_nice, i64::from),
                        p.sched
                            .slice_us
                            .map_or(default_slice, |us| u64::from(us) * 1000),
                        p.memory,
                    ));
                }
            }
            TraceEvent::Start { app, pid, .. } => {
                pids.insert(*pid, *app);
            }
            TraceEvent::Applied { outcomes, .. } => {
                walked |= outcomes.iter().any(|o| {
                    o.app == STREAM && o.pages.as_ref().is_some_and(|p| p.action == "interleave")
                });
            }
            _ => {}
        }
    }
    let found = |memory: bool| classes.values().flatten().any(|m| *m == memory);
    assert!(found(true), "memory-intensive: {notes}");
    assert!(found(false), "CPU-intensive: {notes}");
    let interleaved = plans[&STREAM].iter().any(|p| p.3 == MemPolicy::Interleave);
    assert_eq!(
        walked, interleaved,
        "a walk exactly when the plan interleaves: {notes}"
    );

    // Every sample agrees with a plan in force around it (a plan takes effect
    // once applied; the grace covers the apply and the sampling round).
    let mut slices: BTreeMap<AppId, Vec<u64>> = BTreeMap::new();
    for s in &seen {
        let Some(app) = pids.get(&s.pid) else {
            continue;
        };
        let t = s.at - t_start;
        let timeline = &plans[app];
        let allowed: Vec<(i64, u64)> = timeline
            .iter()
            .enumerate()
            .filter(|(k, p)| {
                let until = timeline.get(k + 1).map_or(f64::INFINITY, |n| n.0);
                p.0 <= t + 0.1 && until >= t - 0.5
            })
            .map(|(_, p)| (p.1, p.2))
            .chain(
                [(default_nice, default_slice)]
                    .into_iter()
                    // A thread not yet applied to: the next apply is up to
                    // an epoch away, plus the sampling round.
                    .filter(|_| t < timeline[0].0 + 0.5 || s.age < 0.6),
            )
            .collect();
        assert!(
            allowed.contains(&(s.nice, s.slice_ns)),
            "{app} at {t:.2} s: nice {}, slice {} ns; the trace allows {allowed:?}",
            s.nice,
            s.slice_ns
        );
        slices.entry(*app).or_default().push(s.slice_ns);
    }
    // The trials were seen on the threads: 100 ms for the memory-bound app,
    // 20 ms (or its revert) for the compute-bound one.
    assert!(slices[&STREAM].contains(&100_000_000), "{notes}");
    assert!(
        plans[&COMPUTE].iter().any(|p| p.2 == 20_000_000),
        "the compute-bound app's 20 ms trial: {notes}"
    );
    // Pages only on the app's nodes (every node here: it is not placed).
    let online = online_nodes();
    for (pid, nodes) in &nodes_seen {
        assert!(nodes.iter().all(|n| online.contains(n)), "{pid}: {nodes:?}");
    }
}
