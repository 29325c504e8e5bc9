//! The Manager loop (docs/architecture.md, The loop).
//!
//! Time is the machine's: wall time on Linux, simulated time in the simulator, so
//! this code never reads a clock except to measure how long the policy took.
//! Events that arrive together (two exits in one poll) are decided together: the
//! policy sees all of them in one View, and the trigger names the first.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use coloc_model::trace::{ExitStatus, Header, SelfUsage, TRACE_VERSION};
use coloc_model::workload::{check_epoch, EpochOutOfRange};
use coloc_model::{
    AppId, AppSpec, AppState, AppView, MemPolicy, Observation, Plan, TraceEvent, Trigger, View,
    Workload,
};
use coloc_policy::{invariants, Policy};
use regex::Regex;

use crate::conservation::{waste_of, Conservation, Episode, Findings, WasteSeen};
use crate::record::Recorder;
use coloc_machine::{LaunchRequest, Machine, MachineError, MachineEvent};

/// Default policy epoch (docs/architecture.md; NuPoCo and ReSense both decide at ~100 ms scale).
pub const DEFAULT_EPOCH: Duration = Duration::from_millis(100);

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub epoch: Duration,
    /// Seed of the run, recorded in the header (the simulator's randomness).
    pub seed: Option<u64>,
    /// Wall-clock start, seconds since the Unix epoch (for the header only).
    pub started_unix: f64,
    /// Set from a signal handler to stop early; settings are restored all the same.
    pub stop: Option<Arc<AtomicBool>>,
}

impl RunOptions {
    /// A run in simulated time: seeded, with no wall-clock start and nothing
    /// to interrupt it (the simulator, its benchmarks and tests).
    pub fn simulated(epoch: Duration, seed: u64) -> Self {
        Self {
            epoch,
            seed: Some(seed),
            started_unix: 0.0,
            stop: None,
        }
    }
}

/// Why a run ended with an error. Settings were restored in every case.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    #[error(transparent)]
    Machine(#[from] MachineError),
    #[error("policy {policy} returned an invalid plan: {violations}")]
    InvalidPlan { policy: String, violations: String },
    #[error("writing the trace: {0}")]
    Trace(#[from] std::io::Error),
    #[error(transparent)]
    Epoch(#[from] EpochOutOfRange),
}

/// What the run did, beyond the trace.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    pub instances: usize,
    pub failed: usize,
    /// Threads found off the CPUs coloc had put them on, summed over every
    /// apply (the apps moved them themselves).
    pub affinity_drift: u64,
    pub interrupted: bool,
    pub usage: SelfUsage,
    /// CPUs wasted for more than an epoch, per kind: idle while an app's
    /// threads waited ([`TraceEvent::IdleWhileWaiting`]), idle while an app ran
    /// below what it could use ([`TraceEvent::Underused`]), burnt without
    /// progress ([`TraceEvent::NoProgress`]) or beyond what a team's progress
    /// took at its own earlier rate ([`TraceEvent::Spinning`]).
    pub waste: WasteSeen,
    /// Observations made: fewer than the run's length over the epoch when the
    /// loop could not keep up.
    pub observations: usize,
}

/// Apps that arrive while the Manager runs rather than from a workload file:
/// the node service's (docs/service.md), which people start themselves.
pub trait Inbox {
    /// The apps that arrived since the last call, each arriving now. The i-th
    /// app ever returned becomes app i of the run ([`AppId::app`]), so the
    /// inbox knows the id of every app it hands over.
    fn take(&mut self) -> Vec<AppSpec>;

    /// How long the loop may wait for the machine before asking again.
    fn latency(&self) -> Duration;
}

/// Runs `workload` on `machine` under `policy`, recording every event.
pub fn run(
    machine: &mut dyn Machine,
    policy: &mut dyn Policy,
    workload: &Workload,
    opts: &RunOptions,
    rec: &mut dyn Recorder,
) -> Result<RunSummary, ManagerError> {
    drive(machine, policy, workload, None, opts, rec)
}

/// Runs the same loop as [`run`] as a service: apps arrive from `inbox`, and it
/// goes on with no app until `opts.stop` is set. `name` names the service's
/// workload in the trace header.
pub fn serve(
    machine: &mut dyn Machine,
    policy: &mut dyn Policy,
    name: &str,
    inbox: &mut dyn Inbox,
    opts: &RunOptions,
    rec: &mut dyn Recorder,
) -> Result<RunSummary, ManagerError> {
    let workload = Workload {
        name: name.to_string(),
        epoch: Some(opts.epoch),
        apps: Vec::new(),
    };
    drive(machine, policy, &workload, Some(inbox), opts, rec)
}

fn drive<'a>(
    machine: &'a mut dyn Machine,
    policy: &'a mut dyn Policy,
    workload: &'a Workload,
    inbox: Option<&'a mut dyn Inbox>,
    opts: &'a RunOptions,
    rec: &mut dyn Recorder,
) -> Result<RunSummary, ManagerError> {
    check_epoch(opts.epoch)?;
    let mut state = Loop::new(machine, policy, workload, inbox, opts);
    let result = state.main(rec);
    state.close_waste();
    // Restore whatever happens; a failed restore is reported after the run's own error.
    let usage = state.machine.finish();
    let end = TraceEvent::End {
        t: state.machine.now(),
        usage: usage.as_ref().copied().unwrap_or_default(),
    };
    let recorded = rec.record(&end);
    let interrupted = result?;
    recorded?;
    Ok(RunSummary {
        instances: state.instances,
        failed: state.failed,
        affinity_drift: state.affinity_drift,
        interrupted,
        usage: usage?,
        waste: state.waste,
        observations: state.observations,
    })
}

struct Loop<'a> {
    machine: &'a mut dyn Machine,
    policy: &'a mut dyn Policy,
    workload: &'a Workload,
    inbox: Option<&'a mut dyn Inbox>,
    /// The spec of every app that has a run to come or running: the
    /// workload's, then those the inbox handed over. An app's leaves with its
    /// last run, so a service that runs for months does not keep them all.
    specs: BTreeMap<u32, Arc<AppSpec>>,
    /// The number the inbox's next app gets.
    next_app: u32,
    opts: &'a RunOptions,
    /// Scheduled arrivals, earliest first.
    arrivals: Vec<(Duration, AppId)>,
    apps: Vec<AppView>,
    last: Option<Observation>,
    prev: Option<Observation>,
    instances: usize,
    failed: usize,
    affinity_drift: u64,
    conservation: Conservation,
    waste: WasteSeen,
    observations: usize,
}

impl<'a> Loop<'a> {
    fn new(
        machine: &'a mut dyn Machine,
        policy: &'a mut dyn Policy,
        workload: &'a Workload,
        inbox: Option<&'a mut dyn Inbox>,
        opts: &'a RunOptions,
    ) -> Self {
        let mut arrivals: Vec<(Duration, AppId)> = workload
            .apps
            .iter()
            .enumerate()
            .map(|(i, a)| {
                (
                    a.arrive_at,
                    AppId {
                        app: i as u32,
                        rep: 0,
                    },
                )
            })
            .collect();
        arrivals.sort();
        Self {
            machine,
            policy,
            workload,
            inbox,
            specs: (0..)
                .zip(&workload.apps)
                .map(|(i, a)| (i, Arc::new(a.clone())))
                .collect(),
            next_app: workload.apps.len() as u32,
            opts,
            arrivals,
            apps: Vec::new(),
            last: None,
            prev: None,
            instances: 0,
            failed: 0,
            affinity_drift: 0,
            conservation: Conservation::default(),
            waste: WasteSeen::default(),
            observations: 0,
        }
    }

    /// Returns whether the run was interrupted.
    fn main(&mut self, rec: &mut dyn Recorder) -> Result<bool, ManagerError> {
        rec.record(&TraceEvent::Header(Box::new(Header {
            version: TRACE_VERSION,
            coloc_version: env!("CARGO_PKG_VERSION").to_string(),
            policy: self.policy.name().to_string(),
            machine: self.machine.kind(),
            workload: self.workload.clone(),
            topology: self.machine.topology().clone(),
            epoch: self.opts.epoch,
            seed: self.opts.seed,
            started_unix: self.opts.started_unix,
        })))?;
        let start = self.machine.now();
        let mut next_epoch = start + self.opts.epoch;
        let mut trigger: Option<Trigger> = None;
        loop {
            if self
                .opts
                .stop
                .as_ref()
                .is_some_and(|s| s.load(Ordering::Relaxed))
            {
                return Ok(true);
            }
            let now = self.machine.now();
            self.take_inbox(now);
            while let Some(&(at, id)) = self.arrivals.first().filter(|(at, _)| *at <= now) {
                self.arrivals.remove(0);
                self.arrive(at, id, rec)?;
                trigger.get_or_insert(Trigger::Arrival(id));
            }
            if now >= next_epoch {
                // Into its event and back out, not cloned (docs/simulator.md,
                // Speed).
                let event = TraceEvent::Obs(Box::new(self.machine.observe()?));
                rec.record(&event)?;
                let TraceEvent::Obs(obs) = event else {
                    unreachable!("built as an observation event just above")
                };
                self.observations += 1;
                self.prev = self.last.replace(*obs);
                self.check_conservation(rec)?;
                trigger.get_or_insert(Trigger::Epoch);
                while next_epoch <= now {
                    next_epoch += self.opts.epoch;
                }
            }
            while let Some(t) = trigger.take() {
                trigger = self.decide_and_apply(t, rec)?;
            }
            if self.apps.is_empty() && self.arrivals.is_empty() && self.inbox.is_none() {
                return Ok(false);
            }
            let mut deadline = self
                .arrivals
                .first()
                .map_or(next_epoch, |(at, _)| (*at).min(next_epoch));
            if let Some(inbox) = &self.inbox {
                deadline = deadline.min(now + inbox.latency());
            }
            for event in self.machine.wait_until(deadline)? {
                let t = self.handle(event, rec)?;
                trigger.get_or_insert(t);
            }
        }
    }

    /// Schedules the apps the inbox has for now, numbered in the order given.
    fn take_inbox(&mut self, now: Duration) {
        let Some(inbox) = self.inbox.as_mut() else {
            return;
        };
        for spec in inbox.take() {
            let id = AppId {
                app: self.next_app,
                rep: 0,
            };
            self.next_app += 1;
            self.specs.insert(
                id.app,
                Arc::new(AppSpec {
                    arrive_at: now,
                    ..spec
                }),
            );
            let pos = self.arrivals.partition_point(|(t, _)| *t <= now);
            self.arrivals.insert(pos, (now, id));
        }
    }

    fn arrive(
        &mut self,
        at: Duration,
        id: AppId,
        rec: &mut dyn Recorder,
    ) -> Result<(), ManagerError> {
        let spec = Arc::clone(&self.specs[&id.app]);
        rec.record(&TraceEvent::Arrive {
            t: at,
            app: id,
            // The node service's apps are in no header: the trace names them.
            name: self.inbox.is_some().then(|| spec.name.clone()),
        })?;
        self.apps.push(AppView {
            id,
            threads_requested: spec.threads_on(self.machine.topology().cpus().len()),
            spec,
            state: AppState::Pending,
            arrived_at: at,
            started_at: None,
            threads: Vec::new(),
            current: None,
        });
        Ok(())
    }

    fn handle(
        &mut self,
        event: MachineEvent,
        rec: &mut dyn Recorder,
    ) -> Result<Trigger, ManagerError> {
        match event {
            MachineEvent::Exited {
                app,
                at,
                status,
                output,
                usage,
            } => {
                let metric = self.specs[&app.app]
                    .metric
                    .as_ref()
                    .zip(output.as_deref())
                    .and_then(|(m, text)| read_metric(&m.regex, text));
                if !status.success() {
                    self.failed += 1;
                }
                rec.record(&TraceEvent::Exit {
                    t: at,
                    app,
                    status,
                    metric,
                    usage,
                })?;
                self.apps.retain(|a| a.id != app);
                self.next_repetition(app, at);
                Ok(Trigger::Exit(app))
            }
            MachineEvent::ThreadsChanged { app, tids } => {
                rec.record(&TraceEvent::Threads {
                    t: self.machine.now(),
                    app,
                    tids: tids.clone(),
                })?;
                if let Some(a) = self.apps.iter_mut().find(|a| a.id == app) {
                    a.threads = tids;
                }
                Ok(Trigger::ThreadsChanged(app))
            }
        }
    }

    /// Records every app that the plans in force have let waste CPUs for more
    /// than an epoch (`conservation.rs`, checked for every policy). Each
    /// violation is logged when it starts and when it ends, not at every
    /// observation.
    fn check_conservation(&mut self, rec: &mut dyn Recorder) -> Result<(), ManagerError> {
        let (Some(prev), Some(last)) = (&self.prev, &self.last) else {
            return Ok(());
        };
        let topology = self.machine.topology();
        let found: Findings = self.conservation.check(topology, &self.apps, prev, last);
        self.waste.add(&found);
        for &(app, waste) in &found.started {
            let event = found
                .events
                .iter()
                .find(|e| waste_of(e) == Some((app, waste)));
            tracing::warn!(%app, "{waste} for more than an epoch: {}", describe(event));
        }
        log_ended(&found.ended);
        for e in &found.events {
            rec.record(e)?;
        }
        Ok(())
    }

    /// Ends the violations still open when the run ends.
    fn close_waste(&mut self) {
        let ended = self.conservation.close();
        log_ended(&ended);
        self.waste.add(&Findings {
            ended,
            ..Findings::default()
        });
    }

    /// ReSense's ts(BM, k): the next run of an app arrives when the last one
    /// exits; after its last run, its spec is dropped.
    fn next_repetition(&mut self, app: AppId, at: Duration) {
        if app.rep + 1 < self.specs[&app.app].repeat {
            let next = AppId {
                app: app.app,
                rep: app.rep + 1,
            };
            let pos = self.arrivals.partition_point(|(t, _)| *t <= at);
            self.arrivals.insert(pos, (at, next));
        } else {
            self.specs.remove(&app.app);
        }
    }

    /// Decides, starts what the plan admits and applies the plan to the running
    /// apps. Returns the trigger of a follow-up decision when apps were started:
    /// an arrival plan is made before the app has threads, so its main thread
    /// (and, in the simulator, its whole team) is placed by a second decision
    /// at once instead of at the next epoch (ReSense §2.3: threads are mapped
    /// when they appear).
    fn decide_and_apply(
        &mut self,
        trigger: Trigger,
        rec: &mut dyn Recorder,
    ) -> Result<Option<Trigger>, ManagerError> {
        let now = self.machine.now();
        let view = View {
            now,
            trigger,
            topology: self.machine.topology(),
            apps: &self.apps,
            last: self.last.as_ref(),
            prev: self.prev.as_ref(),
        };
        let t0 = Instant::now();
        let mut plan = self.policy.decide(&view);
        let decide = t0.elapsed();
        with_workload_settings(&mut plan, &self.apps);
        invariants::check(&view, &plan).map_err(|v| ManagerError::InvalidPlan {
            policy: self.policy.name().to_string(),
            violations: v
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        })?;
        // The plan goes into its event and back out, not cloned: this runs
        // at every decision of every simulated run (docs/simulator.md, Speed).
        let event = TraceEvent::Plan {
            t: now,
            trigger,
            plan,
            decide,
        };
        rec.record(&event)?;
        let TraceEvent::Plan { plan, .. } = event else {
            unreachable!("built as a plan event just above")
        };
        let started = self.launch_admitted(&plan, rec)?;
        let follow_up = started.first().map(|&id| Trigger::ThreadsChanged(id));
        let Plan {
            apps,
            reasons,
            verdicts,
            legacy_note,
        } = plan;
        let running: Plan = Plan {
            apps: apps
                .into_iter()
                .filter(|p| self.apps.iter().any(|a| a.id == p.app && a.is_running()))
                .collect(),
            reasons,
            verdicts,
            legacy_note,
        };
        if running.apps.is_empty() {
            return Ok(follow_up);
        }
        let outcomes = self.machine.apply(&running);
        self.affinity_drift += outcomes
            .iter()
            .map(|o| u64::from(o.affinity_drift))
            .sum::<u64>();
        rec.record(&TraceEvent::Applied {
            t: self.machine.now(),
            outcomes,
        })?;
        for p in running.apps {
            if let Some(a) = self.apps.iter_mut().find(|a| a.id == p.app) {
                a.current = Some(p);
            }
        }
        Ok(follow_up)
    }

    /// Starts every pending app the plan admits and returns those that started.
    /// A program that cannot start is recorded as a failed instance; the rest of
    /// the workload goes on.
    fn launch_admitted(
        &mut self,
        plan: &Plan,
        rec: &mut dyn Recorder,
    ) -> Result<Vec<AppId>, ManagerError> {
        let mut started = Vec::new();
        let admitted: Vec<AppId> = self
            .apps
            .iter()
            .filter(|a| a.state == AppState::Pending)
            .filter(|a| plan.for_app(a.id).is_some_and(|p| p.admit))
            .map(|a| a.id)
            .collect();
        for id in admitted {
            let Some(p) = plan.for_app(id) else { continue };
            let idx = self
                .apps
                .iter()
                .position(|a| a.id == id)
                .expect("admitted apps are in the view");
            let req = LaunchRequest {
                id,
                spec: &self.apps[idx].spec,
                threads: self.apps[idx].threads_requested,
                plan: p,
            };
            self.instances += 1;
            match self.machine.launch(req) {
                Ok(launched) => {
                    let t = self.machine.now();
                    rec.record(&TraceEvent::Start {
                        t,
                        app: id,
                        pid: launched.pid,
                        threads_requested: self.apps[idx].threads_requested,
                        argv: launched.argv,
                        levers: launched.levers,
                    })?;
                    let a = &mut self.apps[idx];
                    a.state = AppState::Running;
                    a.started_at = Some(t);
                    a.threads = launched.tids;
                    started.push(id);
                }
                Err(e @ MachineError::Launch { .. }) => {
                    let reason = e.launch_reason().unwrap_or_default();
                    tracing::error!(app = %id, name = %self.apps[idx].spec.name, "{reason}");
                    self.failed += 1;
                    let t = self.machine.now();
                    rec.record(&TraceEvent::Exit {
                        t,
                        app: id,
                        status: ExitStatus::FailedToStart(reason),
                        metric: None,
                        usage: None,
                    })?;
                    self.apps.remove(idx);
                    self.next_repetition(id, t);
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(started)
    }
}

/// Logs violations that ended, with how long each lasted.
fn log_ended(ended: &[Episode]) {
    for e in ended {
        let secs = e.until.saturating_sub(e.since).as_secs_f64();
        tracing::info!(app = %e.app, "{} ended after {secs:.2} s", e.waste);
    }
}

/// What a waste event found, for the log.
fn describe(event: Option<&TraceEvent>) -> String {
    match event {
        Some(TraceEvent::IdleWhileWaiting { idle, waiting, .. }) => {
            format!("CPUs {idle} idle, {} thread(s) waiting", waiting.len())
        }
        Some(TraceEvent::Underused { idle, short, .. }) => format!("CPUs {idle} idle, {short}"),
        Some(TraceEvent::NoProgress { cpu, .. }) => {
            format!("{:.2} CPU-s over the last interval", cpu.as_secs_f64())
        }
        Some(TraceEvent::Spinning { cpu, useful, .. }) => format!(
            "{:.2} CPU-s over the last interval, {:.2} of them for its progress",
            cpu.as_secs_f64(),
            useful.as_secs_f64()
        ),
        _ => String::new(),
    }
}

/// Carries each app's `sched` and `memory` from the workload file into the
/// plan wherever the policy left them at their defaults (no nice, no slice,
/// `MemPolicy::Default`): a policy that decides one of them keeps its
/// decision, and the workload's settings hold under every other policy,
/// `native` included (docs/workload-format.md). Field by field: a policy
/// that sets only the nice still gets the workload's slice.
pub fn with_workload_settings(plan: &mut Plan, apps: &[AppView]) {
    for p in &mut plan.apps {
        let Some(spec) = apps.iter().find(|a| a.id == p.app).map(|a| &a.spec) else {
            continue;
        };
        if let Some(s) = spec.sched {
            p.sched.nice = p.sched.nice.or(s.nice);
            p.sched.slice_us = p.sched.slice_us.or(s.slice_us);
        }
        if let (MemPolicy::Default, Some(m)) = (p.memory, spec.memory) {
            p.memory = m;
        }
    }
}

/// The app's own metric: the first capture group of the regex's last match.
fn read_metric(regex: &str, text: &str) -> Option<f64> {
    let re = Regex::new(regex).ok()?;
    re.captures_iter(text)
        .last()
        .and_then(|c| c.get(1))
        .and_then(|m| m.as_str().trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use coloc_model::testutils::app_spec;
    use coloc_model::{AppPlan, SchedSettings};

    use super::*;

    fn view(app: u32, sched: Option<SchedSettings>, memory: Option<MemPolicy>) -> AppView {
        let mut spec = app_spec("a", 1);
        spec.sched = sched;
        spec.memory = memory;
        AppView {
            id: AppId { app, rep: 0 },
            spec: Arc::new(spec),
            state: AppState::Pending,
            arrived_at: Duration::ZERO,
            started_at: None,
            threads_requested: 1,
            threads: Vec::new(),
            current: None,
        }
    }

    /// The workload's `sched` and `memory` were parsed and then dropped: no
    /// policy carried them into the plan.
    #[test]
    fn workload_settings_reach_a_plan_that_leaves_them_at_defaults() {
        let apps = [view(
            0,
            Some(SchedSettings {
                nice: Some(10),
                slice_us: Some(20_000),
            }),
            Some(MemPolicy::Interleave),
        )];
        let mut plan = Plan {
            apps: vec![AppPlan::native(apps[0].id)],
            ..Plan::default()
        };
        with_workload_settings(&mut plan, &apps);
        let p = &plan.apps[0];
        assert_eq!(p.sched.nice, Some(10));
        assert_eq!(p.sched.slice_us, Some(20_000));
        assert_eq!(p.memory, MemPolicy::Interleave);
    }

    /// What a policy decides itself stays; only what it left is filled in.
    #[test]
    fn a_policys_own_settings_win_field_by_field() {
        let apps = [view(
            0,
            Some(SchedSettings {
                nice: Some(10),
                slice_us: Some(20_000),
            }),
            Some(MemPolicy::Interleave),
        )];
        let mut plan = Plan {
            apps: vec![AppPlan {
                memory: MemPolicy::Local,
                sched: SchedSettings {
                    nice: Some(-5),
                    slice_us: None,
                },
                ..AppPlan::native(apps[0].id)
            }],
            ..Plan::default()
        };
        with_workload_settings(&mut plan, &apps);
        let p = &plan.apps[0];
        assert_eq!(p.sched.nice, Some(-5));
        assert_eq!(p.sched.slice_us, Some(20_000));
        assert_eq!(p.memory, MemPolicy::Local);
    }

    #[test]
    fn apps_without_settings_are_left_alone() {
        let apps = [view(0, None, None)];
        let mut plan = Plan {
            apps: vec![AppPlan::native(apps[0].id)],
            ..Plan::default()
        };
        let before = plan.clone();
        with_workload_settings(&mut plan, &apps);
        assert_eq!(plan, before);
    }
}
