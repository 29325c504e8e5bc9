//! The daemon's machine (docs/service.md, Inside): the Linux backend, with
//! apps that arrive over the socket adopted instead of forked.
//!
//! Problem: the Manager starts an app by asking the machine to launch it, and
//! learns of its end from the machine. A node service's apps are started by
//! their users (`coloc exec` forks the command and holds it until admitted) or
//! were running already (`coloc attach`).
//!
//! Approach: [`DaemonMachine::launch`] adopts the registered process
//! ([`LinuxMachine::adopt`]); the answer that lets an `exec` child run its
//! program is sent after the first apply, so it runs on its planned CPUs from
//! its first instruction. Every plan is narrowed to the CPUs the app allowed
//! itself (its affinity or cpuset at adoption): coloc never widens them. An
//! `exec` app's end is recorded with the status its client reports; a release
//! or a client that left before admission ends the app in the loop's view.
//! The managed apps are written to a state file at every change, so a daemon
//! killed with SIGKILL can be succeeded by one that re-adopts them.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use coloc_linux::machine::{Adopt, LinuxMachine};
use coloc_machine::{LaunchRequest, Launched, Machine, MachineError, MachineEvent};
use coloc_model::trace::{ApplyOutcome, ExitStatus, SelfUsage};
use coloc_model::{AppId, CpuSet, Observation, Placement, Plan, Topology};

use crate::protocol::Reply;
use crate::shared::{Kind, Shared};
use crate::state::{Saved, SavedApp};

/// How long an `exec` app's end waits for its client's report of the status
/// (a Slurm task's comes from slurmstepd once it has reaped the task).
const REPORT_WAIT: Duration = Duration::from_secs(2);

/// How often the loop looks at the socket's work while waiting.
pub const LATENCY: Duration = Duration::from_millis(20);

/// The Linux backend plus the daemon's registrations.
#[derive(Debug)]
pub struct DaemonMachine {
    inner: LinuxMachine,
    shared: Shared,
    /// Where the managed apps are saved for a successor.
    saved: PathBuf,
    /// Ends of `exec` apps waiting for their client's status report.
    held: Vec<(u32, Duration, Instant)>,
}

fn id(app: u32) -> AppId {
    AppId { app, rep: 0 }
}

impl DaemonMachine {
    pub fn new(inner: LinuxMachine, shared: Shared, saved: PathBuf) -> Self {
        let m = Self {
            inner,
            shared,
            saved,
            held: Vec::new(),
        };
        m.save();
        m
    }

    /// Writes the running apps to the state file (a failure is logged: it
    /// only costs a successor the re-adoption).
    fn save(&self) {
        let state = self.shared.lock();
        let apps = state
            .apps
            .values()
            .filter(|e| e.running)
            .filter_map(|e| {
                Some(SavedApp {
                    name: e.name.clone(),
                    pid: e.pid,
                    start: e.start?,
                    uid: e.uid,
                    class: e.class,
                    program: e.program.clone(),
                })
            })
            .collect();
        drop(state);
        if let Err(e) = (Saved { apps }).write(&self.saved) {
            tracing::warn!("{e}");
        }
    }

    /// Sends the answers of apps admitted and placed.
    fn answer_admitted(&mut self) {
        let mut state = self.shared.lock();
        for e in state.apps.values_mut().filter(|e| e.running) {
            if let Some(reply) = e.admitted.take() {
                if let Some(tx) = &e.reply {
                    tx.send(reply);
                }
            }
        }
    }

    /// Releases, cancellations and `exec` ends whose status is known, as
    /// events for the loop.
    fn own_events(&mut self) -> Result<Vec<MachineEvent>, MachineError> {
        let now = self.inner.now();
        let mut events = Vec::new();
        let (releases, cancelled) = {
            let mut state = self.shared.lock();
            let releases = std::mem::take(&mut state.releases);
            let cancelled: Vec<(u32, String)> = state
                .apps
                .iter()
                .filter(|(_, e)| e.taken && !e.running)
                .filter_map(|(a, e)| Some((*a, e.cancelled.clone()?)))
                .collect();
            for (a, _) in &cancelled {
                state.apps.remove(a);
            }
            (releases, cancelled)
        };
        for (app, why) in cancelled {
            events.push(MachineEvent::Exited {
                app: id(app),
                at: now,
                status: ExitStatus::FailedToStart(why),
                output: None,
                usage: None,
            });
        }
        for r in releases {
            let refused = self.inner.release(id(r.app))?;
            for f in refused.iter().flatten() {
                tracing::warn!(app = r.app, "could not restore on release: {f}");
            }
            let removed = self.shared.lock().apps.remove(&r.app);
            tracing::info!(app = r.app, "released");
            r.reply.send(Reply::Released { app: r.app });
            if refused.is_some() && removed.is_some() {
                events.push(MachineEvent::Exited {
                    app: id(r.app),
                    at: now,
                    status: ExitStatus::Unknown,
                    output: None,
                    usage: None,
                });
            }
        }
        let mut k = 0;
        while k < self.held.len() {
            let (app, at, since) = self.held[k];
            let status = {
                let state = self.shared.lock();
                let e = state.apps.get(&app);
                match e.and_then(|e| e.reported.clone()) {
                    Some(s) => Some(s),
                    None if e.is_none_or(|e| e.client_gone && e.kind != Kind::Task)
                        || since.elapsed() > REPORT_WAIT =>
                    {
                        Some(ExitStatus::Unknown)
                    }
                    None => None,
                }
            };
            match status {
                Some(status) => {
                    self.held.remove(k);
                    events.push(self.ended(app, at, status));
                }
                None => k += 1,
            }
        }
        if !events.is_empty() {
            self.save();
        }
        Ok(events)
    }

    /// The end of `app`, now known: it leaves the shared state.
    fn ended(&self, app: u32, at: Duration, status: ExitStatus) -> MachineEvent {
        if let Some(e) = self.shared.lock().apps.remove(&app) {
            tracing::info!(app, name = %e.name, pid = e.pid, "{status}");
        }
        MachineEvent::Exited {
            app: id(app),
            at,
            status,
            output: None,
            usage: None,
        }
    }
}

/// `p` narrowed to `allowed`: coloc never widens the CPUs an app allowed
/// itself. A set that would be empty is left to the app (unmanaged).
pub fn within(p: &Placement, allowed: &CpuSet) -> Placement {
    let narrow = |c: &CpuSet| {
        let n = c.intersection(allowed);
        (!n.is_empty()).then_some(n)
    };
    match p {
        Placement::Unmanaged => Placement::Unmanaged,
        Placement::Shared(c) => narrow(c).map_or(Placement::Unmanaged, Placement::Shared),
        Placement::PerThread { threads, rest } => {
            let Some(rest) = narrow(rest).or_else(|| narrow(&p.cpus())) else {
                return Placement::Unmanaged;
            };
            Placement::PerThread {
                threads: threads
                    .iter()
                    .map(|(t, c)| (*t, narrow(c).unwrap_or_else(|| rest.clone())))
                    .collect(),
                rest,
            }
        }
    }
}

impl Machine for DaemonMachine {
    fn kind(&self) -> String {
        self.inner.kind()
    }

    fn topology(&self) -> &Topology {
        self.inner.topology()
    }

    fn now(&self) -> Duration {
        self.inner.now()
    }

    fn launch(&mut self, req: LaunchRequest<'_>) -> Result<Launched, MachineError> {
        let fail = |why: String| MachineError::Launch {
            app: req.id,
            name: req.spec.name.clone(),
            source: why.into(),
        };
        let (
            pid,
            start,
            malleable,
            caps,
            held,
            in_place,
            program,
            cancelled,
            asked_by,
            runtime,
            kind,
        ) = {
            let mut state = self.shared.lock();
            let e = state
                .apps
                .get_mut(&req.id.app)
                .ok_or_else(|| fail("not registered with the daemon".into()))?;
            (
                e.pid,
                e.start,
                e.malleable && e.kind.held(),
                e.cap_threads && e.kind.held(),
                e.kind.held(),
                // A Slurm task stays in Slurm's cgroup (docs/slurm.md).
                e.kind == Kind::Task,
                e.program.clone(),
                e.cancelled.clone(),
                (e.uid != 0 && e.kind != Kind::Readopted).then_some(e.uid),
                e.check.as_mut().map(|c| c.found()),
                e.kind,
            )
        };
        if let Some(why) = cancelled {
            self.shared.lock().apps.remove(&req.id.app);
            return Err(fail(why));
        }
        let adopted = self.inner.adopt(Adopt {
            id: req.id,
            pid,
            start,
            malleable,
            program: &program,
            dop: req.plan.dop.unwrap_or(req.threads),
            cpus: req.plan.placement.cpus().iter().collect(),
            memory: req.plan.memory,
            held,
            cap_threads: caps,
            in_place,
            asked_by,
            runtime,
            own_threads: kind != Kind::Readopted,
        });
        let mut state = self.shared.lock();
        let Some(e) = state.apps.get_mut(&req.id.app) else {
            return Err(fail("released before it was admitted".into()));
        };
        let adopted = match adopted {
            Ok(a) => a,
            Err(err) => {
                let err = MachineError::Launch {
                    app: req.id,
                    name: req.spec.name.clone(),
                    source: Box::new(err),
                };
                if let Some(tx) = e.reply.take() {
                    tx.send(Reply::Error {
                        message: err.launch_reason().unwrap_or_default(),
                    });
                }
                state.apps.remove(&req.id.app);
                return Err(err);
            }
        };
        let mut notes = Vec::new();
        if let Some(why) = &adopted.dop_unmanaged {
            notes.push(format!("DoP is not managed: {why}"));
        } else if !e.kind.held() {
            notes.push(
                "DoP is not managed: the shim is loaded only into programs coloc exec starts"
                    .to_string(),
            );
        }
        e.start = Some(adopted.start);
        e.running = true;
        e.threads_now = adopted.launched.tids.len();
        e.allowed = Some(adopted.allowed.to_list());
        e.notes.extend(notes.clone());
        let str_env = |v: &std::ffi::OsString| v.to_string_lossy().into_owned();
        e.admitted = Some(match e.kind {
            Kind::Exec | Kind::Task => Reply::Admitted {
                app: req.id.app,
                set_env: adopted
                    .set_env
                    .iter()
                    .map(|(k, v)| (str_env(k), str_env(v)))
                    .collect(),
                remove_env: adopted.remove_env.clone(),
                threads: req.threads,
                memory: adopted.memory.clone(),
                notes,
                levers: adopted.launched.levers.clone(),
            },
            Kind::Attach | Kind::Readopted => Reply::Attached {
                app: req.id.app,
                notes,
            },
        });
        drop(state);
        self.save();
        Ok(adopted.launched)
    }

    fn wait_until(&mut self, deadline: Duration) -> Result<Vec<MachineEvent>, MachineError> {
        self.answer_admitted();
        let mut events = self.own_events()?;
        if !events.is_empty() {
            return Ok(events);
        }
        for event in self.inner.wait_until(deadline)? {
            match event {
                MachineEvent::Exited { app, at, .. } => {
                    let exec = self
                        .shared
                        .lock()
                        .apps
                        .get(&app.app)
                        .is_some_and(|e| e.kind.held());
                    if exec {
                        self.held.push((app.app, at, Instant::now()));
                    } else {
                        events.push(self.ended(app.app, at, ExitStatus::Unknown));
                    }
                }
                MachineEvent::ThreadsChanged { app, tids } => {
                    if let Some(e) = self.shared.lock().apps.get_mut(&app.app) {
                        e.threads_now = tids.len();
                    }
                    events.push(MachineEvent::ThreadsChanged { app, tids });
                }
            }
        }
        events.extend(self.own_events()?);
        Ok(events)
    }

    fn observe(&mut self) -> Result<Observation, MachineError> {
        self.inner.observe()
    }

    fn apply(&mut self, plan: &Plan) -> Vec<ApplyOutcome> {
        let mut plan = plan.clone();
        {
            let mut state = self.shared.lock();
            for p in &mut plan.apps {
                let Some(e) = state.apps.get_mut(&p.app.app) else {
                    continue;
                };
                // Read again every epoch: its cpuset may have shrunk.
                if let Some(allowed) = self.inner.allowed_cpus(p.app) {
                    p.placement = within(&p.placement, &allowed);
                    e.allowed = Some(allowed.to_list());
                }
                e.plan = Some(p.clone());
            }
        }
        let outcomes = self.inner.apply(&plan);
        {
            let mut state = self.shared.lock();
            for o in &outcomes {
                let Some(e) = state.apps.get_mut(&o.app.app) else {
                    continue;
                };
                let places_itself = self.inner.places_itself(o.app);
                if places_itself && !e.self_managed {
                    tracing::info!(
                        app = o.app.app,
                        name = %e.name,
                        "self-managed: it sets its own affinity; coloc leaves it to the app"
                    );
                }
                e.self_managed = places_itself;
                for r in &o.refused {
                    tracing::info!(app = o.app.app, name = %e.name, "{r}");
                    e.notes.push(r.clone());
                }
            }
        }
        self.answer_admitted();
        outcomes
    }

    fn finish(&mut self) -> Result<SelfUsage, MachineError> {
        let usage = self.inner.finish();
        // Every app was let go with its settings back: a successor has
        // nothing to re-adopt that it should not find by itself.
        if usage.is_ok() {
            if let Err(e) = (Saved::default()).write(&self.saved) {
                tracing::warn!("{e}");
            }
        }
        usage
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    /// A plan's CPUs beyond what the app allowed itself are dropped.
    #[test]
    fn plans_are_narrowed_to_the_allowed_cpus_never_widened() {
        let allowed = set("0-1");
        assert_eq!(
            within(&Placement::Shared(set("1-3")), &allowed),
            Placement::Shared(set("1"))
        );
        assert_eq!(
            within(&Placement::Shared(set("2-3")), &allowed),
            Placement::Unmanaged
        );
        let p = Placement::PerThread {
            threads: vec![(7, set("0")), (8, set("3"))],
            rest: set("2-3"),
        };
        let Placement::PerThread { threads, rest } = within(&p, &allowed) else {
            panic!("still per thread");
        };
        // rest ∩ {0,1} is empty: the rest falls back to all plan CPUs ∩ allowed = {0}.
        assert_eq!(rest, set("0"));
        assert_eq!(threads, vec![(7, set("0")), (8, set("0"))]);
    }
}
