//! The Manager loop against a scripted machine: apps take a fixed time each, given
//! in their `env` as `RUN_MS`, and run the same whatever the placement. This
//! checks the loop's own logic (arrivals, repetitions, admission, failures,
//! restoring) independently of Linux and of the simulator.

use std::time::Duration;

use coloc_manager::{
    run, serve, Inbox, LaunchRequest, Launched, Machine, MachineError, MachineEvent, RunOptions,
};
use coloc_model::testutils::{app_spec, fixture_topologies};
use coloc_model::trace::{ApplyOutcome, ExitStatus, SelfUsage};
use coloc_model::{AppId, InstanceUsage, Observation, Plan, Topology, TraceEvent, Workload};
use coloc_policy::{by_name, Policy};

#[derive(Debug)]
struct Scripted {
    topo: Topology,
    now: Duration,
    /// (exit time, app)
    running: Vec<(Duration, AppId)>,
    next_pid: u32,
    finished: bool,
    applied: usize,
}

impl Scripted {
    fn new() -> Self {
        Self {
            topo: fixture_topologies().remove(2),
            now: Duration::ZERO,
            running: Vec::new(),
            next_pid: 100,
            finished: false,
            applied: 0,
        }
    }
}

impl Machine for Scripted {
    fn kind(&self) -> String {
        "scripted".into()
    }
    fn topology(&self) -> &Topology {
        &self.topo
    }
    fn now(&self) -> Duration {
        self.now
    }
    fn launch(&mut self, req: LaunchRequest<'_>) -> Result<Launched, MachineError> {
        let ms: u64 = req
            .spec
            .env
            .get("RUN_MS")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| MachineError::Launch {
                app: req.id,
                name: req.spec.name.clone(),
                source: "no RUN_MS".into(),
            })?;
        self.running
            .push((self.now + Duration::from_millis(ms), req.id));
        self.next_pid += 1;
        Ok(Launched {
            pid: self.next_pid,
            argv: vec!["scripted".into()],
            tids: vec![self.next_pid],
            levers: None,
        })
    }
    fn wait_until(&mut self, deadline: Duration) -> Result<Vec<MachineEvent>, MachineError> {
        let first = self.running.iter().map(|(t, _)| *t).min();
        match first {
            Some(t) if t <= deadline => {
                self.now = self.now.max(t);
                let (done, rest): (Vec<_>, Vec<_>) =
                    self.running.iter().partition(|(at, _)| *at <= t);
                self.running = rest;
                Ok(done
                    .into_iter()
                    .map(|(at, app)| MachineEvent::Exited {
                        app,
                        at,
                        status: ExitStatus::Code(0),
                        output: Some("coloc-metric: 42.5 ops".into()),
                        usage: Some(InstanceUsage {
                            cpu_ns: 7,
                            cycles: None,
                            llc: None,
                        }),
                    })
                    .collect())
            }
            _ => {
                self.now = self.now.max(deadline);
                Ok(Vec::new())
            }
        }
    }
    fn observe(&mut self) -> Result<Observation, MachineError> {
        Ok(Observation {
            at: self.now,
            ..Observation::default()
        })
    }
    fn apply(&mut self, plan: &Plan) -> Vec<ApplyOutcome> {
        self.applied += 1;
        plan.apps
            .iter()
            .map(|p| ApplyOutcome {
                app: p.app,
                ..ApplyOutcome::default()
            })
            .collect()
    }
    fn finish(&mut self) -> Result<SelfUsage, MachineError> {
        self.finished = true;
        Ok(SelfUsage {
            cpu: Duration::ZERO,
            wall: self.now,
        })
    }
}

fn workload(apps: &[(&str, u64, u64, u32)]) -> Workload {
    Workload {
        name: "w".into(),
        epoch: None,
        apps: apps
            .iter()
            .map(|(name, arrive_ms, run_ms, repeat)| {
                let mut s = app_spec(name, 2);
                s.arrive_at = Duration::from_millis(*arrive_ms);
                s.repeat = *repeat;
                if *run_ms > 0 {
                    s.env.insert("RUN_MS".into(), run_ms.to_string());
                }
                s.metric = Some(coloc_model::workload::MetricSpec {
                    regex: r"coloc-metric: ([0-9.]+)".into(),
                    file: None,
                    higher_is_better: true,
                    unit: None,
                });
                s
            })
            .collect(),
    }
}

fn run_with(policy: &str, w: &Workload) -> (Vec<TraceEvent>, Scripted) {
    let mut m = Scripted::new();
    let mut p = by_name(policy).unwrap();
    let mut events = Vec::new();
    let opts = RunOptions {
        epoch: Duration::from_millis(100),
        seed: None,
        started_unix: 0.0,
        stop: None,
    };
    run(&mut m, p.as_mut(), w, &opts, &mut events).unwrap();
    (events, m)
}

/// (app index, rep, start ms, exit ms) of every instance.
fn lifetimes(events: &[TraceEvent]) -> Vec<(u32, u32, u64, u64)> {
    let mut out = Vec::new();
    for e in events {
        if let TraceEvent::Start { t, app, .. } = e {
            let exit = events.iter().find_map(|e| match e {
                TraceEvent::Exit { t, app: a, .. } if a == app => Some(*t),
                _ => None,
            });
            out.push((
                app.app,
                app.rep,
                t.as_millis() as u64,
                exit.unwrap().as_millis() as u64,
            ));
        }
    }
    out
}

#[test]
fn native_starts_apps_at_arrival_and_repeats_back_to_back() {
    // a: arrives 0, runs 250 ms, twice; b: arrives 120 ms, runs 100 ms.
    let w = workload(&[("a", 0, 250, 2), ("b", 120, 100, 1)]);
    let (events, m) = run_with("native", &w);
    assert_eq!(
        lifetimes(&events),
        vec![(0, 0, 0, 250), (1, 0, 120, 220), (0, 1, 250, 500)]
    );
    assert!(m.finished, "settings are restored at the end");
    assert!(matches!(events.first(), Some(TraceEvent::Header(_))));
    assert!(matches!(events.last(), Some(TraceEvent::End { .. })));
    // Every exit carries the metric read from the output and the machine's
    // whole-life usage of the instance.
    let metrics: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Exit { metric, usage, .. } => Some((*metric, *usage)),
            _ => None,
        })
        .collect();
    let usage = InstanceUsage {
        cpu_ns: 7,
        cycles: None,
        llc: None,
    };
    assert_eq!(metrics, vec![(Some(42.5), Some(usage)); 3]);
}

#[test]
fn batch_queues_apps_in_arrival_order() {
    // Both arrive at 0; b waits for a; a's second run arrives when a exits, after b.
    let w = workload(&[("a", 0, 300, 2), ("b", 0, 200, 1)]);
    let (events, _) = run_with("batch", &w);
    assert_eq!(
        lifetimes(&events),
        vec![(0, 0, 0, 300), (1, 0, 300, 500), (0, 1, 500, 800)]
    );
}

#[test]
fn a_program_that_cannot_start_is_recorded_and_the_rest_runs() {
    // b has no RUN_MS: the scripted machine refuses to launch it.
    let w = workload(&[("a", 0, 200, 1), ("b", 50, 0, 2)]);
    let (events, m) = run_with("native", &w);
    let failed: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Exit {
                app,
                status: ExitStatus::FailedToStart(why),
                ..
            } => Some((*app, why.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(failed.len(), 2, "both repetitions of b fail: {failed:?}");
    assert_eq!(failed[0].1, "no RUN_MS");
    assert_eq!(lifetimes(&events), vec![(0, 0, 0, 200)]);
    assert!(m.finished);
}

#[test]
fn epochs_observe_and_decide_while_apps_run() {
    let w = workload(&[("a", 0, 1000, 1)]);
    let (events, m) = run_with("equal", &w);
    let obs = events
        .iter()
        .filter(|e| matches!(e, TraceEvent::Obs(_)))
        .count();
    // Epochs at 100, 200, ..., 900 ms happen before the exit at 1000 ms; the one at
    // 1000 ms races the exit and may or may not run.
    assert!((9..=10).contains(&obs), "{obs} observations");
    assert!(m.applied >= obs);
    // Every observation is followed by a decision (its trigger is the epoch, or an
    // exit that came in the same poll).
    for (i, e) in events.iter().enumerate() {
        if matches!(e, TraceEvent::Obs(_)) {
            assert!(
                matches!(events[i + 1], TraceEvent::Plan { .. }),
                "event after observation {i}: {:?}",
                events[i + 1]
            );
        }
    }
}

/// A broken policy must not reach the machine, and the machine is still restored.
#[test]
fn an_invalid_plan_stops_the_run_and_restores() {
    #[derive(Debug)]
    struct Broken;
    impl Policy for Broken {
        fn name(&self) -> &'static str {
            "broken"
        }
        fn decide(&mut self, _: &coloc_model::View<'_>) -> Plan {
            Plan::default()
        }
    }
    let w = workload(&[("a", 0, 100, 1)]);
    let mut m = Scripted::new();
    let mut events = Vec::new();
    let opts = RunOptions {
        epoch: Duration::from_millis(100),
        seed: None,
        started_unix: 0.0,
        stop: None,
    };
    let err = run(&mut m, &mut Broken, &w, &opts, &mut events).unwrap_err();
    assert!(
        err.to_string().contains("app 0.0 in the view has no plan"),
        "{err}"
    );
    assert!(m.finished);
    assert_eq!(m.applied, 0);
}

/// An inbox that hands over apps at given times (on the scripted machine's
/// clock, read through a shared cell) and asks the loop to stop after the last.
struct Timed {
    now: std::rc::Rc<std::cell::Cell<Duration>>,
    /// (arrives at ms, name, run ms), earliest first.
    due: Vec<(u64, &'static str, u64)>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    stop_at: Duration,
}

impl Inbox for Timed {
    fn take(&mut self) -> Vec<coloc_model::AppSpec> {
        let now = self.now.get();
        if now >= self.stop_at {
            self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let n = self
            .due
            .iter()
            .take_while(|(at, _, _)| Duration::from_millis(*at) <= now)
            .count();
        self.due
            .drain(..n)
            .map(|(_, name, run_ms)| {
                let mut s = app_spec(name, 2);
                s.env.insert("RUN_MS".into(), run_ms.to_string());
                s
            })
            .collect()
    }

    fn latency(&self) -> Duration {
        Duration::from_millis(10)
    }
}

/// A machine whose clock the inbox can read.
struct Clocked(Scripted, std::rc::Rc<std::cell::Cell<Duration>>);

impl Machine for Clocked {
    fn kind(&self) -> String {
        self.0.kind()
    }
    fn topology(&self) -> &Topology {
        self.0.topology()
    }
    fn now(&self) -> Duration {
        self.0.now()
    }
    fn launch(&mut self, req: LaunchRequest<'_>) -> Result<Launched, MachineError> {
        self.0.launch(req)
    }
    fn wait_until(&mut self, deadline: Duration) -> Result<Vec<MachineEvent>, MachineError> {
        let events = self.0.wait_until(deadline);
        self.1.set(self.0.now());
        events
    }
    fn observe(&mut self) -> Result<Observation, MachineError> {
        self.0.observe()
    }
    fn apply(&mut self, plan: &Plan) -> Vec<ApplyOutcome> {
        self.0.apply(plan)
    }
    fn finish(&mut self) -> Result<SelfUsage, MachineError> {
        self.0.finish()
    }
}

/// The service's loop is the run's: apps handed over by the inbox arrive when
/// taken, are numbered in that order, queue under batch like a workload's, and
/// the loop goes on with no app until it is stopped.
#[test]
fn serve_takes_apps_from_the_inbox_and_runs_until_stopped() {
    let clock = std::rc::Rc::new(std::cell::Cell::new(Duration::ZERO));
    let mut m = Clocked(Scripted::new(), clock.clone());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut inbox = Timed {
        now: clock,
        // a at 50 ms for 100 ms; b and c together at 400 ms (after a long idle gap).
        due: vec![(50, "a", 100), (400, "b", 200), (400, "c", 100)],
        stop: stop.clone(),
        stop_at: Duration::from_millis(1000),
    };
    let opts = RunOptions {
        epoch: Duration::from_millis(100),
        seed: None,
        started_unix: 0.0,
        stop: Some(stop),
    };
    let mut p = by_name("batch").unwrap();
    let mut events = Vec::new();
    let summary = serve(&mut m, p.as_mut(), "svc", &mut inbox, &opts, &mut events).unwrap();
    assert_eq!(
        lifetimes(&events),
        vec![(0, 0, 50, 150), (1, 0, 400, 600), (2, 0, 600, 700)]
    );
    assert!(summary.interrupted, "it ran until stopped");
    assert!(m.0.finished);
    let TraceEvent::Header(h) = &events[0] else {
        panic!("no header")
    };
    assert_eq!(h.workload.name, "svc");
    assert!(h.workload.apps.is_empty());
}
