//! Adopting processes coloc did not start, and letting them go again
//! (docs/service.md).
//!
//! Problem: the node service manages apps people start themselves (`coloc
//! exec`, `coloc attach`), not only the ones it forks from a workload file.
//! Such a process is not coloc's child: coloc may not wait for it, signal it
//! or end it, and its exit status is not coloc's to read.
//!
//! Approach: an adopted process becomes an [`Instance`] without a child
//! handle. It is tracked, observed and acted on exactly like a launched one
//! (same journal: every original is journaled and fsynced before the first
//! change, docs/safety.md); its end is seen in /proc (gone, a zombie or its
//! pid reused, by start time) and recorded with an unknown status; at
//! `finish`, or when released, its settings are put back and it goes on
//! running, with its descendants.
//!
//! Each thread it has when adopted keeps its own settings as its originals
//! (threads an app bound itself, `OMP_PROC_BIND` or MPI ranks, get their own
//! binding back, not the process's): they are all known before the first
//! plan, so none is taken for one that inherited coloc's settings. A process
//! is adopted only while it is the one the request named (its start time)
//! and runs as the user who asked, and never when its tree and a managed
//! one's share a process (two instances would fight over its threads).

use std::ffi::OsString;
use std::path::PathBuf;

use coloc_machine::{Launched, MachineError};
use coloc_model::{AppId, CpuSet, MemPolicy};

use super::actuate::{Base, TaskSettings};
use super::app_cgroup::InSlice;
use super::dop::{self, DopControl, DopLaunch};
use super::tasks::TaskId;
use super::track::Tracker;
use super::{sys, Instance, LinuxMachine};

/// A process to adopt.
#[derive(Debug, Clone)]
pub struct Adopt<'a> {
    pub id: AppId,
    pub pid: u32,
    /// Its start time (field 22 of `/proc/<pid>/stat`) as the caller saw it: a
    /// pid reused since is refused. None takes whatever process has the pid now.
    pub start: Option<u64>,
    /// Set up the shim's DoP record for it (only of use to a process that has
    /// not exec'd its program yet: the shim is preloaded at exec).
    pub malleable: bool,
    /// The program it runs or will run (the shim checks its OpenMP runtime).
    pub program: &'a str,
    /// The DoP and CPUs the record starts with.
    pub dop: u32,
    pub cpus: Vec<u32>,
    /// The memory policy of its first plan. Only a process that has not
    /// exec'd its program yet can take it (`set_mempolicy` acts on the
    /// calling thread, and survives exec): it is handed back in
    /// [`Adopted::memory`] for the process to set.
    pub memory: MemPolicy,
    /// It has not exec'd its program yet (`coloc exec`'s held child).
    pub held: bool,
    /// A held process's threaded runtimes get `dop` through their variables
    /// (`cap_threads`; `JAVA_TOOL_OPTIONS` holds only the cap, which the
    /// process adds to its own options).
    pub cap_threads: bool,
    /// Never move it out of its cgroup: a batch system's task, which the
    /// batch system tracks and confines there (Slurm, docs/slurm.md). With
    /// `cgroup_slice` it is placed by affinity only.
    pub in_place: bool,
    /// The user who asked, when not root: the process must still run as
    /// that user (it may have exec'd a set-user-ID program since).
    pub asked_by: Option<u32>,
    /// What the program check found when the request came
    /// ([`super::check_program`]); None: checked here, as coloc's user.
    pub runtime: Option<super::ProgramCheck>,
    /// Each thread it has now keeps its own settings as its originals (the
    /// module doc). False for a process a killed coloc managed: a thread it
    /// pinned and had not journaled yet still holds its pinning, so threads
    /// unlike the main thread are taken as carrying that coloc's settings
    /// and get the main thread's originals back (docs/service.md, Restart).
    pub own_threads: bool,
}

/// An adopted process.
#[derive(Debug, Clone)]
pub struct Adopted {
    pub launched: Launched,
    /// Its start time (what tells it from a later process with its pid).
    pub start: u64,
    /// The environment a process about to exec its program needs for its DoP
    /// to be managed (the shim's preload and record); empty otherwise.
    pub set_env: Vec<(OsString, OsString)>,
    /// Variables to remove from that environment (OpenMP's own binding).
    pub remove_env: Vec<String>,
    /// Why its DoP is not managed, when it was asked to be and is not.
    pub dop_unmanaged: Option<String>,
    /// The memory policy and nodes a held process sets itself before it
    /// execs its program ([`super::set_own_memory_policy`]); None when the
    /// plan leaves the policy as it is, or the process runs already.
    pub memory: Option<(MemPolicy, Vec<u32>)>,
    /// The CPUs it may run on now (its affinity, within its cpuset): coloc
    /// places it inside these and never widens them.
    pub allowed: CpuSet,
}

/// Why a process could not be adopted.
#[derive(Debug, thiserror::Error)]
pub enum AdoptError {
    #[error("no process {pid} ({path})")]
    Gone {
        pid: u32,
        path: PathBuf,
        #[source]
        source: procfs::ProcError,
    },
    #[error("process {pid} started at tick {found}, not {expected}: its pid was reused")]
    Reused { pid: u32, expected: u64, found: u64 },
    #[error("process {pid} is managed already (as app {app})")]
    Managed { pid: u32, app: AppId },
    #[error("process {pid} runs as uid {now} now, not as uid {asked} who asked")]
    Owner { pid: u32, asked: u32, now: u32 },
    #[error("process {pid} shares process {shared} with app {app}, which coloc manages already")]
    Overlaps { pid: u32, shared: u32, app: AppId },
    #[error("reading the processes of {pid}")]
    Table {
        pid: u32,
        #[source]
        source: std::io::Error,
    },
    #[error("reading the CPUs process {pid} may use")]
    Affinity {
        pid: u32,
        #[source]
        source: nix::errno::Errno,
    },
}

impl LinuxMachine {
    /// Takes over an existing process tree as instance `a.id`. Nothing is
    /// changed yet: the next [`coloc_machine::Machine::apply`] journals and
    /// changes its threads' settings like those of any instance.
    pub fn adopt(&mut self, a: Adopt<'_>) -> Result<Adopted, AdoptError> {
        let pid = a.pid;
        if let Some(i) = self.instances.iter().find(|i| i.pid() == pid) {
            return Err(AdoptError::Managed { pid, app: i.id });
        }
        let stat = self
            .proc
            .process_stat(pid)
            .map_err(|source| AdoptError::Gone {
                pid,
                path: self.opts.proc_root.join(pid.to_string()),
                source,
            })?;
        if let Some(expected) = a.start.filter(|s| *s != stat.starttime) {
            return Err(AdoptError::Reused {
                pid,
                expected,
                found: stat.starttime,
            });
        }
        let euid = self.proc.task_status(pid, pid).ok().map(|s| s.euid);
        if let (Some(asked), Some(now)) = (a.asked_by, euid) {
            if asked != now {
                return Err(AdoptError::Owner { pid, asked, now });
            }
        }
        let main = TaskId {
            pid,
            tid: pid,
            start: stat.starttime,
        };
        let mut tracker = self.tree_of(main)?;
        if !a.own_threads {
            tracker = Tracker::new(main);
        }
        let affinity = sys::affinity(pid).map_err(|source| AdoptError::Affinity { pid, source })?;
        // The affinity is within the cpuset already; the cpuset is read too
        // in case it changed since the affinity was last set.
        let allowed = match self.cpuset_cpus(pid) {
            Some(cpus) if !affinity.intersection(&cpus).is_empty() => affinity.intersection(&cpus),
            _ => affinity,
        };
        let env = Default::default();
        // The shim pins threads to the record's CPUs: never beyond what the
        // app allowed itself.
        let cpus: Vec<u32> = a
            .cpus
            .into_iter()
            .filter(|c| allowed.contains(*c))
            .collect();
        let nodes = self.nodes_of(&cpus.iter().copied().collect());
        // A user's app gets the DoP record to itself (root's daemon serves
        // every user).
        let owner = euid.filter(|uid| *uid != nix::unistd::geteuid().as_raw());
        let dop = dop::prepare(&DopLaunch {
            id: a.id,
            malleable: a.malleable,
            argv0: a.program,
            env: &env,
            dop: a.dop,
            cpus: if cpus.is_empty() {
                allowed.iter().collect()
            } else {
                cpus
            },
            shm_dir: &self.opts.shm_dir,
            shim_dir: self.opts.shim_dir.as_deref(),
            owner,
            own_cpus: super::sys::affinity(pid).ok(),
            runtime: a.runtime,
        });
        let dop_unmanaged = match &dop.control {
            DopControl::NotManaged { reason, .. } => Some(reason.clone()),
            _ => None,
        };
        let inst = Instance {
            id: a.id,
            child: None,
            main,
            exit_fd: super::exit_wait::open(pid),
            // Every thread it has now is its own: nothing is journaled until
            // a plan changes it, and then its own value is.
            settings: tracker
                .threads()
                .map(|t| (*t, TaskSettings::new(*t)))
                .collect(),
            tracker,
            base: Base::default(),
            dop: dop.control,
            memory: if a.held { a.memory } else { MemPolicy::Default },
            memory_refused: None,
            pending_refused: Vec::new(),
            output: PathBuf::new(),
            last_samples: Default::default(),
            // Its output goes where its owner sent it, not to a file coloc
            // reads: no live metric (atom falls back to progress or CPU time).
            live_metric: None,
            pages: Default::default(),
            rescan_due: true,
            allowed: Some(allowed.clone()),
            slice: if a.in_place {
                InSlice::Refused
            } else {
                InSlice::Out
            },
        };
        let mut launched = Launched {
            pid,
            argv: vec![a.program.to_string()],
            tids: inst.tracker.tids(),
            levers: dop.levers,
        };
        let mut set_env = dop.set_env;
        if a.cap_threads && a.held {
            set_env.extend(
                coloc_model::workload::caps::launch_caps(a.dop, None)
                    .into_iter()
                    .map(|(k, v)| (k.into(), v.into())),
            );
            if let Some(l) = &mut launched.levers {
                l.caps = Some(a.dop.max(1));
            }
        }
        self.instances.push(inst);
        Ok(Adopted {
            launched,
            start: stat.starttime,
            set_env,
            remove_env: dop.remove_env.iter().map(|s| s.to_string()).collect(),
            dop_unmanaged,
            memory: (a.held && a.memory != MemPolicy::Default).then_some((a.memory, nodes)),
            allowed,
        })
    }

    /// The process tree of `main` as it is now, refused when it shares a
    /// process with a managed instance's.
    fn tree_of(&mut self, main: TaskId) -> Result<Tracker, AdoptError> {
        let pid = main.pid;
        self.table
            .refresh(&self.proc)
            .map_err(|source| AdoptError::Table { pid, source })?;
        let mut tracker = Tracker::new(main);
        tracker.rescan(&self.proc, &self.table);
        for i in &self.instances {
            let theirs: std::collections::BTreeSet<u32> =
                i.tracker.processes().map(|(p, _)| p).collect();
            if let Some((shared, _)) = tracker.processes().find(|(p, _)| theirs.contains(p)) {
                return Err(AdoptError::Overlaps {
                    pid,
                    shared,
                    app: i.id,
                });
            }
        }
        Ok(tracker)
    }

    /// Lets instance `id` go: every setting coloc changed is put back and it
    /// goes on running (a launched one too; its end is no longer coloc's
    /// business). Returns the settings that could not be restored, or None
    /// when there is no such instance.
    pub fn release(&mut self, id: AppId) -> Result<Option<Vec<String>>, MachineError> {
        let Some(k) = self.instances.iter().position(|i| i.id == id) else {
            return Ok(None);
        };
        let mut inst = self.instances.remove(k);
        let refused = self
            .let_go(&mut inst)
            .map_err(|e| super::other("restoring a released instance", e))?;
        inst.dop.remove();
        if let Some(child) = inst.child.take() {
            // Reaped by a thread of its own, so it never stays a zombie.
            std::thread::spawn(move || {
                let mut child = child;
                let _ = child.wait();
            });
        }
        Ok(Some(refused))
    }

    /// The CPUs adopted instance `id` may be placed on now: those it allowed
    /// itself when adopted, within its cgroup's cpuset as the cpuset is now
    /// (an admin may shrink it, or move the app). None for an instance coloc
    /// launched, or none at all: its CPUs are coloc's to choose.
    pub fn allowed_cpus(&self, id: AppId) -> Option<CpuSet> {
        let inst = self.instances.iter().find(|i| i.id == id)?;
        let own = inst.allowed.as_ref()?;
        let home = match (&inst.slice, &self.slice) {
            (InSlice::In(cg), Some(slice)) => slice.sets().effective_cpus(&cg.home).ok(),
            _ => self.cpuset_cpus(inst.pid()),
        };
        Some(match home {
            Some(cpus) => own.intersection(&cpus),
            None => own.clone(),
        })
    }

    /// The CPUs the cpuset of process `pid`'s cgroup allows, where the host
    /// has the controller and the files can be read.
    fn cpuset_cpus(&self, pid: u32) -> Option<CpuSet> {
        let sets = self.cpusets.as_ref()?;
        let home = sets.cgroup_of(&self.opts.proc_root, pid).ok()?;
        sets.effective_cpus(&home).ok()
    }

    /// Whether instance `id` places threads of its own: they moved off the
    /// CPUs coloc set more than [`super::MAX_REAPPLY`] times, and coloc left
    /// their affinity to the app (`actuate.rs`, Affinity drift).
    pub fn places_itself(&self, id: AppId) -> bool {
        self.instances
            .iter()
            .find(|i| i.id == id)
            .is_some_and(|i| i.settings.values().any(|s| s.app_owns_affinity))
    }

    /// The instance whose main process is `pid`, if any.
    pub fn instance_of(&self, pid: u32) -> Option<AppId> {
        self.instances.iter().find(|i| i.pid() == pid).map(|i| i.id)
    }
}
