//! [`LinuxMachine`]: the real backend behind the Manager's [`Machine`] trait
//! (docs/architecture.md, Machine backends; docs/safety.md).
//!
//! - **launch** (`launch.rs`): the command runs in its own process group with
//!   stdout/stderr in `<out_dir>/<app>-<rep>.out/.err` and `OMP_NUM_THREADS` set
//!   to the resolved thread count (always: for a program without OpenMP it is an
//!   unused variable, and an OpenMP program coloc did not recognise still gets
//!   the count the policy planned for). The initial placement, nice, slice and
//!   memory policy are journaled, then applied by the child before exec.
//! - **tracking** (`track.rs`): an instance is its main process, every
//!   descendant and all their threads, rescanned from /proc at a `poll`
//!   (50 ms: new threads are placed within half the default epoch) when the
//!   kernel's process connector reported a fork or exit in one of its
//!   processes (`proc_events.rs`), or every poll where the connector is not
//!   available; [`MachineEvent::ThreadsChanged`] when the thread set changes. Exits wake the loop at once through a pidfd
//!   per instance (`exit_wait.rs`), so app times do not depend on `poll`.
//! - **observing** (`sample.rs`): schedstat, stat and sched (status where sched is
//!   missing) of each thread,
//!   resident memory, hardware counters where the machine has them
//!   (`counters.rs`), and what the OpenMP runtime reports (`dop.rs`).
//! - **acting** (`actuate.rs`): affinity, nice and EEVDF slice per thread, only
//!   what differs from what coloc put in force; DoP through the shim's record.
//! - **safety** (`journal.rs`, `recover.rs`): every original is journaled and
//!   fsynced before the first change; threads are restored when their instance
//!   exits (descendants that outlive it) and at [`Machine::finish`], which also
//!   ends instances still running; [`recover_stale_journals`] restores what a
//!   crashed coloc left, and [`remove_stale_dop_records`] the DoP records it
//!   left in shared memory.
//! - **descendants** that outlive their app: when an app's main process exits,
//!   the processes it started that still run get their settings back and go on
//!   while the run lasts; at [`Machine::finish`] every one of them still alive
//!   (and any that left the app's process group) is ended, SIGTERM then SIGKILL
//!   after [`TERMINATE_GRACE`]: nothing coloc started outlives the run
//!   (docs/safety.md).
//!
//! New processes and threads are found in /proc (this kernel has no
//! `task/<tid>/children`, so children are found by their parent pid); the
//! process connector only says where to look.

mod actuate;
mod adopt;
mod app_cgroup;
mod counters;
mod dop;
mod exit_wait;
mod instance;
mod journal;
mod launch;
mod levers;
mod live_metric;
mod pages;
mod proc_events;
mod program_check;
mod recover;
mod sample;
mod slice;
mod sys;
mod tasks;
mod track;

use std::fs;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::cgroup::Cpusets;
use coloc_machine::{LaunchRequest, Launched, Machine, MachineError, MachineEvent};
use coloc_model::observation::Signals;
use coloc_model::topology::ObjKind;
use coloc_model::trace::{ApplyOutcome, SelfUsage};
use coloc_model::workload::caps::{launch_caps, JAVA_TOOL_OPTIONS};
use coloc_model::{CpuSet, Observation, Plan, Topology};
use nix::sys::resource::{getrusage, UsageWho};

pub use actuate::MAX_REAPPLY;
pub use adopt::{Adopt, AdoptError, Adopted};
pub use coloc_shim::OmpRuntime;
pub use dop::{check_program, MAX_PROGRAM};
pub use journal::{secure_dir, JournalError};
pub use launch::set_own_memory_policy;
pub use program_check::ProgramCheck;
pub use recover::{
    recover_stale_journals, remove_stale_dop_records, RecoveryError, RecoveryReport,
};
pub use slice::SLICE;
pub use tasks::{last_cpus, thread_allowed, thread_ticks};

use self::actuate::Wanted;
use self::counters::{HwCounters, HARDWARE_EVENTS};
use self::dop::{DopControl, DopLaunch};
use self::instance::{default_cpus, end_leftovers, terminate, Instance};
use self::journal::Journal;
use self::launch::{memory_policy, output_path, LaunchError, Spawn};
use self::proc_events::{ProcEvents, Touched};
use self::slice::Slice;
use self::tasks::{ProcRoot, ProcTable};
use self::track::Tracker;

/// How long instances still running at [`Machine::finish`] get between SIGTERM
/// and SIGKILL.
pub const TERMINATE_GRACE: Duration = Duration::from_secs(2);

/// Where the Linux backend keeps things and how often it looks.
#[derive(Debug, Clone)]
pub struct LinuxOptions {
    /// Apps' standard output and error: `<out_dir>/<app>-<rep>.out` and `.err`.
    pub out_dir: PathBuf,
    /// Journals of changed settings, `<journal_dir>/<coloc pid>.journal`.
    pub journal_dir: PathBuf,
    /// The procfs mount (`/proc`).
    pub proc_root: PathBuf,
    /// Interval of thread-set polling while waiting.
    pub poll: Duration,
    /// Where DoP records are created (`/dev/shm`, shared memory).
    pub shm_dir: PathBuf,
    /// Rescan an app's threads only after the kernel's process connector
    /// reported a fork or exit in it (`proc_events.rs`), where the connector
    /// is available; false rescans every app every poll.
    pub process_events: bool,
    /// Where the OpenMP shim is extracted for malleable apps; None: this
    /// user's cache directory. Root's daemon serves other users, whose
    /// programs must read it: it names a directory of root's every user can
    /// read.
    pub shim_dir: Option<PathBuf>,
    /// Place apps in cpuset cgroups of their own under `coloc.slice` of this
    /// hierarchy (`slice.rs`); None places them by affinity alone.
    pub cgroup_slice: Option<Cpusets>,
}

impl Default for LinuxOptions {
    /// Output and journal under the temporary directory (the CLI chooses its
    /// own: the run's output directory and `/run/coloc`), /proc, 10 ms,
    /// /dev/shm.
    fn default() -> Self {
        let tmp = std::env::temp_dir();
        Self {
            out_dir: tmp.join("coloc-out"),
            journal_dir: tmp.join("coloc-journal"),
            proc_root: PathBuf::from("/proc"),
            poll: Duration::from_millis(50),
            shm_dir: PathBuf::from("/dev/shm"),
            process_events: true,
            shim_dir: None,
            cgroup_slice: None,
        }
    }
}

/// The real machine.
#[derive(Debug)]
pub struct LinuxMachine {
    topology: Topology,
    opts: LinuxOptions,
    start: Instant,
    proc: ProcRoot,
    table: ProcTable,
    /// Fork and exit events; None where the connector is not available, and
    /// every instance is rescanned every poll.
    events: Option<ProcEvents>,
    journal: Journal,
    counters: HwCounters,
    schedstat: bool,
    /// How many threads' `schedstat` files sampling keeps open
    /// ([`sample::schedstat_budget`]).
    schedstat_files: usize,
    instances: Vec<Instance>,
    /// Processes of exited instances that were still running when their app
    /// exited (pid, start time), ended at [`Machine::finish`].
    leftovers: Vec<(u32, u64)>,
    /// This process's CPU time when the machine was made: the run's own usage
    /// is counted from there, not from coloc's start.
    cpu_at_start: Duration,
    finished: bool,
    /// The hierarchy of the cpuset controller, where the host has one: the
    /// CPUs an adopted app's cgroup allows it.
    cpusets: Option<Cpusets>,
    /// The apps' cgroups, when asked for (`LinuxOptions::cgroup_slice`).
    slice: Option<Slice>,
}

/// A failure of the machine itself while doing `what` (ends the run).
fn other(what: &str, e: impl Into<coloc_machine::BackendError>) -> MachineError {
    MachineError::Backend {
        what: what.to_string(),
        source: e.into(),
    }
}

/// Why one instance did not start (the run goes on without it).
#[derive(Debug, thiserror::Error)]
pub(crate) enum InstanceError {
    #[error("no command to run (a simulated model cannot run on Linux)")]
    NoCommand,
    #[error("creating {}", path.display())]
    Output {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{program}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Launch(LaunchError),
}

/// CPU time (user + system) this process has used so far, all threads.
fn own_cpu() -> Result<Duration, MachineError> {
    let usage = getrusage(UsageWho::RUSAGE_SELF).map_err(|e| other("getrusage", e))?;
    let tv =
        |t: nix::sys::time::TimeVal| Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000);
    Ok(tv(usage.user_time()) + tv(usage.system_time()))
}

impl LinuxMachine {
    /// A backend over `topology` (the CPUs coloc may use). Probes hardware
    /// counters once and logs which signals are available.
    pub fn new(topology: Topology, opts: LinuxOptions) -> Result<LinuxMachine, MachineError> {
        let proc = ProcRoot::new(&opts.proc_root);
        let me = std::process::id();
        let own = proc.process_stat(me).map_err(|e| {
            other(
                &format!("reading {}/{me}/stat", opts.proc_root.display()),
                e,
            )
        })?;
        let tid = nix::unistd::gettid().as_raw() as u32;
        let schedstat = proc.task_schedstat(me, tid).is_ok();
        let counters = HwCounters::probe(HARDWARE_EVENTS);
        match &counters {
            HwCounters::Available { .. } => tracing::info!("hardware counters available"),
            HwCounters::Unavailable { reason } => tracing::info!(
                "no hardware counters ({reason}); observing schedstat, switches and faults only"
            ),
        }
        let events = match opts.process_events.then(ProcEvents::open) {
            None => {
                tracing::info!("rescanning every instance's threads every poll, as asked");
                None
            }
            Some(Ok(e)) => Some(e),
            Some(Err(e)) => {
                tracing::info!(
                    "no process connector ({e}); rescanning every instance's threads every poll"
                );
                None
            }
        };
        let mut table = ProcTable::default();
        table
            .refresh(&proc)
            .map_err(|e| other(&format!("reading {}", opts.proc_root.display()), e))?;
        Ok(LinuxMachine {
            journal: Journal::new(&opts.journal_dir, me, own.starttime),
            topology,
            start: Instant::now(),
            proc,
            table,
            events,
            counters,
            schedstat,
            schedstat_files: sample::schedstat_budget(),
            instances: Vec::new(),
            leftovers: Vec::new(),
            cpu_at_start: own_cpu()?,
            finished: false,
            // The slice's hierarchy when one was asked for: the caller
            // detected it already, and it is the one the apps' cgroups are in.
            cpusets: match &opts.cgroup_slice {
                Some(sets) => Some(sets.clone()),
                None => Cpusets::detect(&opts.proc_root).ok(),
            },
            slice: opts.cgroup_slice.clone().map(Slice::new),
            opts,
        })
    }

    /// NUMA nodes (os indices) with a CPU in `cpus`; every node when empty.
    fn nodes_of(&self, cpus: &CpuSet) -> Vec<u32> {
        self.topology
            .objects_of(ObjKind::NumaNode)
            .filter(|(_, o)| cpus.is_empty() || !o.cpus.is_disjoint(cpus))
            .filter_map(|(_, o)| o.os_index)
            .collect()
    }

    /// One poll: finds new threads and processes and reaps exits.
    fn poll(&mut self) -> Result<Vec<MachineEvent>, MachineError> {
        for i in &self.instances {
            i.dop.heartbeat();
        }
        let touched = match &mut self.events {
            Some(events) => events.drain(),
            None => Touched::Everything,
        };
        let stale: Vec<bool> = self
            .instances
            .iter_mut()
            .map(|i| {
                std::mem::take(&mut i.rescan_due)
                    || touched.any_of(i.tracker.processes().map(|(pid, _)| pid))
            })
            .collect();
        if stale.contains(&true) {
            self.table
                .refresh(&self.proc)
                .map_err(|e| other(&format!("reading {}", self.opts.proc_root.display()), e))?;
        }
        let mut events = Vec::new();
        let mut k = 0;
        let mut stale = stale.into_iter();
        while k < self.instances.len() {
            let inst = &mut self.instances[k];
            let changed = if stale.next() == Some(true) {
                inst.rescan(&self.proc, &self.table, &mut self.journal)
                    .map_err(|e| other("tracking new threads", e))?
            } else {
                false
            };
            let exited = inst
                .try_exit(&self.proc)
                .map_err(|e| other(&format!("waiting for {} (pid {})", inst.id, inst.pid()), e))?;
            match exited {
                Some((status, usage)) => {
                    let mut inst = self.instances.remove(k);
                    let main = inst.pid();
                    // An adopted app's descendants are not coloc's to end.
                    if !inst.adopted() {
                        self.leftovers
                            .extend(inst.tracker.processes().filter(|(p, _)| *p != main));
                    }
                    let refused = self
                        .let_go(&mut inst)
                        .map_err(|e| other("restoring an exited instance", e))?;
                    for r in refused {
                        tracing::warn!(app = %inst.id, "could not restore: {r}");
                    }
                    let output = inst.output();
                    inst.dop.remove();
                    events.push(MachineEvent::Exited {
                        app: inst.id,
                        at: self.now(),
                        status,
                        output,
                        usage,
                    });
                }
                None => {
                    if changed {
                        events.push(MachineEvent::ThreadsChanged {
                            app: inst.id,
                            tids: inst.tracker.tids(),
                        });
                    }
                    k += 1;
                }
            }
        }
        Ok(events)
    }

    /// Restores everything coloc changed of `inst`, which leaves the machine:
    /// its processes back in their own cgroup first (the kernel resets
    /// affinities on a move), then its threads' settings. Returns what could
    /// not be put back.
    fn let_go(&mut self, inst: &mut Instance) -> Result<Vec<String>, JournalError> {
        let mut refused = match &self.slice {
            Some(slice) => slice.release(inst, &mut self.journal),
            None => Vec::new(),
        };
        refused.extend(inst.release_all(&self.proc, &mut self.journal)?);
        Ok(refused)
    }

    fn launch_instance(&mut self, req: LaunchRequest<'_>) -> Result<Launched, InstanceError> {
        let spec = req.spec;
        let argv = spec
            .command
            .clone()
            .filter(|a| !a.is_empty())
            .ok_or(InstanceError::NoCommand)?;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(&self.opts.out_dir)
            .map_err(|source| InstanceError::Output {
                path: self.opts.out_dir.clone(),
                source,
            })?;
        // New files only: a link planted under the predictable name is not
        // followed, an existing file not truncated.
        let file = |ext| {
            let path = output_path(&self.opts.out_dir, &spec.name, req.id.rep, ext);
            fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o644)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)
                .map(|f| (f, path.clone()))
                .map_err(|source| InstanceError::Output { path, source })
        };
        let (stdout, stdout_path) = file("out")?;
        let (stderr, _) = file("err")?;
        let placement = &req.plan.placement;
        let cpus = placement.cpus();
        let dop = dop::prepare(&DopLaunch {
            id: req.id,
            malleable: spec.malleable,
            argv0: &argv[0],
            env: &spec.env,
            dop: req.plan.dop.unwrap_or(req.threads),
            cpus: cpus.iter().collect(),
            shm_dir: &self.opts.shm_dir,
            shim_dir: self.opts.shim_dir.as_deref(),
            owner: None,
            // The app inherits coloc's affinity before its placement.
            own_cpus: sys::affinity(0).ok(),
            // Every app's program is checked: the run says what it holds
            // and which levers act (docs/signals.md, Runtimes and levers).
            runtime: Some(check_program(
                &argv[0],
                spec.env
                    .get("PATH")
                    .map(std::ffi::OsString::from)
                    .or_else(|| std::env::var_os("PATH"))
                    .as_deref(),
            )),
        });
        if let DopControl::NotManaged { reason, .. } = &dop.control {
            tracing::warn!(app = %req.id, name = %spec.name, "DoP is not managed: {reason}");
        }
        let mut env: Vec<_> = spec.env.iter().map(|(k, v)| (k.into(), v.into())).collect();
        env.push(("OMP_NUM_THREADS".into(), req.threads.to_string().into()));
        env.extend(dop.set_env);
        let mut levers = dop.levers;
        if spec.cap_threads {
            // The team the policy chose at launch: its DoP, else the
            // threads the app starts with (docs/workload-format.md).
            let team = req.plan.dop.unwrap_or(req.threads);
            let java = spec
                .env
                .get(JAVA_TOOL_OPTIONS)
                .cloned()
                .or_else(|| std::env::var(JAVA_TOOL_OPTIONS).ok());
            env.extend(
                launch_caps(team, java.as_deref())
                    .into_iter()
                    .map(|(k, v)| (k.into(), v.into())),
            );
            if let Some(l) = &mut levers {
                l.caps = Some(team.max(1));
            }
        }
        let started = launch::spawn(
            Spawn {
                argv: &argv,
                env,
                remove_env: dop.remove_env,
                stdout,
                stderr,
                want: Wanted {
                    affinity: default_cpus(placement),
                    nice: req.plan.sched.nice.map(i32::from),
                    slice_ns: req.plan.sched.slice_us.map(|us| u64::from(us) * 1000),
                },
                memory: memory_policy(req.plan.memory, &self.nodes_of(&cpus)),
            },
            &self.proc,
            &mut self.journal,
        );
        let started = match started {
            Ok(s) => s,
            Err(e) => {
                dop.control.remove();
                return Err(match e {
                    LaunchError::Spawn(source) => InstanceError::Spawn {
                        program: argv[0].clone(),
                        source,
                    },
                    e => InstanceError::Launch(e),
                });
            }
        };
        for r in &started.refused {
            tracing::warn!(app = %req.id, name = %spec.name, "at launch: {r}");
        }
        let main = started.main.task;
        let inst = Instance {
            base: started.main.base(),
            id: req.id,
            exit_fd: exit_wait::open(started.child.id()),
            child: Some(started.child),
            main,
            tracker: Tracker::new(main),
            settings: [(main, started.main)].into_iter().collect(),
            dop: dop.control,
            memory: req.plan.memory,
            memory_refused: None,
            pages: Default::default(),
            pending_refused: started.refused,
            live_metric: spec.metric.as_ref().and_then(|m| {
                let path = m.file.as_ref().map_or(stdout_path.clone(), PathBuf::from);
                live_metric::LiveMetric::new(path, &m.regex)
            }),
            output: match spec.metric.as_ref().and_then(|m| m.file.as_ref()) {
                Some(f) => PathBuf::from(f),
                None => stdout_path,
            },
            last_samples: Default::default(),
            rescan_due: true,
            allowed: None,
            slice: Default::default(),
        };
        let launched = Launched {
            pid: main.pid,
            argv,
            tids: inst.tracker.tids(),
            levers,
        };
        self.instances.push(inst);
        Ok(launched)
    }
}

impl Machine for LinuxMachine {
    fn kind(&self) -> String {
        "linux".into()
    }

    fn topology(&self) -> &Topology {
        &self.topology
    }

    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    fn launch(&mut self, req: LaunchRequest<'_>) -> Result<Launched, MachineError> {
        self.launch_instance(req).map_err(|e| MachineError::Launch {
            app: req.id,
            name: req.spec.name.clone(),
            source: Box::new(e),
        })
    }

    fn wait_until(&mut self, deadline: Duration) -> Result<Vec<MachineEvent>, MachineError> {
        loop {
            let events = self.poll()?;
            let now = self.now();
            if !events.is_empty() || now >= deadline {
                return Ok(events);
            }
            exit_wait::wait(
                self.instances.iter().filter_map(|i| i.exit_fd.as_ref()),
                self.opts.poll.min(deadline - now),
            );
        }
    }

    fn observe(&mut self) -> Result<Observation, MachineError> {
        let at = self.now();
        let proc = &self.proc;
        let counters = &mut self.counters;
        let mut budget = self.schedstat_files;
        let apps = self
            .instances
            .iter_mut()
            .map(|i| {
                i.dop.heartbeat();
                let pid = i.pid();
                let report = i.dop.sample();
                let mut sample = sample::sample_app(
                    proc,
                    i.id,
                    pid,
                    &i.tracker,
                    &mut i.last_samples,
                    counters,
                    None,
                    &mut budget,
                );
                if let Some(r) = report {
                    r.fill(&mut sample);
                }
                sample.metric = i.live_metric.as_mut().and_then(|m| m.poll());
                sample
            })
            .collect();
        let instances = &self.instances;
        self.counters
            .retain(|t| instances.iter().any(|i| i.tracker.thread(t.tid) == Some(t)));
        Ok(Observation {
            at,
            signals: Signals {
                hw_counters: self.counters.available(),
                schedstat: self.schedstat,
            },
            apps,
        })
    }

    fn apply(&mut self, plan: &Plan) -> Vec<ApplyOutcome> {
        let mut outcomes = Vec::new();
        for p in &plan.apps {
            let nodes = self.nodes_of(&p.placement.cpus());
            let Some(inst) = self.instances.iter_mut().find(|i| i.id == p.app) else {
                continue;
            };
            // The app's cgroup holds both the old and the new CPUs while its
            // threads move (`slice.rs`, Order).
            let mut refused = Vec::new();
            if let Some(slice) = &self.slice {
                slice.before(inst, p, &nodes, &mut refused);
            }
            let mut out = inst.apply(p, &self.proc, &mut self.journal, &nodes);
            if let Some(slice) = &mut self.slice {
                let proc_root = &self.opts.proc_root;
                slice.after(inst, p, &nodes, proc_root, &mut self.journal, &mut refused);
            }
            out.refused.extend(refused);
            outcomes.push(out);
        }
        outcomes
    }

    fn finish(&mut self) -> Result<SelfUsage, MachineError> {
        self.finished = true;
        terminate(&mut self.instances, TERMINATE_GRACE);
        let mut refused = Vec::new();
        let table_ok = self.table.refresh(&self.proc);
        for mut inst in std::mem::take(&mut self.instances) {
            if table_ok.is_ok() {
                if let Err(e) = inst.rescan(&self.proc, &self.table, &mut self.journal) {
                    refused.push(e.to_string());
                }
            }
            // What escaped the process group (a new session) is still tracked;
            // an adopted app and its descendants go on, their settings restored.
            if !inst.adopted() {
                self.leftovers.extend(inst.tracker.processes());
            }
            match self.let_go(&mut inst) {
                Ok(r) => refused.extend(r),
                Err(e) => refused.push(e.to_string()),
            }
            inst.dop.remove();
        }
        if let Some(slice) = &mut self.slice {
            refused.extend(slice.finish(&mut self.journal));
        }
        end_leftovers(
            &self.proc,
            std::mem::take(&mut self.leftovers),
            TERMINATE_GRACE,
        );
        if refused.is_empty() {
            self.journal
                .remove()
                .map_err(|e| other("removing the journal", e))?;
        } else {
            return Err(MachineError::Restore {
                failures: refused,
                kept: self.journal.path().display().to_string(),
            });
        }
        Ok(SelfUsage {
            cpu: own_cpu()?.saturating_sub(self.cpu_at_start),
            wall: self.now(),
        })
    }
}

impl Drop for LinuxMachine {
    /// A machine dropped without `finish` (a panic in the caller) still ends its
    /// instances and restores what it changed.
    fn drop(&mut self) {
        if !self.finished {
            if let Err(e) = self.finish() {
                tracing::error!("{e}");
            }
        }
    }
}
