//! Waste the Manager's checks see, on this machine
//! (`crates/manager/src/conservation.rs`):
//! - a malleable OpenMP kernel whose work is one parallel region, run alone
//!   with a DoP of 1, holds one CPU while the other idles. Its team has no
//!   thread waiting for a CPU, so the check that counts waiting threads never
//!   flagged it; `underused` does;
//! - a libgomp team started with both CPUs and then packed onto one spins at
//!   its barriers for the teammate that is off the CPU: `spinning`.
//!
//! Checked from /proc (each thread's CPU time and its allowed CPUs, read
//! through coloc_linux while the run goes on) and the shim's counters; no
//! timing is asserted.

mod support;

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coloc_linux::machine::{thread_allowed, thread_ticks};
use coloc_manager::{run, Recorder, RunOptions, DEFAULT_EPOCH};
use coloc_model::{AppPlan, AppView, Placement, Plan, SchedSettings, Shortage, Tid, TraceEvent};
use coloc_model::{CpuSet, Observation, View, Workload};
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
        each_app(view, |a| AppPlan {
            dop: Some(1),
            ..AppPlan::native(a.id)
        })
    }
}

/// A plan of `plan` for every app of the view.
fn each_app(view: &View<'_>, plan: impl Fn(&AppView) -> AppPlan) -> Plan {
    Plan {
        apps: view.apps.iter().map(plan).collect(),
        ..Plan::default()
    }
}

/// Keeps the trace and, at each observation of the app's process, each
/// thread's CPU time so far (clock ticks) and allowed CPUs, read through
/// coloc_linux (procfs). Given a stop flag, it stops the run once it has
/// seen [`PACKED_OBSERVATIONS`] observations with the team packed.
#[derive(Default)]
struct Threads {
    events: Vec<TraceEvent>,
    pid: Option<u32>,
    /// Per observation: each thread's ticks and allowed CPUs.
    seen: Vec<BTreeMap<Tid, (u64, CpuSet)>>,
    /// Observations with two threads or more, each allowed one CPU.
    packed: usize,
    stop: Option<Arc<AtomicBool>>,
}

/// Observations with the team packed before the run is stopped: enough for
/// a reference interval's successor, the interval of grace and violations.
const PACKED_OBSERVATIONS: usize = 8;

impl Threads {
    /// The CPU time of every thread seen, as last seen.
    fn ticks(&self) -> BTreeMap<Tid, u64> {
        let mut last = BTreeMap::new();
        for threads in &self.seen {
            last.extend(threads.iter().map(|(&t, &(n, _))| (t, n)));
        }
        last
    }
}

impl Recorder for Threads {
    fn record(&mut self, event: &TraceEvent) -> io::Result<()> {
        match event {
            TraceEvent::Start { pid, .. } => self.pid = Some(*pid),
            TraceEvent::Exit { .. } => self.pid = None,
            TraceEvent::Obs(_) => {
                if let Some(pid) = self.pid {
                    let proc = Path::new("/proc");
                    let mut allowed = thread_allowed(proc, pid);
                    let threads: BTreeMap<Tid, (u64, CpuSet)> = thread_ticks(proc, pid)
                        .into_iter()
                        .filter_map(|(t, n)| Some((t, (n, allowed.remove(&t)?))))
                        .collect();
                    if threads.len() >= 2 && threads.values().all(|(_, c)| c.len() == 1) {
                        self.packed += 1;
                    }
                    self.seen.push(threads);
                }
                if let Some(stop) = self.stop.as_ref() {
                    if self.packed >= PACKED_OBSERVATIONS {
                        stop.store(true, Ordering::Relaxed);
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
    let mut rec = Threads::default();
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
    let ticks = rec.ticks();
    let mut busy: Vec<u64> = ticks.values().copied().collect();
    busy.sort_unstable();
    let most = busy.pop().unwrap_or(0);
    assert!(most >= 10, "the team's thread ran: {ticks:?}");
    assert!(
        busy.iter().all(|&t| t * 10 <= most),
        "one thread did the work: {ticks:?}"
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

/// Leaves every app to Linux until [`PACK_AT`], then packs each running app
/// onto the first allowed CPU: the app started with both CPUs in its mask,
/// so libgomp spins at its barriers (it throttles its spin only when it
/// starts with more threads than CPUs).
#[derive(Debug)]
struct PackLater {
    cpu: String,
}

/// When [`PackLater`] packs: after five observations of the team with a CPU
/// for each thread, the reference the `spinning` check compares with.
const PACK_AT: Duration = Duration::from_millis(600);

impl Policy for PackLater {
    fn name(&self) -> &'static str {
        "pack-later"
    }

    fn decide(&mut self, view: &View<'_>) -> Plan {
        each_app(view, |a| AppPlan {
            placement: if view.now >= PACK_AT && a.is_running() {
                Placement::Shared(self.cpu.parse().unwrap())
            } else {
                Placement::Unmanaged
            },
            ..AppPlan::native(a.id)
        })
    }
}

/// Whether some interval before the team was packed had both threads busy
/// and neither waiting for a CPU more than a quarter of it (the `spinning`
/// check's reference; on a machine busy with other work there may be none).
fn had_a_cpu_each(events: &[TraceEvent]) -> bool {
    let obs: Vec<&Observation> = events
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Obs(o) if o.at < PACK_AT => Some(o.as_ref()),
            _ => None,
        })
        .collect();
    obs.windows(2).any(|w| {
        let (Some(a), Some(b)) = (w[0].apps.first(), w[1].apps.first()) else {
            return false;
        };
        let dt = w[1].at.saturating_sub(w[0].at).as_nanos() as u64;
        let busy: Vec<_> = b
            .threads
            .iter()
            .filter_map(|t| {
                let was = a.thread(t.tid).cloned().unwrap_or_default();
                let run = t.run_ns.saturating_sub(was.run_ns);
                let wait = t.wait_ns.saturating_sub(was.wait_ns);
                (run * 10 > dt).then_some(wait * 4 <= dt)
            })
            .collect();
        busy.len() >= 2 && busy.iter().all(|&unqueued| unqueued)
    })
}

#[test]
fn a_libgomp_team_packed_on_one_cpu_is_flagged_spinning() {
    let Some(cpus) = two_cpus() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut m = machine(dir.path());
    // Many short regions, each ending in a barrier: far more than the run
    // lets it finish (it is stopped once packed long enough).
    let mut app = spec(
        "barrier",
        2,
        &["kernel:barrier", "--regions", "100000000", "--work", "4000"],
    );
    // The shim's channel reports its regions and team.
    app.malleable = true;
    // As root, ahead of other work on the machine (the journal restores
    // it): the check needs an interval in which each thread had a CPU.
    if nix::unistd::geteuid().is_root() {
        app.sched = Some(SchedSettings {
            nice: Some(-10),
            slice_us: None,
        });
    }
    let w = Workload {
        name: "spin".into(),
        epoch: Some(DEFAULT_EPOCH),
        apps: vec![app],
    };
    let stop = Arc::new(AtomicBool::new(false));
    let mut rec = Threads {
        stop: Some(stop.clone()),
        ..Threads::default()
    };
    let opts = RunOptions {
        epoch: DEFAULT_EPOCH,
        seed: None,
        started_unix: 0.0,
        stop: Some(stop),
    };
    let first = cpus.iter().next().unwrap().to_string();
    let summary = run(
        &mut m,
        &mut PackLater { cpu: first.clone() },
        &w,
        &opts,
        &mut rec,
    )
    .unwrap();
    assert!(summary.interrupted, "stopped once packed long enough");
    // /proc: the team was packed on one CPU, and its two threads shared it.
    assert!(rec.packed >= PACKED_OBSERVATIONS, "{:?}", rec.seen);
    let last = rec.seen.last().expect("observed");
    assert!(last.values().all(|(_, c)| c.to_list() == first), "{last:?}");
    let before = &rec.seen[rec.seen.len() - PACKED_OBSERVATIONS];
    let ran: Vec<u64> = last
        .iter()
        .filter_map(|(t, (n, _))| Some(n - before.get(t)?.0))
        .filter(|&d| d > 0)
        .collect();
    assert!(
        ran.len() >= 2,
        "both threads ran while packed: {before:?} {last:?}"
    );
    // The shim's counters: the team was inside its regions with 2 threads,
    // and passed barriers (regions ended) while packed.
    let packed_obs: Vec<&Observation> = rec
        .events
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Obs(o) if o.at >= PACK_AT => Some(o.as_ref()),
            _ => None,
        })
        .collect();
    let regions = |o: &Observation| {
        o.apps
            .first()
            .and_then(|a| a.omp.as_ref())
            .map(|m| (m.team_size, m.regions_completed))
    };
    let (first_obs, last_obs) = (packed_obs.first().unwrap(), packed_obs.last().unwrap());
    let (Some((team, r0)), Some((_, r1))) = (regions(first_obs), regions(last_obs)) else {
        panic!("the shim reported no team: {:?}", rec.events)
    };
    assert_eq!(team, 2);
    assert!(r1 > r0, "regions ended while packed: {r0} → {r1}");
    // The trace: spinning, judged against its own rate with a CPU per
    // thread. Without such an interval (a machine busy with other work)
    // there is nothing to judge against.
    let spinning: Vec<&TraceEvent> = rec
        .events
        .iter()
        .filter(|e| matches!(e, TraceEvent::Spinning { .. }))
        .collect();
    if had_a_cpu_each(&rec.events) {
        assert!(!spinning.is_empty(), "{:?}", rec.events);
        assert_eq!(summary.waste.spinning.observations, spinning.len());
        assert!(spinning.iter().all(|e| match e {
            TraceEvent::Spinning { t, cpu, useful, .. } => *t > PACK_AT && *useful < *cpu,
            _ => false,
        }));
    } else {
        eprintln!(
            "no interval before packing gave each thread a CPU (the machine is busy): \
             spinning not judged, {} event(s)",
            spinning.len()
        );
    }
    // Packed alone, its waiting threads were kept off the other CPU.
    assert!(summary.waste.idle_while_waiting.episodes > 0);
    assert!(journals(dir.path()).is_empty());
}
