//! Where a workload runs: this Linux machine, or a simulated platform
//! (docs/architecture.md, Machine backends). Every command that runs workloads takes the same
//! `--sim PLATFORM [--seed S]` options (the CLI makes a [`Target`] of them) and then does
//! the same thing on either backend, through the one Manager loop, writing the same trace
//! format.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use coloc_manager::{run, Machine, Recorder, RunOptions, RunSummary};
use coloc_model::profile::PlatformFingerprint;
use coloc_model::topology::hwloc::parse_hwloc_xml;
use coloc_model::trace::TraceWriter;
use coloc_model::user_file::{read_user_text, MAX_HWLOC, MAX_WORKLOAD};
use coloc_model::{AppSample, Observation, Topology, TraceEvent, Workload};
use coloc_policy::{Policy, PolicyContext};
use coloc_sim::{Platform, PlatformFile, SimMachine};

use crate::host::Host;
use crate::load::{read_workload, resolve_for_host};
use crate::output::{create_out_dir, create_trace};
use crate::HarnessError;

/// A resolved backend.
#[derive(Debug)]
pub enum Target {
    Host(Host),
    Sim { platform: Platform, seed: u64 },
}

impl Target {
    pub fn topology(&self) -> &Topology {
        match self {
            Target::Host(h) => &h.topology,
            Target::Sim { platform, .. } => &platform.topology,
        }
    }

    /// `this machine` or `sim:<platform>`, for headings.
    pub fn describe(&self) -> String {
        match self {
            Target::Host(_) => format!("this machine ({} CPUs)", self.topology().cpus().len()),
            Target::Sim { platform, .. } => format!(
                "sim:{} ({} CPUs)",
                platform.name,
                platform.topology.cpus().len()
            ),
        }
    }

    /// A file-name-safe key of this machine, for results stored per machine (solo
    /// times): the topology's shape, and the platform for the simulator (whose
    /// figures differ between platforms of one shape).
    pub fn key(&self) -> String {
        let hash = self.topology().shape_hash();
        match self {
            Target::Host(_) => format!("host-{hash:016x}"),
            Target::Sim { platform, .. } => format!("sim-{}-{hash:016x}", platform.name),
        }
    }

    /// Reads a workload file and checks it can run here.
    pub fn load(&self, path: &Path) -> Result<Workload, HarnessError> {
        self.resolve(read_workload(path)?)
    }

    /// Checks a parsed workload can run here: real apps need a `command` (with
    /// `kernel:NAME` resolved), simulated ones a `model` the library knows.
    pub fn resolve(&self, w: Workload) -> Result<Workload, HarnessError> {
        match self {
            Target::Host(h) => resolve_for_host(w, &h.topology),
            Target::Sim { .. } => {
                for app in &w.apps {
                    match &app.model {
                        None => {
                            return Err(HarnessError::NoModel {
                                app: app.name.clone(),
                            })
                        }
                        Some(m) if coloc_sim::model::model(m).is_none() => {
                            return Err(HarnessError::UnknownModel {
                                app: app.name.clone(),
                                model: m.clone(),
                            })
                        }
                        Some(_) => {}
                    }
                }
                Ok(w)
            }
        }
    }

    /// Runs `workload` under `policy`, writing `out/trace.jsonl` (and, on Linux, the
    /// apps' output) and sending every event to `watch`. `rep` varies the
    /// simulator's seed between repetitions so that `native`'s run-to-run variation
    /// shows (a real machine varies on its own).
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        workload: &Workload,
        policy: &str,
        ctx: &PolicyContext,
        out: &Path,
        epoch: Duration,
        rep: u64,
        stop: Option<Arc<AtomicBool>>,
        watch: &mut dyn Recorder,
    ) -> Result<(RunSummary, Vec<TraceEvent>), HarnessError> {
        let policy = coloc_policy::build(policy, ctx)?;
        self.run_policy(workload, policy, out, epoch, rep, stop, watch)
    }

    /// [`Target::run`] with a policy already built: one that is not in the
    /// registry (the oracle's replay of the configuration it found), so that it
    /// runs through the same Manager loop and writes the same trace.
    #[allow(clippy::too_many_arguments)]
    pub fn run_policy(
        &self,
        workload: &Workload,
        policy: Box<dyn Policy>,
        out: &Path,
        epoch: Duration,
        rep: u64,
        stop: Option<Arc<AtomicBool>>,
        watch: &mut dyn Recorder,
    ) -> Result<(RunSummary, Vec<TraceEvent>), HarnessError> {
        create_out_dir(out)?;
        let job = Job {
            workload,
            policy,
            out,
            epoch,
            stop,
        };
        match self {
            Target::Host(h) => job.run(&mut h.machine(out)?, None, watch),
            Target::Sim { platform, seed } => {
                let seed = seed.wrapping_add(rep);
                job.run(
                    &mut SimMachine::new(platform.clone(), seed),
                    Some(seed),
                    watch,
                )
            }
        }
    }
}

/// One run's inputs, whatever the machine.
struct Job<'a> {
    workload: &'a Workload,
    policy: Box<dyn Policy>,
    out: &'a Path,
    epoch: Duration,
    stop: Option<Arc<AtomicBool>>,
}

impl Job<'_> {
    fn run(
        self,
        machine: &mut dyn Machine,
        seed: Option<u64>,
        watch: &mut dyn Recorder,
    ) -> Result<(RunSummary, Vec<TraceEvent>), HarnessError> {
        let mut policy = self.policy;
        let trace_path = self.out.join("trace.jsonl");
        let file = create_trace(&trace_path)?;
        let mut tee = Tee {
            file: TraceWriter::new(std::io::BufWriter::new(file)),
            events: Vec::new(),
            watch,
        };
        let opts = RunOptions {
            epoch: self.epoch,
            seed,
            started_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
            stop: self.stop,
        };
        let summary =
            run(machine, policy.as_mut(), self.workload, &opts, &mut tee).map_err(|source| {
                HarnessError::Run {
                    workload: self.workload.name.clone(),
                    policy: policy.name().to_string(),
                    source,
                }
            })?;
        tee.file.flush().map_err(|source| HarnessError::Write {
            what: "writing",
            path: trace_path,
            source,
        })?;
        Ok((summary, tee.events))
    }
}

/// Sends every event to the trace file and a watcher, and keeps in memory
/// every event but observations, of which it keeps only the apps' live metric
/// samples and OpenMP records (the run's metrics read launches, plans, exits
/// and a latency app's metric series; what the run teaches the knowledge
/// store reads the OpenMP records: regions, how long they last; whole
/// observations, one per epoch with a sample per thread, would grow without
/// bound on long runs and are in the file).
struct Tee<'a, W: std::io::Write> {
    file: TraceWriter<W>,
    events: Vec<TraceEvent>,
    watch: &'a mut dyn Recorder,
}

impl<W: std::io::Write> Recorder for Tee<'_, W> {
    fn record(&mut self, event: &TraceEvent) -> std::io::Result<()> {
        self.file.write(event)?;
        match event {
            TraceEvent::Obs(o) => {
                if let Some(metrics) = kept_in_memory(o) {
                    self.events.push(TraceEvent::Obs(Box::new(metrics)));
                }
            }
            e => self.events.push(e.clone()),
        }
        self.watch.record(event)
    }
}

/// The observation's apps with a metric sample or an OpenMP record, only
/// those, if any.
fn kept_in_memory(o: &Observation) -> Option<Observation> {
    let apps: Vec<AppSample> = o
        .apps
        .iter()
        .filter(|a| a.metric.is_some() || a.omp.is_some())
        .map(|a| AppSample {
            app: a.app,
            metric: a.metric,
            omp: a.omp.clone(),
            ..AppSample::default()
        })
        .collect();
    (!apps.is_empty()).then(|| Observation {
        at: o.at,
        apps,
        ..Observation::default()
    })
}

/// This machine's topology, as sysfs describes the CPUs coloc may use.
pub fn host_topology() -> Result<Topology, HarnessError> {
    coloc_linux::topology::host_topology().map_err(HarnessError::HostTopology)
}

/// The topology of the platform a command is about: the simulated one
/// `sim` names ([`resolve_platform`]), else this machine's.
pub fn platform_topology(sim: Option<&str>) -> Result<Topology, HarnessError> {
    match sim {
        Some(p) => Ok(resolve_platform(p)?.topology),
        None => host_topology(),
    }
}

/// The fingerprint profiles and knowledge are filed under for the platform
/// of [`platform_topology`] (docs/knowledge.md: what one platform learned
/// does not hold on another).
pub fn platform_fingerprint(sim: Option<&str>) -> Result<PlatformFingerprint, HarnessError> {
    Ok(PlatformFingerprint::of(&platform_topology(sim)?))
}

/// A `--sim` value: a built-in platform name, an hwloc XML file or a TOML platform
/// file (which may itself refer to a built-in `base` or an XML topology via
/// `--sim file.toml` next to the XML: see `PlatformFile`).
pub fn resolve_platform(arg: &str) -> Result<Platform, HarnessError> {
    if let Some(p) = coloc_sim::platform(arg) {
        return Ok(p);
    }
    let path = PathBuf::from(arg);
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if !path.exists() {
        return Err(HarnessError::NoPlatform {
            arg: arg.to_string(),
        });
    }
    let max = if ext == "xml" {
        MAX_HWLOC
    } else {
        MAX_WORKLOAD
    };
    let text = read_user_text(&path, max)?;
    match ext {
        "xml" => {
            let topo = parse_hwloc_xml(&path.display().to_string(), &text)?;
            Ok(Platform::from_topology(topo))
        }
        "toml" => PlatformFile::parse(&text)
            .and_then(|f| f.resolve(None))
            .map_err(|source| HarnessError::PlatformFile { path, source }),
        _ => Err(HarnessError::PlatformKind {
            arg: arg.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--sim NAME` is the simulated platform's fingerprint, no `--sim` this
    /// machine's, and a name that is no platform is refused by name.
    #[test]
    fn a_commands_platform_is_the_simulated_one_named_or_this_machine() {
        let kvm = coloc_sim::platform("kvm-2cpu").unwrap();
        assert_eq!(
            platform_fingerprint(Some("kvm-2cpu")).unwrap(),
            PlatformFingerprint::of(&kvm.topology)
        );
        assert_eq!(
            platform_topology(None).unwrap().cpus(),
            coloc_linux::topology::host_topology().unwrap().cpus()
        );
        let e = platform_fingerprint(Some("no-such-platform")).unwrap_err();
        assert!(
            matches!(&e, HarnessError::NoPlatform { arg } if arg == "no-such-platform"),
            "{e:?}"
        );
    }
}
