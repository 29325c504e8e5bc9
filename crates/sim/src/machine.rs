//! [`SimMachine`]: the simulator behind the Manager's [`Machine`] trait
//! (docs/architecture.md, The loop), so the Manager and every policy run unchanged in
//! simulated time.
//!
//! Apps come from `spec.model` (a library model, or one registered with
//! [`SimMachine::with_models`]); they exit with status 0 and print
//! `coloc-metric: <throughput> units` (10^9 instructions per second of their run),
//! which a workload's metric regex can read; apps whose workload entry has a
//! metric also report it live, at every observation (their rate since the
//! last one), as a service prints throughput periodically. Observations carry the fields Linux
//! gives (run and wait time, CPU, switches, migrations), hardware counters
//! from the model, flagged `hw_counters` and `schedstat`, and for OpenMP models
//! what the DoP channel reports ([`crate::engine::SimApp::omp`]).

use std::sync::Arc;
use std::time::Duration;

use coloc_machine::{LaunchRequest, Launched, Machine, MachineError, MachineEvent};
use coloc_model::observation::{Counters, Signals};
use coloc_model::trace::{ApplyOutcome, ExitStatus, SelfUsage};
use coloc_model::{AppSample, MetricSample, Observation, Plan, ThreadSample, Topology};

use crate::engine::{AppLaunch, Engine, EngineEvent};
use crate::model::{models, AppModel};
use crate::platform::Platform;

/// The simulated backend.
#[derive(Debug)]
pub struct SimMachine {
    engine: Engine,
    models: Vec<Arc<AppModel>>,
    /// Apps with a metric, and what their last live report covered.
    live: Vec<LiveReport>,
}

/// A model app that reports its metric as it runs, as a service prints
/// throughput periodically: at each observation, its rate since the last one.
#[derive(Clone, Copy, Debug)]
struct LiveReport {
    app: coloc_model::AppId,
    higher_is_better: bool,
    at_ns: u64,
    instructions: f64,
    lines: u64,
}

impl SimMachine {
    /// A machine of `platform` whose randomness (the balancer's) comes from `seed`.
    pub fn new(platform: Platform, seed: u64) -> Self {
        Self {
            engine: Engine::new(platform, seed),
            models: models().into_iter().map(Arc::new).collect(),
            live: Vec::new(),
        }
    }

    /// Adds models (replacing library models of the same name).
    pub fn with_models(mut self, extra: impl IntoIterator<Item = AppModel>) -> Self {
        for m in extra {
            self.models.retain(|k| k.name != m.name);
            self.models.push(Arc::new(m));
        }
        self
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    fn known(&self) -> String {
        self.models
            .iter()
            .map(|m| m.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl LiveReport {
    /// The app's throughput since the last report (10^9 instructions per
    /// second, the unit of its exit metric), or its inverse for a
    /// lower-is-better metric (seconds per 10^9 instructions: the mean
    /// latency of a unit of work); None until simulated time has passed.
    fn report(&mut self, app: &crate::engine::SimApp, now_ns: u64) -> Option<MetricSample> {
        let instructions: f64 = app.threads.iter().map(|t| t.stats.instructions).sum();
        let dt = now_ns.checked_sub(self.at_ns).filter(|&d| d > 0)?;
        let rate = (instructions - self.instructions).max(0.0) / dt as f64;
        self.at_ns = now_ns;
        self.instructions = instructions;
        let value = if self.higher_is_better {
            rate
        } else if rate > 0.0 {
            1.0 / rate
        } else {
            return None;
        };
        self.lines += 1;
        Some(MetricSample {
            value,
            lines: self.lines,
        })
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Why the simulator cannot start an app.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("the simulator runs models, not programs: the app has `command = {argv:?}` but no `model` (known models: {known})")]
    NotAModel { argv: Vec<String>, known: String },
    #[error("no `model` given (known models: {known})")]
    NoModel { known: String },
    #[error("unknown model `{name}` (known models: {known})")]
    UnknownModel { name: String, known: String },
}

impl Machine for SimMachine {
    fn kind(&self) -> String {
        format!("sim:{}", self.engine.platform().name)
    }

    fn topology(&self) -> &Topology {
        &self.engine.platform().topology
    }

    fn now(&self) -> Duration {
        Duration::from_nanos(self.engine.now_ns())
    }

    fn launch(&mut self, req: LaunchRequest<'_>) -> Result<Launched, MachineError> {
        let fail = |e: LaunchError| MachineError::Launch {
            app: req.id,
            name: req.spec.name.clone(),
            source: Box::new(e),
        };
        let name = match (&req.spec.model, &req.spec.command) {
            (Some(m), _) => m,
            (None, Some(argv)) => {
                return Err(fail(LaunchError::NotAModel {
                    argv: argv.clone(),
                    known: self.known(),
                }))
            }
            (None, None) => {
                return Err(fail(LaunchError::NoModel {
                    known: self.known(),
                }))
            }
        };
        let model = self
            .models
            .iter()
            .find(|m| &m.name == name)
            .cloned()
            .ok_or_else(|| {
                fail(LaunchError::UnknownModel {
                    name: name.clone(),
                    known: self.known(),
                })
            })?;
        let malleable = req.spec.malleable && model.openmp;
        if let Some(m) = &req.spec.metric {
            self.live.retain(|l| l.app != req.id);
            self.live.push(LiveReport {
                app: req.id,
                higher_is_better: m.higher_is_better,
                at_ns: self.engine.now_ns(),
                instructions: 0.0,
                lines: 0,
            });
        }
        let (pid, _) = self.engine.launch(AppLaunch {
            id: req.id,
            threads: req.plan.dop.filter(|_| malleable).unwrap_or(req.threads),
            model,
            placement: req.plan.placement.clone(),
            memory: req.plan.memory,
            sched: req.plan.sched,
            malleable,
        });
        let tids = self
            .engine
            .apps()
            .iter()
            .find(|a| a.id == req.id)
            .map(|a| a.threads.iter().map(|t| t.tid).collect())
            .unwrap_or_default();
        Ok(Launched {
            pid,
            argv: vec![format!("model:{name}")],
            tids,
            levers: None,
        })
    }

    fn wait_until(&mut self, deadline: Duration) -> Result<Vec<MachineEvent>, MachineError> {
        Ok(self
            .engine
            .advance_until(ns(deadline))
            .into_iter()
            .map(|e| match e {
                EngineEvent::Exited {
                    app,
                    at_ns,
                    throughput,
                    usage,
                } => MachineEvent::Exited {
                    app,
                    at: Duration::from_nanos(at_ns),
                    status: ExitStatus::Code(0),
                    output: Some(format!("coloc-metric: {throughput:.6} units\n")),
                    usage: Some(usage),
                },
                EngineEvent::ThreadsChanged { app, tids } => {
                    MachineEvent::ThreadsChanged { app, tids }
                }
            })
            .collect())
    }

    fn observe(&mut self) -> Result<Observation, MachineError> {
        let e = &self.engine;
        let now_ns = e.now_ns();
        self.live.retain(|l| e.apps().iter().any(|a| a.id == l.app));
        let mut live = std::mem::take(&mut self.live);
        let apps = e
            .apps()
            .iter()
            .map(|a| {
                let steps = a.omp_steps();
                let thread_steps = |k: usize| steps.as_ref().and_then(|s| s.1.get(k).copied());
                AppSample {
                    app: a.id,
                    pid: a.pid,
                    rss_bytes: a.rss_bytes(),
                    omp: a.omp(),
                    omp_steps: steps.as_ref().map(|s| s.0),
                    metric: live
                        .iter_mut()
                        .find(|l| l.app == a.id)
                        .and_then(|l| l.report(a, now_ns)),
                    threads: a
                        .threads
                        .iter()
                        .enumerate()
                        .map(|(k, t)| {
                            let s = &t.stats;
                            ThreadSample {
                                pid: a.pid,
                                tid: t.tid,
                                cpu: Some(e.cpu_of(t)),
                                run_ns: (s.run_s * 1e9) as u64,
                                wait_ns: (s.wait_s * 1e9) as u64,
                                voluntary_switches: s.voluntary as u64,
                                involuntary_switches: s.involuntary as u64,
                                migrations: Some(s.migrations),
                                minor_faults: 0,
                                major_faults: 0,
                                counters: Some(Counters {
                                    cycles: Some(s.cycles as u64),
                                    instructions: Some(s.instructions as u64),
                                    llc_references: Some(s.llc_refs as u64),
                                    llc_misses: Some(s.llc_misses as u64),
                                }),
                                omp_steps: thread_steps(k),
                            }
                        })
                        .collect(),
                }
            })
            .collect();
        self.live = live;
        Ok(Observation {
            at: self.now(),
            signals: Signals {
                hw_counters: true,
                schedstat: true,
            },
            apps,
        })
    }

    fn apply(&mut self, plan: &Plan) -> Vec<ApplyOutcome> {
        let running: Vec<_> = plan
            .apps
            .iter()
            .filter(|p| self.engine.apps().iter().any(|a| a.id == p.app))
            .collect();
        running
            .into_iter()
            .map(|p| {
                let mut out = ApplyOutcome {
                    app: p.app,
                    threads_set: self.engine.set_placement(p.app, p.placement.clone()),
                    ..ApplyOutcome::default()
                };
                self.engine.set_memory(p.app, p.memory);
                self.engine.set_sched(p.app, p.sched);
                if let Some(dop) = p.dop {
                    if let Err(reason) = self.engine.set_dop(p.app, dop) {
                        out.refused.push(reason.to_string());
                    }
                }
                out
            })
            .collect()
    }

    /// Nothing to restore; the simulator's own CPU time is reported as zero so
    /// that traces stay a pure function of the inputs and the seed.
    fn finish(&mut self) -> Result<SelfUsage, MachineError> {
        Ok(SelfUsage {
            cpu: Duration::ZERO,
            wall: self.now(),
        })
    }
}
