//! Waste the Manager's checks see, on this machine
//! (`crates/manager/src/conservation.rs`): a malleable OpenMP kernel whose
//! work is one parallel region, run alone with a DoP of 1, holds one CPU
//! while the other idles. Its team has no thread waiting for a CPU, so the
//! check that counts waiting threads never flagged it; `underused` does.
//! Checked from /proc (each thread's CPU time, `stat` fields 14–15, while the
//! run goes on); no timing is asserted.

mod support;

use std::collections::BTreeMap;
use std::io;

use coloc_manager::{run, Recorder, RunOptions, DEFAULT_EPOCH};
use coloc_model::{AppPlan, Plan, Shortage, Tid, TraceEvent, View, Workload};
use coloc_policy::Policy;
use support::*;

/// A DoP of 1 for every app: the cut a DoP policy makes.
#[derive(Debug)]
struct DopOne;

impl Policy for DopOne {
    fn name(&self) -> &'static str {
        "dop-one"
    }

    fn decide(&mut self, view: &View<'_>) -> Plan {
        Plan {
            apps: view
                .apps
                .iter()
                .map(|a| AppPlan {
                    dop: Some(1),
                    ..AppPlan::native(a.id)
                })
                .collect(),
            ..Plan::default()
        }
    }
}

/// Keeps the trace and, at each observation, every thread's CPU time so far
/// (clock ticks, from /proc) of the app's process.
#[derive(Default)]
struct Sampler {
    events: Vec<TraceEvent>,
    pid: Option<u32>,
    ticks: BTreeMap<Tid, u64>,
}

fn cpu_ticks(pid: u32, tid: Tid) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
    // Fields after the command's closing parenthesis: state is field 3, so
    // utime (14) and stime (15) are the 12th and 13th from there.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

impl Recorder for Sampler {
    fn record(&mut self, event: &TraceEvent) -> io::Result<()> {
        match event {
            TraceEvent::Start { pid, .. } => self.pid = Some(*pid),
            TraceEvent::Exit { .. } => self.pid = None,
            TraceEvent::Obs(_) => {
                if let Some(pid) = self.pid {
                    for tid in tids_of(pid) {
                        if let Some(t) = cpu_ticks(pid, tid) {
                            self.ticks.insert(tid, t);
                        }
                    }
                }
            }
            _ => {}
        }
        self.events.push(event.clone());
        Ok(())
    }
}

#[test]
fn a_team_held_to_one_thread_beside_an_idle_cpu_is_flagged_underused() {
    if two_cpus().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    // One long region: 16 M sweeps, about a second of CPU on this machine's
    // simulator twin, more under load.
    let mut app = spec("one-region", 2, &["kernel:compute", "--iters", "16000000"]);
    app.malleable = true;
    let w = Workload {
        name: "waste".into(),
        epoch: Some(DEFAULT_EPOCH),
        apps: vec![app],
    };
    let mut rec = Sampler::default();
    let opts = RunOptions {
        epoch: DEFAULT_EPOCH,
        seed: None,
        started_unix: 0.0,
        stop: None,
    };
    let summary = run(&mut m, &mut DopOne, &w, &opts, &mut rec).unwrap();
    assert_eq!(summary.failed, 0);
    // /proc: one thread did the work; no other thread of the app had more
    // than a tick or two (libgomp may start its pool before the DoP applies).
    let mut busy: Vec<u64> = rec.ticks.values().copied().collect();
    busy.sort_unstable();
    let most = busy.pop().unwrap_or(0);
    assert!(most >= 10, "the team's thread ran: {:?}", rec.ticks);
    assert!(
        busy.iter().all(|&t| t * 10 <= most),
        "one thread did the work: {:?}",
        rec.ticks
    );
    // The trace: the region seen with a team of 1 of 2, flagged underused
    // once it outlasted an epoch; the waiting-thread check saw nothing.
    let team_of_one = rec.events.iter().any(|e| match e {
        TraceEvent::Obs(o) => o.apps.iter().any(|a| {
            a.omp
                .as_ref()
                .is_some_and(|m| m.in_parallel && m.team_size == 1)
        }),
        _ => false,
    });
    assert!(team_of_one, "the region ran with a team of 1");
    let underused: Vec<&TraceEvent> = rec
        .events
        .iter()
        .filter(|e| {
            matches!(
                e,
                TraceEvent::Underused {
                    short: Shortage::Team { team: 1, wanted: 2 },
                    ..
                }
            )
        })
        .collect();
    let observations = rec
        .events
        .iter()
        .filter(|e| matches!(e, TraceEvent::Obs(_)))
        .count();
    if observations >= 4 {
        assert!(!underused.is_empty(), "{:?}", rec.events);
        assert_eq!(summary.waste.underused.observations, underused.len());
    } else {
        eprintln!("the run ended within {observations} observations: too short to judge");
    }
    assert_eq!(summary.waste.idle_while_waiting.episodes, 0);
    assert!(journals(dir.path()).is_empty());
}
