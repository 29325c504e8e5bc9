//! Where a workload runs: this Linux machine, or a simulated platform
//! (DESIGN.md, Machine backends). Every command that runs workloads takes the same
//! `--sim PLATFORM [--seed S]` options and then does the same thing on either
//! backend, through the one Manager loop, writing the same trace format.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use clap::Args;
use coloc_manager::{run, Machine, Recorder, RunOptions, RunSummary};
use coloc_model::calibration::MemoryCalibration;
use coloc_model::profile::{find, AppProfile, AppSource, PlatformFingerprint};
use coloc_model::topology::hwloc::parse_hwloc_xml;
use coloc_model::trace::TraceWriter;
use coloc_model::{Topology, TraceEvent, Workload};
use coloc_policy::{Policy, PolicyContext};
use coloc_sim::{Platform, PlatformFile, SimMachine};
use coloc_store::Store;

use crate::db::DbArgs;
use crate::host::Host;
use crate::load::{read_workload, resolve_for_host};

/// Options selecting the backend, shared by `run`, `compare`, `solo`.
#[derive(Debug, Clone, Args)]
pub struct MachineArgs {
    /// Run in the simulator on this platform instead of on this machine: a built-in
    /// name (`coloc sim --list-platforms`), an hwloc XML file (`lstopo --of xml`) or a
    /// TOML platform file.
    #[arg(long, value_name = "PLATFORM")]
    pub sim: Option<String>,
    /// Seed of the simulator's randomness (the Linux balancer model). Repeated runs
    /// of `compare` use SEED, SEED+1, ….
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// A resolved backend.
#[derive(Debug)]
pub enum Target {
    Host(Host),
    Sim { platform: Platform, seed: u64 },
}

impl Target {
    pub fn new(args: &MachineArgs) -> Result<Self> {
        match &args.sim {
            None => Ok(Target::Host(Host::new()?)),
            Some(p) => Ok(Target::Sim {
                platform: resolve_platform(p)?,
                seed: args.seed,
            }),
        }
    }

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
    pub fn load(&self, path: &Path) -> Result<Workload> {
        self.resolve(read_workload(path)?)
    }

    /// Checks a parsed workload can run here: real apps need a `command` (with
    /// `kernel:NAME` resolved), simulated ones a `model` the library knows.
    pub fn resolve(&self, w: Workload) -> Result<Workload> {
        match self {
            Target::Host(h) => resolve_for_host(w, &h.topology),
            Target::Sim { .. } => {
                for app in &w.apps {
                    match &app.model {
                        None => bail!(
                            "app \"{}\" has a `command` and no `model`: the simulator runs models \
                             (add `model = \"...\"`; known models: {})",
                            app.name,
                            coloc_sim::model::model_names()
                        ),
                        Some(m) if coloc_sim::model::model(m).is_none() => bail!(
                            "app \"{}\": field `model`: unknown model \"{m}\" (known: {})",
                            app.name,
                            coloc_sim::model::model_names()
                        ),
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
    ) -> Result<(RunSummary, Vec<TraceEvent>)> {
        let policy = coloc_policy::by_name_with(policy, ctx)?;
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
    ) -> Result<(RunSummary, Vec<TraceEvent>)> {
        std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
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
    ) -> Result<(RunSummary, Vec<TraceEvent>)> {
        let mut policy = self.policy;
        let trace_path = self.out.join("trace.jsonl");
        let file = std::fs::File::create(&trace_path)
            .with_context(|| format!("creating {}", trace_path.display()))?;
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
        let summary = run(machine, policy.as_mut(), self.workload, &opts, &mut tee)
            .with_context(|| format!("running {} under {}", self.workload.name, policy.name()))?;
        tee.file
            .flush()
            .with_context(|| format!("writing {}", trace_path.display()))?;
        Ok((summary, tee.events))
    }
}

/// Sends every event to the trace file, an in-memory copy and a watcher.
struct Tee<'a, W: std::io::Write> {
    file: TraceWriter<W>,
    events: Vec<TraceEvent>,
    watch: &'a mut dyn Recorder,
}

impl<W: std::io::Write> Recorder for Tee<'_, W> {
    fn record(&mut self, event: &TraceEvent) -> std::io::Result<()> {
        self.file.write(event)?;
        self.events.push(event.clone());
        self.watch.record(event)
    }
}

/// A `--sim` value: a built-in platform name, an hwloc XML file or a TOML platform
/// file (which may itself refer to a built-in `base` or an XML topology via
/// `--sim file.toml` next to the XML: see `PlatformFile`).
pub fn resolve_platform(arg: &str) -> Result<Platform> {
    if let Some(p) = coloc_sim::platform(arg) {
        return Ok(p);
    }
    let path = PathBuf::from(arg);
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if !path.exists() {
        bail!(
            "--sim {arg}: no built-in platform of that name and no such file (built-in: {})",
            coloc_sim::platform::platform_names()
        );
    }
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    match ext {
        "xml" => {
            let topo = parse_hwloc_xml(&path.display().to_string(), &text)?;
            Ok(Platform::from_topology(topo))
        }
        "toml" => PlatformFile::parse(&text)
            .and_then(|f| f.resolve(None))
            .with_context(|| format!("platform file {}", path.display())),
        _ => bail!("--sim {arg}: expected a built-in platform name, a .xml hwloc file or a .toml platform file"),
    }
}

/// Policies whose construction reads [`PolicyContext::profiles`]: `resense`
/// (ReSense §2.3 maps by the stored sensitivity scores). Its Table VII
/// ablations fix every score and read none.
const READ_PROFILES: &[&str] = &["resense"];

/// Policies whose construction reads [`PolicyContext::calibration`]: both
/// variants of NuPoCo's queueing model (§4).
const READ_CALIBRATION: &[&str] = &["nupoco", "nupoco-greedy"];

/// What of the context a set of policies reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Reads {
    profiles: bool,
    calibration: bool,
}

impl Reads {
    fn of<P: AsRef<str>>(policies: &[P]) -> Self {
        let any = |names: &[&str]| policies.iter().any(|p| names.contains(&p.as_ref()));
        Self {
            profiles: any(READ_PROFILES),
            calibration: any(READ_CALIBRATION),
        }
    }
}

/// What `policies` may know before running `workload` on `target`, from the
/// profile store at its default path ([`DbArgs::path`]):
///
/// - calibration (NuPoCo §4.3), for the nupoco policies: on this machine the one
///   `coloc calibrate` stored for its platform fingerprint, else
///   [`MemoryCalibration::assumed`] with a warning to run `coloc calibrate`; in
///   the simulator the platform's own ([`Platform::memory_calibration`]), never the
///   store's;
/// - profiles (ReSense §2.2), for `resense`: every stored profile of the
///   target's platform ([`coloc_store::Store::for_platform`]); on this machine
///   only those whose executable is still the one measured (see
///   [`is_current`]). Each app with no matching profile
///   ([`coloc_model::profile::find`]) gets a one-line warning naming the
///   `coloc profile` command that makes one; resense places it with score 0.
///
/// Only what the policies read is looked up, so a `native` run neither opens
/// the store nor warns, and a damaged store stops only runs that need it (with
/// the store's error naming the file). A missing store file is no error: it
/// holds nothing yet, and it is not created.
pub fn policy_context<P: AsRef<str>>(
    target: &Target,
    workload: &Workload,
    policies: &[P],
) -> Result<PolicyContext> {
    let reads = Reads::of(policies);
    let needs_store = reads.profiles || (reads.calibration && matches!(target, Target::Host(_)));
    let store = if needs_store {
        DbArgs { db: None }.open_existing()?
    } else {
        None
    };
    let (ctx, warnings) = context_from(target, store.as_ref(), workload, reads)?;
    for w in warnings {
        eprintln!("coloc: warning: {w}");
    }
    Ok(ctx)
}

/// [`policy_context`]'s choices given the store (None: no store file), with the
/// warnings to print.
fn context_from(
    target: &Target,
    store: Option<&Store>,
    workload: &Workload,
    reads: Reads,
) -> Result<(PolicyContext, Vec<String>)> {
    let platform = PlatformFingerprint::of(target.topology());
    let mut ctx = PolicyContext::default();
    let mut warnings = Vec::new();
    if reads.calibration {
        ctx.calibration = Some(match target {
            Target::Sim { platform, .. } => platform.memory_calibration(),
            Target::Host(h) => {
                let stored = match store {
                    Some(s) => s.calibration(&platform)?,
                    None => None,
                };
                match stored.filter(|c| c.fits(&h.topology)) {
                    Some(c) => c,
                    None => {
                        let assumed = MemoryCalibration::assumed(&h.topology);
                        warnings.push(format!(
                            "no memory calibration of this machine is stored: nupoco uses {}; \
                             run `coloc calibrate` to measure the real rates",
                            assumed.method
                        ));
                        assumed
                    }
                }
            }
        });
    }
    if reads.profiles {
        let mut profiles = match store {
            Some(s) => s.for_platform(&platform)?,
            None => Vec::new(),
        };
        if matches!(target, Target::Host(_)) {
            profiles.retain(is_current);
        }
        let sim = match target {
            Target::Host(_) => String::new(),
            Target::Sim { platform, .. } => format!(" --sim {}", platform.name),
        };
        for app in &workload.apps {
            if find(&profiles, app).is_none() {
                warnings.push(format!(
                    "no profile of app \"{}\" on {}: resense places it with score 0; \
                     make one with `coloc profile WORKLOAD --app {}{sim}`",
                    app.name,
                    target.describe(),
                    app.name
                ));
            }
        }
        ctx.profiles = profiles;
    }
    Ok((ctx, warnings))
}

/// Whether a stored profile still describes what would run: a program's profile
/// only while the file its `argv[0]` names has the content hash it was measured
/// with ([`coloc_linux::program::program_identity`], as `coloc profile` keys
/// it). A rebuilt or replaced binary is another program (ReSense §2.2 scores
/// one program), and the policy layer cannot check hashes itself
/// ([`coloc_model::profile::AppIdentity::matches`]). Model profiles always are.
fn is_current(profile: &AppProfile) -> bool {
    match &profile.identity.source {
        AppSource::Model { .. } => true,
        AppSource::Program { command, .. } => {
            coloc_linux::program::program_identity(&profile.identity.name, command)
                .is_ok_and(|now| now == profile.identity)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use coloc_model::profile::{AppIdentity, LevelProfile, LevelResult, NotCharacterizable};
    use coloc_model::testutils::app_spec;
    use coloc_model::topology::ResourceKind;
    use coloc_policy::POLICIES;

    use super::*;

    fn sim(name: &str) -> Target {
        Target::Sim {
            platform: coloc_sim::platform(name).unwrap(),
            seed: 1,
        }
    }

    fn host() -> Target {
        Target::Host(Host {
            topology: Topology::synthetic("host", "package:1 l3(8M):1 core:2").unwrap(),
        })
    }

    /// A model app, as simulated workloads have them.
    fn model_app(name: &str) -> coloc_model::AppSpec {
        coloc_model::AppSpec::model(name, name, 2)
    }

    fn workload(apps: Vec<coloc_model::AppSpec>) -> Workload {
        Workload {
            name: "w".into(),
            epoch: None,
            apps,
        }
    }

    /// A profile of `identity` on `target`'s platform (one uncharacterizable
    /// level: enough to be found).
    fn profile(identity: AppIdentity, target: &Target) -> AppProfile {
        AppProfile {
            identity,
            platform: PlatformFingerprint::of(target.topology()),
            levels: vec![LevelProfile {
                level: ResourceKind::Cache { level: 3 },
                result: LevelResult::NotCharacterizable {
                    reason: NotCharacterizable::SingleInstance,
                },
            }],
        }
    }

    /// A renamed or removed policy must not silently lose its context.
    #[test]
    fn every_reading_policy_exists() {
        for name in READ_PROFILES.iter().chain(READ_CALIBRATION) {
            assert!(POLICIES.iter().any(|p| p.name == *name), "{name}");
        }
    }

    #[test]
    fn reads_follow_the_policies() {
        let cases: [(&[&str], Reads); 5] = [
            (&["native", "equal"], Reads::default()),
            (&["resense-positive"], Reads::default()),
            (
                &["resense"],
                Reads {
                    profiles: true,
                    calibration: false,
                },
            ),
            (
                &["native", "nupoco-greedy"],
                Reads {
                    profiles: false,
                    calibration: true,
                },
            ),
            (
                &["nupoco", "resense"],
                Reads {
                    profiles: true,
                    calibration: true,
                },
            ),
        ];
        for (policies, want) in cases {
            assert_eq!(Reads::of(policies), want, "{policies:?}");
        }
    }

    /// Where the calibration comes from, per target and store content, and
    /// whether the user is told to calibrate.
    #[test]
    fn calibration_choice() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("p.db")).unwrap();
        let empty = Store::open(dir.path().join("empty.db")).unwrap();
        let h = host();
        let measured = MemoryCalibration {
            method: "measured".into(),
            ..MemoryCalibration::uniform(h.topology(), 20e9, 1e9, 64, String::new())
        };
        store
            .put_calibration(&PlatformFingerprint::of(h.topology()), &measured)
            .unwrap();
        let kvm = sim("kvm-2cpu");
        let Target::Sim { platform, .. } = &kvm else {
            unreachable!()
        };
        let own = platform.memory_calibration();
        let reads = Reads {
            profiles: false,
            calibration: true,
        };
        let cases: [(&Target, Option<&Store>, &str, bool); 5] = [
            (&h, Some(&store), "measured", false),
            (&h, Some(&empty), "assumed", true),
            (&h, None, "assumed", true),
            // The simulator never reads the store.
            (&kvm, Some(&store), &own.method, false),
            (&kvm, None, &own.method, false),
        ];
        for (i, (target, store, method, warned)) in cases.into_iter().enumerate() {
            let (ctx, warnings) = context_from(target, store, &workload(vec![]), reads).unwrap();
            let got = ctx.calibration.unwrap();
            assert!(got.method.starts_with(method), "case {i}: {}", got.method);
            assert!(got.fits(target.topology()), "case {i}");
            assert_eq!(
                warnings.len(),
                usize::from(warned),
                "case {i}: {warnings:?}"
            );
            if warned {
                assert!(
                    warnings[0].contains("run `coloc calibrate`"),
                    "{warnings:?}"
                );
            }
        }
        // Nothing read, nothing looked up.
        let (ctx, warnings) =
            context_from(&h, Some(&store), &workload(vec![]), Reads::default()).unwrap();
        assert!(ctx.calibration.is_none() && ctx.profiles.is_empty() && warnings.is_empty());
    }

    /// kvm-2cpu's figures in requests of 64 bytes, and the FSB note on an FSB
    /// machine.

    /// Profiles of the platform are handed over; apps without one are named in
    /// a warning with the command that makes their profile.
    #[test]
    fn profiles_and_warnings() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("p.db")).unwrap();
        let kvm = sim("kvm-2cpu");
        store
            .put(&profile(AppIdentity::model("cg", "cg"), &kvm))
            .unwrap();
        // Another platform's profile of the other app is not handed over.
        store
            .put(&profile(AppIdentity::model("mg", "mg"), &sim("yorkfield")))
            .unwrap();
        let w = workload(vec![model_app("cg"), model_app("mg")]);
        let reads = Reads {
            profiles: true,
            calibration: false,
        };
        let (ctx, warnings) = context_from(&kvm, Some(&store), &w, reads).unwrap();
        assert_eq!(ctx.profiles.len(), 1);
        assert_eq!(ctx.profiles[0].identity.name, "cg");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("\"mg\"")
                && warnings[0].contains("`coloc profile WORKLOAD --app mg --sim kvm-2cpu`"),
            "{}",
            warnings[0]
        );
        // No store: every app is named.
        let (ctx, warnings) = context_from(&kvm, None, &w, reads).unwrap();
        assert!(ctx.profiles.is_empty());
        assert_eq!(warnings.len(), 2);
    }

    /// On this machine a program's profile is handed over only while its
    /// executable is unchanged.
    #[test]
    fn a_rebuilt_program_loses_its_profile() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("app");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let argv = vec![exe.display().to_string()];
        let identity = coloc_linux::program::program_identity("app", &argv).unwrap();
        let h = host();
        let store = Store::open(dir.path().join("p.db")).unwrap();
        store.put(&profile(identity, &h)).unwrap();
        let w = workload(vec![coloc_model::AppSpec {
            command: Some(argv),
            ..app_spec("app", 2)
        }]);
        let reads = Reads {
            profiles: true,
            calibration: false,
        };
        let (ctx, warnings) = context_from(&h, Some(&store), &w, reads).unwrap();
        assert_eq!((ctx.profiles.len(), warnings.len()), (1, 0), "{warnings:?}");
        std::fs::write(&exe, "#!/bin/sh\nexit 0\n").unwrap();
        let (ctx, warnings) = context_from(&h, Some(&store), &w, reads).unwrap();
        assert!(ctx.profiles.is_empty());
        assert!(
            warnings[0].contains("`coloc profile WORKLOAD --app app`"),
            "{warnings:?}"
        );
    }
}
